//! What the wire API tests (`tests/it/*_provider.rs`) share: a provider
//! pointed at the loopback mock, a plain request, running a stream to its
//! end, reading its events, the scenarios every HTTP wire API must pass
//! (retries, error statuses, broken and stalled streams), and checking
//! recorded wire streams against their `.expected` files.
//!
//! Each test file describes its API once, as an [`Api`], and passes its
//! own wire-specific responses to the scenarios.

use super::mock::{MockResponse, MockServer};
use cogni::protocol::{HistoryItem, Reasoning, Role, StopReason, ToolCall, ToolCallKind, Usage};
use cogni::provider::retry::Jitter;
use cogni::provider::{
    MaxTokensParam, ModelRequest, Provider, ProviderError, ProviderInfo, ResponseEvent,
    RetrySettings, WireApi,
};
use futures::StreamExt;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// Far longer than any test needs; only a hang would reach it.
pub const GENEROUS: Duration = Duration::from_secs(30);

/// One wire API as its tests see it.
pub struct Api<P> {
    /// The provider id (named in errors).
    pub id: &'static str,
    pub wire: WireApi,
    /// The key's variable and the key sent; `None` sends no key.
    pub key: Option<(&'static str, &'static str)>,
    pub model: &'static str,
    pub context_window: u64,
    /// `base_url` is the server root, not `/v1` (Ollama).
    pub at_root: bool,
    /// The client's `with_jitter` constructor.
    pub make: fn(ProviderInfo, Jitter) -> Result<P, ProviderError>,
    /// A whole successful answer with this text, as the API streams it.
    pub text_response: fn(&str) -> MockResponse,
}

impl<P: Provider> Api<P> {
    /// `base_url` for a server at `root` (`http://127.0.0.1:<port>`).
    fn base_url(&self, root: String) -> String {
        if self.at_root {
            root
        } else {
            format!("{root}/v1")
        }
    }

    /// Settings for `base_url`: the key (if any), fast retries, generous
    /// timeouts.
    fn info_at(&self, base_url: &str) -> ProviderInfo {
        let mut info = ProviderInfo::new(self.id, base_url, self.wire);
        if let Some((var, key)) = self.key {
            info.env_key = Some(var.into());
            info.api_key = Some(key.into());
        }
        info.retry = RetrySettings {
            max_retries: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        };
        info.connect_timeout = Duration::from_secs(5);
        info.stream_idle_timeout = Duration::from_secs(20);
        info
    }

    /// Settings for `server`: two retries 1-5 ms apart.
    pub fn info(&self, server: &MockServer) -> ProviderInfo {
        self.info_at(&self.base_url(server.url()))
    }

    /// [`Api::info`] without retries.
    pub fn no_retries(&self, server: &MockServer) -> ProviderInfo {
        let mut info = self.info(server);
        info.retry.max_retries = 0;
        info
    }

    /// A client with fixed jitter, so retry delays are exact.
    pub fn provider(&self, info: ProviderInfo) -> P {
        (self.make)(info, Jitter::fixed(1.0)).expect("provider")
    }

    /// A client for `server` with [`Api::info`].
    pub fn provider_for(&self, server: &MockServer) -> P {
        self.provider(self.info(server))
    }

    /// A request with `input`, no tools and nothing optional.
    pub fn request<'a>(&self, input: &'a [HistoryItem]) -> ModelRequest<'a> {
        ModelRequest {
            model: self.model,
            instructions: "You are a test.",
            input,
            tools: &[],
            parallel_tool_calls: true,
            output_schema: None,
            temperature: None,
            max_tokens: None,
            reasoning_effort: None,
            context_window: self.context_window,
            context_window_is_default: false,
            web_search: false,
            max_tokens_param: MaxTokensParam::MaxTokens,
        }
    }

    /// Say "hi" through a client with `info`: the events, and the error
    /// that ended the stream.
    async fn hi(&self, info: ProviderInfo) -> (Vec<ResponseEvent>, Option<ProviderError>) {
        let input = user("hi");
        collect(&self.provider(info), &self.request(&input)).await
    }

    /// The events of saying "hi" through a client with `info`, which must
    /// succeed.
    async fn hi_ok(&self, info: ProviderInfo) -> Vec<ResponseEvent> {
        let input = user("hi");
        run_ok(&self.provider(info), &self.request(&input)).await
    }

    /// The events of sending `text` to `server` in a plain request, which
    /// must succeed.
    pub async fn answer(&self, server: &MockServer, text: &str) -> Vec<ResponseEvent> {
        let input = user(text);
        run_ok(&self.provider_for(server), &self.request(&input)).await
    }

    /// The error of sending `text` to `server` in a plain request, which
    /// must fail before anything completed.
    pub async fn failure(&self, server: &MockServer, text: &str) -> ProviderError {
        let input = user(text);
        run_err(&self.provider_for(server), &self.request(&input)).await
    }

    // --- scenarios ------------------------------------------------------

    /// `response` streams "Hel", "lo, ", "wörld" and ends with `usage`:
    /// each piece arrives as a delta of its own, then `Completed`, and the
    /// request passes the mock's checks. The server, for the API's checks
    /// of the request.
    pub async fn assert_streams_text_deltas(
        &self,
        response: MockResponse,
        usage: Option<Usage>,
    ) -> MockServer {
        let server = MockServer::start();
        server.enqueue(response);
        let events = self.answer(&server, "hi").await;
        assert_eq!(
            events,
            vec![
                ResponseEvent::TextDelta("Hel".into()),
                ResponseEvent::TextDelta("lo, ".into()),
                ResponseEvent::TextDelta("wörld".into()),
                ResponseEvent::Completed {
                    usage,
                    stop_reason: StopReason::Stop,
                    incomplete_tool_call: None,
                },
            ]
        );
        server.assert_invariants();
        server
    }

    /// A stream that breaks after the text "partial" arrived is retried
    /// once from the start with the same body; the `Retrying` event tells
    /// the consumer to drop what the failed attempt gave.
    pub async fn assert_broken_stream_is_retried(
        &self,
        broken: MockResponse,
    ) -> Vec<ResponseEvent> {
        let server = MockServer::start();
        server.enqueue(broken);
        server.enqueue((self.text_response)("complete answer"));
        let events = self.answer(&server, "hi").await;
        let retry_at = events
            .iter()
            .position(|e| matches!(e, ResponseEvent::Retrying { attempt: 1, .. }))
            .expect("a Retrying event");
        assert_eq!(text_of(&events[..retry_at]), "partial");
        assert_eq!(text_of(&events[retry_at..]), "complete answer");
        assert_eq!(retries(&events).len(), 1);
        assert_same_body_sent_twice(&server);
        server.assert_invariants();
        events
    }

    /// A stream that never sends its terminal event fails each of the
    /// three attempts; the error names `terminal`.
    pub async fn assert_missing_terminal_exhausts_retries(
        &self,
        broken: impl Fn() -> MockResponse,
        terminal: &str,
    ) {
        let server = MockServer::start();
        for _ in 0..3 {
            server.enqueue(broken());
        }
        let (events, error) = self.hi(self.info(&server)).await;
        assert_eq!(retries(&events).len(), 2, "{events:?}");
        match error {
            Some(ProviderError::RetriesExhausted { attempts, last, .. }) => {
                assert_eq!(attempts, 3);
                assert!(last.contains(terminal), "{last}");
            }
            other => panic!("expected RetriesExhausted, got {other:?}"),
        }
        assert_eq!(server.request_count(), 3);
    }

    /// `failure` ends the stream with a stream error whose message says
    /// all of `says`, and is not retried.
    pub async fn assert_stream_error(&self, failure: MockResponse, says: &[&str]) {
        let server = MockServer::start();
        server.enqueue(failure);
        let error = self.failure(&server, "hi").await;
        match &error {
            ProviderError::Stream { message, .. } => {
                for part in says {
                    assert!(message.contains(part), "{part}: {message}");
                }
            }
            other => panic!("expected a stream error, got {other}"),
        }
        assert_eq!(server.request_count(), 1, "not retried");
    }

    /// A stream that stalls after `text` is an idle timeout, not retried
    /// once it started.
    pub async fn assert_idle_stall_is_an_idle_timeout(&self, started: MockResponse, text: &str) {
        let server = MockServer::start();
        server.enqueue(started.stall_forever());
        let mut info = self.no_retries(&server);
        info.stream_idle_timeout = Duration::from_millis(200);
        let (events, error) = self.hi(info).await;
        assert_eq!(text_of(&events), text);
        assert!(
            matches!(error, Some(ProviderError::IdleTimeout { .. })),
            "{error:?}"
        );
        assert_eq!(server.request_count(), 1, "a started stream is not retried");
    }

    /// `start` ("slow "), then 600 ms without an event but `keep_alive`
    /// every 50 ms, then `end` ("but alive"): with an idle timeout of
    /// 300 ms the stream survives.
    pub async fn assert_keep_alive_keeps_a_slow_stream_alive(
        &self,
        start: Vec<String>,
        keep_alive: String,
        end: Vec<String>,
    ) {
        let server = MockServer::start();
        let mut response = MockResponse::sse(start);
        for _ in 0..12 {
            response = response
                .delay(Duration::from_millis(50))
                .chunk(keep_alive.clone());
        }
        server.enqueue(response.chunks(end));
        let mut info = self.no_retries(&server);
        info.stream_idle_timeout = Duration::from_millis(300);
        let events = self.hi_ok(info).await;
        assert_eq!(text_of(&events), "slow but alive");
    }

    /// A `200 text/html` page (a proxy's login) is an error naming the URL
    /// (`{base_url}{path}`), the content type and the page's text.
    pub async fn assert_html_page_names_the_url(&self, path: &str) {
        let server = MockServer::start();
        server.enqueue(
            MockResponse::new(200)
                .header("content-type", "text/html; charset=utf-8")
                .chunk("<html><body>Please sign in to the proxy</body></html>"),
        );
        let error = self.failure(&server, "hi").await;
        let url = format!("{}{path}", self.base_url(server.url()));
        assert!(
            matches!(&error, ProviderError::Stream { message, .. }
                if message.contains(&url)
                    && message.contains("instead of a stream")
                    && message.contains("text/html")
                    && message.contains("Please sign in")),
            "{error}"
        );
        assert_eq!(server.request_count(), 1);
    }

    /// An answer of 18 MiB (in one event: one endless line to the decoder;
    /// in a few: frames over the response cap) is stopped with an error
    /// that says so, and what reached the caller stays under the cap.
    pub async fn assert_oversized_answer_is_stopped(&self) {
        let server = MockServer::start();
        server.enqueue((self.text_response)(&"x".repeat(18 * 1024 * 1024)));
        let (events, error) = self.hi(self.no_retries(&server)).await;
        let error = error.expect("an error");
        assert!(error.to_string().contains("exceeded"), "{error}");
        assert!(text_of(&events).len() <= 16 * 1024 * 1024);
    }

    /// A call of `write_file` with 18 MiB of arguments, as `call` streams
    /// it, is stopped with an error that says so, and no tool call reaches
    /// the caller.
    pub async fn assert_oversized_tool_call_is_stopped(&self, call: impl Fn(&str) -> MockResponse) {
        let arguments = json!({ "path": "x", "content": "y".repeat(18 * 1024 * 1024) });
        let server = MockServer::start();
        server.enqueue(call(&arguments.to_string()));
        let (events, error) = self.hi(self.no_retries(&server)).await;
        let error = error.expect("an error");
        assert!(error.to_string().contains("exceeded"), "{error}");
        assert!(!events
            .iter()
            .any(|e| matches!(e, ResponseEvent::ToolCall(_))));
    }

    /// `failure`, then success: one retry whose reason says `reason`, the
    /// same body sent again, and the second answer's text.
    pub async fn assert_retried_once(
        &self,
        failure: MockResponse,
        reason: &str,
    ) -> Vec<ResponseEvent> {
        let server = MockServer::start();
        server.enqueue(failure);
        server.enqueue((self.text_response)("recovered"));
        let events = self.answer(&server, "hi").await;
        assert!(
            matches!(&events[0], ResponseEvent::Retrying { attempt: 1, reason: why, .. } if why.contains(reason)),
            "{events:?}"
        );
        assert_eq!(text_of(&events), "recovered");
        assert_same_body_sent_twice(&server);
        server.assert_invariants();
        events
    }

    /// A 429 `rate_limited` with `Retry-After: 1` is retried after one
    /// second, even though `max_delay` would allow less.
    pub async fn assert_retry_after_is_honoured(&self, rate_limited: MockResponse) {
        let server = MockServer::start();
        server.enqueue(rate_limited.header("retry-after", "1"));
        server.enqueue((self.text_response)("ok"));
        let mut info = self.info(&server);
        info.retry.max_delay = Duration::from_secs(10);
        let events = self.hi_ok(info).await;
        assert_eq!(retries(&events), vec![(1, Duration::from_secs(1))]);
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let gap = requests[1].received_at - requests[0].received_at;
        assert!(gap >= Duration::from_millis(950), "waited {gap:?}");
    }

    /// A 401 (`rejected`, whose message echoes the key and says `says`) is
    /// an auth error naming the key's variable, never the key, not retried.
    pub async fn assert_401_names_the_key_variable(&self, rejected: MockResponse, says: &str) {
        let (var, key) = self.key.expect("an API with a key");
        let server = MockServer::start();
        server.enqueue(rejected);
        let error = self.failure(&server, "hi").await;
        match &error {
            ProviderError::Auth { status, hint, .. } => {
                assert_eq!(*status, 401);
                assert_eq!(hint, &format!("Check the key in ${var}."));
            }
            other => panic!("expected Auth, got {other}"),
        }
        let text = error.to_string();
        assert!(text.contains(var), "{text}");
        assert!(text.contains(says), "{text}");
        assert!(!text.contains(key), "the key never appears: {text}");
        assert_eq!(server.request_count(), 1, "auth errors are not retried");
    }

    /// A 404 (`not_found`) is reported with the URL that was requested
    /// (`{base_url}{path}`) and the setting to check, and not retried.
    pub async fn assert_404_names_the_url_and_the_setting(
        &self,
        not_found: MockResponse,
        path: &str,
    ) -> String {
        let server = MockServer::start();
        server.enqueue(not_found);
        let error = self.failure(&server, "hi").await;
        assert!(
            matches!(&error, ProviderError::Http { status: 404, .. }),
            "{error}"
        );
        let text = error.to_string();
        let url = format!("{}{path}", self.base_url(server.url()));
        assert!(text.contains(&format!("POST {url}")), "{text}");
        assert!(
            text.contains(&format!("base_url in [model_providers.{}]", self.id)),
            "{text}"
        );
        assert_eq!(server.request_count(), 1, "a 404 is not retried");
        text
    }

    /// HTTP `status` (`failure`, saying `message`) is reported as it is and
    /// not retried.
    pub async fn assert_status_is_not_retried(
        &self,
        status: u16,
        failure: MockResponse,
        message: &str,
    ) {
        let server = MockServer::start();
        server.enqueue(failure);
        let error = self.failure(&server, "hi").await;
        match &error {
            ProviderError::Http {
                status: got,
                message: said,
                ..
            } => {
                assert_eq!(*got, status);
                // A 404 adds the URL and the setting to check.
                if status == 404 {
                    assert!(said.starts_with(message), "{said}");
                } else {
                    assert_eq!(said, message);
                }
            }
            other => panic!("expected Http, got {other}"),
        }
        assert_eq!(server.request_count(), 1, "HTTP {status} is not retried");
    }

    /// `failure` (a status or an in-stream error) is a context overflow
    /// whose message says `says`, not retried.
    pub async fn assert_context_overflow(&self, failure: MockResponse, says: &str) {
        let server = MockServer::start();
        server.enqueue(failure);
        let error = self.failure(&server, "hi").await;
        assert!(
            matches!(&error, ProviderError::ContextOverflow { message, .. } if message.contains(says)),
            "{error}"
        );
        assert_eq!(server.request_count(), 1, "not retried");
    }

    /// A server nobody listens on: one retry, then `RetriesExhausted`
    /// saying so. The events and the last error's text, for the API's own
    /// checks.
    pub async fn assert_unreachable_is_retried_then_reported(
        &self,
    ) -> (Vec<ResponseEvent>, String) {
        let root = format!("http://127.0.0.1:{}", closed_port());
        let mut info = self.info_at(&self.base_url(root));
        info.retry = RetrySettings {
            max_retries: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        };
        let (events, error) = self.hi(info).await;
        assert_eq!(retries(&events).len(), 1, "{events:?}");
        match error {
            Some(ProviderError::RetriesExhausted { attempts, last, .. }) => {
                assert_eq!(attempts, 2);
                assert!(last.contains("could not reach"), "{last}");
                (events, last)
            }
            other => panic!("expected RetriesExhausted, got {other:?}"),
        }
    }

    /// Every `*.{ext}` wire capture in `tests/fixtures/{dir}` (at least
    /// `at_least` of them), served by `respond` in odd-sized chunks that
    /// split lines, JSON and UTF-8 characters, decodes to the events its
    /// `.expected` file lists, printed in `style`.
    pub async fn assert_fixtures_decode_to_expected_events(
        &self,
        dir: &str,
        ext: &str,
        at_least: usize,
        respond: fn(Vec<Vec<u8>>) -> MockResponse,
        style: &Style,
    ) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(dir);
        let mut fixtures: Vec<_> = std::fs::read_dir(&dir)
            .expect("fixture dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        fixtures.sort();
        assert!(fixtures.len() >= at_least, "fixtures found: {fixtures:?}");
        let server = MockServer::start();
        for path in &fixtures {
            let wire = std::fs::read_to_string(path).expect("fixture");
            let expected = std::fs::read_to_string(path.with_extension("expected"))
                .unwrap_or_else(|e| panic!("{}: missing .expected file: {e}", path.display()));
            server.enqueue(respond(
                wire.as_bytes().chunks(37).map(<[u8]>::to_vec).collect(),
            ));
            let events = self.answer(&server, "hi").await;
            assert_eq!(
                describe(&events, &wire, style),
                expected,
                "fixture {}",
                path.display()
            );
        }
        server.assert_invariants();
    }
}

/// How a wire API's `.expected` files print what the APIs report
/// differently.
pub struct Style {
    /// A reasoning line; `None` prints the event's `Debug` form.
    pub reasoning: Option<fn(&Reasoning) -> String>,
    /// The usage of the `completed` line.
    pub usage: fn(&Usage) -> String,
    /// Ids the wire did not carry (made up by the parser) print as
    /// `<made-up>`.
    pub made_up_ids: bool,
}

/// One line per event, independent of how text was chunked.
fn describe(events: &[ResponseEvent], wire: &str, style: &Style) -> String {
    let id = |id: &str| {
        if !style.made_up_ids || wire.contains(id) {
            id.to_string()
        } else {
            "<made-up>".to_string()
        }
    };
    let mut lines = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, lines: &mut Vec<String>| {
        if !text.is_empty() {
            lines.push(format!("text {}", json!(text)));
            text.clear();
        }
    };
    for event in events {
        if let ResponseEvent::TextDelta(t) = event {
            text.push_str(t);
            continue;
        }
        flush(&mut text, &mut lines);
        lines.push(match (event, style.reasoning) {
            (ResponseEvent::Reasoning(r), Some(reasoning)) => reasoning(r),
            (ResponseEvent::ToolCallStarted { id: call, name }, _) => {
                format!("tool_call_started {} {name}", id(call))
            }
            (ResponseEvent::ToolCall(call), _) => format!(
                "tool_call {} {} {} {}",
                id(&call.id),
                call.name,
                json!(call.kind).as_str().unwrap_or("?"),
                json!(call.arguments)
            ),
            (
                ResponseEvent::Completed {
                    usage,
                    stop_reason,
                    incomplete_tool_call,
                },
                _,
            ) => format!(
                "completed {} usage={} incomplete={}",
                json!(stop_reason).as_str().unwrap_or("?"),
                usage.as_ref().map_or("none".to_string(), style.usage),
                incomplete_tool_call.as_deref().unwrap_or("none")
            ),
            (other, _) => format!("{other:?}"),
        });
    }
    flush(&mut text, &mut lines);
    lines.join("\n") + "\n"
}

/// The two requests `server` received carried the same body.
fn assert_same_body_sent_twice(server: &MockServer) {
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body, requests[1].body,
        "the same body is resent"
    );
}

/// A port nothing listens on (it was free a moment ago).
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

pub fn user(text: &str) -> Vec<HistoryItem> {
    vec![HistoryItem::text(Role::User, text)]
}

/// Every event until the stream ends, and the error that ended it.
pub async fn collect(
    provider: &dyn Provider,
    request: &ModelRequest<'_>,
) -> (Vec<ResponseEvent>, Option<ProviderError>) {
    let mut stream = provider.stream(request);
    let run = async {
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => events.push(event),
                Err(error) => {
                    assert!(
                        stream.next().await.is_none(),
                        "the stream must end after its first error"
                    );
                    return (events, Some(error));
                }
            }
        }
        (events, None)
    };
    tokio::time::timeout(GENEROUS, run)
        .await
        .expect("the stream finished")
}

/// The events of a stream that must succeed, ending with `Completed`.
pub async fn run_ok(provider: &dyn Provider, request: &ModelRequest<'_>) -> Vec<ResponseEvent> {
    let (events, error) = collect(provider, request).await;
    if let Some(error) = error {
        panic!("unexpected error {error} after {events:?}");
    }
    assert!(
        matches!(events.last(), Some(ResponseEvent::Completed { .. })),
        "ends with Completed: {events:?}"
    );
    events
}

/// The error of a stream that must fail, with no `Completed` before it.
pub async fn run_err(provider: &dyn Provider, request: &ModelRequest<'_>) -> ProviderError {
    let (events, error) = collect(provider, request).await;
    let error = error.unwrap_or_else(|| panic!("expected an error, got {events:?}"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ResponseEvent::Completed { .. })),
        "no Completed before an error: {events:?}"
    );
    error
}

/// All text deltas, joined.
pub fn text_of(events: &[ResponseEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// `(attempt, delay)` of every `Retrying` event.
pub fn retries(events: &[ResponseEvent]) -> Vec<(u32, Duration)> {
    events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::Retrying { attempt, delay, .. } => Some((*attempt, *delay)),
            _ => None,
        })
        .collect()
}

/// Usage, stop reason and cut-off call of the final `Completed`.
pub fn completed(events: &[ResponseEvent]) -> (Option<Usage>, StopReason, Option<String>) {
    match events.last() {
        Some(ResponseEvent::Completed {
            usage,
            stop_reason,
            incomplete_tool_call,
        }) => (*usage, stop_reason.clone(), incomplete_tool_call.clone()),
        other => panic!("expected Completed last, got {other:?}"),
    }
}

pub fn tool_call(id: &str, name: &str, arguments: &str, kind: ToolCallKind) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        kind,
    }
}

pub fn function_call(id: &str, name: &str, arguments: &str) -> ToolCall {
    tool_call(id, name, arguments, ToolCallKind::Function)
}

pub fn started(id: &str, name: &str) -> ResponseEvent {
    ResponseEvent::ToolCallStarted {
        id: id.into(),
        name: name.into(),
    }
}
