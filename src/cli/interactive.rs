//! Opening a session for an interactive front door (the REPL, `cogni
//! acp`): the configuration for its directory, its mode, the sandbox
//! check, the session file (new or resumed) and the agents it may
//! delegate to.

use super::mode::{Mode, Modes};
use super::persist::{self, Persist, Resume};
use super::PolicyArgs;
use super::{setup, ConfigArgs};
use crate::agent::delegate::DelegationLimits;
use crate::agent::{start_session, Session, SessionConfig};
use crate::config::ConfigFile;
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
    pub delegation: DelegationLimits,
    pub mcp: McpConfig,
    /// Warnings for the user (agent cards that could not be read).
    pub problems: Vec<String>,
    /// The directory is trusted: its own commands load.
    pub project_trusted: bool,
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
    let flags = ConfigFile {
        sandbox_mode: options.policy.sandbox_mode(),
        approval_policy: options.policy.approval,
        ..Default::default()
    };
    let loaded = setup::load(&options.common, launch_dir, cwd, flags)?;
    let home = loaded.home;
    let catalog = super::agents::catalog(&loaded.config, &home);
    let mut config = loaded.config.session;
    let redact = persist::redactor([&config]);
    setup::init_logging(&home, redact.clone());
    let modes = Modes::of(&config);
    if let Some(mode) = options.mode {
        mode.apply(&mut config, modes);
    }
    setup::check_sandbox(
        config.sandbox_policy.mode,
        options.policy.no_sandbox,
        &config.cwd,
    )?;
    let store = Store::new(&home);
    let persist = Persist {
        store: store.clone(),
        enabled: options.persist,
        resume,
        fork,
    };
    persist.prepare(&mut config)?;
    let mut session = start_session(config.clone()).map_err(|e| e.to_string())?;
    let file = persist.attach(&mut session, redact.clone())?;
    let delegation = loaded.config.delegation;
    session.set_delegation(super::agents::registry(&config, &catalog.cards), delegation);
    Ok(Opened {
        session,
        mode: Mode::of(&config),
        config,
        file,
        store,
        redact,
        modes,
        home,
        agents: catalog.cards,
        delegation,
        mcp: loaded.config.mcp,
        problems: catalog.problems,
        project_trusted: loaded.config.project_trusted,
    })
}
