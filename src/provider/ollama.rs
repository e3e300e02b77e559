//! Ollama's native chat API: `POST {base_url}/api/chat` with `stream: true`,
//! answered with one JSON object per line (NDJSON). `base_url` is the
//! server root (`http://localhost:11434`, no `/v1`). No key is sent unless
//! one is configured (then `Authorization: Bearer`, for proxies).
//!
//! Request: the instructions and developer items become `system` messages;
//! assistant text, reasoning this API produced (as `thinking`) and tool
//! calls (`arguments` as a JSON object) share one assistant message; tool
//! outputs become `{"role": "tool", "content", "tool_name"}` messages (the
//! API has no call ids: a call and its output pair by order and name).
//! Tools are Chat Completions style functions (a freeform tool takes a
//! string `input`). `options` carries `num_ctx` (the context window: Ollama
//! otherwise uses its own small default and silently cuts the prompt),
//! `temperature` and `num_predict` (max tokens); `truncate: false` makes a
//! prompt longer than `num_ctx` an error (a context overflow, which the
//! engine compacts for) where Ollama would otherwise silently drop its
//! oldest messages; `format` carries the output schema; `think` the reasoning effort (`low`, `medium`, `high`;
//! `minimal` is sent as `low`, the least Ollama knows; models without
//! levels treat any level as "on"); `keep_alive` is [`KEEP_ALIVE`].
//!
//! Stream: `message.content` pieces become [`ResponseEvent::TextDelta`]s;
//! `message.thinking` pieces are collected into one
//! [`ResponseEvent::Reasoning`] (source `ollama`, sent back as `thinking`)
//! emitted before the text or calls that follow it; each
//! `message.tool_calls` entry arrives whole and becomes
//! [`ResponseEvent::ToolCallStarted`] + [`ResponseEvent::ToolCall`] (with a
//! made-up id when the server sends none). The line with `"done": true`
//! ends the response: `done_reason` is the stop reason, `prompt_eval_count`
//! and `eval_count` the usage. A line `{"error": ...}` is an error,
//! retried when it says the server is busy or overloaded. The HTTP side
//! (retries, idle timeout, size cap, a stream without its `done` line) is
//! [`http`]'s.
//!
//! Context window: when the request's window is only the generic default
//! ([`ModelRequest::context_window_is_default`]), the provider asks
//! `POST /api/show` once per model (cached; [`SHOW_TIMEOUT`]; failures are
//! logged and ignored), sends what it learned as `num_ctx` and reports it
//! with [`ResponseEvent::ModelInfo`] so the engine adjusts compaction. A
//! `num_ctx` in the model's Modelfile wins over the architecture's trained
//! `context_length`, since someone chose it for this server.
//!
//! Errors name the fix: an unreachable server says to start `ollama serve`
//! (or check `OLLAMA_HOST`), a model that is not pulled names
//! `ollama pull <model>`.

use super::chat_completions::{self, WireTool};
use super::freeform;
use super::http::{self, Auth, Endpoint, FrameError, Framing, ServerError, Wire, WireParser};
use super::retry::Jitter;
use super::sse::SseEvent;
use super::{ModelRequest, Provider, ProviderError, ProviderInfo, ResponseEvent, ResponseStream};
use crate::protocol::{Content, HistoryItem, Reasoning, Role, StopReason, ToolCall, Usage};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the server keeps the model loaded after a request.
pub const KEEP_ALIVE: &str = "10m";
/// Longest wait for `POST /api/show`.
pub const SHOW_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for `GET /api/tags`.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(15);
/// The `source` of the reasoning this API produces and takes back.
const SOURCE: &str = "ollama";

/// Context windows `/api/show` answered with, by model (`None`: it named none).
type WindowCache = Mutex<HashMap<String, Option<u64>>>;

/// An Ollama `/api/chat` client for one provider.
pub struct Ollama {
    endpoint: Arc<Endpoint>,
    windows: Arc<WindowCache>,
}

/// Where Ollama requests go and how.
const WIRE: Wire = Wire {
    path: "/api/chat",
    auth: Auth::Bearer,
    headers: &[],
    framing: Framing::Ndjson,
    hint: Some(advise),
    overflow: is_context_overflow,
};

/// Whether an error says the request does not fit the context window.
/// Ollama cuts an over-long prompt to fit unless told not to; when it does
/// refuse, its runner says "request (N tokens) exceeds the available
/// context size (M tokens)" (type `exceed_context_size_error`, quoted
/// inside Ollama's `error` string), or "the prompt is longer than the
/// context length", or "the input length exceeds the context length".
pub(crate) fn is_context_overflow(error: &ServerError) -> bool {
    error.status_in(&[400, 413, 500])
        && error.says_any(&[
            "exceeds the available context size",
            "exceed_context_size_error",
            "longer than the context length",
            "exceeds the context length",
        ])
}

impl Ollama {
    /// A client with random retry jitter. No network I/O happens here.
    pub fn new(info: ProviderInfo) -> Result<Self, ProviderError> {
        Self::with_jitter(info, Jitter::random())
    }

    /// A client whose retry jitter comes from `jitter` (tests use a fixed
    /// value to get exact delays).
    pub fn with_jitter(info: ProviderInfo, jitter: Jitter) -> Result<Self, ProviderError> {
        let endpoint = Arc::new(Endpoint::new(info, WIRE, jitter)?);
        Ok(Ollama {
            endpoint,
            windows: Arc::new(Mutex::new(HashMap::new())),
        })
    }
}

impl Provider for Ollama {
    fn id(&self) -> &str {
        self.endpoint.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        let freeform = freeform::names(request.tools);
        let parser = move || LineParser::new(freeform.clone());
        let body = build_body(request);
        if !request.context_window_is_default {
            return self.endpoint.stream(body, request.model, parser);
        }
        let body = match body {
            Ok(body) => body,
            Err(e) => return self.endpoint.encode_error(e),
        };
        let endpoint = Arc::clone(&self.endpoint);
        let windows = Arc::clone(&self.windows);
        let model = request.model.to_string();
        let start = async move {
            let Some(window) = context_window(&endpoint, &windows, &model).await else {
                return endpoint.stream(Ok(body), &model, parser);
            };
            let body = match with_num_ctx(&body, window) {
                Ok(body) => body,
                Err(e) => return endpoint.encode_error(e),
            };
            let info = ResponseEvent::ModelInfo {
                context_window: window,
            };
            let rest = endpoint.stream(Ok(body), &model, parser);
            Box::pin(futures::stream::once(async move { Ok(info) }).chain(rest)) as ResponseStream
        };
        Box::pin(futures::stream::once(start).flatten())
    }
}

/// The names of the models the server has, via `GET {base_url}/api/tags`
/// (for `cogni models`). Waits at most [`LIST_TIMEOUT`].
pub async fn list_models(info: &ProviderInfo) -> Result<Vec<String>, ProviderError> {
    let ollama = Ollama::new(info.clone())?;
    let tags = ollama
        .endpoint
        .request_json(reqwest::Method::GET, "/api/tags", None, "", LIST_TIMEOUT)
        .await
        .map_err(|error| match error {
            // There is no model to name: say what failed instead.
            ProviderError::Http {
                provider,
                status,
                message,
                ..
            } => ProviderError::Other {
                provider,
                message: format!("listing models failed with HTTP {status}: {message}"),
            },
            other => other,
        })?;
    model_names(&tags).ok_or_else(|| ProviderError::Other {
        provider: info.id.clone(),
        message: format!(
            "`/api/tags` answered without a `models` list: {}",
            http::truncate_chars(&tags.to_string(), http::MAX_ERROR_CHARS / 2)
        ),
    })
}

/// `models[].name` of an `/api/tags` answer.
fn model_names(tags: &Value) -> Option<Vec<String>> {
    let models = tags.get("models")?.as_array()?;
    Some(
        models
            .iter()
            .filter_map(|m| m.get("name").or_else(|| m.get("model"))?.as_str())
            .map(str::to_string)
            .collect(),
    )
}

/// Ollama-specific advice for the failures people hit first.
fn advise(error: &mut ProviderError) {
    match error {
        ProviderError::Unreachable { message, .. } => message.push_str(
            " (is Ollama running? Start it with `ollama serve`, or set OLLAMA_HOST to the address it listens on)",
        ),
        ProviderError::Http {
            status: 404,
            model,
            message,
            ..
        } => {
            let lower = message.to_ascii_lowercase();
            if !model.is_empty() && lower.contains("model") && lower.contains("not found") {
                message.push_str(&format!(" (download it with `ollama pull {model}`)"));
            } else {
                message.push_str(
                    " (base_url must be the server root, e.g. http://localhost:11434, without /v1)",
                );
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// Context window
// ---------------------------------------------------------------------------

/// The window `/api/show` gives for `model`, asked once per model.
async fn context_window(endpoint: &Endpoint, cache: &WindowCache, model: &str) -> Option<u64> {
    let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = lock().get(model) {
        return *known;
    }
    let show = endpoint
        .request_json(
            reqwest::Method::POST,
            "/api/show",
            Some(&json!({ "model": model })),
            model,
            SHOW_TIMEOUT,
        )
        .await;
    match show {
        Ok(details) => {
            let window = window_from_show(&details);
            if window.is_none() {
                tracing::warn!(
                    model,
                    "`/api/show` named no context length; keeping the default window"
                );
            }
            lock().insert(model.to_string(), window);
            window
        }
        Err(error) => {
            // Not cached: the server may be up, or the model pulled, next time.
            tracing::warn!(model, %error, "could not read the context window from `/api/show`");
            None
        }
    }
}

/// `num_ctx` from the Modelfile `parameters`, else the architecture's
/// `context_length` from `model_info`.
fn window_from_show(details: &Value) -> Option<u64> {
    let from_parameters =
        details
            .get("parameters")
            .and_then(Value::as_str)
            .and_then(|parameters| {
                parameters.lines().find_map(|line| {
                    let mut words = line.split_whitespace();
                    match (words.next(), words.next()) {
                        (Some("num_ctx"), Some(value)) => value.parse::<u64>().ok(),
                        _ => None,
                    }
                })
            });
    let from_model_info = || {
        let info = details.get("model_info")?.as_object()?;
        let by_architecture = info
            .get("general.architecture")
            .and_then(Value::as_str)
            .and_then(|arch| info.get(&format!("{arch}.context_length")));
        by_architecture
            .or_else(|| {
                info.iter()
                    .find(|(key, _)| key.ends_with(".context_length"))
                    .map(|(_, value)| value)
            })?
            .as_u64()
    };
    from_parameters
        .or_else(from_model_info)
        .filter(|window| *window > 0)
}

/// `body` with `options.num_ctx` set to `window`.
fn with_num_ctx(body: &[u8], window: u64) -> serde_json::Result<Vec<u8>> {
    let mut value: Value = serde_json::from_slice(body)?;
    if let Some(options) = value.get_mut("options").and_then(Value::as_object_mut) {
        options.insert("num_ctx".into(), window.into());
    }
    serde_json::to_vec(&value)
}

// ---------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    /// Always false: a prompt longer than `num_ctx` is refused (a context
    /// overflow, which compaction handles) instead of silently losing its
    /// oldest messages.
    truncate: bool,
    options: Options,
    keep_alive: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<&'static str>,
}

#[derive(Serialize)]
struct Options {
    num_ctx: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    num_predict: Option<u32>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
}

impl<'a> Message<'a> {
    fn new(role: &'static str, content: &'a str) -> Self {
        Message {
            role,
            content,
            thinking: None,
            tool_calls: Vec::new(),
            tool_name: None,
        }
    }
}

#[derive(Serialize)]
struct WireCallOut<'a> {
    function: WireFunctionOut<'a>,
}

#[derive(Serialize)]
struct WireFunctionOut<'a> {
    name: &'a str,
    arguments: Value,
}

/// Serialise `request` as an `/api/chat` body.
fn build_body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let body = Body {
        model: request.model,
        messages: build_messages(request.instructions, request.input),
        tools: request
            .tools
            .iter()
            .map(chat_completions::wire_tool)
            .collect(),
        stream: true,
        truncate: false,
        options: Options {
            num_ctx: request.context_window,
            temperature: request.temperature,
            num_predict: request.max_tokens,
        },
        keep_alive: KEEP_ALIVE,
        format: request.output_schema,
        think: request.reasoning_effort.and_then(think_level),
    };
    serde_json::to_vec(&body)
}

/// The `think` value for a reasoning effort; `None` for one Ollama rejects.
fn think_level(effort: &str) -> Option<&'static str> {
    match effort {
        "minimal" | "low" => Some("low"),
        "medium" => Some("medium"),
        "high" => Some("high"),
        _ => None,
    }
}

fn build_messages<'a>(instructions: &'a str, input: &'a [HistoryItem]) -> Vec<Message<'a>> {
    let mut messages = Vec::with_capacity(input.len() + 1);
    if !instructions.is_empty() {
        messages.push(Message::new("system", instructions));
    }
    // Tool names by call id: a tool message names its tool, not its call.
    let mut names: HashMap<&str, &str> = HashMap::new();
    // The assistant message the following reasoning, text and calls join.
    let mut open: Option<usize> = None;
    for item in input {
        match &item.content {
            Content::Reasoning(reasoning) => {
                // Reasoning from other APIs means nothing to this one.
                if reasoning.source != SOURCE || reasoning.text.is_empty() {
                    continue;
                }
                let mut message = Message::new("assistant", "");
                message.thinking = Some(&reasoning.text);
                messages.push(message);
                open = Some(messages.len() - 1);
            }
            Content::Text { text, .. } if item.role == Role::Assistant => {
                match open.map(|at| &mut messages[at]) {
                    Some(message)
                        if message.content.is_empty() && message.tool_calls.is_empty() =>
                    {
                        message.content = text;
                    }
                    _ => {
                        messages.push(Message::new("assistant", text));
                        open = Some(messages.len() - 1);
                    }
                }
            }
            Content::Text { text, .. } => {
                let role = match item.role {
                    Role::Developer => "system",
                    _ => "user",
                };
                messages.push(Message::new(role, text));
                open = None;
            }
            Content::ToolCall(call) => {
                names.insert(&call.id, &call.name);
                let at = match open {
                    Some(at) => at,
                    None => {
                        messages.push(Message::new("assistant", ""));
                        messages.len() - 1
                    }
                };
                messages[at].tool_calls.push(WireCallOut {
                    function: WireFunctionOut {
                        name: &call.name,
                        arguments: freeform::input_object(call),
                    },
                });
                open = Some(at);
            }
            Content::ToolOutput(output) => {
                let mut message = Message::new("tool", &output.content);
                message.tool_name = names.get(output.call_id.as_str()).copied();
                messages.push(message);
                open = None;
            }
        }
    }
    messages
}

// ---------------------------------------------------------------------------
// Stream lines
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct WireLine {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCallIn>>,
}

#[derive(Deserialize)]
struct WireCallIn {
    #[serde(default)]
    id: Option<String>,
    function: WireFunctionIn,
}

#[derive(Deserialize)]
struct WireFunctionIn {
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// Turns `/api/chat` lines into [`ResponseEvent`]s, with no HTTP involved:
/// feed it the lines of [`super::ndjson::decode`] in order.
pub struct LineParser {
    /// Names of the request's freeform tools, whose `input` is unwrapped.
    freeform: Vec<String>,
    /// Thinking not yet emitted.
    thinking: String,
    calls: usize,
}

impl LineParser {
    /// `freeform` names the request's freeform tools, whose calls arrive as
    /// `{"input": "..."}` and are unwrapped to the bare text.
    pub fn new(freeform: Vec<String>) -> Self {
        LineParser {
            freeform,
            thinking: String::new(),
            calls: 0,
        }
    }

    /// Handle one line, queueing what it produces. `Ok(true)` after the
    /// line with `"done": true`; `Err` names what was wrong with the line.
    pub fn on_line(
        &mut self,
        data: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        let line: WireLine = http::parse_frame(data, "line")?;
        if let Some(error) = line.error.filter(|e| !e.is_null()) {
            let message = chat_completions::error_message(&error);
            let report = ServerError::from_json(None, &json!({ "error": error }));
            return Err(chat_completions::mid_stream_error(
                &report,
                &message,
                is_context_overflow,
            ));
        }
        if let Some(message) = line.message {
            if let Some(thinking) = message.thinking {
                self.thinking.push_str(&thinking);
            }
            if let Some(text) = message.content.filter(|t| !t.is_empty()) {
                self.flush_thinking(out);
                out.push_back(ResponseEvent::TextDelta(text));
            }
            for call in message.tool_calls.into_iter().flatten() {
                self.flush_thinking(out);
                self.on_call(call, out);
            }
        }
        if !line.done {
            return Ok(false);
        }
        self.flush_thinking(out);
        let reason = line.done_reason.as_deref().filter(|r| !r.is_empty());
        let mut stop = StopReason::from_wire(reason.unwrap_or("stop"));
        if self.calls > 0 && stop == StopReason::Stop {
            stop = StopReason::ToolCalls;
        }
        // Without the prompt's count the usage would mislead; the engine
        // estimates instead.
        let usage = line.prompt_eval_count.map(|input| Usage {
            input_tokens: input,
            output_tokens: line.eval_count.unwrap_or(0),
            ..Usage::default()
        });
        out.push_back(ResponseEvent::Completed {
            usage,
            stop_reason: stop,
            // Calls arrive whole: none can be cut off.
            incomplete_tool_call: None,
        });
        Ok(true)
    }

    fn on_call(&mut self, call: WireCallIn, out: &mut VecDeque<ResponseEvent>) {
        let id = match call.id.filter(|id| !id.is_empty()) {
            Some(id) => id,
            None => http::made_up_call_id(),
        };
        let name = call.function.name;
        let arguments = match call.function.arguments {
            Value::Null => "{}".to_string(),
            Value::String(text) => text,
            other => other.to_string(),
        };
        let (kind, arguments) = freeform::call(&self.freeform, &name, arguments);
        self.calls += 1;
        let call = ToolCall {
            id,
            name,
            arguments,
            kind,
        };
        http::push_call(out, call, false);
    }

    /// Emit the thinking collected so far, if any, as one reasoning item.
    fn flush_thinking(&mut self, out: &mut VecDeque<ResponseEvent>) {
        if self.thinking.is_empty() {
            return;
        }
        out.push_back(ResponseEvent::Reasoning(Reasoning {
            id: None,
            text: std::mem::take(&mut self.thinking),
            encrypted: None,
            source: SOURCE.to_string(),
        }));
    }
}

impl WireParser for LineParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        self.on_line(&frame.data, out)
    }

    fn terminal(&self) -> &'static str {
        "a line with `\"done\": true`"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{MessageTag, ToolCallKind, ToolFormat, ToolSpec};
    use crate::provider::test_support::{
        self, assert_split_anywhere_decodes_alike, call, decode_reads, output, patch_tool,
        tool_call,
    };

    fn reasoning(text: &str, source: &str) -> HistoryItem {
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(Reasoning {
                id: None,
                text: text.into(),
                encrypted: (source != SOURCE).then(|| "opaque".to_string()),
                source: source.into(),
            }),
        }
    }

    fn request<'a>(input: &'a [HistoryItem], tools: &'a [ToolSpec]) -> ModelRequest<'a> {
        ModelRequest {
            model: "qwen2.5-coder:7b",
            instructions: "You are a coding agent.",
            context_window: 32_768,
            ..test_support::request(input, tools)
        }
    }

    fn body_json(request: &ModelRequest<'_>) -> Value {
        serde_json::from_slice(&build_body(request).expect("encode")).expect("json")
    }

    #[test]
    fn ollama_overflow_errors_are_recognised_in_a_status_and_in_the_stream() {
        // `truncate: false`: the runner's llama.cpp error, quoted in `error`.
        let runner = json!({"error": "{\"error\":{\"code\":400,\"message\":\"request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":8889,\"n_ctx\":4096}}"});
        // `shift: false`, and the older wording.
        let shift = json!({"error": "the prompt is longer than the context length currently available to the model; increase num_ctx"});
        let input = json!({"error": "the input length exceeds the context length"});
        for body in [&runner, &shift, &input] {
            let text = body.to_string();
            assert!(
                is_context_overflow(&ServerError::parse(Some(400), &text)),
                "{text}"
            );
            let err = LineParser::new(Vec::new())
                .on_line(&text, &mut VecDeque::new())
                .expect_err("error line");
            assert!(err.context_overflow && !err.retryable, "{err:?}");
        }
        let missing = json!({"error": "model \"llama3\" not found, try pulling it first"});
        assert!(!is_context_overflow(&ServerError::parse(
            Some(404),
            &missing.to_string()
        )));
    }

    #[test]
    fn request_payload_matches_the_snapshot() {
        let tools = [
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
            patch_tool(),
        ];
        let input = [
            HistoryItem::tagged(
                Role::Developer,
                MessageTag::DeveloperInstructions,
                "Run the tests before you finish.",
            ),
            HistoryItem::text(Role::User, "Fix the bug in src/lib.rs"),
            reasoning("I should read the file first.", SOURCE),
            reasoning("another API's thinking", "anthropic"),
            HistoryItem::text(Role::Assistant, "Reading it."),
            HistoryItem::tool_call(call("call_1", "read_file", "{\"path\":\"src/lib.rs\"}")),
            output("call_1", "pub fn add(a: i32, b: i32) -> i32 { a - b }"),
            HistoryItem::tool_call(tool_call(
                "call_2",
                "apply_patch",
                "*** Begin Patch\n*** End Patch\n",
                ToolCallKind::Freeform,
            )),
            output("call_2", "Done!"),
            HistoryItem::text(Role::Assistant, "Fixed."),
            HistoryItem::text(Role::User, "Summarise as JSON."),
        ];
        let schema = json!({
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
        });
        let mut req = request(&input, &tools);
        req.output_schema = Some(&schema);
        req.temperature = Some(0.2);
        req.max_tokens = Some(2048);
        req.reasoning_effort = Some("high");
        req.context_window = 65_536;
        let expected: Value =
            serde_json::from_str(include_str!("../../tests/fixtures/ollama/request.json"))
                .expect("fixture is JSON");
        let body = body_json(&req);
        assert_eq!(
            body,
            expected,
            "got:\n{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
    }

    #[test]
    fn minimal_body_sends_the_window_and_nothing_optional() {
        let input = [HistoryItem::text(Role::User, "hi")];
        assert_eq!(
            body_json(&request(&input, &[])),
            json!({
                "model": "qwen2.5-coder:7b",
                "messages": [
                    {"role": "system", "content": "You are a coding agent."},
                    {"role": "user", "content": "hi"},
                ],
                "stream": true,
                "truncate": false,
                "options": {"num_ctx": 32768},
                "keep_alive": "10m",
            })
        );
    }

    #[test]
    fn reasoning_effort_maps_to_think_levels() {
        let input = [HistoryItem::text(Role::User, "hi")];
        for (effort, think) in [
            ("minimal", Some("low")),
            ("low", Some("low")),
            ("medium", Some("medium")),
            ("high", Some("high")),
            ("extreme", None),
        ] {
            let mut req = request(&input, &[]);
            req.reasoning_effort = Some(effort);
            let body = body_json(&req);
            assert_eq!(body.get("think").and_then(Value::as_str), think, "{effort}");
        }
    }

    #[test]
    fn messages_group_calls_and_name_tool_outputs() {
        let input = [
            HistoryItem::text(Role::User, "go"),
            // Calls without text open their own assistant message.
            HistoryItem::tool_call(call("a", "list_dir", "{}")),
            HistoryItem::tool_call(call("b", "shell", "")),
            output("a", "src"),
            output("b", "ok"),
            // Arguments that are not a JSON object travel as `input`.
            HistoryItem::tool_call(call("c", "shell", "[\"ls\"]")),
            output("c", "x"),
            output("orphan", "who called me?"),
            HistoryItem::text(Role::Assistant, "one"),
            HistoryItem::text(Role::Assistant, "two"),
            // Reasoning after text starts a new assistant message.
            reasoning("hmm", SOURCE),
            HistoryItem::tool_call(call("d", "shell", "{\"a\":1}")),
            output("d", "done"),
            HistoryItem::text(Role::Tool, "tool text is a user message"),
        ];
        let body = body_json(&request(&input, &[]));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": "list_dir", "arguments": {}}},
                    {"function": {"name": "shell", "arguments": {}}},
                ]},
                {"role": "tool", "content": "src", "tool_name": "list_dir"},
                {"role": "tool", "content": "ok", "tool_name": "shell"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": "shell", "arguments": {"input": "[\"ls\"]"}}},
                ]},
                {"role": "tool", "content": "x", "tool_name": "shell"},
                {"role": "tool", "content": "who called me?"},
                {"role": "assistant", "content": "one"},
                {"role": "assistant", "content": "two"},
                {"role": "assistant", "content": "", "thinking": "hmm", "tool_calls": [
                    {"function": {"name": "shell", "arguments": {"a": 1}}},
                ]},
                {"role": "tool", "content": "done", "tool_name": "shell"},
                {"role": "user", "content": "tool text is a user message"},
            ])
        );
    }

    #[test]
    fn num_ctx_is_replaced_in_an_encoded_body() {
        let input = [HistoryItem::text(Role::User, "hi")];
        let mut req = request(&input, &[]);
        req.temperature = Some(0.1);
        let body = build_body(&req).expect("encode");
        let patched: Value =
            serde_json::from_slice(&with_num_ctx(&body, 131_072).expect("patch")).expect("json");
        assert_eq!(
            patched["options"],
            json!({"num_ctx": 131072, "temperature": 0.1})
        );
        assert_eq!(patched["messages"], body_json(&req)["messages"]);
    }

    // --- /api/show, /api/tags, hints ----------------------------------------

    #[test]
    fn window_comes_from_the_modelfile_then_the_architecture() {
        let show = json!({
            "parameters": "stop                           \"<|im_end|>\"\nnum_ctx                        16384\ntemperature                    0.7",
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
        });
        assert_eq!(window_from_show(&show), Some(16_384));
        let show = json!({
            "parameters": "temperature 0.7",
            "model_info": {
                "general.architecture": "llama",
                "llama.context_length": 131072,
                "llama.embedding_length": 3072,
            },
        });
        assert_eq!(window_from_show(&show), Some(131_072));
        let show = json!({"model_info": {"gemma3.context_length": 8192}});
        assert_eq!(window_from_show(&show), Some(8192), "no architecture key");
        for show in [
            json!({}),
            json!({"parameters": "num_ctx lots", "model_info": {"general.architecture": "x"}}),
            json!({"model_info": {"general.architecture": "x", "x.context_length": 0}}),
        ] {
            assert_eq!(window_from_show(&show), None, "{show}");
        }
    }

    #[test]
    fn model_names_come_from_the_tags_list() {
        let tags = json!({"models": [
            {"name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b", "size": 4683087332u64},
            {"model": "llama3.2:latest"},
            {"size": 1},
        ]});
        assert_eq!(
            model_names(&tags),
            Some(vec!["qwen2.5-coder:7b".into(), "llama3.2:latest".into()])
        );
        assert_eq!(model_names(&json!({"models": []})), Some(vec![]));
        assert_eq!(model_names(&json!({"error": "x"})), None);
    }

    #[test]
    fn hints_name_the_fix() {
        let mut error = ProviderError::Unreachable {
            provider: "ollama".into(),
            url: "http://localhost:11434/api/chat".into(),
            message: "error sending request: Connection refused".into(),
        };
        advise(&mut error);
        let text = error.to_string();
        assert!(
            text.contains("`ollama serve`") && text.contains("OLLAMA_HOST"),
            "{text}"
        );

        let http = |message: &str, model: &str| ProviderError::Http {
            provider: "ollama".into(),
            model: model.into(),
            status: 404,
            message: message.into(),
        };
        let mut error = http(
            "model \"qwen3:8b\" not found, try pulling it first",
            "qwen3:8b",
        );
        advise(&mut error);
        assert!(
            error.to_string().contains("`ollama pull qwen3:8b`"),
            "{error}"
        );
        let mut error = http("404 page not found", "qwen3:8b");
        advise(&mut error);
        let text = error.to_string();
        assert!(
            !text.contains("ollama pull") && text.contains("without /v1"),
            "{text}"
        );

        let mut error = ProviderError::Http {
            provider: "ollama".into(),
            model: "m".into(),
            status: 500,
            message: "boom".into(),
        };
        advise(&mut error);
        assert_eq!(
            error.to_string(),
            "ollama: request for model `m` failed with HTTP 500: boom"
        );
    }

    // --- stream parsing ---------------------------------------------------

    fn parse(freeform: &[&str], lines: &[&str]) -> Result<Vec<ResponseEvent>, FrameError> {
        let mut parser = LineParser::new(freeform.iter().map(|s| s.to_string()).collect());
        let mut out = VecDeque::new();
        for line in lines {
            if parser.on_line(line, &mut out)? {
                break;
            }
        }
        Ok(out.into_iter().collect())
    }

    fn text_line(text: &str) -> String {
        json!({"model": "m", "message": {"role": "assistant", "content": text}, "done": false})
            .to_string()
    }

    fn done_line(reason: &str, prompt: u64, eval: u64) -> String {
        json!({
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": true,
            "done_reason": reason,
            "prompt_eval_count": prompt,
            "eval_count": eval,
        })
        .to_string()
    }

    fn completed(stop: StopReason, usage: Option<(u64, u64)>) -> ResponseEvent {
        ResponseEvent::Completed {
            usage: usage.map(|(input, output)| Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            }),
            stop_reason: stop,
            incomplete_tool_call: None,
        }
    }

    #[test]
    fn text_and_usage_from_the_done_line() {
        let events = parse(
            &[],
            &[
                &text_line("Hel"),
                "",
                &text_line(""),
                &text_line("lo"),
                &done_line("stop", 26, 2),
            ],
        )
        .expect("parse");
        assert_eq!(
            events,
            vec![
                ResponseEvent::TextDelta("Hel".into()),
                ResponseEvent::TextDelta("lo".into()),
                completed(StopReason::Stop, Some((26, 2))),
            ]
        );
    }

    #[test]
    fn whole_tool_calls_get_ids_and_stop_means_tool_calls() {
        let events = parse(
            &["apply_patch"],
            &[
                r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"read_file","arguments":{"path":"a.rs"}}},{"id":"call_x","function":{"index":1,"name":"apply_patch","arguments":{"input":"*** Begin Patch\n"}}}]},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"shell"}}]},"done":false}"#,
                &done_line("stop", 10, 5),
            ],
        )
        .expect("parse");
        assert_eq!(events.len(), 7, "{events:?}");
        let ResponseEvent::ToolCall(first) = &events[1] else {
            panic!("expected a call: {events:?}");
        };
        assert!(first.id.starts_with("call_"), "{}", first.id);
        assert_eq!(
            events[0],
            ResponseEvent::ToolCallStarted {
                id: first.id.clone(),
                name: "read_file".into()
            }
        );
        assert_eq!(first.arguments, "{\"path\":\"a.rs\"}");
        assert_eq!(first.kind, ToolCallKind::Function);
        assert_eq!(
            events[3],
            ResponseEvent::ToolCall(ToolCall {
                id: "call_x".into(),
                name: "apply_patch".into(),
                arguments: "*** Begin Patch\n".into(),
                kind: ToolCallKind::Freeform,
            })
        );
        let ResponseEvent::ToolCall(third) = &events[5] else {
            panic!("expected a call: {events:?}");
        };
        assert_eq!(third.arguments, "{}");
        assert_ne!(third.id, first.id, "made-up ids are unique");
        assert_eq!(events[6], completed(StopReason::ToolCalls, Some((10, 5))));
    }

    #[test]
    fn thinking_becomes_one_reasoning_item_before_what_follows() {
        let events = parse(
            &[],
            &[
                r#"{"message":{"role":"assistant","content":"","thinking":"Let me "},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","thinking":"think."},"done":false}"#,
                &text_line("Answer"),
                r#"{"message":{"role":"assistant","content":"","thinking":"More."},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"shell","arguments":{}}}]},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","thinking":"Last."},"done":true,"done_reason":"stop"}"#,
            ],
        )
        .expect("parse");
        let thought = |text: &str| {
            ResponseEvent::Reasoning(Reasoning {
                id: None,
                text: text.into(),
                encrypted: None,
                source: "ollama".into(),
            })
        };
        assert_eq!(
            events,
            vec![
                thought("Let me think."),
                ResponseEvent::TextDelta("Answer".into()),
                thought("More."),
                ResponseEvent::ToolCallStarted {
                    id: "c".into(),
                    name: "shell".into()
                },
                ResponseEvent::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "shell".into(),
                    arguments: "{}".into(),
                    kind: ToolCallKind::Function,
                }),
                thought("Last."),
                completed(StopReason::ToolCalls, None),
            ]
        );
    }

    #[test]
    fn done_reasons_and_missing_counts() {
        let length = parse(&[], &[&text_line("cut"), &done_line("length", 5, 1)]).expect("parse");
        assert_eq!(length[1], completed(StopReason::Length, Some((5, 1))));
        let bare = parse(&[], &[r#"{"done":true}"#]).expect("parse");
        assert_eq!(bare, vec![completed(StopReason::Stop, None)]);
        let empty_reason =
            parse(&[], &[r#"{"done":true,"done_reason":"","eval_count":3}"#]).expect("parse");
        assert_eq!(empty_reason, vec![completed(StopReason::Stop, None)]);
        // Text on the done line itself still counts.
        let last = parse(
            &[],
            &[r#"{"message":{"role":"assistant","content":"end"},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":1}"#],
        )
        .expect("parse");
        assert_eq!(last[0], ResponseEvent::TextDelta("end".into()));
    }

    #[test]
    fn error_lines_are_errors_retryable_when_busy() {
        let fatal = parse(
            &[],
            &[
                &text_line("so far"),
                r#"{"error":"model requires more system memory (12 GiB) than is available"}"#,
            ],
        )
        .expect_err("error line");
        assert!(!fatal.retryable);
        assert!(
            fatal.message.contains("more system memory"),
            "{}",
            fatal.message
        );
        let busy = parse(
            &[],
            &[r#"{"error":"server busy, please try again.  maximum pending requests exceeded"}"#],
        )
        .expect_err("error line");
        assert!(busy.retryable, "{}", busy.message);
        let nested = parse(&[], &[r#"{"error":{"message":"upstream overloaded"}}"#])
            .expect_err("error line");
        assert!(nested.retryable && nested.message.contains("upstream overloaded"));
    }

    #[test]
    fn malformed_lines_are_fatal_and_named() {
        for line in [
            r#"{"message":{"content":"x"}"#,
            "data: {}",
            r#"{"done":"yes"}"#,
            r#"{"message":{"tool_calls":[{"function":{}}]},"done":false}"#,
        ] {
            let error = parse(&[], &[line]).expect_err(line);
            assert!(!error.retryable);
            assert!(
                error.message.starts_with("malformed line"),
                "{}",
                error.message
            );
            assert!(error.message.contains(line), "{}", error.message);
        }
    }

    #[tokio::test]
    async fn captures_split_at_every_byte_give_identical_events() {
        assert_split_anywhere_decodes_alike(
            Framing::Ndjson,
            || LineParser::new(Vec::new()),
            &[
                include_str!("../../tests/fixtures/ollama/text_llama.ndjson"),
                include_str!("../../tests/fixtures/ollama/tool_calls_qwen.ndjson"),
                include_str!("../../tests/fixtures/ollama/thinking_tool_call_qwen3.ndjson"),
                include_str!("../../tests/fixtures/ollama/length_gpt_oss.ndjson"),
            ],
            true,
        )
        .await;
    }

    #[tokio::test]
    async fn a_character_split_across_reads_arrives_whole() {
        let wire = format!("{}\n{}\n", text_line("naïve 🦀"), done_line("stop", 1, 2));
        let bytes = wire.as_bytes();
        let crab = wire.find('🦀').expect("crab");
        // Cut inside the 4-byte crab and inside the 2-byte ï, in three reads.
        let i = wire.find('ï').expect("i");
        let reads = vec![
            bytes[..i + 1].to_vec(),
            bytes[i + 1..crab + 2].to_vec(),
            bytes[crab + 2..].to_vec(),
        ];
        let events = decode_reads(Framing::Ndjson, LineParser::new(Vec::new()), reads).await;
        assert_eq!(events[0], ResponseEvent::TextDelta("naïve 🦀".into()));
    }

    #[test]
    fn bad_config_fails_at_construction() {
        let info = ProviderInfo::new("ollama", "not a url", super::super::WireApi::Ollama);
        assert!(Ollama::new(info).is_err());
    }
}
