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

use super::forked::{
    check, close_fds_except, exit_like, ignore_stop_signals, last_errno, recv_i32,
    reset_signal_handlers, send_i32, wait_for, write_file,
};
use super::unix_guard::Guard;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::null;

/// A path to bind onto itself: read-only (a protected path), or as it is,
/// only to make it a mount point, which cannot be renamed (a directory
/// above a pinned file). With the flags of the mount it lives on (a user
/// namespace may not drop nosuid, nodev, ...).
#[derive(Debug, Clone)]
pub(crate) struct Bind {
    pub path: CString,
    pub flags: libc::c_ulong,
    pub read_only: bool,
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
    /// Written to the namespace's `/proc/sys/kernel/pid_max`.
    pub pid_max: Option<Vec<u8>>,
    pub rlimits: Rlimits,
    pub ruleset: OwnedFd,
    pub seccomp: Option<seccompiler::BpfProgram>,
    /// The Unix-socket guard (network off).
    pub guard: Option<Guard>,
}

/// Pipes between P and I, created before the fork.
struct Pipes {
    /// I -> P: the command's wait status.
    status: [libc::c_int; 2],
    /// I -> P: the guard's listener number (with the guard).
    handoff: [libc::c_int; 2],
    /// P -> I: 0 once P holds the listener, else an errno.
    ack: [libc::c_int; 2],
}

const READ: usize = 0;
const WRITE: usize = 1;

unsafe fn pipe() -> io::Result<[libc::c_int; 2]> {
    let mut fds = [-1; 2];
    check(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC))?;
    Ok(fds)
}

impl ChildSetup {
    /// P's part, with `binds` mounted read-only. Returns only in C (then
    /// the caller execs) or with an error before anything was forked.
    ///
    /// # Safety
    /// Call only in a forked child before exec (a `pre_exec` hook).
    pub(super) unsafe fn enter(&self, binds: &[Bind]) -> io::Result<()> {
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
        for bind in binds {
            let path = bind.path.as_ptr();
            if libc::mount(path, path, null(), libc::MS_BIND | libc::MS_REC, null()) != 0 {
                if last_errno() == libc::ENOENT {
                    // Removed since the scan: nothing left to protect.
                    continue;
                }
                return Err(io::Error::last_os_error());
            }
            if !bind.read_only {
                continue;
            }
            check(libc::mount(
                null(),
                path,
                null(),
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | bind.flags,
                null(),
            ))?;
        }
        if let Some(guard) = &self.guard {
            guard.enter_scope()?;
        }
        let pipes = Pipes {
            status: pipe()?,
            handoff: if self.guard.is_some() {
                pipe()?
            } else {
                [-1; 2]
            },
            ack: if self.guard.is_some() {
                pipe()?
            } else {
                [-1; 2]
            },
        };
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                for fd in [pipes.status[READ], pipes.handoff[READ], pipes.ack[WRITE]] {
                    libc::close(fd);
                }
                self.init(&pipes)
            }
            init => {
                for fd in [pipes.status[WRITE], pipes.handoff[WRITE], pipes.ack[READ]] {
                    libc::close(fd);
                }
                ignore_stop_signals();
                let listener = self
                    .guard
                    .as_ref()
                    .and_then(|guard| guard.receive(init, pipes.handoff[READ], pipes.ack[WRITE]));
                close_fds_except(&[pipes.status[READ], listener.unwrap_or(-1)]);
                let status = match (&self.guard, listener) {
                    (Some(guard), Some(listener)) => guard.serve(listener, init),
                    _ => wait_for(init),
                };
                let Some(mut status) = status else {
                    libc::_exit(127)
                };
                if let Some(command_status) = recv_i32(pipes.status[READ]) {
                    status = command_status;
                }
                exit_like(status)
            }
        }
    }

    /// I's part: pid 1 of the new namespace.
    unsafe fn init(&self, pipes: &Pipes) -> io::Result<()> {
        let status_w = pipes.status[WRITE];
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
        if let Some(guard) = &self.guard {
            guard.install(pipes.handoff[WRITE], pipes.ack[READ])?;
            libc::close(pipes.handoff[WRITE]);
            libc::close(pipes.ack[READ]);
        }
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                libc::close(status_w);
                Ok(())
            }
            command => {
                close_fds_except(&[status_w]);
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
                send_i32(status_w, status);
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
