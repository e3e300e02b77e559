//! Read-only calls that start while the response still streams, through
//! the real HTTP driver and the Responses wire against the loopback mock:
//! the next request's body is byte for byte what it is without early
//! start, and a stream the driver restarts in the middle runs a call it
//! had started once.

use crate::common::mock::{MockResponse, MockServer};
use crate::common::wire_responses as responses;
use cogni::agent::{start_session, Session, SessionConfig};
use cogni::protocol::{AgentEvent, Item, ToolFormat, ToolSpec, TurnOutcome};
use cogni::provider::{ProviderInfo, WireApi};
use cogni::tools::{Tool, ToolContext, ToolInput, ToolRegistry, ToolResult};
use futures::future::BoxFuture;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn config(server: &MockServer, cwd: &Path, early: bool) -> SessionConfig {
    let mut info = ProviderInfo::new("openai", &server.base_url(), WireApi::Responses);
    info.default_model = Some("gpt-4.1".into());
    info.retry.base_delay = Duration::from_millis(1);
    info.retry.max_delay = Duration::from_millis(5);
    info.stream_idle_timeout = Duration::from_secs(20);
    let mut config = SessionConfig::new(info, cwd.to_path_buf());
    config.features.early_tools = early;
    config
}

/// `calls` `(call_id, name, arguments)` streamed `gap` apart.
fn spaced_calls(calls: &[(&str, &str, &str)], gap: Duration) -> MockResponse {
    let mut response = MockResponse::sse([responses::created()]);
    for (id, name, arguments) in calls {
        response = response
            .chunks(responses::function_call(id, name, arguments))
            .delay(gap);
    }
    response.chunk(responses::completed(10, 5, 0))
}

async fn run(session: &mut Session) -> Vec<AgentEvent> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let sink = move |e: AgentEvent| seen.lock().unwrap().push(e);
    let result = session.run_turn("read the files", &sink).await.unwrap();
    assert_eq!(result.outcome, TurnOutcome::Done);
    let events = events.lock().unwrap().clone();
    events
}

/// Where in `events` a tool call's item started, and where the first
/// response ended.
fn started_and_response_end(events: &[AgentEvent], call: &str) -> (usize, usize) {
    let started = events
        .iter()
        .position(|e| {
            matches!(e, AgentEvent::ItemStarted { item: Item::ToolCall { id, .. } } if id == call)
        })
        .unwrap();
    let end = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ModelResponse { .. }))
        .unwrap();
    (started, end)
}

#[tokio::test]
async fn early_calls_over_http_leave_the_next_request_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("a.txt", "alpha\n"),
        ("b.txt", "beta\n"),
        ("c.txt", "gamma\n"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let calls = [
        ("call_a", "read_file", r#"{"path":"a.txt"}"#),
        ("call_b", "read_file", r#"{"path":"b.txt"}"#),
        ("call_c", "read_file", r#"{"path":"c.txt"}"#),
    ];
    let mut bodies = Vec::new();
    for early in [true, false] {
        let server = MockServer::start();
        server.enqueue(spaced_calls(&calls, Duration::from_millis(40)));
        server.enqueue(responses::text_response("read"));
        let mut session = start_session(config(&server, dir.path(), early)).unwrap();
        let events = run(&mut session).await;
        server.assert_invariants();
        let (started, end) = started_and_response_end(&events, "call_a");
        assert_eq!(started < end, early, "early start: {early}");
        bodies.push(server.requests()[1].body.clone());
    }
    let text = String::from_utf8_lossy(&bodies[0]);
    assert!(text.contains("alpha") && text.contains("gamma"), "{text}");
    assert!(
        bodies[0] == bodies[1],
        "the requests after the calls differ"
    );
}

/// A read-only tool that counts its runs and takes `ms` milliseconds.
struct Probe {
    runs: Arc<AtomicUsize>,
    ms: u64,
}

impl Tool for Probe {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "probe".into(),
            description: "Reads something slowly.".into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"what": {"type": "string"}},
                }),
            },
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, _: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(self.ms)).await;
            let ToolInput::Json(args) = input else {
                return ToolResult::error("expected JSON");
            };
            ToolResult::ok(format!("probed {}", args["what"].as_str().unwrap_or("")))
        })
    }
}

#[tokio::test]
async fn a_stream_the_driver_restarts_runs_a_call_it_started_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start();
    // The first attempt sends one call and breaks; the driver retries and
    // the second attempt sends it again with another, and ends.
    server.enqueue(
        MockResponse::sse([responses::created()])
            .chunks(responses::function_call(
                "call_1",
                "probe",
                r#"{"what":"x"}"#,
            ))
            .delay(Duration::from_millis(20))
            .close_early(),
    );
    server.enqueue(spaced_calls(
        &[
            ("call_1", "probe", r#"{"what":"x"}"#),
            ("call_2", "probe", r#"{"what":"y"}"#),
        ],
        Duration::from_millis(10),
    ));
    server.enqueue(responses::text_response("probed both"));
    let mut session = start_session(config(&server, dir.path(), true)).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(Probe {
        runs: runs.clone(),
        ms: 100,
    }));
    session.set_tools(tools);
    let events = run(&mut session).await;
    server.assert_invariants();
    assert_eq!(runs.load(Ordering::SeqCst), 2, "x once, y once");
    let timeline: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemStarted {
                item: Item::ToolCall { id, .. },
            } => Some(format!("started {id}")),
            AgentEvent::ItemCompleted {
                item: Item::ToolCall { id, status, .. },
            } => Some(format!("completed {id} {status:?}")),
            AgentEvent::Retry { .. } => Some("retry".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        timeline,
        [
            "started call_1",
            "completed call_1 Failed",
            "retry",
            "started call_1",
            "started call_2",
            "completed call_1 Completed",
            "completed call_2 Completed",
        ]
    );
    let body = server.requests()[2].body_text();
    assert!(
        body.contains("probed x") && body.contains("probed y"),
        "{body}"
    );
}
