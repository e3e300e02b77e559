//! The modes of an interactive session (the REPL's `/mode`, `cogni acp`'s
//! session modes): how much the agent may do on its own, as an approval
//! policy and a sandbox mode, and the note that tells the model it is
//! planning.

use crate::agent::{Session, SessionConfig};
use crate::protocol::{ApprovalPolicy, Role, SandboxMode};

/// Told to the model when plan mode starts and ends.
const PLAN_NOTE: &str = "Plan mode: the sandbox is read-only. Do not change files or run commands that change anything. Investigate with read-only tools and answer with a plan: the steps, the files to change, the risks. The user switches to act mode to carry it out.";
const PLAN_OVER_NOTE: &str = "Plan mode is over: you may change files and run commands again, within the sandbox and approval policy.";

/// How much the agent may do on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read-only sandbox; the model is told to plan.
    Plan,
    /// Workspace-write; asks as the configured approval policy says.
    Act,
    /// Workspace-write; never asks.
    Auto,
}

/// What the modes mean for one session, from its configuration: whether
/// commands run unconfined (`--no-sandbox`, a danger-full-access config),
/// and act mode's approval policy (the configured one; `on-request` when
/// that is `never`, which is auto mode's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    pub unconfined: bool,
    pub act: ApprovalPolicy,
}

impl Modes {
    /// The modes of a session configured as `config` (before any mode is
    /// applied to it).
    pub fn of(config: &SessionConfig) -> Self {
        Modes {
            unconfined: config.sandbox_policy.mode == SandboxMode::DangerFullAccess,
            act: match config.approval_policy {
                ApprovalPolicy::Never => ApprovalPolicy::OnRequest,
                other => other,
            },
        }
    }
}

/// When a policy asks the user, in a few words.
pub fn asks(policy: ApprovalPolicy) -> &'static str {
    match policy {
        ApprovalPolicy::Untrusted => "asks before anything not known to be safe",
        ApprovalPolicy::OnRequest => {
            "runs in the sandbox without asking; asks when the model wants to leave it"
        }
        ApprovalPolicy::OnFailure => {
            "runs in the sandbox without asking; asks to retry a command it stopped without it"
        }
        ApprovalPolicy::Never => "never asks",
    }
}

impl Mode {
    /// Every mode, in the order they are offered.
    pub const ALL: [Mode; 3] = [Mode::Plan, Mode::Act, Mode::Auto];

    /// The mode Shift-Tab switches to: plan, act, auto, then plan again.
    pub fn next(self) -> Mode {
        let at = Mode::ALL.iter().position(|m| *m == self).unwrap_or(0);
        Mode::ALL[(at + 1) % Mode::ALL.len()]
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::Act => "act",
            Mode::Auto => "auto",
        }
    }

    /// What the mode does in a session with `modes`, in one line: its
    /// sandbox and when it asks.
    pub fn description(self, modes: Modes) -> String {
        let (approval, sandbox) = self.policies(modes);
        let what = match self {
            Mode::Plan => "investigate and plan, change nothing",
            Mode::Act | Mode::Auto => "change files and run commands",
        };
        format!(
            "{what}: sandbox {}, approval {} ({})",
            sandbox.as_str(),
            approval.as_str(),
            asks(approval)
        )
    }

    /// The mode's policies in a session with `modes`: unconfined, act and
    /// auto run commands without the kernel sandbox.
    pub fn policies(self, modes: Modes) -> (ApprovalPolicy, SandboxMode) {
        let write = if modes.unconfined {
            SandboxMode::DangerFullAccess
        } else {
            SandboxMode::WorkspaceWrite
        };
        match self {
            Mode::Plan => (ApprovalPolicy::Untrusted, SandboxMode::ReadOnly),
            Mode::Act => (modes.act, write),
            Mode::Auto => (ApprovalPolicy::Never, write),
        }
    }

    /// The mode the configured policies come closest to.
    pub fn of(config: &SessionConfig) -> Mode {
        match (config.sandbox_policy.mode, config.approval_policy) {
            (SandboxMode::ReadOnly, _) => Mode::Plan,
            (_, ApprovalPolicy::Never) => Mode::Auto,
            _ => Mode::Act,
        }
    }

    /// `config` with this mode's policies.
    pub fn apply(self, config: &mut SessionConfig, modes: Modes) {
        let (approval, sandbox) = self.policies(modes);
        config.approval_policy = approval;
        config.sandbox_policy.mode = sandbox;
    }

    /// Switch `session` (configured as `config`) to this mode: the new
    /// policies are told to the model as an environment diff, and the
    /// plan note follows with the next message ([`sync_plan_note`]).
    pub fn switch(self, session: &mut Session, config: &mut SessionConfig, modes: Modes) {
        let (approval, sandbox) = self.policies(modes);
        let mut policy = config.sandbox_policy.clone();
        policy.mode = sandbox;
        session.update_environment(None, Some(approval), Some(policy));
        self.apply(config, modes);
    }
}

/// What `/mode` says with no argument: the current mode, then what each
/// does here.
pub fn listing(current: Mode, modes: Modes) -> String {
    let mut text = format!("mode: {}", current.name());
    for mode in Mode::ALL {
        text.push_str(&format!(
            "\n  {:<5} {}",
            mode.name(),
            mode.description(modes)
        ));
    }
    text
}

/// What `/mode NAME` says once switched.
pub fn switched(mode: Mode, modes: Modes) -> String {
    format!("mode: {} ({})", mode.name(), mode.description(modes))
}

/// Tell the model whether it is in plan mode, unless its history already
/// says so (mode switches, resumed sessions, a popped note).
pub fn sync_plan_note(session: &mut Session, mode: Mode) {
    let planning = session
        .history()
        .iter()
        .rev()
        .filter(|i| i.role == Role::Developer)
        .find_map(|i| match i.as_text() {
            Some(PLAN_NOTE) => Some(true),
            Some(PLAN_OVER_NOTE) => Some(false),
            _ => None,
        })
        .unwrap_or(false);
    match (mode == Mode::Plan, planning) {
        (true, false) => session.append_note(Role::Developer, PLAN_NOTE),
        (false, true) => session.append_note(Role::Developer, PLAN_OVER_NOTE),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::start_session_with_provider;
    use crate::provider::scripted::{Script, ScriptedProvider};
    use crate::provider::{ProviderInfo, WireApi};
    use std::path::PathBuf;
    use std::sync::Arc;

    #[cfg(unix)]
    #[test]
    fn the_plan_note_follows_the_mode_once() {
        let mut info = ProviderInfo::new("scripted", "", WireApi::Scripted);
        info.default_model = Some("scripted".into());
        let config = SessionConfig::new(info, PathBuf::from("/repo"));
        let provider = Arc::new(ScriptedProvider::new(Script::default()));
        let mut session = start_session_with_provider(config, provider).unwrap();
        let notes = |s: &Session| -> Vec<String> {
            s.history()
                .iter()
                .filter(|i| i.role == Role::Developer)
                .filter_map(|i| i.as_text().map(String::from))
                .collect()
        };
        sync_plan_note(&mut session, Mode::Act);
        assert!(notes(&session).is_empty());
        sync_plan_note(&mut session, Mode::Plan);
        sync_plan_note(&mut session, Mode::Plan);
        assert_eq!(notes(&session), [PLAN_NOTE]);
        sync_plan_note(&mut session, Mode::Auto);
        sync_plan_note(&mut session, Mode::Act);
        assert_eq!(notes(&session), [PLAN_NOTE, PLAN_OVER_NOTE]);
    }

    #[test]
    fn names_parse_back() {
        for mode in Mode::ALL {
            assert_eq!(Mode::parse(mode.name()), Some(mode));
        }
        assert_eq!(Mode::parse("code"), None);
    }
}
