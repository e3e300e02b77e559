//! The request body's tests (the stream's are in stream_tests.rs).

use super::*;
use crate::test_support::{self, call, function_tool, patch_tool, tool_output};
use cogni_protocol::ToolCallKind;

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

/// The breakpoints' paths, sorted (objects keep their keys in the order
/// they were built).
fn cache_points(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    breakpoints(body, "", &mut found);
    found.sort();
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

#[test]
fn bad_config_fails_at_construction() {
    let info = ProviderInfo::new("x", "not a url", super::super::WireApi::Anthropic);
    assert!(AnthropicMessages::new(info).is_err());
}

#[test]
fn images_are_base64_image_blocks_also_inside_tool_results() {
    let input = crate::test_support::with_images();
    let body = body_json(&request(&input, &[]));
    let messages = body["messages"].as_array().unwrap();
    let source = json!({"type": "base64", "media_type": "image/png", "data": "BASE64-shot.png"});
    assert_eq!(
        messages[0]["content"],
        json!([{"type": "text", "text": "look"}, {"type": "image", "source": source}])
    );
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": "viewed"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "BASE64-tool.png"}},
        ])
    );
}
