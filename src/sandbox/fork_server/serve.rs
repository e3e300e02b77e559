//! The fork server's own process: one thread, a poll loop over the control
//! socket, SIGCHLD (a signalfd) and each command's socket and exec check.
//!
//! For each request it forks S, which sets up the command's process group,
//! descriptors and cwd, then enters the unconfined supervisor
//! ([`reaper::enter`]: S forks R, R forks C) and C execs the command. The
//! exec check is a close-on-exec pipe: end of file once C exec'd, an errno
//! when something before the exec failed.

use super::super::forked::{check, close_fds_except, ignore_stop_signals, last_errno, send_i32};
use super::super::reaper;
use super::{
    decode_request, message, parse_message, recv_with_fds, Request, EXITED, MAX_REQUEST, MODE,
    REQUEST_FDS, SIGNAL, SPAWN_FAILED, STARTED,
};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::null;

/// The server's `main`, its control socket on `control`; the exit code.
pub(super) fn main(control: libc::c_int) -> i32 {
    if !is_seqpacket(control) {
        eprintln!("cogni: `{MODE}` is internal: the process cogni starts to run hooks");
        return 2;
    }
    // SAFETY: the descriptor is open (a socket, checked above) and nothing
    // else in this process owns it. PR_SET_NAME reads a NUL-terminated
    // name of at most 16 bytes.
    let control = unsafe {
        // For `top` and `ps -o comm` (exec'd as /proc/self/exe: "exe").
        libc::prctl(libc::PR_SET_NAME, c"cogni-fork-srv".as_ptr());
        OwnedFd::from_raw_fd(control)
    };
    match Server::new() {
        Ok(mut server) => server.run(&control),
        Err(_) => 1,
    }
}

fn is_seqpacket(fd: libc::c_int) -> bool {
    let mut kind: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `kind`.
    let ret = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut kind as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    ret == 0 && kind == libc::SOCK_SEQPACKET
}

struct Server {
    pid: libc::pid_t,
    /// SIGCHLD, blocked and read here.
    signals: OwnedFd,
    jobs: Vec<Job>,
}

/// One command: S and the socket cogni hears about it on.
struct Job {
    /// S's pid: the command's process group.
    pid: libc::pid_t,
    /// `None` once cogni closed it (the run was dropped).
    socket: Option<OwnedFd>,
    /// The exec check's read end, until it said how the exec went.
    exec_check: Option<OwnedFd>,
}

impl Server {
    fn new() -> io::Result<Self> {
        // SAFETY: signal dispositions, prctl and the signal mask of this
        // single-threaded process; sigset_t is plain data the calls fill.
        unsafe {
            // Stopping is cogni's business: it closes the control socket.
            ignore_stop_signals();
            // Orphans of a command whose R is gone come here, to be reaped.
            check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut mask);
            libc::sigaddset(&mut mask, libc::SIGCHLD);
            check(libc::sigprocmask(
                libc::SIG_BLOCK,
                &mask,
                std::ptr::null_mut(),
            ))?;
            let signals = libc::signalfd(-1, &mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if signals == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(Server {
                pid: libc::getpid(),
                signals: OwnedFd::from_raw_fd(signals),
                jobs: Vec::new(),
            })
        }
    }

    /// Serve until cogni closes the control socket; the exit code.
    fn run(&mut self, control: &OwnedFd) -> i32 {
        let mut buf = vec![0u8; MAX_REQUEST];
        loop {
            let mut polls = vec![readable(Some(control)), readable(Some(&self.signals))];
            for job in &self.jobs {
                polls.push(readable(job.socket.as_ref()));
                polls.push(readable(job.exec_check.as_ref()));
            }
            // SAFETY: `polls` is a valid array of its length.
            if unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, -1) } == -1 {
                if last_errno() == libc::EINTR {
                    continue;
                }
                self.shut_down();
                return 1;
            }
            // Jobs first, while `polls` still lines up with them.
            for (job, polled) in self.jobs.iter_mut().zip(polls[2..].chunks(2)) {
                if polled[1].revents != 0 {
                    job.settle();
                }
                if polled[0].revents != 0 {
                    job.hear();
                }
            }
            if polls[1].revents != 0 {
                self.reap();
            }
            if polls[0].revents != 0 {
                match recv_with_fds(control.as_fd(), &mut buf) {
                    Ok(got) if got.len == 0 => {
                        self.shut_down();
                        return 0;
                    }
                    Ok(got) => self.start(&buf[..got.len], got.fds, got.truncated),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                        ) => {}
                    Err(_) => {
                        self.shut_down();
                        return 1;
                    }
                }
            }
        }
    }

    /// cogni is gone: kill every command (R kills what each left).
    fn shut_down(&mut self) {
        for job in self.jobs.drain(..) {
            job.signal(libc::SIGKILL);
        }
    }

    /// Reap every child that exited; report each command's S.
    fn reap(&mut self) {
        let mut info = [0u8; 128];
        // SAFETY: reading at most `info.len()` bytes into it.
        while unsafe { libc::read(self.signals.as_raw_fd(), info.as_mut_ptr().cast(), 128) } > 0 {}
        loop {
            let mut status = 0;
            // SAFETY: `status` is writable.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
            if let Some(at) = self.jobs.iter().position(|job| job.pid == pid) {
                let mut job = self.jobs.swap_remove(at);
                job.settle();
                job.report(EXITED, status);
            }
        }
    }

    /// Start the command a request asks for, or say why not.
    fn start(&mut self, bytes: &[u8], fds: Vec<OwnedFd>, truncated: bool) {
        let Ok([stdin, stdout, stderr, socket]) = <[OwnedFd; REQUEST_FDS]>::try_from(fds) else {
            // Not a request cogni sends: nobody to answer.
            return;
        };
        let mut job = Job {
            pid: 0,
            socket: Some(socket),
            exec_check: None,
        };
        let request = match decode_request(bytes) {
            Some(request) if !truncated => request,
            _ => return job.report(SPAWN_FAILED, libc::E2BIG),
        };
        let command = Command::new(&request);
        let mut fds = [-1; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == -1 {
            return job.report(SPAWN_FAILED, last_errno());
        }
        // SAFETY: pipe2 succeeded: both descriptors are new and ours.
        let (check_r, check_w) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: this process has one thread; the child only runs `s`,
        // which never returns.
        match unsafe { libc::fork() } {
            -1 => job.report(SPAWN_FAILED, last_errno()),
            0 => {
                let stdio = [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()];
                // SAFETY: in the forked child, see `s`.
                unsafe { s(&command, stdio, check_w.as_raw_fd(), self.pid) }
            }
            pid => {
                job.pid = pid;
                job.exec_check = Some(check_r);
                self.jobs.push(job);
            }
        }
    }
}

/// `argv` and `envp` for execve, built before the fork.
struct Command<'a> {
    request: &'a Request,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

impl<'a> Command<'a> {
    fn new(request: &'a Request) -> Self {
        let pointers = |strings: &'a [CString]| {
            strings
                .iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(null()))
                .collect()
        };
        Command {
            request,
            argv: pointers(&request.argv),
            envp: pointers(&request.env),
        }
    }
}

/// S's part, in the child the server forked: its own process group, death
/// with the server, the command's descriptors and cwd, then the
/// supervisor, and in C the exec. Anything that fails before the exec
/// writes its errno to `exec_check` (as std's spawn does) and exits 127.
///
/// # Safety
/// Call only in a child just forked from the single-threaded server.
unsafe fn s(
    command: &Command,
    stdio: [BorrowedFd; 3],
    exec_check: libc::c_int,
    server: libc::pid_t,
) -> ! {
    let error = match prepare(command, stdio, exec_check, server).and_then(|()| reaper::enter()) {
        Ok(()) => {
            // C.
            libc::execve(
                command.argv[0],
                command.argv.as_ptr(),
                command.envp.as_ptr(),
            );
            last_errno()
        }
        Err(e) => e.raw_os_error().unwrap_or(libc::EINVAL),
    };
    send_i32(exec_check, error);
    libc::_exit(127)
}

/// What S does before it enters the supervisor.
///
/// # Safety
/// As [`s`].
unsafe fn prepare(
    command: &Command,
    stdio: [BorrowedFd; 3],
    exec_check: libc::c_int,
    server: libc::pid_t,
) -> io::Result<()> {
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    check(libc::sigprocmask(
        libc::SIG_SETMASK,
        &none,
        std::ptr::null_mut(),
    ))?;
    check(libc::setpgid(0, 0))?;
    check(libc::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
    ))?;
    if libc::getppid() != server {
        // The server died before prctl took effect.
        libc::_exit(127);
    }
    for (target, fd) in stdio.iter().enumerate() {
        let fd = fd.as_raw_fd();
        if fd == target as libc::c_int {
            // Already in place: only keep it open across the exec.
            check(libc::fcntl(fd, libc::F_SETFD, 0))?;
        } else {
            check(libc::dup2(fd, target as libc::c_int))?;
        }
    }
    check(libc::chdir(command.request.cwd.as_ptr()))?;
    close_fds_except(&[exec_check]);
    Ok(())
}

impl Job {
    /// Tell cogni, unless it is gone.
    fn report(&self, kind: i32, value: i32) {
        if let Some(socket) = &self.socket {
            let bytes = message(kind, value);
            // SAFETY: sending `bytes` from memory we own; never blocks
            // (three messages per command at most) nor raises SIGPIPE.
            unsafe {
                libc::send(
                    socket.as_raw_fd(),
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
        }
    }

    /// The exec check said something: an errno (it failed) or end of file
    /// (exec'd). Once.
    fn settle(&mut self) {
        let Some(exec_check) = self.exec_check.take() else {
            return;
        };
        let mut errno = [0u8; 4];
        // SAFETY: reading at most 4 bytes into `errno`; non-blocking.
        let n = unsafe { libc::read(exec_check.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
        if n == 4 {
            self.report(SPAWN_FAILED, i32::from_ne_bytes(errno));
        } else {
            self.report(STARTED, self.pid);
        }
    }

    /// Signals cogni asks for; end of file (the run was dropped) kills.
    fn hear(&mut self) {
        let Some(socket) = &self.socket else { return };
        loop {
            let mut buf = [0u8; 8];
            // SAFETY: receiving at most `buf.len()` bytes into it.
            let n = unsafe {
                libc::recv(
                    socket.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n == -1 {
                match last_errno() {
                    libc::EINTR => continue,
                    libc::EAGAIN => return,
                    _ => {}
                }
            }
            if n > 0 {
                if let Some((SIGNAL, signal)) = parse_message(&buf[..n as usize]) {
                    self.signal(signal);
                }
                continue;
            }
            self.socket = None;
            return self.signal(libc::SIGKILL);
        }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill has no memory-safety preconditions. S is unreaped (a
        // reaped job is dropped at once), so the group is this command's.
        unsafe { libc::kill(-self.pid, signal) };
    }
}

fn readable(fd: Option<&OwnedFd>) -> libc::pollfd {
    libc::pollfd {
        // poll skips negative descriptors.
        fd: fd.map_or(-1, AsRawFd::as_raw_fd),
        events: libc::POLLIN,
        revents: 0,
    }
}
