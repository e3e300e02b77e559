//! Tool calls written as text, for models without native tool calling
//! (`tool_call_mode = "text"` in `[model_families.*]`).
//!
//! [`TextTools`] wraps any provider. On the way out it rewrites the
//! request: no API tools; the instructions gain a tool section (each
//! tool's name, description and JSON schema, and how to write a call),
//! the same on every request so the prefix the provider caches never
//! changes; calls in history become the blocks the model wrote and their
//! outputs user messages, so the whole conversation is plain text. On the
//! way in it watches the reply (`scan.rs`): text streams as it arrives, a
//! tool-call block is held back, never shown, and becomes a
//! [`ResponseEvent::ToolCall`], run like any native call. A block that
//! cannot be read becomes a call to [`INVALID_CALL`], which the tool
//! registry answers with the correction, so every call in history still
//! has exactly one output.

mod scan;

use super::{freeform, http, ModelRequest, Provider, ProviderError, ResponseEvent, ResponseStream};
use cogni_protocol::{
    Content, HistoryItem, Role, StopReason, ToolCall, ToolCallKind, ToolFormat, ToolSpec,
};
pub use cogni_tools::INVALID_CALL;
use futures::StreamExt;
use scan::{Piece, Scanner};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// How a call is written, as the tool section and corrections show it.
const CALL_FORMAT: &str =
    "```json\n{\"tool\": \"TOOL_NAME\", \"arguments\": {\"ARGUMENT\": \"VALUE\"}}\n```";

/// A provider whose model writes its tool calls as text.
pub struct TextTools {
    inner: Arc<dyn Provider>,
}

impl TextTools {
    /// Wraps `inner`: tools are described in the instructions and the
    /// calls are read back out of the model's text.
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        TextTools { inner }
    }
}

impl Provider for TextTools {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        let instructions = instructions(request.instructions, request.tools, request.output_schema);
        let input = history_as_text(request.input);
        let rewritten = ModelRequest {
            instructions: &instructions,
            input: &input,
            tools: &[],
            parallel_tool_calls: false,
            // A forced output format would leave no room for calls; the
            // schema is in the instructions and the engine checks the answer.
            output_schema: None,
            ..request.clone()
        };
        let inner = self.inner.stream(&rewritten);
        calls_from_text(inner, freeform::names(request.tools))
    }
}

/// The request's instructions with the tool section (and the answer's
/// schema, when there is one) after them. A pure function of its inputs,
/// so every request of a session carries the same text.
pub fn instructions(
    base: &str,
    tools: &[ToolSpec],
    output_schema: Option<&serde_json::Value>,
) -> String {
    let mut out = base.trim_end().to_string();
    if !tools.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&tool_section(tools));
    }
    if let Some(schema) = output_schema {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let _ = write!(
            out,
            "# Final answer format\n\nYour final answer (a reply without tool call blocks) is one JSON value matching this schema, and nothing else:\n{schema}"
        );
    }
    out
}

/// `# Tool calls`: how to write one, then each tool with its schema.
fn tool_section(tools: &[ToolSpec]) -> String {
    let mut out = format!(
        "# Tool calls\n\n\
         You call a tool by writing a tool call block in your reply: a fenced json block holding one JSON object with the tool's name and its arguments:\n\n\
         {CALL_FORMAT}\n\n\
         - One block per call; write several blocks to call several tools. They run in order.\n\
         - The arguments follow the tool's schema below.\n\
         - The outputs come back in the next message; never write them yourself.\n\
         - A reply without a tool call block is your final answer.\n\n\
         Available tools:"
    );
    for tool in tools {
        let schema = match &tool.format {
            ToolFormat::Function { parameters } => Cow::Borrowed(parameters),
            ToolFormat::Freeform { syntax, definition } => {
                Cow::Owned(freeform::parameters(syntax, definition))
            }
        };
        let _ = write!(
            out,
            "\n\n## {}\n{}\nArguments (JSON schema): {schema}",
            tool.name,
            tool.description.trim()
        );
    }
    out
}

/// What the model is told about a block it wrote that could not be read.
pub fn correction(problem: &str) -> String {
    format!(
        "Your tool call block could not be read: {problem}. Nothing was run. Write each call as a fenced json block holding one JSON object with the tool's name and its arguments object:\n{CALL_FORMAT}"
    )
}

/// History as plain text: each call becomes the block the model wrote,
/// added to the assistant message before it; each run of outputs one user
/// message. Everything else is kept as it is.
pub fn history_as_text(input: &[HistoryItem]) -> Vec<HistoryItem> {
    let names: HashMap<&str, &str> = input
        .iter()
        .filter_map(|item| match &item.content {
            Content::ToolCall(call) => Some((call.id.as_str(), call.name.as_str())),
            _ => None,
        })
        .collect();
    let mut out: Vec<HistoryItem> = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        match &input[i].content {
            Content::ToolCall(call) => {
                let block = call_block(call);
                match out.last_mut() {
                    Some(HistoryItem {
                        role: Role::Assistant,
                        content: Content::Text { text, tag: None },
                    }) => {
                        text.truncate(text.trim_end().len());
                        text.push_str("\n\n");
                        text.push_str(&block);
                    }
                    _ => out.push(HistoryItem::text(Role::Assistant, block)),
                }
                i += 1;
            }
            Content::ToolOutput(_) => {
                let run: Vec<_> = input[i..]
                    .iter()
                    .map_while(|item| match &item.content {
                        Content::ToolOutput(o) => Some(o),
                        _ => None,
                    })
                    .collect();
                i += run.len();
                let several = run.len() > 1;
                let parts: Vec<String> = run
                    .iter()
                    .enumerate()
                    .map(|(n, o)| {
                        let name = names.get(o.call_id.as_str()).copied().unwrap_or("tool");
                        if name == INVALID_CALL {
                            return o.content.clone();
                        }
                        let failed = if o.is_error { " (failed)" } else { "" };
                        let which = if several {
                            format!("call {} (`{name}`)", n + 1)
                        } else {
                            format!("`{name}`")
                        };
                        format!("Output of {which}{failed}:\n{}", o.content)
                    })
                    .collect();
                out.push(HistoryItem::text(Role::User, parts.join("\n\n")));
            }
            _ => {
                out.push(input[i].clone());
                i += 1;
            }
        }
    }
    out
}

/// A call as the block the model writes; a call that could not be read as
/// the block it was.
fn call_block(call: &ToolCall) -> String {
    if call.name == INVALID_CALL {
        let written = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|v| v["block"].as_str().map(str::to_string));
        return written.unwrap_or_else(|| call.arguments.clone());
    }
    let name = serde_json::Value::String(call.name.clone());
    let arguments = freeform::input_object(call);
    format!("```json\n{{\"tool\": {name}, \"arguments\": {arguments}}}\n```")
}

/// The events of `inner` with the tool-call blocks in its text turned into
/// calls.
fn calls_from_text(inner: ResponseStream, freeform: Vec<String>) -> ResponseStream {
    let mut reply = Reply::new(freeform.clone());
    inner
        .flat_map(move |event| {
            let out = match event {
                Ok(ResponseEvent::TextDelta(delta)) => {
                    reply.scanner.push(&delta);
                    reply.events()
                }
                Ok(ResponseEvent::Retrying { .. }) => {
                    // The retried attempt starts the reply over.
                    reply = Reply::new(freeform.clone());
                    vec![event]
                }
                Ok(ResponseEvent::Completed {
                    usage,
                    stop_reason,
                    incomplete_tool_call,
                }) => {
                    let cut_off = reply.scanner.finish(stop_reason == StopReason::Length);
                    let mut out = reply.events();
                    if reply.calls == 0 && !reply.blank.is_empty() {
                        out.push(Ok(ResponseEvent::TextDelta(std::mem::take(
                            &mut reply.blank,
                        ))));
                    }
                    let stop_reason = match stop_reason {
                        StopReason::Stop if reply.calls > 0 => StopReason::ToolCalls,
                        other => other,
                    };
                    out.push(Ok(ResponseEvent::Completed {
                        usage,
                        stop_reason,
                        incomplete_tool_call: incomplete_tool_call.or(cut_off),
                    }));
                    out
                }
                Ok(ResponseEvent::ToolCall(call)) => {
                    reply.calls += 1;
                    vec![Ok(ResponseEvent::ToolCall(call))]
                }
                other => vec![other],
            };
            futures::stream::iter(out)
        })
        .boxed()
}

/// One attempt at a reply, as it streams.
struct Reply {
    scanner: Scanner,
    /// Calls found so far.
    calls: usize,
    /// Blank text not passed on yet: the blanks around a block go with it.
    blank: String,
}

impl Reply {
    fn new(freeform: Vec<String>) -> Self {
        Reply {
            scanner: Scanner::new(freeform),
            calls: 0,
            blank: String::new(),
        }
    }

    /// The events of what the scanner found: text as deltas, each call as
    /// `ToolCallStarted` (the reply's first sign of life when it is only a
    /// block) and the call.
    fn events(&mut self) -> Vec<Result<ResponseEvent, ProviderError>> {
        let pieces = self.scanner.take();
        let mut out = Vec::with_capacity(pieces.len());
        for piece in pieces {
            let call = match piece {
                Piece::Text(text) if text.trim().is_empty() => {
                    self.blank.push_str(&text);
                    continue;
                }
                Piece::Text(text) => {
                    let blank = std::mem::take(&mut self.blank);
                    out.push(Ok(ResponseEvent::TextDelta(blank + &text)));
                    continue;
                }
                Piece::Call {
                    name,
                    arguments,
                    kind,
                } => ToolCall {
                    id: call_id(),
                    name,
                    arguments,
                    kind,
                },
                Piece::Invalid { problem, block } => ToolCall {
                    id: call_id(),
                    name: INVALID_CALL.to_string(),
                    arguments: serde_json::json!({
                        "error": correction(&problem),
                        "block": block,
                    })
                    .to_string(),
                    kind: ToolCallKind::Function,
                },
            };
            self.blank.clear();
            self.calls += 1;
            out.push(Ok(ResponseEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            }));
            out.push(Ok(ResponseEvent::ToolCall(call)));
        }
        out
    }
}

/// An id unique in the session (and across sessions: it is also unique
/// after a resume).
fn call_id() -> String {
    format!("text_call_{}", http::unique_suffix())
}

#[cfg(test)]
mod tests;
