//! The Ollama native provider against the loopback mock serving NDJSON:
//! streaming, tool calls, usage, retries, errors with their hints, the
//! context window from `/api/show`, model listing, and captured streams
//! from `tests/fixtures/ollama/`.

use crate::common::mock::{MockResponse, MockServer};
use crate::common::provider_harness::{
    closed_port, completed, function_call, retries, run_ok, started, text_of, user, Api, Style,
    GENEROUS,
};
use crate::common::wire_ollama as ollama;
use cogni::protocol::{HistoryItem, Reasoning, Role, StopReason, ToolCall, ToolOutput, Usage};
use cogni::provider::ollama::{list_models, Ollama};
use cogni::provider::{ProviderError, ProviderInfo, ResponseEvent, WireApi};
use serde_json::json;
use std::time::Duration;

const MODEL: &str = "qwen2.5-coder:7b";

const API: Api<Ollama> = Api {
    id: "ollama",
    wire: WireApi::Ollama,
    key: None,
    model: MODEL,
    context_window: 32_768,
    at_root: true,
    make: Ollama::with_jitter,
    text_response: ollama::text_response,
};

// ---------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------

#[tokio::test]
async fn ollama_streams_text_deltas() {
    let server = API
        .assert_streams_text_deltas(
            ollama::ndjson([
                ollama::text("Hel"),
                ollama::text("lo, "),
                ollama::text("wörld"),
                ollama::done("stop", 12, 3),
            ]),
            Some(Usage {
                input_tokens: 12,
                output_tokens: 3,
                ..Usage::default()
            }),
        )
        .await;
    let sent = server.last_request().expect("a request");
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/api/chat");
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("accept"), Some("application/x-ndjson"));
    assert_eq!(sent.header("authorization"), None, "no key, no auth");
    assert_eq!(
        sent.body_json(),
        &json!({
            "model": MODEL,
            "messages": [
                {"role": "system", "content": "You are a test."},
                {"role": "user", "content": "hi"},
            ],
            "stream": true,
            "truncate": false,
            "options": {"num_ctx": 32768},
            "keep_alive": "10m",
        })
    );
}

#[tokio::test]
async fn ollama_two_tool_calls_and_tool_history() {
    let server = MockServer::start();
    server.enqueue(ollama::tool_calls_response(&[
        ("read_file", json!({"path": "src/main.rs"})),
        ("shell", json!({"command": ["cargo", "test"]})),
    ]));
    let input = vec![
        HistoryItem::text(Role::User, "look around"),
        HistoryItem::text(Role::Assistant, "Listing first."),
        HistoryItem::tool_call(function_call("call_1", "list_dir", "{\"path\":\".\"}")),
        HistoryItem::tool_output(ToolOutput {
            call_id: "call_1".into(),
            content: "src\nCargo.toml".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        }),
    ];
    let events = run_ok(&API.provider_for(&server), &API.request(&input)).await;
    let calls: Vec<&ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2, "{events:?}");
    assert_eq!(
        (calls[0].name.as_str(), calls[0].arguments.as_str()),
        ("read_file", "{\"path\":\"src/main.rs\"}")
    );
    assert_eq!(
        (calls[1].name.as_str(), calls[1].arguments.as_str()),
        ("shell", "{\"command\":[\"cargo\",\"test\"]}")
    );
    assert_ne!(calls[0].id, calls[1].id, "made-up ids differ");
    assert_eq!(events[0], started(&calls[0].id, "read_file"));
    assert_eq!(completed(&events).1, StopReason::ToolCalls);
    assert_eq!(
        server.last_request().expect("request").body_json()["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "look around"},
            {"role": "assistant", "content": "Listing first.", "tool_calls": [
                {"function": {"name": "list_dir", "arguments": {"path": "."}}},
            ]},
            {"role": "tool", "content": "src\nCargo.toml", "tool_name": "list_dir"},
        ])
    );
    server.assert_invariants();
}

#[tokio::test]
async fn ollama_usage_and_thinking_from_the_stream() {
    let server = MockServer::start();
    server.enqueue(ollama::ndjson([
        ollama::thinking("Short "),
        ollama::thinking("plan."),
        ollama::text("Answer."),
        ollama::done("length", 1200, 34),
    ]));
    let events = API.answer(&server, "hi").await;
    assert_eq!(
        events[0],
        ResponseEvent::Reasoning(Reasoning {
            id: None,
            text: "Short plan.".into(),
            encrypted: None,
            source: "ollama".into(),
        })
    );
    assert_eq!(
        completed(&events),
        (
            Some(Usage {
                input_tokens: 1200,
                output_tokens: 34,
                ..Usage::default()
            }),
            StopReason::Length,
            None
        )
    );
}

// ---------------------------------------------------------------------------
// Broken streams and in-stream errors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn ollama_missing_done_is_retried_then_an_error() {
    API.assert_missing_terminal_exhausts_retries(
        || ollama::ndjson([ollama::text("partial")]),
        "\"done\": true",
    )
    .await;
}

#[tokio::test]
async fn ollama_stream_without_done_is_retried() {
    API.assert_broken_stream_is_retried(ollama::ndjson([ollama::text("partial")]))
        .await;
}

#[tokio::test]
async fn ollama_connection_reset_after_text_is_retried() {
    API.assert_broken_stream_is_retried(ollama::ndjson([ollama::text("partial")]).close_early())
        .await;
}

#[tokio::test]
async fn ollama_busy_error_line_is_retried() {
    API.assert_broken_stream_is_retried(ollama::ndjson([
        ollama::text("partial"),
        ollama::error("server busy, please try again.  maximum pending requests exceeded"),
    ]))
    .await;
}

#[tokio::test]
async fn ollama_error_line_is_a_fatal_error() {
    API.assert_stream_error(
        ollama::ndjson([
            ollama::text("so far"),
            ollama::error(
                "model requires more system memory (12.0 GiB) than is available (8.0 GiB)",
            ),
        ]),
        &["more system memory"],
    )
    .await;
}

#[tokio::test]
async fn ollama_malformed_line_is_a_stream_error() {
    API.assert_stream_error(
        ollama::ndjson([
            ollama::text("ok"),
            "{\"message\":{\"content\":\"x\"}\n".to_string(),
            ollama::done("stop", 1, 1),
        ]),
        &["malformed line", "{\"message\""],
    )
    .await;
}

#[tokio::test]
async fn ollama_idle_stall_is_an_idle_timeout() {
    API.assert_idle_stall_is_an_idle_timeout(ollama::ndjson([ollama::text("started")]), "started")
        .await;
}

#[tokio::test]
async fn ollama_html_instead_of_a_stream_names_the_url() {
    API.assert_html_page_names_the_url("/api/chat").await;
}

// ---------------------------------------------------------------------------
// HTTP errors, retries and hints
// ---------------------------------------------------------------------------

#[tokio::test]
async fn ollama_500_then_200_retries_once() {
    API.assert_retried_once(
        MockResponse::json(500, &json!({"error": "llama runner crashed"})),
        "llama runner crashed",
    )
    .await;
}

#[tokio::test]
async fn ollama_503_busy_is_retried() {
    let events = API
        .assert_retried_once(
            MockResponse::json(
                503,
                &json!({"error": "server busy, please try again.  maximum pending requests exceeded"}),
            ),
            "server busy",
        )
        .await;
    assert_eq!(retries(&events), vec![(1, Duration::from_millis(1))]);
}

#[tokio::test]
async fn ollama_429_retry_after_is_honoured() {
    API.assert_retry_after_is_honoured(MockResponse::json(
        429,
        &json!({"error": "too many requests"}),
    ))
    .await;
}

#[tokio::test]
async fn ollama_model_not_found_names_ollama_pull() {
    let server = MockServer::start();
    server.enqueue(ollama::model_not_found(MODEL));
    let error = API.failure(&server, "hi").await;
    assert!(
        matches!(&error, ProviderError::Http { status: 404, .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("not found, try pulling it first"), "{text}");
    assert!(text.contains(&format!("`ollama pull {MODEL}`")), "{text}");
    assert_eq!(server.request_count(), 1, "not retried");
}

#[tokio::test]
async fn ollama_404_names_the_url_and_the_setting() {
    let text = API
        .assert_404_names_the_url_and_the_setting(
            MockResponse::new(404).chunk("404 page not found"),
            "/api/chat",
        )
        .await;
    assert!(text.contains("without /v1"), "{text}");
    assert!(!text.contains("ollama pull"), "not a missing model: {text}");
}

#[tokio::test]
async fn ollama_connection_refused_says_to_start_ollama_serve() {
    let (events, last) = API.assert_unreachable_is_retried_then_reported().await;
    assert!(
        matches!(&events[..], [ResponseEvent::Retrying { reason, .. }] if reason.contains("ollama serve")),
        "{events:?}"
    );
    assert!(
        last.contains("`ollama serve`") && last.contains("OLLAMA_HOST"),
        "{last}"
    );
}

#[tokio::test]
async fn ollama_context_overflow_is_reported_as_such() {
    API.assert_context_overflow(
        MockResponse::json(
            400,
            &json!({"error": "the input length exceeds the context length"}),
        ),
        "exceeds the context length",
    )
    .await;
}

#[tokio::test]
async fn ollama_runner_overflow_is_a_context_overflow() {
    API.assert_context_overflow(
        ollama::exceeds_context(8_889, 4_096),
        "exceeds the available context size (4096 tokens)",
    )
    .await;
    API.assert_context_overflow(
        ollama::ndjson([ollama::error(
            "the prompt is longer than the context length currently available to the model",
        )]),
        "longer than the context length",
    )
    .await;
}

#[tokio::test]
async fn the_mock_rejects_what_ollama_rejects() {
    for (body, says) in [
        (json!({"model": "", "messages": []}), "model is required"),
        (
            json!({"model": "m", "think": "minimal", "messages": []}),
            "invalid think value: \"minimal\" (must be \"high\", \"medium\", \"low\", \"max\", true, or false)",
        ),
        (
            json!({"model": "m", "messages": [{"role": "assistant", "content": "",
                "tool_calls": [{"function": {"name": "x", "arguments": "{}"}}]}]}),
            "json: cannot unmarshal string",
        ),
    ] {
        let broken = ollama::rule_broken(&body);
        assert!(
            broken.as_deref().is_some_and(|m| m.starts_with(says)),
            "{says}: {broken:?}"
        );
    }
    // Ollama checks no tool pairing: it renders what it gets.
    let orphan = json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]});
    assert_eq!(ollama::rule_broken(&orphan), None);
}

#[tokio::test]
async fn ollama_sends_a_configured_key_as_bearer() {
    let server = MockServer::start();
    server.enqueue(ollama::text_response("ok"));
    let mut info = API.info(&server);
    info.api_key = Some("proxy-secret-0123".into());
    let input = user("hi");
    run_ok(&API.provider(info), &API.request(&input)).await;
    assert_eq!(
        server
            .last_request()
            .expect("request")
            .header("authorization"),
        Some("Bearer proxy-secret-0123")
    );
}

// ---------------------------------------------------------------------------
// Context window from /api/show
// ---------------------------------------------------------------------------

fn show_response(parameters: &str) -> MockResponse {
    MockResponse::json(
        200,
        &json!({
            "license": "Apache License 2.0",
            "modelfile": "FROM /models/blobs/sha256-60e0\n",
            "parameters": parameters,
            "template": "{{ .System }}",
            "details": {"family": "llama", "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
            "model_info": {
                "general.architecture": "llama",
                "general.parameter_count": 8030261248u64,
                "llama.context_length": 131072,
                "llama.embedding_length": 4096,
            },
            "capabilities": ["completion", "tools"],
        }),
    )
}

#[tokio::test]
async fn ollama_window_from_api_show_sets_num_ctx_and_model_info() {
    let server = MockServer::start();
    server.enqueue(show_response("stop \"<|eot_id|>\""));
    server.enqueue(ollama::text_response("first"));
    server.enqueue(ollama::text_response("second"));
    let provider = API.provider_for(&server);
    let input = user("hi");
    let mut req = API.request(&input);
    req.context_window_is_default = true;

    let events = run_ok(&provider, &req).await;
    assert_eq!(
        events[0],
        ResponseEvent::ModelInfo {
            context_window: 131_072
        }
    );
    assert_eq!(text_of(&events), "first");
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("POST", "/api/show")
    );
    assert_eq!(requests[0].body_json(), &json!({"model": MODEL}));
    assert_eq!(requests[0].header("accept"), Some("application/json"));
    assert_eq!(requests[1].path, "/api/chat");
    assert_eq!(requests[1].body_json()["options"]["num_ctx"], json!(131072));

    // Asked once per model: the second request goes straight to the chat.
    let events = run_ok(&provider, &req).await;
    assert_eq!(
        events[0],
        ResponseEvent::ModelInfo {
            context_window: 131_072
        }
    );
    assert_eq!(server.request_count(), 3);
    let last = server.last_request().expect("request");
    assert_eq!(last.path, "/api/chat");
    assert_eq!(last.body_json()["options"]["num_ctx"], json!(131072));
    server.assert_invariants();
}

#[tokio::test]
async fn ollama_modelfile_num_ctx_wins_over_the_trained_length() {
    let server = MockServer::start();
    server.enqueue(show_response(
        "num_ctx                        16384\ntemperature 0.6",
    ));
    server.enqueue(ollama::text_response("ok"));
    let input = user("hi");
    let mut req = API.request(&input);
    req.context_window_is_default = true;
    let events = run_ok(&API.provider_for(&server), &req).await;
    assert_eq!(
        events[0],
        ResponseEvent::ModelInfo {
            context_window: 16_384
        }
    );
    assert_eq!(
        server.last_request().expect("request").body_json()["options"]["num_ctx"],
        json!(16384)
    );
}

#[tokio::test]
async fn ollama_failed_show_is_ignored_and_asked_again() {
    let server = MockServer::start();
    server.enqueue(MockResponse::json(500, &json!({"error": "boom"})));
    server.enqueue(ollama::text_response("ok"));
    server.enqueue(show_response(""));
    server.enqueue(ollama::text_response("ok"));
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
    assert_eq!(server.request_count(), 2, "the show request is not retried");
    assert_eq!(
        server.requests()[1].body_json()["options"]["num_ctx"],
        json!(32768),
        "the default window is sent"
    );

    let events = run_ok(&provider, &req).await;
    assert_eq!(
        events[0],
        ResponseEvent::ModelInfo {
            context_window: 131_072
        }
    );
    assert_eq!(server.requests()[2].path, "/api/show");
}

#[tokio::test]
async fn ollama_configured_window_is_not_looked_up() {
    let server = MockServer::start();
    server.enqueue(ollama::text_response("ok"));
    let events = API.answer(&server, "hi").await;
    assert!(!events
        .iter()
        .any(|e| matches!(e, ResponseEvent::ModelInfo { .. })));
    assert_eq!(server.request_count(), 1);
    assert_eq!(server.requests()[0].path, "/api/chat");
}

// ---------------------------------------------------------------------------
// Listing models
// ---------------------------------------------------------------------------

#[tokio::test]
async fn ollama_lists_models_via_api_tags() {
    let server = MockServer::start();
    server.enqueue(MockResponse::json(
        200,
        &json!({"models": [
            {
                "name": "qwen2.5-coder:7b",
                "model": "qwen2.5-coder:7b",
                "modified_at": "2025-03-10T12:00:00.0Z",
                "size": 4683087332u64,
                "digest": "2b0496514337",
                "details": {"family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"},
            },
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189u64},
        ]}),
    ));
    let names = tokio::time::timeout(GENEROUS, list_models(&API.info(&server)))
        .await
        .expect("in time")
        .expect("models");
    assert_eq!(names, vec!["qwen2.5-coder:7b", "llama3.2:latest"]);
    let sent = server.last_request().expect("request");
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("GET", "/api/tags")
    );
    server.assert_invariants();
}

#[tokio::test]
async fn ollama_listing_errors_are_clear() {
    let server = MockServer::start();
    server.enqueue(MockResponse::json(500, &json!({"error": "disk on fire"})));
    server.enqueue(MockResponse::new(404).chunk("404 page not found"));
    server.enqueue(MockResponse::json(200, &json!({"status": "ok"})));
    let info = API.info(&server);
    let error = list_models(&info).await.expect_err("500");
    let text = error.to_string();
    assert!(
        text.contains("listing models failed with HTTP 500: disk on fire"),
        "{text}"
    );
    let error = list_models(&info).await.expect_err("404");
    assert!(error.to_string().contains("without /v1"), "{error}");
    let error = list_models(&info).await.expect_err("no list");
    assert!(
        error.to_string().contains("without a `models` list"),
        "{error}"
    );

    let refused = ProviderInfo::new(
        "ollama",
        &format!("http://127.0.0.1:{}", closed_port()),
        WireApi::Ollama,
    );
    let error = list_models(&refused).await.expect_err("refused");
    assert!(
        matches!(&error, ProviderError::Unreachable { message, .. } if message.contains("ollama serve")),
        "{error}"
    );
}

// ---------------------------------------------------------------------------
// Pairing check and captured streams
// ---------------------------------------------------------------------------

#[tokio::test]
async fn mock_records_ollama_pairing_violations() {
    let server = MockServer::start();
    server.enqueue(ollama::text_response("ok"));
    let input = vec![
        HistoryItem::text(Role::User, "go"),
        HistoryItem::tool_call(function_call("call_1", "shell", "{}")),
        HistoryItem::text(Role::User, "never mind"),
    ];
    run_ok(&API.provider_for(&server), &API.request(&input)).await;
    let violations = server.violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].contains("`shell`") && violations[0].contains("no tool message"),
        "{violations:?}"
    );
}

#[tokio::test]
async fn ollama_fixture_streams_decode_to_expected_events() {
    API.assert_fixtures_decode_to_expected_events(
        "ollama",
        "ndjson",
        4,
        ollama::ndjson,
        &Style {
            reasoning: Some(|r| format!("reasoning {} {}", r.source, json!(r.text))),
            usage: |u| format!("{}/{}", u.input_tokens, u.output_tokens),
            made_up_ids: true,
        },
    )
    .await;
}

#[tokio::test]
async fn ollama_an_oversized_answer_is_stopped() {
    API.assert_oversized_answer_is_stopped().await;
}

#[tokio::test]
async fn ollama_an_oversized_tool_call_is_stopped() {
    API.assert_oversized_tool_call_is_stopped(|args| {
        ollama::tool_calls_response(&[("write_file", serde_json::from_str(args).unwrap())])
    })
    .await;
}
