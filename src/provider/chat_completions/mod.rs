//! The OpenAI Chat Completions wire API (`POST {base_url}/chat/completions`
//! with `stream: true`), spoken by OpenAI, OpenRouter, vLLM, LiteLLM, the
//! llama.cpp server and Ollama's `/v1`.
//!
//! [`ChatCompletions::stream`] builds the JSON body up front, then returns a
//! stream that connects, retries failures that happen before the first body
//! byte (announcing each with [`ResponseEvent::Retrying`], whose `attempt`
//! counts retries from 1, before sleeping), decodes the SSE body and ends
//! after [`ResponseEvent::Completed`] or its first error.
//!
//! Retried: connection failures, 429, 5xx, and a stall or reset before the
//! first body byte. Never retried: other statuses (401/403 become
//! [`ProviderError::Auth`]) and anything after a body byte arrived. When
//! retries run out the error is [`ProviderError::RetriesExhausted`]; with
//! `max_retries = 0` it is the failure itself. Error texts never contain the
//! API key.

use super::freeform;
use super::http::{
    self, Auth, Endpoint, FrameError, Framing, ServerError, Wire, WireParser, MAX_ERROR_CHARS,
};
use super::retry::Jitter;
use super::sse::SseEvent;
use super::windows::{self, Windows};
use super::{
    MaxTokensParam, ModelRequest, Provider, ProviderError, ProviderInfo, ResponseEvent,
    ResponseStream,
};
use crate::protocol::{
    Content, HistoryItem, Role, StopReason, ToolCall, ToolCallKind, ToolFormat, ToolSpec, Usage,
};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// A Chat Completions client for one provider.
pub struct ChatCompletions {
    endpoint: Arc<Endpoint>,
    /// Context windows the server's `/models` list gave, by model.
    windows: Arc<Windows>,
}

/// Where Chat Completions requests go and how.
pub(crate) const WIRE: Wire = Wire {
    path: "/chat/completions",
    auth: Auth::Bearer,
    headers: &[],
    framing: Framing::Sse,
    hint: None,
    overflow: is_context_overflow,
};

/// How OpenAI and the servers that speak its Chat Completions API say that
/// a request is larger than the context window (lower case).
const OVERFLOW_PHRASES: &[&str] = &[
    // OpenAI, vLLM, DeepSeek, OpenRouter, Groq: "This model's maximum
    // context length is N tokens. However, ...".
    "maximum context length",
    "context_length_exceeded",
    // llama.cpp server: "request (N tokens) exceeds the available context
    // size (M tokens)"; older versions: "Context size has been exceeded."
    "exceeds the available context size",
    "context size has been exceeded",
    // LiteLLM's exception name.
    "contextwindowexceedederror",
    // Anthropic models behind an OpenAI-compatible proxy.
    "prompt is too long",
    "exceed context limit",
    // Ollama's `/v1`.
    "longer than the context length",
    "exceeds the context window",
];

/// Whether an error says the request does not fit the context window:
/// OpenAI's `context_length_exceeded` code, llama.cpp's
/// `exceed_context_size_error` type, or the words compatible servers use.
pub(crate) fn is_context_overflow(error: &ServerError) -> bool {
    error.code_is("context_length_exceeded")
        || error.kind_is("exceed_context_size_error")
        || (error.status_in(&[400, 413, 422, 500]) && error.says_any(OVERFLOW_PHRASES))
}

impl ChatCompletions {
    /// A client with random retry jitter. No network I/O happens here.
    pub fn new(info: ProviderInfo) -> Result<Self, ProviderError> {
        Self::with_jitter(info, Jitter::random())
    }

    /// A client whose retry jitter comes from `jitter` (tests use a fixed
    /// value to get exact delays).
    pub fn with_jitter(info: ProviderInfo, jitter: Jitter) -> Result<Self, ProviderError> {
        let endpoint = Arc::new(Endpoint::new(info, WIRE, jitter)?);
        Ok(ChatCompletions {
            endpoint,
            windows: Arc::default(),
        })
    }
}

impl Provider for ChatCompletions {
    fn id(&self) -> &str {
        self.endpoint.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        let freeform = freeform::names(request.tools);
        let limit_field = self
            .endpoint
            .info
            .max_tokens_param
            .unwrap_or(request.max_tokens_param);
        let body = build_body(limit_field, request);
        let parser = move || ChunkParser::new(freeform.clone());
        if !request.context_window_is_default {
            return self.endpoint.stream(body, request.model, parser);
        }
        // A model the catalog does not know: an OpenAI-compatible server
        // (vLLM, LM Studio, OpenRouter, ...) may say its window in `/models`.
        let endpoint = Arc::clone(&self.endpoint);
        let windows = Arc::clone(&self.windows);
        let model = request.model.to_string();
        let start = async move {
            let asked = windows::from_models_list(&endpoint, &model);
            let window = windows.get(&model, "`/models`", asked).await;
            let rest = endpoint.stream(body, &model, parser);
            match window {
                Some(window) => windows::announce(window, rest),
                None => rest,
            }
        };
        Box::pin(futures::stream::once(start).flatten())
    }
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
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> Message<'a> {
    fn text(role: &'static str, content: &'a str) -> Self {
        Message {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

#[derive(Serialize)]
pub(crate) struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    parameters: Cow<'a, Value>,
}

/// Serialise `request` as a Chat Completions body, with the output limit
/// in `limit_field`.
fn build_body(
    limit_field: MaxTokensParam,
    request: &ModelRequest<'_>,
) -> serde_json::Result<Vec<u8>> {
    let uses_completion_tokens = limit_field == MaxTokensParam::MaxCompletionTokens;
    let body = Body {
        model: request.model,
        messages: build_messages(request.instructions, request.input),
        tools: request.tools.iter().map(wire_tool).collect(),
        parallel_tool_calls: (!request.tools.is_empty()).then_some(request.parallel_tool_calls),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        temperature: request.temperature,
        max_tokens: request.max_tokens.filter(|_| !uses_completion_tokens),
        max_completion_tokens: request.max_tokens.filter(|_| uses_completion_tokens),
        response_format: request.output_schema.map(|schema| {
            json!({
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": schema, "strict": false},
            })
        }),
    };
    serde_json::to_vec(&body)
}

fn build_messages<'a>(instructions: &'a str, input: &'a [HistoryItem]) -> Vec<Message<'a>> {
    let mut messages = Vec::with_capacity(input.len() + 1);
    if !instructions.is_empty() {
        messages.push(Message::text("system", instructions));
    }
    // The assistant message that following tool calls join, if any.
    let mut open_assistant: Option<usize> = None;
    for item in input {
        match &item.content {
            // Chat Completions has no place for another API's reasoning.
            Content::Reasoning(_) => {}
            Content::Text { text, .. } => {
                let role = match item.role {
                    Role::Assistant => "assistant",
                    Role::Developer => "system",
                    Role::User | Role::Tool => "user",
                };
                messages.push(Message::text(role, text));
                open_assistant = (item.role == Role::Assistant).then(|| messages.len() - 1);
            }
            Content::ToolCall(call) => {
                let arguments = match call.kind {
                    ToolCallKind::Function => Cow::Borrowed(call.arguments.as_str()),
                    // Freeform tools are offered as functions taking `input`.
                    ToolCallKind::Freeform => {
                        Cow::Owned(json!({ "input": call.arguments }).to_string())
                    }
                };
                let wire = WireToolCall {
                    id: &call.id,
                    kind: "function",
                    function: WireFunctionCall {
                        name: &call.name,
                        arguments,
                    },
                };
                let index = match open_assistant {
                    Some(index) => index,
                    None => {
                        messages.push(Message {
                            role: "assistant",
                            content: None,
                            tool_calls: Vec::new(),
                            tool_call_id: None,
                        });
                        messages.len() - 1
                    }
                };
                let message = &mut messages[index];
                if message.content == Some("") {
                    message.content = None;
                }
                message.tool_calls.push(wire);
                open_assistant = Some(index);
            }
            Content::ToolOutput(output) => {
                messages.push(Message {
                    role: "tool",
                    content: Some(&output.content),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(&output.call_id),
                });
                open_assistant = None;
            }
        }
    }
    messages
}

/// A tool as a Chat Completions function (Ollama's `/api/chat` takes the
/// same shape); a freeform tool becomes a function taking a string `input`.
pub(crate) fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    let parameters = match &tool.format {
        ToolFormat::Function { parameters } => Cow::Borrowed(parameters),
        ToolFormat::Freeform { syntax, definition } => {
            Cow::Owned(freeform::parameters(syntax, definition))
        }
    };
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &tool.name,
            description: &tool.description,
            parameters,
        },
    }
}

// ---------------------------------------------------------------------------
// Stream chunks
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WireTokenDetails>,
}

#[derive(Deserialize)]
struct WireTokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A tool call being assembled from deltas.
struct PartialCall {
    /// The `index` the server gave it.
    wire_index: usize,
    id: String,
    name: String,
    arguments: String,
    /// Whether `ToolCallStarted` was emitted.
    started: bool,
}

/// Turns Chat Completions SSE events into [`ResponseEvent`]s, with no HTTP
/// involved: feed it the events of [`sse::decode`](super::sse::decode) in order.
pub struct ChunkParser {
    /// Names of the request's freeform tools, whose `input` is unwrapped.
    freeform: Vec<String>,
    calls: Vec<PartialCall>,
    /// Where in `calls` the latest call with each wire index, and with each
    /// id, is (scanning `calls` for every delta made a stream of many
    /// calls quadratic), and one more than the highest wire index.
    at_index: HashMap<usize, usize>,
    with_id: HashMap<String, usize>,
    next_index: usize,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    incomplete: Option<String>,
}

impl ChunkParser {
    /// `freeform` names the request's freeform tools, whose calls arrive as
    /// `{"input": "..."}` and are unwrapped to the bare text.
    pub fn new(freeform: Vec<String>) -> Self {
        ChunkParser {
            freeform,
            calls: Vec::new(),
            at_index: HashMap::new(),
            with_id: HashMap::new(),
            next_index: 0,
            usage: None,
            stop: None,
            incomplete: None,
        }
    }

    /// Handle one SSE event, queueing what it produces. `Ok(true)` after the
    /// terminal `[DONE]`; `Err` names what was wrong with the event.
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            if self.stop.is_none() {
                // Some servers end without a finish_reason.
                self.finish("stop", out);
            }
            out.push_back(ResponseEvent::Completed {
                usage: self.usage.take(),
                stop_reason: self.stop.take().unwrap_or(StopReason::Stop),
                incomplete_tool_call: self.incomplete.take(),
            });
            return Ok(true);
        }
        let chunk: WireChunk = http::parse_frame(data, "chunk")?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            let report = ServerError::from_json(None, &json!({ "error": error }));
            return Err(mid_stream_error(
                &report,
                &error_message(error),
                is_context_overflow,
            ));
        }
        if event.event == "error" {
            let report = ServerError::parse(None, data);
            return Err(mid_stream_error(&report, data, is_context_overflow));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                ..Usage::default()
            });
        }
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
                for piece in delta.tool_calls.into_iter().flatten() {
                    self.on_tool_call_delta(piece, out);
                }
            }
            if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
                if self.stop.is_none() {
                    self.finish(reason, out);
                }
            }
        }
        Ok(false)
    }

    fn on_tool_call_delta(&mut self, piece: WireToolCallDelta, out: &mut VecDeque<ResponseEvent>) {
        let id = piece.id.filter(|id| !id.is_empty());
        let (name, arguments) = match piece.function {
            Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments),
            None => (None, None),
        };
        let position = match self.position_for(piece.index, id.as_deref()) {
            Some(position) => position,
            None => {
                let wire_index = piece.index.unwrap_or(self.next_index);
                self.next_index = self.next_index.max(wire_index.saturating_add(1));
                self.at_index.insert(wire_index, self.calls.len());
                self.calls.push(PartialCall {
                    wire_index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        // The first id and name win; servers that repeat them are ignored.
        if call.id.is_empty() {
            if let Some(id) = id {
                let latest = self.with_id.entry(id.clone()).or_insert(position);
                *latest = (*latest).max(position);
                call.id = id;
            }
        }
        if call.name.is_empty() {
            if let Some(name) = name {
                call.name = name;
            }
        }
        if let Some(arguments) = arguments {
            call.arguments.push_str(&arguments);
        }
        if !call.started && !call.id.is_empty() && !call.name.is_empty() {
            call.started = true;
            out.push_back(ResponseEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    /// Which call a delta continues, `None` for a new one.
    fn position_for(&self, index: Option<usize>, id: Option<&str>) -> Option<usize> {
        let same_id = |c: &PartialCall| id.is_some_and(|id| c.id == id);
        match index {
            Some(index) => {
                let position = *self.at_index.get(&index)?;
                let call = &self.calls[position];
                // A different id on a used index is a new call (some servers
                // put every call at index 0).
                match id {
                    Some(_) if !call.id.is_empty() && !same_id(call) => None,
                    _ => Some(position),
                }
            }
            None => match id {
                Some(id) => self.with_id.get(id).copied(),
                None => self.calls.len().checked_sub(1),
            },
        }
    }

    /// The choice finished: emit its complete tool calls in index order.
    fn finish(&mut self, reason: &str, out: &mut VecDeque<ResponseEvent>) {
        let mut stop = StopReason::from_wire(reason);
        let mut calls = std::mem::take(&mut self.calls);
        self.at_index.clear();
        self.with_id.clear();
        self.next_index = 0;
        // Stable: calls sharing an index keep their arrival order.
        calls.sort_by_key(|c| c.wire_index);
        if stop == StopReason::Length {
            // The output limit hit while the last call was being written.
            if let Some(cut) = calls.pop() {
                self.incomplete = Some(if cut.name.is_empty() {
                    "(unnamed tool call)".to_string()
                } else {
                    cut.name
                });
            }
        }
        if !calls.is_empty() && stop == StopReason::Stop {
            // Some servers say "stop" even when they call tools.
            stop = StopReason::ToolCalls;
        }
        for (n, mut call) in calls.into_iter().enumerate() {
            if call.id.is_empty() {
                call.id = format!("{}_{n}", http::made_up_call_id());
            }
            let (kind, arguments) = freeform::call(&self.freeform, &call.name, call.arguments);
            let made = ToolCall {
                id: call.id,
                name: call.name,
                arguments,
                kind,
            };
            http::push_call(out, made, call.started);
        }
        self.stop = Some(stop);
    }
}

impl WireParser for ChunkParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        self.on_event(frame, out)
    }

    fn terminal(&self) -> &'static str {
        "`data: [DONE]`"
    }
}

/// The message of an `error` payload in the stream (a string, or an object
/// with a `message`), else the payload as JSON.
pub(crate) fn error_message(error: &Value) -> String {
    http::json_error_message(&json!({ "error": error })).unwrap_or_else(|| error.to_string())
}

/// An error the server reported inside the stream (`error`, saying
/// `message`): a context overflow when the wire API's `overflow` classifier
/// says so; retryable when it says the server is overloaded, busy or
/// failed; fatal otherwise. OpenAI-style servers (vLLM, OpenRouter,
/// LiteLLM, Ollama) name the failure in free text, so the error's text is
/// searched for the words they use.
pub(crate) fn mid_stream_error(
    error: &ServerError,
    message: &str,
    overflow: fn(&ServerError) -> bool,
) -> FrameError {
    let message = http::truncate_chars(message, MAX_ERROR_CHARS);
    if overflow(error) {
        return FrameError::context_overflow(message);
    }
    let text = format!("the server reported an error mid-stream: {message}");
    let transient = [
        "overloaded",
        "busy",
        "server_error",
        "internal",
        "rate_limit",
        "timeout",
        "unavailable",
    ]
    .iter()
    .any(|s| error.text.contains(s));
    if transient {
        FrameError::retryable(text)
    } else {
        FrameError::fatal(text)
    }
}

#[cfg(test)]
mod tests;
