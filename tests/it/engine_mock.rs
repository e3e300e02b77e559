//! The whole engine and the real binary against the loopback mock serving
//! Chat Completions SSE. The mock checks on every request that each tool
//! call has exactly one output.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, MockResponse, MockServer};
use crate::common::provider_harness::closed_port;
use cogni::agent::{start_session, SessionConfig};
use cogni::protocol::{AgentEvent, TurnOutcome};
use cogni::provider::{MaxTokensParam, ProviderInfo, WireApi};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn session_config(server: &MockServer, cwd: &std::path::Path) -> SessionConfig {
    let mut info = ProviderInfo::new("mock", &server.base_url(), WireApi::Chat);
    info.default_model = Some("gpt-4.1".into());
    info.retry.base_delay = Duration::from_millis(10);
    info.retry.max_delay = Duration::from_millis(50);
    info.stream_idle_timeout = Duration::from_millis(500);
    SessionConfig::new(info, cwd.to_path_buf())
}

fn collect() -> (
    Arc<Mutex<Vec<AgentEvent>>>,
    impl Fn(AgentEvent) + Send + Sync,
) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let e = events.clone();
    (events, move |ev| e.lock().unwrap().push(ev))
}

#[tokio::test]
async fn parallel_tool_calls_run_and_every_call_gets_its_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[
        ("call_a", "read_file", r#"{"path":"a.txt"}"#),
        ("call_b", "read_file", r#"{"path":"b.txt"}"#),
    ]));
    server.enqueue(chat::text_response("both read"));
    let mut session = start_session(session_config(&server, dir.path())).unwrap();
    let (events, sink) = collect();
    let result = session.run_turn("read both files", &sink).await.unwrap();
    assert_eq!(result.outcome, TurnOutcome::Done);
    assert_eq!(result.final_text, "both read");
    assert_eq!(result.usage.input_tokens, 20, "usage from the usage chunks");
    server.assert_invariants();

    let second = &server.requests()[1];
    let messages = second.messages();
    let tool_messages: Vec<&serde_json::Value> =
        messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 2);
    assert_eq!(tool_messages[0]["tool_call_id"], "call_a");
    assert!(tool_messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("alpha"));
    assert_eq!(tool_messages[1]["tool_call_id"], "call_b");
    assert!(tool_messages[1]["content"]
        .as_str()
        .unwrap()
        .contains("beta"));
    // Parallel calls were offered, and the first request carried the tools.
    let first = server.requests()[0].body_json().clone();
    assert_eq!(first["parallel_tool_calls"], true);
    assert!(first["tools"].as_array().unwrap().len() >= 4);
    let completed = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::ItemCompleted { .. }))
        .count();
    assert!(completed >= 3, "two tool items and the message");
}

#[tokio::test]
async fn server_error_then_success_is_retried_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start();
    server.enqueue(MockResponse::error(500, "upstream hiccup"));
    server.enqueue(chat::text_response("fine"));
    let mut session = start_session(session_config(&server, dir.path())).unwrap();
    let (events, sink) = collect();
    let result = session.run_turn("hi", &sink).await.unwrap();
    assert_eq!(result.final_text, "fine");
    assert_eq!(server.request_count(), 2);
    let retries: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Retry { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 1);
    assert!(retries[0].contains("500"), "{retries:?}");
    assert_eq!(session.metrics().snapshot().session.retries, 1);
}

#[tokio::test]
async fn stream_without_done_fails_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([
        chat::role(),
        chat::text("partial"),
        chat::finish("stop"),
    ]));
    let mut config = session_config(&server, dir.path());
    config.provider.retry.max_retries = 0;
    let mut session = start_session(config).unwrap();
    let (events, sink) = collect();
    let err = session.run_turn("hi", &sink).await.unwrap_err();
    assert!(err.to_string().contains("[DONE]"), "{err}");
    assert!(matches!(
        events.lock().unwrap().last(),
        Some(AgentEvent::TurnFailed { .. })
    ));
}

/// The output limit field a declared Chat Completions provider with
/// `max_tokens_param` sends for `model`.
async fn max_tokens_field(model: &str, param: Option<MaxTokensParam>) -> &'static str {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start();
    server.enqueue(chat::text_response("ok"));
    // The override may send what OpenAI itself would refuse (for servers
    // that know only one of the two names).
    server.accept_invalid_requests();
    let mut config = session_config(&server, dir.path());
    config.provider.max_tokens_param = param;
    config.model = Some(model.into());
    config.sampling.max_tokens = Some(1000);
    let mut session = start_session(config).unwrap();
    let (_events, sink) = collect();
    session.run_turn("hi", &sink).await.unwrap();
    let body = server.requests()[0].body_json().clone();
    match (body.get("max_tokens"), body.get("max_completion_tokens")) {
        (Some(_), None) => "max_tokens",
        (None, Some(_)) => "max_completion_tokens",
        other => panic!("expected exactly one limit field, got {other:?}"),
    }
}

#[tokio::test]
async fn a_declared_provider_sends_max_completion_tokens_to_models_that_need_it() {
    // The provider is `mock`, not `openai`: the model family decides.
    for model in ["gpt-5", "o3", "o4-mini"] {
        assert_eq!(
            max_tokens_field(model, None).await,
            "max_completion_tokens",
            "{model}"
        );
    }
    assert_eq!(max_tokens_field("gpt-4.1", None).await, "max_tokens");
}

#[tokio::test]
async fn the_providers_max_tokens_param_wins_over_the_family() {
    use MaxTokensParam::{MaxCompletionTokens, MaxTokens};
    assert_eq!(
        max_tokens_field("gpt-5", Some(MaxTokens)).await,
        "max_tokens"
    );
    assert_eq!(
        max_tokens_field("gpt-4.1", Some(MaxCompletionTokens)).await,
        "max_completion_tokens"
    );
}

/// A workspace whose cogni.toml points the `mock` provider at `server`.
/// The provider goes in the user's config: a repository's own cogni.toml
/// may not point cogni at another server before it is trusted.
fn mock_env(server: &MockServer, extra: &str) -> Env {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "provider = \"mock\"\nmodel = \"gpt-4.1\"\n[model_providers.mock]\nbase_url = \"{}\"\nenv_key = \"MOCK_KEY\"\nretry_base_ms = 10\nretry_max_ms = 2000\n{extra}",
            server.base_url()
        ),
    )
    .unwrap();
    env
}

/// `cogni <args>` in `env` with `$MOCK_KEY` set to `key`, which must exit
/// with `code` (its stderr says why not): stdout and stderr.
fn cogni(env: &Env, key: &str, args: &[&str], code: i32) -> (String, String) {
    let out = env.cmd().env("MOCK_KEY", key).args(args).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    (stdout_of(&out), stderr)
}

#[test]
fn cli_full_task_against_the_mock() {
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"echo hello > out.txt"}"#,
    )]));
    server.enqueue(chat::text_response("done"));
    let env = mock_env(&server, "");
    let (out, _) = cogni(&env, "sk-mock-secret", &["run", "write hello"], 0);
    assert_eq!(out, "done\n");
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "hello\n"
    );
    let first = &server.requests()[0];
    assert_eq!(first.header("authorization"), Some("Bearer sk-mock-secret"));
    server.assert_invariants();
}

#[test]
fn cli_auth_failure_exits_3_naming_the_variable() {
    let server = MockServer::start();
    server.enqueue(MockResponse::error(401, "Incorrect API key provided"));
    let env = mock_env(&server, "");
    let (out, err) = cogni(&env, "sk-mock-secret", &["run", "x"], 3);
    assert!(err.contains("$MOCK_KEY") && err.contains("401"), "{err}");
    assert!(!err.contains("sk-mock-secret"), "{err}");
    assert!(out.is_empty());
    assert_eq!(server.request_count(), 1, "no retry on 401");
}

#[test]
fn cli_rate_limit_with_retry_after_then_success() {
    let server = MockServer::start();
    server.enqueue(MockResponse::error(429, "slow down").header("retry-after", "1"));
    server.enqueue(chat::text_response("after the wait"));
    let env = mock_env(&server, "");
    let started = std::time::Instant::now();
    let (_, err) = cogni(&env, "k", &["run", "x"], 0);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "Retry-After honoured"
    );
    assert!(err.contains("retry 1 in 1.0s"), "{err}");
}

#[test]
fn cli_retries_exhausted_exit_3() {
    let server = MockServer::start();
    for _ in 0..3 {
        server.enqueue(MockResponse::error(503, "overloaded"));
    }
    let env = mock_env(&server, "max_retries = 2\n");
    let (_, err) = cogni(&env, "k", &["run", "x"], 3);
    assert!(
        err.contains("3 attempts") && err.contains("overloaded"),
        "{err}"
    );
}

#[test]
fn cli_idle_stall_and_malformed_chunk_exit_3() {
    let server = MockServer::start();
    server.enqueue(MockResponse::sse([chat::role(), chat::text("hel")]).stall_forever());
    let env = mock_env(&server, "max_retries = 0\nstream_idle_timeout_ms = 300\n");
    let (_, err) = cogni(&env, "k", &["run", "x"], 3);
    assert!(err.contains("idle"), "{err}");

    let server = MockServer::start();
    server.enqueue(MockResponse::sse([
        chat::role(),
        "data: {not json\n\n".to_string(),
    ]));
    let env = mock_env(&server, "max_retries = 0\n");
    cogni(&env, "k", &["run", "x"], 3);
}

#[test]
fn cli_unreachable_server_exits_3() {
    let port = closed_port();
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!("provider = \"dead\"\nmodel = \"gpt-4.1\"\n[model_providers.dead]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmax_retries = 1\nretry_base_ms = 10\n"),
    )
    .unwrap();
    let out = env.cmd().args(["run", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = stderr_of(&out);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
}

#[test]
fn cli_models_lists_the_catalog_and_the_served_models() {
    let server = MockServer::start();
    server.enqueue(MockResponse::json(
        200,
        &serde_json::json!({"object": "list", "data": [{"id": "gpt-4.1"}, {"id": "gpt-4o-mini"}]}),
    ));
    let env = mock_env(
        &server,
        "[model_families.\"house-model\"]\ninherit = \"qwen\"\ncontext_window = 65536\n",
    );
    let (text, _) = cogni(&env, "k", &["models"], 0);
    assert!(
        text.contains("gpt-4.1*") && text.contains("claude-*"),
        "{text}"
    );
    assert!(
        text.contains("house-model") && text.contains("65536"),
        "{text}"
    );
    assert!(
        text.contains("models served by mock (2):\n  gpt-4.1\n  gpt-4o-mini"),
        "{text}"
    );
    let request = server.last_request().unwrap();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(request.header("authorization"), Some("Bearer k"));

    let server = MockServer::start();
    server.enqueue(MockResponse::error(401, "bad key"));
    let env = mock_env(&server, "");
    cogni(&env, "k", &["models"], 3);
    cogni(&env, "k", &["models", "--offline"], 0);
}
