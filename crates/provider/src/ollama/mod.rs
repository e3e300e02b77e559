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
use super::windows::{self, Windows};
use super::{ModelRequest, Provider, ProviderError, ProviderInfo, ResponseEvent, ResponseStream};
use cogni_protocol::{Content, HistoryItem, Reasoning, Role, StopReason, ToolCall, Usage};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// How long the server keeps the model loaded after a request.
pub const KEEP_ALIVE: &str = "10m";
/// Longest wait for `POST /api/show`.
pub const SHOW_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for `GET /api/tags`.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(15);
/// The `source` of the reasoning this API produces and takes back.
const SOURCE: &str = "ollama";

/// An Ollama `/api/chat` client for one provider.
pub struct Ollama {
    endpoint: Arc<Endpoint>,
    /// Context windows `/api/show` answered with.
    windows: Arc<Windows>,
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
            windows: Arc::default(),
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
            let asked = show_window(&endpoint, &model);
            let Some(window) = windows.get(&model, "`/api/show`", asked).await else {
                return endpoint.stream(Ok(body), &model, parser);
            };
            let body = match with_num_ctx(&body, window) {
                Ok(body) => body,
                Err(e) => return endpoint.encode_error(e),
            };
            windows::announce(window, endpoint.stream(Ok(body), &model, parser))
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

/// The window `/api/show` gives for `model`.
async fn show_window(endpoint: &Endpoint, model: &str) -> Result<Option<u64>, ProviderError> {
    let details = endpoint
        .request_json(
            reqwest::Method::POST,
            "/api/show",
            Some(&json!({ "model": model })),
            model,
            SHOW_TIMEOUT,
        )
        .await?;
    Ok(window_from_show(&details))
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

mod request;
mod stream;

use request::*;
pub use stream::LineParser;

#[cfg(test)]
mod tests;
