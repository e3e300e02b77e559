//! Model providers: one neutral request in, one neutral event stream out.
//!
//! Each wire API lives in its own file and maps its stream onto
//! [`ResponseEvent`]. A stream that ends without its terminal event is an
//! error, never a success.

pub mod anthropic;
pub mod chat_completions;
mod freeform;
pub mod http;
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

use cogni_protocol::{HistoryItem, Reasoning, StopReason, ToolCall, ToolSpec, Usage};
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use model_family::{ModelFamily, ToolCallMode};

/// Everything a provider needs to send one request.
#[derive(Debug, Clone)]
pub struct ModelRequest<'a> {
    pub model: &'a str,
    pub instructions: &'a str,
    pub input: &'a [HistoryItem],
    pub tools: &'a [ToolSpec],
    pub parallel_tool_calls: bool,
    pub output_schema: Option<&'a serde_json::Value>,
    pub temperature: Option<f32>,
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
}

/// The neutral stream every wire API is mapped onto.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// A tool call began (id and name known); arguments follow.
    ToolCallStarted { id: String, name: String },
    /// A complete tool call, in the order the model produced it.
    ToolCall(ToolCall),
    /// Reasoning to keep in history (before the calls that follow it).
    Reasoning(Reasoning),
    /// The server told us the model's context window (e.g. Ollama's
    /// `/api/show`); the engine adjusts its compaction limit.
    ModelInfo { context_window: u64 },
    /// The provider is about to retry after a failure.
    Retrying {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    /// The terminal event: the response is complete.
    Completed {
        usage: Option<Usage>,
        stop_reason: StopReason,
        /// A tool call that was cut off by `stop_reason` and must not run.
        incomplete_tool_call: Option<String>,
    },
}

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
    #[error(
        "{provider}: authentication failed for model `{model}` (HTTP {status}): {message}. {hint}"
    )]
    Auth {
        provider: String,
        model: String,
        status: u16,
        message: String,
        /// What to fix, naming the key's variable (see [`ProviderInfo::key_hint`]).
        hint: String,
    },
    #[error("{provider}: request for model `{model}` failed with HTTP {status}: {message}")]
    Http {
        provider: String,
        model: String,
        status: u16,
        message: String,
    },
    #[error("{provider}: could not reach {url}: {message}")]
    Unreachable {
        provider: String,
        url: String,
        message: String,
    },
    #[error("{provider}: gave up on model `{model}` after {attempts} attempts: {last}")]
    RetriesExhausted {
        provider: String,
        model: String,
        attempts: u32,
        last: String,
    },
    #[error("{provider}: stream for model `{model}` broke: {message}")]
    Stream {
        provider: String,
        model: String,
        message: String,
    },
    #[error("{provider}: no data for {idle_secs}s from model `{model}` (idle timeout; raise stream_idle_timeout_ms in [model_providers.{provider}])")]
    IdleTimeout {
        provider: String,
        model: String,
        idle_secs: u64,
    },
    #[error(
        "{provider}: the request for model `{model}` is larger than its context window: {message}"
    )]
    ContextOverflow {
        provider: String,
        model: String,
        message: String,
    },
    #[error("{provider}: {message}")]
    Other { provider: String, message: String },
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
    #[default]
    Chat,
    /// OpenAI Responses (`/responses`).
    Responses,
    /// Anthropic Messages (`POST {base_url}/messages`).
    Anthropic,
    /// Ollama's native `/api/chat` (base_url is the server root).
    Ollama,
    Scripted,
}

/// The field that carries the output limit in a Chat Completions request.
/// OpenAI's o-series and GPT-5 reject `max_tokens`; many compatible
/// servers know only `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensParam {
    #[default]
    MaxTokens,
    MaxCompletionTokens,
}

// A later config layer's value replaces it (cogni_protocol::layer).
cogni_protocol::replaced_whole!(WireApi, MaxTokensParam);

/// Retry settings for one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySettings {
    pub max_retries: u32,
    pub base_delay: Duration,
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
    pub id: String,
    pub name: String,
    pub base_url: String,
    pub wire_api: WireApi,
    /// The variable the key is read from, named in auth errors.
    pub env_key: Option<String>,
    /// The resolved key; never printed.
    pub api_key: Option<String>,
    pub http_headers: BTreeMap<String, String>,
    pub query_params: BTreeMap<String, String>,
    pub retry: RetrySettings,
    pub connect_timeout: Duration,
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
