//! OpenAI Responses: SSE builders and the tool pairing check for the mock.
//!
//! Each builder returns complete SSE events (`event: <type>\ndata: <json>\n\n`)
//! shaped like the API's, so tests read as the stream a server sends:
//!
//! ```ignore
//! server.enqueue(MockResponse::sse(
//!     [vec![responses::created()], responses::function_call("call_1", "shell", "{}"),
//!      vec![responses::completed(10, 5, 0)]].concat(),
//! ));
//! ```

use super::mock::MockResponse;
use serde_json::{json, Value};
use std::collections::HashMap;

/// One SSE event: the `type` of `value` as the event name, `value` as data.
pub fn event(value: &Value) -> String {
    let kind = value["type"].as_str().unwrap_or("message");
    format!("event: {kind}\ndata: {value}\n\n")
}

/// An SSE comment (keep-alive): `: <text>\n\n`.
pub fn comment(text: &str) -> String {
    format!(": {text}\n\n")
}

fn response(status: &str, extra: Value) -> Value {
    let mut response = json!({
        "id": "resp_mock",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": "mock-model",
        "output": [],
        "error": null,
        "incomplete_details": null,
        "usage": null,
    });
    if let (Some(map), Value::Object(extra)) = (response.as_object_mut(), extra) {
        map.extend(extra);
    }
    response
}

fn usage(input: u64, output: u64, cached: u64) -> Value {
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}

/// `response.created`, the first event of every stream.
pub fn created() -> String {
    event(&json!({"type": "response.created", "response": response("in_progress", json!({}))}))
}

/// A piece of assistant text.
pub fn text(delta: &str) -> String {
    event(&json!({
        "type": "response.output_text.delta",
        "item_id": "msg_mock",
        "output_index": 0,
        "content_index": 0,
        "delta": delta,
    }))
}

/// A whole assistant message: item added, `pieces` deltas, item done.
pub fn message(pieces: &[&str]) -> Vec<String> {
    let whole: String = pieces.concat();
    let mut events = vec![event(&json!({
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"id": "msg_mock", "type": "message", "status": "in_progress", "role": "assistant", "content": []},
    }))];
    events.extend(pieces.iter().map(|p| text(p)));
    events.push(event(&json!({
        "type": "response.output_item.done",
        "output_index": 0,
        "item": {
            "id": "msg_mock", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": whole, "annotations": []}],
        },
    })));
    events
}

/// A function call: item added, the arguments in two deltas, `.done`, item done.
pub fn function_call(call_id: &str, name: &str, arguments: &str) -> Vec<String> {
    call_events(
        "function_call",
        "arguments",
        "response.function_call_arguments",
        call_id,
        name,
        arguments,
    )
}

/// A custom (freeform) tool call: like [`function_call`] with raw `input`.
pub fn custom_tool_call(call_id: &str, name: &str, input: &str) -> Vec<String> {
    call_events(
        "custom_tool_call",
        "input",
        "response.custom_tool_call_input",
        call_id,
        name,
        input,
    )
}

fn call_events(
    kind: &str,
    field: &str,
    prefix: &str,
    call_id: &str,
    name: &str,
    payload: &str,
) -> Vec<String> {
    let item_id = format!(
        "{}_{call_id}",
        if kind == "function_call" { "fc" } else { "ctc" }
    );
    let item = |status: &str, payload: &str| json!({"id": item_id, "type": kind, "status": status, "call_id": call_id, "name": name, field: payload});
    let mut events = vec![call_started(&item("in_progress", ""))];
    let half = payload
        .char_indices()
        .map(|(at, _)| at)
        .nth(payload.chars().count() / 2)
        .unwrap_or(payload.len());
    for piece in [&payload[..half], &payload[half..]] {
        events.push(event(&json!({
            "type": format!("{prefix}.delta"), "item_id": item_id, "output_index": 0, "delta": piece,
        })));
    }
    events.push(event(&json!({
        "type": format!("{prefix}.done"), "item_id": item_id, "output_index": 0, field: payload,
    })));
    events.push(event(&json!({
        "type": "response.output_item.done", "output_index": 0, "item": item("completed", payload),
    })));
    events
}

fn call_started(item: &Value) -> String {
    event(&json!({"type": "response.output_item.added", "output_index": 0, "item": item}))
}

/// The start of a function call that never finishes (for cut-off streams).
pub fn function_call_started(call_id: &str, name: &str, partial: &str) -> Vec<String> {
    let item_id = format!("fc_{call_id}");
    vec![
        call_started(&json!({
            "id": item_id, "type": "function_call", "status": "in_progress",
            "call_id": call_id, "name": name, "arguments": "",
        })),
        event(&json!({
            "type": "response.function_call_arguments.delta",
            "item_id": item_id, "output_index": 0, "delta": partial,
        })),
    ]
}

/// A reasoning item with one summary part and encrypted content.
pub fn reasoning(id: &str, summary: &str, encrypted: &str) -> Vec<String> {
    vec![
        event(&json!({
            "type": "response.output_item.added", "output_index": 0,
            "item": {"id": id, "type": "reasoning", "summary": []},
        })),
        event(&json!({
            "type": "response.reasoning_summary_text.delta",
            "item_id": id, "output_index": 0, "summary_index": 0, "delta": summary,
        })),
        event(&json!({
            "type": "response.output_item.done", "output_index": 0,
            "item": {
                "id": id, "type": "reasoning",
                "summary": [{"type": "summary_text", "text": summary}],
                "encrypted_content": encrypted,
            },
        })),
    ]
}

/// The terminal `response.completed` with usage.
pub fn completed(input: u64, output: u64, cached: u64) -> String {
    event(&json!({
        "type": "response.completed",
        "response": response("completed", json!({"usage": usage(input, output, cached)})),
    }))
}

/// The terminal `response.incomplete` for `reason` (e.g. `max_output_tokens`).
pub fn incomplete(reason: &str) -> String {
    event(&json!({
        "type": "response.incomplete",
        "response": response("incomplete", json!({
            "incomplete_details": {"reason": reason},
            "usage": usage(10, 5, 0),
        })),
    }))
}

/// `response.failed` with an error code and message.
pub fn failed(code: &str, message: &str) -> String {
    event(&json!({
        "type": "response.failed",
        "response": response("failed", json!({"error": {"code": code, "message": message}})),
    }))
}

/// A stream-level `error` event.
pub fn error(code: &str, message: &str) -> String {
    event(&json!({"type": "error", "code": code, "message": message, "param": null}))
}

/// A full text answer: created, the text in a few pieces, completed.
pub fn text_response(answer: &str) -> MockResponse {
    let chars: Vec<char> = answer.chars().collect();
    let size = chars.len().div_ceil(3).max(1);
    let pieces: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut events = vec![created()];
    events.extend(message(&pieces));
    events.push(completed(10, 5, 0));
    MockResponse::sse(events)
}

/// A response calling function tools `(call_id, name, arguments)` in order.
pub fn tool_calls_response(calls: &[(&str, &str, &str)]) -> MockResponse {
    let mut events = vec![created()];
    for (call_id, name, arguments) in calls {
        events.extend(function_call(call_id, name, arguments));
    }
    events.push(completed(10, 5, 0));
    MockResponse::sse(events)
}

/// An OpenAI-style error body: `{"error": {message, type, param, code}}`.
pub fn openai_error(
    status: u16,
    message: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> MockResponse {
    MockResponse::json(
        status,
        &json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}),
    )
}

/// OpenAI's range check of `temperature` (0 to 2): the message and code.
pub fn temperature_rule(body: &Value) -> Option<(String, &'static str)> {
    let t = body.get("temperature").and_then(Value::as_f64)?;
    if t > 2.0 {
        Some((format!("Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got {t} instead."), "decimal_above_max_value"))
    } else if t < 0.0 {
        Some((format!("Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got {t} instead."), "decimal_below_min_value"))
    } else {
        None
    }
}

/// The first rule of the Responses API that `body` breaks, with the
/// parameter it names and the error code, as the API reports them:
/// `temperature` within 0..2; every `function_call_output` /
/// `custom_tool_call_output` answers a call made earlier in `input`; every
/// call in `input` has its output (nothing is stored server-side with
/// `store: false`).
pub fn rule_broken(body: &Value) -> Option<(String, &'static str, Option<&'static str>)> {
    if let Some(broken) = image_rule(body) {
        return Some(broken);
    }
    if let Some((message, code)) = temperature_rule(body) {
        return Some((message, "temperature", Some(code)));
    }
    let input = body.get("input").and_then(Value::as_array)?;
    if let Some(message) = super::web_search::responses_rule(input) {
        return Some((message, "input", None));
    }
    let call_id = |item: &Value| item["call_id"].as_str().unwrap_or("").to_string();
    let mut called: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    for item in input {
        match item["type"].as_str() {
            Some("function_call" | "custom_tool_call") => called.push(call_id(item)),
            Some(kind @ ("function_call_output" | "custom_tool_call_output")) => {
                let id = call_id(item);
                if !called.contains(&id) {
                    let what = if kind == "function_call_output" {
                        "function call output"
                    } else {
                        "custom tool call output"
                    };
                    return Some((
                        format!("No tool call found for {what} with call_id {id}."),
                        "input",
                        None,
                    ));
                }
                answered.push(id);
            }
            _ => {}
        }
    }
    for item in input {
        if let Some(kind @ ("function_call" | "custom_tool_call")) = item["type"].as_str() {
            let id = call_id(item);
            if !answered.contains(&id) {
                let what = if kind == "function_call" {
                    "function call"
                } else {
                    "custom tool call"
                };
                return Some((
                    format!("No tool output found for {what} {id}."),
                    "input",
                    None,
                ));
            }
        }
    }
    None
}

/// `input_image` parts: only in user messages, their `image_url` a data
/// URL of an image the API takes.
fn image_rule(body: &Value) -> Option<(String, &'static str, Option<&'static str>)> {
    let input = body.get("input").and_then(Value::as_array)?;
    for item in input {
        let role = item.get("role").and_then(Value::as_str).unwrap_or("");
        let parts = item.get("content").and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if part.get("type").and_then(Value::as_str) != Some("input_image") {
                continue;
            }
            if role != "user" {
                return Some((
                    format!("Invalid value: 'input_image'. Supported values are: 'output_text' and 'refusal' (a message with role '{role}')."),
                    "input",
                    Some("invalid_value"),
                ));
            }
            let url = part.get("image_url").and_then(Value::as_str).unwrap_or("");
            if let Some(problem) = super::images::url_problem(url) {
                return Some((problem, "input", Some("invalid_image_url")));
            }
        }
    }
    None
}

/// The broken rule and the API's 400 for it.
pub fn rejection(body: &Value) -> Option<(String, MockResponse)> {
    let (message, param, code) = rule_broken(body)?;
    let response = openai_error(400, &message, Some(param), code);
    Some((message, response))
}

/// The 400 for input longer than the context window.
pub fn context_length_exceeded() -> MockResponse {
    openai_error(
        400,
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        Some("input"),
        Some("context_length_exceeded"),
    )
}

/// The same overflow reported inside the stream, as `response.failed`.
pub fn context_length_exceeded_in_stream() -> MockResponse {
    MockResponse::sse([
        created(),
        failed(
            "context_length_exceeded",
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
        ),
    ])
}

/// Problems with tool-call pairing in a Responses request body, each as a
/// sentence: every `function_call` / `custom_tool_call` item has exactly one
/// output item of the matching type (`function_call_output` /
/// `custom_tool_call_output`) with its `call_id`, after it; no call id is
/// used twice and no output answers a call that is not there.
pub fn pairing_violations(body: &Value) -> Vec<String> {
    let Some(input) = body.get("input").and_then(Value::as_array) else {
        return Vec::new();
    };
    let call_id = |item: &Value| item["call_id"].as_str().unwrap_or("").to_string();
    let mut problems = Vec::new();
    // call id -> (position, item type)
    let mut calls: HashMap<String, (usize, &str)> = HashMap::new();
    let mut outputs: HashMap<String, Vec<(usize, &str)>> = HashMap::new();
    for (at, item) in input.iter().enumerate() {
        match item["type"].as_str() {
            Some(kind @ ("function_call" | "custom_tool_call")) => {
                let id = call_id(item);
                if calls.insert(id.clone(), (at, kind)).is_some() {
                    problems.push(format!("call id `{id}` is used twice"));
                }
            }
            Some(kind @ ("function_call_output" | "custom_tool_call_output")) => {
                outputs.entry(call_id(item)).or_default().push((at, kind));
            }
            _ => {}
        }
    }
    let mut ids: Vec<_> = calls.iter().collect();
    ids.sort_by_key(|(id, (at, _))| (*at, (*id).clone()));
    for (id, (at, kind)) in ids {
        let expected = format!("{kind}_output");
        match outputs.get(id).map(Vec::as_slice) {
            None | Some([]) => {
                problems.push(format!("{kind} `{id}` (item {at}) has no {expected}"))
            }
            Some([(out, out_kind)]) => {
                if out < at {
                    problems.push(format!(
                        "the output for `{id}` (item {out}) comes before its call (item {at})"
                    ));
                }
                if *out_kind != expected {
                    problems.push(format!(
                        "{kind} `{id}` (item {at}) is answered by a {out_kind} (item {out})"
                    ));
                }
            }
            Some(many) => problems.push(format!(
                "{kind} `{id}` (item {at}) has {} outputs",
                many.len()
            )),
        }
    }
    let mut orphans: Vec<(usize, &str, &str)> = outputs
        .iter()
        .filter(|(id, _)| !calls.contains_key(*id))
        .flat_map(|(id, list)| list.iter().map(move |(at, kind)| (*at, *kind, id.as_str())))
        .collect();
    orphans.sort();
    for (at, kind, id) in orphans {
        problems.push(format!(
            "{kind} (item {at}) answers `{id}`, which no call in the input made"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(kind: &str, id: &str) -> Value {
        json!({"type": kind, "call_id": id, "name": "t"})
    }

    fn out(kind: &str, id: &str) -> Value {
        json!({"type": kind, "call_id": id, "output": "x"})
    }

    #[test]
    fn well_paired_input_has_no_violations() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": []},
            {"type": "reasoning", "summary": [], "encrypted_content": "e"},
            call("function_call", "a"),
            call("custom_tool_call", "b"),
            out("custom_tool_call_output", "b"),
            out("function_call_output", "a"),
        ]});
        assert_eq!(pairing_violations(&body), Vec::<String>::new());
        assert!(pairing_violations(&json!({"messages": []})).is_empty());
    }

    #[test]
    fn every_kind_of_violation_is_reported() {
        let body = json!({"input": [
            out("function_call_output", "late"),
            call("function_call", "late"),
            call("function_call", "none"),
            call("function_call", "twice"),
            out("function_call_output", "twice"),
            out("function_call_output", "twice"),
            call("custom_tool_call", "wrong"),
            out("function_call_output", "wrong"),
            out("custom_tool_call_output", "ghost"),
            call("function_call", "dup"),
            call("function_call", "dup"),
            out("function_call_output", "dup"),
        ]});
        let problems = pairing_violations(&body);
        let expect = [
            "`late` (item 0) comes before its call (item 1)",
            "function_call `none` (item 2) has no function_call_output",
            "function_call `twice` (item 3) has 2 outputs",
            "custom_tool_call `wrong` (item 6) is answered by a function_call_output (item 7)",
            "custom_tool_call_output (item 8) answers `ghost`",
            "call id `dup` is used twice",
        ];
        for text in expect {
            assert!(
                problems.iter().any(|p| p.contains(text)),
                "missing {text:?} in {problems:#?}"
            );
        }
        assert_eq!(problems.len(), expect.len(), "{problems:#?}");
    }
}
