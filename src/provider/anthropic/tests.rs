use super::*;
use crate::protocol::ToolCallKind;
use crate::provider::test_support::{
    self, assert_split_anywhere_decodes_alike, call, decode_reads, frame, function_tool,
    patch_tool, started, tool_output,
};

fn reasoning(text: &str, encrypted: Option<&str>, source: &str) -> HistoryItem {
    HistoryItem {
        role: Role::Assistant,
        content: Content::Reasoning(Reasoning {
            id: None,
            text: text.into(),
            encrypted: encrypted.map(str::to_string),
            source: source.into(),
        }),
    }
}

fn request<'a>(input: &'a [HistoryItem], tools: &'a [ToolSpec]) -> ModelRequest<'a> {
    ModelRequest {
        model: "claude-test",
        context_window: 200_000,
        ..test_support::request(input, tools)
    }
}

fn body_json(request: &ModelRequest<'_>) -> Value {
    serde_json::from_slice(&build_body(request).expect("encode")).expect("json")
}

const CACHE: &str = "cache_control";

/// Every JSON pointer that carries a `cache_control`.
fn breakpoints(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key == CACHE {
                    assert_eq!(inner, &json!({"type": "ephemeral"}), "{at}");
                    found.push(at.to_string());
                } else {
                    breakpoints(inner, &format!("{at}/{key}"), found);
                }
            }
        }
        Value::Array(items) => {
            for (n, inner) in items.iter().enumerate() {
                breakpoints(inner, &format!("{at}/{n}"), found);
            }
        }
        _ => {}
    }
}

/// `messages` without their `cache_control` marks.
fn without_breakpoints(messages: &Value) -> Value {
    let mut messages = messages.clone();
    for message in messages.as_array_mut().expect("messages") {
        for block in message["content"].as_array_mut().expect("content") {
            block.as_object_mut().expect("block").remove(CACHE);
        }
    }
    messages
}

fn cache_points(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    breakpoints(body, "", &mut found);
    found
}

// --- request body -----------------------------------------------------

#[test]
fn minimal_body_always_has_max_tokens_and_no_optional_fields() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let body = body_json(&request(&input, &[]));
    assert_eq!(
        body,
        json!({
            "model": "claude-test",
            "max_tokens": DEFAULT_MAX_TOKENS,
            "system": [{"type": "text", "text": "Be brief.", CACHE: {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "hi", CACHE: {"type": "ephemeral"}},
                ]},
            ],
            "stream": true,
        })
    );
}

#[test]
fn history_alternates_merges_and_puts_tool_results_first() {
    let mut patch = call("c3", "apply_patch", "*** Begin Patch\n");
    patch.kind = ToolCallKind::Freeform;
    let input = [
        HistoryItem::text(Role::Developer, "dev note"),
        HistoryItem::text(Role::User, "<environment/>"),
        HistoryItem::text(Role::User, "do it"),
        reasoning("other api", Some("enc"), "responses"),
        HistoryItem::text(Role::Assistant, "Looking."),
        HistoryItem::tool_call(call("c1", "read", "{\"p\":1}")),
        HistoryItem::tool_call(call("c2", "list", "")),
        tool_output("c1", "one", false),
        HistoryItem::text(Role::User, "also check b"),
        tool_output("c2", "", true),
        HistoryItem::text(Role::Assistant, ""),
        HistoryItem::tool_call(patch),
        HistoryItem::tool_call(call("c4", "read", "not json")),
        tool_output("c3", "done", false),
        tool_output("c4", "bad arguments", true),
        HistoryItem::text(Role::Assistant, "Finished."),
    ];
    let body = body_json(&request(&input, &[]));
    assert_eq!(
        body["system"],
        json!([
            {"type": "text", "text": "Be brief."},
            {"type": "text", "text": "dev note", CACHE: {"type": "ephemeral"}},
        ])
    );
    assert_eq!(
        without_breakpoints(&body["messages"]),
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "<environment/>"},
                {"type": "text", "text": "do it"},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "c1", "name": "read", "input": {"p": 1}},
                {"type": "tool_use", "id": "c2", "name": "list", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "one", "is_error": false},
                {"type": "tool_result", "tool_use_id": "c2", "content": "(no output)", "is_error": true},
                {"type": "text", "text": "also check b"},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c3", "name": "apply_patch", "input": {"input": "*** Begin Patch\n"}},
                {"type": "tool_use", "id": "c4", "name": "read", "input": {"input": "not json"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c3", "content": "done", "is_error": false},
                {"type": "tool_result", "tool_use_id": "c4", "content": "bad arguments", "is_error": true},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "Finished."}]},
        ])
    );
}

#[test]
fn whitespace_only_texts_are_left_out() {
    // The API rejects text blocks that hold only whitespace ("text
    // content blocks must contain non-whitespace text") on every later
    // request, so a "\n\n" a model wrote before its calls must not be
    // replayed.
    let input = [
        HistoryItem::text(Role::Developer, " \n"),
        HistoryItem::text(Role::User, "go"),
        HistoryItem::text(Role::Assistant, "\n\n"),
        HistoryItem::tool_call(call("c1", "read", "{}")),
        tool_output("c1", "  \n", false),
        HistoryItem::text(Role::Assistant, " "),
        HistoryItem::text(Role::User, "\t"),
        HistoryItem::text(Role::User, "next"),
    ];
    let body = body_json(&request(&input, &[]));
    assert_eq!(body["system"].as_array().map(Vec::len), Some(1), "{body}");
    assert_eq!(
        without_breakpoints(&body["messages"]),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "(no output)", "is_error": false},
                {"type": "text", "text": "next"},
            ]},
        ])
    );
}

#[test]
fn thinking_blocks_go_back_only_when_thinking_is_on() {
    let input = [
        HistoryItem::text(Role::User, "go"),
        reasoning("step one", Some("sig-1"), "anthropic"),
        reasoning("", Some("redacted-data"), "anthropic"),
        reasoning("unsigned", None, "anthropic"),
        reasoning("summary", Some("enc"), "responses"),
        HistoryItem::tool_call(call("t1", "read", "{}")),
        tool_output("t1", "ok", false),
    ];
    let mut req = request(&input, &[]);
    req.reasoning_effort = Some("low");
    let body = body_json(&req);
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "step one", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "redacted-data"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {}, CACHE: {"type": "ephemeral"}},
        ])
    );

    req.reasoning_effort = None;
    let body = body_json(&req);
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "t1", "name": "read", "input": {}, CACHE: {"type": "ephemeral"}}])
    );
    assert!(body.get("thinking").is_none());
}

#[test]
fn effort_maps_to_a_thinking_budget_below_max_tokens() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let limits = |effort: Option<&'static str>, max: Option<u32>| {
        let mut req = request(&input, &[]);
        req.reasoning_effort = effort;
        req.max_tokens = max;
        token_limits(&req)
    };
    assert_eq!(limits(None, None), (8192, None));
    assert_eq!(limits(None, Some(300)), (300, None));
    assert_eq!(limits(Some("minimal"), None), (8192 + 1024, Some(1024)));
    assert_eq!(limits(Some("low"), None), (8192 + 4096, Some(4096)));
    assert_eq!(limits(Some("medium"), None), (8192 + 8192, Some(8192)));
    assert_eq!(limits(Some("high"), None), (8192 + 16384, Some(16384)));
    assert_eq!(limits(Some("unknown"), None), (8192 + 8192, Some(8192)));
    // A configured max_tokens keeps a quarter for the answer.
    assert_eq!(limits(Some("high"), Some(64_000)), (64_000, Some(16384)));
    assert_eq!(limits(Some("high"), Some(8000)), (8000, Some(6000)));
    assert_eq!(limits(Some("minimal"), Some(1366)), (1366, Some(1024)));
    // Too small for the API's minimum budget: no thinking.
    assert_eq!(limits(Some("high"), Some(1000)), (1000, None));
    for (effort, max) in [("high", Some(1400)), ("medium", None), ("low", Some(2000))] {
        let (max_tokens, budget) = limits(Some(effort), max);
        let budget = budget.expect("thinking on");
        assert!(
            (MIN_THINKING_BUDGET..max_tokens).contains(&budget),
            "{effort}"
        );
    }
}

#[test]
fn thinking_drops_temperature_and_serial_tools_set_tool_choice() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let tools = [function_tool("read")];
    let mut req = request(&input, &tools);
    req.temperature = Some(0.25);
    req.max_tokens = Some(4000);
    let body = body_json(&req);
    assert_eq!(body["temperature"], json!(0.25));
    assert_eq!(body["max_tokens"], json!(4000));
    assert!(body.get("tool_choice").is_none());

    req.reasoning_effort = Some("medium");
    req.parallel_tool_calls = false;
    let body = body_json(&req);
    assert!(body.get("temperature").is_none(), "{body}");
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 3000})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}

#[test]
fn cache_breakpoints_cover_tools_system_and_the_last_two_messages() {
    let tools = [function_tool("read"), function_tool("list")];
    let input = [
        HistoryItem::text(Role::User, "first"),
        HistoryItem::text(Role::Assistant, "answer"),
        HistoryItem::text(Role::User, "second"),
        reasoning("think", Some("sig"), "anthropic"),
        HistoryItem::tool_call(call("a", "read", "{}")),
        tool_output("a", "result", false),
        HistoryItem::text(Role::User, "and then"),
    ];
    let mut req = request(&input, &tools);
    req.reasoning_effort = Some("low");
    let body = body_json(&req);
    assert_eq!(
        cache_points(&body),
        vec![
            "/messages/3/content/1",
            "/messages/4/content/1",
            "/system/0",
            "/tools/1",
        ]
    );

    // A message that is only thinking has no block that may carry one.
    let input = [
        HistoryItem::text(Role::User, "q"),
        reasoning("think", Some("sig"), "anthropic"),
    ];
    let mut req = request(&input, &[]);
    req.instructions = "";
    req.reasoning_effort = Some("low");
    let body = body_json(&req);
    assert!(body.get("system").is_none());
    assert_eq!(cache_points(&body), vec!["/messages/0/content/0"]);
}

#[test]
fn output_schema_becomes_the_final_answer_tool() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let tools = [function_tool("read")];
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let mut req = request(&input, &tools);
    req.output_schema = Some(&schema);
    let body = body_json(&req);
    assert_eq!(
        body["tools"][1],
        json!({
            "name": FINAL_ANSWER_TOOL,
            "description": FINAL_ANSWER_DESCRIPTION,
            "input_schema": schema,
            CACHE: {"type": "ephemeral"},
        })
    );
    assert_eq!(body["system"][1]["text"], json!(FINAL_ANSWER_INSTRUCTION));

    let list = json!({"type": "array", "items": {"type": "string"}});
    req.output_schema = Some(&list);
    let body = body_json(&req);
    assert_eq!(
        body["tools"][1]["input_schema"],
        json!({"type": "object", "properties": {"value": list}, "required": ["value"]})
    );
}

#[test]
fn freeform_tools_take_one_string_input() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let tools = [patch_tool()];
    let body = body_json(&request(&input, &tools));
    let schema = &body["tools"][0]["input_schema"];
    assert_eq!(schema["required"], json!(["input"]));
    assert_eq!(schema["properties"]["input"]["type"], json!("string"));
}

// --- stream parsing ---------------------------------------------------

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
        ("pause_turn", StopReason::Other("pause_turn".into())),
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
            include_str!("../../../tests/fixtures/anthropic/text_cached.txt"),
            include_str!("../../../tests/fixtures/anthropic/thinking_tool_use.txt"),
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
    let wire = include_str!("../../../tests/fixtures/anthropic/thinking_tool_use.txt");
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
fn bad_config_fails_at_construction() {
    let info = ProviderInfo::new("x", "not a url", super::super::WireApi::Anthropic);
    assert!(AnthropicMessages::new(info).is_err());
}
