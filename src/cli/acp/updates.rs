//! The engine's events as ACP session updates: message text as
//! `agent_message_chunk`, reasoning as `agent_thought_chunk`, tool calls
//! as `tool_call` and `tool_call_update` (title, kind, the files they
//! touch as locations, a diff for file edits, the output), plans from
//! `update_plan` as `plan`. A saved history replays as the same updates
//! (`session/load`).

use super::Cx;
use crate::protocol::{
    AgentEvent, Content, EventSink, HistoryItem, Item, Plan, Role, StepStatus, ToolStatus,
    WebSource,
};
use crate::tools::apply_patch::{parse_patch, update_text, FileOp};
use crate::tools::ask_user;
use crate::tools::fs::read_text_limited;
use crate::tools::paths;
use agent_client_protocol::v1::schema as acp;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Files larger than this get no diff in a tool call (reading them would
/// hold up the turn).
const DIFF_MAX_BYTES: u64 = 256 * 1024;

/// Sends one session's updates to the client.
pub struct Updates {
    cx: Cx,
    session: acp::SessionId,
    cwd: PathBuf,
    /// The diffs of running edits, kept with their output at the end.
    diffs: Mutex<HashMap<String, Vec<acp::ToolCallContent>>>,
    /// The titles of running calls (a permission request names its call
    /// the way the call was announced).
    titles: Mutex<HashMap<String, String>>,
}

impl Updates {
    pub fn new(cx: Cx, session: acp::SessionId, cwd: PathBuf) -> Self {
        Updates {
            cx,
            session,
            cwd,
            diffs: Mutex::new(HashMap::new()),
            titles: Mutex::new(HashMap::new()),
        }
    }

    /// The title a running call was announced with.
    pub fn title(&self, call_id: &str) -> Option<String> {
        self.titles.lock().ok()?.get(call_id).cloned()
    }

    /// Send one update; a connection that is gone drops it (the turn is
    /// being stopped then).
    pub fn send(&self, update: acp::SessionUpdate) {
        let note = acp::SessionNotification::new(self.session.clone(), update);
        if let Err(e) = self.cx.send_notification(note) {
            tracing::debug!(error = %e, "session update not sent");
        }
    }

    /// Text from the agent (a command's answer, a note).
    pub fn say(&self, text: &str) {
        self.send(acp::SessionUpdate::AgentMessageChunk(chunk(text)));
    }

    /// A tool call's status changed.
    pub fn status(&self, call_id: &str, status: acp::ToolCallStatus) {
        self.send(acp::SessionUpdate::ToolCallUpdate(
            acp::ToolCallUpdate::new(
                call_id.to_string(),
                acp::ToolCallUpdateFields::new().status(status),
            ),
        ));
    }

    /// A tool call as the client first sees it.
    fn started(&self, id: &str, name: &str, arguments: &str, status: acp::ToolCallStatus) {
        let described = describe(name, arguments, &self.cwd);
        if !described.diffs.is_empty() {
            if let Ok(mut diffs) = self.diffs.lock() {
                diffs.insert(id.to_string(), described.diffs.clone());
            }
        }
        if let Ok(mut titles) = self.titles.lock() {
            titles.insert(id.to_string(), described.title.clone());
        }
        let call = acp::ToolCall::new(id.to_string(), described.title)
            .kind(described.kind)
            .status(status)
            .locations(described.locations)
            .content(described.diffs)
            .raw_input(described.input);
        self.send(acp::SessionUpdate::ToolCall(call));
    }

    /// A tool call ended with `output`.
    fn finished(&self, id: &str, failed: bool, output: &str) {
        if let Ok(mut titles) = self.titles.lock() {
            titles.remove(id);
        }
        let mut content = self
            .diffs
            .lock()
            .ok()
            .and_then(|mut d| d.remove(id))
            .unwrap_or_default();
        if !output.is_empty() {
            content.push(acp::ToolCallContent::from(output.to_string()));
        }
        let status = if failed {
            acp::ToolCallStatus::Failed
        } else {
            acp::ToolCallStatus::Completed
        };
        self.send(acp::SessionUpdate::ToolCallUpdate(
            acp::ToolCallUpdate::new(
                id.to_string(),
                acp::ToolCallUpdateFields::new()
                    .status(status)
                    .content(content)
                    .raw_output(Value::String(output.to_string())),
            ),
        ));
    }

    /// A web search the provider ran: a finished `search` call whose
    /// content lists the pages found.
    fn searched(&self, id: &str, query: &str, results: &[WebSource], error: Option<&str>) {
        let pages: Vec<String> = results
            .iter()
            .map(|r| format!("{} <{}>", r.title, r.url))
            .collect();
        let (status, text) = match error {
            Some(code) => (acp::ToolCallStatus::Failed, format!("failed: {code}")),
            None => (acp::ToolCallStatus::Completed, pages.join("\n")),
        };
        let call = acp::ToolCall::new(id.to_string(), format!("web search: {query}"))
            .kind(acp::ToolKind::Search)
            .status(status)
            .content(vec![acp::ToolCallContent::from(text)])
            .raw_input(serde_json::json!({ "query": query }));
        self.send(acp::SessionUpdate::ToolCall(call));
    }

    /// The plan as the client shows it.
    pub fn plan(&self, plan: &Plan) {
        let entries = plan
            .plan
            .iter()
            .map(|step| {
                let status = match step.status {
                    StepStatus::Pending => acp::PlanEntryStatus::Pending,
                    StepStatus::InProgress => acp::PlanEntryStatus::InProgress,
                    StepStatus::Completed => acp::PlanEntryStatus::Completed,
                };
                acp::PlanEntry::new(step.step.clone(), acp::PlanEntryPriority::Medium, status)
            })
            .collect();
        self.send(acp::SessionUpdate::Plan(acp::Plan::new(entries)));
    }

    /// Replay a saved conversation (after its initial context) as the
    /// updates it made: the user's messages, the agent's text, reasoning,
    /// tool calls with their outputs.
    pub fn replay(&self, items: &[HistoryItem]) {
        let mut calls: HashMap<&str, &str> = HashMap::new();
        for item in items {
            match (&item.content, item.role) {
                (Content::Text { text, tag: None }, Role::User) => {
                    self.send(acp::SessionUpdate::UserMessageChunk(chunk(text)))
                }
                (Content::Text { text, tag: None }, Role::Assistant) => self.say(text),
                (Content::Reasoning(r), _) if !r.text.is_empty() => {
                    self.send(acp::SessionUpdate::AgentThoughtChunk(chunk(&r.text)))
                }
                (Content::ToolCall(call), _) => {
                    calls.insert(&call.id, &call.name);
                    self.started(
                        &call.id,
                        &call.name,
                        &call.arguments,
                        acp::ToolCallStatus::InProgress,
                    );
                }
                (Content::ToolOutput(out), _) if calls.contains_key(out.call_id.as_str()) => {
                    self.finished(&out.call_id, out.is_error, &out.content)
                }
                _ => {}
            }
        }
    }
}

impl EventSink for Updates {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::ItemUpdated { delta, .. } => {
                self.send(acp::SessionUpdate::AgentMessageChunk(chunk(&delta)))
            }
            AgentEvent::Reasoning { text } => {
                self.send(acp::SessionUpdate::AgentThoughtChunk(chunk(&text)))
            }
            AgentEvent::ItemStarted {
                item:
                    Item::ToolCall {
                        id,
                        name,
                        arguments,
                        ..
                    },
            } => self.started(&id, &name, &arguments, acp::ToolCallStatus::InProgress),
            AgentEvent::ItemCompleted {
                item: Item::ToolCall {
                    id, status, output, ..
                },
            } => self.finished(
                &id,
                status == ToolStatus::Failed,
                output.as_deref().unwrap_or(""),
            ),
            AgentEvent::Plan { plan } => self.plan(&plan),
            AgentEvent::WebSearch {
                id,
                query,
                results,
                error,
            } => self.searched(&id, &query, &results, error.as_deref()),
            AgentEvent::Warning { message } => eprintln!("cogni: warning: {message}"),
            AgentEvent::TurnFailed { error, .. } => eprintln!("cogni: {error}"),
            _ => {}
        }
    }
}

fn chunk(text: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(acp::ContentBlock::from(text.to_string()))
}

/// What the client is shown of a call before it runs.
#[derive(Debug)]
pub(super) struct Described {
    pub title: String,
    pub kind: acp::ToolKind,
    pub locations: Vec<acp::ToolCallLocation>,
    pub diffs: Vec<acp::ToolCallContent>,
    pub input: Value,
}

/// A call's title, kind, the files it touches and, for an edit, its diff.
pub(super) fn describe(name: &str, arguments: &str, cwd: &Path) -> Described {
    let input: Value =
        serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()));
    let field = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or("");
    let at = |path: &str| acp::ToolCallLocation::new(paths::resolve(cwd, path));
    let (title, kind, locations, diffs) = match name {
        "shell" => {
            let command = match input.get("command") {
                Some(Value::Array(argv)) => argv
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
                Some(Value::String(line)) => line.clone(),
                _ => arguments.to_string(),
            };
            (command, acp::ToolKind::Execute, vec![], vec![])
        }
        "shell_output" | "shell_kill" => (
            format!("{name} {}", input.get("id").unwrap_or(&Value::Null)),
            acp::ToolKind::Execute,
            vec![],
            vec![],
        ),
        "read_file" => {
            let line = input
                .get("offset")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok());
            (
                format!("Read {}", field("path")),
                acp::ToolKind::Read,
                vec![at(field("path")).line(line)],
                vec![],
            )
        }
        "list_dir" => (
            format!("List {}", field("path")),
            acp::ToolKind::Read,
            vec![at(field("path"))],
            vec![],
        ),
        "glob" | "grep" | "search_tools" => (
            format!("{name} {}", [field("pattern"), field("query")].concat()),
            acp::ToolKind::Search,
            vec![],
            vec![],
        ),
        "write_file" => {
            let path = paths::resolve(cwd, field("path"));
            let diff = acp::Diff::new(&path, field("content")).old_text(small_text(&path));
            (
                format!("Write {}", field("path")),
                acp::ToolKind::Edit,
                vec![acp::ToolCallLocation::new(path)],
                vec![diff.into()],
            )
        }
        "edit_file" => {
            let path = paths::resolve(cwd, field("path"));
            let diff = acp::Diff::new(&path, field("new_string"))
                .old_text(Some(field("old_string").to_string()));
            (
                format!("Edit {}", field("path")),
                acp::ToolKind::Edit,
                vec![acp::ToolCallLocation::new(path)],
                vec![diff.into()],
            )
        }
        "apply_patch" => {
            let patch = match &input {
                Value::String(text) => text.as_str(),
                _ => field("input"),
            };
            patch_view(patch, cwd)
        }
        "update_plan" => (
            "Update the plan".into(),
            acp::ToolKind::Think,
            vec![],
            vec![],
        ),
        ask_user::NAME => (
            format!("Ask: {}", ask_user::clean(field("question"), false)),
            acp::ToolKind::Think,
            vec![],
            vec![],
        ),
        "web_fetch" => (
            format!("Fetch {}", field("url")),
            acp::ToolKind::Fetch,
            vec![],
            vec![],
        ),
        "skill" => (
            format!("Load skill {}", field("name")),
            acp::ToolKind::Read,
            vec![],
            vec![],
        ),
        _ => (name.to_string(), acp::ToolKind::Other, vec![], vec![]),
    };
    Described {
        title,
        kind,
        locations,
        diffs,
        input,
    }
}

/// The files of a patch and, for additions and updates, their diffs
/// (an update's against the file on disk, when it applies).
fn patch_view(
    patch: &str,
    cwd: &Path,
) -> (
    String,
    acp::ToolKind,
    Vec<acp::ToolCallLocation>,
    Vec<acp::ToolCallContent>,
) {
    let Ok(parsed) = parse_patch(patch) else {
        return ("Patch".into(), acp::ToolKind::Edit, vec![], vec![]);
    };
    let mut names = Vec::new();
    let mut locations = Vec::new();
    let mut diffs = Vec::new();
    for op in &parsed.ops {
        let path = paths::resolve(cwd, &op.path().to_string_lossy());
        names.push(op.path().display().to_string());
        locations.push(acp::ToolCallLocation::new(&path));
        match op {
            FileOp::Add { contents, .. } => diffs.push(acp::Diff::new(&path, contents).into()),
            FileOp::Update { hunks, move_to, .. } => {
                let Some(old) = small_text(&path) else {
                    continue;
                };
                if let Ok(updated) = update_text(&path.display().to_string(), &old, hunks) {
                    let target = move_to
                        .as_ref()
                        .map_or(path, |to| paths::resolve(cwd, &to.to_string_lossy()));
                    diffs.push(acp::Diff::new(target, updated.text).old_text(old).into());
                }
            }
            FileOp::Delete { .. } => {}
        }
    }
    (
        format!("Patch {}", names.join(", ")),
        acp::ToolKind::Edit,
        locations,
        diffs,
    )
}

/// The text of a file on disk, if it is small enough to show.
fn small_text(path: &Path) -> Option<String> {
    read_text_limited(path, DIFF_MAX_BYTES).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_described_with_their_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let d = describe("shell", r#"{"command":["ls","-la"]}"#, dir.path());
        assert_eq!(
            (d.title.as_str(), d.kind),
            ("ls -la", acp::ToolKind::Execute)
        );
        let d = describe("read_file", r#"{"path":"a.txt","offset":2}"#, dir.path());
        assert_eq!(d.kind, acp::ToolKind::Read);
        assert_eq!(d.locations[0].path, dir.path().join("a.txt"));
        assert_eq!(d.locations[0].line, Some(2));
        let d = describe(
            "write_file",
            r#"{"path":"a.txt","content":"new"}"#,
            dir.path(),
        );
        match &d.diffs[0] {
            acp::ToolCallContent::Diff(diff) => {
                assert_eq!(diff.old_text.as_deref(), Some("one\ntwo\n"));
                assert_eq!(diff.new_text, "new");
            }
            other => panic!("{other:?}"),
        }
        let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n*** Add File: b.txt\n+b\n*** End Patch";
        let d = describe(
            "apply_patch",
            &serde_json::json!({ "input": patch }).to_string(),
            dir.path(),
        );
        assert_eq!(d.title, "Patch a.txt, b.txt");
        assert_eq!(d.locations.len(), 2);
        match &d.diffs[0] {
            acp::ToolCallContent::Diff(diff) => assert_eq!(diff.new_text, "one\n2\n"),
            other => panic!("{other:?}"),
        }
        let d = describe("web_fetch", r#"{"url":"https://docs.rs/x"}"#, dir.path());
        assert_eq!(
            (d.title.as_str(), d.kind),
            ("Fetch https://docs.rs/x", acp::ToolKind::Fetch)
        );
        let d = describe("mcp__db__query", "not json", dir.path());
        assert_eq!(
            (d.title.as_str(), d.kind),
            ("mcp__db__query", acp::ToolKind::Other)
        );
    }
}
