//! Model providers: one neutral request in, one neutral event stream out.
//!
//! Each wire API lives in its own file and maps its stream onto
//! [`ResponseEvent`]. A stream that ends without its terminal event is an
//! error, never a success.

#![deny(missing_docs)]

pub mod anthropic;
pub mod chat_completions;
mod freeform;
pub mod http;
mod images;
pub mod model_family;
pub mod models;
pub mod ndjson;
pub mod ollama;
pub mod record;
pub mod responses;
pub mod retry;
pub mod scripted;
pub mod sse;
#[cfg(test)]
pub(crate) mod test_support;
pub mod text_tools;
mod windows;

use cogni_protocol::{
    Citation, HistoryItem, Reasoning, StopReason, ToolCall, ToolSpec, Usage, WebSearch,
};
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use images::has_images;
pub use model_family::{ModelFamily, ToolCallMode};

/// Everything a provider needs to send one request.
#[derive(Debug, Clone)]
pub struct ModelRequest<'a> {
    /// The model's name as the provider knows it.
    pub model: &'a str,
    /// The system prompt (Responses `instructions`, a `system` message or
    /// Anthropic's `system`).
    pub instructions: &'a str,
    /// The conversation to send, oldest first.
    pub input: &'a [HistoryItem],
    /// The tools offered, in order (empty: no tools are sent).
    pub tools: &'a [ToolSpec],
    /// Whether the model may ask for several tool calls in one response
    /// (sent only with tools).
    pub parallel_tool_calls: bool,
    /// A JSON schema the final answer must match (`--output-schema`), for
    /// APIs that can enforce one; `None`: free text.
    pub output_schema: Option<&'a serde_json::Value>,
    /// Sampling temperature; `None` leaves it to the server.
    pub temperature: Option<f32>,
    /// The most output tokens the response may have; `None` leaves it to
    /// the server (Anthropic requires one and uses its own default).
    pub max_tokens: Option<u32>,
    /// Reasoning effort (`minimal`, `low`, `medium`, `high`) for models that
    /// reason; `None` sends no reasoning settings.
    pub reasoning_effort: Option<&'a str>,
    /// The model's context window as cogni knows it (for servers that must
    /// be told, like Ollama's `num_ctx`).
    pub context_window: u64,
    /// How Chat Completions names the output limit for this model (the
    /// model family's choice); a provider's own `max_tokens_param` wins.
    pub max_tokens_param: MaxTokensParam,
    /// True when `context_window` is only the generic family's default:
    /// neither the catalog nor the config knows this model. A provider that
    /// can ask its server for the real window may do so, use it, and report
    /// it with [`ResponseEvent::ModelInfo`].
    pub context_window_is_default: bool,
    /// Offer the provider's own web search (`[tools] web_search`): the
    /// Responses `web_search` tool, Anthropic's server-side `web_search`
    /// tool. Other wire APIs have none; config refuses it for them.
    pub web_search: bool,
}

/// The neutral stream every wire API is mapped onto.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// A tool call began (id and name known); arguments follow.
    ToolCallStarted {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A complete tool call, in the order the model produced it.
    ToolCall(ToolCall),
    /// Reasoning to keep in history (before the calls that follow it).
    Reasoning(Reasoning),
    /// A web search the provider ran itself, finished: kept in history (in
    /// stream order with reasoning) and sent back to the same API.
    WebSearch(WebSearch),
    /// The answer cites a page (a search result).
    Citation(Citation),
    /// The server told us the model's context window (e.g. Ollama's
    /// `/api/show`); the engine adjusts its compaction limit.
    ModelInfo {
        /// The window in tokens.
        context_window: u64,
    },
    /// The provider is about to retry after a failure.
    Retrying {
        /// The retry's number, from 1.
        attempt: u32,
        /// How long it waits before retrying.
        delay: Duration,
        /// The failure, readable.
        reason: String,
    },
    /// The terminal event: the response is complete.
    Completed {
        /// The provider's token counts; `None` when it sent none (the
        /// engine then estimates).
        usage: Option<Usage>,
        /// Why the model stopped.
        stop_reason: StopReason,
        /// A tool call that was cut off by `stop_reason` and must not run.
        incomplete_tool_call: Option<String>,
    },
}

/// The events of one response, ending after [`ResponseEvent::Completed`]
/// or the first error.
pub type ResponseStream = BoxStream<'static, Result<ResponseEvent, ProviderError>>;

/// A model backend.
pub trait Provider: Send + Sync {
    /// Human-readable id used in errors (`openai`, `ollama`, ...).
    fn id(&self) -> &str;

    /// Start a request and return its event stream. The request body is
    /// built before this returns (so the stream owns everything it needs);
    /// connecting, retrying (reported as [`ResponseEvent::Retrying`]) and
    /// decoding happen as the stream is polled. The stream ends after
    /// [`ResponseEvent::Completed`] or after its first error.
    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream;
}

/// Errors a caller branches on.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The server rejected the key (HTTP 401 or 403); retrying is useless.
    #[error(
        "{provider}: authentication failed for model `{model}` (HTTP {status}): {message}. {hint}"
    )]
    Auth {
        /// The provider's id.
        provider: String,
        /// The model the request was for.
        model: String,
        /// The HTTP status.
        status: u16,
        /// The server's error message.
        message: String,
        /// What to fix, naming the key's variable (see [`ProviderInfo::key_hint`]).
        hint: String,
    },
    /// The server answered with an error status (429 and 5xx are
    /// retryable).
    #[error("{provider}: request for model `{model}` failed with HTTP {status}: {message}")]
    Http {
        /// The provider's id.
        provider: String,
        /// The model the request was for.
        model: String,
        /// The HTTP status.
        status: u16,
        /// The server's error message.
        message: String,
    },
    /// No connection could be made (DNS, refused, TLS, connect timeout);
    /// retryable.
    #[error("{provider}: could not reach {url}: {message}")]
    Unreachable {
        /// The provider's id.
        provider: String,
        /// The URL requested.
        url: String,
        /// What failed.
        message: String,
    },
    /// Every retry failed.
    #[error("{provider}: gave up on model `{model}` after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// The provider's id.
        provider: String,
        /// The model the request was for.
        model: String,
        /// Attempts made, the first included.
        attempts: u32,
        /// The last attempt's error.
        last: String,
    },
    /// The response stream broke or could not be decoded, or ended without
    /// its terminal event.
    #[error("{provider}: stream for model `{model}` broke: {message}")]
    Stream {
        /// The provider's id.
        provider: String,
        /// The model the request was for.
        model: String,
        /// What went wrong.
        message: String,
    },
    /// The stream sent nothing for `stream_idle_timeout`.
    #[error("{provider}: no data for {idle_secs}s from model `{model}` (idle timeout; raise stream_idle_timeout_ms in [model_providers.{provider}])")]
    IdleTimeout {
        /// The provider's id.
        provider: String,
        /// The model the request was for.
        model: String,
        /// The idle timeout that ran out, in seconds.
        idle_secs: u64,
    },
    /// The server says the request exceeds the model's context window;
    /// the engine compacts and tries again.
    #[error(
        "{provider}: the request for model `{model}` is larger than its context window: {message}"
    )]
    ContextOverflow {
        /// The provider's id.
        provider: String,
        /// The model the request was for.
        model: String,
        /// The server's error message.
        message: String,
    },
    /// Anything else (a bad script, a request that cannot be built, ...).
    #[error("{provider}: {message}")]
    Other {
        /// The provider's id.
        provider: String,
        /// What went wrong.
        message: String,
    },
}

impl ProviderError {
    /// Apply `f` to every free text of the error (to redact secrets).
    pub fn for_each_text(&mut self, mut f: impl FnMut(&mut String)) {
        match self {
            ProviderError::Auth { message, .. }
            | ProviderError::Http { message, .. }
            | ProviderError::Stream { message, .. }
            | ProviderError::ContextOverflow { message, .. }
            | ProviderError::Other { message, .. } => f(message),
            ProviderError::Unreachable { url, message, .. } => {
                f(url);
                f(message);
            }
            ProviderError::RetriesExhausted { last, .. } => f(last),
            ProviderError::IdleTimeout { .. } => {}
        }
    }

    /// True for errors worth another attempt: unreachable servers, HTTP
    /// 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::Unreachable { .. }
                | ProviderError::Http {
                    status: 429 | 500..=599,
                    ..
                }
        )
    }
}

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// OpenAI Chat Completions (`/chat/completions`), the default; most
    /// compatible servers speak it.
    #[default]
    Chat,
    /// OpenAI Responses (`/responses`).
    Responses,
    /// Anthropic Messages (`POST {base_url}/messages`).
    Anthropic,
    /// Ollama's native `/api/chat` (base_url is the server root).
    Ollama,
    /// No server: replays a script (tests, demos, recorded sessions).
    Scripted,
}

/// The field that carries the output limit in a Chat Completions request.
/// OpenAI's o-series and GPT-5 reject `max_tokens`; many compatible
/// servers know only `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensParam {
    /// `max_tokens`, the default.
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI's reasoning models).
    MaxCompletionTokens,
}

// A later config layer's value replaces it (cogni_protocol::layer).
cogni_protocol::replaced_whole!(WireApi, MaxTokensParam);

/// Retry settings for one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySettings {
    /// Retries after the first attempt (`max_retries`, default 4; 0: none).
    pub max_retries: u32,
    /// The first retry's delay, doubled for each further one
    /// (`retry_base_ms`, default 500 ms).
    pub base_delay: Duration,
    /// The longest delay between attempts (`retry_max_ms`, default 30 s).
    pub max_delay: Duration,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// A fully resolved provider: where it lives, how to authenticate, how
/// patient to be. Built by the config layer, validated before any request.
/// Its `Debug` output redacts the key.
#[derive(Clone)]
pub struct ProviderInfo {
    /// The provider's id: the NAME of `[model_providers.NAME]` (`openai`,
    /// `ollama`, ...), named in errors.
    pub id: String,
    /// A display name (`OpenAI`; the `name` key), the id when not set.
    pub name: String,
    /// The API's base URL; request paths are appended to it.
    pub base_url: String,
    /// The wire protocol the server speaks.
    pub wire_api: WireApi,
    /// The variable the key is read from, named in auth errors.
    pub env_key: Option<String>,
    /// The resolved key; never printed.
    pub api_key: Option<String>,
    /// Extra headers sent with every request (`http_headers`).
    pub http_headers: BTreeMap<String, String>,
    /// Query parameters added to every request URL (`query_params`, e.g.
    /// Azure's `api-version`).
    pub query_params: BTreeMap<String, String>,
    /// How failed requests are retried.
    pub retry: RetrySettings,
    /// How long connecting may take (`connect_timeout_ms`, default 10 s).
    pub connect_timeout: Duration,
    /// How long a response stream may send nothing before it is given up
    /// (`stream_idle_timeout_ms`, default 300 s).
    pub stream_idle_timeout: Duration,
    /// Model family used for models the built-in catalog does not know.
    pub default_family: Option<String>,
    /// Default model when none is configured.
    pub default_model: Option<String>,
    /// For the scripted provider: the script to replay.
    pub script: Option<PathBuf>,
    /// The header that carries the key, overriding the wire API's default
    /// (e.g. `api-key` for Azure).
    pub key_header: Option<String>,
    /// A command that prints a bearer token (a cloud CLI); used instead of
    /// a key and cached for `auth_command_ttl`.
    pub auth_command: Option<Vec<String>>,
    /// How long a token from `auth_command` is reused
    /// (`auth_command_ttl_secs`).
    pub auth_command_ttl: Duration,
    /// The Chat Completions output limit field for every model of this
    /// provider; `None` lets each model family decide.
    pub max_tokens_param: Option<MaxTokensParam>,
    /// The environment variable a built-in provider reads its base URL
    /// from (`ANTHROPIC_BASE_URL`), named when a URL is not found.
    pub base_url_env: Option<String>,
}

impl std::fmt::Debug for ProviderInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderInfo")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("wire_api", &self.wire_api)
            .field("env_key", &self.env_key)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "http_headers",
                &self.http_headers.keys().collect::<Vec<_>>(),
            )
            .field("query_params", &self.query_params)
            .field("retry", &self.retry)
            .field("connect_timeout", &self.connect_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("default_family", &self.default_family)
            .field("default_model", &self.default_model)
            .field("script", &self.script)
            .field("key_header", &self.key_header)
            .field("auth_command", &self.auth_command)
            .field("max_tokens_param", &self.max_tokens_param)
            .field("base_url_env", &self.base_url_env)
            .finish()
    }
}

impl ProviderInfo {
    /// Where the user fixes a rejected or missing key.
    pub fn key_hint(&self) -> String {
        match &self.env_key {
            Some(var) => format!("Check the key in ${var}."),
            None => format!(
                "Set env_key (or key_file) in [model_providers.{}] so cogni sends a key.",
                self.id
            ),
        }
    }

    /// Where the user fixes a URL the server does not know.
    pub fn base_url_hint(&self) -> String {
        let table = format!("base_url in [model_providers.{}]", self.id);
        match &self.base_url_env {
            Some(var) => format!("{table} (or ${var})"),
            None => table,
        }
    }

    /// A provider with only an id, a URL and a wire API; everything else
    /// at its default (no key, default retries and timeouts).
    pub fn new(id: &str, base_url: &str, wire_api: WireApi) -> Self {
        ProviderInfo {
            id: id.to_string(),
            name: id.to_string(),
            base_url: base_url.to_string(),
            wire_api,
            env_key: None,
            api_key: None,
            http_headers: BTreeMap::new(),
            query_params: BTreeMap::new(),
            retry: RetrySettings::default(),
            connect_timeout: Duration::from_secs(10),
            stream_idle_timeout: Duration::from_secs(300),
            default_family: None,
            default_model: None,
            script: None,
            key_header: None,
            auth_command: None,
            auth_command_ttl: Duration::from_secs(300),
            max_tokens_param: None,
            base_url_env: None,
        }
    }
}

/// Build the provider client for `info`. No network I/O happens here.
pub fn create(info: &ProviderInfo) -> Result<Arc<dyn Provider>, ProviderError> {
    match info.wire_api {
        WireApi::Chat => Ok(Arc::new(chat_completions::ChatCompletions::new(
            info.clone(),
        )?)),
        WireApi::Responses => Ok(Arc::new(responses::Responses::new(info.clone())?)),
        WireApi::Anthropic => Ok(Arc::new(anthropic::AnthropicMessages::new(info.clone())?)),
        WireApi::Ollama => Ok(Arc::new(ollama::Ollama::new(info.clone())?)),
        WireApi::Scripted => {
            let path = info.script.as_ref().ok_or_else(|| ProviderError::Other {
                provider: info.id.clone(),
                message: "the scripted provider needs a script: pass --script FILE".into(),
            })?;
            Ok(Arc::new(scripted::ScriptedProvider::from_file(path)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_redacts_the_key() {
        let mut info = ProviderInfo::new("x", "http://127.0.0.1:1/v1", WireApi::Chat);
        info.api_key = Some("sk-secret-value".into());
        info.http_headers
            .insert("Authorization".into(), "Bearer sk-header-secret".into());
        let text = format!("{info:?}");
        assert!(
            !text.contains("sk-secret-value") && !text.contains("sk-header-secret"),
            "{text}"
        );
        assert!(text.contains("<redacted>"));
    }

    #[test]
    fn key_hint_names_the_variable_or_the_config_table() {
        let mut info = ProviderInfo::new("local", "http://h", WireApi::Chat);
        assert!(info.key_hint().contains("[model_providers.local]"));
        info.env_key = Some("LOCAL_KEY".into());
        assert_eq!(info.key_hint(), "Check the key in $LOCAL_KEY.");
    }
}
