//! The macOS backend: Seatbelt. Each confined command runs under
//! `/usr/bin/sandbox-exec` with the profile [`crate::seatbelt`] makes of
//! the session's policy (reads everywhere, writes only under the
//! workspace's roots and the private temporary directory, protected names
//! and pinned files kept, the network off unless allowed); its process
//! group is what cogni kills. There are no resource limits and no PID
//! namespace here: a command's background processes outlive it unless
//! they stay in its process group.

use super::seatbelt::{self, Profile, SANDBOX_EXEC};
use super::{protected, Probe, Root, SandboxError, Unavailable};
use cogni_protocol::SandboxPolicy;
use std::io;
use std::path::{Path, PathBuf};

/// The backend in force, for people.
pub const BACKEND_NAME: &str = "seatbelt (sandbox-exec)";

/// What to do when the backend is missing.
pub(crate) const ENABLE_HINT: &str = "macOS ships /usr/bin/sandbox-exec; without it, run \
     commands unconfined, at your own risk, with --sandbox danger-full-access (or `cogni run \
     --no-sandbox`)";

impl Probe {
    /// The backend, or why there is none.
    pub fn backend(&self) -> Result<String, Unavailable> {
        match &self.namespaces {
            Ok(()) => Ok(BACKEND_NAME.to_string()),
            Err(e) => Err(Unavailable {
                missing: vec![e.clone()],
            }),
        }
    }

    /// How the process count is capped, for people.
    pub fn process_limit(&self) -> &'static str {
        "none: Seatbelt sets no process limit"
    }
}

pub(crate) fn run_probe() -> Probe {
    let linux_only = || Err("Linux only; this is macOS".to_string());
    Probe {
        kernel: std::env::consts::OS.to_string(),
        landlock: linux_only().map(|()| 0),
        seccomp: linux_only(),
        // Where the backend's own check goes: sandbox-exec is there.
        namespaces: if Path::new(SANDBOX_EXEC).is_file() {
            Ok(())
        } else {
            Err(format!("{SANDBOX_EXEC} is missing"))
        },
        pid_max_per_namespace: false,
        // SAFETY: geteuid has no preconditions.
        root: unsafe { libc::geteuid() } == 0,
    }
}

/// The session's profile.
#[derive(Debug)]
pub(crate) struct Setup {
    profile: Profile,
}

/// One command's binds: none (protected names are rules of the profile).
pub(crate) type Binds = ();

impl Setup {
    pub(crate) fn new(
        policy: &SandboxPolicy,
        _roots: &[Root],
        workspace: &[PathBuf],
        temp_dir: &Path,
        _write_roots: &[PathBuf],
    ) -> Result<Self, SandboxError> {
        let pinned: Vec<PathBuf> = policy
            .pins
            .files
            .iter()
            .map(|p| p.path.clone())
            .filter(|p| workspace.iter().any(|r| p.starts_with(r)))
            .collect();
        let profile = seatbelt::profile(&seatbelt::Policy {
            write_roots: workspace,
            temp_dir: Some(temp_dir),
            pinned: &pinned,
            network: policy.network_access,
        });
        Ok(Setup { profile })
    }

    pub(crate) fn binds(&self, _protected: &protected::Scan) -> Result<Binds, SandboxError> {
        Ok(())
    }

    /// Nothing to do in the child: sandbox-exec applies the profile.
    ///
    /// # Safety
    /// As [`crate::Confined::enter`].
    pub(crate) unsafe fn enter(&self, _binds: &Binds) -> io::Result<()> {
        Ok(())
    }

    /// `command` under the profile.
    pub(crate) fn argv(&self, command: &[String]) -> Vec<String> {
        self.profile.argv(command)
    }
}
