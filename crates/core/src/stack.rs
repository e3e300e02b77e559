//! The context stack: history as a stack the user (REPL `/context`) or a
//! later feature can edit between turns.
//!
//! The initial context (instructions and the environment blocks that open
//! the history) is never removed. Every operation keeps the pairing rule:
//! an operation whose cut would separate a tool call from its output takes
//! both, and reasoning left dangling at the top goes with its response.
//! When an operation changes what the model last saw of the environment, a
//! fresh `<environment_context>` block is appended so the model's view
//! matches the real policies. Checkpoints are snapshots, so a rollback
//! restores the history exactly, also past a compaction.

use super::compact::{compacted_history, loaded_skills};
use super::session::Session;
use cogni_protocol::{Content, HistoryItem, MessageTag, Role};
use cogni_provider::ProviderError;
use std::collections::HashSet;
use std::time::Instant;

/// Why a context-stack operation did nothing (history is unchanged).
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// A rollback to a checkpoint that was never made (the name given).
    #[error("no checkpoint named `{0}`")]
    NoCheckpoint(String),
    /// History holds only the initial context: there is no exchange to
    /// replace.
    #[error("there is nothing above the initial context")]
    Empty,
    /// The summary request failed.
    #[error("the model could not write a summary: {0}")]
    Summary(#[from] ProviderError),
}

/// The largest cut `<= k` (and `>= floor`) that keeps `history[..cut]`
/// valid: no call whose output lies above the cut, no reasoning on top.
fn safe_cut(history: &[HistoryItem], mut k: usize, floor: usize) -> usize {
    loop {
        let above: HashSet<&str> = history[k..]
            .iter()
            .filter_map(|i| match &i.content {
                Content::ToolOutput(o) => Some(o.call_id.as_str()),
                _ => None,
            })
            .collect();
        let mut cut = history[..k]
            .iter()
            .position(
                |i| matches!(&i.content, Content::ToolCall(c) if above.contains(c.id.as_str())),
            )
            .unwrap_or(k);
        while cut > floor && matches!(history[cut - 1].content, Content::Reasoning(_)) {
            cut -= 1;
        }
        let cut = cut.max(floor);
        if cut == k {
            return k;
        }
        k = cut;
    }
}

fn last_environment(history: &[HistoryItem]) -> Option<&HistoryItem> {
    history
        .iter()
        .rev()
        .find(|i| i.tag() == Some(MessageTag::Environment))
}

impl Session {
    /// Items of the initial context (instructions, environment), which
    /// stack operations never remove.
    pub fn initial_len(&self) -> usize {
        self.history.initial_len()
    }

    /// The names of the checkpoints, oldest first.
    pub fn checkpoints(&self) -> impl Iterator<Item = &str> {
        self.history
            .checkpoints
            .iter()
            .map(|(name, _)| name.as_str())
    }

    /// Remove the top `n` items (more when a call and its output would be
    /// split). Returns how many items were removed.
    pub fn pop(&mut self, n: usize) -> usize {
        let floor = self.initial_len();
        let k = self.history.len().saturating_sub(n).max(floor);
        let cut = safe_cut(&self.history, k, floor);
        let removed = self.history.len() - cut;
        if removed > 0 {
            self.set_stack(self.history[..cut].to_vec());
        }
        removed
    }

    /// Remember the history as it is now under `name` (an existing
    /// checkpoint of that name is replaced).
    pub fn checkpoint(&mut self, name: &str) {
        self.history.checkpoints.retain(|(n, _)| n != name);
        self.history
            .checkpoints
            .push((name.to_string(), self.history.to_vec()));
    }

    /// Go back to the history saved under `name`. Checkpoints are kept, so
    /// a rollback can be undone by rolling "forward" to a later one.
    pub fn rollback(&mut self, name: &str) -> Result<(), StackError> {
        let saved = self
            .history
            .checkpoints
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h.clone())
            .ok_or_else(|| StackError::NoCheckpoint(name.to_string()))?;
        self.set_stack(saved);
        Ok(())
    }

    /// Replace the top exchange (the latest user message and everything
    /// after it) with `summary`.
    pub fn replace_top(&mut self, summary: &str) -> Result<(), StackError> {
        let floor = self.initial_len();
        let top = self.history[floor..]
            .iter()
            .rposition(|i| i.role == Role::User && i.tag().is_none() && i.as_text().is_some())
            .map(|p| p + floor)
            .ok_or(StackError::Empty)?;
        let cut = safe_cut(&self.history, top, floor);
        let mut history = self.history[..cut].to_vec();
        history.push(HistoryItem::tagged(
            Role::User,
            MessageTag::Summary,
            format!("Summary of an earlier exchange:\n{summary}"),
        ));
        self.set_stack(history);
        Ok(())
    }

    /// Cut history back to its first `len` items (fewer when a call and
    /// its output would be split; never into the initial context).
    pub(crate) fn cut_history(&mut self, len: usize) {
        let floor = self.initial_len();
        let cut = safe_cut(&self.history, len.min(self.history.len()).max(floor), floor);
        if cut < self.history.len() {
            self.set_stack(self.history[..cut].to_vec());
        }
    }

    /// Drop everything above the initial context.
    pub fn reset(&mut self) {
        let floor = self.initial_len();
        self.set_stack(self.history[..floor].to_vec());
    }

    /// Replace the whole conversation with a model-written summary (the
    /// summary request of compaction). On failure history is unchanged.
    pub async fn summarize(&mut self) -> Result<(), StackError> {
        let started = Instant::now();
        let (summary, usage) = self.write_summary().await?;
        if let Some(usage) = usage {
            self.meter
                .metrics
                .record_model_request(&usage, None, started.elapsed());
        }
        // The instructions, the plan and the skills loaded stay.
        let skills = loaded_skills(&self.history);
        let keep: Vec<bool> = self
            .history
            .iter()
            .map(|i| {
                matches!(
                    i.tag(),
                    Some(
                        MessageTag::DeveloperInstructions
                            | MessageTag::UserInstructions
                            | MessageTag::Plan
                            | MessageTag::Skill
                    )
                ) || matches!(&i.content, Content::ToolOutput(o) if skills.contains(o.call_id.as_str()))
            })
            .collect();
        let environment = self.ctx.environment();
        let history = compacted_history(&self.history, &keep, environment.render(), &summary);
        self.environment = environment;
        self.history.tokens.stale = true;
        self.replace_history(history);
        Ok(())
    }

    /// Install an edited history; re-show the environment when the edit
    /// changed what the model last saw of it.
    fn set_stack(&mut self, mut history: Vec<HistoryItem>) {
        let before = last_environment(&self.history);
        let after = last_environment(&history);
        if before != after {
            let now = self.ctx.environment();
            let rendered = now.render();
            if after.and_then(|i| i.as_text()) != Some(rendered.as_str()) {
                history.push(HistoryItem::tagged(
                    Role::User,
                    MessageTag::Environment,
                    rendered,
                ));
            }
            self.environment = now;
        }
        self.history.tokens.stale = true;
        self.replace_history(history);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{start_session_with_provider, SessionConfig};
    use cogni_protocol::{AgentEvent, EditTool, ToolCall, ToolCallKind, ToolOutput};
    use cogni_provider::scripted::{Script, ScriptedProvider};
    use cogni_provider::{ProviderInfo, WireApi};
    use std::path::PathBuf;
    use std::sync::Arc;

    fn session(script: &str) -> Session {
        let mut info = ProviderInfo::new("fake", "", WireApi::Scripted);
        info.default_model = Some("scripted".into());
        let mut c = SessionConfig::new(info, PathBuf::from(crate::tests_cwd()));
        c.developer_instructions = Some("dev".into());
        c.tool_config.enabled = vec![];
        c.tool_config.edit_tool = Some(EditTool::None);
        let provider = Arc::new(ScriptedProvider::new(Script::parse(script).unwrap()));
        start_session_with_provider(c, provider).unwrap()
    }

    fn call(id: &str) -> HistoryItem {
        HistoryItem::tool_call(ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: "{}".into(),
            kind: ToolCallKind::Function,
        })
    }

    fn output(id: &str) -> HistoryItem {
        HistoryItem::tool_output(ToolOutput {
            call_id: id.into(),
            content: format!("out {id}"),
            is_error: false,
            command: None,
            images: Vec::new(),
        })
    }

    fn reasoning() -> HistoryItem {
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(cogni_protocol::Reasoning {
                id: None,
                text: "thinking".into(),
                encrypted: None,
                source: "responses".into(),
            }),
        }
    }

    /// Every call has exactly one output and every output its call.
    fn assert_paired(history: &[HistoryItem]) {
        for item in history {
            match &item.content {
                Content::ToolCall(c) => assert_eq!(
                    history
                        .iter()
                        .filter(
                            |i| matches!(&i.content, Content::ToolOutput(o) if o.call_id == c.id)
                        )
                        .count(),
                    1,
                    "call {} in {history:#?}",
                    c.id
                ),
                Content::ToolOutput(o) => assert!(
                    history
                        .iter()
                        .any(|i| matches!(&i.content, Content::ToolCall(c) if c.id == o.call_id)),
                    "output {} without its call",
                    o.call_id
                ),
                _ => {}
            }
        }
    }

    /// The session with a conversation: user, reasoning, text, two calls,
    /// their outputs, then a second user message and answer.
    fn with_conversation() -> Session {
        let mut s = session("");
        s.append(vec![
            HistoryItem::text(Role::User, "first"),
            reasoning(),
            HistoryItem::text(Role::Assistant, "running"),
            call("a"),
            call("b"),
            output("a"),
            output("b"),
            HistoryItem::text(Role::Assistant, "done 1"),
            HistoryItem::text(Role::User, "second"),
            HistoryItem::text(Role::Assistant, "done 2"),
        ]);
        s
    }

    #[test]
    fn pop_never_splits_a_call_from_its_output_nor_touches_the_initial_context() {
        let mut s = with_conversation();
        let initial = s.initial_len();
        assert_eq!(initial, 2, "developer instructions and environment");
        assert_eq!(s.pop(2), 2);
        assert_eq!(s.history().last().unwrap().as_text(), Some("done 1"));
        // Popping one item (output b) takes both calls and both outputs,
        // since call a's output sits above call b.
        assert_eq!(s.pop(2), 5, "done 1, outputs a and b, calls a and b");
        assert_eq!(s.history().last().unwrap().as_text(), Some("running"));
        assert_paired(s.history());
        // Text before reasoning: popping the text leaves no dangling reasoning.
        assert_eq!(s.pop(1), 2);
        assert_eq!(s.history().last().unwrap().as_text(), Some("first"));
        assert_eq!(s.pop(100), 1);
        assert_eq!(s.history().len(), initial);
        assert_eq!(s.pop(1), 0, "the initial context is never popped");
        assert_eq!(s.history().len(), initial);
    }

    #[test]
    fn pop_of_a_single_output_takes_its_call() {
        let mut s = session("");
        s.append(vec![
            HistoryItem::text(Role::User, "go"),
            call("x"),
            output("x"),
        ]);
        assert_eq!(s.pop(1), 2);
        assert_paired(s.history());
        assert_eq!(s.history().last().unwrap().as_text(), Some("go"));
    }

    #[test]
    fn checkpoint_and_rollback_restore_history_exactly() {
        let mut s = with_conversation();
        s.checkpoint("before");
        let saved = s.history().to_vec();
        s.append_note(Role::User, "third");
        s.pop(6);
        assert!(matches!(
            s.rollback("nope"),
            Err(StackError::NoCheckpoint(n)) if n == "nope"
        ));
        s.rollback("before").unwrap();
        assert_eq!(s.history(), saved.as_slice());
        assert_eq!(s.checkpoints().collect::<Vec<_>>(), ["before"]);
    }

    #[test]
    fn replace_top_and_reset() {
        let mut s = with_conversation();
        s.replace_top("asked twice, answered").unwrap();
        let last = s.history().last().unwrap();
        assert_eq!(last.tag(), Some(MessageTag::Summary));
        assert!(last.as_text().unwrap().contains("asked twice"));
        assert_eq!(
            s.history()[s.history().len() - 2].as_text(),
            Some("done 1"),
            "only the top exchange was replaced"
        );
        assert_paired(s.history());
        s.reset();
        assert_eq!(s.history().len(), s.initial_len());
        assert!(matches!(s.replace_top("x"), Err(StackError::Empty)));
    }

    #[test]
    fn removing_an_environment_diff_shows_the_current_environment_again() {
        let mut s = with_conversation();
        s.update_environment(None, Some(cogni_protocol::ApprovalPolicy::Never), None);
        s.append_note(Role::User, "after the change");
        s.pop(2);
        let last = s.history().last().unwrap();
        assert_eq!(last.tag(), Some(MessageTag::Environment));
        let text = last.as_text().unwrap();
        assert!(
            text.starts_with("<environment_context>") && text.contains("never"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn rollback_past_a_compaction_and_summarize() {
        let script = r#"
[[turns]]
text = "summary one"
[[turns]]
text = "summary two"
"#;
        let mut s = session(script);
        s.append(vec![
            HistoryItem::text(Role::User, "first"),
            call("a"),
            output("a"),
            HistoryItem::text(Role::Assistant, "done"),
        ]);
        s.checkpoint("cp");
        let saved = s.history().to_vec();
        let sink = |_e: AgentEvent| {};
        s.compact(&sink).await.unwrap();
        assert_ne!(s.history(), saved.as_slice(), "compacted");
        assert!(s
            .history()
            .iter()
            .any(|i| i.as_text().is_some_and(|t| t.contains("summary one"))));
        s.rollback("cp").unwrap();
        assert_eq!(s.history(), saved.as_slice());
        assert_paired(s.history());

        // A skill named and one the model loaded outlive the summary.
        s.append(vec![
            HistoryItem::tagged(Role::User, MessageTag::Skill, "<skill name=\"a\">"),
            HistoryItem::tool_call(ToolCall {
                id: "s".into(),
                name: "skill".into(),
                arguments: "{}".into(),
                kind: ToolCallKind::Function,
            }),
            HistoryItem::tool_output(ToolOutput {
                call_id: "s".into(),
                content: "<skill name=\"b\">".into(),
                is_error: false,
                command: None,
                images: Vec::new(),
            }),
        ]);
        s.summarize().await.unwrap();
        let texts: Vec<_> = s.history().iter().filter_map(|i| i.as_text()).collect();
        assert_eq!(texts.len(), 5, "{texts:?}");
        assert_eq!(texts[0], "dev");
        assert!(texts[1].starts_with("<environment_context>"));
        assert!(texts[2].contains("summary two"));
        assert_eq!(texts[3..], ["<skill name=\"a\">", "<skill name=\"b\">"]);
        assert_paired(s.history());
        assert_eq!(s.initial_len(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn restored_history_shows_a_changed_environment_and_reconfigure_keeps_the_conversation() {
        let mut saved = with_conversation();
        saved.update_environment(Some(PathBuf::from("/elsewhere")), None, None);
        let history = saved.history().to_vec();
        let mut s = session("");
        s.restore_history(history.clone());
        assert_eq!(&s.history()[..history.len()], history.as_slice());
        let last = s.history().last().unwrap();
        assert_eq!(last.tag(), Some(MessageTag::Environment));
        assert!(last.as_text().unwrap().contains("<cwd>/work/repo</cwd>"));

        let mut config = SessionConfig::new(
            ProviderInfo::new("fake", "", WireApi::Scripted),
            PathBuf::from(crate::tests_cwd()),
        );
        config.model_override = Some("no-such-model".into());
        config.developer_instructions = Some("new instructions".into());
        config.tool_config.enabled = vec![];
        config.tool_config.edit_tool = Some(EditTool::None);
        let conversation = s.history()[s.initial_len()..].to_vec();
        assert!(s.reconfigure(config.clone()).is_err());
        assert_eq!(s.context().model, "scripted", "unchanged on error");
        config.model_override = Some("gpt-4.1-mini".into());
        s.reconfigure(config).unwrap();
        assert_eq!(s.context().model, "gpt-4.1-mini");
        assert_eq!(s.history()[0].as_text(), Some("new instructions"));
        assert_eq!(&s.history()[s.initial_len()..], conversation.as_slice());
    }

    #[test]
    fn the_observer_sees_appends_and_replacements() {
        use cogni_protocol::HistoryObserver;
        use std::sync::Mutex;
        #[derive(Default)]
        struct Log(Mutex<Vec<String>>);
        impl HistoryObserver for Log {
            fn appended(&self, items: &[HistoryItem]) {
                self.0.lock().unwrap().push(format!("+{}", items.len()));
            }
            fn replaced(&self, history: &[HistoryItem]) {
                self.0.lock().unwrap().push(format!("={}", history.len()));
            }
        }
        let log = Arc::new(Log::default());
        let mut s = session("");
        s.set_history_observer(log.clone());
        s.append_note(Role::User, "hi");
        s.pop(1);
        assert_eq!(*log.0.lock().unwrap(), ["+1", "=2"]);
    }
}
