//! What runs in the forked child, between fork and exec: namespaces,
//! read-only binds of protected paths, a PID-namespace init, limits,
//! Landlock and seccomp.
//!
//! Three processes take part:
//!
//! - **P**, the process the caller spawned (its pid is what the caller
//!   waits on and its process group what a timeout kills). It enters a new
//!   user, mount and PID namespace, binds the protected paths read-only,
//!   forks I, and then only waits: it exits the way the command exited.
//! - **I**, pid 1 of the new PID namespace. It caps the namespace's pid
//!   count, sets the resource limits, restricts
//!   itself with Landlock and seccomp, forks C and waits for it. When C
//!   exits, I exits, and the kernel kills every process left in the
//!   namespace: background jobs, `setsid` escapes, daemons.
//! - **C**, the command: it returns to the caller's exec.
//!
//! Everything here runs after `fork` in a process that had many threads:
//! only async-signal-safe system calls, no allocation, no locks. All the
//! data (paths, maps, the Landlock ruleset, the seccomp program) is
//! prepared by the parent in [`ChildSetup`].

use std::ffi::{CStr, CString};
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::null;

/// A protected path to bind read-only onto itself, with the flags of the
/// mount it lives on (a user namespace may not drop nosuid, nodev, ...).
#[derive(Debug)]
pub(super) struct Bind {
    pub path: CString,
    pub flags: libc::c_ulong,
}

/// Resource limits set in the namespace's init before the command starts.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Rlimits {
    pub nproc: Option<u64>,
    pub fsize: Option<u64>,
    pub cpu_secs: Option<u64>,
}

/// Everything the child needs, prepared before the fork.
#[derive(Debug)]
pub(super) struct ChildSetup {
    pub uid_map: Vec<u8>,
    pub gid_map: Vec<u8>,
    pub binds: Vec<Bind>,
    /// Written to the namespace's `/proc/sys/kernel/pid_max`.
    pub pid_max: Option<Vec<u8>>,
    pub rlimits: Rlimits,
    pub ruleset: OwnedFd,
    pub seccomp: Option<seccompiler::BpfProgram>,
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Write `data` to the file at `path` (an existing /proc file).
///
/// # Safety
/// Async-signal-safe; for use after fork.
unsafe fn write_file(path: &CStr, data: &[u8]) -> io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let written = libc::write(fd, data.as_ptr().cast(), data.len());
    let result = if written == data.len() as isize {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    };
    libc::close(fd);
    result
}

/// Close every descriptor from 3 up except `keep` (std's exec-error pipe
/// among them, so the parent's spawn returns when C execs, not when the
/// whole namespace is done).
///
/// # Safety
/// Async-signal-safe; for use after fork.
unsafe fn close_fds_except(keep: libc::c_int) {
    let keep = keep as libc::c_uint;
    if keep > 3 {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            keep - 1,
            0 as libc::c_uint,
        );
    }
    libc::syscall(
        libc::SYS_close_range,
        keep + 1,
        libc::c_uint::MAX,
        0 as libc::c_uint,
    );
}

/// Exit the way a child with wait status `status` did: the same exit code,
/// or the same signal (without a core dump).
///
/// # Safety
/// Async-signal-safe; for use after fork.
unsafe fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
    libc::_exit(libc::WEXITSTATUS(status))
}

/// Back to the default action for every signal. P and I never exec, so
/// they would otherwise keep the parent's handlers (tokio's SIGCHLD
/// handler writes to a descriptor these processes have closed, or that a
/// later descriptor reuses).
///
/// # Safety
/// Async-signal-safe; for use after fork.
unsafe fn reset_signal_handlers() {
    for signal in 1..=libc::SIGRTMAX() {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl ChildSetup {
    /// P's part. Returns only in C (then the caller execs) or with an
    /// error before anything was forked.
    ///
    /// # Safety
    /// Call only in a forked child before exec (a `pre_exec` hook).
    pub(super) unsafe fn enter(&self) -> io::Result<()> {
        reset_signal_handlers();
        check(libc::unshare(
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID,
        ))?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)?;
        // P and I are copies of cogni that never exec: their memory holds
        // cogni's environment and keys. Not dumpable, /proc/<pid>/environ
        // and mem of them are closed to the command (it has no
        // capabilities where their memory was created). Only after the
        // maps: it also makes /proc/self root's. I inherits it; the
        // command's exec resets it.
        check(libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0))?;
        // Nothing mounted here may propagate anywhere else.
        check(libc::mount(
            null(),
            c"/".as_ptr(),
            null(),
            libc::MS_REC | libc::MS_PRIVATE,
            null(),
        ))?;
        for bind in &self.binds {
            let path = bind.path.as_ptr();
            if libc::mount(path, path, null(), libc::MS_BIND | libc::MS_REC, null()) != 0 {
                if last_errno() == libc::ENOENT {
                    // Removed since the scan: nothing left to protect.
                    continue;
                }
                return Err(io::Error::last_os_error());
            }
            check(libc::mount(
                null(),
                path,
                null(),
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | bind.flags,
                null(),
            ))?;
        }
        let mut fds = [0; 2];
        check(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC))?;
        let (status_r, status_w) = (fds[0], fds[1]);
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                libc::close(status_r);
                self.init(status_w)
            }
            init => {
                libc::close(status_w);
                close_fds_except(status_r);
                let mut status = 0;
                while libc::waitpid(init, &mut status, 0) != init {
                    if last_errno() != libc::EINTR {
                        libc::_exit(127);
                    }
                }
                let mut command_status: libc::c_int = 0;
                let n = libc::read(
                    status_r,
                    (&mut command_status as *mut libc::c_int).cast(),
                    size_of::<libc::c_int>(),
                );
                if n == size_of::<libc::c_int>() as isize {
                    status = command_status;
                }
                exit_like(status)
            }
        }
    }

    /// I's part: pid 1 of the new namespace.
    unsafe fn init(&self, status_w: libc::c_int) -> io::Result<()> {
        check(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
        ))?;
        // P may have died before prctl took effect: then nobody reads.
        let mut poll = libc::pollfd {
            fd: status_w,
            events: 0,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, 0) > 0 && poll.revents & libc::POLLERR != 0 {
            libc::_exit(1);
        }
        if let Some(max) = &self.pid_max {
            write_file(c"/proc/sys/kernel/pid_max", max)?;
        }
        self.set_limits()?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        if libc::syscall(
            libc::SYS_landlock_restrict_self,
            self.ruleset.as_raw_fd(),
            0 as libc::c_uint,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if let Some(program) = &self.seccomp {
            seccompiler::apply_filter(program).map_err(|e| match e {
                seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
                _ => io::Error::from_raw_os_error(libc::EINVAL),
            })?;
        }
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                libc::close(status_w);
                Ok(())
            }
            command => {
                close_fds_except(status_w);
                let mut status = 0;
                loop {
                    let reaped = libc::waitpid(-1, &mut status, 0);
                    if reaped == command {
                        break;
                    }
                    if reaped == -1 && last_errno() != libc::EINTR {
                        libc::_exit(127);
                    }
                }
                libc::write(
                    status_w,
                    (&status as *const libc::c_int).cast(),
                    size_of::<libc::c_int>(),
                );
                // Exiting as pid 1 kills whatever is left in the namespace.
                libc::_exit(0)
            }
        }
    }

    unsafe fn set_limits(&self) -> io::Result<()> {
        let limit = |value: u64, grace: u64| libc::rlimit {
            rlim_cur: value as libc::rlim_t,
            rlim_max: value.saturating_add(grace) as libc::rlim_t,
        };
        // RLIMIT_NPROC counts the processes of this uid in this user
        // namespace, so it is set here, after the namespace exists.
        if let Some(n) = self.rlimits.nproc {
            check(libc::setrlimit(libc::RLIMIT_NPROC, &limit(n, 0)))?;
        }
        if let Some(n) = self.rlimits.fsize {
            check(libc::setrlimit(libc::RLIMIT_FSIZE, &limit(n, 0)))?;
        }
        // SIGXCPU at the soft limit, SIGKILL a few seconds later.
        if let Some(n) = self.rlimits.cpu_secs {
            check(libc::setrlimit(libc::RLIMIT_CPU, &limit(n, 5)))?;
        }
        Ok(())
    }
}
