//! The Anthropic Messages wire API (`POST {base_url}/messages` with
//! `stream: true`, `x-api-key` and `anthropic-version: 2023-06-01`).
//!
//! [`AnthropicMessages::stream`] builds the JSON body up front and hands it
//! to the shared HTTP driver ([`Endpoint::stream`]), which connects, retries
//! (429, 5xx including 529 `overloaded`, broken streams, and the in-stream
//! errors this parser marks retryable), enforces the idle timeout and size
//! cap. `is_context_overflow` decides which errors (a status or an
//! in-stream `error` event) mean the request is larger than the context
//! window: "prompt is too long" and "input length and `max_tokens` exceed
//! context limit".
//!
//! # Request
//!
//! - `system`: the instructions, then the text of every `Developer` history
//!   item in order, each its own text block. cogni only writes developer
//!   items at the start of a session, so the system prompt stays the same
//!   from request to request (which prompt caching needs); a developer item
//!   appearing later would move into the system prompt too.
//! - `messages` alternate user / assistant; consecutive items of the same
//!   side are merged into one message. Assistant: `thinking` /
//!   `redacted_thinking` blocks (see below), text, `tool_use` (input parsed
//!   from the call's JSON arguments; freeform text as `{"input": text}`;
//!   arguments that are not a JSON object as `{"input": raw}`). User: text,
//!   and `tool_result` blocks (with `is_error`), which are put before any
//!   text of the same message as the API requires. Empty and
//!   whitespace-only texts are left out (the API rejects them, e.g. the
//!   "\n\n" a model may write before its calls) and such a tool result is
//!   sent as `(no output)`.
//! - Reasoning: only items with `source == "anthropic"` that carry a
//!   signature, and only when the request enables thinking (the API rejects
//!   thinking blocks when thinking is off). A reasoning item with text is a
//!   `thinking` block (`encrypted` is its signature); one without text is a
//!   `redacted_thinking` block (`encrypted` is its data).
//! - `tools`: `{name, description, input_schema}`; freeform tools take one
//!   string property, `input`. `tool_choice` is sent only to turn parallel
//!   tool use off.
//! - `max_tokens` is always sent: the request's, else
//!   [`DEFAULT_MAX_TOKENS`] (the output limit of the smallest current
//!   models; claude-3-haiku needs max_tokens ≤ 4096 set in the config).
//! - Thinking: a `reasoning_effort` becomes `thinking: {type: "enabled",
//!   budget_tokens}` with minimal → 1024, low → 4096, medium → 8192, high →
//!   16384 tokens (an unknown effort counts as medium). Without a configured
//!   max_tokens, max_tokens becomes the budget plus [`DEFAULT_MAX_TOKENS`]
//!   (at most 24576, within every thinking model's output limit). With one,
//!   the budget is capped at three quarters of it so the answer keeps room;
//!   when that is below the API's minimum of 1024 thinking is not enabled.
//!   `temperature` is not sent together with thinking (the API only allows
//!   the default then).
//! - Prompt caching: `cache_control: {type: "ephemeral"}` on the last tool,
//!   the last system block, the last block of the history before the newest
//!   message, and the last block of the newest message: four breakpoints,
//!   the API's maximum. The first three cover the prefix every later
//!   request repeats; the fourth lets the next request of a tool loop read
//!   the tool results just sent instead of paying for them again. Thinking
//!   blocks cannot carry a breakpoint, so the last other block does.
//! - `output_schema`: the API has no structured output, so an extra tool,
//!   [`FINAL_ANSWER_TOOL`], takes the schema as its input schema (a schema
//!   that is not an object schema is wrapped as the `value` property) and
//!   the system prompt asks the model to call it for its final answer. The
//!   parser turns that call into the answer text, a [`ResponseEvent::TextDelta`]
//!   with the JSON, and the stop reason into `Stop` (unless other tools were
//!   called too). A user tool with the same name would be shadowed.
//!
//! # Stream
//!
//! `message_start` carries input usage, `content_block_start` /
//! `content_block_delta` / `content_block_stop` build text, `tool_use`
//! (JSON assembled per block index), `thinking` (with its `signature_delta`)
//! and `redacted_thinking` blocks, `message_delta` carries the stop reason
//! and output usage (its counts are cumulative and win over earlier ones),
//! `message_stop` ends the response. `ping` and unknown event, block and
//! delta types are ignored. `error` events are retryable for
//! `overloaded_error` and `api_error`, fatal otherwise.
//!
//! Text streams as it arrives; a thinking block becomes one
//! [`ResponseEvent::Reasoning`] when it ends; tool calls are held until the
//! stop reason is known, so a `tool_use` block cut off by `max_tokens` is
//! reported as `incomplete_tool_call` and never emitted. Usage: Anthropic's
//! `input_tokens` excludes cached tokens, cogni's includes them, so
//! `input_tokens` is the sum of `input_tokens`, `cache_read_input_tokens`
//! (also `cached_input_tokens`) and `cache_creation_input_tokens` (also
//! `cache_write_tokens`).

use super::freeform;
use super::http::{
    self, Auth, Endpoint, FrameError, Framing, ServerError, Wire, WireParser, MAX_ERROR_CHARS,
};
use super::retry::Jitter;
use super::sse::SseEvent;
use super::{ModelRequest, Provider, ProviderError, ProviderInfo, ResponseEvent, ResponseStream};
use crate::protocol::{
    Content, HistoryItem, Reasoning, Role, StopReason, ToolCall, ToolFormat, ToolSpec, Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
/// The smallest thinking budget the API accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;
/// The tool offered for the final answer when the request has an output schema.
pub const FINAL_ANSWER_TOOL: &str = "final_answer";
/// `Reasoning::source` of thinking blocks.
const SOURCE: &str = "anthropic";

const FINAL_ANSWER_DESCRIPTION: &str =
    "Give your final answer. Call this once, when you are done; its input is the answer.";
const FINAL_ANSWER_INSTRUCTION: &str = "When you are done, give your final answer by calling the `final_answer` tool with the answer as its input, which must match the tool's input schema. Do not write the final answer as plain text.";

/// An Anthropic Messages client for one provider.
pub struct AnthropicMessages {
    endpoint: Arc<Endpoint>,
}

/// Where Anthropic Messages requests go and how.
pub(crate) const WIRE: Wire = Wire {
    path: "/messages",
    auth: Auth::Header("x-api-key"),
    headers: &[("anthropic-version", ANTHROPIC_VERSION)],
    framing: Framing::Sse,
    hint: None,
    overflow: is_context_overflow,
};

/// Whether an error says the request does not fit the model's context
/// window. Anthropic says it two ways: "prompt is too long: N tokens > M
/// maximum", and "input length and `max_tokens` exceed context limit: N +
/// M > W" when the input fits but the room asked for the answer does not.
/// (Bedrock words the first "input is too long".)
pub(crate) fn is_context_overflow(error: &ServerError) -> bool {
    error.status_in(&[400, 413])
        && error.says_any(&[
            "prompt is too long",
            "exceed context limit",
            "input is too long",
        ])
}

impl AnthropicMessages {
    /// A client with random retry jitter. No network I/O happens here.
    pub fn new(info: ProviderInfo) -> Result<Self, ProviderError> {
        Self::with_jitter(info, Jitter::random())
    }

    /// A client whose retry jitter comes from `jitter` (tests use a fixed
    /// value to get exact delays).
    pub fn with_jitter(info: ProviderInfo, jitter: Jitter) -> Result<Self, ProviderError> {
        let endpoint = Arc::new(Endpoint::new(info, WIRE, jitter)?);
        Ok(AnthropicMessages { endpoint })
    }
}

impl Provider for AnthropicMessages {
    fn id(&self) -> &str {
        self.endpoint.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        let freeform = freeform::names(request.tools);
        let final_answer = request.output_schema.map(FinalAnswer::for_schema);
        self.endpoint
            .stream(build_body(request), request.model, move || {
                EventParser::with(freeform.clone(), final_answer)
            })
    }
}

// ---------------------------------------------------------------------------
// Request body
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    stream: bool,
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// `{"type": "ephemeral"}`
#[derive(Serialize, Clone, Copy)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CacheControl {
    Ephemeral,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl<'a> Block<'a> {
    fn text(text: &'a str) -> Self {
        Block::Text {
            text,
            cache_control: None,
        }
    }

    /// Where a cache breakpoint goes; thinking blocks cannot carry one.
    fn cache_slot(&mut self) -> Option<&mut Option<CacheControl>> {
        match self {
            Block::Text { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => Some(cache_control),
            Block::Thinking { .. } | Block::RedactedThinking { .. } => None,
        }
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// How the final-answer tool carries the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FinalAnswer {
    /// The schema is not an object schema, so the answer is the tool
    /// input's `value` property.
    wrapped: bool,
}

impl FinalAnswer {
    fn for_schema(schema: &Value) -> Self {
        FinalAnswer {
            wrapped: schema.get("type").and_then(Value::as_str) != Some("object"),
        }
    }

    fn tool(self, schema: &Value) -> WireTool<'_> {
        let input_schema = if self.wrapped {
            Cow::Owned(json!({
                "type": "object",
                "properties": {"value": schema},
                "required": ["value"],
            }))
        } else {
            Cow::Borrowed(schema)
        };
        WireTool {
            name: FINAL_ANSWER_TOOL,
            description: FINAL_ANSWER_DESCRIPTION,
            input_schema,
            cache_control: None,
        }
    }

    /// The answer text from the tool's input JSON (kept as sent when it is
    /// not the expected JSON).
    fn answer(self, input: String) -> String {
        let Ok(value) = serde_json::from_str::<Value>(&input) else {
            return input;
        };
        let answer = if self.wrapped {
            match value.get("value") {
                Some(inner) => inner,
                None => return input,
            }
        } else {
            &value
        };
        answer.to_string()
    }
}

/// `max_tokens` and the thinking budget (if thinking is enabled).
fn token_limits(request: &ModelRequest<'_>) -> (u32, Option<u32>) {
    let Some(effort) = request.reasoning_effort else {
        return (request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS), None);
    };
    let wanted = match effort {
        "minimal" => 1_024,
        "low" => 4_096,
        "high" => 16_384,
        _ => 8_192,
    };
    match request.max_tokens {
        None => (DEFAULT_MAX_TOKENS + wanted, Some(wanted)),
        Some(max) => {
            // A quarter of the output stays for the answer.
            let budget = wanted.min(max - max / 4);
            (max, (budget >= MIN_THINKING_BUDGET).then_some(budget))
        }
    }
}

/// Serialise `request` as a Messages body.
fn build_body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let (max_tokens, budget) = token_limits(request);
    let thinking = budget.is_some();

    let mut system: Vec<Block<'_>> = Vec::new();
    if !is_blank(request.instructions) {
        system.push(Block::text(request.instructions));
    }
    for item in request.input {
        if let (Role::Developer, Content::Text { text, .. }) = (item.role, &item.content) {
            if !is_blank(text) {
                system.push(Block::text(text));
            }
        }
    }
    if request.output_schema.is_some() {
        system.push(Block::text(FINAL_ANSWER_INSTRUCTION));
    }

    let mut tools: Vec<WireTool<'_>> = request.tools.iter().map(wire_tool).collect();
    if let Some(schema) = request.output_schema {
        tools.push(FinalAnswer::for_schema(schema).tool(schema));
    }
    let mut messages = build_messages(request.input, thinking);

    // Cache breakpoints: tools, system, the history before the newest
    // message, and the newest message.
    if let Some(tool) = tools.last_mut() {
        tool.cache_control = Some(CacheControl::Ephemeral);
    }
    if let Some(slot) = system.last_mut().and_then(Block::cache_slot) {
        *slot = Some(CacheControl::Ephemeral);
    }
    let recent = messages.len().saturating_sub(2);
    for message in &mut messages[recent..] {
        if let Some(slot) = message.content.iter_mut().rev().find_map(Block::cache_slot) {
            *slot = Some(CacheControl::Ephemeral);
        }
    }

    let body = Body {
        model: request.model,
        max_tokens,
        system,
        messages,
        tool_choice: (!request.parallel_tool_calls && !tools.is_empty())
            .then(|| json!({"type": "auto", "disable_parallel_tool_use": true})),
        tools,
        temperature: request.temperature.filter(|_| !thinking),
        thinking: budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
        stream: true,
    };
    serde_json::to_vec(&body)
}

/// The history as alternating messages (developer items are in `system`).
fn build_messages(input: &[HistoryItem], thinking: bool) -> Vec<Message<'_>> {
    let mut messages: Vec<Message<'_>> = Vec::new();
    for item in input {
        let (role, block) = match &item.content {
            Content::Text { text, .. } => {
                let role = match item.role {
                    Role::Developer => continue,
                    Role::Assistant => "assistant",
                    Role::User | Role::Tool => "user",
                };
                if is_blank(text) {
                    continue;
                }
                (role, Block::text(text))
            }
            Content::Reasoning(r) => match reasoning_block(r, thinking) {
                Some(block) => ("assistant", block),
                None => continue,
            },
            Content::ToolCall(call) => (
                "assistant",
                Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: freeform::input_object(call),
                    cache_control: None,
                },
            ),
            Content::ToolOutput(output) => (
                "user",
                Block::ToolResult {
                    tool_use_id: &output.call_id,
                    content: if is_blank(&output.content) {
                        "(no output)"
                    } else {
                        &output.content
                    },
                    is_error: output.is_error,
                    cache_control: None,
                },
            ),
        };
        match messages.last_mut() {
            Some(last) if last.role == role => {
                if matches!(block, Block::ToolResult { .. }) {
                    // Tool results come first in a user message.
                    let at = last
                        .content
                        .iter()
                        .take_while(|b| matches!(b, Block::ToolResult { .. }))
                        .count();
                    last.content.insert(at, block);
                } else {
                    last.content.push(block);
                }
            }
            _ => messages.push(Message {
                role,
                content: vec![block],
            }),
        }
    }
    messages
}

/// Empty or whitespace only: the API rejects such text blocks ("text
/// content blocks must contain non-whitespace text"), also when they were
/// only replayed from history.
fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// A thinking block to send back, if the API needs (and accepts) one.
fn reasoning_block(reasoning: &Reasoning, thinking: bool) -> Option<Block<'_>> {
    if !thinking || reasoning.source != SOURCE {
        return None;
    }
    // Unsigned thinking is rejected by the API.
    let data = reasoning.encrypted.as_deref().filter(|d| !d.is_empty())?;
    Some(if reasoning.text.is_empty() {
        Block::RedactedThinking { data }
    } else {
        Block::Thinking {
            thinking: &reasoning.text,
            signature: data,
        }
    })
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    let input_schema = match &tool.format {
        ToolFormat::Function { parameters } => Cow::Borrowed(parameters),
        ToolFormat::Freeform { syntax, definition } => {
            Cow::Owned(freeform::parameters(syntax, definition))
        }
    };
    WireTool {
        name: &tool.name,
        description: &tool.description,
        input_schema,
        cache_control: None,
    }
}

// ---------------------------------------------------------------------------
// Stream events
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Other,
}

/// A `content_block_delta` event's fields for the fast path in
/// [`EventParser::on_event`] (other fields are skipped unread).
#[derive(Deserialize)]
struct FastDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: usize,
    #[serde(borrow)]
    delta: FastDeltaBody<'a>,
}

#[derive(Deserialize)]
struct FastDeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Take every count `newer` has.
    fn update(&mut self, newer: WireUsage) {
        let keep = |old: &mut Option<u64>, new: Option<u64>| {
            if new.is_some() {
                *old = new;
            }
        };
        keep(&mut self.input_tokens, newer.input_tokens);
        keep(&mut self.output_tokens, newer.output_tokens);
        keep(
            &mut self.cache_creation_input_tokens,
            newer.cache_creation_input_tokens,
        );
        keep(
            &mut self.cache_read_input_tokens,
            newer.cache_read_input_tokens,
        );
    }

    fn to_usage(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + read + write,
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_input_tokens: read,
            cache_write_tokens: write,
            estimated: false,
        }
    }
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// A content block being streamed.
enum OpenBlock {
    Text,
    Thinking {
        text: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    ToolUse(PartialCall),
    /// A block type cogni does not use (server tools, citations, ...).
    Ignored,
}

struct PartialCall {
    index: usize,
    id: String,
    name: String,
    /// `input_json_delta` pieces joined.
    json: String,
    /// The input sent with `content_block_start`, used when no delta follows.
    initial: Option<Value>,
}

impl PartialCall {
    /// The complete input JSON.
    fn input(json: String, initial: Option<Value>) -> String {
        if !json.is_empty() {
            return json;
        }
        match initial {
            Some(value) if !value.is_null() => value.to_string(),
            _ => "{}".to_string(),
        }
    }
}

/// Turns Messages SSE events into [`ResponseEvent`]s, with no HTTP
/// involved: feed it the events of [`super::sse::decode`] in order.
pub struct EventParser {
    freeform: Vec<String>,
    final_answer: Option<FinalAnswer>,
    open: BTreeMap<usize, OpenBlock>,
    /// Tool calls whose block ended, held until the stop reason is known.
    calls: Vec<PartialCall>,
    /// The highest block index started so far.
    last_index: Option<usize>,
    usage: Option<WireUsage>,
    stop: Option<StopReason>,
    incomplete: Option<String>,
}

impl EventParser {
    /// `freeform` names the request's freeform tools (their `{"input": ...}`
    /// is unwrapped); `output_schema` is the request's, for which the
    /// final-answer tool was offered.
    pub fn new(freeform: Vec<String>, output_schema: Option<&Value>) -> Self {
        EventParser::with(freeform, output_schema.map(FinalAnswer::for_schema))
    }

    fn with(freeform: Vec<String>, final_answer: Option<FinalAnswer>) -> Self {
        EventParser {
            freeform,
            final_answer,
            open: BTreeMap::new(),
            calls: Vec::new(),
            last_index: None,
            usage: None,
            stop: None,
            incomplete: None,
        }
    }

    /// Handle one SSE event, queueing what it produces. `Ok(true)` after the
    /// terminal `message_stop`; `Err` names what was wrong with the event.
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        // Most events are text or tool-input deltas: read those without
        // the buffering serde does for internally tagged enums.
        if let Ok(fast) = serde_json::from_str::<FastDelta>(data) {
            if fast.kind == "content_block_delta" {
                let body = fast.delta;
                let delta = match (&*body.kind, body.text, body.partial_json) {
                    ("text_delta", Some(text), _) => Some(WireDelta::TextDelta {
                        text: text.into_owned(),
                    }),
                    ("input_json_delta", _, Some(json)) => Some(WireDelta::InputJsonDelta {
                        partial_json: json.into_owned(),
                    }),
                    _ => None,
                };
                if let Some(delta) = delta {
                    self.delta(fast.index, delta, out)?;
                    return Ok(false);
                }
            }
        }
        let parsed: WireEvent = http::parse_frame(data, format_args!("`{}` event", event.event))?;
        match parsed {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage
                        .get_or_insert_with(WireUsage::default)
                        .update(usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out)?,
            WireEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, out)?,
            WireEvent::ContentBlockStop { index } => self.stop_block(index, out)?,
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(usage) = usage {
                    self.usage
                        .get_or_insert_with(WireUsage::default)
                        .update(usage);
                }
                if let Some(reason) = delta.stop_reason.filter(|r| !r.is_empty()) {
                    if self.stop.is_none() {
                        self.finish(Some(&reason), out);
                    }
                }
            }
            WireEvent::MessageStop => {
                if self.stop.is_none() {
                    self.finish(None, out);
                }
                out.push_back(ResponseEvent::Completed {
                    usage: self.usage.take().map(|u| u.to_usage()),
                    stop_reason: self.stop.take().unwrap_or(StopReason::Stop),
                    incomplete_tool_call: self.incomplete.take(),
                });
                return Ok(true);
            }
            WireEvent::Error { error } => {
                let overflow = is_context_overflow(&ServerError::parse(None, data));
                return Err(stream_error(&error, overflow));
            }
            WireEvent::Ping | WireEvent::Unknown => {}
        }
        Ok(false)
    }

    fn start_block(
        &mut self,
        index: usize,
        block: WireBlock,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let open = match block {
            WireBlock::Text { text } => {
                if !text.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
                OpenBlock::Text
            }
            WireBlock::ToolUse { id, name, input } => {
                if !self.is_final_answer(&name) {
                    out.push_back(ResponseEvent::ToolCallStarted {
                        id: id.clone(),
                        name: name.clone(),
                    });
                }
                OpenBlock::ToolUse(PartialCall {
                    index,
                    id,
                    name,
                    json: String::new(),
                    initial: input,
                })
            }
            WireBlock::Thinking {
                thinking,
                signature,
            } => OpenBlock::Thinking {
                text: thinking,
                signature,
            },
            WireBlock::RedactedThinking { data } => OpenBlock::Redacted { data },
            WireBlock::Other => OpenBlock::Ignored,
        };
        if self.open.insert(index, open).is_some() {
            return Err(FrameError::fatal(format!(
                "content block {index} was started twice"
            )));
        }
        self.last_index = self.last_index.max(Some(index));
        Ok(())
    }

    fn delta(
        &mut self,
        index: usize,
        delta: WireDelta,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let block = self.open.get_mut(&index).ok_or_else(|| {
            FrameError::fatal(format!(
                "content_block_delta for block {index}, which is not open"
            ))
        })?;
        match (block, delta) {
            (OpenBlock::Text, WireDelta::TextDelta { text }) => {
                if !text.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
            }
            (OpenBlock::ToolUse(call), WireDelta::InputJsonDelta { partial_json }) => {
                call.json.push_str(&partial_json);
            }
            (OpenBlock::Thinking { text, .. }, WireDelta::ThinkingDelta { thinking }) => {
                text.push_str(&thinking);
            }
            (OpenBlock::Thinking { signature, .. }, WireDelta::SignatureDelta { signature: s }) => {
                signature.push_str(&s);
            }
            (OpenBlock::Ignored, _) | (_, WireDelta::Other) => {}
            (_, delta) => {
                return Err(FrameError::fatal(format!(
                    "content_block_delta of type `{}` does not fit block {index}",
                    delta.kind()
                )))
            }
        }
        Ok(())
    }

    fn stop_block(
        &mut self,
        index: usize,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let block = self.open.remove(&index).ok_or_else(|| {
            FrameError::fatal(format!(
                "content_block_stop for block {index}, which is not open"
            ))
        })?;
        match block {
            OpenBlock::Thinking { text, signature } => {
                out.push_back(ResponseEvent::Reasoning(Reasoning {
                    id: None,
                    text,
                    encrypted: (!signature.is_empty()).then_some(signature),
                    source: SOURCE.to_string(),
                }));
            }
            OpenBlock::Redacted { data } => {
                out.push_back(ResponseEvent::Reasoning(Reasoning {
                    id: None,
                    text: String::new(),
                    encrypted: Some(data),
                    source: SOURCE.to_string(),
                }));
            }
            OpenBlock::ToolUse(call) => self.calls.push(call),
            OpenBlock::Text | OpenBlock::Ignored => {}
        }
        Ok(())
    }

    fn is_final_answer(&self, name: &str) -> bool {
        self.final_answer.is_some() && name == FINAL_ANSWER_TOOL
    }

    /// The stop reason is known: emit the finished calls (the final answer
    /// as text), holding back a call the output limit cut off.
    fn finish(&mut self, reason: Option<&str>, out: &mut VecDeque<ResponseEvent>) {
        let mut stop = reason.map_or(StopReason::Stop, stop_reason);
        // A tool_use block still open never finished.
        let mut cut: Option<String> = None;
        for block in std::mem::take(&mut self.open).into_values() {
            if let OpenBlock::ToolUse(call) = block {
                cut = Some(call.name);
            }
        }
        let mut calls = std::mem::take(&mut self.calls);
        let last_is_call = self
            .last_index
            .is_some_and(|last| calls.last().is_some_and(|c| c.index == last));
        if stop == StopReason::Length && last_is_call {
            // The limit hit while the last block, a call, was written.
            cut = calls.pop().map(|c| c.name);
        }
        let mut called = false;
        for PartialCall {
            id,
            name,
            json,
            initial,
            ..
        } in calls
        {
            let input = PartialCall::input(json, initial);
            match self.final_answer {
                Some(final_answer) if name == FINAL_ANSWER_TOOL => {
                    out.push_back(ResponseEvent::TextDelta(final_answer.answer(input)));
                }
                _ => {
                    called = true;
                    let (kind, arguments) = freeform::call(&self.freeform, &name, input);
                    out.push_back(ResponseEvent::ToolCall(ToolCall {
                        id,
                        name,
                        arguments,
                        kind,
                    }));
                }
            }
        }
        stop = match stop {
            // Only the final answer was "called".
            StopReason::ToolCalls if !called => StopReason::Stop,
            StopReason::Stop if called => StopReason::ToolCalls,
            other => other,
        };
        self.incomplete = cut;
        self.stop = Some(stop);
    }
}

impl WireDelta {
    fn kind(&self) -> &'static str {
        match self {
            WireDelta::TextDelta { .. } => "text_delta",
            WireDelta::InputJsonDelta { .. } => "input_json_delta",
            WireDelta::ThinkingDelta { .. } => "thinking_delta",
            WireDelta::SignatureDelta { .. } => "signature_delta",
            WireDelta::Other => "other",
        }
    }
}

impl WireParser for EventParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        self.on_event(frame, out)
    }

    fn terminal(&self) -> &'static str {
        "`message_stop`"
    }
}

/// Anthropic's stop reasons; those [`StopReason::from_wire`] does not know
/// are mapped here.
fn stop_reason(reason: &str) -> StopReason {
    match reason {
        // The context window filled up while the model was writing.
        "model_context_window_exceeded" => StopReason::Length,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::from_wire(other),
    }
}

/// An `error` event: a context overflow (`overflow`, as
/// [`is_context_overflow`] decided), retryable when the server was
/// overloaded or failed, fatal otherwise.
fn stream_error(error: &WireError, overflow: bool) -> FrameError {
    if overflow {
        return FrameError::context_overflow(http::truncate_chars(&error.message, MAX_ERROR_CHARS));
    }
    let message = format!(
        "the server reported an error mid-stream: {}: {}",
        error.kind,
        http::truncate_chars(&error.message, MAX_ERROR_CHARS)
    );
    match error.kind.as_str() {
        "overloaded_error" | "api_error" => FrameError::retryable(message),
        _ => FrameError::fatal(message),
    }
}

#[cfg(test)]
mod tests;
