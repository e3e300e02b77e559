//! The Linux backend: Landlock, seccomp and user/mount/PID namespaces
//! (see the crate's documentation), the fork server and the supervisor
//! of unconfined commands.

mod child;
pub mod fork_server;
mod forked;
mod reaper;
mod rules;
mod unix_guard;

use super::{probe, protected, Probe, Root, SandboxError, Unavailable};
use cogni_protocol::SandboxPolicy;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub use rules::REQUIRED_LANDLOCK_ABI;

/// The backend in force, for people.
pub const BACKEND_NAME: &str = "landlock + seccomp + user/mount/pid namespaces";

/// What to do when the backend is missing.
pub(crate) const ENABLE_HINT: &str = "Either enable what is missing (Linux 6.2+ with \
     `landlock` in the `lsm=` boot parameter, seccomp, unprivileged user namespaces: \
     sysctl kernel.unprivileged_userns_clone=1 or \
     kernel.apparmor_restrict_unprivileged_userns=0), or run commands unconfined, at \
     your own risk, with --sandbox danger-full-access (or `cogni run --no-sandbox`)";

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

pub(crate) fn run_probe() -> Probe {
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

/// What a command enters: the namespaces, limits, Landlock ruleset and
/// filters, and the pinned files' binds.
#[derive(Debug)]
pub(crate) struct Setup {
    child: child::ChildSetup,
    /// The pinned files bound read-only, and the directories above them
    /// bound onto themselves (see [`crate::pinned`]), for every command.
    pinned: Vec<child::Bind>,
}

/// One command's read-only binds.
pub(crate) type Binds = Vec<child::Bind>;

impl Setup {
    /// The setup of `policy` for commands that may write `workspace` (the
    /// real paths of `roots`), the private `temp_dir` and `write_roots`.
    pub(crate) fn new(
        policy: &SandboxPolicy,
        roots: &[Root],
        workspace: &[PathBuf],
        temp_dir: &Path,
        write_roots: &[PathBuf],
    ) -> Result<Self, SandboxError> {
        let probe = probe();
        let limits = policy.limits;
        let pinned = pinned_binds(&policy.pins, workspace)?;
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
        let child = child::ChildSetup {
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
                temp_dir,
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
                    write_roots,
                    rules::abstract_scope_ruleset()?,
                ))
            },
        };
        Ok(Setup { child, pinned })
    }

    /// The binds of one command: the pinned files' directories first (a
    /// read-only bind below one must not be hidden by it), then the
    /// `protected` paths found just before it, read-only.
    pub(crate) fn binds(&self, protected: &protected::Scan) -> Result<Binds, SandboxError> {
        let mut binds = self.pinned.clone();
        for path in protected.paths() {
            binds.push(bind_of(path, true)?);
        }
        Ok(binds)
    }

    /// Enter the setup with `binds`.
    ///
    /// # Safety
    /// As [`crate::Confined::enter`].
    pub(crate) unsafe fn enter(&self, binds: &Binds) -> io::Result<()> {
        self.child.enter(binds)
    }

    /// `command` as it is: the child enters the confinement itself.
    pub(crate) fn argv(&self, command: &[String]) -> Vec<String> {
        command.to_vec()
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

/// statvfs(3)'s `ST_RELATIME`, 4096 in glibc's and musl's headers alike
/// (the kernel's flag); the libc crate does not define it for musl.
const ST_RELATIME: libc::c_ulong = 4096;

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
        (ST_RELATIME, libc::MS_RELATIME),
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
