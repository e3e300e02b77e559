//! Unconfined commands (danger-full-access, `--no-sandbox`, approved
//! escalations) get no PID namespace, whose init would take everything
//! down with it: a user namespace would break `sudo` and the user's own
//! privileges. Instead a subreaper keeps every descendant in reach.
//!
//! Three processes, like the sandbox's P, I and C:
//!
//! - **S**, the process the caller spawned: the leader of the process
//!   group cogni signals (SIGTERM on timeout, SIGKILL after the grace or on
//!   cancel) and with the parent-death signal SIGKILL. It ignores SIGTERM,
//!   so the command gets its grace period, waits for R and exits the way
//!   the command did.
//! - **R**, a child subreaper in its own process group (cogni's signals to
//!   S's group never reach it): every process the command starts that
//!   loses its parent (`cmd &`, `nohup`, `setsid`, daemons) is re-parented
//!   to R. When the command exits, or S dies (cogni killed the group, or
//!   cogni died: S's parent-death signal), R kills everything left below
//!   it, then exits.
//! - **C**, the command: it joins S's process group, so cogni's signals
//!   reach it and the jobs it starts, and returns to the caller's exec.
//!
//! Only a process started outside this tree (by a service manager asked
//! over D-Bus, `systemd-run`, `at`) escapes; nothing a command forks does.

use super::forked::{
    check, close_fds_except, exit_like, ignore_stop_signals, last_errno, recv_i32,
    reset_signal_handlers, send_i32, wait_for,
};
use std::io;
use std::mem::zeroed;

/// R's parent-death signal: S is gone, kill everything.
pub(super) const PARENT_GONE: libc::c_int = libc::SIGUSR1;
/// Rounds of "kill every child, reap" before R gives up on a tree that
/// keeps forking (each round kills every process directly below R).
const MAX_ROUNDS: usize = 10_000;

/// S's part. Returns only in C (then the caller execs) or with an error
/// before anything was forked.
///
/// # Safety
/// Call only in a forked child before exec (a `pre_exec` hook), after the
/// child made itself a process group leader.
pub(super) unsafe fn enter() -> io::Result<()> {
    reset_signal_handlers();
    let group = libc::getpid();
    let mut fds = [-1; 2];
    check(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC))?;
    let (status_r, status_w) = (fds[0], fds[1]);
    match libc::fork() {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            libc::close(status_r);
            reaper(group, status_w)
        }
        reaper => {
            libc::close(status_w);
            close_fds_except(&[status_r]);
            ignore_stop_signals();
            let Some(mut status) = wait_for(reaper) else {
                libc::_exit(127)
            };
            if let Some(command_status) = recv_i32(status_r) {
                status = command_status;
            }
            exit_like(status)
        }
    }
}

/// R's part: fork C, wait for it (or for S's death), kill what is left,
/// report C's status to S.
unsafe fn reaper(group: libc::pid_t, status_w: libc::c_int) -> io::Result<()> {
    check(libc::setpgid(0, 0))?;
    let mut watched: libc::sigset_t = zeroed();
    libc::sigemptyset(&mut watched);
    libc::sigaddset(&mut watched, libc::SIGCHLD);
    libc::sigaddset(&mut watched, PARENT_GONE);
    let mut previous: libc::sigset_t = zeroed();
    check(libc::sigprocmask(libc::SIG_BLOCK, &watched, &mut previous))?;
    check(libc::prctl(
        libc::PR_SET_PDEATHSIG,
        PARENT_GONE as libc::c_ulong,
    ))?;
    if libc::getppid() != group {
        // S died before prctl took effect.
        libc::_exit(1);
    }
    check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
    let reaper = libc::getpid();
    match libc::fork() {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            libc::close(status_w);
            check(libc::setpgid(0, group))?;
            check(libc::sigprocmask(
                libc::SIG_SETMASK,
                &previous,
                std::ptr::null_mut(),
            ))?;
            check(libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
            ))?;
            if libc::getppid() != reaper {
                libc::_exit(1);
            }
            Ok(())
        }
        command => {
            close_fds_except(&[status_w]);
            let status = wait_for_command(command, &watched);
            kill_descendants();
            if let Some(status) = status {
                send_i32(status_w, status);
            }
            libc::_exit(0)
        }
    }
}

/// The command's wait status once it exits, or `None` when S died first.
unsafe fn wait_for_command(command: libc::pid_t, watched: &libc::sigset_t) -> Option<i32> {
    loop {
        // Reap first: SIGCHLD may have come before the mask was in place
        // for this loop, and orphans' exits arrive as SIGCHLD too.
        if let Some(status) = reap_exited(command) {
            return Some(status);
        }
        let mut info: libc::siginfo_t = zeroed();
        let signal = libc::sigwaitinfo(watched, &mut info);
        if signal == PARENT_GONE {
            return None;
        }
        if signal == -1 && last_errno() != libc::EINTR {
            return None;
        }
    }
}

/// Reap every child that exited (orphans re-parented to a subreaper
/// among them); `command`'s wait status if it was one.
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn reap_exited(command: libc::pid_t) -> Option<i32> {
    loop {
        let mut status = 0;
        let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
        if pid == command {
            return Some(status);
        }
        if pid <= 0 {
            return None;
        }
    }
}

/// SIGKILL every process below R, round after round (the children of a
/// killed process are re-parented to R), until none is left.
///
/// # Safety
/// Async-signal-safe; call in a child subreaper that never execs.
pub(super) unsafe fn kill_descendants() {
    let me = libc::getpid();
    for _ in 0..MAX_ROUNDS {
        // The common case: the command left nothing behind; no /proc scan.
        let mut status = 0;
        match libc::waitpid(-1, &mut status, libc::WNOHANG) {
            -1 if last_errno() == libc::ECHILD => return,
            pid if pid > 0 => continue,
            _ => {}
        }
        let killed = kill_children(me);
        let mut reaped = 0;
        loop {
            let mut status = 0;
            let flags = if reaped < killed { 0 } else { libc::WNOHANG };
            match libc::waitpid(-1, &mut status, flags) {
                -1 if last_errno() == libc::EINTR => continue,
                // ECHILD: nothing is left.
                -1 => return,
                0 => break,
                _ => reaped += 1,
            }
        }
        if killed == 0 {
            // Children exist but none was found in /proc yet (one being
            // re-parented right now): look again shortly.
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}

/// SIGKILL each process whose parent is `parent`; how many were found.
unsafe fn kill_children(parent: libc::pid_t) -> usize {
    let dir = libc::open(
        c"/proc".as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if dir < 0 {
        return 0;
    }
    let mut killed = 0;
    let mut buf = [0u8; 8192];
    loop {
        let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if n <= 0 {
            break;
        }
        let mut at = 0usize;
        while at < n as usize {
            // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
            // d_type u8, d_name (NUL-terminated).
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = &buf[at + 19..at + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if let Some(pid) = parse_pid(name) {
                if parent_of(dir, name) == Some(parent) && libc::kill(pid, libc::SIGKILL) == 0 {
                    killed += 1;
                }
            }
            at += reclen.max(1);
        }
    }
    libc::close(dir);
    killed
}

fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    if name.is_empty() || name.len() > 10 || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    name.iter()
        .try_fold(0 as libc::pid_t, |n, d| {
            n.checked_mul(10)?.checked_add(libc::pid_t::from(d - b'0'))
        })
        .filter(|&n| n > 0)
}

/// The parent pid in `/proc/<name>/stat` (the field after the command
/// name, which is in parentheses and may itself contain them).
unsafe fn parent_of(proc_dir: libc::c_int, name: &[u8]) -> Option<libc::pid_t> {
    let mut path = [0u8; 24];
    let len = name.len();
    path[..len].copy_from_slice(name);
    path[len..len + 5].copy_from_slice(b"/stat");
    let fd = libc::openat(
        proc_dir,
        path.as_ptr().cast(),
        libc::O_RDONLY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return None;
    }
    let mut stat = [0u8; 512];
    let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
    libc::close(fd);
    if n <= 0 {
        return None;
    }
    parse_ppid(&stat[..n as usize])
}

fn parse_ppid(stat: &[u8]) -> Option<libc::pid_t> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    parse_pid(fields.next()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_pid_is_read_past_any_command_name() {
        assert_eq!(parse_ppid(b"42 (sleep) S 17 42 42 0 -1"), Some(17));
        assert_eq!(parse_ppid(b"42 (a) b) (c) R 9 1 1"), Some(9));
        assert_eq!(parse_ppid(b"42 (x) S 0 0"), None);
        assert_eq!(parse_ppid(b"garbage"), None);
        assert_eq!(parse_pid(b"12a"), None);
        assert_eq!(parse_pid(b"4194304"), Some(4_194_304));
    }
}
