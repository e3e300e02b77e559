//! The OpenAI Responses provider against the loopback mock serving real
//! Responses SSE: streaming, tool calls (function and freeform), reasoning
//! carried back through the engine, retries, errors, timeouts, the request
//! payload, and wire streams from `tests/fixtures/responses/`.

use crate::common::mock::{MockResponse, MockServer};
use crate::common::provider_harness::{
    completed, retries, run_err, run_ok, started, tool_call, user, Api, Style,
};
use crate::common::wire_responses as responses;
use cogni::agent::{start_session, SessionConfig};
use cogni::protocol::{
    ApprovalPolicy, Content, HistoryItem, Reasoning, Role, StopReason, ToolCallKind, ToolFormat,
    ToolOutput, ToolSpec, TurnOutcome, Usage,
};
use cogni::provider::responses::Responses;
use cogni::provider::{ModelRequest, ProviderError, ResponseEvent, WireApi};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const KEY: &str = "sk-mock-secret-0123456789";

const API: Api<Responses> = Api {
    id: "openai",
    wire: WireApi::Responses,
    key: Some(("OPENAI_API_KEY", KEY)),
    model: "mock-model",
    context_window: 128_000,
    at_root: false,
    make: Responses::with_jitter,
    text_response: responses::text_response,
};

fn patch_tool(definition: &str) -> ToolSpec {
    ToolSpec {
        name: "apply_patch".into(),
        description: "Edit files with a patch.".into(),
        format: ToolFormat::Freeform {
            syntax: "lark".into(),
            definition: definition.into(),
        },
        read_only: false,
    }
}

/// `[created] + parts... + [completed]` as one scripted stream.
fn stream_of(parts: Vec<Vec<String>>) -> MockResponse {
    let mut events = vec![responses::created()];
    events.extend(parts.into_iter().flatten());
    events.push(responses::completed(10, 5, 0));
    MockResponse::sse(events)
}

// ---------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------

#[tokio::test]
async fn responses_streams_text_deltas() {
    let server = API
        .assert_streams_text_deltas(
            stream_of(vec![responses::message(&["Hel", "lo, ", "wörld"])]),
            Some(Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            }),
        )
        .await;
    let sent = server.last_request().expect("a request");
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path_only(), "/v1/responses");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn responses_two_parallel_tool_calls() {
    let server = MockServer::start();
    server.enqueue(responses::tool_calls_response(&[
        ("call_a", "read_file", r#"{"path":"a.rs"}"#),
        ("call_b", "shell", r#"{"command":["ls"]}"#),
    ]));
    let events = API.answer(&server, "go").await;
    assert_eq!(
        events[..4],
        [
            started("call_a", "read_file"),
            ResponseEvent::ToolCall(tool_call(
                "call_a",
                "read_file",
                r#"{"path":"a.rs"}"#,
                ToolCallKind::Function
            )),
            started("call_b", "shell"),
            ResponseEvent::ToolCall(tool_call(
                "call_b",
                "shell",
                r#"{"command":["ls"]}"#,
                ToolCallKind::Function
            )),
        ]
    );
    assert_eq!(completed(&events).1, StopReason::ToolCalls);
}

#[tokio::test]
async fn responses_freeform_call_keeps_its_raw_input() {
    let server = MockServer::start();
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+héllo\n*** End Patch\n";
    server.enqueue(stream_of(vec![responses::custom_tool_call(
        "call_p",
        "apply_patch",
        patch,
    )]));
    let tools = [patch_tool("start: begin_patch hunk+ end_patch")];
    let input = user("patch");
    let mut req = API.request(&input);
    req.tools = &tools;
    let events = run_ok(&API.provider_for(&server), &req).await;
    assert_eq!(
        events[..2],
        [
            started("call_p", "apply_patch"),
            ResponseEvent::ToolCall(tool_call(
                "call_p",
                "apply_patch",
                patch,
                ToolCallKind::Freeform
            )),
        ]
    );
    let sent = server.last_request().expect("request");
    assert_eq!(
        sent.body_json()["tools"],
        json!([{
            "type": "custom",
            "name": "apply_patch",
            "description": "Edit files with a patch.",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"},
        }])
    );
}

#[tokio::test]
async fn responses_usage_includes_cached_tokens() {
    let server = MockServer::start();
    let mut events = vec![responses::created()];
    events.extend(responses::message(&["ok"]));
    events.push(responses::completed(1200, 34, 1024));
    server.enqueue(MockResponse::sse(events));
    let events = API.answer(&server, "hi").await;
    assert_eq!(
        completed(&events).0,
        Some(Usage {
            input_tokens: 1200,
            output_tokens: 34,
            cached_input_tokens: 1024,
            ..Usage::default()
        })
    );
}

#[tokio::test]
async fn responses_incomplete_at_max_output_tokens_reports_the_cut_call() {
    let server = MockServer::start();
    let mut events = vec![responses::created()];
    events.extend(responses::message(&["Writing."]));
    events.extend(responses::function_call_started(
        "call_w",
        "write_file",
        r#"{"path":"a","text":"ab"#,
    ));
    events.push(responses::incomplete("max_output_tokens"));
    server.enqueue(MockResponse::sse(events));
    let input = user("go");
    let mut req = API.request(&input);
    req.max_tokens = Some(16);
    let events = run_ok(&API.provider_for(&server), &req).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ResponseEvent::ToolCall(_))),
        "{events:?}"
    );
    let (usage, stop, cut) = completed(&events);
    assert_eq!(stop, StopReason::Length);
    assert_eq!(cut.as_deref(), Some("write_file"));
    assert!(usage.is_some());
    let sent = server.last_request().expect("request");
    assert_eq!(sent.body_json()["max_output_tokens"], json!(16));
}

// ---------------------------------------------------------------------------
// Reasoning through the engine
// ---------------------------------------------------------------------------

#[tokio::test]
async fn responses_reasoning_is_carried_back_with_the_tool_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "alpha\n").expect("write");
    let server = MockServer::start();
    let patch = "*** Begin Patch\n*** Add File: b.txt\n+beta\n*** End Patch\n";
    server.enqueue(stream_of(vec![
        responses::reasoning("rs_1", "**Reading** the file first.", "gAAAAencrypted=="),
        responses::function_call("call_r", "read_file", r#"{"path":"a.txt"}"#),
        responses::custom_tool_call("call_p", "apply_patch", patch),
    ]));
    server.enqueue(responses::text_response("done"));

    let mut info = API.info(&server);
    info.default_model = Some("gpt-5".into());
    let mut config = SessionConfig::new(info, dir.path().to_path_buf());
    config.approval_policy = ApprovalPolicy::Never;
    let mut session = start_session(config).expect("session");
    let result = session
        .run_turn("read a, add b", &|_| {})
        .await
        .expect("turn");
    assert_eq!(result.outcome, TurnOutcome::Done);
    assert_eq!(result.final_text, "done");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).expect("patched"),
        "beta\n"
    );
    server.assert_invariants();

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].body_json();
    assert_eq!(first["reasoning"]["summary"], json!("auto"));
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert!(first.get("temperature").is_none());
    let tools = first["tools"].as_array().expect("tools");
    assert!(
        tools
            .iter()
            .any(|t| t["type"] == "custom" && t["name"] == "apply_patch"),
        "{tools:?}"
    );

    // The second request replays the response: reasoning first, then each
    // call with its output.
    let input = requests[1].body_json()["input"]
        .as_array()
        .expect("input")
        .clone();
    let kinds: Vec<&str> = input.iter().filter_map(|i| i["type"].as_str()).collect();
    let at = kinds
        .iter()
        .position(|k| *k == "reasoning")
        .expect("the reasoning item is sent back");
    assert_eq!(
        input[at],
        json!({
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "**Reading** the file first."}],
            "encrypted_content": "gAAAAencrypted==",
        })
    );
    assert_eq!(
        kinds[at..],
        [
            "reasoning",
            "function_call",
            "custom_tool_call",
            "function_call_output",
            "custom_tool_call_output",
        ]
    );
    assert_eq!(input[at + 2]["input"], json!(patch));
    assert!(
        input[at + 3]["output"]
            .as_str()
            .is_some_and(|o| o.contains("alpha")),
        "{:?}",
        input[at + 3]
    );
}

// ---------------------------------------------------------------------------
// Broken streams
// ---------------------------------------------------------------------------

#[tokio::test]
async fn responses_missing_completed_is_retried() {
    let events = API
        .assert_broken_stream_is_retried(MockResponse::sse([
            responses::created(),
            responses::text("partial"),
        ]))
        .await;
    assert!(
        matches!(&events[1], ResponseEvent::Retrying { reason, .. } if reason.contains("response.completed")),
        "{events:?}"
    );
}

#[tokio::test]
async fn responses_missing_completed_is_an_error_when_retries_run_out() {
    API.assert_missing_terminal_exhausts_retries(
        || MockResponse::sse([responses::created(), responses::text("partial")]),
        "`response.completed`",
    )
    .await;

    // Without retries the failure itself is reported.
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([responses::text("partial")]));
    let input = user("hi");
    let error = run_err(&API.provider(API.no_retries(&server)), &API.request(&input)).await;
    assert!(
        matches!(&error, ProviderError::Stream { message, .. } if message.contains("response.completed")),
        "{error}"
    );
}

#[tokio::test]
async fn responses_connection_reset_after_text_is_retried_without_duplicates() {
    API.assert_broken_stream_is_retried(
        MockResponse::sse([responses::created(), responses::text("partial")]).close_early(),
    )
    .await;
}

#[tokio::test]
async fn responses_failed_with_server_error_is_retried() {
    API.assert_broken_stream_is_retried(MockResponse::sse([
        responses::created(),
        responses::text("partial"),
        responses::failed(
            "server_error",
            "The server had an error processing your request.",
        ),
    ]))
    .await;
}

#[tokio::test]
async fn responses_failed_for_context_length_is_a_context_overflow() {
    API.assert_context_overflow(
        MockResponse::sse([
            responses::created(),
            responses::failed(
                "context_length_exceeded",
                "Your input exceeds the context window of this model.",
            ),
        ]),
        "exceeds the context window",
    )
    .await;
}

#[tokio::test]
async fn responses_error_event_is_an_error_not_retried_unless_transient() {
    API.assert_stream_error(
        MockResponse::sse([
            responses::created(),
            responses::error("invalid_prompt", "The prompt was flagged."),
        ]),
        &["The prompt was flagged."],
    )
    .await;

    API.assert_broken_stream_is_retried(MockResponse::sse([
        responses::created(),
        responses::text("partial"),
        responses::error("server_is_overloaded", "Overloaded"),
    ]))
    .await;
}

#[tokio::test]
async fn responses_malformed_event_is_a_clear_error() {
    API.assert_stream_error(
        MockResponse::sse([
            responses::created(),
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n"
                .to_string(),
            responses::completed(1, 1, 0),
        ]),
        &["malformed event"],
    )
    .await;
}

#[tokio::test]
async fn responses_html_body_is_a_clear_error_naming_the_url() {
    API.assert_html_page_names_the_url("/responses").await;
}

// ---------------------------------------------------------------------------
// HTTP statuses
// ---------------------------------------------------------------------------

#[tokio::test]
async fn responses_500_then_200_retries_once_with_the_same_body() {
    API.assert_retried_once(MockResponse::error(500, "boom"), "boom")
        .await;
}

#[tokio::test]
async fn responses_503_is_retried() {
    let events = API
        .assert_retried_once(MockResponse::error(503, "busy"), "busy")
        .await;
    assert_eq!(retries(&events), vec![(1, Duration::from_millis(1))]);
}

#[tokio::test]
async fn responses_429_retry_after_is_honoured() {
    API.assert_retry_after_is_honoured(MockResponse::error(429, "slow down"))
        .await;
}

#[tokio::test]
async fn responses_401_is_an_auth_error_naming_openai_api_key() {
    API.assert_401_names_the_key_variable(
        MockResponse::error(401, &format!("Incorrect API key provided: {KEY}.")),
        "Incorrect API key",
    )
    .await;
}

#[tokio::test]
async fn responses_400_and_404_are_not_retried() {
    for status in [400, 404] {
        let message = "model `nope` does not exist";
        API.assert_status_is_not_retried(status, MockResponse::error(status, message), message)
            .await;
    }
}

#[tokio::test]
async fn responses_404_names_the_url_and_the_setting() {
    API.assert_404_names_the_url_and_the_setting(
        MockResponse::error(404, "Invalid URL (POST /v1/response)"),
        "/responses",
    )
    .await;
}

#[tokio::test]
async fn responses_context_length_exceeded_400_is_a_context_overflow() {
    API.assert_context_overflow(
        MockResponse::json(
            400,
            &json!({"error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }}),
        ),
        "exceeds the context window",
    )
    .await;
}

// ---------------------------------------------------------------------------
// Idle timeout
// ---------------------------------------------------------------------------

#[tokio::test]
async fn responses_idle_stall_is_an_idle_timeout() {
    API.assert_idle_stall_is_an_idle_timeout(
        MockResponse::sse([responses::created(), responses::text("started")]),
        "started",
    )
    .await;
}

#[tokio::test]
async fn responses_keep_alive_comments_keep_a_slow_stream_alive() {
    API.assert_keep_alive_keeps_a_slow_stream_alive(
        vec![responses::created(), responses::text("slow ")],
        responses::comment("keep-alive"),
        vec![responses::text("but alive"), responses::completed(1, 1, 0)],
    )
    .await;
}

// ---------------------------------------------------------------------------
// Request payload and the pairing check
// ---------------------------------------------------------------------------

#[tokio::test]
async fn responses_request_payload_snapshot() {
    let server = MockServer::start();
    server.enqueue(responses::text_response("ok"));
    let input = vec![
        HistoryItem::text(Role::Developer, "Prefer small diffs."),
        HistoryItem::text(Role::User, "Fix the failing test in src/lib.rs."),
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(Reasoning {
                id: Some("rs_68a1c4031e588196".into()),
                text: "**Reading the test**".into(),
                encrypted: Some("gAAAAABooa8CqL3zX0n7Yk2Vb9W1==".into()),
                source: "responses".into(),
            }),
        },
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(Reasoning {
                id: None,
                text: "thinking from another API".into(),
                encrypted: Some("anthropic-signature".into()),
                source: "anthropic".into(),
            }),
        },
        HistoryItem::text(Role::Assistant, "Reading the file."),
        HistoryItem::tool_call(tool_call(
            "call_read",
            "read_file",
            r#"{"path":"src/lib.rs"}"#,
            ToolCallKind::Function,
        )),
        HistoryItem::tool_output(ToolOutput {
            call_id: "call_read".into(),
            content: "pub fn add(a: i32, b: i32) -> i32 { a - b }".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
        HistoryItem::tool_call(tool_call(
            "call_patch",
            "apply_patch",
            "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-{ a - b }\n+{ a + b }\n*** End Patch\n",
            ToolCallKind::Freeform,
        )),
        HistoryItem::tool_output(ToolOutput {
            call_id: "call_patch".into(),
            content: "Success. Updated: M src/lib.rs".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
    ];
    let tools = [
        ToolSpec {
            name: "read_file".into(),
            description: "Read a text file.".into(),
            format: ToolFormat::Function {
                parameters: json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": false,
                }),
            },
            read_only: true,
        },
        patch_tool("start: begin_patch hunk+ end_patch"),
    ];
    let schema = json!({
        "type": "object",
        "properties": {"fixed": {"type": "boolean"}},
        "required": ["fixed"],
    });
    let req = ModelRequest {
        model: "gpt-5",
        instructions: "You are cogni, a coding agent.",
        input: &input,
        tools: &tools,
        parallel_tool_calls: true,
        output_schema: Some(&schema),
        temperature: Some(0.3),
        max_tokens: Some(4096),
        reasoning_effort: Some("medium"),
        context_window: 272_000,
        context_window_is_default: false,
        web_search: false,
        max_tokens_param: cogni::provider::MaxTokensParam::MaxTokens,
    };
    run_ok(&API.provider_for(&server), &req).await;
    server.assert_invariants();

    let sent = server.last_request().expect("request");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/responses/request.json");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("request.json"))
            .expect("request.json is JSON");
    assert_eq!(
        sent.body_json(),
        &expected,
        "the body differs from {}; it was:\n{}",
        path.display(),
        serde_json::to_string_pretty(sent.body_json()).unwrap_or_default()
    );
}

#[tokio::test]
async fn mock_records_responses_pairing_violations() {
    let server = MockServer::start();
    server.enqueue(responses::text_response("ok"));
    let input = vec![
        HistoryItem::text(Role::User, "go"),
        HistoryItem::tool_call(tool_call("call_1", "shell", "{}", ToolCallKind::Function)),
        HistoryItem::tool_call(tool_call("call_2", "shell", "{}", ToolCallKind::Function)),
        HistoryItem::tool_output(ToolOutput {
            call_id: "call_1".into(),
            content: "ok".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
        HistoryItem::tool_output(ToolOutput {
            call_id: "call_9".into(),
            content: "orphan".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
    ];
    // The API rejects the orphaned output first, in its own words.
    let error = run_err(&API.provider_for(&server), &API.request(&input)).await;
    assert!(
        matches!(&error, ProviderError::Http { status: 400, message, .. }
            if message == "No tool call found for function call output with call_id call_9."),
        "{error}"
    );
    let violations = server.violations();
    assert_eq!(violations.len(), 3, "{violations:?}");
    assert!(
        violations[0].contains("`call_2`") && violations[0].contains("no function_call_output")
    );
    assert!(violations[1].contains("`call_9`"));
    assert!(violations[2].contains("rejected"));

    // A call without its output is rejected too.
    let unanswered = &input[..3];
    let error = run_err(&API.provider_for(&server), &API.request(unanswered)).await;
    assert!(
        error
            .to_string()
            .contains("No tool output found for function call call_1."),
        "{error}"
    );
}

// ---------------------------------------------------------------------------
// Wire streams
// ---------------------------------------------------------------------------

#[tokio::test]
async fn responses_fixture_streams_decode_to_expected_events() {
    API.assert_fixtures_decode_to_expected_events(
        "responses",
        "txt",
        4,
        MockResponse::sse,
        &Style {
            reasoning: Some(|r| {
                format!(
                    "reasoning {} {} encrypted={}",
                    r.id.as_deref().unwrap_or("-"),
                    json!(r.text),
                    r.encrypted.as_ref().map_or(0, String::len)
                )
            }),
            usage: |u| {
                format!(
                    "{}/{}/{}",
                    u.input_tokens, u.output_tokens, u.cached_input_tokens
                )
            },
            made_up_ids: false,
        },
    )
    .await;
}

#[tokio::test]
async fn responses_an_oversized_answer_is_stopped() {
    API.assert_oversized_answer_is_stopped().await;
}

#[tokio::test]
async fn responses_an_oversized_tool_call_is_stopped() {
    API.assert_oversized_tool_call_is_stopped(|args| {
        responses::tool_calls_response(&[("call_1", "write_file", args)])
    })
    .await;
}
