//! Anthropic's stream events read into [`ResponseEvent`]s: the
//! [`EventParser`] the shared HTTP driver runs on each SSE frame.

use super::*;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: usize,
        /// Read as a tree: a web search's blocks are kept verbatim.
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    CitationsDelta {
        citation: WireCitation,
    },
    #[serde(other)]
    Other,
}

/// A citation of a text block; only web search results are reported.
#[derive(Deserialize)]
struct WireCitation {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    cited_text: Option<String>,
}

/// A web search result of a `web_search_tool_result` block.
#[derive(Deserialize)]
struct WireSearchResult {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: Option<String>,
}

/// A `content_block_delta` event's fields for the fast path in
/// [`EventParser::on_event`] (other fields are skipped unread).
#[derive(Deserialize)]
struct FastDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: usize,
    #[serde(borrow)]
    delta: FastDeltaBody<'a>,
}

#[derive(Deserialize)]
struct FastDeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    server_tool_use: Option<WireServerToolUse>,
}

#[derive(Deserialize, Default)]
struct WireServerToolUse {
    #[serde(default)]
    web_search_requests: u64,
}

impl WireUsage {
    /// Take every count `newer` has.
    fn update(&mut self, newer: WireUsage) {
        let keep = |old: &mut Option<u64>, new: Option<u64>| {
            if new.is_some() {
                *old = new;
            }
        };
        keep(&mut self.input_tokens, newer.input_tokens);
        keep(&mut self.output_tokens, newer.output_tokens);
        keep(
            &mut self.cache_creation_input_tokens,
            newer.cache_creation_input_tokens,
        );
        keep(
            &mut self.cache_read_input_tokens,
            newer.cache_read_input_tokens,
        );
        if newer.server_tool_use.is_some() {
            self.server_tool_use = newer.server_tool_use;
        }
    }

    fn to_usage(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + read + write,
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_input_tokens: read,
            cache_write_tokens: write,
            web_searches: self
                .server_tool_use
                .as_ref()
                .map_or(0, |s| s.web_search_requests),
            estimated: false,
        }
    }
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// A content block being streamed.
enum OpenBlock {
    Text,
    Thinking {
        text: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    ToolUse(PartialCall),
    /// A `server_tool_use` block of the web search: its input streams as
    /// JSON; the block is kept as it came.
    ServerToolUse {
        block: Value,
        json: String,
    },
    /// A block type cogni does not use.
    Ignored,
}

struct PartialCall {
    index: usize,
    id: String,
    name: String,
    /// `input_json_delta` pieces joined.
    json: String,
    /// The input sent with `content_block_start`, used when no delta follows.
    initial: Option<Value>,
}

impl PartialCall {
    /// The complete input JSON.
    fn input(json: String, initial: Option<Value>) -> String {
        if !json.is_empty() {
            return json;
        }
        match initial {
            Some(value) if !value.is_null() => value.to_string(),
            _ => "{}".to_string(),
        }
    }
}

/// Turns Messages SSE events into [`ResponseEvent`]s, with no HTTP
/// involved: feed it the events of [`sse::decode`](crate::sse::decode) in order.
pub struct EventParser {
    freeform: Vec<String>,
    final_answer: Option<FinalAnswer>,
    open: BTreeMap<usize, OpenBlock>,
    /// Tool calls whose block ended, held until the stop reason is known.
    calls: Vec<PartialCall>,
    /// The highest block index started so far.
    last_index: Option<usize>,
    usage: Option<WireUsage>,
    stop: Option<StopReason>,
    incomplete: Option<String>,
    /// Web search `server_tool_use` blocks waiting for their result.
    searches: Vec<Value>,
}

impl EventParser {
    /// `freeform` names the request's freeform tools (their `{"input": ...}`
    /// is unwrapped); `output_schema` is the request's, for which the
    /// final-answer tool was offered.
    pub fn new(freeform: Vec<String>, output_schema: Option<&Value>) -> Self {
        EventParser::with(freeform, output_schema.map(FinalAnswer::for_schema))
    }

    pub(super) fn with(freeform: Vec<String>, final_answer: Option<FinalAnswer>) -> Self {
        EventParser {
            freeform,
            final_answer,
            open: BTreeMap::new(),
            calls: Vec::new(),
            last_index: None,
            usage: None,
            stop: None,
            incomplete: None,
            searches: Vec::new(),
        }
    }

    /// Handle one SSE event, queueing what it produces. `Ok(true)` after the
    /// terminal `message_stop`; `Err` names what was wrong with the event.
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        // Most events are text or tool-input deltas: read those without
        // the buffering serde does for internally tagged enums.
        if let Ok(fast) = serde_json::from_str::<FastDelta>(data) {
            if fast.kind == "content_block_delta" {
                let body = fast.delta;
                let delta = match (&*body.kind, body.text, body.partial_json) {
                    ("text_delta", Some(text), _) => Some(WireDelta::TextDelta {
                        text: text.into_owned(),
                    }),
                    ("input_json_delta", _, Some(json)) => Some(WireDelta::InputJsonDelta {
                        partial_json: json.into_owned(),
                    }),
                    _ => None,
                };
                if let Some(delta) = delta {
                    self.delta(fast.index, delta, out)?;
                    return Ok(false);
                }
            }
        }
        let parsed: WireEvent = http::parse_frame(data, format_args!("`{}` event", event.event))?;
        match parsed {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage
                        .get_or_insert_with(WireUsage::default)
                        .update(usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out)?,
            WireEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, out)?,
            WireEvent::ContentBlockStop { index } => self.stop_block(index, out)?,
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(usage) = usage {
                    self.usage
                        .get_or_insert_with(WireUsage::default)
                        .update(usage);
                }
                if let Some(reason) = delta.stop_reason.filter(|r| !r.is_empty()) {
                    if self.stop.is_none() {
                        self.finish(Some(&reason), out);
                    }
                }
            }
            WireEvent::MessageStop => {
                if self.stop.is_none() {
                    self.finish(None, out);
                }
                out.push_back(ResponseEvent::Completed {
                    usage: self.usage.take().map(|u| u.to_usage()),
                    stop_reason: self.stop.take().unwrap_or(StopReason::Stop),
                    incomplete_tool_call: self.incomplete.take(),
                });
                return Ok(true);
            }
            WireEvent::Error { error } => {
                let overflow = is_context_overflow(&ServerError::parse(None, data));
                return Err(stream_error(&error, overflow));
            }
            WireEvent::Ping | WireEvent::Unknown => {}
        }
        Ok(false)
    }

    fn start_block(
        &mut self,
        index: usize,
        block: Value,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let open = match block.get("type").and_then(Value::as_str) {
            Some("server_tool_use") if block.get("name") == Some(&json!("web_search")) => {
                OpenBlock::ServerToolUse {
                    block,
                    json: String::new(),
                }
            }
            Some("web_search_tool_result") => {
                self.search_result(block, out);
                OpenBlock::Ignored
            }
            _ => self.open_block(index, block, out)?,
        };
        if self.open.insert(index, open).is_some() {
            return Err(FrameError::fatal(format!(
                "content block {index} was started twice"
            )));
        }
        self.last_index = self.last_index.max(Some(index));
        Ok(())
    }

    /// A `web_search_tool_result` block (it comes whole): with the
    /// `server_tool_use` it answers, one finished search.
    fn search_result(&mut self, block: Value, out: &mut VecDeque<ResponseEvent>) {
        let id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let used = self
            .searches
            .iter()
            .position(|u| u.get("id").and_then(Value::as_str) == Some(&id))
            .map(|at| self.searches.remove(at));
        let query = used
            .as_ref()
            .and_then(|u| u.pointer("/input/query"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let content = block.get("content");
        let results = content
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| WireSearchResult::deserialize(r).ok())
            .map(|r| WebSource {
                url: r.url,
                title: r.title.unwrap_or_default(),
            })
            .collect();
        let error = content
            .and_then(|c| c.get("error_code"))
            .and_then(Value::as_str)
            .map(str::to_string);
        out.push_back(ResponseEvent::WebSearch(WebSearch {
            id,
            query,
            results,
            error,
            source: SOURCE.to_string(),
            blocks: used.into_iter().chain([block]).collect(),
        }));
    }

    /// A text, tool use or thinking block.
    fn open_block(
        &mut self,
        index: usize,
        block: Value,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<OpenBlock, FrameError> {
        let block = WireBlock::deserialize(&block).map_err(|e| {
            FrameError::fatal(format!("malformed `content_block_start` event: {e}"))
        })?;
        Ok(match block {
            WireBlock::Text { text } => {
                if !text.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
                OpenBlock::Text
            }
            WireBlock::ToolUse { id, name, input } => {
                if !self.is_final_answer(&name) {
                    out.push_back(ResponseEvent::ToolCallStarted {
                        id: id.clone(),
                        name: name.clone(),
                    });
                }
                OpenBlock::ToolUse(PartialCall {
                    index,
                    id,
                    name,
                    json: String::new(),
                    initial: input,
                })
            }
            WireBlock::Thinking {
                thinking,
                signature,
            } => OpenBlock::Thinking {
                text: thinking,
                signature,
            },
            WireBlock::RedactedThinking { data } => OpenBlock::Redacted { data },
            WireBlock::Other => OpenBlock::Ignored,
        })
    }

    fn delta(
        &mut self,
        index: usize,
        delta: WireDelta,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let block = self.open.get_mut(&index).ok_or_else(|| {
            FrameError::fatal(format!(
                "content_block_delta for block {index}, which is not open"
            ))
        })?;
        match (block, delta) {
            (OpenBlock::Text, WireDelta::TextDelta { text }) => {
                if !text.is_empty() {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
            }
            (OpenBlock::ToolUse(call), WireDelta::InputJsonDelta { partial_json }) => {
                call.json.push_str(&partial_json);
            }
            (OpenBlock::ServerToolUse { json, .. }, WireDelta::InputJsonDelta { partial_json }) => {
                json.push_str(&partial_json);
            }
            (OpenBlock::Text, WireDelta::CitationsDelta { citation }) => {
                if let (Some(url), "web_search_result_location") =
                    (citation.url, citation.kind.as_str())
                {
                    out.push_back(ResponseEvent::Citation(Citation {
                        page: WebSource {
                            url,
                            title: citation.title.unwrap_or_default(),
                        },
                        cited_text: citation.cited_text,
                    }));
                }
            }
            (OpenBlock::Thinking { text, .. }, WireDelta::ThinkingDelta { thinking }) => {
                text.push_str(&thinking);
            }
            (OpenBlock::Thinking { signature, .. }, WireDelta::SignatureDelta { signature: s }) => {
                signature.push_str(&s);
            }
            (OpenBlock::Ignored, _) | (_, WireDelta::Other) => {}
            (_, delta) => {
                return Err(FrameError::fatal(format!(
                    "content_block_delta of type `{}` does not fit block {index}",
                    delta.kind()
                )))
            }
        }
        Ok(())
    }

    fn stop_block(
        &mut self,
        index: usize,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<(), FrameError> {
        let block = self.open.remove(&index).ok_or_else(|| {
            FrameError::fatal(format!(
                "content_block_stop for block {index}, which is not open"
            ))
        })?;
        match block {
            OpenBlock::Thinking { text, signature } => {
                out.push_back(ResponseEvent::Reasoning(Reasoning {
                    id: None,
                    text,
                    encrypted: (!signature.is_empty()).then_some(signature),
                    source: SOURCE.to_string(),
                }));
            }
            OpenBlock::Redacted { data } => {
                out.push_back(ResponseEvent::Reasoning(Reasoning {
                    id: None,
                    text: String::new(),
                    encrypted: Some(data),
                    source: SOURCE.to_string(),
                }));
            }
            OpenBlock::ToolUse(call) => self.calls.push(call),
            OpenBlock::ServerToolUse { mut block, json } => {
                // The input as it streamed (the start block's is empty).
                if let Ok(input) = serde_json::from_str::<Value>(&json) {
                    block["input"] = input;
                }
                self.searches.push(block);
            }
            OpenBlock::Text | OpenBlock::Ignored => {}
        }
        Ok(())
    }

    fn is_final_answer(&self, name: &str) -> bool {
        self.final_answer.is_some() && name == FINAL_ANSWER_TOOL
    }

    /// The stop reason is known: emit the finished calls (the final answer
    /// as text), holding back a call the output limit cut off.
    fn finish(&mut self, reason: Option<&str>, out: &mut VecDeque<ResponseEvent>) {
        let mut stop = reason.map_or(StopReason::Stop, stop_reason);
        // A tool_use block still open never finished.
        let mut cut: Option<String> = None;
        for block in std::mem::take(&mut self.open).into_values() {
            if let OpenBlock::ToolUse(call) = block {
                cut = Some(call.name);
            }
        }
        let mut calls = std::mem::take(&mut self.calls);
        let last_is_call = self
            .last_index
            .is_some_and(|last| calls.last().is_some_and(|c| c.index == last));
        if stop == StopReason::Length && last_is_call {
            // The limit hit while the last block, a call, was written.
            cut = calls.pop().map(|c| c.name);
        }
        let mut called = false;
        for PartialCall {
            id,
            name,
            json,
            initial,
            ..
        } in calls
        {
            let input = PartialCall::input(json, initial);
            match self.final_answer {
                Some(final_answer) if name == FINAL_ANSWER_TOOL => {
                    out.push_back(ResponseEvent::TextDelta(final_answer.answer(input)));
                }
                _ => {
                    called = true;
                    let (kind, arguments) = freeform::call(&self.freeform, &name, input);
                    out.push_back(ResponseEvent::ToolCall(ToolCall {
                        id,
                        name,
                        arguments,
                        kind,
                    }));
                }
            }
        }
        stop = match stop {
            // Only the final answer was "called".
            StopReason::ToolCalls if !called => StopReason::Stop,
            StopReason::Stop if called => StopReason::ToolCalls,
            other => other,
        };
        self.incomplete = cut;
        self.stop = Some(stop);
    }
}

impl WireDelta {
    fn kind(&self) -> &'static str {
        match self {
            WireDelta::TextDelta { .. } => "text_delta",
            WireDelta::InputJsonDelta { .. } => "input_json_delta",
            WireDelta::ThinkingDelta { .. } => "thinking_delta",
            WireDelta::SignatureDelta { .. } => "signature_delta",
            WireDelta::CitationsDelta { .. } => "citations_delta",
            WireDelta::Other => "other",
        }
    }
}

impl WireParser for EventParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        self.on_event(frame, out)
    }

    fn terminal(&self) -> &'static str {
        "`message_stop`"
    }
}

/// Anthropic's stop reasons; those [`StopReason::from_wire`] does not know
/// are mapped here.
pub(super) fn stop_reason(reason: &str) -> StopReason {
    match reason {
        // The context window filled up while the model was writing.
        "model_context_window_exceeded" => StopReason::Length,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::from_wire(other),
    }
}

/// An `error` event: a context overflow (`overflow`, as
/// [`is_context_overflow`] decided), retryable when the server was
/// overloaded or failed, fatal otherwise.
fn stream_error(error: &WireError, overflow: bool) -> FrameError {
    if overflow {
        return FrameError::context_overflow(http::truncate_chars(&error.message, MAX_ERROR_CHARS));
    }
    let message = format!(
        "the server reported an error mid-stream: {}: {}",
        error.kind,
        http::truncate_chars(&error.message, MAX_ERROR_CHARS)
    );
    match error.kind.as_str() {
        "overloaded_error" | "api_error" => FrameError::retryable(message),
        _ => FrameError::fatal(message),
    }
}
