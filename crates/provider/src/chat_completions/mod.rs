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
use cogni_protocol::{
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

mod request;
mod stream;

use request::*;
pub(crate) use request::{wire_tool, WireTool};
pub use stream::ChunkParser;
#[cfg(test)]
use stream::*;
pub(crate) use stream::{error_message, mid_stream_error};

#[cfg(test)]
mod tests;
