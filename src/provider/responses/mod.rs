//! The OpenAI Responses wire API (`POST {base_url}/responses` with
//! `stream: true` and `store: false`): typed input items, freeform (custom)
//! tools constrained by a grammar, and reasoning items that are carried
//! back to the model encrypted, since the server keeps nothing.
//!
//! [`Responses::stream`] builds the JSON body up front and hands it to the
//! shared HTTP driver ([`Endpoint`]), which connects, retries and decodes
//! the SSE body; [`EventParser`] maps each event onto [`ResponseEvent`]s.
//!
//! Terminal events: `response.completed` and `response.incomplete` (output
//! cut off, e.g. by `max_output_tokens`) end the stream with
//! [`ResponseEvent::Completed`]. `response.failed` and `error` events are
//! errors: retried when their code says the server failed or was
//! overloaded, [`ProviderError::ContextOverflow`] when it says the input is
//! longer than the context window, fatal otherwise.

use super::http::{
    self, Auth, Endpoint, FrameError, Framing, ServerError, Wire, WireParser, MAX_ERROR_CHARS,
};
use super::retry::Jitter;
use super::sse::SseEvent;
use super::{ModelRequest, Provider, ProviderError, ProviderInfo, ResponseEvent, ResponseStream};
use crate::protocol::{
    Content, HistoryItem, Reasoning, Role, StopReason, ToolCall, ToolCallKind, ToolFormat,
    ToolSpec, Usage,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The [`Reasoning::source`] of reasoning this wire API produces; only
/// reasoning from this source is sent back.
pub const REASONING_SOURCE: &str = "responses";

/// Most tool calls a response may have open (added, not yet done) at
/// once. The API streams them one after another; without a cap, a broken
/// stream of calls that never finish made every later event scan all of
/// them (quadratic: 33 s for 50,000 calls, 10 MB, in a fuzz build).
const MAX_OPEN_CALLS: usize = 256;

/// A Responses client for one provider.
pub struct Responses {
    endpoint: Arc<Endpoint>,
}

/// Where Responses requests go and how.
pub(crate) const WIRE: Wire = Wire {
    path: "/responses",
    auth: Auth::Bearer,
    headers: &[],
    framing: Framing::Sse,
    hint: None,
    overflow: is_context_overflow,
};

/// Whether an error (a status, a `response.failed` or an `error` event)
/// says the input does not fit the context window: the code
/// `context_length_exceeded` ("Your input exceeds the context window of
/// this model"), or those words from a compatible server.
pub(crate) fn is_context_overflow(error: &ServerError) -> bool {
    error.code_is("context_length_exceeded")
        || (error.status_in(&[400, 413])
            && error.says_any(&["exceeds the context window", "maximum context length"]))
}

impl Responses {
    /// A client with random retry jitter. No network I/O happens here.
    pub fn new(info: ProviderInfo) -> Result<Self, ProviderError> {
        Self::with_jitter(info, Jitter::random())
    }

    /// A client whose retry jitter comes from `jitter` (tests use a fixed
    /// value to get exact delays).
    pub fn with_jitter(info: ProviderInfo, jitter: Jitter) -> Result<Self, ProviderError> {
        let endpoint = Arc::new(Endpoint::new(info, WIRE, jitter)?);
        Ok(Responses { endpoint })
    }
}

impl Provider for Responses {
    fn id(&self) -> &str {
        self.endpoint.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        self.endpoint
            .stream(build_body(request), request.model, EventParser::new)
    }
}

// ---------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningSettings<'a>>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
}

#[derive(Serialize)]
struct ReasoningSettings<'a> {
    effort: &'a str,
    summary: &'static str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: [Part<'a>; 1],
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
    CustomToolCall {
        call_id: &'a str,
        name: &'a str,
        input: &'a str,
    },
    CustomToolCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
    Reasoning {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        summary: Vec<Part<'a>>,
        encrypted_content: &'a str,
    },
}

/// A typed text: message content (`input_text`, `output_text`) or a
/// reasoning summary (`summary_text`).
#[derive(Serialize)]
struct Part<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireTool<'a> {
    Function {
        name: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        description: &'a str,
        parameters: &'a Value,
        strict: bool,
    },
    Custom {
        name: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        description: &'a str,
        format: Value,
    },
}

/// Serialise `request` as a Responses body.
fn build_body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let reasons = request.reasoning_effort.is_some();
    let has_tools = !request.tools.is_empty();
    let body = Body {
        model: request.model,
        instructions: request.instructions,
        input: build_input(request.input),
        tools: request.tools.iter().map(wire_tool).collect(),
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(request.parallel_tool_calls),
        reasoning: request.reasoning_effort.map(|effort| ReasoningSettings {
            effort,
            summary: "auto",
        }),
        store: false,
        stream: true,
        // With `store: false` the server forgets reasoning; this is how the
        // next request can carry it back.
        include: if reasons {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
        text: request.output_schema.map(|schema| {
            json!({"format": {"type": "json_schema", "name": "output", "schema": schema, "strict": false}})
        }),
        // Reasoning models reject a temperature.
        temperature: request.temperature.filter(|_| !reasons),
        max_output_tokens: request.max_tokens,
    };
    serde_json::to_vec(&body)
}

fn build_input(history: &[HistoryItem]) -> Vec<InputItem<'_>> {
    // How each call was made, so its output gets the matching item type.
    let mut kinds: HashMap<&str, ToolCallKind> = HashMap::new();
    let mut input = Vec::with_capacity(history.len());
    for item in history {
        match &item.content {
            Content::Text { text, .. } => {
                let (role, kind) = match item.role {
                    Role::Assistant => ("assistant", "output_text"),
                    Role::Developer => ("developer", "input_text"),
                    Role::User | Role::Tool => ("user", "input_text"),
                };
                input.push(InputItem::Message {
                    role,
                    content: [Part { kind, text }],
                });
            }
            Content::ToolCall(call) => {
                kinds.insert(&call.id, call.kind);
                input.push(match call.kind {
                    ToolCallKind::Function => InputItem::FunctionCall {
                        call_id: &call.id,
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                    ToolCallKind::Freeform => InputItem::CustomToolCall {
                        call_id: &call.id,
                        name: &call.name,
                        input: &call.arguments,
                    },
                });
            }
            Content::ToolOutput(output) => {
                let call_id = output.call_id.as_str();
                let output = output.content.as_str();
                input.push(match kinds.get(call_id) {
                    Some(ToolCallKind::Freeform) => {
                        InputItem::CustomToolCallOutput { call_id, output }
                    }
                    _ => InputItem::FunctionCallOutput { call_id, output },
                });
            }
            Content::Reasoning(reasoning) => {
                if let Some(item) = reasoning_item(reasoning) {
                    input.push(item);
                }
            }
        }
    }
    input
}

/// Reasoning goes back only when it came from this API with its encrypted
/// content: with `store: false` the server cannot look an item up by id,
/// so an item without it would be rejected.
fn reasoning_item(reasoning: &Reasoning) -> Option<InputItem<'_>> {
    if reasoning.source != REASONING_SOURCE {
        return None;
    }
    let encrypted_content = reasoning.encrypted.as_deref()?;
    let summary = if reasoning.text.is_empty() {
        Vec::new()
    } else {
        vec![Part {
            kind: "summary_text",
            text: &reasoning.text,
        }]
    };
    Some(InputItem::Reasoning {
        id: reasoning.id.as_deref(),
        summary,
        encrypted_content,
    })
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    match &tool.format {
        ToolFormat::Function { parameters } => WireTool::Function {
            name: &tool.name,
            description: &tool.description,
            parameters,
            strict: false,
        },
        ToolFormat::Freeform { syntax, definition } => WireTool::Custom {
            name: &tool.name,
            description: &tool.description,
            format: if definition.is_empty() {
                json!({"type": "text"})
            } else {
                json!({"type": "grammar", "syntax": syntax, "definition": definition})
            },
        },
    }
}

// ---------------------------------------------------------------------------
// Stream events
// ---------------------------------------------------------------------------

/// A `function_call` or `custom_tool_call` output item.
#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    /// Function calls: the JSON arguments.
    #[serde(default)]
    arguments: Option<String>,
    /// Custom tool calls: the raw input.
    #[serde(default)]
    input: Option<String>,
}

#[derive(Deserialize)]
struct WireReasoning {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    summary: Option<Vec<WirePart>>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Vec<WirePart>>,
}

#[derive(Deserialize)]
struct WirePart {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// The `response` object of the terminal events.
#[derive(Deserialize, Default)]
struct WireResponse {
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<WireIncomplete>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<WireTokenDetails>,
}

#[derive(Deserialize)]
struct WireTokenDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct WireIncomplete {
    #[serde(default)]
    reason: Option<String>,
}

/// A tool call announced by `response.output_item.added` whose complete
/// item has not arrived yet.
struct OpenCall {
    /// The output item's id (`fc_...`), which argument deltas name.
    item_id: Option<String>,
    call_id: String,
    name: String,
    /// Arguments (or custom input) gathered from deltas.
    arguments: String,
}

/// Turns Responses SSE events into [`ResponseEvent`]s, with no HTTP
/// involved: feed it the events of [`super::sse::decode`] in order.
pub struct EventParser {
    open: Vec<OpenCall>,
    /// Whether a complete tool call was emitted (the stop reason).
    made_calls: bool,
    /// Whether text arrived as deltas; if none did, a finished message
    /// item's text is emitted instead.
    saw_text_delta: bool,
}

impl Default for EventParser {
    fn default() -> Self {
        EventParser::new()
    }
}

impl EventParser {
    pub fn new() -> Self {
        EventParser {
            open: Vec::new(),
            made_calls: false,
            saw_text_delta: false,
        }
    }

    fn on_item_added(
        &mut self,
        item: &Value,
        kind: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        if !matches!(item_type(item), Some("function_call" | "custom_tool_call")) {
            return Ok(());
        }
        let call: WireCall = parse_part(item, kind)?;
        if self.open.len() >= MAX_OPEN_CALLS {
            return Err(FrameError::fatal(format!(
                "more than {MAX_OPEN_CALLS} tool calls open at once"
            )));
        }
        let call_id = call.call_id.unwrap_or_else(http::made_up_call_id);
        let name = call.name.unwrap_or_default();
        out.push_back(ResponseEvent::ToolCallStarted {
            id: call_id.clone(),
            name: name.clone(),
        });
        self.open.push(OpenCall {
            item_id: call.id,
            call_id,
            name,
            arguments: String::new(),
        });
        Ok(())
    }

    /// The open call an argument event is about: by item id, else the
    /// latest one.
    fn open_call(&mut self, item_id: Option<&str>) -> Option<&mut OpenCall> {
        let position = item_id
            .and_then(|id| {
                self.open
                    .iter()
                    .position(|c| c.item_id.as_deref() == Some(id))
            })
            .or_else(|| self.open.len().checked_sub(1))?;
        self.open.get_mut(position)
    }

    fn on_item_done(
        &mut self,
        item: &Value,
        kind: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        match item_type(item) {
            Some(item_kind @ ("function_call" | "custom_tool_call")) => {
                let call: WireCall = parse_part(item, kind)?;
                let position = self.open.iter().position(|c| {
                    (call.id.is_some() && c.item_id == call.id)
                        || call.call_id.as_deref() == Some(c.call_id.as_str())
                });
                let open = position.map(|p| self.open.remove(p));
                let started = open.is_some();
                let (open_id, open_name, open_arguments) = match open {
                    Some(o) => (Some(o.call_id), o.name, o.arguments),
                    None => (None, String::new(), String::new()),
                };
                let id = call
                    .call_id
                    .or(open_id)
                    .unwrap_or_else(http::made_up_call_id);
                let name = call.name.filter(|n| !n.is_empty()).unwrap_or(open_name);
                let (arguments, kind) = if item_kind == "function_call" {
                    (call.arguments, ToolCallKind::Function)
                } else {
                    (call.input, ToolCallKind::Freeform)
                };
                let call = ToolCall {
                    id,
                    name,
                    arguments: arguments.unwrap_or(open_arguments),
                    kind,
                };
                http::push_call(out, call, started);
                self.made_calls = true;
            }
            Some("reasoning") => {
                let reasoning: WireReasoning = parse_part(item, kind)?;
                out.push_back(ResponseEvent::Reasoning(Reasoning {
                    id: reasoning.id,
                    text: joined_text(reasoning.summary, "summary_text", "\n\n"),
                    encrypted: reasoning.encrypted_content,
                    source: REASONING_SOURCE.to_string(),
                }));
            }
            Some("message") if !self.saw_text_delta => {
                let message: WireMessage = parse_part(item, kind)?;
                let text = joined_text(message.content, "output_text", "");
                if !text.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `response.completed` or `response.incomplete`.
    fn complete(
        &mut self,
        event: &Value,
        kind: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let response: WireResponse = match event.get("response") {
            Some(response) => parse_part(response, kind)?,
            None => WireResponse::default(),
        };
        let usage = response.usage.map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.input_tokens_details.map_or(0, |d| d.cached_tokens),
            ..Usage::default()
        });
        let (stop_reason, incomplete_tool_call) = if kind == "response.incomplete" {
            let reason = response
                .incomplete_details
                .and_then(|d| d.reason)
                .unwrap_or_else(|| "incomplete".to_string());
            // A call still being written when the output was cut off.
            let cut = self.open.first().map(|c| {
                if c.name.is_empty() {
                    "(unnamed tool call)".to_string()
                } else {
                    c.name.clone()
                }
            });
            (StopReason::from_wire(&reason), cut)
        } else if self.made_calls {
            (StopReason::ToolCalls, None)
        } else {
            (StopReason::Stop, None)
        };
        out.push_back(ResponseEvent::Completed {
            usage,
            stop_reason,
            incomplete_tool_call,
        });
        Ok(())
    }
}

/// The fields of a text delta event (other fields are skipped unread).
#[derive(Deserialize)]
struct TextDeltaEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    delta: Cow<'a, str>,
}

impl WireParser for EventParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = frame.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        // Most events are text deltas: read those without building a tree.
        if let Ok(TextDeltaEvent { kind, delta }) = serde_json::from_str::<TextDeltaEvent>(data) {
            if kind == "response.output_text.delta" || kind == "response.refusal.delta" {
                self.saw_text_delta = true;
                if !delta.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(delta.into_owned()));
                }
                return Ok(false);
            }
        }
        let event: Value = http::parse_frame(data, "event")?;
        // The `type` field names the event; the SSE `event:` line repeats it.
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&frame.event);
        match kind {
            // A refusal is what the model says instead of an answer.
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = field_str(&event, "delta", kind)?;
                self.saw_text_delta = true;
                if !delta.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(delta.to_string()));
                }
            }
            "response.output_item.added" => {
                self.on_item_added(field(&event, "item", kind)?, kind, out)?;
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let delta = field_str(&event, "delta", kind)?;
                let item_id = event.get("item_id").and_then(Value::as_str);
                if let Some(call) = self.open_call(item_id) {
                    call.arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let name = if kind.ends_with("arguments.done") {
                    "arguments"
                } else {
                    "input"
                };
                let whole = field_str(&event, name, kind)?;
                let item_id = event.get("item_id").and_then(Value::as_str);
                if let Some(call) = self.open_call(item_id) {
                    call.arguments = whole.to_string();
                }
            }
            "response.output_item.done" => {
                self.on_item_done(field(&event, "item", kind)?, kind, out)?;
            }
            "response.completed" | "response.incomplete" => {
                self.complete(&event, kind, out)?;
                return Ok(true);
            }
            "response.failed" => {
                let error = event.get("response").and_then(|r| r.get("error"));
                let code = error.and_then(|e| e.get("code")).and_then(Value::as_str);
                let message = event.get("response").and_then(http::json_error_message);
                let overflow =
                    error.is_some_and(|e| is_context_overflow(&ServerError::from_json(None, e)));
                return Err(server_error("the response failed", code, message, overflow));
            }
            "error" => {
                // `{"type":"error","code":..,"message":..}`, or the same
                // nested under `error` (where `type` may be the only code).
                let nested = event.get("error");
                let code = [
                    event.get("code"),
                    nested.and_then(|e| e.get("code")),
                    nested.and_then(|e| e.get("type")),
                ]
                .into_iter()
                .flatten()
                .find_map(Value::as_str);
                let message = http::json_error_message(&event);
                let overflow = is_context_overflow(&ServerError::from_json(None, &event))
                    || code == Some("context_length_exceeded");
                return Err(server_error(
                    "the server reported an error mid-stream",
                    code,
                    message,
                    overflow,
                ));
            }
            // response.created, response.in_progress, content parts,
            // reasoning summary deltas, text done, and future events.
            _ => {}
        }
        Ok(false)
    }

    fn terminal(&self) -> &'static str {
        "`response.completed`"
    }
}

fn item_type(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

/// The texts of the parts of type `kind`, joined with `separator`.
fn joined_text(parts: Option<Vec<WirePart>>, kind: &str, separator: &str) -> String {
    parts
        .into_iter()
        .flatten()
        .filter(|p| p.kind == kind)
        .filter_map(|p| p.text)
        .collect::<Vec<_>>()
        .join(separator)
}

fn field<'v>(event: &'v Value, name: &str, kind: &str) -> Result<&'v Value, FrameError> {
    event
        .get(name)
        .ok_or_else(|| FrameError::fatal(format!("malformed `{kind}` event: no `{name}`")))
}

fn field_str<'v>(event: &'v Value, name: &str, kind: &str) -> Result<&'v str, FrameError> {
    field(event, name, kind)?.as_str().ok_or_else(|| {
        FrameError::fatal(format!(
            "malformed `{kind}` event: `{name}` is not a string"
        ))
    })
}

fn parse_part<T: DeserializeOwned>(value: &Value, kind: &str) -> Result<T, FrameError> {
    T::deserialize(value).map_err(|e| {
        FrameError::fatal(format!(
            "malformed `{kind}` event ({e}): `{}`",
            http::truncate_chars(&value.to_string(), MAX_ERROR_CHARS / 2)
        ))
    })
}

/// An error the server reported in the stream: a context overflow (as
/// [`is_context_overflow`] decided), or by its code a transient failure
/// worth retrying, or fatal.
fn server_error(
    what: &str,
    code: Option<&str>,
    message: Option<String>,
    overflow: bool,
) -> FrameError {
    let message = http::truncate_chars(
        message.as_deref().unwrap_or("no error message"),
        MAX_ERROR_CHARS,
    );
    let text = match code {
        Some(code) => format!("{what}: {message} ({code})"),
        None => format!("{what}: {message}"),
    };
    if overflow {
        return FrameError::context_overflow(message);
    }
    match code {
        Some(
            "server_error"
            | "internal_error"
            | "server_is_overloaded"
            | "overloaded"
            | "rate_limit_exceeded"
            | "slow_down",
        ) => FrameError::retryable(text),
        _ => FrameError::fatal(text),
    }
}

#[cfg(test)]
mod tests;
