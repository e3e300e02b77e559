//! Opening a session for an interactive front door (the REPL, `cogni
//! acp`): the configuration for its directory, its mode, the sandbox
//! check, the session file (new or resumed) and the agents it may
//! delegate to.

use super::builder::{Checkpoints, Configured, SessionBuilder};
use super::mode::Mode;
use super::persist::Resume;
use super::{ConfigArgs, PolicyArgs};
use crate::agent::Session;
use crate::store::SessionFile;
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

/// An open session, with its session file and what the builder checked
/// (configuration with the mode applied, mode, home, agents, servers,
/// `[repl]`, trust), which the front door keeps.
pub struct Opened {
    pub session: Session,
    pub file: Option<Arc<SessionFile>>,
    pub configured: Configured,
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
        file,
        configured,
    })
}
