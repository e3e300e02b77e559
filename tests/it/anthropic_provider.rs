//! The Anthropic Messages provider against the loopback mock: streaming,
//! tool calls, thinking round-trips, usage with cache tokens, retries
//! (529, in-stream `overloaded_error`), errors, timeouts, the request body
//! snapshot, and wire streams from `tests/fixtures/anthropic/`.

use crate::common::mock::{MockResponse, MockServer};
use crate::common::provider_harness::{
    completed, function_call, run_err, run_ok, started, text_of, user, Api, Style,
};
use crate::common::wire_anthropic::{self as wire, pairing_violations};
use cogni::agent::{start_session, SessionConfig};
use cogni::protocol::{
    Content, HistoryItem, Reasoning, Role, StopReason, ToolCallKind, ToolFormat, ToolOutput,
    ToolSpec, TurnOutcome, Usage,
};
use cogni::provider::anthropic::AnthropicMessages;
use cogni::provider::{ModelRequest, ProviderError, ResponseEvent, WireApi};
use serde_json::{json, Value};
use std::path::Path;

const KEY: &str = "sk-ant-mock-secret-0123456789";

const API: Api<AnthropicMessages> = Api {
    id: "anthropic",
    wire: WireApi::Anthropic,
    key: Some(("ANTHROPIC_API_KEY", KEY)),
    model: "claude-sonnet-4-5",
    context_window: 200_000,
    at_root: false,
    make: AnthropicMessages::with_jitter,
    text_response: wire::text_response,
};

fn events_of(mut events: Vec<String>, tail: &[String]) -> MockResponse {
    events.extend_from_slice(tail);
    MockResponse::sse(events)
}

// ---------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------

#[tokio::test]
async fn anthropic_streams_text_deltas() {
    let server = API
        .assert_streams_text_deltas(
            MockResponse::sse([
                wire::message_start(10, 0, 0),
                wire::text_start(0),
                wire::ping(),
                wire::text(0, "Hel"),
                wire::text(0, "lo, "),
                wire::text(0, "wörld"),
                wire::block_stop(0),
                wire::message_delta("end_turn", 4),
                wire::message_stop(),
            ]),
            Some(Usage {
                input_tokens: 10,
                output_tokens: 4,
                ..Usage::default()
            }),
        )
        .await;
    let sent = server.last_request().expect("a request");
    assert_eq!(sent.path_only(), "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn anthropic_two_tool_calls_in_order() {
    let server = MockServer::start();
    let mut events = vec![wire::message_start(100, 0, 0)];
    events.extend(wire::text_block(0, "Reading both.", 2));
    events.extend(wire::tool_use_block(
        1,
        "toolu_a",
        "read_file",
        "{\"path\":\"a.rs\"}",
        3,
    ));
    events.extend(wire::tool_use_block(
        2,
        "toolu_b",
        "shell",
        "{\"command\":[\"ls\"]}",
        2,
    ));
    server.enqueue(events_of(
        events,
        &[wire::message_delta("tool_use", 20), wire::message_stop()],
    ));
    let events = API.answer(&server, "go").await;
    assert_eq!(text_of(&events), "Reading both.");
    let rest: Vec<_> = events
        .iter()
        .filter(|e| !matches!(e, ResponseEvent::TextDelta(_)))
        .cloned()
        .collect();
    assert_eq!(
        rest[..4],
        [
            started("toolu_a", "read_file"),
            started("toolu_b", "shell"),
            ResponseEvent::ToolCall(function_call("toolu_a", "read_file", "{\"path\":\"a.rs\"}")),
            ResponseEvent::ToolCall(function_call("toolu_b", "shell", "{\"command\":[\"ls\"]}")),
        ]
    );
    assert_eq!(completed(&events).1, StopReason::ToolCalls);
}

#[tokio::test]
async fn anthropic_usage_counts_cache_reads_and_writes() {
    let server = MockServer::start();
    let mut events = vec![wire::message_start(12, 1500, 18000)];
    events.extend(wire::text_block(0, "ok", 1));
    server.enqueue(events_of(
        events,
        &[wire::message_delta("end_turn", 34), wire::message_stop()],
    ));
    let events = API.answer(&server, "hi").await;
    assert_eq!(
        completed(&events).0,
        Some(Usage {
            // Anthropic's input_tokens leaves out both cache counts.
            input_tokens: 12 + 1500 + 18000,
            output_tokens: 34,
            cached_input_tokens: 18000,
            cache_write_tokens: 1500,
            web_searches: 0,
            estimated: false,
        })
    );
}

#[tokio::test]
async fn anthropic_max_tokens_mid_tool_use_is_reported_not_emitted() {
    let server = MockServer::start();
    let mut events = vec![wire::message_start(10, 0, 0)];
    events.extend(wire::text_block(0, "Writing.", 1));
    events.extend(wire::tool_use_block(
        1,
        "toolu_w",
        "write_file",
        "{\"path\":\"a\",\"text\":\"abc",
        3,
    ));
    server.enqueue(events_of(
        events,
        &[wire::message_delta("max_tokens", 64), wire::message_stop()],
    ));
    let events = API.answer(&server, "go").await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ResponseEvent::ToolCall(_))),
        "{events:?}"
    );
    let (_, stop, incomplete) = completed(&events);
    assert_eq!(stop, StopReason::Length);
    assert_eq!(incomplete.as_deref(), Some("write_file"));
}

#[tokio::test]
async fn anthropic_output_schema_answer_comes_from_the_final_answer_tool() {
    let server = MockServer::start();
    let mut events = vec![wire::message_start(10, 0, 0)];
    events.extend(wire::tool_use_block(
        0,
        "toolu_f",
        "final_answer",
        "{\"status\": \"ok\", \"files\": 3}",
        3,
    ));
    server.enqueue(events_of(
        events,
        &[wire::message_delta("tool_use", 9), wire::message_stop()],
    ));
    let schema = json!({"type": "object", "properties": {"status": {"type": "string"}, "files": {"type": "integer"}}});
    let input = user("report");
    let mut req = API.request(&input);
    req.output_schema = Some(&schema);
    let events = run_ok(&API.provider_for(&server), &req).await;
    assert_eq!(
        events,
        vec![
            // The answer's fields in the order the model wrote them.
            ResponseEvent::TextDelta("{\"status\":\"ok\",\"files\":3}".into()),
            ResponseEvent::Completed {
                usage: Some(Usage {
                    input_tokens: 10,
                    output_tokens: 9,
                    ..Usage::default()
                }),
                stop_reason: StopReason::Stop,
                incomplete_tool_call: None,
            },
        ]
    );
    let body = server.last_request().expect("request").body_json().clone();
    let tools = body["tools"].as_array().expect("tools");
    assert_eq!(tools.last().expect("tool")["name"], json!("final_answer"));
    assert_eq!(tools.last().expect("tool")["input_schema"], schema);
}

// ---------------------------------------------------------------------------
// Thinking
// ---------------------------------------------------------------------------

const SIGNATURE: &str =
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+Ls2v1kXm5Wx8hRh36oIyqT";

#[tokio::test]
async fn anthropic_thinking_round_trips_with_its_signature_before_the_tool_use() {
    let server = MockServer::start();
    let mut first = vec![wire::message_start(50, 0, 0)];
    first.extend(wire::thinking_block(
        0,
        "I should read the file.",
        SIGNATURE,
    ));
    first.extend(wire::redacted_thinking_block(1, "b3BhcXVl"));
    first.extend(wire::tool_use_block(
        2,
        "toolu_r",
        "read_file",
        "{\"path\":\"a.rs\"}",
        2,
    ));
    server.enqueue(events_of(
        first,
        &[wire::message_delta("tool_use", 30), wire::message_stop()],
    ));
    server.enqueue(wire::text_response("It is fine."));
    let provider = API.provider_for(&server);
    // A request that replays tool calls must define tools.
    let tools = snapshot_tools();

    let mut history = user("check a.rs");
    let mut req = API.request(&history);
    req.tools = &tools;
    req.reasoning_effort = Some("low");
    let events = run_ok(&provider, &req).await;
    let reasoning: Vec<Reasoning> = events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::Reasoning(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasoning,
        vec![
            Reasoning {
                id: None,
                text: "I should read the file.".into(),
                encrypted: Some(SIGNATURE.into()),
                source: "anthropic".into(),
            },
            Reasoning {
                id: None,
                text: String::new(),
                encrypted: Some("b3BhcXVl".into()),
                source: "anthropic".into(),
            },
        ]
    );
    // What the engine keeps: reasoning first, then the call and its output.
    for r in reasoning {
        history.push(HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(r),
        });
    }
    for event in &events {
        if let ResponseEvent::ToolCall(call) = event {
            history.push(HistoryItem::tool_call(call.clone()));
        }
    }
    history.push(HistoryItem::tool_output(ToolOutput {
        call_id: "toolu_r".into(),
        content: "fn main() {}".into(),
        is_error: false,
        command: None,
        images: Vec::new(),
    }));
    let mut req = API.request(&history);
    req.tools = &tools;
    req.reasoning_effort = Some("low");
    run_ok(&provider, &req).await;

    let body = server
        .last_request()
        .expect("second request")
        .body_json()
        .clone();
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should read the file.", "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": "b3BhcXVl"},
            {"type": "tool_use", "id": "toolu_r", "name": "read_file", "input": {"path": "a.rs"},
             "cache_control": {"type": "ephemeral"}},
        ]})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_r", "content": "fn main() {}", "is_error": false,
             "cache_control": {"type": "ephemeral"}},
        ]})
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    server.assert_invariants();
}

/// The whole engine with thinking on: the response's thinking block comes
/// back before its tool_use in the next request, and the tool's output
/// answers it.
#[tokio::test]
async fn anthropic_engine_turn_keeps_thinking_before_tool_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "alpha\n").expect("write");
    let server = MockServer::start();
    let mut first = vec![wire::message_start(50, 0, 0)];
    first.extend(wire::thinking_block(0, "Read it first.", SIGNATURE));
    first.extend(wire::text_block(1, "Reading.", 1));
    first.extend(wire::tool_use_block(
        2,
        "toolu_1",
        "read_file",
        "{\"path\":\"a.txt\"}",
        2,
    ));
    server.enqueue(events_of(
        first,
        &[wire::message_delta("tool_use", 30), wire::message_stop()],
    ));
    server.enqueue(wire::text_response("It says alpha."));

    let mut info = API.info(&server);
    info.default_model = Some("claude-sonnet-4-5".into());
    let mut config = SessionConfig::new(info, dir.path().to_path_buf());
    config.sampling.reasoning_effort = Some("minimal");
    let mut session = start_session(config).expect("session");
    let sink = |_event| {};
    let result = session
        .run_turn("what is in a.txt?", &sink)
        .await
        .expect("turn");
    assert_eq!(result.outcome, TurnOutcome::Done);
    assert_eq!(result.final_text, "It says alpha.");
    server.assert_invariants();

    let body = server.requests()[1].body_json().clone();
    let messages = body["messages"].as_array().expect("messages");
    let assistant = &messages[messages.len() - 2];
    let kinds: Vec<&str> = assistant["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(kinds, ["thinking", "text", "tool_use"]);
    assert_eq!(assistant["content"][0]["signature"], json!(SIGNATURE));
    let result = &messages[messages.len() - 1]["content"][0];
    assert_eq!(result["tool_use_id"], json!("toolu_1"));
    assert!(result["content"]
        .as_str()
        .expect("output")
        .contains("alpha"));
    assert_eq!(body["thinking"]["budget_tokens"], json!(1024));
}

// ---------------------------------------------------------------------------
// Broken streams and retries
// ---------------------------------------------------------------------------

/// A message that started streaming "partial" and has not finished.
fn partial() -> Vec<String> {
    vec![
        wire::message_start(10, 0, 0),
        wire::text_start(0),
        wire::text(0, "partial"),
    ]
}

/// Everything of a message but its `message_stop`.
fn without_message_stop() -> MockResponse {
    let mut events = partial();
    events.extend([wire::block_stop(0), wire::message_delta("end_turn", 2)]);
    MockResponse::sse(events)
}

#[tokio::test]
async fn anthropic_stream_without_message_stop_is_retried() {
    API.assert_broken_stream_is_retried(without_message_stop())
        .await;
}

#[tokio::test]
async fn anthropic_connection_reset_after_text_is_retried() {
    API.assert_broken_stream_is_retried(MockResponse::sse(partial()).close_early())
        .await;
}

#[tokio::test]
async fn anthropic_overloaded_error_in_stream_is_retried_without_duplicated_text() {
    let mut events = partial();
    events.push(wire::error("overloaded_error", "Overloaded"));
    API.assert_broken_stream_is_retried(MockResponse::sse(events))
        .await;
}

#[tokio::test]
async fn anthropic_missing_message_stop_fails_when_retries_run_out() {
    API.assert_missing_terminal_exhausts_retries(without_message_stop, "message_stop")
        .await;
}

#[tokio::test]
async fn anthropic_invalid_request_error_in_stream_is_not_retried() {
    let mut events = partial();
    events.push(wire::error(
        "invalid_request_error",
        "bad thinking signature",
    ));
    API.assert_stream_error(MockResponse::sse(events), &["bad thinking signature"])
        .await;
}

#[tokio::test]
async fn anthropic_malformed_event_is_a_stream_error() {
    let mut events = partial();
    events.push(
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\n\n"
            .into(),
    );
    API.assert_stream_error(
        MockResponse::sse(events),
        &["malformed `content_block_delta` event"],
    )
    .await;
}

#[tokio::test]
async fn anthropic_500_then_200_retries_once() {
    API.assert_retried_once(
        wire::error_response(500, "api_error", "Internal server error"),
        "Internal server error",
    )
    .await;
}

#[tokio::test]
async fn anthropic_529_overloaded_then_200_is_retried() {
    let events = API
        .assert_retried_once(
            wire::error_response(529, "overloaded_error", "Overloaded"),
            "Overloaded",
        )
        .await;
    assert!(
        matches!(&events[0], ResponseEvent::Retrying { reason, .. } if reason.contains("529")),
        "{events:?}"
    );
}

#[tokio::test]
async fn anthropic_429_retry_after_is_honoured() {
    API.assert_retry_after_is_honoured(wire::error_response(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    ))
    .await;
}

#[tokio::test]
async fn anthropic_401_is_an_auth_error_naming_the_key_variable() {
    API.assert_401_names_the_key_variable(
        wire::error_response(
            401,
            "authentication_error",
            &format!("invalid x-api-key: {KEY}"),
        ),
        "invalid x-api-key",
    )
    .await;
}

#[tokio::test]
async fn anthropic_400_and_404_are_not_retried() {
    for (status, kind) in [(400, "invalid_request_error"), (404, "not_found_error")] {
        let message = "model: claude-nope";
        API.assert_status_is_not_retried(
            status,
            wire::error_response(status, kind, message),
            message,
        )
        .await;
    }
}

#[tokio::test]
async fn anthropic_404_names_the_url_and_the_setting() {
    // What LiteLLM (FastAPI) answers for a path it does not serve.
    API.assert_404_names_the_url_and_the_setting(
        MockResponse::json(404, &json!({"detail": "Not Found"})),
        "/messages",
    )
    .await;
}

#[tokio::test]
async fn anthropic_prompt_too_long_is_a_context_overflow() {
    API.assert_context_overflow(
        wire::error_response(
            400,
            "invalid_request_error",
            "prompt is too long: 215003 tokens > 200000 maximum",
        ),
        "215003 tokens",
    )
    .await;
}

#[tokio::test]
async fn anthropic_input_length_and_max_tokens_is_a_context_overflow() {
    API.assert_context_overflow(
        wire::exceeds_context_limit(197_626, 200_000),
        "exceed context limit: 197626 + 8192 > 200000",
    )
    .await;
    API.assert_context_overflow(
        MockResponse::sse([
            wire::message_start(10, 0, 0),
            wire::error(
                "invalid_request_error",
                "prompt is too long: 215003 tokens > 200000 maximum",
            ),
        ]),
        "prompt is too long",
    )
    .await;
}

#[tokio::test]
async fn anthropic_html_instead_of_an_event_stream_names_the_url() {
    API.assert_html_page_names_the_url("/messages").await;
}

#[tokio::test]
async fn anthropic_idle_stall_is_an_idle_timeout() {
    API.assert_idle_stall_is_an_idle_timeout(MockResponse::sse(partial()), "partial")
        .await;
}

#[tokio::test]
async fn anthropic_ping_events_keep_a_slow_stream_alive() {
    API.assert_keep_alive_keeps_a_slow_stream_alive(
        vec![
            wire::message_start(10, 0, 0),
            wire::text_start(0),
            wire::text(0, "slow "),
        ],
        wire::ping(),
        vec![
            wire::text(0, "but alive"),
            wire::block_stop(0),
            wire::message_delta("end_turn", 3),
            wire::message_stop(),
        ],
    )
    .await;
}

// ---------------------------------------------------------------------------
// Request shape
// ---------------------------------------------------------------------------

fn snapshot_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            format: ToolFormat::Function {
                parameters: json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                }),
            },
            read_only: true,
        },
        ToolSpec {
            name: "apply_patch".into(),
            description: "Edit files with a patch".into(),
            format: ToolFormat::Freeform {
                syntax: "lark".into(),
                definition: "start: begin_patch hunk+ end_patch".into(),
            },
            read_only: false,
        },
    ]
}

fn snapshot_history() -> Vec<HistoryItem> {
    let mut patch = function_call(
        "toolu_02",
        "apply_patch",
        "*** Begin Patch\n*** End Patch\n",
    );
    patch.kind = ToolCallKind::Freeform;
    vec![
        HistoryItem::text(Role::Developer, "Never push to main."),
        HistoryItem::text(
            Role::User,
            "<environment_context>cwd=/repo</environment_context>",
        ),
        HistoryItem::text(Role::User, "Fix the typo in README.md."),
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(Reasoning {
                id: None,
                text: "Read the README first.".into(),
                encrypted: Some("c2lnbmF0dXJlLTE=".into()),
                source: "anthropic".into(),
            }),
        },
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(Reasoning {
                id: Some("rs_1".into()),
                text: "from another API".into(),
                encrypted: Some("gAAAA".into()),
                source: "responses".into(),
            }),
        },
        HistoryItem::text(Role::Assistant, "Let me look."),
        HistoryItem::tool_call(function_call(
            "toolu_01",
            "read_file",
            "{\"path\":\"README.md\"}",
        )),
        HistoryItem::tool_output(ToolOutput {
            call_id: "toolu_01".into(),
            content: "# Projcet\n".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
        // With thinking on, every answer of the tool loop starts with one.
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(Reasoning {
                id: None,
                text: "Now the patch.".into(),
                encrypted: Some("c2lnbmF0dXJlLTI=".into()),
                source: "anthropic".into(),
            }),
        },
        HistoryItem::tool_call(patch),
        HistoryItem::tool_output(ToolOutput {
            call_id: "toolu_02".into(),
            content: "patch rejected: context not found".into(),
            is_error: true,
            command: None,
            images: Vec::new(),
        }),
        HistoryItem::text(Role::User, "Try again, carefully."),
    ]
}

#[tokio::test]
async fn anthropic_request_body_matches_the_snapshot() {
    let server = MockServer::start();
    server.enqueue(wire::text_response("ok"));
    let tools = snapshot_tools();
    let history = snapshot_history();
    let schema = json!({
        "type": "object",
        "properties": {"fixed": {"type": "boolean"}},
        "required": ["fixed"],
    });
    let req = ModelRequest {
        model: "claude-sonnet-4-5",
        instructions: "You are cogni, a coding agent.",
        input: &history,
        tools: &tools,
        parallel_tool_calls: true,
        output_schema: Some(&schema),
        temperature: Some(0.2),
        max_tokens: Some(16_000),
        reasoning_effort: Some("medium"),
        context_window: 200_000,
        context_window_is_default: false,
        web_search: false,
        max_tokens_param: cogni::provider::MaxTokensParam::MaxTokens,
    };
    run_ok(&API.provider_for(&server), &req).await;
    let sent = server.last_request().expect("a request");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/anthropic/request.json");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("snapshot")).expect("json");
    assert_eq!(
        sent.body_json(),
        &expected,
        "the request body differs from {}:\n{}",
        path.display(),
        serde_json::to_string_pretty(sent.body_json()).unwrap_or_default()
    );
    server.assert_invariants();
}

#[tokio::test]
async fn anthropic_cache_breakpoints_mark_the_stable_prefix() {
    let server = MockServer::start();
    server.enqueue(wire::text_response("ok"));
    let tools = snapshot_tools();
    let history = snapshot_history();
    let mut req = API.request(&history);
    req.tools = &tools;
    run_ok(&API.provider_for(&server), &req).await;
    let body = server.last_request().expect("request").body_json().clone();
    let marked = |v: &Value| v.get("cache_control") == Some(&json!({"type": "ephemeral"}));
    let mut places = Vec::new();
    for (n, tool) in body["tools"].as_array().expect("tools").iter().enumerate() {
        if marked(tool) {
            places.push(format!("tools[{n}]"));
        }
    }
    for (n, block) in body["system"]
        .as_array()
        .expect("system")
        .iter()
        .enumerate()
    {
        if marked(block) {
            places.push(format!("system[{n}]"));
        }
    }
    let messages = body["messages"].as_array().expect("messages");
    for (m, message) in messages.iter().enumerate() {
        for (n, block) in message["content"]
            .as_array()
            .expect("content")
            .iter()
            .enumerate()
        {
            if marked(block) {
                places.push(format!("messages[{m}].content[{n}] {}", block["type"]));
            }
        }
    }
    // The last tool, the last system block, the end of the history before
    // the newest message (the assistant's second call) and the end of the
    // newest message: the API's maximum of four.
    assert_eq!(
        places,
        [
            "tools[1]",
            "system[1]",
            "messages[3].content[0] \"tool_use\"",
            "messages[4].content[1] \"text\"",
        ]
    );
    assert_eq!(messages.len(), 5);
    server.assert_invariants();
}

#[tokio::test]
async fn anthropic_pairing_check_reports_violations() {
    let body = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "x", "input": {}},
            {"type": "tool_use", "id": "b", "name": "x", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "text", "text": "hm"},
            {"type": "tool_result", "tool_use_id": "a", "content": "1"},
            {"type": "tool_result", "tool_use_id": "a", "content": "2"},
            {"type": "tool_result", "tool_use_id": "z", "content": "orphan"},
        ]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]});
    let problems = pairing_violations(&body);
    assert_eq!(
        problems,
        [
            "tool_use `a` (message 1) has 2 tool_result blocks",
            "tool_use `b` (message 1) has no tool_result in the next user message",
            "message 2 has other blocks before its tool_result blocks",
            "tool_result in message 2 answers `z`, which the previous assistant message did not call",
            "messages 2 and 3 are both `user`: roles must alternate",
        ]
    );

    // And the mock applies it to requests on /messages, and rejects such a
    // request as the API does.
    let server = MockServer::start();
    server.enqueue(wire::text_response("ok"));
    let input = vec![
        HistoryItem::text(Role::User, "go"),
        HistoryItem::tool_call(function_call("c1", "shell", "{}")),
        HistoryItem::tool_output(ToolOutput {
            call_id: "c9".into(),
            content: "orphan".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
    ];
    let tools = snapshot_tools();
    let mut req = API.request(&input);
    req.tools = &tools;
    let error = run_err(&API.provider_for(&server), &req).await;
    assert!(
        matches!(&error, ProviderError::Http { status: 400, message, .. }
            if message.starts_with("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: c1.")),
        "{error}"
    );
    let violations = server.violations();
    assert_eq!(violations.len(), 3, "{violations:?}");
    assert!(violations.iter().any(|v| v.contains("`c9`")));
    assert!(violations.iter().any(|v| v.contains("`c1`")));
    assert!(violations.iter().any(|v| v.contains("rejected")));
    assert_eq!(server.pending_responses(), 1, "a rejection serves nothing");
}

#[tokio::test]
async fn the_mock_rejects_what_the_messages_api_rejects() {
    let tools = snapshot_tools();
    let call = || HistoryItem::tool_call(function_call("toolu_1", "read_file", "{}"));
    let output = || {
        HistoryItem::tool_output(ToolOutput {
            call_id: "toolu_1".into(),
            content: "ok".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        })
    };
    // Each body breaks one rule; the API's own words come back.
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"model": "m", "max_tokens": 10, "temperature": 1.5,
                   "messages": [{"role": "user", "content": "hi"}]}),
            "temperature: range: 0..1",
        ),
        (
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "\n\n"},
                    {"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "1"}]},
            ], "tools": [{"name": "x", "input_schema": {"type": "object"}}]}),
            "messages: text content blocks must contain non-whitespace text",
        ),
        (
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "user", "content": [{"type": "text", "text": ""}]}]}),
            "messages: text content blocks must be non-empty",
        ),
        (
            json!({"model": "m", "max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 4096},
                   "messages": [{"role": "user", "content": "hi"}]}),
            "`max_tokens` must be greater than `thinking.budget_tokens`",
        ),
    ];
    for (body, says) in cases {
        let broken = wire::rule_broken(&body);
        assert!(
            broken.as_deref().is_some_and(|m| m.starts_with(says)),
            "{says}: {broken:?}"
        );
    }
    // Through the client: tool blocks without tools, and a thinking tool
    // loop whose last assistant message does not start with thinking.
    let history = vec![HistoryItem::text(Role::User, "go"), call(), output()];
    let server = MockServer::start();
    let error = run_err(&API.provider_for(&server), &API.request(&history)).await;
    assert!(
        error.to_string().contains(
            "Requests which include `tool_use` or `tool_result` blocks must define tools."
        ),
        "{error}"
    );
    let mut req = API.request(&history);
    req.tools = &tools;
    req.reasoning_effort = Some("low");
    let error = run_err(&API.provider_for(&server), &req).await;
    assert!(
        error.to_string().contains("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."),
        "{error}"
    );
    assert_eq!(server.violations().len(), 2);
}

// ---------------------------------------------------------------------------
// Recorded wire streams
// ---------------------------------------------------------------------------

#[tokio::test]
async fn anthropic_fixture_streams_decode_to_expected_events() {
    API.assert_fixtures_decode_to_expected_events(
        "anthropic",
        "txt",
        5,
        MockResponse::sse,
        &Style {
            reasoning: Some(|r| {
                format!(
                    "reasoning {} {} encrypted={}",
                    r.source,
                    json!(r.text),
                    r.encrypted.as_deref().unwrap_or("none")
                )
            }),
            usage: |u| {
                format!(
                    "{}/{}/{}/{}",
                    u.input_tokens, u.output_tokens, u.cached_input_tokens, u.cache_write_tokens
                )
            },
            made_up_ids: false,
        },
    )
    .await;
}

#[tokio::test]
async fn anthropic_an_oversized_answer_is_stopped() {
    API.assert_oversized_answer_is_stopped().await;
}

#[tokio::test]
async fn anthropic_an_oversized_tool_call_is_stopped() {
    API.assert_oversized_tool_call_is_stopped(|args| {
        wire::tool_use_response(&[("toolu_1", "write_file", args)])
    })
    .await;
}
