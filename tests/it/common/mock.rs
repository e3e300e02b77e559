//! A loopback mock model provider for tests.
//!
//! [`MockServer::start`] listens on `127.0.0.1:<free port>` on its own thread
//! (with its own tokio runtime), so it works from async tests, sync tests,
//! tests that run the real binary, and example programs alike. It serves a
//! queue of scripted [`MockResponse`]s in order (one per request), speaking
//! plain HTTP/1.1 with chunked bodies so every scripted chunk is sent and
//! flushed on its own, and chunks can be gated: delayed, held until a
//! [`Gate`] is released, held forever, or the connection closed mid-body.
//!
//! Every request is recorded ([`RecordedRequest`]) and checked: each tool
//! call in `messages` must have exactly one `tool` message right after its
//! assistant message. Violations are kept; [`MockServer::assert_invariants`]
//! fails the test on any of them, and on requests nothing was scripted for.
//!
//! Like the real services, the mock also validates each request by its wire
//! API's rules (`rule_broken` in `wire_anthropic`, `wire_chat`,
//! `wire_responses` and `wire_ollama`) and rejects a request that breaks
//! one with that API's status and error body, instead of serving the next
//! scripted response (a rejection is a violation too). With
//! [`MockServer::set_context_window`] it also refuses requests larger than
//! a context window with the API's overflow error; request sizes are
//! estimated as body bytes / 4. A scripted response may carry
//! [`INPUT_TOKENS`] as its input token count: the mock writes the request's
//! estimate there. [`MockServer::answer_matching`] answers requests that a
//! predicate picks (a compaction's summary request) from a factory, out of
//! the queue's order.
//!
//! [`chat`] builds Chat Completions SSE events and whole responses.
//!
//! Depends only on std, tokio and serde_json.
//!
//! ```ignore
//! let server = MockServer::start();
//! server.enqueue(chat::text_response("Hello"));
//! server.enqueue(MockResponse::sse([chat::text("par"), chat::comment("ping")])
//!     .delay(Duration::from_millis(50))
//!     .chunk(chat::text("tial"))
//!     .stall_forever());
//! // ... point the client at server.base_url() ...
//! assert_eq!(server.requests()[0].path, "/v1/chat/completions");
//! server.assert_invariants();
//! ```

use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

// ---------------------------------------------------------------------------
// Gates and scripted responses
// ---------------------------------------------------------------------------

/// A latch a scripted response can wait on; [`Gate::release`] opens it for
/// good (also when released before the server reaches it).
#[derive(Debug, Clone)]
pub struct Gate {
    open: Arc<watch::Sender<bool>>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

impl Gate {
    pub fn new() -> Self {
        Gate {
            open: Arc::new(watch::Sender::new(false)),
        }
    }

    pub fn release(&self) {
        self.open.send_replace(true);
    }

    pub fn is_released(&self) -> bool {
        *self.open.borrow()
    }

    async fn wait(&self) {
        let mut open = self.open.subscribe();
        // The sender lives in `self`, so this only returns once released.
        let _ = open.wait_for(|is_open| *is_open).await;
    }
}

/// How long the server holds still before going on.
#[derive(Debug, Clone)]
pub enum Pause {
    For(Duration),
    Until(Gate),
    Forever,
}

impl Pause {
    async fn run(&self) {
        match self {
            Pause::For(duration) => tokio::time::sleep(*duration).await,
            Pause::Until(gate) => gate.wait().await,
            Pause::Forever => std::future::pending::<()>().await,
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Chunk(Vec<u8>),
    Pause(Pause),
    /// Drop the connection without finishing the body.
    Close,
}

/// One scripted HTTP response: status, headers, and a body sent as chunks
/// with optional pauses between them.
#[derive(Debug, Clone)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    before_headers: Option<Pause>,
    steps: Vec<Step>,
    /// Blocks every later request to the same API must send back exactly
    /// (a web search's results).
    carries: Vec<Value>,
}

impl MockResponse {
    /// A response with `status` and an empty body.
    pub fn new(status: u16) -> Self {
        MockResponse {
            status,
            headers: Vec::new(),
            before_headers: None,
            steps: Vec::new(),
            carries: Vec::new(),
        }
    }

    /// Once served, every later request to the same path must hold each of
    /// `blocks` exactly, or it is rejected as the API would.
    pub fn carrying(mut self, blocks: Vec<Value>) -> Self {
        self.carries = blocks;
        self
    }

    /// `200 text/event-stream`, each item sent as its own chunk.
    pub fn sse<I, C>(chunks: I) -> Self
    where
        I: IntoIterator<Item = C>,
        C: Into<Vec<u8>>,
    {
        let mut response = MockResponse::new(200).header("content-type", "text/event-stream");
        for chunk in chunks {
            response = response.chunk(chunk);
        }
        response
    }

    /// `status` with a JSON body, e.g. an error.
    pub fn json(status: u16, body: &Value) -> Self {
        MockResponse::new(status)
            .header("content-type", "application/json")
            .chunk(body.to_string())
    }

    /// `status` with `{"error":{"message": message, ...}}` as OpenAI sends.
    pub fn error(status: u16, message: &str) -> Self {
        MockResponse::json(
            status,
            &serde_json::json!({
                "error": {"message": message, "type": "mock_error", "code": null}
            }),
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Append a body chunk.
    pub fn chunk(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.steps.push(Step::Chunk(bytes.into()));
        self
    }

    /// Append several body chunks.
    pub fn chunks<I, C>(mut self, chunks: I) -> Self
    where
        I: IntoIterator<Item = C>,
        C: Into<Vec<u8>>,
    {
        for chunk in chunks {
            self = self.chunk(chunk);
        }
        self
    }

    /// Pause before the next chunk.
    pub fn pause(mut self, pause: Pause) -> Self {
        self.steps.push(Step::Pause(pause));
        self
    }

    pub fn delay(self, duration: Duration) -> Self {
        self.pause(Pause::For(duration))
    }

    /// Hold until `gate` is released.
    pub fn wait_for(self, gate: &Gate) -> Self {
        self.pause(Pause::Until(gate.clone()))
    }

    /// Never send anything more (the connection stays open).
    pub fn stall_forever(self) -> Self {
        self.pause(Pause::Forever)
    }

    /// Close the connection here, leaving the body unfinished.
    pub fn close_early(mut self) -> Self {
        self.steps.push(Step::Close);
        self
    }

    /// Pause before even the status line is sent.
    pub fn pause_before_headers(mut self, pause: Pause) -> Self {
        self.before_headers = Some(pause);
        self
    }

    /// [`INPUT_TOKENS`] in the body replaced by `tokens`.
    fn with_input_tokens(mut self, tokens: u64) -> Self {
        let placeholder = INPUT_TOKENS.to_string();
        let value = tokens.to_string();
        for step in &mut self.steps {
            if let Step::Chunk(bytes) = step {
                let text = String::from_utf8_lossy(bytes);
                if text.contains(&placeholder) {
                    *bytes = text.replace(&placeholder, &value).into_bytes();
                }
            }
        }
        self
    }
}

// ---------------------------------------------------------------------------
// Recorded requests
// ---------------------------------------------------------------------------

/// A request as the mock received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path with query string, e.g. `/v1/chat/completions?api-version=1`.
    pub path: String,
    /// Headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
    /// When the whole request had arrived.
    pub received_at: std::time::Instant,
}

impl RecordedRequest {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without its query string.
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    /// A query parameter's raw (still percent-encoded) value.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        let (_, query) = self.path.split_once('?')?;
        query
            .split('&')
            .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }

    /// The JSON body; panics when the body was not JSON.
    pub fn body_json(&self) -> &Value {
        self.json
            .as_ref()
            .unwrap_or_else(|| panic!("request body is not JSON: {:?}", self.body_text()))
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// `messages` of a Chat Completions body (empty when absent).
    pub fn messages(&self) -> Vec<Value> {
        self.json
            .as_ref()
            .and_then(|j| j.get("messages"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Each Chat Completions message as `role: text` (text parts joined;
    /// an assistant's tool calls as `name arguments`), to compare whole
    /// requests.
    pub fn message_lines(&self) -> Vec<String> {
        self.messages()
            .iter()
            .map(|m| {
                let mut text = match &m["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join(""),
                    _ => String::new(),
                };
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    let f = &call["function"];
                    text.push_str(&format!(
                        "{} {}",
                        f["name"].as_str().unwrap_or_default(),
                        f["arguments"].as_str().unwrap_or_default()
                    ));
                }
                format!("{}: {text}", m["role"].as_str().unwrap_or_default())
            })
            .collect()
    }
}

/// Problems with tool-call pairing in a Chat Completions body, each as a
/// sentence. Empty when every call has exactly one `tool` message directly
/// after its assistant message and no `tool` message is orphaned.
/// The pairing check for the wire API a request path belongs to.
/// The function names in a Chat Completions request's `tools`.
pub fn tool_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `path` is a wire API's model request (not a model list).
fn is_inference(path: &str) -> bool {
    ["/responses", "/messages", "/api/chat", "/chat/completions"]
        .iter()
        .any(|end| path.ends_with(end))
}

/// A 400 in the shape of the API a request to `path` went to.
fn api_error(path: &str, message: &str) -> MockResponse {
    if path.ends_with("/messages") {
        super::wire_anthropic::error_response(400, "invalid_request_error", message)
    } else {
        super::wire_responses::openai_error(400, message, Some("input"), None)
    }
}

/// The rule of its wire API that a request to `path` breaks, and the API's
/// answer.
pub fn rejection_for(path: &str, body: &Value) -> Option<(String, MockResponse)> {
    if path.ends_with("/responses") {
        super::wire_responses::rejection(body)
    } else if path.ends_with("/messages") {
        super::wire_anthropic::rejection(body)
    } else if path.ends_with("/api/chat") {
        super::wire_ollama::rejection(body)
    } else if path.ends_with("/chat/completions") {
        super::wire_chat::rejection(body)
    } else {
        None
    }
}

pub fn pairing_violations_for(path: &str, body: &Value) -> Vec<String> {
    if path.ends_with("/responses") {
        super::wire_responses::pairing_violations(body)
    } else if path.ends_with("/messages") {
        super::wire_anthropic::pairing_violations(body)
    } else if path.ends_with("/api/chat") {
        super::wire_ollama::pairing_violations(body)
    } else {
        tool_pairing_violations(body)
    }
}

pub fn tool_pairing_violations(body: &Value) -> Vec<String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut outputs: HashMap<&str, Vec<usize>> = HashMap::new();
    for (at, message) in messages.iter().enumerate() {
        match message.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    if calls.insert(id, at).is_some() {
                        problems.push(format!("tool call id `{id}` is used twice"));
                    }
                }
            }
            Some("tool") => {
                let id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                outputs.entry(id).or_default().push(at);
            }
            _ => {}
        }
    }
    let mut ids: Vec<_> = calls.iter().collect();
    ids.sort_by_key(|(id, at)| (**at, **id));
    for (id, at) in ids {
        match outputs.get(id).map(Vec::as_slice) {
            None | Some([]) => problems.push(format!(
                "tool call `{id}` (message {at}) has no tool message"
            )),
            Some([out]) => {
                let between_ok = messages[at + 1..*out]
                    .iter()
                    .all(|m| m.get("role").and_then(Value::as_str) == Some("tool"));
                if *out < *at {
                    problems.push(format!(
                        "the tool message for `{id}` (message {out}) comes before its call (message {at})"
                    ));
                } else if !between_ok {
                    problems.push(format!(
                        "the tool message for `{id}` (message {out}) does not directly follow its call (message {at})"
                    ));
                }
            }
            Some(many) => problems.push(format!(
                "tool call `{id}` (message {at}) has {} tool messages",
                many.len()
            )),
        }
    }
    let mut orphans: Vec<_> = outputs
        .iter()
        .filter(|(id, _)| !calls.contains_key(*id))
        .flat_map(|(id, ats)| ats.iter().map(move |at| (*at, *id)))
        .collect();
    orphans.sort();
    for (at, id) in orphans {
        problems.push(format!(
            "tool message {at} answers `{id}`, which no assistant message called"
        ));
    }
    problems
}

// ---------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------

/// Written as a scripted response's input token count, replaced by the
/// request's estimated tokens (body bytes / 4).
pub const INPUT_TOKENS: u64 = 987_654_321;

/// The mock's estimate of a request's tokens: 4 bytes per token.
pub fn estimated_tokens(body: &[u8]) -> u64 {
    (body.len() as u64).div_ceil(4)
}

/// Builds the API's overflow error for `(tokens, window)`.
pub type OverflowError = Arc<dyn Fn(u64, u64) -> MockResponse + Send + Sync>;

/// Picks requests for a standing answer.
pub type Matcher = Arc<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;

/// Makes a standing answer.
pub type Factory = Arc<dyn Fn() -> MockResponse + Send + Sync>;

#[derive(Default)]
struct State {
    queue: VecDeque<MockResponse>,
    requests: Vec<RecordedRequest>,
    violations: Vec<String>,
    /// When the last byte of each response was written, in order.
    finished: Vec<std::time::Instant>,
    /// Requests are accepted even when they break the API's rules.
    lenient: bool,
    window: Option<(u64, OverflowError)>,
    standing: Vec<(Matcher, Factory)>,
    /// Numbers (from 1) of the requests refused as too large.
    overflowed: Vec<usize>,
    /// Blocks served (path, block) that later requests must send back.
    carried: Vec<(String, Value)>,
}

/// The loopback mock provider. Stops (closing every connection) when dropped.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Listen on `127.0.0.1:0` and serve from a background thread.
    pub fn start() -> MockServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(Mutex::new(State::default()));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread_state = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("mock-provider".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("mock runtime");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("tokio listener");
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept_loop(listener, thread_state) => {}
                    }
                });
                // Dropping the runtime cancels every connection task.
            })
            .expect("spawn mock thread");
        MockServer {
            addr,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>/v1`, the usual `base_url`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Queue a response for the next unanswered request.
    pub fn enqueue(&self, response: MockResponse) {
        self.lock().queue.push_back(response);
    }

    /// Scripted responses not yet served.
    pub fn pending_responses(&self) -> usize {
        self.lock().queue.len()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// When the last byte of each response was written, in order.
    pub fn response_finish_times(&self) -> Vec<std::time::Instant> {
        self.lock().finished.clone()
    }

    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.lock().requests.last().cloned()
    }

    /// Wait (up to `timeout`) until at least `count` requests arrived.
    pub async fn wait_for_requests(&self, count: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.request_count() < count {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Accept requests that break the API's rules (they are still
    /// reported as violations), for tests of what a client sends.
    pub fn accept_invalid_requests(&self) {
        self.lock().lenient = true;
    }

    /// Refuse requests estimated larger than `window` tokens with
    /// `overflow(tokens, window)`, the API's overflow error.
    pub fn set_context_window(
        &self,
        window: u64,
        overflow: impl Fn(u64, u64) -> MockResponse + Send + Sync + 'static,
    ) {
        self.lock().window = Some((window, Arc::new(overflow)));
    }

    /// Answer every request `matches` picks with `answer()`, before the
    /// queue.
    pub fn answer_matching(
        &self,
        matches: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        answer: impl Fn() -> MockResponse + Send + Sync + 'static,
    ) {
        self.lock()
            .standing
            .push((Arc::new(matches), Arc::new(answer)));
    }

    /// Numbers (from 1) of the requests refused as larger than the window.
    pub fn overflowed_requests(&self) -> Vec<usize> {
        self.lock().overflowed.clone()
    }

    /// Invariant violations and unscripted requests seen so far.
    pub fn violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    /// Panic listing every violation, if there are any.
    pub fn assert_invariants(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "the mock provider saw {} problem(s):\n  {}",
            violations.len(),
            violations.join("\n  ")
        );
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the state from the others.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            // A broken connection only ends that connection.
            let _ = serve_connection(socket, state).await;
        });
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

async fn serve_connection(socket: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut socket = BufReader::new(socket);
    loop {
        let Some(request) = read_request(&mut socket).await? else {
            return Ok(());
        };
        let wants_close = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let response = {
            let mut state = lock(&state);
            let number = state.requests.len() + 1;
            let path = request.path_only().to_string();
            let tokens = estimated_tokens(&request.body);
            if let Some(json) = &request.json {
                for problem in pairing_violations_for(&path, json) {
                    state
                        .violations
                        .push(format!("request #{number}: {problem}"));
                }
            }
            let rejected = request.json.as_ref().and_then(|json| {
                rejection_for(&path, json).or_else(|| {
                    state
                        .carried
                        .iter()
                        .filter(|(at, _)| *at == path)
                        .find_map(|(_, block)| super::web_search::dropped(json, block))
                        .map(|message| (message.clone(), api_error(&path, &message)))
                })
            });
            let response = if let Some((message, response)) = rejected {
                state.violations.push(format!(
                    "request #{number} was rejected by the API's rules: {message}"
                ));
                (!state.lenient).then_some(response)
            } else {
                None
            };
            let over_window = state
                .window
                .clone()
                .filter(|(window, _)| is_inference(&path) && tokens > *window);
            // Ollama refuses an over-long prompt only with `truncate:
            // false`; otherwise it silently drops its oldest messages.
            let silently_cut = path.ends_with("/api/chat")
                && request
                    .json
                    .as_ref()
                    .is_some_and(|j| j.get("truncate") != Some(&Value::Bool(false)));
            if over_window.is_some() && silently_cut {
                state.violations.push(format!(
                    "request #{number}: Ollama would cut this prompt to fit num_ctx, silently dropping its oldest messages (send `truncate: false`)"
                ));
            }
            let overflow = over_window
                .filter(|_| !silently_cut)
                .map(|(window, overflow)| overflow(tokens, window));
            let response = match (response, overflow) {
                (Some(response), _) => Some(response),
                (None, Some(overflow)) => {
                    state.overflowed.push(number);
                    Some(overflow)
                }
                (None, None) => state
                    .standing
                    .iter()
                    .find(|(matches, _)| matches(&request))
                    .map(|(_, answer)| answer())
                    .or_else(|| state.queue.pop_front()),
            };
            if response.is_none() {
                state.violations.push(format!(
                    "request #{number} ({} {}) had no scripted response",
                    request.method, request.path
                ));
            }
            state.requests.push(request);
            if let Some(served) = &response {
                let carried = served.carries.iter().map(|b| (path.clone(), b.clone()));
                state.carried.extend(carried);
            }
            response
                .unwrap_or_else(|| {
                    MockResponse::error(500, "mock provider: no scripted response left")
                })
                .with_input_tokens(tokens)
        };
        let keep_open = write_response(socket.get_mut(), &response).await?;
        lock(&state).finished.push(std::time::Instant::now());
        if !keep_open || wants_close {
            return Ok(());
        }
    }
}

/// Read one request; `None` when the client closed the connection.
async fn read_request(
    socket: &mut BufReader<TcpStream>,
) -> std::io::Result<Option<RecordedRequest>> {
    let mut line = String::new();
    if socket.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if socket.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            socket.read_line(&mut line).await?;
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            socket.read_exact(&mut chunk).await?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(length, 0);
        socket.read_exact(&mut body).await?;
    }
    let json = serde_json::from_slice(&body).ok();
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
        json,
        received_at: std::time::Instant::now(),
    }))
}

/// Write `response`; `Ok(true)` when the connection can serve another.
async fn write_response(socket: &mut TcpStream, response: &MockResponse) -> std::io::Result<bool> {
    if let Some(pause) = &response.before_headers {
        pause.run().await;
    }
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ntransfer-encoding: chunked\r\n",
        response.status,
        reason_phrase(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    for step in &response.steps {
        match step {
            Step::Chunk(bytes) if bytes.is_empty() => {}
            Step::Chunk(bytes) => {
                let mut framed = format!("{:x}\r\n", bytes.len()).into_bytes();
                framed.extend_from_slice(bytes);
                framed.extend_from_slice(b"\r\n");
                socket.write_all(&framed).await?;
                socket.flush().await?;
            }
            Step::Pause(pause) => pause.run().await,
            Step::Close => {
                socket.shutdown().await?;
                return Ok(false);
            }
        }
    }
    socket.write_all(b"0\r\n\r\n").await?;
    socket.flush().await?;
    Ok(true)
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Mock",
    }
}

/// `text` cut into at most `pieces` non-empty parts on char boundaries (the
/// wire builders stream text and arguments in pieces this way).
pub fn split_chars(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(pieces.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

// ---------------------------------------------------------------------------
// Chat Completions SSE builders
// ---------------------------------------------------------------------------

/// Builders for Chat Completions stream events (each returns one complete
/// SSE event, `data: ...\n\n`) and for whole scripted responses.
pub mod chat {
    use super::{split_chars, MockResponse};
    use serde_json::{json, Value};

    /// `data: <json>\n\n`
    pub fn data(value: &Value) -> String {
        format!("data: {value}\n\n")
    }

    /// A `chat.completion.chunk` with one choice carrying `delta`.
    pub fn delta_chunk(delta: Value, finish_reason: Option<&str>) -> String {
        data(&json!({
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }))
    }

    /// The opening chunk most servers send: `{"role":"assistant"}`.
    pub fn role() -> String {
        delta_chunk(json!({"role": "assistant", "content": ""}), None)
    }

    /// A piece of assistant text.
    pub fn text(text: &str) -> String {
        delta_chunk(json!({"content": text}), None)
    }

    /// A piece of reasoning, which clients must ignore.
    pub fn reasoning(text: &str) -> String {
        delta_chunk(json!({"reasoning_content": text}), None)
    }

    /// The first piece of tool call `index`: id and name, no arguments yet.
    pub fn tool_call_start(index: usize, id: &str, name: &str) -> String {
        delta_chunk(
            json!({"tool_calls": [{
                "index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""},
            }]}),
            None,
        )
    }

    /// A further piece of tool call `index`'s arguments.
    pub fn tool_call_args(index: usize, arguments: &str) -> String {
        delta_chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}),
            None,
        )
    }

    /// A whole tool call in one piece.
    pub fn tool_call(index: usize, id: &str, name: &str, arguments: &str) -> String {
        delta_chunk(
            json!({"tool_calls": [{
                "index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments},
            }]}),
            None,
        )
    }

    /// A tool call as a start piece plus `pieces` argument pieces (split on
    /// character boundaries).
    pub fn tool_call_split(
        index: usize,
        id: &str,
        name: &str,
        arguments: &str,
        pieces: usize,
    ) -> Vec<String> {
        let mut out = vec![tool_call_start(index, id, name)];
        out.extend(
            split_chars(arguments, pieces)
                .iter()
                .map(|p| tool_call_args(index, p)),
        );
        out
    }

    /// The chunk that ends the choice.
    pub fn finish(reason: &str) -> String {
        delta_chunk(json!({}), Some(reason))
    }

    /// The usage chunk sent with `stream_options.include_usage`.
    pub fn usage(prompt_tokens: u64, completion_tokens: u64, cached_tokens: u64) -> String {
        data(&json!({
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "mock-model",
            "choices": [],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached_tokens},
            },
        }))
    }

    /// A mid-stream error payload.
    pub fn error(message: &str) -> String {
        data(&json!({"error": {"message": message, "type": "server_error"}}))
    }

    /// The terminal event.
    pub fn done() -> String {
        "data: [DONE]\n\n".to_string()
    }

    /// An SSE comment (keep-alive): `: <text>\n\n`.
    pub fn comment(text: &str) -> String {
        format!(": {text}\n\n")
    }

    /// The system prompt of a request body (its first message).
    pub fn system_prompt(body: &Value) -> String {
        body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// A full answer: role, the text in a few pieces, `stop`, usage, `[DONE]`.
    pub fn text_response(answer: &str) -> MockResponse {
        let mut events = vec![role()];
        events.extend(split_chars(answer, 3).iter().map(|p| text(p)));
        events.extend([finish("stop"), usage(10, 5, 0), done()]);
        MockResponse::sse(events)
    }

    /// A response calling tools `(id, name, arguments)` in order, arguments
    /// split over pieces, ending with `tool_calls`, usage and `[DONE]`.
    pub fn tool_calls_response(calls: &[(&str, &str, &str)]) -> MockResponse {
        let mut events = vec![role()];
        for (index, (id, name, arguments)) in calls.iter().enumerate() {
            events.extend(tool_call_split(index, id, name, arguments, 2));
        }
        events.extend([finish("tool_calls"), usage(10, 5, 0), done()]);
        MockResponse::sse(events)
    }
}
