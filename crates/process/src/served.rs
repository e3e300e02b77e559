//! Starting an unconfined command through the fork server
//! (`cogni_sandbox::fork_server`): cogni makes the command's pipes and a
//! socket pair, sends the server the request with the command's ends, and
//! hears on its own end how the command ended. Signals for its process
//! group go the other way; dropping the socket kills the group.

use super::{ExecError, ExecRequest, Handle, Process, Signal};
use cogni_sandbox::fork_server::{self, Report};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::unix::pipe;

/// A command the server started.
pub(super) struct Served {
    socket: AsyncFd<OwnedFd>,
    program: String,
}

/// Start `req` through the fork server: `None` when it must start the
/// usual way (a sandbox, a program not given by its path, no server).
/// Returns once the request is sent: whether the command could start comes
/// with its end ([`Served::wait`]).
pub(super) fn launch(req: &ExecRequest) -> Option<Result<Process, ExecError>> {
    let program = req.argv.first()?;
    if req.sandbox.is_some() || !program.starts_with('/') {
        return None;
    }
    let (stdin_theirs, stdin_ours) = match req.stdin {
        Some(_) => {
            let (read, write) = fork_server::pipe().ok()?;
            (read, Some(write))
        }
        None => (std::fs::File::open("/dev/null").ok()?.into(), None),
    };
    let (stdout_ours, stdout_theirs) = fork_server::pipe().ok()?;
    let (stderr_ours, stderr_theirs) = fork_server::pipe().ok()?;
    let (socket, socket_theirs) = fork_server::socket_pair().ok()?;
    // SAFETY: the AsyncFd owns the OwnedFd: the descriptor stays open, and
    // the same, until the AsyncFd is dropped.
    let socket = unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }.ok()?;
    let sent = fork_server::submit(
        &req.argv,
        &req.env,
        &req.cwd,
        fork_server::Stdio {
            stdin: stdin_theirs.as_fd(),
            stdout: stdout_theirs.as_fd(),
            stderr: stderr_theirs.as_fd(),
            socket: socket_theirs.as_fd(),
        },
    );
    drop((stdin_theirs, stdout_theirs, stderr_theirs, socket_theirs));
    if !sent {
        return None;
    }
    let served = Served {
        socket,
        program: program.clone(),
    };
    Some(register(served, stdin_ours, stdout_ours, stderr_ours))
}

/// Our ends of the pipes, registered with the runtime. An error here is
/// the run's (the command is on its way; dropping the socket kills it).
fn register(
    served: Served,
    stdin: Option<OwnedFd>,
    stdout: OwnedFd,
    stderr: OwnedFd,
) -> Result<Process, ExecError> {
    let stdin = match stdin {
        Some(w) => Some(Box::new(pipe::Sender::from_owned_fd(w).map_err(ExecError::Wait)?) as _),
        None => None,
    };
    let receiver = |r| pipe::Receiver::from_owned_fd(r).map_err(ExecError::Wait);
    Ok(Process {
        handle: Handle::Served(served),
        stdin,
        stdout: Some(Box::new(receiver(stdout)?)),
        stderr: Some(Box::new(receiver(stderr)?)),
    })
}

impl Served {
    /// The next report; `None` at end of file (the server is gone).
    async fn report(&self) -> io::Result<Option<Report>> {
        loop {
            let mut guard = self.socket.readable().await?;
            let mut buf = [0u8; 8];
            let received = guard.try_io(|socket| {
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
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            match received {
                Ok(Ok(0)) => return Ok(None),
                Ok(Ok(n)) => {
                    if let Some(report) = Report::parse(&buf[..n]) {
                        return Ok(Some(report));
                    }
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(e)) => return Err(e),
                // Not readable after all: wait again.
                Err(_) => {}
            }
        }
    }

    /// The command's wait status; a [`lost`] error when the server died
    /// first, a spawn error when it could not start.
    pub(super) async fn wait(&self) -> Result<ExitStatus, ExecError> {
        match self.report().await.map_err(ExecError::Wait)? {
            Some(Report::Exited(status)) => Ok(ExitStatus::from_raw(status)),
            Some(Report::SpawnFailed(errno)) => Err(ExecError::Spawn {
                program: self.program.clone(),
                source: io::Error::from_raw_os_error(errno),
            }),
            None => Err(ExecError::Wait(io::Error::other(ServerLost))),
        }
    }

    /// [`Served::wait`] after a signal: a server that died took the command
    /// with it (the worker's parent-death signal), as a SIGKILL would.
    pub(super) async fn wait_signaled(&self) -> Result<ExitStatus, ExecError> {
        match self.wait().await {
            Err(ExecError::Wait(e)) if lost(&e) => Ok(ExitStatus::from_raw(libc::SIGKILL)),
            status => status,
        }
    }

    /// After SIGKILL: the status within `grace`, or the server is given
    /// up (killed: everything it started dies with it).
    pub(super) async fn wait_killed(&self, grace: Duration) -> Result<ExitStatus, ExecError> {
        match tokio::time::timeout(grace, self.wait_signaled()).await {
            Ok(status) => status,
            Err(_) => {
                fork_server::give_up("it did not end a killed command");
                Ok(ExitStatus::from_raw(libc::SIGKILL))
            }
        }
    }

    /// Ask the server to signal the command's process group.
    pub(super) fn signal(&self, signal: Signal) {
        let message = fork_server::signal_message(signal.number());
        // SAFETY: sending `message` from memory we own; a server that is
        // gone is not an error here (its commands died with it).
        unsafe {
            libc::send(
                self.socket.get_ref().as_raw_fd(),
                message.as_ptr().cast(),
                message.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
    }
}

/// The fork server exited while the command ran, which ended it.
#[derive(Debug)]
struct ServerLost;

impl std::fmt::Display for ServerLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the fork server exited while the command ran, which ended it")
    }
}

impl std::error::Error for ServerLost {}

/// Whether `e` is a [`Served::wait`] that lost its server.
pub(super) fn lost(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<ServerLost>())
}
