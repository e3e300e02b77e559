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
use cogni_protocol::{
    Citation, Content, HistoryItem, Reasoning, Role, StopReason, ToolCall, ToolCallKind,
    ToolFormat, ToolSpec, Usage, WebSearch, WebSource,
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

mod request;
mod stream;

use request::*;
pub use stream::EventParser;

#[cfg(test)]
mod tests;
