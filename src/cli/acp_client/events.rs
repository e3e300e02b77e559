//! The agent's session updates as cogni's own events, so the renderers of
//! `cogni run` (human progress, `--json`) and of the REPL serve an ACP
//! agent as they serve cogni's engine:
//!
//! | ACP | cogni event |
//! |---|---|
//! | `agent_message_chunk` | `item.started` (a message), `item.updated` per chunk, `item.completed` when something else follows |
//! | `agent_thought_chunk` | `reasoning`, one per run of chunks |
//! | `tool_call` | `item.started` (a tool call: its title as the name, its raw input as the arguments) |
//! | `tool_call_update` completed / failed | `item.completed`, the output being its content (text, diffs as unified diffs) or raw output |
//! | `plan` | `plan` |
//! | `session/request_permission` | `approval` (asked, then the answer) |
//! | the prompt's answer | `turn.completed` with the outcome of its stop reason |
//!
//! The agent's text is not trusted: the renderers strip terminal controls
//! from everything they print, as they do for a model's.

use crate::protocol::{
    AgentEvent, ApprovalRequest, EventSink, Item, Plan, PlanStep, StepStatus, ToolStatus,
    TurnOutcome, Usage,
};
use agent_client_protocol::v1::schema as acp;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

/// Lines of a diff shown in a permission question.
const QUESTION_DIFF_LINES: usize = 40;

/// The most of a message, a thought and the turn's answer kept in
/// memory (the agent is untrusted); the rest is still shown as it
/// streams.
const KEPT_MAX: usize = 16 * 1024 * 1024;

/// Append `delta` to `kept` unless it holds [`KEPT_MAX`] already.
fn keep(kept: &mut String, delta: &str) {
    if kept.len() < KEPT_MAX {
        kept.push_str(delta);
    }
}

/// What an update says that the front door keeps (the REPL's `/mode` and
/// `/help`).
#[derive(Debug, PartialEq)]
pub enum Noted {
    Nothing,
    Commands(Vec<acp::AvailableCommand>),
    Mode(acp::SessionModeId),
}

/// A tool call the agent announced and has not finished.
struct Call {
    title: String,
    arguments: String,
    started: Instant,
    content: Vec<acp::ToolCallContent>,
    raw_output: Option<serde_json::Value>,
}

/// The turn in progress, as events.
#[derive(Default)]
pub struct Translate {
    turn: u32,
    /// Messages of this turn so far (for their ids).
    messages: u32,
    /// The message being streamed: its id and text.
    message: Option<(String, String)>,
    /// The reasoning being streamed.
    thought: String,
    calls: HashMap<String, Call>,
    /// The text since the last tool call: the turn's answer.
    answer: String,
}

/// `ToolStatus` of an ACP status, `None` while the call runs.
fn ended(status: acp::ToolCallStatus) -> Option<ToolStatus> {
    match status {
        acp::ToolCallStatus::Completed => Some(ToolStatus::Completed),
        acp::ToolCallStatus::Failed => Some(ToolStatus::Failed),
        _ => None,
    }
}

impl Translate {
    /// A prompt was sent: a new turn.
    pub fn start(&mut self, sink: &dyn EventSink) {
        self.turn += 1;
        self.messages = 0;
        self.answer.clear();
        sink.emit(AgentEvent::TurnStarted { turn: self.turn });
    }

    /// One update of the agent's session.
    pub fn update(&mut self, update: acp::SessionUpdate, sink: &dyn EventSink) -> Noted {
        if !matches!(update, acp::SessionUpdate::AgentThoughtChunk(_)) {
            self.flush_thought(sink);
        }
        match update {
            acp::SessionUpdate::AgentMessageChunk(chunk) => {
                self.text(&block_text(&chunk.content), sink)
            }
            acp::SessionUpdate::AgentThoughtChunk(chunk) => {
                keep(&mut self.thought, &block_text(&chunk.content));
            }
            acp::SessionUpdate::ToolCall(call) => {
                self.close_message(sink);
                self.started(call, sink);
            }
            acp::SessionUpdate::ToolCallUpdate(update) => {
                self.close_message(sink);
                self.updated(update, sink);
            }
            acp::SessionUpdate::Plan(plan) => {
                self.close_message(sink);
                sink.emit(AgentEvent::Plan {
                    plan: plan_of(&plan),
                });
            }
            acp::SessionUpdate::AvailableCommandsUpdate(update) => {
                return Noted::Commands(update.available_commands)
            }
            acp::SessionUpdate::CurrentModeUpdate(update) => {
                return Noted::Mode(update.current_mode_id)
            }
            acp::SessionUpdate::Notice(notice) => sink.emit(AgentEvent::Warning {
                message: match notice.description {
                    Some(detail) => format!("{}: {detail}", notice.title),
                    None => notice.title,
                },
            }),
            // Replays of the user's own text, usage figures, session
            // titles and config options: nothing cogni shows.
            _ => {}
        }
        Noted::Nothing
    }

    fn text(&mut self, delta: &str, sink: &dyn EventSink) {
        if delta.is_empty() {
            return;
        }
        let (id, text) = self.message.get_or_insert_with(|| {
            self.messages += 1;
            let id = format!("msg_{}_{}", self.turn, self.messages);
            sink.emit(AgentEvent::ItemStarted {
                item: Item::AgentMessage {
                    id: id.clone(),
                    text: String::new(),
                },
            });
            (id, String::new())
        });
        keep(text, delta);
        keep(&mut self.answer, delta);
        sink.emit(AgentEvent::ItemUpdated {
            id: id.clone(),
            delta: delta.to_string(),
        });
    }

    fn close_message(&mut self, sink: &dyn EventSink) {
        if let Some((id, text)) = self.message.take() {
            sink.emit(AgentEvent::ItemCompleted {
                item: Item::AgentMessage { id, text },
            });
        }
    }

    fn flush_thought(&mut self, sink: &dyn EventSink) {
        if !self.thought.is_empty() {
            sink.emit(AgentEvent::Reasoning {
                text: std::mem::take(&mut self.thought),
            });
        }
    }

    fn started(&mut self, call: acp::ToolCall, sink: &dyn EventSink) {
        let id = call.tool_call_id.0.to_string();
        if self.calls.contains_key(&id) {
            // Announced twice: the second is an update.
            let fields = acp::ToolCallUpdateFields::new()
                .title(call.title)
                .status(call.status)
                .content(call.content)
                .raw_output(call.raw_output);
            self.updated(acp::ToolCallUpdate::new(call.tool_call_id, fields), sink);
            return;
        }
        self.answer.clear();
        let arguments = arguments(call.raw_input.as_ref(), &call.locations);
        sink.emit(AgentEvent::ItemStarted {
            item: Item::ToolCall {
                id: id.clone(),
                name: call.title.clone(),
                arguments: arguments.clone(),
                status: ToolStatus::InProgress,
                output: None,
                exit_code: None,
                duration_ms: None,
                diff: None,
            },
        });
        self.calls.insert(
            id.clone(),
            Call {
                title: call.title,
                arguments,
                started: Instant::now(),
                content: call.content,
                raw_output: call.raw_output,
            },
        );
        if let Some(status) = ended(call.status) {
            self.finish_call(&id, status, sink);
        }
    }

    fn updated(&mut self, update: acp::ToolCallUpdate, sink: &dyn EventSink) {
        let id = update.tool_call_id.0.to_string();
        let fields = update.fields;
        if !self.calls.contains_key(&id) {
            // An update of a call never announced announces it.
            let title = fields.title.clone().unwrap_or_else(|| "tool call".into());
            let call = acp::ToolCall::new(update.tool_call_id, title)
                .raw_input(fields.raw_input.clone())
                .locations(fields.locations.clone().unwrap_or_default());
            self.started(call, sink);
        }
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if let Some(title) = fields.title {
            call.title = title;
        }
        if let Some(content) = fields.content {
            call.content = content;
        }
        if fields.raw_output.is_some() {
            call.raw_output = fields.raw_output;
        }
        if let Some(status) = fields.status.and_then(ended) {
            self.finish_call(&id, status, sink);
        }
    }

    fn finish_call(&mut self, id: &str, status: ToolStatus, sink: &dyn EventSink) {
        let Some(call) = self.calls.remove(id) else {
            return;
        };
        let output = output(&call.content, call.raw_output.as_ref());
        let diffs = call.content.iter().map(|item| match item {
            acp::ToolCallContent::Diff(diff) => Some(unified(diff)),
            _ => None,
        });
        sink.emit(AgentEvent::ItemCompleted {
            item: Item::ToolCall {
                id: id.to_string(),
                name: call.title,
                arguments: call.arguments,
                status,
                output: Some(output),
                exit_code: None,
                duration_ms: Some(call.started.elapsed().as_millis() as u64),
                diff: crate::tools::diff::join(diffs),
            },
        });
    }

    /// The question a permission request asks: the call's title, what it
    /// would do (its input, the first lines of its diffs); and the
    /// summary that events report (the input alone).
    pub fn question(&self, request: &acp::RequestPermissionRequest) -> (ApprovalRequest, String) {
        let id = request.tool_call.tool_call_id.0.to_string();
        let fields = &request.tool_call.fields;
        let known = self.calls.get(&id);
        let tool = fields
            .title
            .clone()
            .or_else(|| known.map(|c| c.title.clone()))
            .unwrap_or_else(|| "a tool call".into());
        let reported = match (&fields.raw_input, known) {
            (Some(input), _) => arguments(Some(input), &[]),
            (None, Some(call)) => call.arguments.clone(),
            (None, None) => String::new(),
        };
        let mut summary = reported.clone();
        let content = fields
            .content
            .as_deref()
            .or_else(|| known.map(|c| c.content.as_slice()))
            .unwrap_or_default();
        for item in content {
            if let acp::ToolCallContent::Diff(diff) = item {
                let text = unified(diff);
                let lines: Vec<&str> = text.lines().collect();
                summary.push('\n');
                summary.push_str(&lines[..lines.len().min(QUESTION_DIFF_LINES)].join("\n"));
                if lines.len() > QUESTION_DIFF_LINES {
                    let _ = write!(
                        summary,
                        "\n… {} more lines",
                        lines.len() - QUESTION_DIFF_LINES
                    );
                }
            }
        }
        let question = ApprovalRequest {
            call_id: id,
            tool,
            summary,
            // The summary already holds the agent's diffs.
            arguments: String::new(),
            reason: "the agent asks for permission".into(),
        };
        (question, reported)
    }

    /// The prompt was answered with `stop`: what is still open closes and
    /// the turn completes with the matching outcome.
    pub fn finish(&mut self, stop: acp::StopReason, sink: &dyn EventSink) -> (TurnOutcome, String) {
        let outcome = outcome(stop);
        let unfinished = if outcome == TurnOutcome::Interrupted {
            "the turn was cancelled before the agent finished this call"
        } else {
            "the agent ended its turn without saying how this call ended"
        };
        self.close(unfinished, sink);
        let reason = (outcome != TurnOutcome::Done && outcome != TurnOutcome::Interrupted)
            .then(|| format!("the agent stopped: {}", describe(stop)));
        sink.emit(AgentEvent::TurnCompleted {
            turn: self.turn,
            outcome: outcome.clone(),
            final_text: self.answer.clone(),
            // Unknown: the agent's model requests are its own.
            iterations: 0,
            usage: Usage::default(),
            limit: None,
            reason,
        });
        (outcome, std::mem::take(&mut self.answer))
    }

    /// The turn failed (the agent died, or answered the prompt with an
    /// error).
    pub fn fail(&mut self, error: &str, sink: &dyn EventSink) {
        self.close("the agent's turn failed", sink);
        sink.emit(AgentEvent::TurnFailed {
            turn: self.turn,
            error: error.to_string(),
        });
    }

    fn close(&mut self, unfinished: &str, sink: &dyn EventSink) {
        self.flush_thought(sink);
        self.close_message(sink);
        let mut open: Vec<(String, Call)> = self.calls.drain().collect();
        open.sort_by_key(|(_, call)| call.started);
        for (id, call) in open {
            sink.emit(AgentEvent::ItemCompleted {
                item: Item::ToolCall {
                    id,
                    name: call.title,
                    arguments: call.arguments,
                    status: ToolStatus::Failed,
                    output: Some(unfinished.to_string()),
                    exit_code: None,
                    duration_ms: Some(call.started.elapsed().as_millis() as u64),
                    diff: None,
                },
            });
        }
    }
}

/// cogni's outcome for the agent's stop reason.
pub fn outcome(stop: acp::StopReason) -> TurnOutcome {
    match stop {
        acp::StopReason::EndTurn => TurnOutcome::Done,
        acp::StopReason::MaxTokens => TurnOutcome::Truncated,
        acp::StopReason::MaxTurnRequests => TurnOutcome::MaxSteps,
        acp::StopReason::Refusal => TurnOutcome::Blocked,
        acp::StopReason::Cancelled => TurnOutcome::Interrupted,
        _ => TurnOutcome::Done,
    }
}

/// A stop reason as the protocol names it, and what it means.
pub fn describe(stop: acp::StopReason) -> &'static str {
    match stop {
        acp::StopReason::EndTurn => "end_turn (done)",
        acp::StopReason::MaxTokens => "max_tokens (its output was cut off at its token limit)",
        acp::StopReason::MaxTurnRequests => {
            "max_turn_requests (it reached its limit of model requests in a turn)"
        }
        acp::StopReason::Refusal => "refusal (it refused to go on)",
        acp::StopReason::Cancelled => "cancelled",
        _ => "an unknown stop reason",
    }
}

/// A content block as text: text as it is, links by their target, other
/// media by what they are.
fn block_text(block: &acp::ContentBlock) -> String {
    match block {
        acp::ContentBlock::Text(t) => t.text.clone(),
        acp::ContentBlock::ResourceLink(link) => format!("[{}]({})", link.name, link.uri),
        acp::ContentBlock::Image(_) => "[image]".into(),
        acp::ContentBlock::Audio(_) => "[audio]".into(),
        _ => "[resource]".into(),
    }
}

/// A call's arguments: its raw input as JSON, else the files it touches.
fn arguments(raw_input: Option<&serde_json::Value>, locations: &[acp::ToolCallLocation]) -> String {
    match raw_input {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(value) => value.to_string(),
        None => locations
            .iter()
            .map(|l| l.path.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// What a finished call produced: its content (text, diffs, terminals),
/// else its raw output.
fn output(content: &[acp::ToolCallContent], raw_output: Option<&serde_json::Value>) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|item| match item {
            acp::ToolCallContent::Content(c) => block_text(&c.content),
            acp::ToolCallContent::Diff(diff) => unified(diff),
            acp::ToolCallContent::Terminal(t) => format!("[terminal {}]", t.terminal_id.0),
            _ => String::new(),
        })
        .filter(|p| !p.is_empty())
        .collect();
    if !parts.is_empty() {
        return parts.join("\n");
    }
    match raw_output {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(value) => value.to_string(),
        None => String::new(),
    }
}

/// A diff as a unified diff of its path (empty when nothing changed).
fn unified(diff: &acp::Diff) -> String {
    let path = diff.path.display().to_string();
    let old = diff.old_text.as_deref().map(|text| (path.as_str(), text));
    crate::tools::diff::unified(old, Some((&path, &diff.new_text))).unwrap_or_default()
}

fn plan_of(plan: &acp::Plan) -> Plan {
    Plan {
        explanation: None,
        plan: plan
            .entries
            .iter()
            .map(|entry| PlanStep {
                step: entry.content.clone(),
                status: match entry.status {
                    acp::PlanEntryStatus::InProgress => StepStatus::InProgress,
                    acp::PlanEntryStatus::Completed => StepStatus::Completed,
                    _ => StepStatus::Pending,
                },
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Events(Mutex<Vec<AgentEvent>>);

    impl EventSink for Events {
        fn emit(&self, event: AgentEvent) {
            self.0.lock().unwrap().push(event);
        }
    }

    impl Events {
        fn types(&self) -> Vec<String> {
            self.0
                .lock()
                .unwrap()
                .iter()
                .map(|e| {
                    serde_json::to_value(e).unwrap()["type"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        }
    }

    fn chunk(text: &str) -> acp::ContentChunk {
        acp::ContentChunk::new(text.to_string().into())
    }

    #[test]
    fn updates_become_the_events_cogni_renders() {
        let events = Events::default();
        let mut t = Translate::default();
        t.start(&events);
        t.update(
            acp::SessionUpdate::AgentThoughtChunk(chunk("Think ")),
            &events,
        );
        t.update(
            acp::SessionUpdate::AgentThoughtChunk(chunk("first.")),
            &events,
        );
        t.update(
            acp::SessionUpdate::AgentMessageChunk(chunk("Writing ")),
            &events,
        );
        t.update(acp::SessionUpdate::AgentMessageChunk(chunk("it.")), &events);
        let diff = acp::Diff::new("/w/a.txt", "new\n").old_text("old\n".to_string());
        let call = acp::ToolCall::new("c1", "Write a.txt")
            .kind(acp::ToolKind::Edit)
            .raw_input(serde_json::json!({ "path": "a.txt" }))
            .content(vec![acp::ToolCallContent::Diff(diff)]);
        t.update(acp::SessionUpdate::ToolCall(call), &events);
        let done = acp::ToolCallUpdate::new(
            "c1",
            acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::Completed),
        );
        t.update(acp::SessionUpdate::ToolCallUpdate(done), &events);
        t.update(
            acp::SessionUpdate::ToolCall(acp::ToolCall::new("c2", "Run ls")),
            &events,
        );
        t.update(
            acp::SessionUpdate::AgentMessageChunk(chunk("Done.")),
            &events,
        );
        let noted = t.update(
            acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new("plan")),
            &events,
        );
        assert_eq!(noted, Noted::Mode("plan".into()));
        let (outcome, answer) = t.finish(acp::StopReason::EndTurn, &events);
        assert_eq!((outcome, answer.as_str()), (TurnOutcome::Done, "Done."));
        assert_eq!(
            events.types(),
            [
                "turn.started",
                "reasoning",
                "item.started",
                "item.updated",
                "item.updated",
                "item.completed",
                "item.started",
                "item.completed",
                "item.started",
                "item.started",
                "item.updated",
                "item.completed",
                "item.completed",
                "turn.completed",
            ]
        );
        let all = events.0.lock().unwrap();
        let AgentEvent::ItemCompleted {
            item:
                Item::ToolCall {
                    name,
                    arguments,
                    output,
                    status,
                    ..
                },
        } = &all[7]
        else {
            panic!("{:?}", all[7]);
        };
        assert_eq!(
            (name.as_str(), arguments.as_str()),
            ("Write a.txt", r#"{"path":"a.txt"}"#)
        );
        assert_eq!(*status, ToolStatus::Completed);
        let output = output.as_deref().unwrap();
        assert!(
            output.contains("--- /w/a.txt\n+++ /w/a.txt") && output.contains("-old\n+new"),
            "{output}"
        );
        // The call never finished: it fails when the turn ends.
        assert!(matches!(
            &all[12],
            AgentEvent::ItemCompleted { item: Item::ToolCall { id, status: ToolStatus::Failed, .. } } if id == "c2"
        ));
    }

    #[test]
    fn stop_reasons_map_to_outcomes() {
        let cases = [
            (acp::StopReason::EndTurn, TurnOutcome::Done),
            (acp::StopReason::MaxTokens, TurnOutcome::Truncated),
            (acp::StopReason::MaxTurnRequests, TurnOutcome::MaxSteps),
            (acp::StopReason::Refusal, TurnOutcome::Blocked),
            (acp::StopReason::Cancelled, TurnOutcome::Interrupted),
        ];
        for (stop, want) in cases {
            assert_eq!(outcome(stop), want, "{stop:?}");
        }
    }

    #[test]
    fn a_permission_question_shows_the_calls_diff() {
        let events = Events::default();
        let mut t = Translate::default();
        t.start(&events);
        let diff = acp::Diff::new("/w/a.txt", "b\n");
        let call =
            acp::ToolCall::new("c1", "Write a.txt").content(vec![acp::ToolCallContent::Diff(diff)]);
        t.update(acp::SessionUpdate::ToolCall(call), &events);
        let request = acp::RequestPermissionRequest::new(
            "s",
            acp::ToolCallUpdate::new("c1", acp::ToolCallUpdateFields::new()),
            vec![],
        );
        let (q, reported) = t.question(&request);
        assert_eq!(q.tool, "Write a.txt");
        assert_eq!(reported, "");
        assert!(
            q.summary.contains("+++ /w/a.txt") && q.summary.contains("+b"),
            "{}",
            q.summary
        );
    }
}
