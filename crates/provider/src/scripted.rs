//! The offline scripted provider: replays model turns from a TOML file
//! through the same turn loop, tools and metrics as a real provider.
//!
//! ```toml
//! model = "gpt-4.1"                    # optional: the model a recording came from
//!
//! [[turns]]
//! reasoning = "A shell call will do."  # optional: the model's thinking
//! text = "Creating the file."          # streamed piece by piece
//! delay_ms = 5                         # optional pause before each piece
//! [[turns.tool_calls]]
//! name = "shell"
//! arguments = { command = "echo hello > out.txt" }
//! expect = { exit_code = 0 }           # optional: checked on the next request
//!
//! [[turns]]
//! expect = "hello"                     # optional: the latest tool output must contain this
//! text = "done"
//! usage = { input_tokens = 100, output_tokens = 3 }   # optional; estimated when absent
//! ```
//!
//! `cogni run --record FILE` writes such scripts from a real session
//! ([`super::record`]). A replay that no longer matches its script (a
//! call's output differs from its `expect`, or the agent asks for more
//! responses than the script has) fails with an error naming the step.

use super::{ModelRequest, Provider, ProviderError, ResponseEvent, ResponseStream};
use cogni_protocol::{
    Content, HistoryItem, Reasoning, StopReason, ToolCall, ToolCallKind, ToolOutput, Usage,
};
use cogni_tools::fs::{read_text_limited, SCRIPT_MAX_BYTES};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const ID: &str = "scripted";

/// A script: the model responses to replay, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The model the script was recorded with: `--script` uses it when no
    /// `--model` is given, so the replay gets that model's tools and prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `[[turns]]`: one per model request, replayed in order; a request
    /// past the last is an error.
    #[serde(default)]
    pub turns: Vec<ScriptTurn>,
}

/// One model response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// The latest tool output in the request must contain this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// The model's reasoning, sent before the text as readable thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The assistant text, streamed in pieces (may be empty).
    #[serde(default)]
    pub text: String,
    /// Pause before each streamed piece, in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// The token counts to report; `None`: none are reported (the engine
    /// estimates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptUsage>,
    /// `stop` (default), `length`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The tool calls the response asks for, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One tool call of a scripted response (`[[turns.tool_calls]]`); exactly
/// one of `arguments` and `arguments_json` is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// The call's id; `None`: `call_N`, N its place in the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool to call.
    pub name: String,
    /// A table (sent as JSON arguments) or a string (sent verbatim, e.g. a
    /// patch for a freeform tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<toml::Value>,
    /// The arguments as a JSON text, sent verbatim (for arguments a TOML
    /// table cannot hold, such as `null`, or that were not valid JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_json: Option<String>,
    /// What the call's output must say, checked on the next request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<CallExpect>,
}

/// What a replayed call's output must say for the replay to go on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallExpect {
    /// The exit code of a command (`shell`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The output exactly (for a command: what it printed, without the
    /// status line and its timing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// The token counts a scripted response reports (`usage = {...}`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The part of `input_tokens` read from a prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

impl Script {
    /// Parses a script's TOML and checks that every call gives its
    /// arguments one way; the error names the call.
    pub fn parse(source: &str) -> Result<Self, String> {
        let script: Script = toml::from_str(source).map_err(|e| e.to_string())?;
        for (t, turn) in script.turns.iter().enumerate() {
            for (c, call) in turn.tool_calls.iter().enumerate() {
                if call.arguments.is_some() == call.arguments_json.is_some() {
                    return Err(format!(
                        "turns[{t}].tool_calls[{c}] (`{}`): give either `arguments` (a table, or a \
                         string for a freeform tool) or `arguments_json` (JSON text)",
                        call.name
                    ));
                }
            }
        }
        Ok(script)
    }

    /// Reads and parses the script at `path` (at most
    /// [`SCRIPT_MAX_BYTES`] bytes); a script without turns is an error.
    pub fn from_file(path: &Path) -> Result<Self, ProviderError> {
        let fail = |message: String| ProviderError::Other {
            provider: ID.into(),
            message,
        };
        let source =
            read_text_limited(path, SCRIPT_MAX_BYTES).map_err(|e| fail(format!("script: {e}")))?;
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
        let (arguments, kind) = match (&self.arguments, &self.arguments_json) {
            (_, Some(json)) => (json.clone(), ToolCallKind::Function),
            (Some(toml::Value::String(s)), None) => (s.clone(), ToolCallKind::Freeform),
            (Some(other), None) => (
                serde_json::to_string(other).unwrap_or_else(|_| "{}".into()),
                ToolCallKind::Function,
            ),
            (None, None) => ("{}".into(), ToolCallKind::Function),
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

    /// The stop reason to report: `stop_reason` if given, else
    /// `tool_calls` when the turn has calls and `stop` when not.
    pub fn stop(&self) -> StopReason {
        match &self.stop_reason {
            Some(s) => StopReason::from_wire(s),
            None if self.tool_calls.is_empty() => StopReason::Stop,
            None => StopReason::ToolCalls,
        }
    }
}

impl CallExpect {
    /// Why `output` does not match, or `None` when it does.
    pub fn mismatch(&self, output: &ToolOutput) -> Option<String> {
        if let Some(expected) = self.exit_code {
            match &output.command {
                Some(s) if s.exit_code == Some(expected) => {}
                Some(s) => {
                    return Some(format!(
                        "should have exited with code {expected}, but {}",
                        match s.exit_code {
                            Some(code) => format!("exited with code {code}"),
                            None => "was stopped (timed out or killed)".into(),
                        }
                    ))
                }
                None => {
                    return Some(format!(
                        "should have exited with code {expected}, but its output has no exit code"
                    ))
                }
            }
        }
        if let Some(expected) = self.is_error {
            if expected != output.is_error {
                return Some(if expected {
                    "should have failed, but succeeded".into()
                } else {
                    "should have succeeded, but failed".into()
                });
            }
        }
        if let Some(expected) = &self.output {
            let actual = output.command_output();
            if actual != expected {
                return Some(format!(
                    "printed something else than when it was recorded: {}",
                    first_difference(expected, actual)
                ));
            }
        }
        None
    }
}

/// The first line where `expected` and `actual` differ, for messages.
fn first_difference(expected: &str, actual: &str) -> String {
    let mut a = actual.lines();
    for (n, line) in expected.lines().enumerate() {
        match a.next() {
            Some(got) if got == line => {}
            got => {
                return format!(
                    "line {} should be {:?}, but is {:?}",
                    n + 1,
                    clip(line),
                    got.map_or("(the output ended)".into(), clip)
                )
            }
        }
    }
    match a.next() {
        Some(extra) => format!(
            "line {} is extra: {:?}",
            expected.lines().count() + 1,
            clip(extra)
        ),
        None => "the line endings differ".into(),
    }
}

fn clip(line: &str) -> String {
    const MAX: usize = 200;
    match line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

/// The arguments of a call on one short line, for messages.
fn short_args(arguments: &str) -> String {
    let one_line: String = arguments.split_whitespace().collect::<Vec<_>>().join(" ");
    clip(&one_line)
}

/// A call that was sent, with what its output must say.
struct Sent {
    id: String,
    name: String,
    arguments: String,
    expect: CallExpect,
}

/// Replays a [`Script`]; each request takes the next turn.
pub struct ScriptedProvider {
    script: Script,
    next: AtomicUsize,
    calls_made: AtomicUsize,
    /// The calls of the last response sent, whose outputs the next request
    /// must carry as expected.
    sent: Mutex<Vec<Sent>>,
}

impl ScriptedProvider {
    /// A provider replaying `script` from its first turn.
    pub fn new(script: Script) -> Self {
        ScriptedProvider {
            script,
            next: AtomicUsize::new(0),
            calls_made: AtomicUsize::new(0),
            sent: Mutex::new(Vec::new()),
        }
    }

    /// A provider replaying the script at `path`.
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

    /// The outputs of the previous response's calls (step `step - 1`)
    /// against their `expect`, in the request for step `step`.
    fn check_calls(&self, step: usize, input: &[HistoryItem]) -> Result<(), ProviderError> {
        let sent = std::mem::take(&mut *self.sent.lock().unwrap_or_else(|e| e.into_inner()));
        for (n, call) in sent.iter().enumerate() {
            let output = input.iter().rev().find_map(|i| match &i.content {
                Content::ToolOutput(o) if o.call_id == call.id => Some(o),
                _ => None,
            });
            // A call whose output the request does not carry (a stopped
            // turn, a window that left it out) cannot be checked.
            let Some(output) = output else { continue };
            if let Some(why) = call.expect.mismatch(output) {
                return Err(ProviderError::Other {
                    provider: ID.into(),
                    message: format!(
                        "replay diverged at step {step}: call {} of step {} (`{}` {}) {why}; the \
                         workspace behaves differently from when the script was recorded",
                        n + 1,
                        step - 1,
                        call.name,
                        short_args(&call.arguments)
                    ),
                });
            }
        }
        Ok(())
    }
}

impl Provider for ScriptedProvider {
    fn id(&self) -> &str {
        ID
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let checked = self.check_calls(index + 1, request.input);
        let Some(turn) = self.script.turns.get(index) else {
            let err = checked.err().unwrap_or_else(|| ProviderError::Other {
                provider: ID.into(),
                message: format!(
                    "script exhausted at step {}: it has {} responses and the agent asked for another (a replay that diverged from its recording, or a script too short)",
                    index + 1,
                    self.script.turns.len(),
                ),
            });
            return Box::pin(futures::stream::once(async move { Err(err) }));
        };
        if let Err(err) = checked.and_then(|()| Self::check_expectation(index + 1, turn, request)) {
            return Box::pin(futures::stream::once(async move { Err(err) }));
        }
        let delay = Duration::from_millis(turn.delay_ms);
        let reasoning = turn.reasoning.iter().map(|text| {
            ResponseEvent::Reasoning(Reasoning {
                id: None,
                text: text.clone(),
                encrypted: None,
                source: ID.into(),
            })
        });
        let mut events: Vec<ResponseEvent> = reasoning
            .chain(turn.pieces().into_iter().map(ResponseEvent::TextDelta))
            .collect();
        let mut sent = Vec::new();
        for scripted in &turn.tool_calls {
            let call = scripted.to_call(self.calls_made.fetch_add(1, Ordering::SeqCst));
            if let Some(expect) = &scripted.expect {
                sent.push(Sent {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    expect: expect.clone(),
                });
            }
            events.push(ResponseEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            events.push(ResponseEvent::ToolCall(call));
        }
        *self.sent.lock().unwrap_or_else(|e| e.into_inner()) = sent;
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
    use crate::test_support;
    use cogni_protocol::{HistoryItem, ToolOutput};
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
            command: None,
            images: Vec::new(),
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
            command: None,
            images: Vec::new(),
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
