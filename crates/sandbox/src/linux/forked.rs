//! System-call helpers for the processes that run between `fork` and
//! `exec` (and the supervisors that never exec). Everything here is
//! async-signal-safe: no allocation, no locks, only system calls on memory
//! the caller owns, because the process forked from one with many threads.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(super) fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub(super) fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Write `data` to the file at `path` (an existing /proc file).
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn write_file(path: &CStr, data: &[u8]) -> io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let result = if write_all(fd, data) {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    };
    libc::close(fd);
    result
}

/// Write all of `data` to `fd`; false on an error or a short write.
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn write_all(fd: libc::c_int, data: &[u8]) -> bool {
    libc::write(fd, data.as_ptr().cast(), data.len()) == data.len() as isize
}

/// Read exactly `buf.len()` bytes (one read: pipes deliver small writes
/// whole); false on end of file, an error or a short read.
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn read_exact(fd: libc::c_int, buf: &mut [u8]) -> bool {
    loop {
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        if n == -1 && last_errno() == libc::EINTR {
            continue;
        }
        return n == buf.len() as isize;
    }
}

/// Send an `i32` through a pipe.
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn send_i32(fd: libc::c_int, value: i32) -> bool {
    write_all(fd, &value.to_ne_bytes())
}

/// Receive an `i32` from a pipe.
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn recv_i32(fd: libc::c_int) -> Option<i32> {
    let mut buf = [0u8; 4];
    read_exact(fd, &mut buf).then(|| i32::from_ne_bytes(buf))
}

/// Close every descriptor from 3 up except those in `keep` (at most four;
/// std's exec-error pipe among them where the caller still execs, so the
/// parent's spawn returns when the command execs, not when it is done).
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn close_fds_except(keep: &[libc::c_int]) {
    let mut sorted = [libc::c_int::MAX; 4];
    let n = keep.len().min(sorted.len());
    sorted[..n].copy_from_slice(&keep[..n]);
    sorted[..n].sort_unstable();
    let mut from: libc::c_uint = 3;
    for &fd in sorted[..n].iter().filter(|&&fd| fd >= 3) {
        let fd = fd as libc::c_uint;
        if fd > from {
            close_range(from, fd - 1);
        }
        from = from.max(fd + 1);
    }
    close_range(from, libc::c_uint::MAX);
}

unsafe fn close_range(first: libc::c_uint, last: libc::c_uint) {
    libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint);
}

/// Exit the way a child with wait status `status` did: the same exit code,
/// or the same signal (without a core dump).
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn exit_like(status: libc::c_int) -> ! {
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

/// Back to the default action for every signal. Supervisors never exec, so
/// they would otherwise keep the parent's handlers (tokio's SIGCHLD
/// handler writes to a descriptor these processes have closed, or that a
/// later descriptor reuses).
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn reset_signal_handlers() {
    for signal in 1..=libc::SIGRTMAX() {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

/// A supervisor outlives the signals cogni sends the command's process
/// group to stop it (SIGTERM first): the command gets its grace period
/// and the supervisor still reports how it ended. SIGPIPE is ignored so a
/// supervisor writing to a closed pipe or socket gets EPIPE instead.
///
/// # Safety
/// Async-signal-safe; for use after fork, in a supervisor only (ignored
/// signals stay ignored across exec).
pub(super) unsafe fn ignore_stop_signals() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGPIPE] {
        libc::signal(signal, libc::SIG_IGN);
    }
}

/// Wait for `pid`; its wait status, or `None` when waiting failed.
///
/// # Safety
/// Async-signal-safe; for use after fork.
pub(super) unsafe fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        let reaped = libc::waitpid(pid, &mut status, 0);
        if reaped == pid {
            return Some(status);
        }
        if reaped == -1 && last_errno() != libc::EINTR {
            return None;
        }
    }
}

/// Format `n` in decimal after `prefix` and before `suffix` into `buf`
/// with a terminating NUL; the C string, or `None` if it does not fit.
pub(super) fn format_path<'a>(
    buf: &'a mut [u8],
    prefix: &[u8],
    n: u64,
    suffix: &[u8],
) -> Option<&'a CStr> {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut rest = n;
    loop {
        digits[len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let total = prefix.len() + len + suffix.len();
    if total + 1 > buf.len() {
        return None;
    }
    buf[..prefix.len()].copy_from_slice(prefix);
    for (i, d) in digits[..len].iter().rev().enumerate() {
        buf[prefix.len() + i] = *d;
    }
    buf[prefix.len() + len..total].copy_from_slice(suffix);
    buf[total] = 0;
    CStr::from_bytes_with_nul(&buf[..=total]).ok()
}

/// Block `signals` and read them from the returned signalfd instead.
/// For a single-threaded process (a supervisor after fork, the fork
/// server): the mask is the calling thread's.
pub(super) fn block_for_signalfd(signals: &[libc::c_int]) -> io::Result<OwnedFd> {
    // SAFETY: sigset_t is plain data that sigemptyset initializes; the
    // mask and the new descriptor are this process's.
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        for &signal in signals {
            libc::sigaddset(&mut mask, signal);
        }
        check(libc::sigprocmask(
            libc::SIG_BLOCK,
            &mask,
            std::ptr::null_mut(),
        ))?;
        let fd = libc::signalfd(-1, &mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Read every pending signal from a signalfd made by
/// [`block_for_signalfd`]; whether `watched` was among them.
pub(super) fn drain_signals(signals: &OwnedFd, watched: libc::c_int) -> bool {
    let mut seen = false;
    loop {
        // SAFETY: signalfd_siginfo is plain data that read fills.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: reading at most `size` bytes into `info`.
        let n = unsafe {
            libc::read(
                signals.as_raw_fd(),
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size,
            )
        };
        if n != size as isize {
            return seen;
        }
        seen |= info.ssi_signo == watched as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_formatted_without_allocating() {
        let mut buf = [0u8; 32];
        assert_eq!(
            format_path(&mut buf, b"/proc/", 4711, b"/cwd").unwrap(),
            c"/proc/4711/cwd"
        );
        assert_eq!(
            format_path(&mut buf, b"/proc/self/fd/", 0, b"").unwrap(),
            c"/proc/self/fd/0"
        );
        let mut small = [0u8; 8];
        assert!(format_path(&mut small, b"/proc/", 123456, b"").is_none());
    }
}
