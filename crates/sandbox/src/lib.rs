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

mod child;
pub mod fork_server;
mod forked;
pub mod pinned;
pub mod protected;
mod reaper;
pub mod redact;
mod rules;
mod unix_guard;
pub mod workspace;

use cogni_protocol::{SandboxMode, SandboxPolicy};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub use rules::REQUIRED_LANDLOCK_ABI;
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
             workspace-write mode without one. Either enable what is missing (Linux 6.2+ with \
             `landlock` in the `lsm=` boot parameter, seccomp, unprivileged user namespaces: \
             sysctl kernel.unprivileged_userns_clone=1 or \
             kernel.apparmor_restrict_unprivileged_userns=0), or run commands unconfined, at \
             your own risk, with --sandbox danger-full-access (or `cogni run --no-sandbox`)",
            self.missing.join("; ")
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

/// The backend in force, for people.
pub const BACKEND_NAME: &str = "landlock + seccomp + user/mount/pid namespaces";

impl Probe {
    /// The backend, or why there is none.
    pub fn backend(&self) -> Result<String, Unavailable> {
        let mut missing = Vec::new();
        match &self.landlock {
            Ok(abi) if *abi >= REQUIRED_LANDLOCK_ABI => {}
            Ok(abi) => missing.push(format!(
                "Landlock ABI {abi} is too old (need {REQUIRED_LANDLOCK_ABI}+, Linux 6.2+)"
            )),
            Err(e) => missing.push(format!("Landlock: {e}")),
        }
        if let Err(e) = &self.seccomp {
            missing.push(format!("seccomp: {e}"));
        }
        if let Err(e) = &self.namespaces {
            missing.push(format!("namespaces: {e}"));
        }
        if missing.is_empty() {
            let abi = self.landlock.as_ref().copied().unwrap_or_default();
            Ok(format!("{BACKEND_NAME} (Landlock ABI {abi})"))
        } else {
            Err(Unavailable { missing })
        }
    }

    /// How the process count is capped, for people.
    pub fn process_limit(&self) -> &'static str {
        match (self.pid_max_per_namespace, self.root) {
            (true, _) => "RLIMIT_NPROC in the user namespace + the PID namespace's pid_max",
            (false, false) => "RLIMIT_NPROC in the user namespace",
            (false, true) => {
                "none: root is exempt from RLIMIT_NPROC and this kernel has no per-namespace pid_max (Linux 6.14+)"
            }
        }
    }
}

/// The probe, run on first use and cached. Cheap: three system calls and
/// one short-lived child.
pub fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(run_probe)
}

/// Start [`probe`] on another thread, so its child runs while the caller
/// loads its configuration; a later [`probe`] waits for it.
pub fn probe_in_background() {
    std::thread::spawn(|| {
        probe();
    });
}

fn run_probe() -> Probe {
    let kernel = kernel_release();
    Probe {
        landlock: landlock_abi(),
        seccomp: seccomp_available(),
        namespaces: namespaces_work(),
        pid_max_per_namespace: version_at_least(&kernel, 6, 14),
        // SAFETY: geteuid has no preconditions.
        root: unsafe { libc::geteuid() } == 0,
        kernel,
    }
}

fn kernel_release() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable utsname.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return String::new();
    }
    let bytes: Vec<u8> = uts
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn version_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

fn landlock_abi() -> Result<i32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 this only asks for the ABI
    // version; no memory is read or written.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if abi >= 1 {
        return Ok(abi as i32);
    }
    Err(match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOSYS) => {
            "the kernel has no Landlock support (Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)"
                .into()
        }
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built but not enabled (add `landlock` to the `lsm=` boot parameter)".into()
        }
        _ => format!("not available: {}", io::Error::last_os_error()),
    })
}

fn seccomp_available() -> Result<(), String> {
    // SAFETY: PR_GET_SECCOMP only reads this thread's seccomp mode.
    if unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } < 0 {
        return Err(format!(
            "the kernel has no seccomp support: {}",
            io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Fork a child that creates the namespaces the backend needs and reports
/// the step that failed, if any.
fn namespaces_work() -> Result<(), String> {
    let maps = IdMaps::current();
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", io::Error::last_os_error()));
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // SAFETY: the child only makes async-signal-safe system calls (unshare,
    // open, write, close, mount, _exit) on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: see above; the child never returns.
        unsafe {
            libc::close(read_end);
            let step: i32 = match probe_child(&maps) {
                Ok(()) => 0,
                Err(step) => step,
            };
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let report = [step, errno];
            libc::write(
                write_end,
                report.as_ptr().cast(),
                std::mem::size_of_val(&report),
            );
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(write_end) };
    if pid < 0 {
        // SAFETY: closing the read end we own.
        unsafe { libc::close(read_end) };
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    let mut report = [0i32; 2];
    // SAFETY: reading at most the size of `report` into it; then reaping
    // the child we forked and closing our descriptor.
    let n = unsafe {
        let n = libc::read(
            read_end,
            report.as_mut_ptr().cast(),
            std::mem::size_of_val(&report),
        );
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        libc::close(read_end);
        n
    };
    if n != std::mem::size_of_val(&report) as isize {
        return Err("the probe process died".into());
    }
    let step = match report[0] {
        0 => return Ok(()),
        1 => {
            "creating user, mount and PID namespaces (unprivileged user namespaces may be disabled)"
        }
        2 => "writing the uid/gid maps of the user namespace",
        _ => "making mounts private in the new mount namespace",
    };
    Err(format!(
        "{step}: {}",
        io::Error::from_raw_os_error(report[1])
    ))
}

/// # Safety
/// Runs in the forked probe child: async-signal-safe calls only.
unsafe fn probe_child(maps: &IdMaps) -> Result<(), i32> {
    if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID) != 0 {
        return Err(1);
    }
    for (path, data) in [
        (c"/proc/self/setgroups", b"deny".as_slice()),
        (c"/proc/self/uid_map", &maps.uid),
        (c"/proc/self/gid_map", &maps.gid),
    ] {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 || libc::write(fd, data.as_ptr().cast(), data.len()) != data.len() as isize {
            return Err(2);
        }
        libc::close(fd);
    }
    if libc::mount(
        std::ptr::null(),
        c"/".as_ptr(),
        std::ptr::null(),
        libc::MS_REC | libc::MS_PRIVATE,
        std::ptr::null(),
    ) != 0
    {
        return Err(3);
    }
    Ok(())
}

/// The user namespace maps the caller's own uid and gid onto themselves,
/// so files keep their owner and commands run without capabilities.
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl IdMaps {
    fn current() -> Self {
        // SAFETY: geteuid/getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        IdMaps {
            uid: format!("{uid} {uid} 1").into_bytes(),
            gid: format!("{gid} {gid} 1").into_bytes(),
        }
    }
}

/// The lowest pid_max the kernel accepts.
const PID_MAX_MIN: u64 = 301;

/// What a command may touch. Prepare it once per session (it holds the
/// Landlock ruleset), then [`Confinement::confine`] each command with the
/// protected paths found just before it.
#[derive(Debug)]
pub struct Confinement {
    setup: child::ChildSetup,
    /// The real paths of the pinned cwd and writable roots (empty in
    /// read-only mode).
    workspace: Vec<PathBuf>,
    /// The workspace and the private temporary directory.
    write_roots: Vec<PathBuf>,
    network: bool,
    /// The pinned files bound read-only, and the directories above them
    /// bound onto themselves (see [`pinned`]), for every command.
    pinned: Vec<child::Bind>,
}

/// A [`Confinement`] with one command's read-only binds: what a forked
/// child enters.
#[derive(Debug)]
pub struct Confined {
    confinement: Arc<Confinement>,
    binds: Vec<child::Bind>,
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
        let probe = probe();
        probe.backend().map_err(SandboxError::Unavailable)?;
        let limits = policy.limits;
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
        let pinned = pinned_binds(&policy.pins, &workspace)?;
        let maps = IdMaps::current();
        let pid_max = match (probe.pid_max_per_namespace, limits.max_processes) {
            (true, Some(n)) => Some(
                n.saturating_add(1)
                    .max(PID_MAX_MIN)
                    .to_string()
                    .into_bytes(),
            ),
            _ => None,
        };
        let setup = child::ChildSetup {
            uid_map: maps.uid,
            gid_map: maps.gid,
            pid_max,
            rlimits: child::Rlimits {
                nproc: limits.max_processes,
                fsize: limits.max_file_size_bytes,
                cpu_secs: limits.cpu_time_secs,
            },
            ruleset: rules::landlock_ruleset(
                roots.iter().map(Root::dir),
                &temp_dir,
                !policy.network_access,
            )?,
            seccomp: if policy.network_access {
                None
            } else {
                Some(rules::network_filter()?)
            },
            guard: if policy.network_access {
                None
            } else {
                Some(unix_guard::Guard::new(
                    &write_roots,
                    rules::abstract_scope_ruleset()?,
                ))
            },
        };
        Ok(Confinement {
            setup,
            workspace,
            write_roots,
            network: policy.network_access,
            pinned,
        })
    }

    /// This confinement for one command, with the `protected` paths (found
    /// just before it) bound read-only.
    pub fn confine(
        self: &Arc<Self>,
        protected: &protected::Scan,
    ) -> Result<Confined, SandboxError> {
        let mut binds = protected
            .paths()
            .map(|p| bind_of(p, true))
            .collect::<Result<Vec<_>, _>>()?;
        // The pinned files' directories first: a read-only bind below one
        // must not be hidden by it.
        binds.splice(0..0, self.pinned.iter().cloned());
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

/// Supervise an unconfined command: a subreaper between cogni and the
/// command kills whatever the command left running (background jobs,
/// `setsid` and `nohup` escapes) when it exits, or when cogni kills its
/// process group or dies. Returns in the process that must exec the
/// command.
///
/// # Safety
/// Call only in a forked child before exec (a `pre_exec` hook), after it
/// made itself the leader of a new process group.
pub unsafe fn enter_unconfined() -> io::Result<()> {
    reaper::enter()
}

fn canonical(path: &Path) -> Result<PathBuf, SandboxError> {
    std::fs::canonicalize(path).map_err(|source| SandboxError::Path {
        path: path.to_path_buf(),
        source,
    })
}

/// The binds that keep the pinned files of `pins` as they are, for commands
/// that may write under `workspace`: each directory between its writable
/// root and the file bound onto itself (so none can be renamed), outermost
/// first, then each file read-only.
fn pinned_binds(
    pins: &cogni_protocol::Pins,
    workspace: &[PathBuf],
) -> Result<Vec<child::Bind>, SandboxError> {
    let mut dirs: Vec<&Path> = Vec::new();
    let mut files: Vec<&Path> = Vec::new();
    for pin in &pins.files {
        let Some(root) = workspace.iter().find(|r| pin.path.starts_with(r)) else {
            continue;
        };
        files.push(&pin.path);
        dirs.extend(
            pin.path
                .ancestors()
                .skip(1)
                .take_while(|d| *d != root.as_path() && d.starts_with(root)),
        );
    }
    dirs.sort_by_key(|d| (d.components().count(), *d));
    dirs.dedup();
    let mut binds = Vec::new();
    for dir in dirs {
        binds.push(bind_of(dir, false)?);
    }
    for file in files {
        binds.push(bind_of(file, true)?);
    }
    Ok(binds)
}

/// The bind of `path` onto itself (read-only or not), keeping the flags a
/// user namespace may not drop from the mount it lives on.
fn bind_of(path: &Path, read_only: bool) -> Result<child::Bind, SandboxError> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Path {
        path: path.to_path_buf(),
        source: io::Error::from_raw_os_error(libc::EINVAL),
    })?;
    // SAFETY: statvfs is plain data that the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is a valid C string and `st` is writable.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut st) } != 0 {
        return Err(SandboxError::Path {
            path: path.to_path_buf(),
            source: io::Error::last_os_error(),
        });
    }
    let keep = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    let flags = keep
        .iter()
        .filter(|(st_flag, _)| st.f_flag & *st_flag != 0)
        .fold(0, |acc, (_, ms_flag)| acc | ms_flag);
    Ok(child::Bind {
        path: c_path,
        flags,
        read_only,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_compare() {
        assert!(version_at_least("6.18.44-fc-v657", 6, 14));
        assert!(version_at_least("7.0.1", 6, 14));
        assert!(!version_at_least("6.8.0-45-generic", 6, 14));
        assert!(!version_at_least("", 6, 14));
    }

    #[test]
    fn unavailable_says_why_and_what_to_do() {
        let probe = Probe {
            kernel: "5.4.0".into(),
            landlock: Err("the kernel has no Landlock support".into()),
            seccomp: Ok(()),
            namespaces: Ok(()),
            pid_max_per_namespace: false,
            root: false,
        };
        let e = probe.backend().unwrap_err().to_string();
        assert!(e.contains("no Landlock support"), "{e}");
        assert!(e.contains("danger-full-access"), "{e}");
        assert!(e.contains("--no-sandbox"), "{e}");
        let old = Probe {
            landlock: Ok(2),
            ..probe
        };
        assert!(old.backend().unwrap_err().to_string().contains("ABI 2"));
    }
}
