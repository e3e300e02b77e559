//! Built-in providers and `[model_providers.<id>]`.

use super::ConfigError;
use cogni_provider::{MaxTokensParam, ProviderInfo, WireApi};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

cogni_protocol::layered! {
    /// `[model_providers.<id>]`: a new provider, or changes to a built-in one.
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct ProviderFile {
        /// A display name (`OpenAI`); unset: the id.
        pub name: Option<String>,
        /// The API's base URL.
        pub base_url: Option<String>,
        /// Environment variable holding the API key.
        pub env_key: Option<String>,
        /// File holding the API key (checked when the variable is unset).
        pub key_file: Option<PathBuf>,
        /// Plaintext key: works, with a warning. Prefer env_key or key_file.
        pub api_key: Option<String>,
        /// The wire protocol the server speaks (default `chat`).
        pub wire_api: Option<WireApi>,
        /// Extra headers sent with every request.
        pub http_headers: Option<BTreeMap<String, String>>,
        /// Query parameters added to every request URL.
        pub query_params: Option<BTreeMap<String, String>>,
        /// Retries after a failed attempt (default 4).
        pub max_retries: Option<u32>,
        /// The first retry's delay in milliseconds, doubled for each further
        /// one (default 500).
        pub retry_base_ms: Option<u64>,
        /// The longest delay between attempts, in milliseconds (default
        /// 30000).
        pub retry_max_ms: Option<u64>,
        /// How long connecting may take, in milliseconds (default 10000).
        pub connect_timeout_ms: Option<u64>,
        /// How long a stream may send nothing, in milliseconds (default
        /// 300000).
        pub stream_idle_timeout_ms: Option<u64>,
        /// Family for models the built-in catalog does not know (e.g. `generic`).
        pub default_family: Option<String>,
        /// The model used when the config names none.
        pub default_model: Option<String>,
        /// For `wire_api = "scripted"`: the script to replay.
        pub script: Option<PathBuf>,
        /// Send the key in this header instead of `Authorization: Bearer`.
        pub key_header: Option<String>,
        /// A command printing a bearer token (e.g. `["gcloud", "auth", "print-access-token"]`),
        /// used instead of a key.
        pub auth_command: Option<Vec<String>>,
        /// How long a token from auth_command is reused (default 300).
        pub auth_command_ttl_secs: Option<u64>,
        /// Chat Completions: send the output limit as `max_tokens` or
        /// `max_completion_tokens` for every model (default: by model family).
        pub max_tokens_param: Option<MaxTokensParam>,
    }
}

impl ProviderFile {
    pub(super) fn resolve_paths(&mut self, dir: &Path) {
        for p in [self.key_file.as_mut(), self.script.as_mut()]
            .into_iter()
            .flatten()
        {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        }
    }
}

/// The ids of the built-in providers (`openai`, `anthropic`, ...).
pub const BUILTIN_IDS: &[&str] = &[
    "openai",
    "anthropic",
    "openrouter",
    "azure",
    "ollama",
    "scripted",
];

/// The Azure OpenAI API version sent when none is configured.
const AZURE_API_VERSION: &str = "2024-10-21";

fn builtin(id: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<ProviderInfo> {
    let nonempty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    Some(match id {
        "openai" => {
            let base =
                nonempty("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
            let mut p = ProviderInfo::new("openai", &base, WireApi::Chat);
            p.name = "OpenAI".into();
            p.env_key = Some("OPENAI_API_KEY".into());
            p.base_url_env = Some("OPENAI_BASE_URL".into());
            p.default_model = Some("gpt-4.1".into());
            p
        }
        "anthropic" => {
            let base = nonempty("ANTHROPIC_BASE_URL")
                .unwrap_or_else(|| "https://api.anthropic.com".into());
            let mut p = ProviderInfo::new("anthropic", &anthropic_base(&base), WireApi::Anthropic);
            p.name = "Anthropic".into();
            p.env_key = Some("ANTHROPIC_API_KEY".into());
            p.base_url_env = Some("ANTHROPIC_BASE_URL".into());
            p.default_model = Some("claude-sonnet-4-5".into());
            p
        }
        "openrouter" => {
            let mut p =
                ProviderInfo::new("openrouter", "https://openrouter.ai/api/v1", WireApi::Chat);
            p.name = "OpenRouter".into();
            p.env_key = Some("OPENROUTER_API_KEY".into());
            p.default_family = Some("generic".into());
            p.default_model = Some("openai/gpt-4.1".into());
            // OpenRouter's optional app attribution.
            p.http_headers.insert("X-Title".into(), "cogni".into());
            p
        }
        "azure" => {
            // A deployment URL: https://NAME.openai.azure.com/openai/deployments/DEPLOYMENT
            let base = nonempty("AZURE_OPENAI_BASE_URL").unwrap_or_default();
            let mut p = ProviderInfo::new("azure", base.trim_end_matches('/'), WireApi::Chat);
            p.name = "Azure OpenAI".into();
            p.env_key = Some("AZURE_OPENAI_API_KEY".into());
            p.base_url_env = Some("AZURE_OPENAI_BASE_URL".into());
            p.key_header = Some("api-key".into());
            let version =
                nonempty("AZURE_OPENAI_API_VERSION").unwrap_or_else(|| AZURE_API_VERSION.into());
            p.query_params.insert("api-version".into(), version);
            // Deployment names are the user's own.
            p.default_family = Some("generic".into());
            // So the family cannot tell an o-series deployment; Azure takes
            // `max_completion_tokens` for every model since 2024-09-01.
            p.max_tokens_param = Some(MaxTokensParam::MaxCompletionTokens);
            p
        }
        "ollama" => {
            let host = nonempty("OLLAMA_HOST").unwrap_or_else(|| "http://localhost:11434".into());
            // The native API (`/api/chat`); `wire_api = "chat"` with a
            // `/v1` base_url selects Ollama's OpenAI-compatible endpoint.
            let mut p = ProviderInfo::new("ollama", &ollama_base(&host), WireApi::Ollama);
            p.name = "Ollama".into();
            p.base_url_env = Some("OLLAMA_HOST".into());
            p.default_family = Some("generic".into());
            p.default_model = Some("qwen2.5-coder:7b".into());
            // Local models can take long to load before the first byte.
            p.stream_idle_timeout = Duration::from_secs(600);
            p
        }
        "scripted" => {
            let mut p = ProviderInfo::new("scripted", "", WireApi::Scripted);
            p.name = "Scripted (offline)".into();
            p.default_model = Some("scripted".into());
            p.retry.max_retries = 0;
            p
        }
        _ => return None,
    })
}

/// An Anthropic base URL may be the API root (as in Anthropic's SDKs and
/// LiteLLM's docs) or end in `/v1`; the Messages path lives under `/v1`.
fn anthropic_base(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with("/v1") {
        base.to_string()
    } else {
        format!("{base}/v1")
    }
}

/// `OLLAMA_HOST` may be a URL, `host:port` or a bare host (port 11434).
fn ollama_base(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    if host.contains("://") {
        host.to_string()
    } else if host.contains(':') {
        format!("http://{host}")
    } else {
        format!("http://{host}:11434")
    }
}

/// The provider `id`: a built-in, adjusted by its `[model_providers.<id>]`
/// table, or a provider declared only in config.
pub fn resolve(
    id: &str,
    declared: &BTreeMap<String, ProviderFile>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ProviderInfo, ConfigError> {
    let file = declared.get(id);
    let mut info = match (builtin(id, env), file) {
        (Some(info), _) => info,
        (None, Some(f)) => {
            let Some(base_url) = f.base_url.as_deref() else {
                return Err(ConfigError(format!(
                    "[model_providers.{id}] needs base_url (e.g. \"http://localhost:8000/v1\")"
                )));
            };
            ProviderInfo::new(id, base_url.trim_end_matches('/'), WireApi::Chat)
        }
        (None, None) => {
            let mut known: Vec<&str> = BUILTIN_IDS.to_vec();
            known.extend(declared.keys().map(String::as_str));
            return Err(ConfigError(format!(
                "unknown provider `{id}`; known providers: {}. Declare it as [model_providers.{id}] with a base_url",
                known.join(", ")
            )));
        }
    };
    if let Some(f) = file {
        apply(&mut info, f)?;
    }
    if info.wire_api == WireApi::Anthropic {
        // The root form (`http://host:4000`), as Anthropic's SDKs and
        // LiteLLM write it, works like the `/v1` form.
        info.base_url = anthropic_base(&info.base_url);
    }
    if info.wire_api != WireApi::Scripted {
        validate_url(id, &info.base_url)?;
    }
    Ok(info)
}

fn apply(p: &mut ProviderInfo, f: &ProviderFile) -> Result<(), ConfigError> {
    let ms = Duration::from_millis;
    if let Some(v) = &f.name {
        p.name = v.clone();
    }
    if let Some(v) = &f.base_url {
        p.base_url = v.trim_end_matches('/').to_string();
    }
    if let Some(v) = &f.env_key {
        p.env_key = Some(v.clone());
    }
    if let Some(v) = f.wire_api {
        p.wire_api = v;
    }
    if let Some(v) = &f.http_headers {
        p.http_headers = v.clone();
    }
    if let Some(v) = &f.query_params {
        p.query_params = v.clone();
    }
    if let Some(v) = f.max_retries {
        p.retry.max_retries = v;
    }
    if let Some(v) = f.retry_base_ms {
        p.retry.base_delay = ms(v);
    }
    if let Some(v) = f.retry_max_ms {
        p.retry.max_delay = ms(v);
    }
    if let Some(v) = f.connect_timeout_ms {
        p.connect_timeout = ms(v);
    }
    if let Some(v) = f.stream_idle_timeout_ms {
        if v == 0 {
            return Err(ConfigError(format!(
                "[model_providers.{}] stream_idle_timeout_ms must be at least 1",
                p.id
            )));
        }
        p.stream_idle_timeout = ms(v);
    }
    if let Some(v) = &f.default_family {
        p.default_family = Some(v.clone());
    }
    if let Some(v) = &f.default_model {
        p.default_model = Some(v.clone());
    }
    if let Some(v) = &f.script {
        p.script = Some(v.clone());
    }
    if let Some(v) = &f.key_header {
        p.key_header = Some(v.clone());
    }
    if let Some(argv) = &f.auth_command {
        if argv.is_empty() {
            return Err(ConfigError(format!(
                "[model_providers.{}] auth_command is empty; give the program and its arguments",
                p.id
            )));
        }
        p.auth_command = Some(argv.clone());
    }
    if let Some(v) = f.auth_command_ttl_secs {
        p.auth_command_ttl = Duration::from_secs(v);
    }
    if let Some(v) = f.max_tokens_param {
        p.max_tokens_param = Some(v);
    }
    Ok(())
}

fn validate_url(id: &str, url: &str) -> Result<(), ConfigError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else if url.is_empty() {
        let hint = if id == "azure" {
            " (for Azure: set AZURE_OPENAI_BASE_URL to https://NAME.openai.azure.com/openai/deployments/DEPLOYMENT)"
        } else {
            ""
        };
        Err(ConfigError(format!(
            "provider `{id}` has no base_url: set it in [model_providers.{id}]{hint}"
        )))
    } else {
        Err(ConfigError(format!(
            "provider `{id}`: base_url `{url}` must start with http:// or https://"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_uses_its_endpoint_header_and_api_version() {
        let env = |k: &str| match k {
            "AZURE_OPENAI_BASE_URL" => {
                Some("https://acme.openai.azure.com/openai/deployments/gpt4/".to_string())
            }
            _ => None,
        };
        let p = resolve("azure", &BTreeMap::new(), &env).unwrap();
        assert_eq!(
            p.base_url,
            "https://acme.openai.azure.com/openai/deployments/gpt4"
        );
        assert_eq!(p.key_header.as_deref(), Some("api-key"));
        assert_eq!(p.query_params["api-version"], AZURE_API_VERSION);
        assert_eq!(p.env_key.as_deref(), Some("AZURE_OPENAI_API_KEY"));
        let err = resolve("azure", &BTreeMap::new(), &|_| None).unwrap_err();
        assert!(err.0.contains("AZURE_OPENAI_BASE_URL"), "{}", err.0);
    }

    #[test]
    fn anthropic_base_url_forms() {
        assert_eq!(
            anthropic_base("https://api.anthropic.com"),
            "https://api.anthropic.com/v1"
        );
        assert_eq!(
            anthropic_base("http://127.0.0.1:9/v1/"),
            "http://127.0.0.1:9/v1"
        );
        let env = |k: &str| (k == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9".to_string());
        let p = resolve("anthropic", &BTreeMap::new(), &env).unwrap();
        assert_eq!(
            (p.base_url.as_str(), p.wire_api),
            ("http://127.0.0.1:9/v1", WireApi::Anthropic)
        );
        assert_eq!(p.env_key.as_deref(), Some("ANTHROPIC_API_KEY"));
    }

    #[test]
    fn a_declared_anthropic_provider_takes_the_root_url() {
        let declared = |base_url: &str| {
            let file = ProviderFile {
                base_url: Some(base_url.into()),
                wire_api: Some(WireApi::Anthropic),
                ..ProviderFile::default()
            };
            let providers = BTreeMap::from([("litellm".to_string(), file)]);
            resolve("litellm", &providers, &|_| None).unwrap().base_url
        };
        assert_eq!(
            declared("http://127.0.0.1:4000"),
            "http://127.0.0.1:4000/v1"
        );
        assert_eq!(
            declared("http://127.0.0.1:4000/"),
            "http://127.0.0.1:4000/v1"
        );
        assert_eq!(
            declared("http://127.0.0.1:4000/v1"),
            "http://127.0.0.1:4000/v1"
        );
        // A chat provider's URL is used as written.
        let file = ProviderFile {
            base_url: Some("http://127.0.0.1:4000".into()),
            ..ProviderFile::default()
        };
        let providers = BTreeMap::from([("local".to_string(), file)]);
        let local = resolve("local", &providers, &|_| None).unwrap();
        assert_eq!(local.base_url, "http://127.0.0.1:4000");
    }

    #[test]
    fn ollama_host_forms() {
        assert_eq!(ollama_base("localhost:11434"), "http://localhost:11434");
        assert_eq!(ollama_base("0.0.0.0"), "http://0.0.0.0:11434");
        assert_eq!(
            ollama_base("https://ollama.example/"),
            "https://ollama.example"
        );
        assert_eq!(
            ollama_base("http://127.0.0.1:9999"),
            "http://127.0.0.1:9999"
        );
    }
}
