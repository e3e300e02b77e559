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
use cogni_protocol::{
    Citation, Content, HistoryItem, Reasoning, Role, StopReason, ToolCall, ToolFormat, ToolSpec,
    Usage, WebSearch, WebSource,
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

mod request;
mod stream;

use request::*;
pub use stream::EventParser;

#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
