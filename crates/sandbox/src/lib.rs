//! Kernel enforcement of the sandbox policy for the processes tools start.
//!
//! One backend, on Linux: every command runs in fresh user, mount and PID
//! namespaces, with
//!
//! - **Landlock** (ABI v3 or newer): read and execute everywhere; write
//!   only under cwd and the writable roots (workspace-write), a private
//!   temporary directory and `/dev/null`-like devices. The write rights
//!   must be handled in full or the command is refused. Signals to
//!   processes outside the sandbox are refused where the kernel can
//!   (Landlock ABI v6 scopes).
//! - **read-only binds** of the protected paths under the writable roots,
//!   found afresh before each command (see [`protected`]), so `.git/hooks`
//!   stays out of reach even though its parent is writable;
//! - **seccomp**, when the network is off: `socket`/`socketpair` for any
//!   family but AF_UNIX, and io_uring, fail with EACCES (so UDP and DNS
//!   are closed too, not only TCP);
//! - **a PID namespace** whose init exits with the command, so the kernel
//!   kills every descendant (background jobs, `setsid` escapes) when the
//!   command ends; host processes cannot be named by pid from inside, and
//!   Landlock keeps their `/proc/<pid>` memory and environment closed
//!   (ptrace access across Landlock domains is refused). `/proc` itself
//!   stays the host's: mounting one per command cost 1 ms;
//! - **limits**: the process count (RLIMIT_NPROC inside the user namespace,
//!   and the namespace's `pid_max` on Linux 6.14+, which also holds for
//!   root), file size and CPU time when configured.
//!
//! [`probe`] checks once per process which of these the kernel offers;
//! without all of them there is no backend, and callers refuse to run
//! commands in read-only or workspace-write mode ([`Probe::backend`]).
//! This module imports only `protocol`; `tools::exec` installs a
//! [`Confined`] (a session's [`Confinement`] with one command's protected
//! paths) in the child it spawns.

#![deny(missing_docs)]

pub mod pinned;
pub mod protected;
pub mod redact;
pub mod sys;
pub mod workspace;

use cogni_protocol::{SandboxMode, SandboxPolicy};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(target_os = "linux")]
pub use linux::{enter_unconfined, fork_server, REQUIRED_LANDLOCK_ABI};
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as platform;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use other as platform;
#[cfg(not(target_os = "linux"))]
#[path = "unforked.rs"]
pub mod fork_server;
pub mod seatbelt;

pub use platform::BACKEND_NAME;
pub use workspace::{Root, Workspace};

/// Why a command cannot be confined.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This kernel or setup lacks what the backend needs.
    #[error("{0}")]
    Unavailable(Unavailable),
    /// Building the Landlock ruleset failed (the message says how).
    #[error("Landlock: {0}")]
    Landlock(String),
    /// Building the seccomp filter failed (the message says how).
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// A path of the policy (cwd, a writable root) could not be resolved
    /// or used.
    #[error("{path}: {source}")]
    Path {
        /// The path in question.
        path: PathBuf,
        /// What went wrong with it.
        source: io::Error,
    },
}

/// No backend: what is missing and what the user can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// Each missing piece, one readable line each (`Landlock ABI 2 is too
    /// old ...`, `seccomp: ...`, `namespaces: ...`).
    pub missing: Vec<String>,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no sandbox backend works on this system: {}. Commands are not run in read-only or \
             workspace-write mode without one. {}",
            self.missing.join("; "),
            platform::ENABLE_HINT
        )
    }
}

/// What the kernel offers, checked once per process.
#[derive(Debug, Clone)]
pub struct Probe {
    /// `uname -r`.
    pub kernel: String,
    /// The Landlock ABI version, or why there is none.
    pub landlock: Result<i32, String>,
    /// Seccomp filters, or why there are none.
    pub seccomp: Result<(), String>,
    /// User + mount + PID namespaces, or the step that failed.
    pub namespaces: Result<(), String>,
    /// `pid_max` is per PID namespace (Linux 6.14+).
    pub pid_max_per_namespace: bool,
    /// cogni runs as root (RLIMIT_NPROC does not apply to root).
    pub root: bool,
}

/// The probe, run on first use and cached. Cheap: three system calls and
/// one short-lived child.
pub fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(platform::run_probe)
}

/// Start [`probe`] on another thread, so its child runs while the caller
/// loads its configuration; a later [`probe`] waits for it.
pub fn probe_in_background() {
    std::thread::spawn(|| {
        probe();
    });
}

/// What a command may touch. Prepare it once per session (it holds the
/// Landlock ruleset), then [`Confinement::confine`] each command with the
/// protected paths found just before it.
#[derive(Debug)]
pub struct Confinement {
    /// What the platform's backend enters in each command.
    setup: platform::Setup,
    /// The real paths of the pinned cwd and writable roots (empty in
    /// read-only mode).
    workspace: Vec<PathBuf>,
    /// The workspace and the private temporary directory.
    write_roots: Vec<PathBuf>,
    network: bool,
}

/// A [`Confinement`] with one command's read-only binds: what a forked
/// child enters.
#[derive(Debug)]
pub struct Confined {
    confinement: Arc<Confinement>,
    binds: platform::Binds,
}

impl Confined {
    /// Enter the confinement. Returns in the process that must exec the
    /// command; the processes around it wait and never return.
    ///
    /// # Safety
    /// Call only in a forked child before exec (a `pre_exec` hook): it
    /// forks, creates namespaces and restricts the calling process.
    pub unsafe fn enter(&self) -> io::Result<()> {
        self.confinement.setup.enter(&self.binds)
    }

    /// The program and arguments that run `command` confined: `command`
    /// itself on Linux (the child enters the confinement), under
    /// `sandbox-exec` on macOS.
    pub fn argv(&self, command: &[String]) -> Vec<String> {
        self.confinement.setup.argv(command)
    }

    /// The session's confinement this command's was made from.
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }
}

impl Confinement {
    /// Prepare the confinement of `policy` (read-only or workspace-write)
    /// for commands run in `workspace` (its pinned roots are what
    /// workspace-write may write); `temp_dir` is the private temporary
    /// directory they may write. Blocking.
    pub fn new(
        policy: &SandboxPolicy,
        workspace: &Workspace,
        temp_dir: &Path,
    ) -> Result<Self, SandboxError> {
        probe().backend().map_err(SandboxError::Unavailable)?;
        let roots = match policy.mode {
            SandboxMode::WorkspaceWrite => {
                workspace.roots().map_err(|source| SandboxError::Path {
                    path: workspace.cwd().to_path_buf(),
                    source,
                })?
            }
            _ => &[],
        };
        let workspace: Vec<PathBuf> = roots.iter().map(|r| r.real.clone()).collect();
        let temp_dir = canonical(temp_dir)?;
        let mut write_roots = workspace.clone();
        write_roots.push(temp_dir.clone());
        let setup = platform::Setup::new(policy, roots, &workspace, &temp_dir, &write_roots)?;
        Ok(Confinement {
            setup,
            workspace,
            write_roots,
            network: policy.network_access,
        })
    }

    /// This confinement for one command, with the `protected` paths (found
    /// just before it) bound read-only.
    pub fn confine(
        self: &Arc<Self>,
        protected: &protected::Scan,
    ) -> Result<Confined, SandboxError> {
        let binds = self.setup.binds(protected)?;
        Ok(Confined {
            confinement: self.clone(),
            binds,
        })
    }

    /// The real paths of the pinned cwd and writable roots (none in
    /// read-only mode).
    pub fn workspace_roots(&self) -> &[PathBuf] {
        &self.workspace
    }

    /// The private temporary directory (canonical).
    pub fn temp_dir(&self) -> Option<&Path> {
        self.write_roots.last().map(PathBuf::as_path)
    }

    /// A note for the model when a failed command's output looks like the
    /// sandbox stopped it.
    pub fn explain_failure(&self, output: &str) -> Option<String> {
        const FS_SIGNS: &[&str] = &[
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
            // Landlock refuses links and renames across its rules so.
            "Invalid cross-device link",
        ];
        const NET_SIGNS: &[&str] = &[
            "connect",
            "resolve",
            "socket",
            "Network",
            "network",
            "Name or service",
        ];
        let fs = FS_SIGNS.iter().any(|s| output.contains(s));
        let net = !self.network && NET_SIGNS.iter().any(|s| output.contains(s));
        if !fs && !net {
            return None;
        }
        let roots: Vec<String> = self
            .write_roots
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        Some(format!(
            "note: the command ran in cogni's sandbox: it may write only under {} (.git, .cogni, \
             cogni.toml and AGENTS.md are read-only){}. A permission, read-only or network error \
             above likely comes from the sandbox, not from the command itself.",
            roots.join(", "),
            if self.network {
                ""
            } else {
                "; the network is off (only Unix sockets under those directories work)"
            }
        ))
    }
}

fn canonical(path: &Path) -> Result<PathBuf, SandboxError> {
    std::fs::canonicalize(path).map_err(|source| SandboxError::Path {
        path: path.to_path_buf(),
        source,
    })
}
