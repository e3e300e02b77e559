//! Notification hooks: cogni wants the user's attention. Claude Code's
//! `Notification` event, with its `notification_type` as the matcher:
//! `permission_prompt` when an approval question waits for an answer,
//! `idle_prompt` when the REPL has waited for input after a turn.
//!
//! They are not effects: nothing waits for them. Each notice starts the
//! matching hooks one after the other on a task of their own (the
//! question is asked at once, beside them), each within its timeout; what
//! they print is ignored, and how they ended goes to the log.
//! [`Pending`] remembers the tasks, so that a session that ends waits for
//! the notices still being delivered instead of killing their hooks.

use super::contract::{self, EventData};
use super::{hook_env, HookEvent, HookSpec};
use crate::effects::command;
use cogni_protocol::Pins;
use regex::Regex;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

/// What cogni wants the user's attention for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// An approval question about a call of `tool` waits for an answer.
    Permission {
        /// The tool the question is about (`shell`, `apply_patch`, ...).
        tool: String,
    },
    /// The REPL has waited for input since a turn ended.
    Idle,
}

impl Notice {
    /// Its `notification_type` (Claude Code's), which matchers match.
    pub fn kind(&self) -> &'static str {
        match self {
            Notice::Permission { .. } => "permission_prompt",
            Notice::Idle => "idle_prompt",
        }
    }

    /// The `message` a hook gets.
    pub fn message(&self) -> String {
        match self {
            Notice::Permission { tool } => format!("cogni needs your permission to use {tool}"),
            Notice::Idle => "cogni is waiting for your input".to_string(),
        }
    }
}

/// The tasks of notices still being delivered. Cheap to clone (shared):
/// it lasts as long as the session, across reconfigurations.
#[derive(Debug, Clone, Default)]
pub struct Pending(Arc<Mutex<Vec<JoinHandle<()>>>>);

impl Pending {
    fn push(&self, task: JoinHandle<()>) {
        if let Ok(mut tasks) = self.0.lock() {
            tasks.retain(|t| !t.is_finished());
            tasks.push(task);
        }
    }

    /// Wait until every notice started so far was delivered (each hook is
    /// bounded by its timeout).
    pub async fn settle(&self) {
        let tasks = self
            .0
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// One `[[hooks.Notification]]` entry, ready to run.
#[derive(Debug, Clone)]
struct Hook {
    /// `hooks.Notification[N]`.
    name: String,
    spec: HookSpec,
    matcher: Option<Regex>,
}

/// A session's Notification hooks.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    hooks: Arc<Vec<Hook>>,
    pending: Pending,
}

/// The session a notice is about, as its hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct About<'a> {
    /// Its hooks' `session_id`, `transcript_path` and `cwd`.
    pub session: contract::Session<'a>,
    /// The workspace files the user's commands run, checked before each
    /// hook runs.
    pub pins: &'a Pins,
}

impl Notifications {
    /// The Notification hooks among `specs`, in config order; their tasks
    /// go to `pending`.
    pub fn new(specs: &[HookSpec], pending: Pending) -> Self {
        let hooks = specs
            .iter()
            .filter(|s| s.event == HookEvent::Notification)
            .enumerate()
            .map(|(n, spec)| Hook {
                name: format!("hooks.Notification[{n}]"),
                matcher: spec.regex(),
                spec: spec.clone(),
            })
            .collect();
        Notifications {
            hooks: Arc::new(hooks),
            pending,
        }
    }

    /// Start the hooks whose matcher matches `notice`, in the background.
    /// Needs a tokio runtime (the engine's) when any matches.
    pub fn fire(&self, about: About<'_>, notice: &Notice) {
        let kind = notice.kind();
        let hooks: Vec<Hook> = self
            .hooks
            .iter()
            .filter(|h| h.matcher.as_ref().is_none_or(|m| m.is_match(kind)))
            .cloned()
            .collect();
        if hooks.is_empty() {
            return;
        }
        let message = notice.message();
        let input = contract::input(
            about.session,
            &EventData::Notification {
                kind,
                message: &message,
            },
        );
        let cwd: PathBuf = about.session.cwd.to_path_buf();
        let env = hook_env(about.session.cwd, about.session.id);
        let pins = about.pins.clone();
        self.pending.push(tokio::spawn(async move {
            for hook in hooks {
                let ran = command::run(
                    &hook.spec.command,
                    &input,
                    &cwd,
                    &env,
                    hook.spec.timeout,
                    &pins,
                )
                .await;
                match ran {
                    Ok(ran) if ran.exit_code == Some(0) => tracing::info!(
                        hook = %hook.name,
                        command = %hook.spec.command,
                        notification_type = kind,
                        took = ?ran.duration,
                        "notification hook ran"
                    ),
                    Ok(ran) => tracing::warn!(
                        hook = %hook.name,
                        command = %hook.spec.command,
                        notification_type = kind,
                        status = %ran.status(hook.spec.timeout),
                        stderr = %ran.stderr,
                        "notification hook failed"
                    ),
                    Err(e) => tracing::warn!(
                        hook = %hook.name,
                        command = %hook.spec.command,
                        "notification hook could not start: {e}"
                    ),
                }
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

    fn spec(event: HookEvent, matcher: Option<&str>, command: String) -> HookSpec {
        HookSpec {
            event,
            matcher: matcher.map(String::from),
            command,
            timeout: Duration::from_secs(5),
            on_failure: Default::default(),
        }
    }

    #[test]
    fn notices_read_as_claude_codes() {
        let ask = Notice::Permission {
            tool: "shell".into(),
        };
        assert_eq!(ask.kind(), "permission_prompt");
        assert_eq!(ask.message(), "cogni needs your permission to use shell");
        assert_eq!(Notice::Idle.kind(), "idle_prompt");
        assert_eq!(Notice::Idle.message(), "cogni is waiting for your input");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn matching_hooks_get_the_notice_and_the_session_waits_for_them() {
        let dir = tempfile::tempdir().unwrap();
        let out = |name: &str| dir.path().join(name);
        let specs = [
            spec(
                HookEvent::Notification,
                Some("permission_prompt"),
                format!("sleep 0.2; cat > '{}'", out("asked.json").display()),
            ),
            spec(
                HookEvent::Notification,
                Some("idle_prompt"),
                format!("cat > '{}'", out("idle.json").display()),
            ),
            spec(
                HookEvent::Stop,
                None,
                format!("touch '{}'", out("stop").display()),
            ),
        ];
        let pending = Pending::default();
        let notifications = Notifications::new(&specs, pending.clone());
        let pins = Pins::default();
        let about = About {
            session: contract::Session {
                id: "s-1",
                transcript_path: None,
                cwd: dir.path(),
            },
            pins: &pins,
        };
        let shell = Notice::Permission {
            tool: "shell".into(),
        };
        notifications.fire(about, &shell);
        assert!(!out("asked.json").exists(), "nothing waits for the hook");
        pending.settle().await;
        let got: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out("asked.json")).unwrap()).unwrap();
        assert_eq!(
            got,
            serde_json::json!({
                "session_id": "s-1",
                "transcript_path": null,
                "cwd": dir.path(),
                "hook_event_name": "Notification",
                "message": "cogni needs your permission to use shell",
                "title": "cogni",
                "notification_type": "permission_prompt",
            })
        );
        assert!(!out("idle.json").exists(), "its matcher is idle_prompt");
        assert!(!Path::new(&out("stop")).exists(), "not a Notification hook");
    }
}
