//! Which models a provider serves, where its API offers a list.

use super::http::{Endpoint, Wire};
use super::retry::Jitter;
use super::{anthropic, chat_completions, ollama, responses, ProviderError, ProviderInfo, WireApi};
use serde_json::Value;
use std::time::Duration;

/// Longest a model listing may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

/// The provider's model ids, sorted.
pub async fn list_models(info: &ProviderInfo) -> Result<Vec<String>, ProviderError> {
    // The API's own endpoint settings (auth, headers), at `/models`.
    let wire = match info.wire_api {
        WireApi::Scripted => return Ok(vec!["scripted".to_string()]),
        WireApi::Ollama => return ollama::list_models(info).await,
        WireApi::Chat => chat_completions::WIRE,
        WireApi::Responses => responses::WIRE,
        WireApi::Anthropic => anthropic::WIRE,
    };
    let wire = Wire {
        path: "/models",
        ..wire
    };
    let endpoint = Endpoint::new(info.clone(), wire, Jitter::random())?;
    let answer = endpoint
        .request_json(reqwest::Method::GET, "/models", None, "", LIST_TIMEOUT)
        .await?;
    Ok(model_ids(&answer))
}

/// `data[].id` (OpenAI- and Anthropic-style lists).
fn model_ids(answer: &Value) -> Vec<String> {
    let mut ids: Vec<String> = answer
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_data() {
        let answer = serde_json::json!({"data": [{"id": "b"}, {"id": "a"}, {"object": "x"}]});
        assert_eq!(model_ids(&answer), ["a", "b"]);
        assert!(model_ids(&serde_json::json!({})).is_empty());
    }
}
