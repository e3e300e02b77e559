//! The stream parser's tests: events, usage, calls, thinking, errors.

use super::*;
use crate::test_support::{
    assert_split_anywhere_decodes_alike, call, decode_reads, frame, started,
};
use cogni_protocol::ToolCallKind;

fn parse_with(
    parser: &mut EventParser,
    frames: &[Value],
) -> Result<Vec<ResponseEvent>, FrameError> {
    let mut out = VecDeque::new();
    for data in frames {
        if parser.on_event(&frame(data), &mut out)? {
            break;
        }
    }
    Ok(out.into_iter().collect())
}

fn parse(frames: &[Value]) -> Result<Vec<ResponseEvent>, FrameError> {
    parse_with(&mut EventParser::new(Vec::new(), None), frames)
}

fn message_start(input: u64, write: u64, read: u64) -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "model": "claude-test", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                  "cache_read_input_tokens": read, "output_tokens": 1},
    }})
}

fn block_start(index: usize, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn delta(index: usize, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn text(index: usize, text: &str) -> Value {
    delta(index, json!({"type": "text_delta", "text": text}))
}

fn json_piece(index: usize, piece: &str) -> Value {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": piece}),
    )
}

fn block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn tool_start(index: usize, id: &str, name: &str) -> Value {
    block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )
}

fn message_delta(stop: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": output}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

fn completed(
    usage: Option<Usage>,
    stop_reason: StopReason,
    incomplete: Option<&str>,
) -> ResponseEvent {
    ResponseEvent::Completed {
        usage,
        stop_reason,
        incomplete_tool_call: incomplete.map(str::to_string),
    }
}

#[test]
fn text_usage_and_ignored_events() {
    let events = parse(&[
            message_start(10, 100, 2000),
            block_start(0, json!({"type": "text", "text": ""})),
            json!({"type": "ping"}),
            text(0, "Hel"),
            delta(0, json!({"type": "citations_delta", "citation": {}})),
            text(0, "lo"),
            block_stop(0),
            json!({"type": "some_future_event", "x": 1}),
            block_start(1, json!({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}})),
            json_piece(1, "{\"q\":1}"),
            block_stop(1),
            message_delta("end_turn", 42),
            json!({"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 10}}),
        ])
        .expect("parse");
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("Hel".into()),
            ResponseEvent::TextDelta("lo".into()),
            completed(
                Some(Usage {
                    input_tokens: 2110,
                    output_tokens: 42,
                    cached_input_tokens: 2000,
                    cache_write_tokens: 100,
                    web_searches: 0,
                    estimated: false,
                }),
                StopReason::Stop,
                None
            ),
        ]
    );
}

#[test]
fn message_delta_usage_is_cumulative_and_wins() {
    let events = parse(&[
            message_start(10, 0, 0),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                   "usage": {"input_tokens": 12, "cache_read_input_tokens": 30, "output_tokens": 7}}),
            message_stop(),
        ])
        .expect("parse");
    assert_eq!(
        events,
        vec![completed(
            Some(Usage {
                input_tokens: 42,
                output_tokens: 7,
                cached_input_tokens: 30,
                ..Usage::default()
            }),
            StopReason::Stop,
            None
        )]
    );
}

#[test]
fn tool_calls_are_assembled_per_block_and_emitted_in_order() {
    let events = parse(&[
        tool_start(0, "toolu_a", "read"),
        json_piece(0, ""),
        json_piece(0, "{\"p\":"),
        json_piece(0, "1}"),
        block_stop(0),
        tool_start(1, "toolu_b", "list"),
        block_stop(1),
        message_delta("tool_use", 5),
        message_stop(),
    ])
    .expect("parse");
    assert_eq!(
        events,
        vec![
            started("toolu_a", "read"),
            started("toolu_b", "list"),
            ResponseEvent::ToolCall(call("toolu_a", "read", "{\"p\":1}")),
            ResponseEvent::ToolCall(call("toolu_b", "list", "{}")),
            completed(
                Some(Usage {
                    output_tokens: 5,
                    ..Usage::default()
                }),
                StopReason::ToolCalls,
                None
            ),
        ]
    );
}

#[test]
fn input_sent_whole_with_the_block_start_is_used() {
    let events = parse(&[
        block_start(
            0,
            json!({"type": "tool_use", "id": "t", "name": "read", "input": {"path": "a"}}),
        ),
        block_stop(0),
        message_stop(),
    ])
    .expect("parse");
    assert_eq!(
        events[1],
        ResponseEvent::ToolCall(call("t", "read", "{\"path\":\"a\"}"))
    );
    assert_eq!(events[2], completed(None, StopReason::ToolCalls, None));
}

#[test]
fn thinking_and_redacted_thinking_become_reasoning() {
    let events = parse(&[
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
        delta(0, json!({"type": "thinking_delta", "thinking": "think."})),
        delta(0, json!({"type": "signature_delta", "signature": "c2ln"})),
        block_stop(0),
        block_start(1, json!({"type": "redacted_thinking", "data": "opaque"})),
        block_stop(1),
        block_start(2, json!({"type": "thinking", "thinking": "cut"})),
        block_stop(2),
        message_delta("end_turn", 1),
        message_stop(),
    ])
    .expect("parse");
    let reasoning = |text: &str, encrypted: Option<&str>| {
        ResponseEvent::Reasoning(Reasoning {
            id: None,
            text: text.into(),
            encrypted: encrypted.map(str::to_string),
            source: "anthropic".into(),
        })
    };
    assert_eq!(
        events[..3],
        [
            reasoning("Let me think.", Some("c2ln")),
            reasoning("", Some("opaque")),
            reasoning("cut", None),
        ]
    );
}

#[test]
fn max_tokens_mid_tool_use_reports_the_cut_call() {
    let events = parse(&[
        tool_start(0, "a", "read"),
        json_piece(0, "{}"),
        block_stop(0),
        tool_start(1, "b", "write"),
        json_piece(1, "{\"text\":\"abc"),
        block_stop(1),
        message_delta("max_tokens", 9),
        message_stop(),
    ])
    .expect("parse");
    assert_eq!(
        events,
        vec![
            started("a", "read"),
            started("b", "write"),
            ResponseEvent::ToolCall(call("a", "read", "{}")),
            completed(
                Some(Usage {
                    output_tokens: 9,
                    ..Usage::default()
                }),
                StopReason::Length,
                Some("write")
            ),
        ]
    );

    // The cut came during text after a finished call: the call stands.
    let events = parse(&[
        tool_start(0, "a", "read"),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        text(1, "and"),
        block_stop(1),
        message_delta("max_tokens", 9),
        message_stop(),
    ])
    .expect("parse");
    assert_eq!(events[2], ResponseEvent::ToolCall(call("a", "read", "{}")));
    assert!(matches!(
        events.last(),
        Some(ResponseEvent::Completed {
            stop_reason: StopReason::Length,
            incomplete_tool_call: None,
            ..
        })
    ));

    // A block that never stopped is cut too.
    let events = parse(&[
        tool_start(0, "a", "read"),
        json_piece(0, "{\"p"),
        message_delta("max_tokens", 9),
        message_stop(),
    ])
    .expect("parse");
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(
        &events[1],
        ResponseEvent::Completed { incomplete_tool_call: Some(n), .. } if n == "read"
    ));
}

#[test]
fn final_answer_call_becomes_the_answer_text() {
    let schema = json!({"type": "object"});
    let frames = [
        block_start(0, json!({"type": "text", "text": ""})),
        text(0, "Here it is."),
        block_stop(0),
        tool_start(1, "f", FINAL_ANSWER_TOOL),
        json_piece(1, "{\"ok\": "),
        json_piece(1, "true}"),
        block_stop(1),
        message_delta("tool_use", 3),
        message_stop(),
    ];
    let events =
        parse_with(&mut EventParser::new(Vec::new(), Some(&schema)), &frames).expect("parse");
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("Here it is.".into()),
            ResponseEvent::TextDelta("{\"ok\":true}".into()),
            completed(
                Some(Usage {
                    output_tokens: 3,
                    ..Usage::default()
                }),
                StopReason::Stop,
                None
            ),
        ]
    );

    // Without an output schema it is an ordinary tool.
    let events = parse(&frames).expect("parse");
    assert!(events.contains(&ResponseEvent::ToolCall(call(
        "f",
        FINAL_ANSWER_TOOL,
        "{\"ok\": true}"
    ))));

    // A wrapped schema's answer is the `value`.
    let list = json!({"type": "array"});
    let events = parse_with(
        &mut EventParser::new(Vec::new(), Some(&list)),
        &[
            tool_start(0, "f", FINAL_ANSWER_TOOL),
            json_piece(0, "{\"value\": [\"a\", \"b\"]}"),
            block_stop(0),
            tool_start(1, "r", "read"),
            block_stop(1),
            message_delta("tool_use", 3),
            message_stop(),
        ],
    )
    .expect("parse");
    assert_eq!(
        events,
        vec![
            started("r", "read"),
            ResponseEvent::TextDelta("[\"a\",\"b\"]".into()),
            ResponseEvent::ToolCall(call("r", "read", "{}")),
            completed(
                Some(Usage {
                    output_tokens: 3,
                    ..Usage::default()
                }),
                StopReason::ToolCalls,
                None
            ),
        ]
    );
}

#[test]
fn freeform_calls_are_unwrapped() {
    let events = parse_with(
        &mut EventParser::new(vec!["apply_patch".into()], None),
        &[
            tool_start(0, "p", "apply_patch"),
            json_piece(0, "{\"input\":\"*** Begin Patch\\n\"}"),
            block_stop(0),
            message_delta("tool_use", 1),
            message_stop(),
        ],
    )
    .expect("parse");
    assert_eq!(
        events[1],
        ResponseEvent::ToolCall(ToolCall {
            id: "p".into(),
            name: "apply_patch".into(),
            arguments: "*** Begin Patch\n".into(),
            kind: ToolCallKind::Freeform,
        })
    );
}

#[test]
fn stop_reasons() {
    for (wire, stop) in [
        ("end_turn", StopReason::Stop),
        ("stop_sequence", StopReason::Stop),
        ("max_tokens", StopReason::Length),
        ("model_context_window_exceeded", StopReason::Length),
        ("refusal", StopReason::ContentFilter),
        ("pause_turn", StopReason::Paused),
    ] {
        let events = parse(&[message_delta(wire, 1), message_stop()]).expect("parse");
        assert!(
            matches!(&events[0], ResponseEvent::Completed { stop_reason, .. } if *stop_reason == stop),
            "{wire}: {events:?}"
        );
    }
}

#[test]
fn error_events_are_retryable_only_when_the_server_failed() {
    for (kind, retryable) in [
        ("overloaded_error", true),
        ("api_error", true),
        ("invalid_request_error", false),
        ("permission_error", false),
    ] {
        let err = parse(&[
            block_start(0, json!({"type": "text", "text": ""})),
            text(0, "partial"),
            json!({"type": "error", "error": {"type": kind, "message": "Overloaded"}}),
        ])
        .expect_err("error event");
        assert_eq!(err.retryable, retryable, "{kind}");
        assert!(err.message.contains(kind), "{}", err.message);
        assert!(err.message.contains("Overloaded"), "{}", err.message);
    }
}

#[test]
fn both_overflow_messages_are_context_overflows_also_in_the_stream() {
    let body = |message: &str| {
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message},
                   "request_id": "req_011CUB2XUHWkFnQzxcKBbjpF"})
        .to_string()
    };
    let too_long = body("prompt is too long: 215003 tokens > 200000 maximum");
    let limit = body("input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease input length or `max_tokens` and try again");
    for text in [&too_long, &limit] {
        assert!(
            is_context_overflow(&ServerError::parse(Some(400), text)),
            "{text}"
        );
        assert!(
            is_context_overflow(&ServerError::parse(None, text)),
            "{text}"
        );
    }
    let other = body("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1");
    assert!(!is_context_overflow(&ServerError::parse(Some(400), &other)));
    assert!(!is_context_overflow(&ServerError::parse(
        Some(500),
        &too_long
    )));
    // And an `error` event saying so ends the stream as an overflow.
    let err = parse(&[
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 215003 tokens > 200000 maximum"}}),
    ])
    .expect_err("error event");
    assert!(err.context_overflow && !err.retryable, "{err:?}");
}

#[test]
fn malformed_events_name_the_problem() {
    let mut parser = EventParser::new(Vec::new(), None);
    let mut out = VecDeque::new();
    let bad = SseEvent {
        event: "content_block_delta".into(),
        data: r#"{"type":"content_block_delta","index":0,"delta":{"#.into(),
    };
    let err = parser.on_event(&bad, &mut out).expect_err("malformed");
    assert!(!err.retryable);
    assert!(
        err.message
            .contains("malformed `content_block_delta` event"),
        "{}",
        err.message
    );
    assert!(err.message.contains(r#""delta":{"#), "{}", err.message);

    for (frames, expected) in [
        (vec![text(3, "x")], "block 3, which is not open"),
        (vec![block_stop(0)], "block 0, which is not open"),
        (
            vec![
                block_start(0, json!({"type": "text"})),
                block_start(0, json!({"type": "text"})),
            ],
            "started twice",
        ),
        (
            vec![block_start(0, json!({"type": "text"})), json_piece(0, "{}")],
            "`input_json_delta` does not fit block 0",
        ),
        (
            vec![json!({"type": "content_block_start", "index": 0})],
            "malformed",
        ),
        (vec![json!({"no_type": true})], "malformed"),
    ] {
        let err = parse(&frames).expect_err(expected);
        assert!(
            err.message.contains(expected),
            "{expected}: {}",
            err.message
        );
        assert!(!err.retryable);
    }
}

/// What a fresh parser without freeform tools or schema makes of `reads`.
async fn decode(reads: Vec<Vec<u8>>) -> Vec<ResponseEvent> {
    decode_reads(Framing::Sse, EventParser::new(Vec::new(), None), reads).await
}

#[tokio::test]
async fn wire_streams_split_at_every_byte_give_identical_events() {
    assert_split_anywhere_decodes_alike(
        Framing::Sse,
        || EventParser::new(Vec::new(), None),
        &[
            include_str!("../../../../tests/fixtures/anthropic/text_cached.txt"),
            include_str!("../../../../tests/fixtures/anthropic/thinking_tool_use.txt"),
        ],
        false,
    )
    .await;
}

#[tokio::test]
async fn a_multibyte_character_split_across_reads_survives() {
    let wire = format!(
            "event: content_block_start\ndata: {}\n\nevent: content_block_delta\ndata: {}\n\nevent: message_stop\ndata: {}\n\n",
            block_start(0, json!({"type": "text", "text": ""})),
            text(0, "ü→😀"),
            message_stop()
        );
    let bytes = wire.as_bytes();
    let smiley = wire.find('😀').expect("smiley");
    for at in [smiley + 1, smiley + 2, smiley + 3] {
        let events = decode(vec![bytes[..at].to_vec(), bytes[at..].to_vec()]).await;
        assert_eq!(
            events[0],
            ResponseEvent::TextDelta("ü→😀".into()),
            "split at {at}"
        );
    }
    // One byte per read.
    let events = decode(bytes.iter().map(|b| vec![*b]).collect()).await;
    assert_eq!(events[0], ResponseEvent::TextDelta("ü→😀".into()));
}

#[test]
fn cut_shuffled_or_repeated_events_give_errors_not_panics() {
    let wire = include_str!("../../../../tests/fixtures/anthropic/thinking_tool_use.txt");
    let frames: Vec<SseEvent> = wire
        .split("\n\n")
        .filter_map(|chunk| {
            let (event, data) = chunk.split_once("\ndata: ")?;
            Some(SseEvent {
                event: event.trim_start_matches("event: ").to_string(),
                data: data.to_string(),
            })
        })
        .collect();
    assert!(frames.len() > 10);
    let feed = |frames: &[SseEvent]| {
        let mut parser = EventParser::new(vec!["read_file".into()], None);
        let mut out = VecDeque::new();
        for frame in frames {
            match parser.on_event(frame, &mut out) {
                Ok(true) | Err(_) => break,
                Ok(false) => {}
            }
        }
    };
    for (n, frame) in frames.iter().enumerate() {
        for (at, _) in frame.data.char_indices() {
            let mut cut = frames[..=n].to_vec();
            cut[n].data.truncate(at);
            feed(&cut);
        }
    }
    let mut reversed = frames.clone();
    reversed.reverse();
    feed(&reversed);
    let doubled: Vec<SseEvent> = frames.iter().flat_map(|f| [f.clone(), f.clone()]).collect();
    feed(&doubled);
}

#[test]
fn a_web_search_becomes_one_event_with_its_blocks_and_a_failed_one_its_code() {
    let result = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://a.dev", "title": "A",
         "encrypted_content": "EqX", "page_age": null},
    ]});
    let failed = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_2",
        "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}});
    let events = parse(&[
        message_start(10, 0, 0),
        block_start(0, json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}})),
        json_piece(0, "{\"query\":"),
        json_piece(0, "\"a\"}"),
        block_stop(0),
        block_start(1, result.clone()),
        block_stop(1),
        block_start(2, json!({"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {"query": "b"}})),
        block_stop(2),
        block_start(3, failed.clone()),
        block_stop(3),
        block_start(4, json!({"type": "text", "text": "", "citations": []})),
        delta(4, json!({"type": "citations_delta", "citation": {
            "type": "web_search_result_location", "url": "https://a.dev", "title": "A",
            "cited_text": "quoted", "encrypted_index": "EqI"}})),
        text(4, "A says so."),
        block_stop(4),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"output_tokens": 9, "server_tool_use": {"web_search_requests": 2}}}),
        json!({"type": "message_stop"}),
    ])
    .unwrap();
    let searches: Vec<&WebSearch> = events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::WebSearch(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(searches.len(), 2);
    assert_eq!(searches[0].query, "a");
    assert_eq!(searches[0].results[0].url, "https://a.dev");
    assert_eq!(searches[0].error, None);
    // The use with its input whole, then the result as it came.
    assert_eq!(searches[0].blocks[0]["input"], json!({"query": "a"}));
    assert_eq!(searches[0].blocks[1], result);
    assert_eq!(searches[1].error.as_deref(), Some("max_uses_exceeded"));
    assert_eq!(searches[1].blocks[1], failed);
    assert!(events.contains(&ResponseEvent::Citation(Citation {
        page: WebSource {
            url: "https://a.dev".into(),
            title: "A".into()
        },
        cited_text: Some("quoted".into()),
    })));
    let Some(ResponseEvent::Completed { usage, .. }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(usage.unwrap().web_searches, 2);
}
