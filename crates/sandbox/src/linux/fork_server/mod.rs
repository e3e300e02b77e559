//! The fork server: one small process per cogni process that starts the
//! user's commands for effects (hooks, guardrail and output-check
//! commands) so that they do not pay for forking cogni.
//!
//! Forking copies the page tables of the process that forks, and the
//! unconfined supervisor (`sandbox::reaper`: S, R and C) forks three times
//! per command. Forked from cogni, whose address space is large, that is
//! about 1 ms of a `true` hook's 2 ms. The fork server is cogni's own binary
//! exec'd afresh ([`serve_if_asked`], before anything else runs), so its
//! address space is small; for each command it hands the request to a
//! worker it forked ahead of time, which starts the command (without
//! copying its own page tables) and supervises it with the reaper's
//! guarantees (see `serve`).
//!
//! - **Started** when a session with hooks starts, in the background
//!   ([`start_in_background`]), or else at the first command that asks for
//!   it ([`submit`]): a session without hooks pays nothing. By a thread
//!   that stays alive as long as the server (the parent-death signal
//!   follows the thread that forked), waits for it and reaps it.
//! - **Dies with cogni**: its parent-death signal is SIGKILL, and end of
//!   file on its control socket (cogni exited or gave it up) makes it exit.
//!   A worker kills everything its command started when the server dies
//!   (its parent-death signal), when cogni closes the command's socket, and
//!   when the command exits: no process it started outlives it.
//! - **One socket per command**: cogni sends the request (argv, cwd,
//!   environment) with the command's stdin, stdout and stderr and its end
//!   of a new socket pair over the control socket (`SCM_RIGHTS`); the
//!   server passes all of it on to the worker. On that socket the worker
//!   reports [`Report::Exited`] (or [`Report::SpawnFailed`]) and cogni
//!   sends [`signal_message`]s (SIGTERM, SIGKILL) for the command's process
//!   group. End of file from cogni (the run was dropped: cancelled) kills
//!   the group; end of file from the worker before a report means the
//!   server died, and with it the command.
//! - **Never in the way**: when the binary cannot serve (a test harness
//!   never calls [`serve_if_asked`]), the server cannot start or a request
//!   cannot be sent, the command starts the usual way (see `tools::exec`,
//!   which also runs a command again the usual way when the server died
//!   under it), with a warning in the log.

mod serve;

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// `argv[1]` of the fork server's process (not a command of the CLI: it is
/// checked before the command line is parsed, and never shown in `--help`).
const MODE: &str = "__fork-server";
/// The descriptor the server's control socket is passed on.
const CONTROL_FD: libc::c_int = 3;
/// The largest request (argv, cwd and environment) sent to the server; a
/// larger one starts the usual way.
const MAX_REQUEST: usize = 128 * 1024;
/// Descriptors passed with a request: stdin, stdout, stderr, the socket.
const REQUEST_FDS: usize = 4;

/// Kinds of the 8-byte messages on a command's socket: a kind and a value.
const SPAWN_FAILED: i32 = 1;
const EXITED: i32 = 2;
const SIGNAL: i32 = 3;

/// How a command the server started ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// It could not start (an errno).
    SpawnFailed(i32),
    /// Its wait status.
    Exited(i32),
}

impl Report {
    /// The report in an 8-byte message from the server, if it is one.
    pub fn parse(message: &[u8]) -> Option<Report> {
        let (kind, value) = parse_message(message)?;
        match kind {
            SPAWN_FAILED => Some(Report::SpawnFailed(value)),
            EXITED => Some(Report::Exited(value)),
            _ => None,
        }
    }
}

/// The message asking the server to send `signal` to the command's process
/// group.
pub fn signal_message(signal: i32) -> [u8; 8] {
    message(SIGNAL, signal)
}

fn message(kind: i32, value: i32) -> [u8; 8] {
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&kind.to_ne_bytes());
    bytes[4..].copy_from_slice(&value.to_ne_bytes());
    bytes
}

fn parse_message(bytes: &[u8]) -> Option<(i32, i32)> {
    let bytes: &[u8; 8] = bytes.try_into().ok()?;
    let [a, b, c, d, e, f, g, h] = *bytes;
    Some((
        i32::from_ne_bytes([a, b, c, d]),
        i32::from_ne_bytes([e, f, g, h]),
    ))
}

/// The fork server's mode was asked for by hand: there is no control
/// socket to serve (the binary's `main` says so and exits).
#[derive(Debug, thiserror::Error)]
#[error("`{MODE}` is internal: the process cogni starts to run hooks")]
pub struct NotStartedByCogni;

/// First thing in a binary's `main`: in the fork server's process this
/// serves and exits; anywhere else it lets this process start one. A binary
/// that never calls it (a test harness) starts every command the usual way.
pub fn serve_if_asked() -> Result<(), NotStartedByCogni> {
    if std::env::args_os().nth(1).as_deref() == Some(OsStr::new(MODE)) {
        let code = serve::main(CONTROL_FD).ok_or(NotStartedByCogni)?;
        std::process::exit(code);
    }
    ENABLED.store(true, Ordering::Relaxed);
    Ok(())
}

/// Whether commands go through the fork server (true once
/// [`serve_if_asked`] ran). Turning it off keeps a running server idle;
/// for benchmarks that compare both ways in one process.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static SERVER: Mutex<State> = Mutex::new(State::NotStarted);

enum State {
    NotStarted,
    Running {
        control: OwnedFd,
        pid: u32,
    },
    /// It failed to start or died: commands start the usual way.
    Off,
}

/// The descriptors of a command started by the server.
pub struct Stdio<'a> {
    /// Becomes the command's stdin.
    pub stdin: BorrowedFd<'a>,
    /// Becomes the command's stdout.
    pub stdout: BorrowedFd<'a>,
    /// Becomes the command's stderr.
    pub stderr: BorrowedFd<'a>,
    /// The server's end of the command's socket pair.
    pub socket: BorrowedFd<'a>,
}

/// Ask the fork server (started now if need be) to run `argv[0]` (a path)
/// with exactly `env` in `cwd`. False when the caller must start it the
/// usual way: the server is off or unavailable, or the request cannot be
/// sent (too large, a NUL byte).
pub fn submit(argv: &[String], env: &BTreeMap<String, String>, cwd: &Path, stdio: Stdio) -> bool {
    if !ENABLED.load(Ordering::Relaxed) {
        return false;
    }
    let Some(request) = encode_request(argv, env, cwd) else {
        return false;
    };
    let mut state = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    ensure_started(&mut state);
    let State::Running { control, .. } = &*state else {
        return false;
    };
    let fds = [stdio.stdin, stdio.stdout, stdio.stderr, stdio.socket];
    match send_with_fds(control.as_fd(), &request, &fds) {
        Ok(()) => true,
        // Full: the server is behind. This one starts the usual way.
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => false,
        Err(e) => {
            stop(&mut state, &format!("cannot reach it: {e}"));
            false
        }
    }
}

/// Start the server on another thread, unless it runs (or is starting)
/// already or this process may not: the first command then finds it
/// ready. For sessions with hooks, so that it starts while the first
/// request to the model is on its way.
pub fn start_in_background() {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let not_started = match SERVER.try_lock() {
        Ok(state) => matches!(*state, State::NotStarted),
        // Being started (or used): nothing to do.
        Err(std::sync::TryLockError::WouldBlock) => false,
        Err(std::sync::TryLockError::Poisoned(e)) => matches!(*e.into_inner(), State::NotStarted),
    };
    if not_started {
        let _ = std::thread::Builder::new()
            .name("fork-server-start".into())
            .spawn(|| ensure_started(&mut SERVER.lock().unwrap_or_else(|e| e.into_inner())));
    }
}

fn ensure_started(state: &mut State) {
    if matches!(*state, State::NotStarted) {
        *state = match start() {
            Ok((control, pid)) => State::Running { control, pid },
            Err(e) => {
                tracing::warn!(
                    "cannot start the fork server for hooks ({e}); they start the usual way"
                );
                State::Off
            }
        };
    }
}

/// The server failed a command (it did not end a killed command): stop it;
/// from now on commands start the usual way.
pub fn give_up(why: &str) {
    stop(&mut SERVER.lock().unwrap_or_else(|e| e.into_inner()), why);
}

fn stop(state: &mut State, why: &str) {
    if let State::Running { pid, .. } = *state {
        tracing::warn!("the fork server for hooks failed ({why}); they start the usual way");
        // SAFETY: kill has no memory-safety preconditions. The server is
        // unreaped while the state says Running (its thread marks it off
        // before reaping it), so the pid is still the server's.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        // Dropping the control socket here: the server's end of file.
        *state = State::Off;
    }
}

/// Spawn the server from a thread that lives as long as it does; its
/// control socket and pid.
fn start() -> io::Result<(OwnedFd, u32)> {
    let (ours, theirs) = socket_pair()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("fork-server".into())
        .spawn(move || {
            let mut child = match spawn_server(&theirs) {
                Ok(child) => child,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            drop(theirs);
            let pid = child.id();
            let _ = tx.send(Ok(pid));
            wait_exited(pid);
            {
                let mut state = SERVER.lock().unwrap_or_else(|e| e.into_inner());
                if matches!(*state, State::Running { pid: running, .. } if running == pid) {
                    tracing::warn!("the fork server for hooks exited; they start the usual way");
                    *state = State::Off;
                }
            }
            let _ = child.wait();
        })?;
    let pid = rx
        .recv()
        .map_err(|_| io::Error::other("its thread ended"))??;
    Ok((ours, pid))
}

/// Exec cogni's binary as the server, its control socket on [`CONTROL_FD`],
/// in its own process group (the terminal's signals are cogni's business),
/// with SIGKILL as its parent-death signal and an empty environment.
fn spawn_server(control: &OwnedFd) -> io::Result<std::process::Child> {
    let control = control.as_raw_fd();
    let parent = std::process::id();
    let mut command = std::process::Command::new("/proc/self/exe");
    command
        .arg0("cogni")
        .arg(MODE)
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe system calls (dup2, setpgid, prctl, getppid) on
    // values copied before the fork.
    unsafe {
        command.pre_exec(move || {
            // dup2 clears close-on-exec on the copy: it survives the exec.
            if libc::dup2(control, CONTROL_FD) == -1
                || libc::setpgid(0, 0) == -1
                || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Block until `pid` (a child) exited, without reaping it.
fn wait_exited(pid: u32) {
    loop {
        // SAFETY: siginfo_t is plain data that waitid fills.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is writable; WNOWAIT leaves the child unreaped.
        let ret = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if ret == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A connected pair of close-on-exec, non-blocking sequenced-packet
/// sockets: every message arrives whole, with the descriptors sent along
/// with it.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let ret = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
            fds.as_mut_ptr(),
        )
    };
    if ret == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair succeeded: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Send `data` with `fds` as one message, without blocking.
fn send_with_fds(socket: BorrowedFd, data: &[u8], fds: &[BorrowedFd]) -> io::Result<()> {
    let fd_bytes = std::mem::size_of_val(fds) as libc::c_uint;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes) } as usize;
    // u64s: a cmsghdr's alignment.
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain data; the fields set below point into
    // `iov` and `control`, which outlive the sendmsg call. CMSG_FIRSTHDR is
    // not null: `control` has room for one header and `fds`, and the
    // descriptors are written unaligned.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = space as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
            let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
            for (i, fd) in fds.iter().enumerate() {
                data.add(i).write_unaligned(fd.as_raw_fd());
            }
        }
        libc::sendmsg(
            socket.as_raw_fd(),
            &msg,
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if sent == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One message received whole.
struct Received {
    len: usize,
    fds: Vec<OwnedFd>,
    /// The message or its descriptors did not fit.
    truncated: bool,
}

/// Receive one message into `buf`, with up to [`REQUEST_FDS`] descriptors
/// (close-on-exec); `len` 0 is end of file.
fn recv_with_fds(socket: BorrowedFd, buf: &mut [u8]) -> io::Result<Received> {
    let fd_bytes = (REQUEST_FDS * std::mem::size_of::<libc::c_int>()) as libc::c_uint;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as in `send_with_fds`; the kernel writes at most `buf.len()`
    // bytes and `space` bytes of control data. Each SCM_RIGHTS descriptor
    // the kernel installed is new and ours to own.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let n = libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n == -1 {
            return Err(io::Error::last_os_error());
        }
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
                let header = libc::CMSG_LEN(0) as usize;
                let count =
                    ((*cmsg).cmsg_len as usize - header) / std::mem::size_of::<libc::c_int>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        Ok(Received {
            len: n as usize,
            fds,
            truncated: msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0,
        })
    }
}

/// A request as the server receives it: its argument and environment
/// counts, then the cwd, the arguments and `KEY=value` entries, each
/// NUL-terminated. `None` when a string holds a NUL byte or the request is
/// over [`MAX_REQUEST`].
fn encode_request(argv: &[String], env: &BTreeMap<String, String>, cwd: &Path) -> Option<Vec<u8>> {
    let strings = argv.len() + env.len() + 1;
    let mut out = Vec::with_capacity(8 + strings * 16);
    out.extend_from_slice(&u32::try_from(argv.len()).ok()?.to_ne_bytes());
    out.extend_from_slice(&u32::try_from(env.len()).ok()?.to_ne_bytes());
    let mut push = |parts: &[&[u8]]| {
        for part in parts {
            if part.contains(&0) {
                return None;
            }
            out.extend_from_slice(part);
        }
        out.push(0);
        Some(())
    };
    push(&[cwd.as_os_str().as_bytes()])?;
    for arg in argv {
        push(&[arg.as_bytes()])?;
    }
    for (key, value) in env {
        push(&[key.as_bytes(), b"=", value.as_bytes()])?;
    }
    (out.len() <= MAX_REQUEST).then_some(out)
}

/// What [`encode_request`] encoded.
#[derive(Debug, PartialEq)]
struct Request {
    cwd: CString,
    argv: Vec<CString>,
    env: Vec<CString>,
}

fn decode_request(bytes: &[u8]) -> Option<Request> {
    let count = |at: usize| -> Option<usize> {
        let word: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        usize::try_from(u32::from_ne_bytes(word)).ok()
    };
    let (argc, envc) = (count(0)?, count(4)?);
    let body = bytes.get(8..)?;
    let body = body.strip_suffix(&[0])?;
    let mut strings = body
        .split(|&b| b == 0)
        .map(|s| CString::new(s).expect("split at NUL"));
    let cwd = strings.next()?;
    let argv: Vec<CString> = strings.by_ref().take(argc).collect();
    let env: Vec<CString> = strings.by_ref().collect();
    (argc > 0 && argv.len() == argc && env.len() == envc).then_some(Request { cwd, argv, env })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_decodes_to_what_was_encoded() {
        let argv = vec!["/bin/echo".to_string(), "a b".into(), String::new()];
        let env = BTreeMap::from([
            ("A".to_string(), "1=2".to_string()),
            ("B".into(), "".into()),
        ]);
        let bytes = encode_request(&argv, &env, Path::new("/tmp")).unwrap();
        let request = decode_request(&bytes).unwrap();
        assert_eq!(request.cwd.as_bytes(), b"/tmp");
        let argv: Vec<&[u8]> = request.argv.iter().map(|s| s.as_bytes()).collect();
        assert_eq!(argv, [&b"/bin/echo"[..], b"a b", b""]);
        let env: Vec<&[u8]> = request.env.iter().map(|s| s.as_bytes()).collect();
        assert_eq!(env, [&b"A=1=2"[..], b"B="]);
        // An empty environment.
        let bytes =
            encode_request(&argv_of("/bin/true"), &BTreeMap::new(), Path::new("/")).unwrap();
        assert_eq!(decode_request(&bytes).unwrap().env, Vec::<CString>::new());
    }

    fn argv_of(program: &str) -> Vec<String> {
        vec![program.to_string()]
    }

    #[test]
    fn what_cannot_be_sent_or_makes_no_sense_is_refused() {
        let env = BTreeMap::new();
        assert!(encode_request(&argv_of("/bin/a\0b"), &env, Path::new("/")).is_none());
        let big = BTreeMap::from([("BIG".to_string(), "x".repeat(MAX_REQUEST))]);
        assert!(encode_request(&argv_of("/bin/true"), &big, Path::new("/")).is_none());
        let good = encode_request(&argv_of("/bin/true"), &env, Path::new("/")).unwrap();
        assert!(
            decode_request(&good[..good.len() - 1]).is_none(),
            "unterminated"
        );
        assert!(decode_request(&good[..6]).is_none(), "short header");
        let mut no_argv = good.clone();
        no_argv[..4].copy_from_slice(&0u32.to_ne_bytes());
        assert!(decode_request(&no_argv).is_none(), "counts do not add up");
    }

    #[test]
    fn messages_carry_a_kind_and_a_value() {
        assert_eq!(
            Report::parse(&message(SPAWN_FAILED, libc::ENOENT)),
            Some(Report::SpawnFailed(libc::ENOENT))
        );
        assert_eq!(
            Report::parse(&message(EXITED, -3)),
            Some(Report::Exited(-3))
        );
        assert_eq!(Report::parse(&signal_message(15)), None);
        assert_eq!(parse_message(&signal_message(15)), Some((SIGNAL, 15)));
        assert_eq!(Report::parse(&[0; 4]), None);
    }

    #[test]
    fn descriptors_travel_with_a_message() {
        let (a, b) = socket_pair().unwrap();
        let (x, y) = socket_pair().unwrap();
        send_with_fds(a.as_fd(), b"hello", &[x.as_fd()]).unwrap();
        let mut buf = [0u8; 16];
        let got = recv_with_fds(b.as_fd(), &mut buf).unwrap();
        assert_eq!(
            (&buf[..got.len], got.fds.len(), got.truncated),
            (&b"hello"[..], 1, false)
        );
        // The received descriptor is the same socket: it reaches `y`.
        send_with_fds(got.fds[0].as_fd(), b"via", &[]).unwrap();
        let got = recv_with_fds(y.as_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..got.len], b"via");
        drop(a);
        assert_eq!(recv_with_fds(b.as_fd(), &mut buf).unwrap().len, 0);
    }
}
