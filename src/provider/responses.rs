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
mod tests {
    use super::*;
    use crate::provider::test_support::{
        assert_split_anywhere_decodes_alike, decode_reads, frame, output, request, started,
        tool_call,
    };

    fn reasoning(source: &str, encrypted: Option<&str>) -> HistoryItem {
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(Reasoning {
                id: Some("rs_1".into()),
                text: "thought".into(),
                encrypted: encrypted.map(str::to_string),
                source: source.into(),
            }),
        }
    }

    fn body_json(request: &ModelRequest<'_>) -> Value {
        serde_json::from_slice(&build_body(request).expect("encode")).expect("json")
    }

    // --- request body -----------------------------------------------------

    #[test]
    fn context_length_exceeded_is_an_overflow_in_a_status() {
        let body = json!({"error": {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}});
        assert!(is_context_overflow(&ServerError::parse(
            Some(400),
            &body.to_string()
        )));
        let other = json!({"error": {"message": "No tool call found for function call output with call_id call_1.",
            "type": "invalid_request_error", "param": "input", "code": null}});
        assert!(!is_context_overflow(&ServerError::parse(
            Some(400),
            &other.to_string()
        )));
    }

    #[test]
    fn minimal_body_has_no_tool_or_reasoning_fields() {
        let input = [HistoryItem::text(Role::User, "hi")];
        assert_eq!(
            body_json(&request(&input, &[])),
            json!({
                "model": "m1",
                "instructions": "Be brief.",
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
                "store": false,
                "stream": true,
            })
        );
    }

    #[test]
    fn reasoning_settings_include_encrypted_content_and_drop_temperature() {
        let input = [HistoryItem::text(Role::User, "hi")];
        let mut req = request(&input, &[]);
        req.temperature = Some(0.2);
        assert_eq!(body_json(&req)["temperature"], json!(0.2));
        req.reasoning_effort = Some("high");
        let body = body_json(&req);
        assert!(body.get("temperature").is_none(), "{body}");
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    }

    #[test]
    fn outputs_match_their_call_kind_and_foreign_reasoning_is_dropped() {
        let input = [
            reasoning("anthropic", Some("sig")),
            reasoning("responses", None),
            reasoning("responses", Some("enc")),
            HistoryItem::tool_call(tool_call(
                "p",
                "apply_patch",
                "*** Begin Patch",
                ToolCallKind::Freeform,
            )),
            HistoryItem::tool_call(tool_call("f", "read", "{}", ToolCallKind::Function)),
            output("f", "one"),
            output("p", "two"),
            output("orphan", "three"),
            HistoryItem::text(Role::Tool, "odd"),
        ];
        let body = body_json(&request(&input, &[]));
        assert_eq!(
            body["input"],
            json!([
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}], "encrypted_content": "enc"},
                {"type": "custom_tool_call", "call_id": "p", "name": "apply_patch", "input": "*** Begin Patch"},
                {"type": "function_call", "call_id": "f", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "f", "output": "one"},
                {"type": "custom_tool_call_output", "call_id": "p", "output": "two"},
                {"type": "function_call_output", "call_id": "orphan", "output": "three"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "odd"}]},
            ])
        );
    }

    #[test]
    fn freeform_tool_without_a_grammar_is_plain_text() {
        let tools = [ToolSpec {
            name: "notes".into(),
            description: String::new(),
            format: ToolFormat::Freeform {
                syntax: "lark".into(),
                definition: String::new(),
            },
            read_only: true,
        }];
        let input = [HistoryItem::text(Role::User, "hi")];
        let body = body_json(&request(&input, &tools));
        assert_eq!(
            body["tools"],
            json!([{"type": "custom", "name": "notes", "format": {"type": "text"}}])
        );
        assert_eq!(body["tool_choice"], json!("auto"));
        assert_eq!(body["parallel_tool_calls"], json!(true));
    }

    // --- stream events ----------------------------------------------------

    /// Feed `events` to a parser; the events so far and the error, if any.
    fn parse(events: &[Value]) -> (Vec<ResponseEvent>, Option<FrameError>) {
        let mut parser = EventParser::new();
        let mut out = VecDeque::new();
        for event in events {
            match parser.on_frame(&frame(event), &mut out) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return (out.into_iter().collect(), Some(e)),
            }
        }
        (out.into_iter().collect(), None)
    }

    fn parse_ok(events: &[Value]) -> Vec<ResponseEvent> {
        let (out, error) = parse(events);
        assert!(error.is_none(), "{error:?} after {out:?}");
        out
    }

    fn parse_err(events: &[Value]) -> FrameError {
        let (out, error) = parse(events);
        error.unwrap_or_else(|| panic!("expected an error, got {out:?}"))
    }

    fn completed(usage: Option<Value>) -> Value {
        json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "usage": usage}})
    }

    fn added(item: Value) -> Value {
        json!({"type": "response.output_item.added", "output_index": 0, "item": item})
    }

    fn done(item: Value) -> Value {
        json!({"type": "response.output_item.done", "output_index": 0, "item": item})
    }

    fn text(delta: &str) -> Value {
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": delta})
    }

    fn fc(id: &str, call_id: &str, name: &str, arguments: &str) -> Value {
        json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments})
    }

    fn end(stop_reason: StopReason) -> ResponseEvent {
        ResponseEvent::Completed {
            usage: None,
            stop_reason,
            incomplete_tool_call: None,
        }
    }

    #[test]
    fn at_most_256_calls_are_open_at_once() {
        // Found while fuzzing the wire parsers, by a scaling check (fuzz
        // inputs are too small to show it): argument events for calls
        // that are not open scanned every open call.
        let call = |i: usize| fc(&format!("fc_{i}"), &format!("c{i}"), "f", "{}");
        let mut events: Vec<Value> = (0..256).map(|i| added(call(i))).collect();
        events.push(completed(None));
        assert!(matches!(
            parse_ok(&events).last(),
            Some(ResponseEvent::Completed { .. })
        ));
        events.insert(256, added(call(256)));
        let error = parse_err(&events);
        assert_eq!(error.message, "more than 256 tool calls open at once");
        // Calls one after another are not limited.
        let mut events: Vec<Value> = (0..1000)
            .flat_map(|i| [added(call(i)), done(call(i))])
            .collect();
        events.push(completed(None));
        let calls = parse_ok(&events)
            .iter()
            .filter(|e| matches!(e, ResponseEvent::ToolCall(_)))
            .count();
        assert_eq!(calls, 1000);
    }

    #[test]
    fn text_deltas_usage_and_ignored_events() {
        let events = parse_ok(&[
            json!({"type": "response.created", "response": {"id": "r"}}),
            json!({"type": "response.in_progress", "response": {"id": "r"}}),
            added(json!({"type": "message", "id": "msg_1", "content": []})),
            text("Hel"),
            text(""),
            text("lo"),
            json!({"type": "response.output_text.done", "item_id": "msg_1", "text": "Hello"}),
            done(
                json!({"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "Hello"}]}),
            ),
            json!({"type": "response.some_future_event", "delta": 5}),
            completed(Some(json!({
                "input_tokens": 100, "output_tokens": 7, "total_tokens": 107,
                "input_tokens_details": {"cached_tokens": 64},
                "output_tokens_details": {"reasoning_tokens": 0},
            }))),
        ]);
        assert_eq!(
            events,
            vec![
                ResponseEvent::TextDelta("Hel".into()),
                ResponseEvent::TextDelta("lo".into()),
                ResponseEvent::Completed {
                    usage: Some(Usage {
                        input_tokens: 100,
                        output_tokens: 7,
                        cached_input_tokens: 64,
                        ..Usage::default()
                    }),
                    stop_reason: StopReason::Stop,
                    incomplete_tool_call: None,
                },
            ]
        );
    }

    #[test]
    fn a_message_without_deltas_gives_its_text() {
        let events = parse_ok(&[
            done(json!({"type": "message", "content": [
                {"type": "output_text", "text": "whole "},
                {"type": "refusal", "refusal": "no"},
                {"type": "output_text", "text": "answer"},
            ]})),
            completed(None),
        ]);
        assert_eq!(
            events,
            vec![
                ResponseEvent::TextDelta("whole answer".into()),
                end(StopReason::Stop)
            ]
        );
    }

    #[test]
    fn function_and_custom_calls_in_order() {
        let events = parse_ok(&[
            added(fc("fc_1", "call_a", "read", "")),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"p\":"}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "1}"}),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{\"p\":1}"}),
            done(fc("fc_1", "call_a", "read", "{\"p\":1}")),
            added(
                json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_b", "name": "apply_patch", "input": ""}),
            ),
            json!({"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "delta": "*** Begin"}),
            json!({"type": "response.custom_tool_call_input.done", "item_id": "ctc_1", "input": "*** Begin"}),
            done(
                json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_b", "name": "apply_patch", "input": "*** Begin"}),
            ),
            completed(None),
        ]);
        assert_eq!(
            events,
            vec![
                started("call_a", "read"),
                ResponseEvent::ToolCall(tool_call(
                    "call_a",
                    "read",
                    "{\"p\":1}",
                    ToolCallKind::Function
                )),
                started("call_b", "apply_patch"),
                ResponseEvent::ToolCall(tool_call(
                    "call_b",
                    "apply_patch",
                    "*** Begin",
                    ToolCallKind::Freeform
                )),
                end(StopReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn a_done_call_without_added_is_started_and_deltas_fill_missing_arguments() {
        let events = parse_ok(&[
            done(fc("fc_1", "call_a", "read", "{}")),
            added(
                json!({"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "list"}),
            ),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "delta": "{\"x\":2}"}),
            done(
                json!({"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "list"}),
            ),
            completed(None),
        ]);
        assert_eq!(
            events,
            vec![
                started("call_a", "read"),
                ResponseEvent::ToolCall(tool_call("call_a", "read", "{}", ToolCallKind::Function)),
                started("call_b", "list"),
                ResponseEvent::ToolCall(tool_call(
                    "call_b",
                    "list",
                    "{\"x\":2}",
                    ToolCallKind::Function
                )),
                end(StopReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn reasoning_items_join_their_summaries() {
        let events = parse_ok(&[
            added(json!({"type": "reasoning", "id": "rs_1", "summary": []})),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 0, "delta": "One"}),
            done(json!({"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": "One"},
                {"type": "summary_text", "text": "Two"},
            ], "content": null, "encrypted_content": "gAAA"})),
            completed(None),
        ]);
        assert_eq!(
            events,
            vec![
                ResponseEvent::Reasoning(Reasoning {
                    id: Some("rs_1".into()),
                    text: "One\n\nTwo".into(),
                    encrypted: Some("gAAA".into()),
                    source: "responses".into(),
                }),
                end(StopReason::Stop),
            ]
        );
    }

    #[test]
    fn incomplete_reports_length_and_the_open_call() {
        let events = parse_ok(&[
            text("Writing"),
            added(fc("fc_1", "call_a", "write_file", "")),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"te"}),
            json!({"type": "response.incomplete", "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "usage": {"input_tokens": 5, "output_tokens": 9},
            }}),
        ]);
        assert_eq!(
            events,
            vec![
                ResponseEvent::TextDelta("Writing".into()),
                started("call_a", "write_file"),
                ResponseEvent::Completed {
                    usage: Some(Usage {
                        input_tokens: 5,
                        output_tokens: 9,
                        ..Usage::default()
                    }),
                    stop_reason: StopReason::Length,
                    incomplete_tool_call: Some("write_file".into()),
                },
            ]
        );
        let events = parse_ok(&[json!({"type": "response.incomplete", "response": {
            "incomplete_details": {"reason": "content_filter"},
        }})]);
        assert_eq!(events, vec![end(StopReason::ContentFilter)]);
    }

    fn failed(code: Option<&str>, message: &str) -> Value {
        json!({"type": "response.failed", "response": {
            "status": "failed",
            "error": {"code": code, "message": message},
        }})
    }

    #[test]
    fn failures_are_classified_by_code() {
        let error = parse_err(&[text("x"), failed(Some("server_error"), "try again")]);
        assert!(error.retryable && !error.context_overflow, "{error:?}");
        assert!(
            error.message.contains("try again") && error.message.contains("server_error"),
            "{error:?}"
        );
        for code in ["rate_limit_exceeded", "server_is_overloaded"] {
            assert!(parse_err(&[failed(Some(code), "m")]).retryable, "{code}");
        }

        let error = parse_err(&[failed(
            Some("context_length_exceeded"),
            "Your input exceeds the context window",
        )]);
        assert!(error.context_overflow && !error.retryable, "{error:?}");
        assert_eq!(error.message, "Your input exceeds the context window");

        for code in [Some("invalid_prompt"), Some("insufficient_quota"), None] {
            let error = parse_err(&[failed(code, "no")]);
            assert!(
                !error.retryable && !error.context_overflow,
                "{code:?}: {error:?}"
            );
        }
        let error = parse_err(&[json!({"type": "response.failed", "response": {}})]);
        assert!(error.message.contains("no error message"), "{error:?}");
    }

    #[test]
    fn error_events_flat_or_nested() {
        let error = parse_err(&[
            json!({"type": "error", "code": "server_error", "message": "boom", "param": null}),
        ]);
        assert!(error.retryable, "{error:?}");
        assert!(error.message.contains("mid-stream: boom"), "{error:?}");
        let error = parse_err(&[
            json!({"type": "error", "error": {"type": "invalid_request_error", "code": "bad_input", "message": "nope"}}),
        ]);
        assert!(
            !error.retryable && error.message.contains("nope"),
            "{error:?}"
        );
        let error = parse_err(&[
            json!({"type": "error", "error": {"type": "server_error", "code": null, "message": "down"}}),
        ]);
        assert!(error.retryable, "{error:?}");
        // No `type` in the data: the SSE event name says what it is.
        let mut parser = EventParser::new();
        let error = parser
            .on_frame(
                &SseEvent {
                    event: "error".into(),
                    data: r#"{"message":"overloaded","code":"server_is_overloaded"}"#.into(),
                },
                &mut VecDeque::new(),
            )
            .expect_err("error event");
        assert!(error.retryable, "{error:?}");
    }

    #[test]
    fn malformed_events_name_the_problem() {
        let mut parser = EventParser::new();
        let error = parser
            .on_frame(
                &SseEvent {
                    event: "response.output_text.delta".into(),
                    data: r#"{"type":"response.output_text.delta","delta":"#.into(),
                },
                &mut VecDeque::new(),
            )
            .expect_err("malformed");
        assert!(!error.retryable);
        assert!(error.message.contains("malformed event"), "{error:?}");
        assert!(
            error.message.contains(r#"{"type":"response.output_text"#),
            "{error:?}"
        );

        let error = parse_err(&[json!({"type": "response.output_text.delta"})]);
        assert!(error.message.contains("no `delta`"), "{error:?}");
        let error = parse_err(&[json!({"type": "response.output_text.delta", "delta": 3})]);
        assert!(error.message.contains("not a string"), "{error:?}");
        let error = parse_err(&[done(json!({"type": "function_call", "call_id": 7}))]);
        assert!(
            error
                .message
                .contains("malformed `response.output_item.done`"),
            "{error:?}"
        );
        let error = parse_err(&[
            json!({"type": "response.completed", "response": {"usage": {"input_tokens": "many"}}}),
        ]);
        assert!(
            error.message.contains("malformed `response.completed`"),
            "{error:?}"
        );
        // Items this API does not use are never inspected.
        parse_ok(&[
            done(json!({"type": "web_search_call", "content": 5})),
            completed(None),
        ]);
    }

    #[tokio::test]
    async fn wire_streams_split_at_every_byte_give_identical_events() {
        assert_split_anywhere_decodes_alike(
            Framing::Sse,
            EventParser::new,
            &[
                // Multi-byte characters (—, ✓, ü, 🦀) in the deltas.
                include_str!("../../tests/fixtures/responses/text.txt"),
                include_str!("../../tests/fixtures/responses/freeform_patch.txt"),
            ],
            false,
        )
        .await;
    }

    #[tokio::test]
    async fn a_character_split_across_reads_survives() {
        let wire = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"🦀\"}\n\n\
                    event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n";
        let bytes = wire.as_bytes();
        let crab = wire.find('🦀').expect("crab");
        let reads = vec![
            bytes[..crab + 1].to_vec(),
            bytes[crab + 1..crab + 3].to_vec(),
            bytes[crab + 3..].to_vec(),
        ];
        assert_eq!(
            decode_reads(Framing::Sse, EventParser::new(), reads).await,
            vec![ResponseEvent::TextDelta("🦀".into()), end(StopReason::Stop)]
        );
    }

    #[test]
    fn bad_config_fails_at_construction() {
        let info = ProviderInfo::new("x", "not a url", super::super::WireApi::Responses);
        assert!(Responses::new(info).is_err());
    }
}
