//! Ollama /api/chat: NDJSON builders and the tool pairing check for the mock.

use super::mock::MockResponse;
use serde_json::{json, Value};

/// Problems with tool-call pairing in an Ollama /api/chat request body:
/// every assistant `tool_calls` entry is answered by one `tool` message
/// after it. Ollama has no call ids, so the `tool` messages directly after
/// an assistant message answer its calls in order (and name their tool when
/// they give `tool_name`); any other `tool` message is an orphan.
pub fn pairing_violations(body: &Value) -> Vec<String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_string);
    let mut problems = Vec::new();
    // Calls (their names) still waiting for an answer, and where they were made.
    let mut open: Vec<String> = Vec::new();
    let mut called_at = 0;
    let mut answered = 0;
    let close = |open: &mut Vec<String>, answered: usize, at: usize, problems: &mut Vec<String>| {
        for (n, name) in open.iter().enumerate().skip(answered) {
            problems.push(format!(
                "tool call {n} (`{name}`, message {at}) has no tool message"
            ));
        }
        open.clear();
    };
    for (at, message) in messages.iter().enumerate() {
        match role(message).as_deref() {
            Some("tool") => {
                let name = message.get("tool_name").and_then(Value::as_str);
                match open.get(answered) {
                    Some(expected) => {
                        if name.is_some_and(|name| name != expected) {
                            problems.push(format!(
                                "tool message {at} names `{}` but answers call {answered} (`{expected}`, message {called_at})",
                                name.unwrap_or_default()
                            ));
                        }
                        answered += 1;
                    }
                    None => problems.push(format!(
                        "tool message {at} (`{}`) answers no tool call",
                        name.unwrap_or("?")
                    )),
                }
            }
            other => {
                close(&mut open, answered, called_at, &mut problems);
                answered = 0;
                if other == Some("assistant") {
                    called_at = at;
                    open = message
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|call| {
                            call.pointer("/function/name")
                                .and_then(Value::as_str)
                                .unwrap_or("?")
                                .to_string()
                        })
                        .collect();
                }
            }
        }
    }
    close(&mut open, answered, called_at, &mut problems);
    problems
}

/// The first rule of `/api/chat` that `body` breaks, as Ollama words it.
/// Ollama renders any message order through the model's template, so it
/// checks no tool pairing; it checks the request's types as it binds them:
/// a model name, a `think` of true, false, "high", "medium", "low" or
/// "max", and tool call `arguments` that are a JSON object.
pub fn rule_broken(body: &Value) -> Option<String> {
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Some("model is required".into());
    }
    match body.get("think") {
        None | Some(Value::Bool(_)) => {}
        Some(Value::String(level))
            if ["high", "medium", "low", "max"].contains(&level.as_str()) => {}
        Some(other) => {
            let shown = other
                .as_str()
                .map_or(other.to_string(), |s| format!("{s:?}"));
            return Some(format!("invalid think value: {shown} (must be \"high\", \"medium\", \"low\", \"max\", true, or false)"));
        }
    }
    let messages = body.get("messages").and_then(Value::as_array)?;
    for message in messages {
        let images = message.get("images").and_then(Value::as_array);
        for image in images.into_iter().flatten() {
            let data = image.as_str().unwrap_or("");
            let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data);
            if bytes.map_or(true, |b| image::guess_format(&b).is_err()) {
                return Some("illegal base64 data at input byte 0".into());
            }
        }
        for call in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let arguments = call.pointer("/function/arguments");
            if arguments.is_some_and(|a| !a.is_object()) {
                return Some("json: cannot unmarshal string into Go struct field ToolCallFunction.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments".into());
            }
        }
    }
    None
}

/// The broken rule and Ollama's 400 for it.
pub fn rejection(body: &Value) -> Option<(String, MockResponse)> {
    let message = rule_broken(body)?;
    let response = MockResponse::json(400, &json!({ "error": message }));
    Some((message, response))
}

/// Ollama's refusal of a prompt longer than `num_ctx` (with `truncate:
/// false`): the runner's llama.cpp error, quoted inside `error`.
pub fn exceeds_context(tokens: u64, window: u64) -> MockResponse {
    let inner = json!({"error": {
        "code": 400,
        "message": format!("request ({tokens} tokens) exceeds the available context size ({window} tokens), try increasing it"),
        "type": "exceed_context_size_error",
        "n_prompt_tokens": tokens,
        "n_ctx": window,
    }});
    MockResponse::json(400, &json!({ "error": inner.to_string() }))
}

/// One NDJSON line: `<json>\n`.
pub fn line(value: &Value) -> String {
    format!("{value}\n")
}

fn message_line(message: Value) -> String {
    line(&json!({
        "model": "mock-model",
        "created_at": "2025-03-11T09:14:02.118234Z",
        "message": message,
        "done": false,
    }))
}

/// A piece of assistant text.
pub fn text(text: &str) -> String {
    message_line(json!({"role": "assistant", "content": text}))
}

/// A piece of thinking.
pub fn thinking(text: &str) -> String {
    message_line(json!({"role": "assistant", "content": "", "thinking": text}))
}

/// Whole tool calls `(name, arguments object)` in one line, without ids as
/// most Ollama versions send them.
pub fn tool_calls(calls: &[(&str, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, arguments)| json!({"function": {"name": name, "arguments": arguments}}))
        .collect();
    message_line(json!({"role": "assistant", "content": "", "tool_calls": calls}))
}

/// The terminal line with its stop reason and token counts.
pub fn done(reason: &str, prompt_eval_count: u64, eval_count: u64) -> String {
    line(&json!({
        "model": "mock-model",
        "created_at": "2025-03-11T09:14:03.240562Z",
        "message": {"role": "assistant", "content": ""},
        "done": true,
        "done_reason": reason,
        "total_duration": 1_873_421_667u64,
        "load_duration": 1_502_318_250u64,
        "prompt_eval_count": prompt_eval_count,
        "prompt_eval_duration": 201_774_000u64,
        "eval_count": eval_count,
        "eval_duration": 135_682_000u64,
    }))
}

/// An error line, as Ollama sends when a request fails mid-stream.
pub fn error(message: &str) -> String {
    line(&json!({ "error": message }))
}

/// `200 application/x-ndjson`, each line sent as its own chunk.
pub fn ndjson<I, C>(lines: I) -> MockResponse
where
    I: IntoIterator<Item = C>,
    C: Into<Vec<u8>>,
{
    MockResponse::new(200)
        .header("content-type", "application/x-ndjson")
        .chunks(lines)
}

/// A full answer: the text in a few pieces, then `done` with usage.
pub fn text_response(answer: &str) -> MockResponse {
    let mut lines: Vec<String> = answer.split_inclusive(' ').map(text).collect();
    lines.push(done("stop", 10, 5));
    ndjson(lines)
}

/// A response calling tools `(name, arguments)` in one line, then `done`.
pub fn tool_calls_response(calls: &[(&str, Value)]) -> MockResponse {
    ndjson([tool_calls(calls), done("stop", 10, 5)])
}

/// Ollama's answer for a model that is not pulled.
pub fn model_not_found(model: &str) -> MockResponse {
    MockResponse::json(
        404,
        &json!({ "error": format!("model \"{model}\" not found, try pulling it first") }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(messages: Value) -> Value {
        json!({ "messages": messages })
    }

    #[test]
    fn answered_calls_pass() {
        let ok = body(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "a", "arguments": {}}},
                {"function": {"name": "b", "arguments": {}}},
            ]},
            {"role": "tool", "content": "1", "tool_name": "a"},
            {"role": "tool", "content": "2"},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(pairing_violations(&ok), Vec::<String>::new());
        assert!(pairing_violations(&json!({})).is_empty());
    }

    #[test]
    fn missing_orphaned_and_misnamed_answers_are_reported() {
        let bad = body(json!([
            {"role": "tool", "content": "early"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "a", "arguments": {}}},
                {"function": {"name": "b", "arguments": {}}},
            ]},
            {"role": "tool", "content": "1", "tool_name": "b"},
            {"role": "user", "content": "interrupt"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "c", "arguments": {}}},
            ]},
            {"role": "tool", "content": "3", "tool_name": "c"},
            {"role": "tool", "content": "extra", "tool_name": "c"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "d", "arguments": {}}},
            ]},
        ]));
        let problems = pairing_violations(&bad);
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(problems[0].contains("tool message 0") && problems[0].contains("answers no"));
        assert!(problems[1].contains("names `b`") && problems[1].contains("(`a`"));
        assert!(problems[2].contains("call 1 (`b`, message 1) has no tool message"));
        assert!(problems[3].contains("tool message 6") && problems[3].contains("answers no"));
        assert!(problems[4].contains("`d`") && problems[4].contains("no tool message"));
    }
}
