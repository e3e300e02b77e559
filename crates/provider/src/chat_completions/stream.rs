//! Chat Completions stream: the parser the shared HTTP driver runs on each frame,
//! mapping it onto [`ResponseEvent`]s.

use super::*;

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Deserialize)]
pub(super) struct WireToolCallDelta {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
pub(super) struct WireFunctionDelta {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WireTokenDetails>,
}

#[derive(Deserialize)]
pub(super) struct WireTokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A tool call being assembled from deltas.
pub(super) struct PartialCall {
    /// The `index` the server gave it.
    wire_index: usize,
    id: String,
    name: String,
    arguments: String,
    /// Whether `ToolCallStarted` was emitted.
    started: bool,
    /// Whether the call itself was emitted (before the choice finished:
    /// a later call began, so this one is complete).
    released: bool,
}

/// Turns Chat Completions SSE events into [`ResponseEvent`]s, with no HTTP
/// involved: feed it the events of [`sse::decode`](crate::sse::decode) in order.
pub struct ChunkParser {
    /// Names of the request's freeform tools, whose `input` is unwrapped.
    freeform: Vec<String>,
    calls: Vec<PartialCall>,
    /// Where in `calls` the latest call with each wire index, and with each
    /// id, is (scanning `calls` for every delta made a stream of many
    /// calls quadratic), and one more than the highest wire index.
    at_index: HashMap<usize, usize>,
    with_id: HashMap<String, usize>,
    next_index: usize,
    /// Calls emitted before the choice finished.
    released: usize,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    incomplete: Option<String>,
}

impl ChunkParser {
    /// `freeform` names the request's freeform tools, whose calls arrive as
    /// `{"input": "..."}` and are unwrapped to the bare text.
    pub fn new(freeform: Vec<String>) -> Self {
        ChunkParser {
            freeform,
            calls: Vec::new(),
            at_index: HashMap::new(),
            with_id: HashMap::new(),
            next_index: 0,
            released: 0,
            usage: None,
            stop: None,
            incomplete: None,
        }
    }

    /// Handle one SSE event, queueing what it produces. `Ok(true)` after the
    /// terminal `[DONE]`; `Err` names what was wrong with the event.
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            if self.stop.is_none() {
                // Some servers end without a finish_reason.
                self.finish("stop", out);
            }
            out.push_back(ResponseEvent::Completed {
                usage: self.usage.take(),
                stop_reason: self.stop.take().unwrap_or(StopReason::Stop),
                incomplete_tool_call: self.incomplete.take(),
            });
            return Ok(true);
        }
        let chunk: WireChunk = http::parse_frame(data, "chunk")?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            let report = ServerError::from_json(None, &json!({ "error": error }));
            return Err(mid_stream_error(
                &report,
                &error_message(error),
                is_context_overflow,
            ));
        }
        if event.event == "error" {
            let report = ServerError::parse(None, data);
            return Err(mid_stream_error(&report, data, is_context_overflow));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                ..Usage::default()
            });
        }
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    out.push_back(ResponseEvent::TextDelta(text));
                }
                for piece in delta.tool_calls.into_iter().flatten() {
                    self.on_tool_call_delta(piece, out);
                }
            }
            if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
                if self.stop.is_none() {
                    self.finish(reason, out);
                }
            }
        }
        Ok(false)
    }

    pub(super) fn on_tool_call_delta(
        &mut self,
        piece: WireToolCallDelta,
        out: &mut VecDeque<ResponseEvent>,
    ) {
        let id = piece.id.filter(|id| !id.is_empty());
        let (name, arguments) = match piece.function {
            Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments),
            None => (None, None),
        };
        let position = match self.position_for(piece.index, id.as_deref()) {
            Some(position) => position,
            None => {
                let wire_index = piece.index.unwrap_or(self.next_index);
                self.release_complete(wire_index, out);
                self.next_index = self.next_index.max(wire_index.saturating_add(1));
                self.at_index.insert(wire_index, self.calls.len());
                self.calls.push(PartialCall {
                    wire_index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                    released: false,
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        // The first id and name win; servers that repeat them are ignored.
        if call.id.is_empty() {
            if let Some(id) = id {
                let latest = self.with_id.entry(id.clone()).or_insert(position);
                *latest = (*latest).max(position);
                call.id = id;
            }
        }
        if call.name.is_empty() {
            if let Some(name) = name {
                call.name = name;
            }
        }
        if let Some(arguments) = arguments {
            if call.released {
                // A server that goes back to a call after starting the
                // next one: too late, the call already ran its course.
                tracing::warn!(call = %call.id, "arguments for a tool call after the next call began; ignored");
            } else {
                call.arguments.push_str(&arguments);
            }
        }
        if !call.started && !call.id.is_empty() && !call.name.is_empty() {
            call.started = true;
            out.push_back(ResponseEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    /// A call begins at `next_wire_index`: the calls before it are
    /// complete, so emit them now (the engine may start a read-only one
    /// while the model still streams) rather than at the choice's end.
    /// Only calls in the order `finish` would emit them, with a name and
    /// arguments that are whole JSON, are released; the rest wait.
    fn release_complete(&mut self, next_wire_index: usize, out: &mut VecDeque<ResponseEvent>) {
        for n in self.released..self.calls.len() {
            let call = &self.calls[n];
            let whole = !call.name.is_empty()
                && call.wire_index <= next_wire_index
                && serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_ok();
            if !whole {
                break;
            }
            emit(&self.freeform, &mut self.calls[n], n, out);
            self.released = n + 1;
        }
    }

    /// Which call a delta continues, `None` for a new one.
    fn position_for(&self, index: Option<usize>, id: Option<&str>) -> Option<usize> {
        let same_id = |c: &PartialCall| id.is_some_and(|id| c.id == id);
        match index {
            Some(index) => {
                let position = *self.at_index.get(&index)?;
                let call = &self.calls[position];
                // A different id on a used index is a new call (some servers
                // put every call at index 0).
                match id {
                    Some(_) if !call.id.is_empty() && !same_id(call) => None,
                    _ => Some(position),
                }
            }
            None => match id {
                Some(id) => self.with_id.get(id).copied(),
                None => self.calls.len().checked_sub(1),
            },
        }
    }

    /// The choice finished: emit its complete tool calls in index order.
    pub(super) fn finish(&mut self, reason: &str, out: &mut VecDeque<ResponseEvent>) {
        let mut stop = StopReason::from_wire(reason);
        let released = std::mem::take(&mut self.released);
        let mut calls = std::mem::take(&mut self.calls);
        calls.drain(..released);
        self.at_index.clear();
        self.with_id.clear();
        self.next_index = 0;
        // Stable: calls sharing an index keep their arrival order.
        calls.sort_by_key(|c| c.wire_index);
        if stop == StopReason::Length {
            // The output limit hit while the last call was being written.
            if let Some(cut) = calls.pop() {
                self.incomplete = Some(if cut.name.is_empty() {
                    "(unnamed tool call)".to_string()
                } else {
                    cut.name
                });
            }
        }
        if (released > 0 || !calls.is_empty()) && stop == StopReason::Stop {
            // Some servers say "stop" even when they call tools.
            stop = StopReason::ToolCalls;
        }
        for (n, mut call) in (released..).zip(calls) {
            emit(&self.freeform, &mut call, n, out);
        }
        self.stop = Some(stop);
    }
}

/// Emit `call`, the `n`th of its choice, as complete (an id made up when
/// the server sent none; freeform input unwrapped).
fn emit(freeform: &[String], call: &mut PartialCall, n: usize, out: &mut VecDeque<ResponseEvent>) {
    if call.id.is_empty() {
        call.id = format!("{}_{n}", http::made_up_call_id());
    }
    let arguments = std::mem::take(&mut call.arguments);
    let (kind, arguments) = freeform::call(freeform, &call.name, arguments);
    let made = ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments,
        kind,
    };
    http::push_call(out, made, call.started);
    call.started = true;
    call.released = true;
}

impl WireParser for ChunkParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        self.on_event(frame, out)
    }

    fn terminal(&self) -> &'static str {
        "`data: [DONE]`"
    }
}

/// The message of an `error` payload in the stream (a string, or an object
/// with a `message`), else the payload as JSON.
pub(crate) fn error_message(error: &Value) -> String {
    http::json_error_message(&json!({ "error": error })).unwrap_or_else(|| error.to_string())
}

/// An error the server reported inside the stream (`error`, saying
/// `message`): a context overflow when the wire API's `overflow` classifier
/// says so; retryable when it says the server is overloaded, busy or
/// failed; fatal otherwise. OpenAI-style servers (vLLM, OpenRouter,
/// LiteLLM, Ollama) name the failure in free text, so the error's text is
/// searched for the words they use.
pub(crate) fn mid_stream_error(
    error: &ServerError,
    message: &str,
    overflow: fn(&ServerError) -> bool,
) -> FrameError {
    let message = http::truncate_chars(message, MAX_ERROR_CHARS);
    if overflow(error) {
        return FrameError::context_overflow(message);
    }
    let text = format!("the server reported an error mid-stream: {message}");
    let transient = [
        "overloaded",
        "busy",
        "server_error",
        "internal",
        "rate_limit",
        "timeout",
        "unavailable",
    ]
    .iter()
    .any(|s| error.text.contains(s));
    if transient {
        FrameError::retryable(text)
    } else {
        FrameError::fatal(text)
    }
}
