//! Chat Completions: the API's request validation and its overflow errors
//! (OpenAI's and those of compatible servers), for the mock. The SSE
//! builders are in [`super::mock::chat`].

use super::mock::MockResponse;
use super::wire_responses::{openai_error, temperature_rule};
use serde_json::{json, Value};

/// Models OpenAI serves only with `max_completion_tokens`.
fn needs_completion_tokens(model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    ["gpt-5", "o1", "o3", "o4"]
        .iter()
        .any(|prefix| model.starts_with(prefix))
}

/// The first rule of the Chat Completions API that `body` breaks, with the
/// parameter it names and the error code, as OpenAI reports them:
/// `temperature` within 0..2; no `max_tokens` for the o-series and GPT-5;
/// every `tool` message answers a call of the assistant message before the
/// run of tool messages it is in; every assistant `tool_calls` entry is
/// answered by one of the tool messages right after it; an assistant
/// message has content or tool calls.
pub fn rule_broken(body: &Value) -> Option<(String, String, Option<&'static str>)> {
    if let Some((message, code)) = temperature_rule(body) {
        return Some((message, "temperature".into(), Some(code)));
    }
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    if body.get("max_tokens").is_some() && needs_completion_tokens(model) {
        return Some((
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.".into(),
            "max_tokens".into(),
            Some("unsupported_parameter"),
        ));
    }
    let messages = body.get("messages").and_then(Value::as_array)?;
    let role = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let call_ids = |m: &Value| -> Vec<String> {
        m.get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    for (at, message) in messages.iter().enumerate() {
        let parts = message.get("content").and_then(Value::as_array);
        for (n, part) in parts.into_iter().flatten().enumerate() {
            if part.get("type").and_then(Value::as_str) != Some("image_url") {
                continue;
            }
            if role(message) != "user" {
                return Some((format!("Invalid 'messages[{at}]'. Image URLs are only allowed for messages with role 'user', but this message with role '{}' contains an image URL.", role(message)), format!("messages.[{at}].content.[{n}].type"), Some("invalid_value")));
            }
            let url = part
                .pointer("/image_url/url")
                .and_then(Value::as_str)
                .unwrap_or("");
            if let Some(problem) = super::images::url_problem(url) {
                return Some((
                    problem,
                    format!("messages.[{at}].content.[{n}].image_url.url"),
                    Some("invalid_image_url"),
                ));
            }
        }
    }
    // The calls the current run of tool messages may answer.
    let mut open: Vec<String> = Vec::new();
    let mut opened_at = 0;
    for (at, message) in messages.iter().enumerate() {
        if role(message) == "tool" {
            if at == 0
                || (role(&messages[at - 1]) != "tool" && call_ids(&messages[at - 1]).is_empty())
            {
                return Some(("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".into(), format!("messages.[{at}].role"), None));
            }
            let id = message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or("");
            match open.iter().position(|c| c == id) {
                Some(n) => {
                    open.remove(n);
                }
                None => {
                    return Some((format!("Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."), format!("messages.[{at}].tool_call_id"), None));
                }
            }
            continue;
        }
        if !open.is_empty() {
            return Some((format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", open.join(", ")), format!("messages.[{opened_at}].role"), None));
        }
        if role(message) == "assistant" {
            let has_content = message.get("content").is_some_and(|c| !c.is_null());
            open = call_ids(message);
            opened_at = at;
            if !has_content && open.is_empty() {
                return Some((
                    "Invalid value for 'content': expected a string, got null.".into(),
                    format!("messages.[{at}].content"),
                    None,
                ));
            }
        }
    }
    if !open.is_empty() {
        return Some((format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", open.join(", ")), format!("messages.[{opened_at}].role"), None));
    }
    None
}

/// The broken rule and OpenAI's 400 for it.
pub fn rejection(body: &Value) -> Option<(String, MockResponse)> {
    let (message, param, code) = rule_broken(body)?;
    let response = openai_error(400, &message, Some(&param), code);
    Some((message, response))
}

/// OpenAI's overflow: `context_length_exceeded`.
pub fn openai_overflow(tokens: u64, window: u64) -> MockResponse {
    openai_error(
        400,
        &format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
        Some("messages"),
        Some("context_length_exceeded"),
    )
}

/// vLLM's overflow (its error object at the top level, `code` a number).
pub fn vllm_overflow(tokens: u64, window: u64) -> MockResponse {
    MockResponse::json(
        400,
        &json!({
            "object": "error",
            "message": format!("This model's maximum context length is {window} tokens. However, you requested {} tokens ({tokens} in the messages, 1024 in the completion). Please reduce the length of the messages or completion.", tokens + 1024),
            "type": "BadRequestError",
            "param": null,
            "code": 400,
        }),
    )
}

/// The llama.cpp server's overflow.
pub fn llama_cpp_overflow(tokens: u64, window: u64) -> MockResponse {
    MockResponse::json(
        400,
        &json!({"error": {
            "code": 400,
            "message": format!("request ({tokens} tokens) exceeds the available context size ({window} tokens), try increasing it"),
            "type": "exceed_context_size_error",
            "n_prompt_tokens": tokens,
            "n_ctx": window,
        }}),
    )
}
