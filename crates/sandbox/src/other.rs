//! Platforms without a sandbox backend in cogni: Windows today.
//! The probe says so, [`crate::Confinement::new`] refuses, and commands run
//! only unconfined (`--sandbox danger-full-access`, `cogni run
//! --no-sandbox`), as docs/sandbox.md says for each platform.

use super::{protected, Probe, Root, SandboxError, Unavailable};
use cogni_protocol::SandboxPolicy;
use std::io;
use std::path::{Path, PathBuf};

/// The backend in force, for people: none.
pub const BACKEND_NAME: &str = "none on this platform";

/// What to do when the backend is missing.
pub(crate) const ENABLE_HINT: &str = "Run commands unconfined, at your own risk, with \
     --sandbox danger-full-access (or `cogni run --no-sandbox`), ideally with \
     --approval untrusted so each command is asked first";

/// The platform's name, for people.
const PLATFORM: &str = if cfg!(windows) {
    "Windows"
} else {
    "this operating system"
};

impl Probe {
    /// The backend, or why there is none: none here.
    pub fn backend(&self) -> Result<String, Unavailable> {
        Err(Unavailable {
            missing: vec![format!(
                "cogni has no sandbox backend for {PLATFORM} yet (Landlock, seccomp and \
                 namespaces are Linux's)"
            )],
        })
    }

    /// How the process count is capped, for people.
    pub fn process_limit(&self) -> &'static str {
        "none: there is no sandbox backend on this platform"
    }
}

pub(crate) fn run_probe() -> Probe {
    let linux_only = || Err(format!("Linux only; this is {PLATFORM}"));
    Probe {
        kernel: std::env::consts::OS.to_string(),
        landlock: linux_only().map(|()| 0),
        seccomp: linux_only(),
        namespaces: linux_only(),
        pid_max_per_namespace: false,
        root: false,
    }
}

/// Never made: [`Probe::backend`] refuses first.
#[derive(Debug)]
pub(crate) enum Setup {}

/// One command's binds: none.
pub(crate) type Binds = ();

impl Setup {
    pub(crate) fn new(
        _policy: &SandboxPolicy,
        _roots: &[Root],
        _workspace: &[PathBuf],
        _temp_dir: &Path,
        _write_roots: &[PathBuf],
    ) -> Result<Self, SandboxError> {
        Err(SandboxError::Unavailable(
            crate::probe().backend().unwrap_err(),
        ))
    }

    pub(crate) fn binds(&self, _protected: &protected::Scan) -> Result<Binds, SandboxError> {
        match *self {}
    }

    /// # Safety
    /// Never called: no setup exists.
    pub(crate) unsafe fn enter(&self, _binds: &Binds) -> io::Result<()> {
        match *self {}
    }

    /// Never called: no setup exists.
    pub(crate) fn argv(&self, _command: &[String]) -> Vec<String> {
        match *self {}
    }
}
