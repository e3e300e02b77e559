//! Opening a session for an interactive front door (the REPL, `cogni
//! acp`): the configuration for its directory, its mode, the sandbox
//! check, the session file (new or resumed) and the agents it may
//! delegate to.

use super::builder::{Checkpoints, SessionBuilder};
use super::mode::{Mode, Modes};
use super::persist::Resume;
use super::{ConfigArgs, PolicyArgs};
use crate::agent::{Session, SessionConfig};
use crate::mcp::McpConfig;
use crate::spec::cards::AgentCard;
use crate::store::{Redactor, SessionFile, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the user asked for on the command line.
#[derive(Debug, Clone)]
pub struct Options {
    pub common: ConfigArgs,
    /// `--sandbox`, `--approval`, `--no-sandbox`.
    pub policy: PolicyArgs,
    /// `--mode`: start in this mode instead of the configured policies'.
    pub mode: Option<Mode>,
    /// Save the session under $COGNI_HOME/sessions.
    pub persist: bool,
}

/// An open session and what its front door keeps of its setup.
pub struct Opened {
    pub session: Session,
    /// The configuration as loaded, with the mode applied.
    pub config: SessionConfig,
    pub file: Option<Arc<SessionFile>>,
    pub store: Store,
    pub redact: Redactor,
    pub mode: Mode,
    /// What the modes mean here (`--no-sandbox`, the configured approval
    /// policy).
    pub modes: Modes,
    /// `$COGNI_HOME`.
    pub home: PathBuf,
    pub agents: Vec<AgentCard>,
    pub mcp: McpConfig,
    /// Warnings for the user (agent cards that could not be read).
    pub problems: Vec<String>,
    /// The directory is trusted: its own commands load.
    pub project_trusted: bool,
    /// `[repl]`: the status line, notifications.
    pub repl: crate::config::Repl,
}

/// Open a session in `cwd` (`launch_dir`: where cogni was started, for
/// relative paths in the options), resuming `resume` if given.
pub fn open(
    options: &Options,
    launch_dir: &Path,
    cwd: PathBuf,
    resume: Option<Resume>,
    fork: bool,
) -> Result<Opened, String> {
    let configured = SessionBuilder::new(
        options.common.clone(),
        options.policy.clone(),
        launch_dir.to_path_buf(),
        cwd,
    )
    .mode(options.mode)
    .persist(options.persist, resume, fork)
    .checkpoints(Checkpoints::Interactive)
    .configure()?;
    let (session, file) = configured.start(None)?;
    Ok(Opened {
        session,
        store: configured.store().clone(),
        config: configured.config,
        file,
        redact: configured.redact,
        mode: configured.mode,
        modes: configured.modes,
        home: configured.home,
        agents: configured.cards,
        mcp: configured.mcp,
        problems: configured.problems,
        repl: configured.repl,
        project_trusted: configured.project_trusted,
    })
}
