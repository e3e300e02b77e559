//! Context windows a server tells about its models (Ollama's `/api/show`,
//! an OpenAI-compatible `/models` entry), asked once per model and
//! announced to the engine as [`ResponseEvent::ModelInfo`] ahead of the
//! response.

use super::http::Endpoint;
use super::{ProviderError, ResponseEvent, ResponseStream};
use futures::StreamExt;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// Windows by model; `None`: the server named none.
#[derive(Default)]
pub(crate) struct Windows(Mutex<HashMap<String, Option<u64>>>);

impl Windows {
    /// The window for `model`: known, or asked with `ask` (`where_` names
    /// the endpoint for the log). A failed question is not remembered (the
    /// server may answer next time); an answer without a window is.
    pub(crate) async fn get<F>(&self, model: &str, where_: &str, ask: F) -> Option<u64>
    where
        F: Future<Output = Result<Option<u64>, ProviderError>>,
    {
        let lock = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = lock().get(model) {
            return *known;
        }
        match ask.await {
            Ok(window) => {
                if window.is_none() {
                    tracing::warn!(
                        model,
                        "{where_} named no context length; keeping the default window"
                    );
                }
                lock().insert(model.to_string(), window);
                window
            }
            Err(error) => {
                tracing::warn!(model, %error, "could not read the context window from {where_}");
                None
            }
        }
    }
}

/// `rest`, preceded by the window it was sized for.
pub(crate) fn announce(window: u64, rest: ResponseStream) -> ResponseStream {
    let info = ResponseEvent::ModelInfo {
        context_window: window,
    };
    Box::pin(futures::stream::once(async move { Ok(info) }).chain(rest))
}

/// Longest wait for `GET /models`.
const MODELS_TIMEOUT: Duration = Duration::from_secs(5);

/// The window of `model` in an OpenAI-compatible `GET {base_url}/models`
/// answer, where the server says: `context_length` (OpenRouter, LM
/// Studio), `context_window` (Groq, Mistral), `max_model_len` (vLLM),
/// `max_context_length`, or `top_provider.context_length`.
pub(crate) async fn from_models_list(
    endpoint: &Endpoint,
    model: &str,
) -> Result<Option<u64>, ProviderError> {
    let list = endpoint
        .request_json(reqwest::Method::GET, "/models", None, model, MODELS_TIMEOUT)
        .await?;
    Ok(window_in_list(&list, model))
}

fn window_in_list(list: &Value, model: &str) -> Option<u64> {
    let entry = list
        .get("data")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))?;
    [
        "context_length",
        "context_window",
        "max_model_len",
        "max_context_length",
    ]
    .iter()
    .find_map(|key| entry.get(key).and_then(Value::as_u64))
    .or_else(|| entry.pointer("/top_provider/context_length")?.as_u64())
    .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_window_comes_from_the_models_entry_in_any_of_its_spellings() {
        for (entry, window) in [
            (json!({"id": "m", "context_length": 8192}), Some(8192)),
            (json!({"id": "m", "context_window": 32768}), Some(32768)),
            (json!({"id": "m", "max_model_len": 4096}), Some(4096)),
            (json!({"id": "m", "max_context_length": 16384}), Some(16384)),
            (
                json!({"id": "m", "top_provider": {"context_length": 65536}}),
                Some(65536),
            ),
            (json!({"id": "m", "owned_by": "me"}), None),
            (json!({"id": "m", "context_length": 0}), None),
            (json!({"id": "other", "context_length": 8192}), None),
        ] {
            let list = json!({"object": "list", "data": [entry]});
            assert_eq!(window_in_list(&list, "m"), window, "{list}");
        }
        assert_eq!(window_in_list(&json!({"error": "x"}), "m"), None);
    }
}
