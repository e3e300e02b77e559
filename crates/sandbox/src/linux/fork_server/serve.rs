//! The fork server's own processes.
//!
//! - **The server**: one thread, a poll loop over the control socket,
//!   SIGCHLD (a signalfd) and its busy workers' sockets. It keeps idle
//!   workers (one forked ahead of time, at most [`MAX_IDLE`]); a request
//!   goes to one of them whole (the message and its descriptors), and the
//!   worker comes back to the pool when its command ended.
//! - **W, a worker**: the supervisor of one command at a time, in the place
//!   of the unconfined supervisor's S and R (`super::super::reaper`), with
//!   the same guarantees. A child subreaper whose parent-death signal means
//!   "kill everything"; it starts C, delivers the signals cogni asks for to
//!   C's process group while C is unreaped (so the group id cannot have
//!   been reused), kills C's group when cogni closes the command's socket,
//!   and once C exited kills everything left below it
//!   ([`reaper::kill_descendants`]) and reports C's wait status on that
//!   socket. Then it tells the server it is ready for the next one.
//! - **C, the command**: started as posix_spawn starts a process (sharing
//!   W's memory until its exec, W suspended meanwhile: no page tables
//!   copied); its own process group, death with W, the command's
//!   descriptors, cwd and environment, then exec. What fails before the
//!   exec writes its errno to a close-on-exec pipe that W reads once C is
//!   gone (as std's spawn does).
//!
//! So starting a command costs one clone and an exec: no supervisor is
//! forked or torn down on the way.

use super::super::forked::{
    block_for_signalfd, check, close_fds_except, drain_signals, ignore_stop_signals, last_errno,
    reset_signal_handlers, send_i32,
};
use super::super::reaper::{self, PARENT_GONE};
use super::{
    decode_request, message, parse_message, pipe, recv_with_fds, send_with_fds, socket_pair,
    Request, EXITED, MAX_REQUEST, REQUEST_FDS, SIGNAL, SPAWN_FAILED,
};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::{null, null_mut};

/// The server's `main`, its control socket on `control`; the exit code,
/// or `None` when `control` is no control socket (started by hand).
pub(super) fn main(control: libc::c_int) -> Option<i32> {
    if !is_seqpacket(control) {
        return None;
    }
    // SAFETY: the descriptor is open (a socket, checked above) and nothing
    // else in this process owns it. PR_SET_NAME reads a NUL-terminated
    // name of at most 16 bytes.
    let control = unsafe {
        // For `top` and `ps -o comm` (exec'd as /proc/self/exe: "exe").
        libc::prctl(libc::PR_SET_NAME, c"cogni-fork-srv".as_ptr());
        OwnedFd::from_raw_fd(control)
    };
    Some(match Server::new() {
        Ok(mut server) => server.run(&control),
        Err(_) => 1,
    })
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

/// Idle workers kept; one more that finishes its command exits.
const MAX_IDLE: usize = 4;
/// What a worker sends the server when its command ended.
const READY: u8 = 1;

struct Server {
    pid: libc::pid_t,
    /// SIGCHLD, blocked and read here.
    signals: OwnedFd,
    /// Workers waiting for a request; the last one gets the next.
    idle: Vec<Worker>,
    /// Workers running a command.
    busy: Vec<Worker>,
    buf: Vec<u8>,
}

/// A worker, seen from the server.
struct Worker {
    pid: libc::pid_t,
    /// The server's end of the socket it gets requests on and says it is
    /// ready on.
    channel: OwnedFd,
}

impl Server {
    fn new() -> io::Result<Self> {
        // SAFETY: signal dispositions and prctl of this single-threaded
        // process.
        unsafe {
            // Stopping is cogni's business: it closes the control socket.
            ignore_stop_signals();
            // Orphans of a worker that was killed come here, to be reaped.
            check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
        }
        Ok(Server {
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
            signals: block_for_signalfd(&[libc::SIGCHLD])?,
            idle: Vec::new(),
            busy: Vec::new(),
            buf: vec![0u8; MAX_REQUEST],
        })
    }

    /// Serve until cogni closes the control socket; the exit code.
    fn run(&mut self, control: &OwnedFd) -> i32 {
        if let Ok(worker) = self.fork_worker() {
            self.idle.push(worker);
        }
        loop {
            let mut polls = vec![
                readable(control.as_raw_fd()),
                readable(self.signals.as_raw_fd()),
            ];
            polls.extend(self.busy.iter().map(|w| readable(w.channel.as_raw_fd())));
            // SAFETY: `polls` is a valid array of its length.
            if unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, -1) } == -1 {
                if last_errno() == libc::EINTR {
                    continue;
                }
                return 1;
            }
            // Busy workers first, while `polls` lines up with them.
            let ready: Vec<usize> = (0..self.busy.len())
                .filter(|&i| polls[2 + i].revents != 0)
                .collect();
            for i in ready.into_iter().rev() {
                let worker = self.busy.swap_remove(i);
                // Ready again, or gone (end of file).
                if worker_says_ready(&worker) && self.idle.len() < MAX_IDLE {
                    self.idle.push(worker);
                }
            }
            if polls[1].revents != 0 {
                self.reap();
            }
            if polls[0].revents != 0 {
                match recv_with_fds(control.as_fd(), &mut self.buf) {
                    // cogni is gone: so are we, and the workers kill their
                    // commands (their parent-death signal).
                    Ok(got) if got.len == 0 => return 0,
                    Ok(got) => self.dispatch(got.len, got.fds, got.truncated),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                        ) => {}
                    Err(_) => return 1,
                }
            }
        }
    }

    /// Reap the workers that exited (and orphans); forget them.
    fn reap(&mut self) {
        drain_signals(&self.signals, PARENT_GONE);
        loop {
            let mut status = 0;
            // SAFETY: `status` is writable.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
            self.idle.retain(|w| w.pid != pid);
            self.busy.retain(|w| w.pid != pid);
        }
    }

    /// Hand the request in `buf[..len]` with its descriptors to a worker.
    fn dispatch(&mut self, len: usize, fds: Vec<OwnedFd>, truncated: bool) {
        if fds.len() != REQUEST_FDS {
            // Not a request cogni sends: nobody to answer.
            return;
        }
        let socket = fds[REQUEST_FDS - 1].as_fd();
        if truncated {
            return report(socket, SPAWN_FAILED, libc::E2BIG);
        }
        let borrowed: Vec<BorrowedFd> = fds.iter().map(AsFd::as_fd).collect();
        // An idle worker that died meanwhile refuses the message: the next.
        let failed = loop {
            let (worker, fresh) = match self.idle.pop() {
                Some(worker) => (worker, false),
                None => match self.fork_worker() {
                    Ok(worker) => (worker, true),
                    Err(e) => break e,
                },
            };
            match send_with_fds(worker.channel.as_fd(), &self.buf[..len], &borrowed) {
                Ok(()) => return self.busy.push(worker),
                // A worker just forked that cannot take it: give up.
                Err(e) if fresh => break e,
                Err(_) => {}
            }
        };
        report(
            socket,
            SPAWN_FAILED,
            failed.raw_os_error().unwrap_or(libc::EIO),
        );
    }

    fn fork_worker(&mut self) -> io::Result<Worker> {
        let (channel, theirs) = socket_pair()?;
        // SAFETY: this process has one thread; the child runs `worker`,
        // which never returns.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            // SAFETY: in the forked child, see `worker`.
            0 => unsafe { worker(&theirs, self.pid, &mut self.buf) },
            pid => Ok(Worker { pid, channel }),
        }
    }
}

/// Read what a busy worker sent: true when it is ready for the next
/// command, false when it is gone.
fn worker_says_ready(worker: &Worker) -> bool {
    let mut byte = 0u8;
    // SAFETY: receiving at most one byte into `byte`.
    let n = unsafe {
        libc::recv(
            worker.channel.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_DONTWAIT,
        )
    };
    n == 1 && byte == READY
}

/// W: run the commands the server sends on `channel`, one at a time,
/// until the server closes it or dies.
///
/// # Safety
/// Call only in a child just forked from the single-threaded server
/// (`server`).
unsafe fn worker(channel: &OwnedFd, server: libc::pid_t, buf: &mut [u8]) -> ! {
    let code = match work(channel, server, buf) {
        Ok(()) => 0,
        Err(_) => 1,
    };
    libc::_exit(code)
}

/// # Safety
/// As [`worker`].
unsafe fn work(channel: &OwnedFd, server: libc::pid_t, buf: &mut [u8]) -> io::Result<()> {
    let signals = block_for_signalfd(&[libc::SIGCHLD, PARENT_GONE])?;
    check(libc::prctl(
        libc::PR_SET_PDEATHSIG,
        PARENT_GONE as libc::c_ulong,
    ))?;
    if libc::getppid() != server {
        // The server died before prctl took effect.
        return Ok(());
    }
    check(libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))?;
    close_fds_except(&[channel.as_raw_fd(), signals.as_raw_fd()]);
    loop {
        let got = loop {
            let mut poll = readable(channel.as_raw_fd());
            if libc::poll(&mut poll, 1, -1) == -1 && last_errno() != libc::EINTR {
                return Err(io::Error::last_os_error());
            }
            match recv_with_fds(channel.as_fd(), buf) {
                Ok(got) => break got,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        };
        // End of file: the server is gone or has enough idle workers.
        let Ok(fds) = <[OwnedFd; REQUEST_FDS]>::try_from(got.fds) else {
            return Ok(());
        };
        if !run_one(&buf[..got.len], fds, &signals)? {
            return Ok(());
        }
        if libc::send(
            channel.as_raw_fd(),
            [READY].as_ptr().cast(),
            1,
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        ) != 1
        {
            return Ok(());
        }
    }
}

/// Run one request's command to its end and report it; false when the
/// server died meanwhile (the command was killed, nothing reported).
///
/// # Safety
/// In W, with SIGCHLD and the parent-death signal read from `signals`.
unsafe fn run_one(
    request: &[u8],
    [stdin, stdout, stderr, socket]: [OwnedFd; REQUEST_FDS],
    signals: &OwnedFd,
) -> io::Result<bool> {
    let Some(request) = decode_request(request) else {
        report(socket.as_fd(), SPAWN_FAILED, libc::EINVAL);
        return Ok(true);
    };
    let command = Command::new(&request);
    let (exec_check, exec_check_w) = pipe()?;
    let start = Start {
        command: &command,
        stdio: [stdin.as_raw_fd(), stdout.as_raw_fd(), stderr.as_raw_fd()],
        exec_check: exec_check_w.as_raw_fd(),
        worker: libc::getpid(),
    };
    let pid = match start.spawn() {
        Ok(pid) => pid,
        Err(e) => {
            report(
                socket.as_fd(),
                SPAWN_FAILED,
                e.raw_os_error().unwrap_or(libc::EIO),
            );
            return Ok(true);
        }
    };
    drop((exec_check_w, stdin, stdout, stderr));
    let status = supervise(pid, &socket, signals);
    reaper::kill_descendants();
    // Without a status the server is gone: cogni hears end of file.
    let Some(status) = status else {
        return Ok(false);
    };
    let mut errno = [0u8; 4];
    // A whole errno: C failed before its exec. C is gone, and so is every
    // writer: this does not block.
    if libc::read(exec_check.as_raw_fd(), errno.as_mut_ptr().cast(), 4) == 4 {
        report(socket.as_fd(), SPAWN_FAILED, i32::from_ne_bytes(errno));
    } else {
        report(socket.as_fd(), EXITED, status);
    }
    Ok(true)
}

/// Wait for C (`command`), delivering the signals cogni asks for; C's
/// wait status, or `None` when the server died (or waiting failed).
///
/// # Safety
/// In W, with SIGCHLD and the parent-death signal read from `signals`.
unsafe fn supervise(command: libc::pid_t, socket: &OwnedFd, signals: &OwnedFd) -> Option<i32> {
    let mut listening = true;
    loop {
        // Reap first: orphans' exits come as SIGCHLD too.
        if let Some(status) = reaper::reap_exited(command) {
            return Some(status);
        }
        let mut polls = [
            readable(signals.as_raw_fd()),
            readable(if listening { socket.as_raw_fd() } else { -1 }),
        ];
        if libc::poll(polls.as_mut_ptr(), 2, -1) == -1 {
            if last_errno() == libc::EINTR {
                continue;
            }
            return None;
        }
        if polls[0].revents != 0 && drain_signals(signals, PARENT_GONE) {
            return None;
        }
        if polls[1].revents != 0 {
            listening = hear(socket, command);
        }
    }
}

/// The signals cogni asks for, sent to C's group (unreaped: the group is
/// C's); end of file (the run was dropped) kills it. False once cogni
/// closed the socket.
///
/// # Safety
/// In W, while `command` is unreaped.
unsafe fn hear(socket: &OwnedFd, command: libc::pid_t) -> bool {
    loop {
        let mut buf = [0u8; 8];
        let n = libc::recv(
            socket.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        );
        if n == -1 {
            match last_errno() {
                libc::EINTR => continue,
                libc::EAGAIN => return true,
                _ => {}
            }
        }
        if n <= 0 {
            libc::kill(-command, libc::SIGKILL);
            return false;
        }
        if let Some((SIGNAL, signal)) = parse_message(&buf[..n as usize]) {
            libc::kill(-command, signal);
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

/// What C needs, prepared in W.
struct Start<'a> {
    command: &'a Command<'a>,
    stdio: [libc::c_int; 3],
    exec_check: libc::c_int,
    worker: libc::pid_t,
}

/// C's stack, while it shares W's memory until its exec.
const C_STACK: usize = 64 * 1024;

impl Start<'_> {
    /// Start C, the way posix_spawn does: a child that shares W's memory
    /// (no page tables copied) on a stack of its own, W suspended until C
    /// exec'd or exited (`CLONE_VFORK`). So C's group exists before W
    /// delivers any signal to it. C's pid.
    ///
    /// # Safety
    /// In W (one thread). C only makes system calls on memory prepared
    /// here, on its own stack, and never returns.
    unsafe fn spawn(&self) -> io::Result<libc::pid_t> {
        let mut stack = vec![0u64; C_STACK / 8];
        // The top of the stack (it grows down), 16-byte aligned.
        let top = (stack.as_mut_ptr() as usize + C_STACK) & !15;
        let pid = libc::clone(
            c,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (self as *const Self).cast_mut().cast(),
        );
        if pid == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(pid)
    }
}

/// C: set up, exec; on failure the errno to `exec_check`, exit 127.
///
/// Runs in W's memory (see [`Start::spawn`]): it writes only to its own
/// stack and through system calls; `errno` is W's, which is suspended.
extern "C" fn c(start: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` is the `Start` that `Start::spawn` passed, alive in
    // the suspended W; everything below is a system call or works on the
    // stack.
    unsafe {
        let start = &*(start as *const Start);
        let error = match prepare(start) {
            Ok(()) => {
                let command = start.command;
                libc::execve(
                    command.argv[0],
                    command.argv.as_ptr(),
                    command.envp.as_ptr(),
                );
                last_errno()
            }
            Err(e) => e.raw_os_error().unwrap_or(libc::EINVAL),
        };
        send_i32(start.exec_check, error);
        libc::_exit(127)
    }
}

/// What C does before its exec: default signal handling, its own process
/// group, death with W, its descriptors and cwd.
///
/// # Safety
/// In C (see [`c`]).
unsafe fn prepare(start: &Start) -> io::Result<()> {
    // W ignores SIGPIPE and the stop signals: ignored stays ignored across
    // exec. Handlers first, then the mask (no signal is pending in a new
    // process).
    reset_signal_handlers();
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    check(libc::sigprocmask(libc::SIG_SETMASK, &none, null_mut()))?;
    check(libc::setpgid(0, 0))?;
    check(libc::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
    ))?;
    if libc::getppid() != start.worker {
        // W died before prctl took effect.
        libc::_exit(127);
    }
    for (target, &fd) in start.stdio.iter().enumerate() {
        if fd == target as libc::c_int {
            // Already in place: only keep it open across the exec.
            check(libc::fcntl(fd, libc::F_SETFD, 0))?;
        } else {
            check(libc::dup2(fd, target as libc::c_int))?;
        }
    }
    check(libc::chdir(start.command.request.cwd.as_ptr()))?;
    close_fds_except(&[start.exec_check]);
    Ok(())
}

/// Tell cogni, on the command's socket; a closed socket (cogni dropped the
/// run) is no error. Never blocks (two messages per command at most) nor
/// raises SIGPIPE.
fn report(socket: BorrowedFd, kind: i32, value: i32) {
    let bytes = message(kind, value);
    // SAFETY: sending `bytes` from memory we own.
    unsafe {
        libc::send(
            socket.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
}

fn readable(fd: libc::c_int) -> libc::pollfd {
    libc::pollfd {
        // poll skips negative descriptors.
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}
