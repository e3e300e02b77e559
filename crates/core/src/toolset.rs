//! The tools of a session as its configuration makes them (who approves
//! their calls belongs to the conversation: `session::Conversation`).

use super::turn_context::TurnContext;
use cogni_sandbox::Workspace;
use cogni_tools::editor::Files;
use cogni_tools::fs::CommitGate;
use cogni_tools::jobs::JobTable;
use cogni_tools::{ToolConfig, ToolContext, ToolRegistry};
use std::sync::Arc;

/// The tools of a session: what they are and what they see.
pub(crate) struct Toolset {
    pub(crate) registry: ToolRegistry,
    /// What every call's context shares; where calls run (the working
    /// directory, the sandbox policy) comes from the turn context, its one
    /// owner ([`Toolset::context`]).
    pub(crate) shared: Shared,
    /// Held-back tools found so far that the offered list shows.
    pub(crate) found_shown: usize,
}

/// The parts of a tool call's context that stay put between calls.
#[derive(Clone)]
pub(crate) struct Shared {
    /// `[tools]`.
    pub(crate) config: Arc<ToolConfig>,
    /// The conversation's background jobs.
    pub(crate) jobs: Arc<JobTable>,
    /// File changes of the running batch go through it (its stop closes
    /// it).
    pub(crate) commits: CommitGate,
    /// Where the file tools read and write text.
    pub(crate) files: Files,
    /// The working directory and writable roots, pinned.
    pub(crate) workspace: Arc<Workspace>,
}

impl Toolset {
    /// The context a call runs with: where the turn context says, with
    /// what the calls share.
    pub(crate) fn context(&self, place: &TurnContext) -> ToolContext {
        let Shared {
            config,
            jobs,
            commits,
            files,
            workspace,
        } = self.shared.clone();
        ToolContext {
            cwd: place.cwd.clone(),
            sandbox: place.sandbox_policy.clone(),
            config,
            jobs,
            commits,
            files,
            workspace,
        }
    }
}
