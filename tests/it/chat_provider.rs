//! The Chat Completions provider against the loopback mock: streaming,
//! tool-call assembly, retries, errors, timeouts, request shape, and real
//! wire captures from `tests/fixtures/sse/`.

use crate::common::mock::{chat, Gate, MockResponse, MockServer, Pause};
use crate::common::provider_harness::{
    collect, completed, function_call, retries, run_err, run_ok, started, text_of, user, Api,
    Style, GENEROUS,
};
use cogni::protocol::{
    HistoryItem, Role, StopReason, ToolCall, ToolCallKind, ToolFormat, ToolOutput, ToolSpec, Usage,
};
use cogni::provider::chat_completions::ChatCompletions;
use cogni::provider::{Provider, ProviderError, ProviderInfo, ResponseEvent, WireApi};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;

const KEY: &str = "sk-mock-secret-0123456789";

const API: Api<ChatCompletions> = Api {
    id: "mock",
    wire: WireApi::Chat,
    key: Some(("MOCK_API_KEY", KEY)),
    model: "mock-model",
    context_window: 128_000,
    at_root: false,
    make: ChatCompletions::with_jitter,
    text_response: chat::text_response,
};

// ---------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_streams_text_deltas() {
    API.assert_streams_text_deltas(
        MockResponse::sse([
            chat::role(),
            chat::text("Hel"),
            chat::reasoning("thinking"),
            chat::text("lo, "),
            chat::text("wörld"),
            chat::finish("stop"),
            chat::done(),
        ]),
        None,
    )
    .await;
}

#[tokio::test]
async fn chat_parallel_tool_calls_interleaved_by_index() {
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([
        chat::role(),
        chat::tool_call_start(0, "call_a", "read_file"),
        chat::tool_call_start(1, "call_b", "shell"),
        chat::tool_call_args(1, "{\"command\":"),
        chat::tool_call_args(0, "{\"path\":"),
        chat::tool_call_args(0, "\"a.rs\"}"),
        chat::tool_call_args(1, "[\"ls\"]}"),
        chat::finish("tool_calls"),
        chat::usage(100, 20, 0),
        chat::done(),
    ]));
    let events = API.answer(&server, "go").await;
    assert_eq!(
        events[..4],
        [
            started("call_a", "read_file"),
            started("call_b", "shell"),
            ResponseEvent::ToolCall(function_call("call_a", "read_file", "{\"path\":\"a.rs\"}")),
            ResponseEvent::ToolCall(function_call("call_b", "shell", "{\"command\":[\"ls\"]}")),
        ]
    );
    assert_eq!(completed(&events).1, StopReason::ToolCalls);
}

#[tokio::test]
async fn chat_usage_from_the_final_chunk() {
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([
        chat::text("ok"),
        chat::finish("stop"),
        chat::usage(1200, 34, 1024),
        chat::done(),
    ]));
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
async fn chat_finish_length_mid_tool_call_is_reported_not_emitted() {
    let server = MockServer::start();
    let mut events = vec![chat::text("Writing.")];
    events.extend(chat::tool_call_split(
        0,
        "call_w",
        "write_file",
        "{\"path\":\"a\",\"text\":\"abc",
        3,
    ));
    events.extend([chat::finish("length"), chat::done()]);
    server.enqueue(MockResponse::sse(events));
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
async fn chat_freeform_tool_call_is_unwrapped() {
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([
        chat::tool_call(
            0,
            "call_p",
            "apply_patch",
            &json!({"input": "*** Begin Patch\n*** End Patch\n"}).to_string(),
        ),
        chat::finish("tool_calls"),
        chat::done(),
    ]));
    let tools = [ToolSpec {
        name: "apply_patch".into(),
        description: "Patch files".into(),
        format: ToolFormat::Freeform {
            syntax: "lark".into(),
            definition: String::new(),
        },
        read_only: false,
    }];
    let input = user("patch");
    let mut req = API.request(&input);
    req.tools = &tools;
    let events = run_ok(&API.provider_for(&server), &req).await;
    assert!(events.contains(&ResponseEvent::ToolCall(ToolCall {
        id: "call_p".into(),
        name: "apply_patch".into(),
        arguments: "*** Begin Patch\n*** End Patch\n".into(),
        kind: ToolCallKind::Freeform,
    })));
}

// ---------------------------------------------------------------------------
// Broken streams
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_missing_done_is_an_error() {
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([
        chat::text("partial"),
        chat::finish("stop"),
        chat::usage(1, 1, 0),
    ]));
    let input = user("hi");
    let error = run_err(&API.provider(API.no_retries(&server)), &API.request(&input)).await;
    assert!(
        matches!(&error, ProviderError::Stream { message, .. } if message.contains("[DONE]")),
        "{error}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn chat_stream_without_done_is_retried() {
    API.assert_broken_stream_is_retried(MockResponse::sse([
        chat::text("partial"),
        chat::finish("stop"),
    ]))
    .await;
}

#[tokio::test]
async fn chat_connection_reset_after_text_is_retried() {
    API.assert_broken_stream_is_retried(MockResponse::sse([chat::text("partial")]).close_early())
        .await;
}

#[tokio::test]
async fn chat_connection_closed_mid_stream_is_an_error() {
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([chat::text("partial")]).close_early());
    let input = user("hi");
    let (events, error) =
        collect(&API.provider(API.no_retries(&server)), &API.request(&input)).await;
    assert_eq!(text_of(&events), "partial");
    assert!(
        matches!(error, Some(ProviderError::Stream { .. })),
        "{error:?}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn chat_malformed_chunk_is_a_stream_error() {
    API.assert_stream_error(
        MockResponse::sse([
            chat::text("ok"),
            "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}\n\n".to_string(),
            chat::done(),
        ]),
        &["malformed chunk", "{\"choices\""],
    )
    .await;
}

#[tokio::test]
async fn chat_mid_stream_error_payload_is_an_error() {
    API.assert_stream_error(
        MockResponse::sse([
            chat::text("so far"),
            chat::data(&json!({"error": {"message": "the request violates the content policy", "type": "invalid_request_error"}})),
            chat::done(),
        ]),
        &["content policy"],
    )
    .await;
}

#[tokio::test]
async fn chat_mid_stream_overloaded_error_is_retried() {
    API.assert_broken_stream_is_retried(MockResponse::sse([
        chat::text("partial"),
        chat::error("upstream overloaded"),
        chat::done(),
    ]))
    .await;
}

#[tokio::test]
async fn chat_json_instead_of_an_event_stream_is_an_error() {
    let server = MockServer::start();
    server.enqueue(MockResponse::json(
        200,
        &json!({"error": {"message": "streaming is not supported"}}),
    ));
    let error = API.failure(&server, "hi").await;
    assert!(
        matches!(&error, ProviderError::Stream { message, .. }
            if message.contains("instead of a stream") && message.contains("streaming is not supported")
                && message.contains(&server.base_url())),
        "{error}"
    );
    assert_eq!(server.request_count(), 1);
}

// ---------------------------------------------------------------------------
// Retries and HTTP errors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_500_then_200_retries_once() {
    API.assert_retried_once(MockResponse::error(500, "boom"), "boom")
        .await;
}

#[tokio::test]
async fn chat_429_retry_after_is_honoured() {
    API.assert_retry_after_is_honoured(MockResponse::error(429, "slow down"))
        .await;
}

#[tokio::test]
async fn chat_retry_after_is_capped_at_max_delay() {
    let server = MockServer::start();
    server.enqueue(MockResponse::error(503, "busy").header("retry-after", "3600"));
    server.enqueue(chat::text_response("ok"));
    let events = API.answer(&server, "hi").await;
    assert_eq!(retries(&events), vec![(1, Duration::from_millis(5))]);
}

#[tokio::test]
async fn chat_retries_exhausted_reports_attempts_and_last_error() {
    let server = MockServer::start();
    for n in 1..=3 {
        server.enqueue(MockResponse::error(502, &format!("bad gateway {n}")));
    }
    let input = user("hi");
    let (events, error) = collect(&API.provider_for(&server), &API.request(&input)).await;
    assert_eq!(
        retries(&events),
        vec![(1, Duration::from_millis(1)), (2, Duration::from_millis(2))]
    );
    match error {
        Some(ProviderError::RetriesExhausted { attempts, last, .. }) => {
            assert_eq!(attempts, 3);
            assert!(last.contains("bad gateway 3"), "{last}");
        }
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn chat_401_is_an_auth_error_naming_the_env_var_without_retry() {
    API.assert_401_names_the_key_variable(
        MockResponse::error(401, &format!("Incorrect API key provided: {KEY}.")),
        "Incorrect API key",
    )
    .await;
}

#[tokio::test]
async fn chat_403_is_an_auth_error() {
    let server = MockServer::start();
    server.enqueue(MockResponse::error(403, "forbidden model"));
    let error = API.failure(&server, "hi").await;
    assert!(
        matches!(error, ProviderError::Auth { status: 403, .. }),
        "{error}"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn chat_400_and_404_are_not_retried() {
    for status in [400, 404] {
        let message = "model `nope` does not exist";
        API.assert_status_is_not_retried(status, MockResponse::error(status, message), message)
            .await;
    }
}

#[tokio::test]
async fn chat_404_names_the_url_and_the_setting() {
    API.assert_404_names_the_url_and_the_setting(
        MockResponse::error(404, "Invalid URL (POST /v1/chat/completion)"),
        "/chat/completions",
    )
    .await;
}

#[tokio::test]
async fn chat_overflows_of_openai_and_compatible_servers_are_context_overflows() {
    use crate::common::wire_chat;
    for (response, says) in [
        (
            wire_chat::openai_overflow(130_512, 128_000),
            "maximum context length is 128000",
        ),
        (
            wire_chat::vllm_overflow(33_000, 32_768),
            "maximum context length is 32768",
        ),
        (
            wire_chat::llama_cpp_overflow(4_390, 4_096),
            "exceeds the available context size",
        ),
        (
            MockResponse::sse([
                chat::role(),
                chat::data(&json!({"error": {
                "message": "This model's maximum context length is 4096 tokens.",
                "type": "BadRequestError", "code": 400}})),
            ]),
            "maximum context length is 4096",
        ),
    ] {
        API.assert_context_overflow(response, says).await;
    }
}

#[tokio::test]
async fn chat_connection_refused_is_retried_then_reported() {
    API.assert_unreachable_is_retried_then_reported().await;
}

// ---------------------------------------------------------------------------
// Idle timeout
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_idle_stall_is_an_idle_timeout() {
    API.assert_idle_stall_is_an_idle_timeout(MockResponse::sse([chat::text("started")]), "started")
        .await;
}

#[tokio::test]
async fn chat_stall_before_the_first_body_byte_is_retried() {
    let server = MockServer::start();
    let never = Gate::new();
    // Headers arrive, then nothing: safe to retry, no event was emitted.
    server.enqueue(MockResponse::sse(Vec::<String>::new()).wait_for(&never));
    // No status line at all.
    server.enqueue(chat::text_response("unused").pause_before_headers(Pause::Forever));
    server.enqueue(chat::text_response("third time lucky"));
    let mut info = API.info(&server);
    info.stream_idle_timeout = Duration::from_millis(200);
    let input = user("hi");
    let events = run_ok(&API.provider(info), &API.request(&input)).await;
    assert_eq!(retries(&events).len(), 2, "{events:?}");
    assert_eq!(text_of(&events), "third time lucky");
    assert!(!never.is_released());
}

#[tokio::test]
async fn chat_keep_alive_comments_keep_a_slow_stream_alive() {
    API.assert_keep_alive_keeps_a_slow_stream_alive(
        vec![chat::text("slow ")],
        chat::comment("keep-alive"),
        vec![chat::text("but alive"), chat::finish("stop"), chat::done()],
    )
    .await;
}

#[tokio::test]
async fn chat_gated_chunks_arrive_after_release() {
    let server = MockServer::start();
    let gate = Gate::new();
    server.enqueue(
        MockResponse::sse([chat::text("before ")])
            .wait_for(&gate)
            .chunks([chat::text("after"), chat::finish("stop"), chat::done()]),
    );
    let input = user("hi");
    let provider = API.provider_for(&server);
    let mut stream = provider.stream(&API.request(&input));
    let first = tokio::time::timeout(GENEROUS, stream.next()).await;
    assert!(
        matches!(&first, Ok(Some(Ok(ResponseEvent::TextDelta(t)))) if t == "before "),
        "{first:?}"
    );
    gate.release();
    let rest: Vec<_> = tokio::time::timeout(GENEROUS, stream.collect::<Vec<_>>())
        .await
        .expect("rest of the stream");
    assert!(matches!(&rest[0], Ok(ResponseEvent::TextDelta(t)) if t == "after"));
    assert!(matches!(
        rest.last(),
        Some(Ok(ResponseEvent::Completed { .. }))
    ));
}

// ---------------------------------------------------------------------------
// Request shape
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_request_body_headers_and_query() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("ok"));
    let mut info = API.info(&server);
    info.http_headers
        .insert("X-Title".into(), "cogni tests".into());
    info.query_params
        .insert("api-version".into(), "2024-10-21".into());
    let input = vec![
        HistoryItem::text(Role::User, "list files"),
        HistoryItem::text(Role::Assistant, "Sure."),
        HistoryItem::tool_call(function_call("call_1", "list_dir", "{\"path\":\".\"}")),
        HistoryItem::tool_call(function_call("call_2", "read_file", "{\"path\":\"a\"}")),
        HistoryItem::tool_output(ToolOutput {
            call_id: "call_1".into(),
            content: "a\nb".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
        HistoryItem::tool_output(ToolOutput {
            call_id: "call_2".into(),
            content: "denied".into(),
            is_error: true,
            command: None,
            images: Vec::new(),
        }),
    ];
    let tools = [ToolSpec {
        name: "list_dir".into(),
        description: "List a directory".into(),
        format: ToolFormat::Function {
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        },
        read_only: true,
    }];
    let mut req = API.request(&input);
    req.tools = &tools;
    req.max_tokens = Some(256);
    req.temperature = Some(0.25);
    run_ok(&API.provider(info), &req).await;

    let sent = server.last_request().expect("a request");
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path_only(), "/v1/chat/completions");
    assert_eq!(sent.query_param("api-version"), Some("2024-10-21"));
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.header("x-title"), Some("cogni tests"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(
        sent.body_json(),
        &json!({
            "model": "mock-model",
            "messages": [
                {"role": "system", "content": "You are a test."},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "Sure.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\":\".\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a\nb"},
                {"role": "tool", "tool_call_id": "call_2", "content": "denied"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "list_dir",
                "description": "List a directory",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            }}],
            "parallel_tool_calls": true,
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.25,
            "max_tokens": 256,
        })
    );
    server.assert_invariants();
}

#[tokio::test]
async fn chat_no_auth_header_without_a_key() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("ok"));
    let mut info = API.info(&server);
    info.api_key = None;
    let input = user("hi");
    run_ok(&API.provider(info), &API.request(&input)).await;
    assert_eq!(
        server
            .last_request()
            .expect("request")
            .header("authorization"),
        None
    );
}

#[tokio::test]
async fn the_mock_rejects_what_chat_completions_rejects() {
    let call = |id: &str| HistoryItem::tool_call(function_call(id, "shell", "{}"));
    let output = |id: &str| {
        HistoryItem::tool_output(ToolOutput {
            call_id: id.into(),
            content: "ok".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        })
    };
    let server = MockServer::start();
    let provider = API.provider_for(&server);
    let fails = |input: Vec<HistoryItem>, says: &'static str| {
        let provider = &provider;
        async move {
            let error = run_err(provider, &API.request(&input)).await;
            assert!(
                matches!(&error, ProviderError::Http { status: 400, message, .. } if message.starts_with(says)),
                "{says}: {error}"
            );
        }
    };
    fails(
        vec![user("go").remove(0), output("call_1")],
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    )
    .await;
    fails(
        vec![user("go").remove(0), call("call_1"), user("next").remove(0)],
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
    )
    .await;
    // o-series and GPT-5 take max_completion_tokens only.
    let input = user("hi");
    let mut req = API.request(&input);
    req.model = "o3";
    req.max_tokens = Some(100);
    let error = run_err(&provider, &req).await;
    assert!(
        error.to_string().contains("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."),
        "{error}"
    );
    req.temperature = Some(2.5);
    req.model = "gpt-4.1";
    let error = run_err(&provider, &req).await;
    assert!(
        error
            .to_string()
            .contains("Invalid 'temperature': decimal above maximum value."),
        "{error}"
    );
    assert_eq!(server.request_count(), 4);
}

#[tokio::test]
async fn mock_records_tool_pairing_violations() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("ok"));
    let input = vec![
        HistoryItem::text(Role::User, "go"),
        HistoryItem::tool_call(function_call("call_1", "shell", "{}")),
        HistoryItem::tool_call(function_call("call_2", "shell", "{}")),
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
    let error = run_err(&API.provider_for(&server), &API.request(&input)).await;
    assert!(
        matches!(&error, ProviderError::Http { status: 400, message, .. }
            if message == "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of previous message."),
        "{error}"
    );
    let violations = server.violations();
    assert_eq!(violations.len(), 3, "{violations:?}");
    assert!(violations[0].contains("`call_2`") && violations[0].contains("no tool message"));
    assert!(violations[1].contains("`call_9`"));
    assert!(violations[2].contains("rejected"));
    let caught =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.assert_invariants()));
    assert!(caught.is_err(), "assert_invariants fails on violations");
}

// ---------------------------------------------------------------------------
// Recorded wire streams
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_fixture_streams_decode_to_expected_events() {
    API.assert_fixtures_decode_to_expected_events(
        "sse",
        "txt",
        5,
        MockResponse::sse,
        &Style {
            // Chat Completions reports no reasoning.
            reasoning: None,
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

// ---------------------------------------------------------------------------
// Auth variants
// ---------------------------------------------------------------------------

#[tokio::test]
async fn auth_command_token_is_sent_and_cached() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("a"));
    server.enqueue(chat::text_response("b"));
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("runs");
    let mut info = API.info(&server);
    info.api_key = None;
    info.auth_command = Some(vec![
        "sh".into(),
        "-c".into(),
        format!("echo run >> {}; echo ' tok-123 '", count.display()),
    ]);
    let provider = API.provider(info);
    let input = user("hi");
    run_ok(&provider, &API.request(&input)).await;
    run_ok(&provider, &API.request(&input)).await;
    for r in server.requests() {
        assert_eq!(r.header("authorization"), Some("Bearer tok-123"));
    }
    let runs = std::fs::read_to_string(&count).unwrap();
    assert_eq!(runs.lines().count(), 1, "the token is cached");
}

/// A provider whose auth_command prints `tok-1`, `tok-2`, ... (one more
/// each run), counting its runs in a file under `dir`.
fn counting_token_command(server: &MockServer, dir: &std::path::Path) -> ProviderInfo {
    let count = dir.join("runs");
    let mut info = API.info(server);
    info.api_key = None;
    info.auth_command = Some(vec![
        "sh".into(),
        "-c".into(),
        format!(
            "n=$(cat {0} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {0}; echo tok-$n",
            count.display()
        ),
    ]);
    info
}

#[tokio::test]
async fn a_401_refreshes_the_auth_command_token_once() {
    let server = MockServer::start();
    server.enqueue(MockResponse::error(401, "token expired"));
    server.enqueue(chat::text_response("fresh"));
    server.enqueue(chat::text_response("still fresh"));
    let dir = tempfile::tempdir().unwrap();
    let provider = API.provider(counting_token_command(&server, dir.path()));
    let input = user("hi");
    let events = run_ok(&provider, &API.request(&input)).await;
    assert_eq!(text_of(&events), "fresh");
    assert!(retries(&events).is_empty(), "{events:?}");
    run_ok(&provider, &API.request(&input)).await;
    let tokens: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect();
    assert_eq!(tokens, ["Bearer tok-1", "Bearer tok-2", "Bearer tok-2"]);
    server.assert_invariants();
}

#[tokio::test]
async fn a_second_401_after_the_refresh_is_an_auth_error() {
    let server = MockServer::start();
    server.enqueue(MockResponse::error(401, "token expired"));
    server.enqueue(MockResponse::error(401, "still not allowed"));
    let dir = tempfile::tempdir().unwrap();
    let provider = API.provider(counting_token_command(&server, dir.path()));
    let input = user("hi");
    let error = run_err(&provider, &API.request(&input)).await;
    assert!(
        matches!(&error, ProviderError::Auth { status: 401, message, .. } if message.contains("still not allowed")),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("auth_command `sh -c"), "{text}");
    assert!(!text.contains("no API key was sent"), "{text}");
    assert_eq!(server.request_count(), 2, "one refresh, then fail");
    let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap();
    assert_eq!(runs.trim(), "2");
}

#[tokio::test]
async fn failing_auth_command_is_a_clear_error() {
    let server = MockServer::start();
    let mut info = API.info(&server);
    info.auth_command = Some(vec!["sh".into(), "-c".into(), "exit 3".into()]);
    let input = user("hi");
    let error = run_err(&API.provider(info), &API.request(&input)).await;
    assert!(error.to_string().contains("auth_command"), "{error}");
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn nothing_an_auth_command_starts_outlives_it() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("a"));
    let marker = format!("{}.2718", 5000 + std::process::id() % 1000);
    let mut info = API.info(&server);
    info.auth_command = Some(vec![
        "sh".into(),
        "-c".into(),
        format!("setsid sleep {marker} > /dev/null 2>&1 & echo tok-1"),
    ]);
    let input = user("hi");
    run_ok(&API.provider(info), &API.request(&input)).await;
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer tok-1")
    );
    assert!(
        crate::common::pids_running(&format!("sleep\u{0}{marker}")).is_empty(),
        "the auth_command's background process outlived it"
    );
}

#[tokio::test]
async fn key_header_replaces_the_bearer_header() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("a"));
    let mut info = API.info(&server);
    info.key_header = Some("api-key".into());
    let input = user("hi");
    run_ok(&API.provider(info), &API.request(&input)).await;
    let r = server.last_request().unwrap();
    assert_eq!(r.header("api-key"), Some(KEY));
    assert_eq!(r.header("authorization"), None);
}

// ---------------------------------------------------------------------------
// Size caps
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_runaway_stream_is_stopped_with_a_clear_error() {
    let server = MockServer::start();
    // About 20 MB of text deltas, over the 16 MiB cap.
    let piece = chat::text(&"x".repeat(64 * 1024));
    let mut chunks: Vec<String> = (0..320).map(|_| piece.clone()).collect();
    chunks.push(chat::finish("stop"));
    chunks.push(chat::done());
    server.enqueue(MockResponse::sse(chunks));
    let input = user("hi");
    let (events, error) = collect(&API.provider_for(&server), &API.request(&input)).await;
    let error = error.expect("an error");
    assert!(error.to_string().contains("exceeded 16 MiB"), "{error}");
    assert!(text_of(&events).len() < 17 * 1024 * 1024);
    assert_eq!(server.request_count(), 1, "not retried");
}

#[tokio::test]
async fn huge_tool_arguments_are_stopped_too() {
    let server = MockServer::start();
    let mut chunks = vec![chat::tool_call_start(0, "call_1", "write_file")];
    let piece = chat::tool_call_args(0, &"y".repeat(64 * 1024));
    chunks.extend((0..300).map(|_| piece.clone()));
    chunks.push(chat::finish("tool_calls"));
    chunks.push(chat::done());
    server.enqueue(MockResponse::sse(chunks));
    let input = user("hi");
    let (events, error) = collect(&API.provider_for(&server), &API.request(&input)).await;
    assert!(error
        .expect("an error")
        .to_string()
        .contains("exceeded 16 MiB"));
    assert!(!events
        .iter()
        .any(|e| matches!(e, ResponseEvent::ToolCall(_))));
}

#[tokio::test]
async fn rate_limits_that_never_clear_end_as_rate_limited() {
    let server = MockServer::start();
    for _ in 0..3 {
        server.enqueue(MockResponse::error(429, "slow down").header("retry-after", "0"));
    }
    let error = API.failure(&server, "hi").await;
    assert!(
        matches!(error, ProviderError::RetriesExhausted { attempts: 3, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("rate limited"), "{error}");
}

#[tokio::test]
async fn an_exhausted_quota_is_not_retried() {
    let server = MockServer::start();
    server.enqueue(MockResponse::json(
        429,
        &json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}),
    ));
    let error = API.failure(&server, "hi").await;
    assert!(error.to_string().contains("quota is used up"), "{error}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn chat_an_oversized_answer_is_stopped() {
    API.assert_oversized_answer_is_stopped().await;
}

#[tokio::test]
async fn chat_an_oversized_tool_call_is_stopped() {
    API.assert_oversized_tool_call_is_stopped(|args| {
        chat::tool_calls_response(&[("call_1", "write_file", args)])
    })
    .await;
}

// ---------------------------------------------------------------------------
// Context window from an OpenAI-compatible /models list
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_window_of_an_unknown_model_comes_from_models_once() {
    let server = MockServer::start();
    let model = API.request(&user("hi")).model.to_string();
    server.enqueue(MockResponse::json(
        200,
        &json!({"object": "list", "data": [
            {"id": "other", "object": "model", "max_model_len": 4096},
            {"id": model, "object": "model", "owned_by": "vllm", "max_model_len": 16384},
        ]}),
    ));
    server.enqueue(chat::text_response("first"));
    server.enqueue(chat::text_response("second"));
    let provider = API.provider_for(&server);
    let input = user("hi");
    let mut req = API.request(&input);
    req.context_window_is_default = true;

    let events = run_ok(&provider, &req).await;
    assert_eq!(
        events[0],
        ResponseEvent::ModelInfo {
            context_window: 16_384
        }
    );
    assert_eq!(text_of(&events), "first");
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(requests[1].path, "/v1/chat/completions");

    // Asked once per model.
    let events = run_ok(&provider, &req).await;
    assert_eq!(text_of(&events), "second");
    assert_eq!(server.request_count(), 3);
    server.assert_invariants();
}

#[tokio::test]
async fn chat_models_list_without_the_window_or_failing_keeps_the_default() {
    let server = MockServer::start();
    server.enqueue(MockResponse::json(
        404,
        &json!({"error": {"message": "not found"}}),
    ));
    server.enqueue(chat::text_response("ok"));
    let provider = API.provider_for(&server);
    let input = user("hi");
    let mut req = API.request(&input);
    req.context_window_is_default = true;
    let events = run_ok(&provider, &req).await;
    assert!(
        !events.iter().any(|e| matches!(
            e,
            ResponseEvent::ModelInfo { .. } | ResponseEvent::Retrying { .. }
        )),
        "{events:?}"
    );
    assert_eq!(text_of(&events), "ok");
    assert_eq!(server.request_count(), 2, "the list is not retried");
}
