//! Transcripts: what an agent did, step by step, for people. One model
//! ([`Transcript`], a list of [`Entry`]s) built from the engine's events (a
//! task attempt) or from a saved history (`cogni sessions export`), and
//! rendered by one renderer per format: [`html`] (report.html, exported
//! pages) and [`markdown`]; JSON is the model itself.
//!
//! Texts are capped as they are kept (head and tail of tool outputs,
//! arguments and messages clipped), so a run of thousands of attempts
//! keeps its transcripts small.

#![deny(missing_docs)]

pub mod html;
pub mod markdown;

use cogni_process::truncate::{clip, head_tail, Limits};
use cogni_protocol::{AgentEvent, ApprovalStatus, Content, HistoryItem, Item, Role, ToolStatus};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;

/// How much of a tool's output a transcript keeps: head and tail.
const OUTPUT_LIMITS: Limits = Limits {
    max_bytes: 3_000,
    max_lines: 60,
};
/// How much of a message or of a call's arguments it keeps.
const TEXT_BYTES: usize = 8_000;
const ARGS_BYTES: usize = 2_000;

/// What an agent did, in order; `failure` points at the entry that says why
/// the attempt did not pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// Everything that happened, in order.
    pub entries: Vec<Entry>,
    /// The index in `entries` of the entry that says why the attempt did
    /// not pass; `None` when it passed or nothing says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<usize>,
}

/// One thing that happened. Serialised with a `k` (kind) tag and short
/// field names: transcripts of large runs are embedded in report.html.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub enum Entry {
    /// The task (the user's message).
    User {
        /// The message, capped.
        text: String,
    },
    /// The model's text.
    Assistant {
        /// The text, capped.
        text: String,
    },
    /// A model response: its number, tokens and time.
    Step {
        /// The request's number within the turn, from 1.
        n: u32,
        /// Input plus output tokens of the response (0 when none were
        /// reported).
        #[serde(default)]
        tokens: u64,
        /// How long the response took, in milliseconds.
        #[serde(default)]
        ms: u64,
        /// `ms` for people (`850 ms`, `1.2 s`, `2 min 5 s`).
        #[serde(default)]
        dur: String,
    },
    /// A tool call with its arguments and (head and tail of) its output.
    Tool {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model sent them, capped.
        args: String,
        /// The output, head and tail; `None` while the call runs (or when
        /// it never completed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        out: Option<String>,
        /// A command's exit code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// True when the call failed.
        #[serde(default)]
        err: bool,
        /// How long it ran, for people; empty when unknown.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        dur: String,
    },
    /// The plan (`update_plan`): `[status, step]` pairs.
    Plan {
        /// The plan's explanation (may be empty).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
        /// `(status, step)` per step, in order.
        items: Vec<(String, String)>,
    },
    /// A run of the test command.
    Test {
        /// The command that ran.
        command: String,
        /// True when it exited 0.
        passed: bool,
        /// One line, e.g. `cargo test: 41 passed, 2 failed`.
        summary: String,
        /// The failing tests the output names.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failing: Vec<String>,
        /// The end of its output.
        out: String,
        /// How long it ran, for people.
        dur: String,
    },
    /// A check of the task (after the agent).
    Check {
        /// What is checked, one line (`command `make test``, ...).
        what: String,
        /// True when the check passed.
        passed: bool,
        /// The end of its output.
        out: String,
        /// How long it took, for people.
        dur: String,
    },
    /// Something of note: a retry, a compaction, attached files.
    Note {
        /// The note.
        text: String,
    },
    /// A warning: the engine's, a denied call, a delegated agent that
    /// failed.
    Warning {
        /// The warning.
        text: String,
    },
    /// An error: the turn failed, or the attempt could not run.
    Error {
        /// The error.
        text: String,
    },
    /// How the turn ended.
    Outcome {
        /// The turn outcome's name (`done`, `max_steps`, ...).
        outcome: String,
        /// True only for `done`.
        ok: bool,
        /// Why an effect stopped the turn, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl Transcript {
    /// Pass every text through `f` (a redactor).
    pub fn map_text(&mut self, f: &dyn Fn(&str) -> String) {
        let all = |v: &mut Vec<String>| v.iter_mut().for_each(|s| *s = f(s));
        for entry in &mut self.entries {
            match entry {
                Entry::User { text }
                | Entry::Assistant { text }
                | Entry::Note { text }
                | Entry::Warning { text }
                | Entry::Error { text } => *text = f(text),
                Entry::Step { .. } => {}
                Entry::Tool { args, out, .. } => {
                    *args = f(args);
                    if let Some(out) = out {
                        *out = f(out);
                    }
                }
                Entry::Plan { text, items } => {
                    *text = f(text);
                    items.iter_mut().for_each(|(_, step)| *step = f(step));
                }
                Entry::Test {
                    command,
                    summary,
                    failing,
                    out,
                    ..
                } => {
                    *command = f(command);
                    *summary = f(summary);
                    all(failing);
                    *out = f(out);
                }
                Entry::Check { what, out, .. } => {
                    *what = f(what);
                    *out = f(out);
                }
                Entry::Outcome { reason, .. } => {
                    if let Some(reason) = reason {
                        *reason = f(reason);
                    }
                }
            }
        }
    }
}

impl Entry {
    /// Whether the entry reports a problem (shown highlighted).
    pub fn is_problem(&self) -> bool {
        match self {
            Entry::Tool { err, .. } => *err,
            Entry::Test { passed, .. } | Entry::Check { passed, .. } => !passed,
            Entry::Outcome { ok, .. } => !ok,
            Entry::Warning { .. } | Entry::Error { .. } => true,
            _ => false,
        }
    }
}

/// `850 ms`, `12.3 s`, `4 min 5 s`: durations in the unit that fits.
pub fn format_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {} s", ms / 60_000, ms % 60_000 / 1000)
    }
}

/// The serialised name of a unit enum variant (`in_progress`, `done`).
fn name_of<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn capped_text(text: &str) -> String {
    clip(text, TEXT_BYTES)
}

fn capped_output(text: &str) -> String {
    head_tail(text, OUTPUT_LIMITS)
}

/// Builds a transcript from the engine's events as they come.
#[derive(Debug, Default)]
pub struct Builder {
    transcript: Transcript,
    /// Tool calls started and not completed: id -> entry.
    open: HashMap<String, usize>,
    /// The step entry of the model request under way.
    step: Option<usize>,
}

impl Builder {
    /// Appends an entry as it is (the runner adds checks this way).
    pub fn push(&mut self, entry: Entry) {
        self.transcript.entries.push(entry);
    }

    /// The task as the user gave it.
    pub fn user(&mut self, text: &str) {
        self.push(Entry::User {
            text: capped_text(text),
        });
    }

    /// Adds what `event` shows (a step, a message, a call, its output, a
    /// plan, a test run, a note, the outcome ...); events of no interest
    /// to people are ignored.
    pub fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::ModelRequest { iteration, .. } => {
                self.step = Some(self.transcript.entries.len());
                self.push(Entry::Step {
                    n: *iteration,
                    tokens: 0,
                    ms: 0,
                    dur: String::new(),
                });
            }
            AgentEvent::ModelResponse {
                usage, duration_ms, ..
            } => {
                let step = self.step.and_then(|i| self.transcript.entries.get_mut(i));
                if let Some(Entry::Step {
                    tokens, ms, dur, ..
                }) = step
                {
                    *tokens = usage.as_ref().map_or(0, |u| u.total());
                    *ms = *duration_ms;
                    *dur = format_ms(*duration_ms);
                }
            }
            AgentEvent::ItemStarted {
                item:
                    Item::ToolCall {
                        id,
                        name,
                        arguments,
                        ..
                    },
            } => {
                self.call(id, name, arguments);
            }
            AgentEvent::ItemCompleted { item } => self.completed(item),
            AgentEvent::Plan { plan } => self.push(Entry::Plan {
                text: plan.explanation.clone().unwrap_or_default(),
                items: plan
                    .plan
                    .iter()
                    .map(|p| (name_of(&p.status), p.step.clone()))
                    .collect(),
            }),
            AgentEvent::Test { run } => self.push(Entry::Test {
                command: run.command.clone(),
                passed: run.passed,
                summary: run.test_summary.clone(),
                failing: run.failing_tests.clone(),
                out: capped_output(&run.output_tail),
                dur: format_ms(run.duration_ms),
            }),
            AgentEvent::Warning { message } => self.push(Entry::Warning {
                text: capped_text(message),
            }),
            AgentEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } => self.note(format!(
                "retry {attempt} in {}: {reason}",
                format_ms(*delay_ms)
            )),
            AgentEvent::Compacted {
                items_before,
                items_after,
                ..
            } => self.note(format!(
                "history compacted: {items_before} items became {items_after}"
            )),
            AgentEvent::Context { files } => {
                let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
                self.note(format!("attached: {}", names.join(", ")));
            }
            AgentEvent::Approval {
                tool,
                summary,
                status: ApprovalStatus::Denied,
                reason,
                ..
            } => self.push(Entry::Warning {
                text: format!("{tool} denied: {summary}: {reason}"),
            }),
            AgentEvent::Effect {
                name,
                phase,
                decision,
                ..
            } => self.note(format!("effect {name} at {phase}: {decision}")),
            AgentEvent::Hook {
                hook,
                decision,
                reason,
                ..
            } if decision != "continue" => self.note(format!(
                "hook {hook}: {decision}{}",
                reason
                    .as_deref()
                    .map_or(String::new(), |r| format!(": {r}"))
            )),
            AgentEvent::Reflect { step, text, .. } => {
                self.note(format!("reflection on step {step}: {}", clip(text, 1_000)))
            }
            AgentEvent::SubagentStarted { agent, task, .. } => self.note(format!(
                "agent {} started: {}",
                agent.join("/"),
                clip(task, 1_000)
            )),
            AgentEvent::SubagentFinished {
                agent,
                outcome,
                usage,
                cost_usd,
                duration_ms,
                error,
                ..
            } => {
                let text = format!(
                    "agent {} finished: {outcome} in {}, {} tokens{}{}",
                    agent.join("/"),
                    format_ms(*duration_ms),
                    usage.total(),
                    cost_usd.map_or(String::new(), |c| format!(", ${c:.4}")),
                    error.as_deref().map_or(String::new(), |e| format!(": {e}"))
                );
                if outcome == "done" {
                    self.note(text)
                } else {
                    self.push(Entry::Warning {
                        text: capped_text(&text),
                    })
                }
            }
            // Of a delegated agent's own events, its failures.
            AgentEvent::Subagent { agent, event, .. } => {
                if let AgentEvent::TurnFailed { error, .. } = event.as_ref() {
                    self.push(Entry::Warning {
                        text: capped_text(&format!("agent {}: {error}", agent.join("/"))),
                    });
                }
            }
            AgentEvent::TurnFailed { error, .. } => self.push(Entry::Error {
                text: capped_text(error),
            }),
            AgentEvent::TurnCompleted {
                outcome, reason, ..
            } => {
                let name = name_of(outcome);
                self.push(Entry::Outcome {
                    ok: name == "done",
                    outcome: name,
                    reason: reason.clone(),
                });
            }
            _ => {}
        }
    }

    /// A tool call without its output yet; its entry's index.
    fn call(&mut self, id: &str, name: &str, arguments: &str) -> usize {
        let index = self.transcript.entries.len();
        self.open.insert(id.to_string(), index);
        self.push(Entry::Tool {
            id: id.to_string(),
            name: name.to_string(),
            args: clip(arguments, ARGS_BYTES),
            out: None,
            code: None,
            err: false,
            dur: String::new(),
        });
        index
    }

    fn note(&mut self, text: String) {
        self.push(Entry::Note { text });
    }

    fn completed(&mut self, item: &Item) {
        match item {
            Item::AgentMessage { text, .. } if !text.trim().is_empty() => {
                self.push(Entry::Assistant {
                    text: capped_text(text),
                })
            }
            Item::ToolCall {
                id,
                name,
                arguments,
                status,
                output,
                exit_code,
                duration_ms,
                ..
            } => {
                let index = match self.open.remove(id) {
                    Some(index) => index,
                    None => {
                        let index = self.call(id, name, arguments);
                        self.open.remove(id);
                        index
                    }
                };
                if let Some(Entry::Tool {
                    out,
                    code,
                    err,
                    dur,
                    ..
                }) = self.transcript.entries.get_mut(index)
                {
                    *out = output.as_deref().map(capped_output);
                    *code = *exit_code;
                    *err = *status == ToolStatus::Failed;
                    *dur = duration_ms.map(format_ms).unwrap_or_default();
                }
            }
            _ => {}
        }
    }

    /// Whether an error entry with exactly this text is there.
    pub fn has_error(&self, text: &str) -> bool {
        self.transcript
            .entries
            .iter()
            .any(|e| matches!(e, Entry::Error { text: t } if t == text))
    }

    /// The transcript; for an attempt that `failed`, `failure` points at
    /// the first failed check, else the last error, else an outcome that
    /// was not `done`, else the last problem.
    pub fn finish(mut self, failed: bool) -> Transcript {
        if failed {
            let entries = &self.transcript.entries;
            let last = |f: &dyn Fn(&Entry) -> bool| entries.iter().rposition(f);
            self.transcript.failure = entries
                .iter()
                .position(|e| matches!(e, Entry::Check { passed: false, .. }))
                .or_else(|| last(&|e| matches!(e, Entry::Error { .. })))
                .or_else(|| last(&|e| matches!(e, Entry::Outcome { ok: false, .. })))
                .or_else(|| last(&Entry::is_problem));
        }
        self.transcript
    }
}

/// A saved conversation as a transcript: the user's messages, the model's
/// texts, each call with its output (the exit code read back from it).
/// The instructions and the environment blocks are left out; summaries,
/// plans, critiques and test reports become notes.
pub fn from_history(history: &[HistoryItem]) -> Transcript {
    let mut b = Builder::default();
    for item in history {
        match &item.content {
            Content::Text { text, tag: None } => match item.role {
                Role::User => b.user(text),
                Role::Assistant if !text.trim().is_empty() => b.push(Entry::Assistant {
                    text: capped_text(text),
                }),
                _ => {}
            },
            Content::Text {
                text,
                tag: Some(tag),
            } => {
                use cogni_protocol::MessageTag::*;
                let what = match tag {
                    Summary => "summary of the earlier conversation",
                    Plan => "plan",
                    Reflection => "critique",
                    TestReport => "test report",
                    Skill => "skill",
                    DeveloperInstructions | UserInstructions | Environment => continue,
                };
                b.note(format!("{what}: {}", clip(text, 2_000)));
            }
            Content::ToolCall(call) => {
                b.call(&call.id, &call.name, &call.arguments);
            }
            Content::ToolOutput(output) => {
                let Some(index) = b.open.remove(&output.call_id) else {
                    continue;
                };
                if let Some(Entry::Tool { out, code, err, .. }) =
                    b.transcript.entries.get_mut(index)
                {
                    *code = output.command.and_then(|c| c.exit_code);
                    *out = Some(capped_output(&output.content));
                    *err = output.is_error;
                }
            }
            Content::Image(image) => b.note(format!("image attached: {}", image.describe())),
            Content::WebSearch(search) => b.note(search.describe()),
            Content::Reasoning(_) => {}
        }
    }
    b.finish(false)
}

/// One JSON text per line (`transcripts.jsonl`): which attempt, and its
/// transcript; read borrowing from the line.
#[derive(Debug, Serialize, Deserialize)]
pub struct Line<'a> {
    /// The task's id.
    #[serde(borrow)]
    pub task: Cow<'a, str>,
    /// The agent's id.
    #[serde(borrow)]
    pub agent: Cow<'a, str>,
    /// The attempt's number (its repeat), from 1.
    pub attempt: u32,
    /// The [`Transcript`] as JSON, not parsed.
    #[serde(borrow)]
    pub transcript: &'a RawValue,
}

/// A finished transcript as its compact JSON, made once: transcripts.jsonl
/// and report.html hold exactly this text, so writing, reading and merging
/// thousands of attempts copies it instead of parsing and printing it
/// again.
#[derive(Debug, Clone)]
pub struct Json(Box<RawValue>);

impl Json {
    /// Serialises `t` once.
    pub fn of(t: &Transcript) -> Json {
        Json(serde_json::value::to_raw_value(t).expect("a transcript is always JSON"))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The JSON as a raw value, to embed in other JSON unchanged.
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }

    /// The transcript itself.
    pub fn parse(&self) -> serde_json::Result<Transcript> {
        serde_json::from_str(self.0.get())
    }
}

impl From<&RawValue> for Json {
    fn from(raw: &RawValue) -> Json {
        Json(raw.to_owned())
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.as_str() == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_protocol::{StopReason, ToolCall, ToolOutput, TurnOutcome, Usage};

    #[test]
    fn a_line_carries_the_transcript_json_unchanged() {
        let t = Transcript {
            entries: vec![Entry::Assistant {
                text: "done \"quoted\" </b>".into(),
            }],
            failure: Some(0),
        };
        let json = Json::of(&t);
        assert_eq!(json.parse().unwrap(), t);
        let line = Line {
            task: Cow::Borrowed("t"),
            agent: Cow::Borrowed("a"),
            attempt: 2,
            transcript: json.as_raw(),
        };
        let text = serde_json::to_string(&line).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"task":"t","agent":"a","attempt":2,"transcript":{}}}"#,
                json.as_str()
            )
        );
        let read: Line = serde_json::from_str(&text).unwrap();
        assert_eq!((read.task.as_ref(), read.attempt), ("t", 2));
        assert_eq!(Json::from(read.transcript), json);
    }

    fn call(id: &str, status: ToolStatus, output: Option<&str>) -> Item {
        Item::ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: r#"{"command":"make"}"#.into(),
            status,
            output: output.map(str::to_string),
            exit_code: output.map(|_| 2),
            duration_ms: output.map(|_| 1_500),
            diff: None,
        }
    }

    #[test]
    fn events_become_entries_and_the_failure_is_found() {
        let mut b = Builder::default();
        b.user("fix it");
        b.event(&AgentEvent::ModelRequest {
            iteration: 1,
            prompt: None,
        });
        b.event(&AgentEvent::ModelResponse {
            iteration: 1,
            usage: Some(Usage {
                input_tokens: 100,
                output_tokens: 20,
                ..Usage::default()
            }),
            stop_reason: StopReason::ToolCalls,
            time_to_first_token_ms: None,
            duration_ms: 850,
        });
        b.event(&AgentEvent::ItemCompleted {
            item: Item::AgentMessage {
                id: "m".into(),
                text: "Running make.".into(),
            },
        });
        b.event(&AgentEvent::ItemStarted {
            item: call("c1", ToolStatus::InProgress, None),
        });
        let long: String = (0..500).map(|i| format!("line {i}\n")).collect();
        b.event(&AgentEvent::ItemCompleted {
            item: call("c1", ToolStatus::Failed, Some(&long)),
        });
        b.event(&AgentEvent::TurnCompleted {
            turn: 1,
            outcome: TurnOutcome::MaxSteps,
            final_text: String::new(),
            iterations: 1,
            usage: Usage::default(),
            limit: None,
            reason: None,
        });
        let t = b.finish(true);
        assert_eq!(t.entries.len(), 5, "{t:#?}");
        assert!(matches!(&t.entries[1], Entry::Step { tokens: 120, dur, .. } if dur == "850 ms"));
        let Entry::Tool {
            out,
            code,
            err,
            dur,
            ..
        } = &t.entries[3]
        else {
            panic!("{t:#?}")
        };
        assert_eq!((*code, *err, dur.as_str()), (Some(2), true, "1.5 s"));
        let out = out.as_deref().unwrap();
        assert!(out.len() < 3_200 && out.contains("line 0\n") && out.contains("line 499\n"));
        assert!(out.contains("omitted"), "{out}");
        assert_eq!(t.failure, Some(4));
    }

    #[test]
    fn a_failed_check_is_the_failure_and_durations_fit_their_unit() {
        let mut b = Builder::default();
        b.push(Entry::Error { text: "x".into() });
        b.push(Entry::Check {
            what: "tests".into(),
            passed: false,
            out: String::new(),
            dur: String::new(),
        });
        assert_eq!(b.finish(true).failure, Some(1));
        assert_eq!(Builder::default().finish(false).failure, None);
        assert_eq!(format_ms(0), "0 ms");
        assert_eq!(format_ms(12_340), "12.3 s");
        assert_eq!(format_ms(245_000), "4 min 5 s");
    }

    #[test]
    fn every_text_can_be_redacted() {
        let secret = "sk-secret";
        let mut t = Transcript {
            entries: vec![
                Entry::User {
                    text: secret.into(),
                },
                Entry::Tool {
                    id: "c".into(),
                    name: "shell".into(),
                    args: secret.into(),
                    out: Some(secret.into()),
                    code: None,
                    err: false,
                    dur: String::new(),
                },
                Entry::Check {
                    what: secret.into(),
                    passed: true,
                    out: secret.into(),
                    dur: String::new(),
                },
            ],
            failure: None,
        };
        t.map_text(&|s| s.replace(secret, "[REDACTED]"));
        let json = serde_json::to_string(&t).unwrap();
        assert!(
            !json.contains(secret) && json.contains("[REDACTED]"),
            "{json}"
        );
    }

    #[test]
    fn a_history_reads_back_with_exit_codes() {
        let history = vec![
            HistoryItem::text(Role::User, "the task"),
            HistoryItem::tool_call(ToolCall {
                id: "c".into(),
                name: "shell".into(),
                arguments: "{}".into(),
                kind: cogni_protocol::ToolCallKind::Function,
            }),
            HistoryItem::tool_output(ToolOutput {
                call_id: "c".into(),
                content: "exit code 1, 0.1s\nboom\n".into(),
                is_error: true,
                command: Some(cogni_protocol::CommandEnd {
                    exit_code: Some(1),
                    output_start: "exit code 1, 0.1s\n".len(),
                }),
                images: Vec::new(),
            }),
            HistoryItem::text(Role::Assistant, "It fails."),
        ];
        let t = from_history(&history);
        assert_eq!(t.entries.len(), 3);
        assert!(matches!(
            &t.entries[1],
            Entry::Tool {
                code: Some(1),
                err: true,
                ..
            }
        ));
        let json = serde_json::to_string(&t).unwrap();
        assert!(json.contains(r#"{"k":"user","text":"the task"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Transcript>(&json).unwrap(), t);
    }
}
