//! Long sessions of shell calls through the whole engine against the
//! loopback mock, which validates every request by its wire API's real
//! rules (tool blocks without tools, orphaned tool results, whitespace-only
//! text, thinking before the calls of a tool loop, ...): on all four wire
//! APIs, once with automatic compaction and once through the API's own
//! context-overflow errors.

use crate::common::mock::{chat, MockResponse, MockServer, RecordedRequest, INPUT_TOKENS};
use crate::common::{wire_anthropic, wire_chat, wire_ollama, wire_responses};
use cogni::agent::compact::SUMMARY_REQUEST;
use cogni::agent::{start_session, Session, SessionConfig};
use cogni::protocol::{AgentEvent, ApprovalPolicy, ContextStrategyKind, SandboxMode, TurnOutcome};
use cogni::provider::{ProviderInfo, WireApi};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One wire API as these tests drive it.
struct Api {
    wire: WireApi,
    model: &'static str,
    /// `base_url` is the server root (Ollama), not `/v1`.
    at_root: bool,
    /// A response that calls `shell` with `command` (call id `id`), with
    /// thinking first when `thinking`, reporting [`INPUT_TOKENS`].
    shell_call: fn(id: &str, command: &str, thinking: bool) -> MockResponse,
    text: fn(&str) -> MockResponse,
    /// The API's overflow error for the `n`th overflow.
    overflow: fn(n: usize, tokens: u64, window: u64) -> MockResponse,
    /// The parts of a request that must not change within a session (the
    /// cached prefix): instructions and tools.
    prefix: fn(&Value) -> Value,
}

fn shell_args(command: &str) -> String {
    json!({ "command": command }).to_string()
}

const CHAT: Api = Api {
    wire: WireApi::Chat,
    model: "gpt-4.1",
    at_root: false,
    shell_call: |id, command, _| {
        MockResponse::sse([
            chat::role(),
            chat::tool_call(0, id, "shell", &shell_args(command)),
            chat::finish("tool_calls"),
            chat::usage(INPUT_TOKENS, 20, 0),
            chat::done(),
        ])
    },
    text: chat::text_response,
    overflow: |n, tokens, window| match n % 3 {
        0 => wire_chat::openai_overflow(tokens, window),
        1 => wire_chat::vllm_overflow(tokens, window),
        _ => wire_chat::llama_cpp_overflow(tokens, window),
    },
    prefix: |body| json!([body["messages"][0], body["tools"]]),
};

const RESPONSES: Api = Api {
    wire: WireApi::Responses,
    model: "gpt-4.1",
    at_root: false,
    shell_call: |id, command, _| {
        let mut events = vec![wire_responses::created()];
        events.extend(wire_responses::function_call(
            id,
            "shell",
            &shell_args(command),
        ));
        events.push(wire_responses::completed(INPUT_TOKENS, 20, 0));
        MockResponse::sse(events)
    },
    text: wire_responses::text_response,
    overflow: |n, _, _| {
        if n % 2 == 0 {
            wire_responses::context_length_exceeded()
        } else {
            wire_responses::context_length_exceeded_in_stream()
        }
    },
    prefix: |body| json!([body["instructions"], body["tools"]]),
};

const ANTHROPIC: Api = Api {
    wire: WireApi::Anthropic,
    model: "claude-sonnet-4-5",
    at_root: false,
    shell_call: |id, command, thinking| {
        let mut events = vec![wire_anthropic::message_start(INPUT_TOKENS, 0, 0)];
        let mut index = 0;
        if thinking {
            events.extend(wire_anthropic::thinking_block(
                0,
                "The next step is a shell command.",
                &format!("sig-{id}"),
            ));
            index = 1;
        }
        // Models often write a blank line before their calls.
        events.extend(wire_anthropic::text_block(index, "\n\n", 1));
        events.extend(wire_anthropic::tool_use_block(
            index + 1,
            id,
            "shell",
            &shell_args(command),
            2,
        ));
        events.extend([
            wire_anthropic::message_delta("tool_use", 20),
            wire_anthropic::message_stop(),
        ]);
        MockResponse::sse(events)
    },
    text: wire_anthropic::text_response,
    overflow: |n, tokens, window| {
        if n % 2 == 0 {
            wire_anthropic::prompt_too_long(tokens, window)
        } else {
            wire_anthropic::exceeds_context_limit(tokens, window)
        }
    },
    prefix: |body| json!([body["system"], body["tools"], body["thinking"]]),
};

const OLLAMA: Api = Api {
    wire: WireApi::Ollama,
    model: "qwen2.5-coder:7b",
    at_root: true,
    shell_call: |_, command, _| {
        wire_ollama::ndjson([
            wire_ollama::tool_calls(&[("shell", json!({ "command": command }))]),
            wire_ollama::done("stop", INPUT_TOKENS, 20),
        ])
    },
    text: wire_ollama::text_response,
    overflow: |_, tokens, window| wire_ollama::exceeds_context(tokens, window),
    prefix: |body| json!([body["messages"][0], body["tools"]]),
};

/// The commands of the session: long build logs (state-changing, kept cut
/// to head and tail), listings (known safe, dropped), and writes.
fn commands(steps: usize) -> Vec<String> {
    (0..steps)
        .map(|n| match n % 4 {
            0 => format!("seq -f 'step {n}: compiled module %g of the workspace' 1 120"),
            1 => "ls -la".to_string(),
            2 => format!("echo 'step {n} done' >> progress.txt && seq -f 'test %g passed' 1 100"),
            _ => format!("printf 'warning %s\\n' $(seq 1 80) && echo built {n}"),
        })
        .collect()
}

fn is_summary_request(request: &RecordedRequest) -> bool {
    // The first words of the request, as they appear in any body.
    let words = &SUMMARY_REQUEST[..60];
    request.body_text().contains(words)
}

/// How the session meets its limit.
#[derive(Clone, Copy, PartialEq)]
enum Pressure {
    /// `[compaction] token_limit` below what the session grows to.
    Limit(u64),
    /// A model whose context window (as the mock counts) is this small.
    Window(u64),
}

/// Run a session of `steps` shell calls then a final answer on `api`
/// under `pressure`; check everything the mock saw and return it.
async fn long_session(api: &Api, pressure: Pressure, thinking: bool, steps: usize) -> MockServer {
    let (server, events) = drive(api, pressure, thinking, steps, None).await;
    check_compactions(api, pressure, &server, &events);
    server
}

/// Run the session with `strategy` (`None`: the model's default) and check
/// what every strategy promises: it ends well, no request broke the API's
/// rules, every call had its output, every scripted response was used.
async fn drive(
    api: &Api,
    pressure: Pressure,
    thinking: bool,
    steps: usize,
    strategy: Option<ContextStrategyKind>,
) -> (MockServer, Vec<AgentEvent>) {
    let server = MockServer::start();
    for (n, command) in commands(steps).iter().enumerate() {
        server.enqueue((api.shell_call)(&format!("call_{n}"), command, thinking));
    }
    server.enqueue((api.text)("All steps are done."));
    let text = api.text;
    server.answer_matching(is_summary_request, move || {
        text("The user asked for a build. Steps so far compiled modules, ran tests and wrote progress.txt; continue with the next step.")
    });
    let overflow = api.overflow;
    if let Pressure::Window(window) = pressure {
        let count = Arc::new(AtomicUsize::new(0));
        server.set_context_window(window, move |tokens, window| {
            overflow(count.fetch_add(1, Ordering::Relaxed), tokens, window)
        });
    }

    let dir = tempfile::tempdir().unwrap();
    let root = server.url();
    let base = if api.at_root {
        root
    } else {
        format!("{root}/v1")
    };
    let mut info = ProviderInfo::new("mock", &base, api.wire);
    info.retry.max_retries = 0;
    info.stream_idle_timeout = Duration::from_secs(20);
    let mut config = SessionConfig::new(info, dir.path().to_path_buf());
    config.model = Some(api.model.into());
    config.sandbox_policy.mode = SandboxMode::DangerFullAccess;
    config.approval_policy = ApprovalPolicy::Never;
    config.max_iterations = 200;
    config.compaction.token_limit = Some(match pressure {
        Pressure::Limit(limit) => limit,
        // Never reached: only the model's overflow errors compact.
        Pressure::Window(_) => 1_000_000,
    });
    if thinking {
        config.sampling.reasoning_effort = Some("low");
    }
    config.context_strategy = strategy;
    let mut session: Session = start_session(config).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |e: AgentEvent| events.lock().unwrap().push(e)
    };
    let result = session
        .run_turn("Build the workspace step by step.", &sink)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "the session failed: {e}\nthe mock saw: {:#?}",
                server.violations()
            )
        });
    assert_eq!(result.outcome, TurnOutcome::Done);
    assert_eq!(result.final_text, "All steps are done.");
    assert_eq!(result.tool_calls.len(), steps);
    // No request broke the API's rules, every call had its output, and
    // every scripted response was used.
    server.assert_invariants();
    assert_eq!(server.pending_responses(), 0);
    let events = events.lock().unwrap().clone();
    (server, events)
}

/// Summaries happened where they should, kept the cached prefix, and each
/// overflow was followed by a summary.
fn check_compactions(api: &Api, pressure: Pressure, server: &MockServer, events: &[AgentEvent]) {
    let requests = server.requests();
    let summaries: Vec<usize> = (1..=requests.len())
        .filter(|n| is_summary_request(&requests[n - 1]))
        .collect();
    assert!(!summaries.is_empty(), "at least one compaction");
    let compactions = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Compacted { .. }))
        .count();
    assert_eq!(compactions, summaries.len(), "one summary request each");
    // Every summary request was answered with a summary, none overflowed,
    // and each kept the session's instructions and tools: the cached
    // prefix is reused.
    let overflowed = server.overflowed_requests();
    let first = (api.prefix)(requests[0].body_json());
    for n in &summaries {
        assert!(!overflowed.contains(n), "summary request #{n} overflowed");
        assert_eq!(
            (api.prefix)(requests[n - 1].body_json()),
            first,
            "request #{n}"
        );
    }
    let warnings: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Warning { message } if message.contains("summary") => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    match pressure {
        Pressure::Limit(_) => assert!(overflowed.is_empty(), "{overflowed:?}"),
        Pressure::Window(_) => {
            assert!(!overflowed.is_empty());
            // Each overflow was followed by a summary request, never by a
            // second overflow.
            for n in &overflowed {
                assert!(summaries.contains(&(n + 1)), "after overflow #{n}");
            }
        }
    }
}

/// The conversation a request sends (its messages or input items),
/// without Anthropic's cache breakpoints, which move to the newest message.
fn conversation(body: &Value) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut items = body
        .get("messages")
        .or_else(|| body.get("input"))
        .cloned()
        .expect("a request with messages or input");
    strip(&mut items);
    items.as_array().cloned().unwrap_or_default()
}

/// The sliding window: no summaries; the window moved; a request that
/// overflowed was retried with a smaller window that fit; and between
/// moves each request extends the one before, so the provider's prompt
/// cache keeps working.
async fn sliding_session(api: &Api, pressure: Pressure, thinking: bool) {
    let strategy = Some(ContextStrategyKind::SlidingWindow);
    let (server, events) = drive(api, pressure, thinking, STEPS, strategy).await;
    let requests = server.requests();
    assert!(!requests.iter().any(is_summary_request));
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::Compacted { .. })));
    let moves = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ContextWindow { .. }))
        .count();
    assert!(moves >= 1, "the window moved");
    let overflowed = server.overflowed_requests();
    match pressure {
        Pressure::Limit(_) => assert!(overflowed.is_empty(), "{overflowed:?}"),
        Pressure::Window(_) => {
            assert!(!overflowed.is_empty());
            for n in &overflowed {
                assert!(!overflowed.contains(&(n + 1)), "the retry after #{n} fit");
            }
        }
    }
    let first = (api.prefix)(requests[0].body_json());
    let sent: Vec<Vec<Value>> = (1..=requests.len())
        .filter(|n| !overflowed.contains(n))
        .map(|n| {
            let body = requests[n - 1].body_json();
            assert_eq!((api.prefix)(body), first, "request #{n} keeps the prefix");
            conversation(body)
        })
        .collect();
    let breaks = sent
        .windows(2)
        .filter(|pair| !pair[1].starts_with(&pair[0]))
        .count();
    assert!(
        breaks <= moves,
        "{breaks} requests did not extend the one before, {moves} moves"
    );
    let last = serde_json::to_string(sent.last().unwrap()).unwrap();
    assert!(
        last.contains("earlier items of this conversation are left out"),
        "the note"
    );
}

const STEPS: usize = 24;

#[tokio::test]
async fn chat_long_session_compacts_automatically() {
    long_session(&CHAT, Pressure::Limit(6000), false, STEPS).await;
}

#[tokio::test]
async fn chat_long_session_compacts_after_context_overflow_errors() {
    long_session(&CHAT, Pressure::Window(6000), false, STEPS).await;
}

#[tokio::test]
async fn responses_long_session_compacts_automatically() {
    long_session(&RESPONSES, Pressure::Limit(6000), false, STEPS).await;
}

#[tokio::test]
async fn responses_long_session_compacts_after_context_overflow_errors() {
    long_session(&RESPONSES, Pressure::Window(6000), false, STEPS).await;
}

#[tokio::test]
async fn anthropic_long_session_compacts_automatically() {
    long_session(&ANTHROPIC, Pressure::Limit(6000), false, STEPS).await;
}

#[tokio::test]
async fn anthropic_long_session_compacts_after_context_overflow_errors() {
    long_session(&ANTHROPIC, Pressure::Window(6000), false, STEPS).await;
}

#[tokio::test]
async fn anthropic_long_session_with_thinking_compacts_both_ways() {
    long_session(&ANTHROPIC, Pressure::Limit(6000), true, STEPS).await;
    long_session(&ANTHROPIC, Pressure::Window(6000), true, STEPS).await;
}

#[tokio::test]
async fn ollama_long_session_compacts_automatically() {
    long_session(&OLLAMA, Pressure::Limit(6000), false, STEPS).await;
}

#[tokio::test]
async fn ollama_long_session_compacts_after_context_overflow_errors() {
    long_session(&OLLAMA, Pressure::Window(6000), false, STEPS).await;
}

#[tokio::test]
async fn chat_long_session_slides_its_window() {
    sliding_session(&CHAT, Pressure::Limit(6000), false).await;
    sliding_session(&CHAT, Pressure::Window(6000), false).await;
}

#[tokio::test]
async fn responses_long_session_slides_its_window() {
    sliding_session(&RESPONSES, Pressure::Limit(6000), false).await;
    sliding_session(&RESPONSES, Pressure::Window(6000), true).await;
}

#[tokio::test]
async fn anthropic_long_session_slides_its_window() {
    sliding_session(&ANTHROPIC, Pressure::Limit(6000), true).await;
    sliding_session(&ANTHROPIC, Pressure::Window(6000), false).await;
}

#[tokio::test]
async fn ollama_long_session_slides_its_window() {
    sliding_session(&OLLAMA, Pressure::Limit(6000), false).await;
    sliding_session(&OLLAMA, Pressure::Window(6000), false).await;
}
