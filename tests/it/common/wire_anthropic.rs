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
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
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
