//! Recording a real session as a script the scripted provider replays
//! (`cogni run --record FILE`, a task's `record`).
//!
//! [`RecordingProvider`] wraps the wire client: each request's response
//! (its text, tool calls, usage and stop reason) becomes one script turn,
//! in the order requests are made (model steps, plans, reflections,
//! summaries alike), which is the order a replay asks for them. The
//! outputs of a turn's tool calls arrive with the next request; from them
//! each call gets its `expect`: the exit code of a command (a timed-out
//! one is not deterministic and gets none), whether the call failed, and
//! with `outputs` the exact output. Every text passes the redactor before
//! it is kept; an output the redactor changed gets no exact `expect` (the
//! replay would see the secret and the script does not hold it).

use super::scripted::{CallExpect, Script, ScriptToolCall, ScriptTurn, ScriptUsage};
use super::{ModelRequest, Provider, ResponseEvent, ResponseStream};
use cogni_protocol::{Content, StopReason, ToolCall, ToolCallKind, Usage};
use cogni_tools::fs::write_atomic;
use futures::StreamExt;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Text on its way into a recording (secrets out).
pub type Redact = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// What has been recorded so far; shared by the provider and the front
/// door that writes it.
pub struct Recording {
    redact: Redact,
    /// Record each call's output exactly, too.
    outputs: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    turns: Vec<ScriptTurn>,
    /// Calls waiting for their output: id -> (turn, call).
    pending: HashMap<String, (usize, usize)>,
}

impl Recording {
    /// An empty recording: every text passes `redact`; with `outputs`, each
    /// call's exact output is expected on replay too.
    pub fn new(redact: Redact, outputs: bool) -> Arc<Self> {
        Arc::new(Recording {
            redact,
            outputs,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Responses recorded so far.
    pub fn len(&self) -> usize {
        self.state().turns.len()
    }

    /// True when no response was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The outputs of earlier calls, as the next request carries them.
    fn see_outputs(&self, request: &ModelRequest<'_>) {
        let mut state = self.state();
        if state.pending.is_empty() {
            return;
        }
        for item in request.input {
            let Content::ToolOutput(output) = &item.content else {
                continue;
            };
            let Some((t, c)) = state.pending.remove(&output.call_id) else {
                continue;
            };
            let mut expect = CallExpect {
                is_error: Some(output.is_error),
                ..CallExpect::default()
            };
            if let Some(command) = output.command {
                expect.exit_code = command.exit_code;
            }
            if self.outputs {
                let body = output.command_output();
                let redacted = (self.redact)(body);
                if redacted == body {
                    expect.output = Some(redacted);
                }
            }
            if let Some(call) = state
                .turns
                .get_mut(t)
                .and_then(|turn| turn.tool_calls.get_mut(c))
            {
                call.expect = Some(expect);
            }
        }
    }

    fn push(&self, mut turn: ScriptTurn, calls: Vec<ToolCall>) {
        let mut state = self.state();
        let index = state.turns.len();
        for (c, call) in calls.into_iter().enumerate() {
            state.pending.insert(call.id.clone(), (index, c));
            turn.tool_calls.push(self.script_call(call));
        }
        state.turns.push(turn);
    }

    fn script_call(&self, call: ToolCall) -> ScriptToolCall {
        let arguments = (self.redact)(&call.arguments);
        let (arguments, arguments_json) = match call.kind {
            ToolCallKind::Freeform => (Some(toml::Value::String(arguments)), None),
            ToolCallKind::Function => match as_table(&arguments) {
                Some(table) => (Some(table), None),
                None => (None, Some(arguments)),
            },
        };
        ScriptToolCall {
            id: Some(call.id),
            name: call.name,
            arguments,
            arguments_json,
            expect: None,
        }
    }

    /// The script so far, with `model` named for the replay.
    pub fn script(&self, model: &str) -> Script {
        Script {
            model: Some(model.to_string()),
            turns: self.state().turns.clone(),
        }
    }

    /// The script as a TOML file, with a header saying where it came from.
    pub fn to_toml(&self, model: &str, provider: &str) -> Result<String, String> {
        let body = toml::to_string(&self.script(model))
            .map_err(|e| format!("cannot write the recording as TOML: {e}"))?;
        Ok(format!(
            "# Recorded by cogni {} from provider `{provider}`, model `{model}`.\n\
             # Replay it offline, the tools running for real: cogni run --script THIS_FILE \"<the same task>\"\n\
             # Each call's `expect` is checked on replay; a call whose output differs stops it.\n\n{body}",
            env!("CARGO_PKG_VERSION")
        ))
    }
}

impl Recording {
    /// Write the script to `path` (missing directories are created), atomically;
    /// the number of responses written. Nothing is written when the model
    /// never answered.
    pub fn write(&self, path: &Path, model: &str, provider: &str) -> Result<usize, String> {
        let count = self.len();
        if count == 0 {
            return Err(format!(
                "nothing to record: the model never answered; {} was not written",
                path.display()
            ));
        }
        let text = self.to_toml(model, provider)?;
        write_atomic(path, text.as_bytes())
            .map_err(|e| format!("cannot write the recording {}: {e}", path.display()))?;
        Ok(count)
    }
}

/// `inner`, recording into `recording` when there is one.
pub fn wrap(inner: Arc<dyn Provider>, recording: Option<&Arc<Recording>>) -> Arc<dyn Provider> {
    match recording {
        Some(recording) => Arc::new(RecordingProvider::new(inner, recording.clone())),
        None => inner,
    }
}

/// JSON object arguments as a TOML table, when TOML can hold them (no
/// `null`) and they read back the same.
fn as_table(arguments: &str) -> Option<toml::Value> {
    let json: serde_json::Value = serde_json::from_str(arguments).ok()?;
    if !json.is_object() {
        return None;
    }
    let table: toml::Value = serde_json::from_value(json.clone()).ok()?;
    let back: serde_json::Value = serde_json::to_value(&table).ok()?;
    (back == json).then_some(table)
}

/// Wraps a provider and records what it answers into a [`Recording`].
pub struct RecordingProvider {
    inner: Arc<dyn Provider>,
    recording: Arc<Recording>,
}

impl RecordingProvider {
    /// `inner`, whose responses are recorded into `recording` as they
    /// stream.
    pub fn new(inner: Arc<dyn Provider>, recording: Arc<Recording>) -> Self {
        RecordingProvider { inner, recording }
    }
}

/// One response as it streams.
#[derive(Default)]
struct Partial {
    text: String,
    calls: Vec<ToolCall>,
}

impl Provider for RecordingProvider {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        self.recording.see_outputs(request);
        let recording = self.recording.clone();
        let mut partial = Partial::default();
        Box::pin(self.inner.stream(request).map(move |event| {
            match &event {
                Ok(ResponseEvent::TextDelta(text)) => partial.text.push_str(text),
                Ok(ResponseEvent::ToolCall(call)) => partial.calls.push(call.clone()),
                // The answer starts over.
                Ok(ResponseEvent::Retrying { .. }) => partial = Partial::default(),
                Ok(ResponseEvent::Completed {
                    usage, stop_reason, ..
                }) => {
                    let done = std::mem::take(&mut partial);
                    let turn = ScriptTurn {
                        text: (recording.redact)(&done.text),
                        usage: usage.as_ref().map(script_usage),
                        stop_reason: recorded_stop(stop_reason, !done.calls.is_empty()),
                        ..ScriptTurn::default()
                    };
                    recording.push(turn, done.calls);
                }
                _ => {}
            }
            event
        }))
    }
}

fn script_usage(usage: &Usage) -> ScriptUsage {
    ScriptUsage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: usage.cached_input_tokens,
    }
}

/// The stop reason when it is not the one a replay assumes.
fn recorded_stop(stop: &StopReason, has_calls: bool) -> Option<String> {
    let wire = match stop {
        StopReason::Stop if !has_calls => return None,
        StopReason::ToolCalls if has_calls => return None,
        StopReason::Stop => "stop",
        StopReason::ToolCalls => "tool_calls",
        StopReason::Length => "length",
        StopReason::ContentFilter => "content_filter",
        StopReason::Paused => "pause_turn",
        StopReason::Other(other) => other.as_str(),
    };
    Some(wire.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::ScriptedProvider;
    use crate::test_support;
    use cogni_protocol::{CommandEnd, HistoryItem, ToolOutput};

    fn request<'a>(input: &'a [HistoryItem]) -> ModelRequest<'a> {
        ModelRequest {
            model: "m",
            instructions: "",
            parallel_tool_calls: false,
            ..test_support::request(input, &[])
        }
    }

    const LIVE: &str = r#"
[[turns]]
text = "Looking. The key is sk-abcdefghijklmnopqrstuvwxyz123456."
usage = { input_tokens = 50, output_tokens = 5, cached_input_tokens = 10 }
[[turns.tool_calls]]
id = "c1"
name = "shell"
arguments = { command = "cat a.txt" }
[[turns.tool_calls]]
id = "c2"
name = "apply_patch"
arguments = "*** Begin Patch\n*** End Patch"
[[turns.tool_calls]]
id = "c3"
name = "read_file"
arguments_json = '{"path":"x","limit":null}'

[[turns]]
text = "Done."
"#;

    async fn drain(p: &dyn Provider, input: &[HistoryItem]) {
        let _: Vec<_> = p.stream(&request(input)).collect().await;
    }

    fn redact() -> Redact {
        // The front door passes sandbox::redact and the keys; a stand-in.
        Arc::new(|text: &str| text.replace("sk-abcdefghijklmnopqrstuvwxyz123456", "[REDACTED]"))
    }

    #[tokio::test]
    async fn a_recorded_session_replays_and_checks_its_outputs() {
        let live = Arc::new(ScriptedProvider::new(Script::parse(LIVE).unwrap()));
        let recording = Recording::new(redact(), true);
        let recorder = RecordingProvider::new(live, recording.clone());
        drain(&recorder, &[]).await;
        let outputs = [
            HistoryItem::tool_output(ToolOutput {
                call_id: "c1".into(),
                content: "exit code 0, 0.1s\nhello\n".into(),
                is_error: false,
                command: Some(CommandEnd {
                    exit_code: Some(0),
                    output_start: "exit code 0, 0.1s\n".len(),
                }),
                images: Vec::new(),
            }),
            HistoryItem::tool_output(ToolOutput {
                call_id: "c2".into(),
                content: "patch applied".into(),
                is_error: false,
                command: None,
                images: Vec::new(),
            }),
            HistoryItem::tool_output(ToolOutput {
                call_id: "c3".into(),
                content: "error: no such file x".into(),
                is_error: true,
                command: None,
                images: Vec::new(),
            }),
        ];
        drain(&recorder, &outputs).await;
        let text = recording.to_toml("gpt-4.1", "openai").unwrap();
        assert!(
            !text.contains("sk-abcdefghijklmnopqrstuvwxyz123456"),
            "{text}"
        );
        assert!(text.starts_with("# Recorded by cogni"), "{text}");
        let script = Script::parse(&text).unwrap();
        assert_eq!(script.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(script.turns.len(), 2);
        let calls = &script.turns[0].tool_calls;
        assert_eq!(
            calls[0].expect,
            Some(CallExpect {
                exit_code: Some(0),
                is_error: Some(false),
                output: Some("hello\n".into()),
            })
        );
        assert_eq!(
            calls[1].arguments,
            Some(toml::Value::String("*** Begin Patch\n*** End Patch".into()))
        );
        assert_eq!(
            calls[2].arguments_json.as_deref(),
            Some(r#"{"path":"x","limit":null}"#)
        );
        assert_eq!(calls[2].expect.as_ref().unwrap().is_error, Some(true));
        assert_eq!(script.turns[0].usage.unwrap().cached_input_tokens, 10);

        // The same outputs replay; a different exit code is a divergence
        // that names the step and the call.
        let replay = ScriptedProvider::new(script.clone());
        drain(&replay, &[]).await;
        let ok: Vec<_> = replay.stream(&request(&outputs)).collect().await;
        assert!(ok.iter().all(|e| e.is_ok()), "{ok:?}");

        let replay = ScriptedProvider::new(script);
        drain(&replay, &[]).await;
        let mut changed = outputs.clone();
        changed[0] = HistoryItem::tool_output(ToolOutput {
            call_id: "c1".into(),
            content: "exit code 1, 0.1s\ncat: a.txt: No such file\n".into(),
            is_error: true,
            command: Some(CommandEnd {
                exit_code: Some(1),
                output_start: "exit code 1, 0.1s\n".len(),
            }),
            images: Vec::new(),
        });
        let err: Vec<_> = replay.stream(&request(&changed)).collect().await;
        let message = err[0].as_ref().err().unwrap().to_string();
        assert!(
            message.contains("replay diverged at step 2: call 1 of step 1 (`shell` {\"command\":\"cat a.txt\"}) should have exited with code 0, but exited with code 1"),
            "{message}"
        );
    }

    #[test]
    fn outputs_that_held_a_secret_get_no_exact_expectation() {
        let recording = Recording::new(redact(), true);
        recording.push(
            ScriptTurn::default(),
            vec![ToolCall {
                id: "c".into(),
                name: "shell".into(),
                arguments: r#"{"command":"env"}"#.into(),
                kind: ToolCallKind::Function,
            }],
        );
        let input = [HistoryItem::tool_output(ToolOutput {
            call_id: "c".into(),
            content: "exit code 0, 0.0s\nKEY=sk-abcdefghijklmnopqrstuvwxyz123456\n".into(),
            is_error: false,
            command: Some(CommandEnd {
                exit_code: Some(0),
                output_start: "exit code 0, 0.0s\n".len(),
            }),
            images: Vec::new(),
        })];
        recording.see_outputs(&request(&input));
        let script = recording.script("m");
        let expect = script.turns[0].tool_calls[0].expect.clone().unwrap();
        assert_eq!(expect.exit_code, Some(0));
        assert_eq!(expect.output, None);
    }
}
