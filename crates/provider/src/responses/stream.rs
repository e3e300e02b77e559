//! Responses stream: the parser the shared HTTP driver runs on each frame,
//! mapping it onto [`ResponseEvent`]s.

use super::*;

/// A `function_call` or `custom_tool_call` output item.
#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    /// Function calls: the JSON arguments.
    #[serde(default)]
    arguments: Option<String>,
    /// Custom tool calls: the raw input.
    #[serde(default)]
    input: Option<String>,
}

#[derive(Deserialize)]
struct WireReasoning {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    summary: Option<Vec<WirePart>>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireMessage {
    #[serde(default)]
    content: Option<Vec<WirePart>>,
}

#[derive(Deserialize)]
struct WirePart {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// The `response` object of the terminal events.
#[derive(Deserialize, Default)]
struct WireResponse {
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<WireIncomplete>,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<WireTokenDetails>,
}

#[derive(Deserialize)]
pub(super) struct WireTokenDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct WireIncomplete {
    #[serde(default)]
    reason: Option<String>,
}

/// A tool call announced by `response.output_item.added` whose complete
/// item has not arrived yet.
struct OpenCall {
    /// The output item's id (`fc_...`), which argument deltas name.
    item_id: Option<String>,
    call_id: String,
    name: String,
    /// Arguments (or custom input) gathered from deltas.
    arguments: String,
}

/// Turns Responses SSE events into [`ResponseEvent`]s, with no HTTP
/// involved: feed it the events of [`sse::decode`](crate::sse::decode) in order.
pub struct EventParser {
    open: Vec<OpenCall>,
    /// Whether a complete tool call was emitted (the stop reason).
    made_calls: bool,
    /// Whether text arrived as deltas; if none did, a finished message
    /// item's text is emitted instead.
    saw_text_delta: bool,
    /// Web searches that ran (each is billed).
    searches: u64,
}

impl Default for EventParser {
    fn default() -> Self {
        EventParser::new()
    }
}

impl EventParser {
    /// A parser at the start of a response stream.
    pub fn new() -> Self {
        EventParser {
            open: Vec::new(),
            made_calls: false,
            saw_text_delta: false,
            searches: 0,
        }
    }

    fn on_item_added(
        &mut self,
        item: &Value,
        kind: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        if !matches!(item_type(item), Some("function_call" | "custom_tool_call")) {
            return Ok(());
        }
        let call: WireCall = parse_part(item, kind)?;
        if self.open.len() >= MAX_OPEN_CALLS {
            return Err(FrameError::fatal(format!(
                "more than {MAX_OPEN_CALLS} tool calls open at once"
            )));
        }
        let call_id = call.call_id.unwrap_or_else(http::made_up_call_id);
        let name = call.name.unwrap_or_default();
        out.push_back(ResponseEvent::ToolCallStarted {
            id: call_id.clone(),
            name: name.clone(),
        });
        self.open.push(OpenCall {
            item_id: call.id,
            call_id,
            name,
            arguments: String::new(),
        });
        Ok(())
    }

    /// The open call an argument event is about: by item id, else the
    /// latest one.
    fn open_call(&mut self, item_id: Option<&str>) -> Option<&mut OpenCall> {
        let position = item_id
            .and_then(|id| {
                self.open
                    .iter()
                    .position(|c| c.item_id.as_deref() == Some(id))
            })
            .or_else(|| self.open.len().checked_sub(1))?;
        self.open.get_mut(position)
    }

    fn on_item_done(
        &mut self,
        item: &Value,
        kind: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        match item_type(item) {
            Some(item_kind @ ("function_call" | "custom_tool_call")) => {
                let call: WireCall = parse_part(item, kind)?;
                let position = self.open.iter().position(|c| {
                    (call.id.is_some() && c.item_id == call.id)
                        || call.call_id.as_deref() == Some(c.call_id.as_str())
                });
                let open = position.map(|p| self.open.remove(p));
                let started = open.is_some();
                let (open_id, open_name, open_arguments) = match open {
                    Some(o) => (Some(o.call_id), o.name, o.arguments),
                    None => (None, String::new(), String::new()),
                };
                let id = call
                    .call_id
                    .or(open_id)
                    .unwrap_or_else(http::made_up_call_id);
                let name = call.name.filter(|n| !n.is_empty()).unwrap_or(open_name);
                let (arguments, kind) = if item_kind == "function_call" {
                    (call.arguments, ToolCallKind::Function)
                } else {
                    (call.input, ToolCallKind::Freeform)
                };
                let call = ToolCall {
                    id,
                    name,
                    arguments: arguments.unwrap_or(open_arguments),
                    kind,
                };
                http::push_call(out, call, started);
                self.made_calls = true;
            }
            Some("reasoning") => {
                let reasoning: WireReasoning = parse_part(item, kind)?;
                out.push_back(ResponseEvent::Reasoning(Reasoning {
                    id: reasoning.id,
                    text: joined_text(reasoning.summary, "summary_text", "\n\n"),
                    encrypted: reasoning.encrypted_content,
                    source: REASONING_SOURCE.to_string(),
                }));
            }
            Some("web_search_call") => {
                out.push_back(ResponseEvent::WebSearch(web_search(item)));
                self.searches += 1;
            }
            Some("message") if !self.saw_text_delta => {
                let message: WireMessage = parse_part(item, kind)?;
                let text = joined_text(message.content, "output_text", "");
                if !text.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `response.completed` or `response.incomplete`.
    fn complete(
        &mut self,
        event: &Value,
        kind: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let response: WireResponse = match event.get("response") {
            Some(response) => parse_part(response, kind)?,
            None => WireResponse::default(),
        };
        let usage = response.usage.map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.input_tokens_details.map_or(0, |d| d.cached_tokens),
            web_searches: self.searches,
            ..Usage::default()
        });
        let (stop_reason, incomplete_tool_call) = if kind == "response.incomplete" {
            let reason = response
                .incomplete_details
                .and_then(|d| d.reason)
                .unwrap_or_else(|| "incomplete".to_string());
            // A call still being written when the output was cut off.
            let cut = self.open.first().map(|c| {
                if c.name.is_empty() {
                    "(unnamed tool call)".to_string()
                } else {
                    c.name.clone()
                }
            });
            (StopReason::from_wire(&reason), cut)
        } else if self.made_calls {
            (StopReason::ToolCalls, None)
        } else {
            (StopReason::Stop, None)
        };
        out.push_back(ResponseEvent::Completed {
            usage,
            stop_reason,
            incomplete_tool_call,
        });
        Ok(())
    }
}

/// The fields of a text delta event (other fields are skipped unread).
#[derive(Deserialize)]
struct TextDeltaEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    delta: Cow<'a, str>,
}

impl WireParser for EventParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = frame.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        // Most events are text deltas: read those without building a tree.
        if let Ok(TextDeltaEvent { kind, delta }) = serde_json::from_str::<TextDeltaEvent>(data) {
            if kind == "response.output_text.delta" || kind == "response.refusal.delta" {
                self.saw_text_delta = true;
                if !delta.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(delta.into_owned()));
                }
                return Ok(false);
            }
        }
        let event: Value = http::parse_frame(data, "event")?;
        // The `type` field names the event; the SSE `event:` line repeats it.
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&frame.event);
        match kind {
            // A refusal is what the model says instead of an answer.
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = field_str(&event, "delta", kind)?;
                self.saw_text_delta = true;
                if !delta.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(delta.to_string()));
                }
            }
            "response.output_item.added" => {
                self.on_item_added(field(&event, "item", kind)?, kind, out)?;
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let delta = field_str(&event, "delta", kind)?;
                let item_id = event.get("item_id").and_then(Value::as_str);
                if let Some(call) = self.open_call(item_id) {
                    call.arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let name = if kind.ends_with("arguments.done") {
                    "arguments"
                } else {
                    "input"
                };
                let whole = field_str(&event, name, kind)?;
                let item_id = event.get("item_id").and_then(Value::as_str);
                if let Some(call) = self.open_call(item_id) {
                    call.arguments = whole.to_string();
                }
            }
            "response.output_item.done" => {
                self.on_item_done(field(&event, "item", kind)?, kind, out)?;
            }
            "response.output_text.annotation.added" => {
                let annotation = field(&event, "annotation", kind)?;
                if let Some(citation) = url_citation(annotation) {
                    out.push_back(ResponseEvent::Citation(citation));
                }
            }
            "response.completed" | "response.incomplete" => {
                self.complete(&event, kind, out)?;
                return Ok(true);
            }
            "response.failed" => {
                let error = event.get("response").and_then(|r| r.get("error"));
                let code = error.and_then(|e| e.get("code")).and_then(Value::as_str);
                let message = event.get("response").and_then(http::json_error_message);
                let overflow =
                    error.is_some_and(|e| is_context_overflow(&ServerError::from_json(None, e)));
                return Err(server_error("the response failed", code, message, overflow));
            }
            "error" => {
                // `{"type":"error","code":..,"message":..}`, or the same
                // nested under `error` (where `type` may be the only code).
                let nested = event.get("error");
                let code = [
                    event.get("code"),
                    nested.and_then(|e| e.get("code")),
                    nested.and_then(|e| e.get("type")),
                ]
                .into_iter()
                .flatten()
                .find_map(Value::as_str);
                let message = http::json_error_message(&event);
                let overflow = is_context_overflow(&ServerError::from_json(None, &event))
                    || code == Some("context_length_exceeded");
                return Err(server_error(
                    "the server reported an error mid-stream",
                    code,
                    message,
                    overflow,
                ));
            }
            // response.created, response.in_progress, content parts,
            // reasoning summary deltas, text done, and future events.
            _ => {}
        }
        Ok(false)
    }

    fn terminal(&self) -> &'static str {
        "`response.completed`"
    }
}

/// A finished `web_search_call` item: what was searched for, the pages
/// found (`action.sources`, sent when the request includes them), and the
/// item itself to send back.
fn web_search(item: &Value) -> WebSearch {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let action = item.get("action");
    let results = action
        .and_then(|a| a.get("sources"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            Some(WebSource {
                url: s.get("url")?.as_str()?.to_string(),
                title: text(s.get("title")),
            })
        })
        .collect();
    let status = item.get("status").and_then(Value::as_str);
    WebSearch {
        id: text(item.get("id")),
        query: text(action.and_then(|a| a.get("query"))),
        results,
        error: (status == Some("failed")).then(|| "failed".to_string()),
        source: REASONING_SOURCE.to_string(),
        blocks: vec![item.clone()],
    }
}

/// A `url_citation` annotation of the answer's text.
fn url_citation(annotation: &Value) -> Option<Citation> {
    if annotation.get("type").and_then(Value::as_str) != Some("url_citation") {
        return None;
    }
    let text = |key: &str| annotation.get(key).and_then(Value::as_str);
    Some(Citation {
        page: WebSource {
            url: text("url")?.to_string(),
            title: text("title").unwrap_or_default().to_string(),
        },
        cited_text: None,
    })
}

fn item_type(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

/// The texts of the parts of type `kind`, joined with `separator`.
fn joined_text(parts: Option<Vec<WirePart>>, kind: &str, separator: &str) -> String {
    parts
        .into_iter()
        .flatten()
        .filter(|p| p.kind == kind)
        .filter_map(|p| p.text)
        .collect::<Vec<_>>()
        .join(separator)
}

pub(super) fn field<'v>(event: &'v Value, name: &str, kind: &str) -> Result<&'v Value, FrameError> {
    event
        .get(name)
        .ok_or_else(|| FrameError::fatal(format!("malformed `{kind}` event: no `{name}`")))
}

fn field_str<'v>(event: &'v Value, name: &str, kind: &str) -> Result<&'v str, FrameError> {
    field(event, name, kind)?.as_str().ok_or_else(|| {
        FrameError::fatal(format!(
            "malformed `{kind}` event: `{name}` is not a string"
        ))
    })
}

fn parse_part<T: DeserializeOwned>(value: &Value, kind: &str) -> Result<T, FrameError> {
    T::deserialize(value).map_err(|e| {
        FrameError::fatal(format!(
            "malformed `{kind}` event ({e}): `{}`",
            http::truncate_chars(&value.to_string(), MAX_ERROR_CHARS / 2)
        ))
    })
}

/// An error the server reported in the stream: a context overflow (as
/// [`is_context_overflow`] decided), or by its code a transient failure
/// worth retrying, or fatal.
pub(super) fn server_error(
    what: &str,
    code: Option<&str>,
    message: Option<String>,
    overflow: bool,
) -> FrameError {
    let message = http::truncate_chars(
        message.as_deref().unwrap_or("no error message"),
        MAX_ERROR_CHARS,
    );
    let text = match code {
        Some(code) => format!("{what}: {message} ({code})"),
        None => format!("{what}: {message}"),
    };
    if overflow {
        return FrameError::context_overflow(message);
    }
    match code {
        Some(
            "server_error"
            | "internal_error"
            | "server_is_overloaded"
            | "overloaded"
            | "rate_limit_exceeded"
            | "slow_down",
        ) => FrameError::retryable(text),
        _ => FrameError::fatal(text),
    }
}
