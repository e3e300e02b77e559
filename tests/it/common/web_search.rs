//! The providers' own web search on the mock: the streams the Responses
//! and Anthropic APIs send for a search and a cited answer, and their
//! rules for passing the search back.
//!
//! Anthropic's result blocks carry `encrypted_content` (and citations an
//! `encrypted_index`) that the API checks when they come back: the mock
//! derives them from the page, so a block sent back altered is rejected.
//! With `store: false` the Responses API keeps no items, so a
//! `web_search_call` sent back with its `id` is rejected ("not found").
//! Dropping a search from later requests is caught by the responses built
//! here: they carry their blocks ([`MockResponse::carrying`]), and the
//! mock rejects a later request that does not hold each of them exactly.

use super::mock::MockResponse;
use super::{wire_anthropic as anthropic, wire_responses as responses};
use serde_json::{json, Value};

/// A page a search finds.
pub struct Page {
    pub url: &'static str,
    pub title: &'static str,
}

/// A short opaque token of `parts` (FNV-1a), standing in for the API's
/// encryption.
fn token(prefix: &str, parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in parts.join("\u{0}").bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{prefix}{hash:016x}")
}

fn encrypted_content(url: &str) -> String {
    token("EqAnthropicPage", &[url])
}

fn encrypted_index(url: &str, cited: &str) -> String {
    token("EqAnthropicCite", &[url, cited])
}

// ---------------------------------------------------------------------------
// Anthropic
// ---------------------------------------------------------------------------

/// The blocks of one search as the API sends them back: `server_tool_use`
/// (its input whole) and its `web_search_tool_result`.
pub fn anthropic_blocks(id: &str, query: &str, pages: &[Page]) -> Vec<Value> {
    let results: Vec<Value> = pages
        .iter()
        .map(|p| {
            json!({
                "type": "web_search_result",
                "url": p.url,
                "title": p.title,
                "encrypted_content": encrypted_content(p.url),
                "page_age": "April 30, 2026",
            })
        })
        .collect();
    vec![
        json!({"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}}),
        json!({"type": "web_search_tool_result", "tool_use_id": id, "content": results}),
    ]
}

/// A tool call after the answer: `(id, name, JSON arguments)`.
pub type Call<'a> = Option<(&'a str, &'a str, &'a str)>;

/// An answer with one search and a cited sentence: text before it, the
/// search, then `answer` citing the first page, then `call` if any; one
/// search billed. `stop` is the stop reason (`pause_turn` for a paused
/// turn), `tool_use` when there is a call.
pub fn anthropic_search_response(
    id: &str,
    query: &str,
    pages: &[Page],
    answer: &str,
    call: Call<'_>,
    stop: &str,
) -> MockResponse {
    let blocks = anthropic_blocks(id, query, pages);
    let cited = &pages[0];
    let citation = json!({
        "type": "web_search_result_location",
        "url": cited.url,
        "title": cited.title,
        "cited_text": answer,
        "encrypted_index": encrypted_index(cited.url, answer),
    });
    let mut events = vec![anthropic::message_start(40, 0, 0)];
    events.extend(anthropic::text_block(0, "Let me look that up.", 2));
    events.push(anthropic::block_start(
        1,
        json!({"type": "server_tool_use", "id": id, "name": "web_search", "input": {}}),
    ));
    let input = json!({"query": query}).to_string();
    let (head, tail) = input.split_at(input.len() / 2);
    events.push(anthropic::input_json(1, head));
    events.push(anthropic::input_json(1, tail));
    events.push(anthropic::block_stop(1));
    events.push(anthropic::block_start(2, blocks[1].clone()));
    events.push(anthropic::block_stop(2));
    events.push(anthropic::block_start(
        3,
        json!({"type": "text", "text": "", "citations": []}),
    ));
    events.push(anthropic::block_delta(
        3,
        json!({"type": "citations_delta", "citation": citation}),
    ));
    events.push(anthropic::text(3, answer));
    events.push(anthropic::block_stop(3));
    let stop = match call {
        Some((call_id, name, arguments)) => {
            events.extend(anthropic::tool_use_block(4, call_id, name, arguments, 2));
            "tool_use"
        }
        None => stop,
    };
    events.push(anthropic::event(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": 30, "server_tool_use": {"web_search_requests": 1}},
    })));
    events.push(anthropic::message_stop());
    MockResponse::sse(events).carrying(blocks)
}

/// What the API checks of the web search blocks a request sends back:
/// they sit in assistant messages, each `server_tool_use` is followed by
/// its result, and every encrypted field is as the API made it.
pub fn anthropic_rule(messages: &[Value]) -> Option<String> {
    for (at, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        let Some(blocks) = message["content"].as_array() else {
            continue;
        };
        for (n, block) in blocks.iter().enumerate() {
            let here = format!("messages.{at}.content.{n}");
            match block["type"].as_str() {
                Some(kind @ ("server_tool_use" | "web_search_tool_result"))
                    if role != "assistant" =>
                {
                    return Some(format!(
                        "{here}: `{kind}` blocks are only allowed in assistant messages"
                    ));
                }
                Some("server_tool_use") => {
                    let id = block["id"].as_str().unwrap_or("");
                    let answered = blocks[n + 1..]
                        .iter()
                        .any(|b| b["type"] == "web_search_tool_result" && b["tool_use_id"] == id);
                    if !answered {
                        return Some(format!("{here}: `server_tool_use` ids were found without `web_search_tool_result` blocks: {id}"));
                    }
                }
                Some("web_search_tool_result") => {
                    let id = block["tool_use_id"].as_str().unwrap_or("");
                    let used = blocks[..n]
                        .iter()
                        .any(|b| b["type"] == "server_tool_use" && b["id"] == id);
                    if !used {
                        return Some(format!("{here}: unexpected `tool_use_id` found in `web_search_tool_result` blocks: {id}"));
                    }
                    for (k, result) in block["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        let url = result["url"].as_str().unwrap_or("");
                        if result["encrypted_content"].as_str()
                            != Some(encrypted_content(url).as_str())
                        {
                            return Some(format!("{here}.content.{k}.encrypted_content: Invalid `encrypted_content`; pass web search results back exactly as they were received"));
                        }
                    }
                }
                Some("text") => {
                    for (k, c) in block["citations"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        if c["type"] != "web_search_result_location" {
                            continue;
                        }
                        let url = c["url"].as_str().unwrap_or("");
                        let cited = c["cited_text"].as_str().unwrap_or("");
                        if c["encrypted_index"].as_str()
                            != Some(encrypted_index(url, cited).as_str())
                        {
                            return Some(format!(
                                "{here}.citations.{k}.encrypted_index: Invalid `encrypted_index`"
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

/// A `web_search_call` item as the stream's `output_item.done` carries it.
pub fn responses_item(id: &str, query: &str, pages: &[Page]) -> Value {
    let sources: Vec<Value> = pages
        .iter()
        .map(|p| json!({"type": "url", "url": p.url}))
        .collect();
    json!({
        "type": "web_search_call",
        "id": id,
        "status": "completed",
        "action": {"type": "search", "query": query, "sources": sources},
    })
}

/// An answer with one search and an answer citing the first page, then
/// `call` if any.
pub fn responses_search_response(
    id: &str,
    query: &str,
    pages: &[Page],
    answer: &str,
    call: Call<'_>,
) -> MockResponse {
    let item = responses_item(id, query, pages);
    let mut events = vec![responses::created()];
    events.push(responses::event(&json!({
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "web_search_call", "id": id, "status": "in_progress"},
    })));
    for step in ["in_progress", "searching", "completed"] {
        events.push(responses::event(&json!({
            "type": format!("response.web_search_call.{step}"),
            "output_index": 0,
            "item_id": id,
        })));
    }
    events.push(responses::event(&json!({
        "type": "response.output_item.done",
        "output_index": 0,
        "item": item,
    })));
    events.extend(responses::message(&[answer]));
    let cited = &pages[0];
    // The annotation follows the text it is about.
    let at = events.len() - 1;
    events.insert(
        at,
        responses::event(&json!({
            "type": "response.output_text.annotation.added",
            "item_id": "msg_mock",
            "output_index": 1,
            "content_index": 0,
            "annotation_index": 0,
            "annotation": {
                "type": "url_citation",
                "start_index": 0,
                "end_index": answer.len(),
                "url": cited.url,
                "title": cited.title,
            },
        })),
    );
    if let Some((call_id, name, arguments)) = call {
        events.extend(responses::function_call(call_id, name, arguments));
    }
    events.push(responses::completed(40, 30, 0));
    let mut sent_back = item;
    if let Some(fields) = sent_back.as_object_mut() {
        fields.remove("id");
    }
    MockResponse::sse(events).carrying(vec![sent_back])
}

/// What the API checks of a `web_search_call` in `input`: no id (with
/// `store: false` nothing can be looked up) and a search action.
pub fn responses_rule(input: &[Value]) -> Option<String> {
    for (at, item) in input.iter().enumerate() {
        if item["type"] != "web_search_call" {
            continue;
        }
        if let Some(id) = item["id"].as_str() {
            return Some(format!("Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."));
        }
        if !matches!(
            item["action"]["type"].as_str(),
            Some("search" | "open_page" | "find")
        ) {
            return Some(format!("Missing required parameter: 'input[{at}].action'."));
        }
    }
    None
}

/// Where `carried` (a block an earlier response sent) is missing from
/// `body` or changed: the API's error, `None` when it is there as sent.
pub fn dropped(body: &Value, carried: &Value) -> Option<String> {
    fn holds(value: &Value, wanted: &Value) -> bool {
        value == wanted
            || match value {
                Value::Array(items) => items.iter().any(|v| holds(v, wanted)),
                Value::Object(map) => map.values().any(|v| holds(v, wanted)),
                _ => false,
            }
    }
    (!holds(body, carried)).then(|| {
        format!(
            "a web search result of an earlier response is missing or was changed: `{}` blocks must be passed back exactly as they were received",
            carried["type"].as_str().unwrap_or("?")
        )
    })
}
