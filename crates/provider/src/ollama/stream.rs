//! Ollama /api/chat stream: the parser the shared HTTP driver runs on each frame,
//! mapping it onto [`ResponseEvent`]s.

use super::*;

#[derive(Deserialize)]
struct WireLine {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCallIn>>,
}

#[derive(Deserialize)]
struct WireCallIn {
    #[serde(default)]
    id: Option<String>,
    function: WireFunctionIn,
}

#[derive(Deserialize)]
struct WireFunctionIn {
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// Turns `/api/chat` lines into [`ResponseEvent`]s, with no HTTP involved:
/// feed it the lines of [`ndjson::decode`](crate::ndjson::decode) in order.
pub struct LineParser {
    /// Names of the request's freeform tools, whose `input` is unwrapped.
    freeform: Vec<String>,
    /// Thinking not yet emitted.
    thinking: String,
    calls: usize,
}

impl LineParser {
    /// `freeform` names the request's freeform tools, whose calls arrive as
    /// `{"input": "..."}` and are unwrapped to the bare text.
    pub fn new(freeform: Vec<String>) -> Self {
        LineParser {
            freeform,
            thinking: String::new(),
            calls: 0,
        }
    }

    /// Handle one line, queueing what it produces. `Ok(true)` after the
    /// line with `"done": true`; `Err` names what was wrong with the line.
    pub fn on_line(
        &mut self,
        data: &str,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        let line: WireLine = http::parse_frame(data, "line")?;
        if let Some(error) = line.error.filter(|e| !e.is_null()) {
            let message = chat_completions::error_message(&error);
            let report = ServerError::from_json(None, &json!({ "error": error }));
            return Err(chat_completions::mid_stream_error(
                &report,
                &message,
                is_context_overflow,
            ));
        }
        if let Some(message) = line.message {
            if let Some(thinking) = message.thinking {
                self.thinking.push_str(&thinking);
            }
            if let Some(text) = message.content.filter(|t| !t.is_empty()) {
                self.flush_thinking(out);
                out.push_back(ResponseEvent::TextDelta(text));
            }
            for call in message.tool_calls.into_iter().flatten() {
                self.flush_thinking(out);
                self.on_call(call, out);
            }
        }
        if !line.done {
            return Ok(false);
        }
        self.flush_thinking(out);
        let reason = line.done_reason.as_deref().filter(|r| !r.is_empty());
        let mut stop = StopReason::from_wire(reason.unwrap_or("stop"));
        if self.calls > 0 && stop == StopReason::Stop {
            stop = StopReason::ToolCalls;
        }
        // Without the prompt's count the usage would mislead; the engine
        // estimates instead.
        let usage = line.prompt_eval_count.map(|input| Usage {
            input_tokens: input,
            output_tokens: line.eval_count.unwrap_or(0),
            ..Usage::default()
        });
        out.push_back(ResponseEvent::Completed {
            usage,
            stop_reason: stop,
            // Calls arrive whole: none can be cut off.
            incomplete_tool_call: None,
        });
        Ok(true)
    }

    fn on_call(&mut self, call: WireCallIn, out: &mut VecDeque<ResponseEvent>) {
        let id = match call.id.filter(|id| !id.is_empty()) {
            Some(id) => id,
            None => http::made_up_call_id(),
        };
        let name = call.function.name;
        let arguments = match call.function.arguments {
            Value::Null => "{}".to_string(),
            Value::String(text) => text,
            other => other.to_string(),
        };
        let (kind, arguments) = freeform::call(&self.freeform, &name, arguments);
        self.calls += 1;
        let call = ToolCall {
            id,
            name,
            arguments,
            kind,
        };
        http::push_call(out, call, false);
    }

    /// Emit the thinking collected so far, if any, as one reasoning item.
    fn flush_thinking(&mut self, out: &mut VecDeque<ResponseEvent>) {
        if self.thinking.is_empty() {
            return;
        }
        out.push_back(ResponseEvent::Reasoning(Reasoning {
            id: None,
            text: std::mem::take(&mut self.thinking),
            encrypted: None,
            source: SOURCE.to_string(),
        }));
    }
}

impl WireParser for LineParser {
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError> {
        self.on_line(&frame.data, out)
    }

    fn terminal(&self) -> &'static str {
        "a line with `\"done\": true`"
    }
}
