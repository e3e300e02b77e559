//! The offline scripted provider: replays model turns from a TOML file
//! through the same turn loop, tools and metrics as a real provider.
//!
//! ```toml
//! [[turns]]
//! text = "Creating the file."          # streamed piece by piece
//! delay_ms = 5                         # optional pause before each piece
//! [[turns.tool_calls]]
//! name = "shell"
//! arguments = { command = "echo hello > out.txt" }
//!
//! [[turns]]
//! expect = "hello"                     # optional: the latest tool output must contain this
//! text = "done"
//! usage = { input_tokens = 100, output_tokens = 3 }   # optional; estimated when absent
//! ```

use super::{ModelRequest, Provider, ProviderError, ResponseEvent, ResponseStream};
use crate::protocol::{Content, StopReason, ToolCall, ToolCallKind, Usage};
use futures::StreamExt;
use serde::Deserialize;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const ID: &str = "scripted";

/// A script: the model responses to replay, in order.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub turns: Vec<ScriptTurn>,
}

/// One model response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    /// Pause before each streamed piece, in milliseconds.
    #[serde(default)]
    pub delay_ms: u64,
    /// The latest tool output in the request must contain this text.
    pub expect: Option<String>,
    pub usage: Option<ScriptUsage>,
    /// `stop` (default), `length`, ...
    pub stop_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    pub id: Option<String>,
    pub name: String,
    /// A table (sent as JSON arguments) or a string (sent verbatim, e.g. a
    /// patch for a freeform tool).
    pub arguments: toml::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
}

impl Script {
    pub fn parse(source: &str) -> Result<Self, String> {
        toml::from_str(source).map_err(|e| e.to_string())
    }

    pub fn from_file(path: &Path) -> Result<Self, ProviderError> {
        let fail = |message: String| ProviderError::Other {
            provider: ID.into(),
            message,
        };
        let source = std::fs::read_to_string(path)
            .map_err(|e| fail(format!("cannot read script {}: {e}", path.display())))?;
        let script = Script::parse(&source)
            .map_err(|e| fail(format!("invalid script {}: {e}", path.display())))?;
        if script.turns.is_empty() {
            return Err(fail(format!(
                "script {} has no [[turns]]; add at least one",
                path.display()
            )));
        }
        Ok(script)
    }
}

impl ScriptToolCall {
    /// The call as the model would send it; `index` numbers calls for ids.
    pub fn to_call(&self, index: usize) -> ToolCall {
        let (arguments, kind) = match &self.arguments {
            toml::Value::String(s) => (s.clone(), ToolCallKind::Freeform),
            other => (
                serde_json::to_string(other).unwrap_or_else(|_| "{}".into()),
                ToolCallKind::Function,
            ),
        };
        ToolCall {
            id: self.id.clone().unwrap_or_else(|| format!("call_{index}")),
            name: self.name.clone(),
            arguments,
            kind,
        }
    }
}

impl ScriptTurn {
    /// The streamed pieces of `text`: words with their trailing whitespace.
    pub fn pieces(&self) -> Vec<String> {
        let mut pieces = Vec::new();
        let mut current = String::new();
        let mut in_space = false;
        for ch in self.text.chars() {
            if !ch.is_whitespace() && in_space {
                pieces.push(std::mem::take(&mut current));
            }
            in_space = ch.is_whitespace();
            current.push(ch);
        }
        if !current.is_empty() {
            pieces.push(current);
        }
        pieces
    }

    pub fn stop(&self) -> StopReason {
        match &self.stop_reason {
            Some(s) => StopReason::from_wire(s),
            None if self.tool_calls.is_empty() => StopReason::Stop,
            None => StopReason::ToolCalls,
        }
    }
}

/// Replays a [`Script`]; each request takes the next turn.
pub struct ScriptedProvider {
    script: Script,
    next: AtomicUsize,
    calls_made: AtomicUsize,
}

impl ScriptedProvider {
    pub fn new(script: Script) -> Self {
        ScriptedProvider {
            script,
            next: AtomicUsize::new(0),
            calls_made: AtomicUsize::new(0),
        }
    }

    pub fn from_file(path: &Path) -> Result<Self, ProviderError> {
        Ok(Self::new(Script::from_file(path)?))
    }

    fn check_expectation(
        turn_no: usize,
        turn: &ScriptTurn,
        request: &ModelRequest<'_>,
    ) -> Result<(), ProviderError> {
        let Some(expected) = &turn.expect else {
            return Ok(());
        };
        let last_output = request.input.iter().rev().find_map(|i| match &i.content {
            Content::ToolOutput(o) => Some(o.content.as_str()),
            _ => None,
        });
        match last_output {
            Some(out) if out.contains(expected.as_str()) => Ok(()),
            other => Err(ProviderError::Other {
                provider: ID.into(),
                message: format!(
                    "script expectation failed at turn {turn_no}: the latest tool output should contain {expected:?} but was {:?}",
                    other.unwrap_or("(no tool output)")
                ),
            }),
        }
    }
}

impl Provider for ScriptedProvider {
    fn id(&self) -> &str {
        ID
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(turn) = self.script.turns.get(index) else {
            let err = ProviderError::Other {
                provider: ID.into(),
                message: format!(
                    "script exhausted: it has {} turns and the agent asked for turn {}",
                    self.script.turns.len(),
                    index + 1
                ),
            };
            return Box::pin(futures::stream::once(async move { Err(err) }));
        };
        if let Err(err) = Self::check_expectation(index + 1, turn, request) {
            return Box::pin(futures::stream::once(async move { Err(err) }));
        }
        let delay = Duration::from_millis(turn.delay_ms);
        let mut events: Vec<ResponseEvent> = turn
            .pieces()
            .into_iter()
            .map(ResponseEvent::TextDelta)
            .collect();
        for call in &turn.tool_calls {
            let call = call.to_call(self.calls_made.fetch_add(1, Ordering::SeqCst));
            events.push(ResponseEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            events.push(ResponseEvent::ToolCall(call));
        }
        events.push(ResponseEvent::Completed {
            usage: turn.usage.map(|u| Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cached_input_tokens: u.cached_input_tokens,
                ..Usage::default()
            }),
            stop_reason: turn.stop(),
            incomplete_tool_call: None,
        });
        Box::pin(futures::stream::iter(events).then(move |event| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(event)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{HistoryItem, ToolOutput};
    use crate::provider::test_support;
    use futures::StreamExt;

    fn request<'a>(input: &'a [HistoryItem]) -> ModelRequest<'a> {
        ModelRequest {
            model: "scripted",
            instructions: "",
            parallel_tool_calls: false,
            ..test_support::request(input, &[])
        }
    }

    async fn collect(
        p: &ScriptedProvider,
        input: &[HistoryItem],
    ) -> Vec<Result<ResponseEvent, String>> {
        p.stream(&request(input))
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
            .await
    }

    const SCRIPT: &str = r#"
[[turns]]
text = "Creating  it."
[[turns.tool_calls]]
name = "shell"
arguments = { command = "echo hello" }

[[turns]]
expect = "hello"
text = "done"
usage = { input_tokens = 7, output_tokens = 1 }
"#;

    #[tokio::test]
    async fn replays_turns_in_order_then_reports_exhaustion() {
        let p = ScriptedProvider::new(Script::parse(SCRIPT).unwrap());
        let first = collect(&p, &[]).await;
        assert_eq!(first[0], Ok(ResponseEvent::TextDelta("Creating  ".into())));
        assert_eq!(first[1], Ok(ResponseEvent::TextDelta("it.".into())));
        let Ok(ResponseEvent::ToolCall(call)) = &first[3] else {
            panic!("{first:?}")
        };
        assert_eq!(call.name, "shell");
        assert_eq!(call.arguments, r#"{"command":"echo hello"}"#);
        assert!(matches!(
            first.last(),
            Some(Ok(ResponseEvent::Completed {
                stop_reason: StopReason::ToolCalls,
                usage: None,
                ..
            }))
        ));

        let history = [HistoryItem::tool_output(ToolOutput {
            call_id: call.id.clone(),
            content: "hello\n".into(),
            is_error: false,
        })];
        let second = collect(&p, &history).await;
        assert!(matches!(
            second.last(),
            Some(Ok(ResponseEvent::Completed {
                usage: Some(Usage {
                    input_tokens: 7,
                    ..
                }),
                ..
            }))
        ));
        let third = collect(&p, &history).await;
        assert!(third[0].as_ref().unwrap_err().contains("script exhausted"));
    }

    #[tokio::test]
    async fn failed_expectation_is_an_error() {
        let p = ScriptedProvider::new(Script::parse(SCRIPT).unwrap());
        collect(&p, &[]).await;
        let history = [HistoryItem::tool_output(ToolOutput {
            call_id: "call_0".into(),
            content: "nope".into(),
            is_error: true,
        })];
        let out = collect(&p, &history).await;
        assert!(out[0]
            .as_ref()
            .unwrap_err()
            .contains("expectation failed at turn 2"));
    }

    #[test]
    fn bad_scripts_are_rejected_with_the_reason() {
        assert!(Script::parse("[[turns]]\ntxt = 1")
            .unwrap_err()
            .contains("txt"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.toml");
        std::fs::write(&path, "").unwrap();
        let err = Script::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("no [[turns]]"), "{err}");
    }
}
