use super::*;
use crate::test_support::{
    assert_split_anywhere_decodes_alike, decode_reads, frame, output, request, started, tool_call,
};

fn reasoning(source: &str, encrypted: Option<&str>) -> HistoryItem {
    HistoryItem {
        role: Role::Assistant,
        content: Content::Reasoning(Reasoning {
            id: Some("rs_1".into()),
            text: "thought".into(),
            encrypted: encrypted.map(str::to_string),
            source: source.into(),
        }),
    }
}

fn body_json(request: &ModelRequest<'_>) -> Value {
    serde_json::from_slice(&build_body(request).expect("encode")).expect("json")
}

// --- request body -----------------------------------------------------

#[test]
fn context_length_exceeded_is_an_overflow_in_a_status() {
    let body = json!({"error": {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}});
    assert!(is_context_overflow(&ServerError::parse(
        Some(400),
        &body.to_string()
    )));
    let other = json!({"error": {"message": "No tool call found for function call output with call_id call_1.",
            "type": "invalid_request_error", "param": "input", "code": null}});
    assert!(!is_context_overflow(&ServerError::parse(
        Some(400),
        &other.to_string()
    )));
}

#[test]
fn minimal_body_has_no_tool_or_reasoning_fields() {
    let input = [HistoryItem::text(Role::User, "hi")];
    assert_eq!(
        body_json(&request(&input, &[])),
        json!({
            "model": "m1",
            "instructions": "Be brief.",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            "store": false,
            "stream": true,
        })
    );
}

#[test]
fn reasoning_settings_include_encrypted_content_and_drop_temperature() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let mut req = request(&input, &[]);
    req.temperature = Some(0.2);
    assert_eq!(body_json(&req)["temperature"], json!(0.2));
    req.reasoning_effort = Some("high");
    let body = body_json(&req);
    assert!(body.get("temperature").is_none(), "{body}");
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
}

#[test]
fn outputs_match_their_call_kind_and_foreign_reasoning_is_dropped() {
    let input = [
        reasoning("anthropic", Some("sig")),
        reasoning("responses", None),
        reasoning("responses", Some("enc")),
        HistoryItem::tool_call(tool_call(
            "p",
            "apply_patch",
            "*** Begin Patch",
            ToolCallKind::Freeform,
        )),
        HistoryItem::tool_call(tool_call("f", "read", "{}", ToolCallKind::Function)),
        output("f", "one"),
        output("p", "two"),
        output("orphan", "three"),
        HistoryItem::text(Role::Tool, "odd"),
    ];
    let body = body_json(&request(&input, &[]));
    assert_eq!(
        body["input"],
        json!([
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}], "encrypted_content": "enc"},
            {"type": "custom_tool_call", "call_id": "p", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "function_call", "call_id": "f", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "f", "output": "one"},
            {"type": "custom_tool_call_output", "call_id": "p", "output": "two"},
            {"type": "function_call_output", "call_id": "orphan", "output": "three"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "odd"}]},
        ])
    );
}

#[test]
fn freeform_tool_without_a_grammar_is_plain_text() {
    let tools = [ToolSpec {
        name: "notes".into(),
        description: String::new(),
        format: ToolFormat::Freeform {
            syntax: "lark".into(),
            definition: String::new(),
        },
        read_only: true,
    }];
    let input = [HistoryItem::text(Role::User, "hi")];
    let body = body_json(&request(&input, &tools));
    assert_eq!(
        body["tools"],
        json!([{"type": "custom", "name": "notes", "format": {"type": "text"}}])
    );
    assert_eq!(body["tool_choice"], json!("auto"));
    assert_eq!(body["parallel_tool_calls"], json!(true));
}

// --- stream events ----------------------------------------------------

/// Feed `events` to a parser; the events so far and the error, if any.
fn parse(events: &[Value]) -> (Vec<ResponseEvent>, Option<FrameError>) {
    let mut parser = EventParser::new();
    let mut out = VecDeque::new();
    for event in events {
        match parser.on_frame(&frame(event), &mut out) {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => return (out.into_iter().collect(), Some(e)),
        }
    }
    (out.into_iter().collect(), None)
}

fn parse_ok(events: &[Value]) -> Vec<ResponseEvent> {
    let (out, error) = parse(events);
    assert!(error.is_none(), "{error:?} after {out:?}");
    out
}

fn parse_err(events: &[Value]) -> FrameError {
    let (out, error) = parse(events);
    error.unwrap_or_else(|| panic!("expected an error, got {out:?}"))
}

fn completed(usage: Option<Value>) -> Value {
    json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "usage": usage}})
}

fn added(item: Value) -> Value {
    json!({"type": "response.output_item.added", "output_index": 0, "item": item})
}

fn done(item: Value) -> Value {
    json!({"type": "response.output_item.done", "output_index": 0, "item": item})
}

fn text(delta: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": delta})
}

fn fc(id: &str, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments})
}

fn end(stop_reason: StopReason) -> ResponseEvent {
    ResponseEvent::Completed {
        usage: None,
        stop_reason,
        incomplete_tool_call: None,
    }
}

#[test]
fn at_most_256_calls_are_open_at_once() {
    // Found while fuzzing the wire parsers, by a scaling check (fuzz
    // inputs are too small to show it): argument events for calls
    // that are not open scanned every open call.
    let call = |i: usize| fc(&format!("fc_{i}"), &format!("c{i}"), "f", "{}");
    let mut events: Vec<Value> = (0..256).map(|i| added(call(i))).collect();
    events.push(completed(None));
    assert!(matches!(
        parse_ok(&events).last(),
        Some(ResponseEvent::Completed { .. })
    ));
    events.insert(256, added(call(256)));
    let error = parse_err(&events);
    assert_eq!(error.message, "more than 256 tool calls open at once");
    // Calls one after another are not limited.
    let mut events: Vec<Value> = (0..1000)
        .flat_map(|i| [added(call(i)), done(call(i))])
        .collect();
    events.push(completed(None));
    let calls = parse_ok(&events)
        .iter()
        .filter(|e| matches!(e, ResponseEvent::ToolCall(_)))
        .count();
    assert_eq!(calls, 1000);
}

#[test]
fn text_deltas_usage_and_ignored_events() {
    let events = parse_ok(&[
        json!({"type": "response.created", "response": {"id": "r"}}),
        json!({"type": "response.in_progress", "response": {"id": "r"}}),
        added(json!({"type": "message", "id": "msg_1", "content": []})),
        text("Hel"),
        text(""),
        text("lo"),
        json!({"type": "response.output_text.done", "item_id": "msg_1", "text": "Hello"}),
        done(
            json!({"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "Hello"}]}),
        ),
        json!({"type": "response.some_future_event", "delta": 5}),
        completed(Some(json!({
            "input_tokens": 100, "output_tokens": 7, "total_tokens": 107,
            "input_tokens_details": {"cached_tokens": 64},
            "output_tokens_details": {"reasoning_tokens": 0},
        }))),
    ]);
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("Hel".into()),
            ResponseEvent::TextDelta("lo".into()),
            ResponseEvent::Completed {
                usage: Some(Usage {
                    input_tokens: 100,
                    output_tokens: 7,
                    cached_input_tokens: 64,
                    ..Usage::default()
                }),
                stop_reason: StopReason::Stop,
                incomplete_tool_call: None,
            },
        ]
    );
}

#[test]
fn a_message_without_deltas_gives_its_text() {
    let events = parse_ok(&[
        done(json!({"type": "message", "content": [
            {"type": "output_text", "text": "whole "},
            {"type": "refusal", "refusal": "no"},
            {"type": "output_text", "text": "answer"},
        ]})),
        completed(None),
    ]);
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("whole answer".into()),
            end(StopReason::Stop)
        ]
    );
}

#[test]
fn function_and_custom_calls_in_order() {
    let events = parse_ok(&[
        added(fc("fc_1", "call_a", "read", "")),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"p\":"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "1}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{\"p\":1}"}),
        done(fc("fc_1", "call_a", "read", "{\"p\":1}")),
        added(
            json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_b", "name": "apply_patch", "input": ""}),
        ),
        json!({"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "delta": "*** Begin"}),
        json!({"type": "response.custom_tool_call_input.done", "item_id": "ctc_1", "input": "*** Begin"}),
        done(
            json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_b", "name": "apply_patch", "input": "*** Begin"}),
        ),
        completed(None),
    ]);
    assert_eq!(
        events,
        vec![
            started("call_a", "read"),
            ResponseEvent::ToolCall(tool_call(
                "call_a",
                "read",
                "{\"p\":1}",
                ToolCallKind::Function
            )),
            started("call_b", "apply_patch"),
            ResponseEvent::ToolCall(tool_call(
                "call_b",
                "apply_patch",
                "*** Begin",
                ToolCallKind::Freeform
            )),
            end(StopReason::ToolCalls),
        ]
    );
}

#[test]
fn a_done_call_without_added_is_started_and_deltas_fill_missing_arguments() {
    let events = parse_ok(&[
        done(fc("fc_1", "call_a", "read", "{}")),
        added(json!({"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "list"})),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "delta": "{\"x\":2}"}),
        done(json!({"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "list"})),
        completed(None),
    ]);
    assert_eq!(
        events,
        vec![
            started("call_a", "read"),
            ResponseEvent::ToolCall(tool_call("call_a", "read", "{}", ToolCallKind::Function)),
            started("call_b", "list"),
            ResponseEvent::ToolCall(tool_call(
                "call_b",
                "list",
                "{\"x\":2}",
                ToolCallKind::Function
            )),
            end(StopReason::ToolCalls),
        ]
    );
}

#[test]
fn reasoning_items_join_their_summaries() {
    let events = parse_ok(&[
        added(json!({"type": "reasoning", "id": "rs_1", "summary": []})),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 0, "delta": "One"}),
        done(json!({"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": "One"},
                {"type": "summary_text", "text": "Two"},
            ], "content": null, "encrypted_content": "gAAA"})),
        completed(None),
    ]);
    assert_eq!(
        events,
        vec![
            ResponseEvent::Reasoning(Reasoning {
                id: Some("rs_1".into()),
                text: "One\n\nTwo".into(),
                encrypted: Some("gAAA".into()),
                source: "responses".into(),
            }),
            end(StopReason::Stop),
        ]
    );
}

#[test]
fn incomplete_reports_length_and_the_open_call() {
    let events = parse_ok(&[
        text("Writing"),
        added(fc("fc_1", "call_a", "write_file", "")),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"te"}),
        json!({"type": "response.incomplete", "response": {
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 5, "output_tokens": 9},
        }}),
    ]);
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("Writing".into()),
            started("call_a", "write_file"),
            ResponseEvent::Completed {
                usage: Some(Usage {
                    input_tokens: 5,
                    output_tokens: 9,
                    ..Usage::default()
                }),
                stop_reason: StopReason::Length,
                incomplete_tool_call: Some("write_file".into()),
            },
        ]
    );
    let events = parse_ok(&[json!({"type": "response.incomplete", "response": {
        "incomplete_details": {"reason": "content_filter"},
    }})]);
    assert_eq!(events, vec![end(StopReason::ContentFilter)]);
}

fn failed(code: Option<&str>, message: &str) -> Value {
    json!({"type": "response.failed", "response": {
        "status": "failed",
        "error": {"code": code, "message": message},
    }})
}

#[test]
fn failures_are_classified_by_code() {
    let error = parse_err(&[text("x"), failed(Some("server_error"), "try again")]);
    assert!(error.retryable && !error.context_overflow, "{error:?}");
    assert!(
        error.message.contains("try again") && error.message.contains("server_error"),
        "{error:?}"
    );
    for code in ["rate_limit_exceeded", "server_is_overloaded"] {
        assert!(parse_err(&[failed(Some(code), "m")]).retryable, "{code}");
    }

    let error = parse_err(&[failed(
        Some("context_length_exceeded"),
        "Your input exceeds the context window",
    )]);
    assert!(error.context_overflow && !error.retryable, "{error:?}");
    assert_eq!(error.message, "Your input exceeds the context window");

    for code in [Some("invalid_prompt"), Some("insufficient_quota"), None] {
        let error = parse_err(&[failed(code, "no")]);
        assert!(
            !error.retryable && !error.context_overflow,
            "{code:?}: {error:?}"
        );
    }
    let error = parse_err(&[json!({"type": "response.failed", "response": {}})]);
    assert!(error.message.contains("no error message"), "{error:?}");
}

#[test]
fn error_events_flat_or_nested() {
    let error = parse_err(&[
        json!({"type": "error", "code": "server_error", "message": "boom", "param": null}),
    ]);
    assert!(error.retryable, "{error:?}");
    assert!(error.message.contains("mid-stream: boom"), "{error:?}");
    let error = parse_err(&[
        json!({"type": "error", "error": {"type": "invalid_request_error", "code": "bad_input", "message": "nope"}}),
    ]);
    assert!(
        !error.retryable && error.message.contains("nope"),
        "{error:?}"
    );
    let error = parse_err(&[
        json!({"type": "error", "error": {"type": "server_error", "code": null, "message": "down"}}),
    ]);
    assert!(error.retryable, "{error:?}");
    // No `type` in the data: the SSE event name says what it is.
    let mut parser = EventParser::new();
    let error = parser
        .on_frame(
            &SseEvent {
                event: "error".into(),
                data: r#"{"message":"overloaded","code":"server_is_overloaded"}"#.into(),
            },
            &mut VecDeque::new(),
        )
        .expect_err("error event");
    assert!(error.retryable, "{error:?}");
}

#[test]
fn malformed_events_name_the_problem() {
    let mut parser = EventParser::new();
    let error = parser
        .on_frame(
            &SseEvent {
                event: "response.output_text.delta".into(),
                data: r#"{"type":"response.output_text.delta","delta":"#.into(),
            },
            &mut VecDeque::new(),
        )
        .expect_err("malformed");
    assert!(!error.retryable);
    assert!(error.message.contains("malformed event"), "{error:?}");
    assert!(
        error.message.contains(r#"{"type":"response.output_text"#),
        "{error:?}"
    );

    let error = parse_err(&[json!({"type": "response.output_text.delta"})]);
    assert!(error.message.contains("no `delta`"), "{error:?}");
    let error = parse_err(&[json!({"type": "response.output_text.delta", "delta": 3})]);
    assert!(error.message.contains("not a string"), "{error:?}");
    let error = parse_err(&[done(json!({"type": "function_call", "call_id": 7}))]);
    assert!(
        error
            .message
            .contains("malformed `response.output_item.done`"),
        "{error:?}"
    );
    let error = parse_err(&[
        json!({"type": "response.completed", "response": {"usage": {"input_tokens": "many"}}}),
    ]);
    assert!(
        error.message.contains("malformed `response.completed`"),
        "{error:?}"
    );
    // Items this API does not use are never inspected.
    parse_ok(&[
        done(json!({"type": "web_search_call", "content": 5})),
        completed(None),
    ]);
}

#[tokio::test]
async fn wire_streams_split_at_every_byte_give_identical_events() {
    assert_split_anywhere_decodes_alike(
        Framing::Sse,
        EventParser::new,
        &[
            // Multi-byte characters (—, ✓, ü, 🦀) in the deltas.
            include_str!("../../../../tests/fixtures/responses/text.txt"),
            include_str!("../../../../tests/fixtures/responses/freeform_patch.txt"),
        ],
        false,
    )
    .await;
}

#[tokio::test]
async fn a_character_split_across_reads_survives() {
    let wire = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"🦀\"}\n\n\
                    event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n";
    let bytes = wire.as_bytes();
    let crab = wire.find('🦀').expect("crab");
    let reads = vec![
        bytes[..crab + 1].to_vec(),
        bytes[crab + 1..crab + 3].to_vec(),
        bytes[crab + 3..].to_vec(),
    ];
    assert_eq!(
        decode_reads(Framing::Sse, EventParser::new(), reads).await,
        vec![ResponseEvent::TextDelta("🦀".into()), end(StopReason::Stop)]
    );
}

#[test]
fn bad_config_fails_at_construction() {
    let info = ProviderInfo::new("x", "not a url", super::super::WireApi::Responses);
    assert!(Responses::new(info).is_err());
}

#[test]
fn images_are_input_image_parts_of_user_messages() {
    let input = crate::test_support::with_images();
    let body = body_json(&request(&input, &[]));
    let items = body["input"].as_array().unwrap();
    assert_eq!(
        items[0]["content"],
        json!([
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,BASE64-shot.png"},
        ])
    );
    assert_eq!(items[2]["type"], "function_call_output");
    assert_eq!(items[2]["output"], "viewed");
    assert_eq!(items[3]["role"], "user");
    assert_eq!(items[3]["content"][1]["type"], "input_image");
    assert_eq!(
        items[3]["content"][1]["image_url"],
        "data:image/png;base64,BASE64-tool.png"
    );
}

#[test]
fn a_web_search_call_is_kept_whole_counted_and_its_citations_reported() {
    let item = json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
        "action": {"type": "search", "query": "rust", "sources": [{"type": "url", "url": "https://a.dev"}]}});
    let events = parse_ok(&[
        added(json!({"type": "web_search_call", "id": "ws_1", "status": "in_progress"})),
        json!({"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 1, "content_index": 0, "delta": "Yes."}),
        json!({"type": "response.output_text.annotation.added", "item_id": "m", "annotation": {
            "type": "url_citation", "url": "https://a.dev", "title": "A", "start_index": 0, "end_index": 4}}),
        completed(Some(json!({"input_tokens": 5, "output_tokens": 2}))),
    ]);
    let ResponseEvent::WebSearch(search) = &events[0] else {
        panic!("{events:?}");
    };
    assert_eq!(search.query, "rust");
    assert_eq!(search.results[0].url, "https://a.dev");
    assert_eq!(search.blocks, [item]);
    assert!(events.contains(&ResponseEvent::Citation(Citation {
        page: WebSource {
            url: "https://a.dev".into(),
            title: "A".into()
        },
        cited_text: None,
    })));
    let Some(ResponseEvent::Completed { usage, .. }) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(usage.unwrap().web_searches, 1);
}

#[test]
fn web_search_is_offered_and_sent_back_without_its_id() {
    let item = json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
        "action": {"type": "search", "query": "rust"}});
    let history = [HistoryItem {
        role: Role::Assistant,
        content: Content::WebSearch(WebSearch {
            id: "ws_1".into(),
            query: "rust".into(),
            results: Vec::new(),
            error: None,
            source: REASONING_SOURCE.into(),
            blocks: vec![item],
        }),
    }];
    let mut request = request(&history, &[]);
    request.web_search = true;
    let body = body_json(&request);
    assert_eq!(body["tools"], json!([{"type": "web_search"}]));
    assert_eq!(body["include"], json!(["web_search_call.action.sources"]));
    assert_eq!(
        body["input"][0],
        json!({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "rust"}})
    );
}
