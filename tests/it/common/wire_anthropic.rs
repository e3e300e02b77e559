//! Anthropic Messages: SSE builders and the tool pairing check for the mock.
//!
//! Each event builder returns one complete SSE event
//! (`event: <type>\ndata: <json>\n\n`), the way the API sends them.

use super::mock::{split_chars, MockResponse};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Problems with a Messages request body, each as a sentence: roles must
/// alternate; every `tool_use` block is answered by exactly one
/// `tool_result` block in the next (user) message, where tool results come
/// before any other block; no `tool_result` answers a call the previous
/// assistant message did not make; no tool_use id is used twice.
pub fn pairing_violations(body: &Value) -> Vec<String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    let role = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let blocks = |m: &Value, kind: &str| -> Vec<Value> {
        m.get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some(kind))
            .cloned()
            .collect()
    };
    let id_of = |b: &Value, key: &str| b.get(key).and_then(Value::as_str).unwrap_or("").to_string();

    let mut problems = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (at, message) in messages.iter().enumerate() {
        if at > 0 && role(message) == role(&messages[at - 1]) {
            problems.push(format!(
                "messages {} and {at} are both `{}`: roles must alternate",
                at - 1,
                role(message)
            ));
        }
        let calls: Vec<String> = blocks(message, "tool_use")
            .iter()
            .map(|b| id_of(b, "id"))
            .collect();
        for id in &calls {
            if let Some(first) = seen.insert(id.clone(), at) {
                problems.push(format!(
                    "tool_use id `{id}` is used twice (messages {first} and {at})"
                ));
            }
        }
        let results: Vec<String> = blocks(message, "tool_result")
            .iter()
            .map(|b| id_of(b, "tool_use_id"))
            .collect();
        if !results.is_empty() {
            let content = message
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let leading = content
                .iter()
                .take_while(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                .count();
            if leading != results.len() {
                problems.push(format!(
                    "message {at} has other blocks before its tool_result blocks"
                ));
            }
            let called: Vec<String> = match at.checked_sub(1).map(|p| &messages[p]) {
                Some(previous) if role(previous) == "assistant" => blocks(previous, "tool_use")
                    .iter()
                    .map(|b| id_of(b, "id"))
                    .collect(),
                _ => Vec::new(),
            };
            for id in results.iter().filter(|id| !called.contains(id)) {
                problems.push(format!(
                    "tool_result in message {at} answers `{id}`, which the previous assistant message did not call"
                ));
            }
        }
        if calls.is_empty() {
            continue;
        }
        let answers: Vec<String> = match messages.get(at + 1) {
            Some(next) if role(next) == "user" => blocks(next, "tool_result")
                .iter()
                .map(|b| id_of(b, "tool_use_id"))
                .collect(),
            _ => Vec::new(),
        };
        for id in &calls {
            match answers.iter().filter(|a| *a == id).count() {
                1 => {}
                0 => problems.push(format!(
                    "tool_use `{id}` (message {at}) has no tool_result in the next user message"
                )),
                n => problems.push(format!(
                    "tool_use `{id}` (message {at}) has {n} tool_result blocks"
                )),
            }
        }
    }
    problems
}

// ---------------------------------------------------------------------------
// The API's request validation
// ---------------------------------------------------------------------------

const THINKING_DOCS: &str = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking";

/// The first rule of the Messages API that `body` breaks, as the API words
/// it (checked in the order the API reports them, so a test sees the same
/// error the real service would send):
///
/// - `temperature` within 0..1; a thinking budget of at least 1024 tokens,
///   below `max_tokens`; at most 4 `cache_control` breakpoints;
/// - text blocks (system and messages) neither empty nor only whitespace
///   (a whitespace-only block passes only beside a block with real text);
/// - no message without content;
/// - `tool_use` / `tool_result` blocks only when `tools` are defined;
/// - every `tool_use` answered by a `tool_result` at the start of the next
///   message, every `tool_result` answering a `tool_use` of the previous
///   message;
/// - thinking blocks carry a signature; with thinking enabled, when the
///   last message continues a tool loop (it holds `tool_result` blocks),
///   the assistant message before it starts with a thinking block.
pub fn rule_broken(body: &Value) -> Option<String> {
    if let Some(broken) = image_rule(body) {
        return Some(broken);
    }
    let messages = body.get("messages").and_then(Value::as_array)?;
    if let Some(broken) = super::web_search::anthropic_rule(messages) {
        return Some(broken);
    }
    let blocks = |m: &Value| -> Vec<Value> {
        match m.get("content") {
            Some(Value::Array(blocks)) => blocks.clone(),
            Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
            _ => Vec::new(),
        }
    };
    let kind = |b: &Value| {
        b.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let ids = |blocks: &[Value], of: &str, key: &str| -> Vec<String> {
        blocks
            .iter()
            .filter(|b| kind(b) == of)
            .map(|b| b.get(key).and_then(Value::as_str).unwrap_or("").to_string())
            .collect()
    };
    if let Some(t) = body.get("temperature").and_then(Value::as_f64) {
        if !(0.0..=1.0).contains(&t) {
            return Some("temperature: range: 0..1".into());
        }
    }
    let thinking = body.pointer("/thinking/type").and_then(Value::as_str) == Some("enabled");
    if thinking {
        let budget = body
            .pointer("/thinking/budget_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if budget < 1024 {
            return Some(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            );
        }
        if body.get("max_tokens").and_then(Value::as_u64).unwrap_or(0) <= budget {
            return Some(format!("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at {THINKING_DOCS}#max-tokens-and-context-window-size"));
        }
    }
    let breakpoints = body.to_string().matches("\"cache_control\"").count();
    if breakpoints > 4 {
        return Some(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    let system: Vec<Value> = match body.get("system") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    };
    let texts_problem = |blocks: &[Value], at: &str| -> Option<String> {
        let texts: Vec<&str> = blocks
            .iter()
            .filter(|b| kind(b) == "text")
            .map(|b| b.get("text").and_then(Value::as_str).unwrap_or(""))
            .collect();
        if texts.iter().any(|t| t.is_empty()) {
            return Some(format!("{at}: text content blocks must be non-empty"));
        }
        let blank = texts.iter().any(|t| t.trim().is_empty());
        let real = texts.iter().any(|t| !t.trim().is_empty());
        (blank && !real)
            .then(|| format!("{at}: text content blocks must contain non-whitespace text"))
    };
    if let Some(problem) = texts_problem(&system, "system") {
        return Some(problem);
    }
    for (at, message) in messages.iter().enumerate() {
        let content = blocks(message);
        let last = at + 1 == messages.len();
        let assistant = message.get("role").and_then(Value::as_str) == Some("assistant");
        if content.is_empty() && !(last && assistant) {
            return Some(format!("messages.{at}: all messages must have non-empty content except for the optional final assistant message"));
        }
        if let Some(problem) = texts_problem(&content, "messages") {
            return Some(problem);
        }
        for (n, block) in content.iter().enumerate() {
            if kind(block) == "thinking"
                && block
                    .get("signature")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                return Some(format!(
                    "messages.{at}.content.{n}.thinking.signature: Field required"
                ));
            }
        }
    }
    let uses_tools = messages.iter().any(|m| {
        blocks(m)
            .iter()
            .any(|b| matches!(kind(b).as_str(), "tool_use" | "tool_result"))
    });
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if uses_tools && !has_tools {
        return Some(
            "Requests which include `tool_use` or `tool_result` blocks must define tools.".into(),
        );
    }
    for (at, message) in messages.iter().enumerate() {
        let content = blocks(message);
        let results = ids(&content, "tool_result", "tool_use_id");
        if !results.is_empty() {
            let called = match at.checked_sub(1).map(|p| &messages[p]) {
                Some(previous) => ids(&blocks(previous), "tool_use", "id"),
                None => Vec::new(),
            };
            for (n, block) in content.iter().enumerate() {
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if kind(block) == "tool_result" && !called.iter().any(|c| c == id) {
                    return Some(format!("messages.{at}.content.{n}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."));
                }
            }
        }
        let calls = ids(&content, "tool_use", "id");
        if calls.is_empty() {
            continue;
        }
        let next = messages.get(at + 1).map(&blocks).unwrap_or_default();
        let answered = ids(&next, "tool_result", "tool_use_id");
        let missing: Vec<&str> = calls
            .iter()
            .filter(|id| !answered.contains(id))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Some(format!("messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", missing.join(", ")));
        }
        let leading = next.iter().take_while(|b| kind(b) == "tool_result").count();
        if leading < calls.len() {
            return Some(format!("messages.{}: Did not find {} `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.", at + 1, calls.len()));
        }
    }
    if thinking {
        let last = messages.len().checked_sub(1)?;
        let in_tool_loop = !ids(&blocks(&messages[last]), "tool_result", "tool_use_id").is_empty();
        let assistant = last.checked_sub(1);
        if let (true, Some(at)) = (in_tool_loop, assistant) {
            let first = blocks(&messages[at]).first().map(kind).unwrap_or_default();
            if first != "thinking" && first != "redacted_thinking" {
                return Some(format!("messages.{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at {THINKING_DOCS}"));
            }
        }
    }
    None
}

/// The broken rule and the API's answer to it: 400
/// Image blocks: only in user messages (at the top level or inside a
/// `tool_result`'s content), a base64 source of a type the API takes, that
/// type's bytes, at most 5 MB of base64.
fn image_rule(body: &Value) -> Option<String> {
    let messages = body.get("messages").and_then(Value::as_array)?;
    for (at, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let blocks = message.get("content").and_then(Value::as_array);
        for (n, block) in blocks.into_iter().flatten().enumerate() {
            let inner = block.get("content").and_then(Value::as_array);
            let images = std::iter::once(block)
                .chain(inner.into_iter().flatten())
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"));
            for image in images {
                let at = format!("messages.{at}.content.{n}");
                if role != "user" {
                    return Some(format!(
                        "{at}: image blocks are only allowed in user messages"
                    ));
                }
                let source = &image["source"];
                if source.get("type").and_then(Value::as_str) != Some("base64") {
                    return Some(format!("{at}.source.type: Input should be 'base64'"));
                }
                let data = source.get("data").and_then(Value::as_str).unwrap_or("");
                if data.len() > 5 * 1024 * 1024 {
                    return Some(format!("{at}.image.source.base64: image exceeds 5 MB maximum: {} bytes > 5242880 bytes", data.len()));
                }
                let media_type = source
                    .get("media_type")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some(problem) = super::images::problem(media_type, data) {
                    return Some(format!("{at}.image.source.base64.data: {problem}"));
                }
            }
        }
    }
    None
}

/// `invalid_request_error` with the rule's message.
pub fn rejection(body: &Value) -> Option<(String, MockResponse)> {
    let message = rule_broken(body)?;
    let response = error_response(400, "invalid_request_error", &message);
    Some((message, response))
}

/// "prompt is too long": the input alone is over the window.
pub fn prompt_too_long(tokens: u64, window: u64) -> MockResponse {
    error_response(
        400,
        "invalid_request_error",
        &format!("prompt is too long: {tokens} tokens > {window} maximum"),
    )
}

/// "input length and `max_tokens` exceed context limit": the input fits,
/// the room asked for the answer does not.
pub fn exceeds_context_limit(tokens: u64, window: u64) -> MockResponse {
    error_response(
        400,
        "invalid_request_error",
        &format!("input length and `max_tokens` exceed context limit: {tokens} + 8192 > {window}, decrease input length or `max_tokens` and try again"),
    )
}

// ---------------------------------------------------------------------------
// SSE events
// ---------------------------------------------------------------------------

/// `event: <type>\ndata: <json>\n\n`, the type taken from the JSON.
pub fn event(data: &Value) -> String {
    let name = data
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    format!("event: {name}\ndata: {data}\n\n")
}

/// `message_start` with its input usage.
pub fn message_start(input_tokens: u64, cache_write: u64, cache_read: u64) -> String {
    event(&json!({"type": "message_start", "message": {
        "id": "msg_mock", "type": "message", "role": "assistant", "content": [],
        "model": "mock-model", "stop_reason": null, "stop_sequence": null,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
            "output_tokens": 1,
        },
    }}))
}

pub fn block_start(index: usize, block: Value) -> String {
    event(&json!({"type": "content_block_start", "index": index, "content_block": block}))
}

pub fn block_delta(index: usize, delta: Value) -> String {
    event(&json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

pub fn block_stop(index: usize) -> String {
    event(&json!({"type": "content_block_stop", "index": index}))
}

/// The start of a text block.
pub fn text_start(index: usize) -> String {
    block_start(index, json!({"type": "text", "text": ""}))
}

/// A piece of text for block `index`.
pub fn text(index: usize, text: &str) -> String {
    block_delta(index, json!({"type": "text_delta", "text": text}))
}

/// A whole text block: start, the text in `pieces` parts, stop.
pub fn text_block(index: usize, answer: &str, pieces: usize) -> Vec<String> {
    let mut out = vec![text_start(index)];
    out.extend(split_chars(answer, pieces).iter().map(|p| text(index, p)));
    out.push(block_stop(index));
    out
}

/// The start of a `tool_use` block.
pub fn tool_use_start(index: usize, id: &str, name: &str) -> String {
    block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )
}

/// A piece of a tool call's input JSON.
pub fn input_json(index: usize, partial_json: &str) -> String {
    block_delta(
        index,
        json!({"type": "input_json_delta", "partial_json": partial_json}),
    )
}

/// A whole `tool_use` block: start, an empty first piece (as the API
/// sends), the input in `pieces` parts, stop.
pub fn tool_use_block(
    index: usize,
    id: &str,
    name: &str,
    input: &str,
    pieces: usize,
) -> Vec<String> {
    let mut out = vec![tool_use_start(index, id, name), input_json(index, "")];
    out.extend(
        split_chars(input, pieces)
            .iter()
            .map(|p| input_json(index, p)),
    );
    out.push(block_stop(index));
    out
}

/// A whole `thinking` block with its signature.
pub fn thinking_block(index: usize, thinking: &str, signature: &str) -> Vec<String> {
    vec![
        block_start(
            index,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        block_delta(
            index,
            json!({"type": "thinking_delta", "thinking": thinking}),
        ),
        block_delta(
            index,
            json!({"type": "signature_delta", "signature": signature}),
        ),
        block_stop(index),
    ]
}

/// A whole `redacted_thinking` block.
pub fn redacted_thinking_block(index: usize, data: &str) -> Vec<String> {
    vec![
        block_start(index, json!({"type": "redacted_thinking", "data": data})),
        block_stop(index),
    ]
}

/// `message_delta` with the stop reason and output usage.
pub fn message_delta(stop_reason: &str, output_tokens: u64) -> String {
    event(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output_tokens},
    }))
}

/// The terminal event.
pub fn message_stop() -> String {
    event(&json!({"type": "message_stop"}))
}

pub fn ping() -> String {
    event(&json!({"type": "ping"}))
}

/// An in-stream `error` event, e.g. `overloaded_error`.
pub fn error(kind: &str, message: &str) -> String {
    event(&json!({"type": "error", "error": {"type": kind, "message": message}}))
}

/// An error body as the API sends it with an error status.
pub fn error_response(status: u16, kind: &str, message: &str) -> MockResponse {
    MockResponse::json(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message},
                "request_id": "req_011CMockRequest"}),
    )
}

/// A full answer: message_start, one text block in a few pieces,
/// `end_turn`, message_stop.
pub fn text_response(answer: &str) -> MockResponse {
    let mut events = vec![message_start(10, 0, 0)];
    events.extend(text_block(0, answer, 3));
    events.extend([message_delta("end_turn", 5), message_stop()]);
    MockResponse::sse(events)
}

/// A response calling tools `(id, name, input)` in order, each input in two
/// pieces, ending with `tool_use`.
pub fn tool_use_response(calls: &[(&str, &str, &str)]) -> MockResponse {
    let mut events = vec![message_start(10, 0, 0)];
    for (index, (id, name, input)) in calls.iter().enumerate() {
        events.extend(tool_use_block(index, id, name, input, 2));
    }
    events.extend([message_delta("tool_use", 5), message_stop()]);
    MockResponse::sse(events)
}
