//! Running child processes for tools: own process group, death with the
//! parent, no stdin, bounded capture of stdout and stderr, timeouts that kill
//! the whole group, and cancellation (dropping the future) that does too.
//! With a [`Confined`] the child enters the kernel sandbox before exec;
//! without one a subreaper supervises it (see `crate::sandbox`). Either
//! way nothing it started outlives the call. [`run_served`] starts an
//! unconfined command from the fork server instead of forking cogni
//! (`cogni_sandbox::fork_server`), with the same supervision.
//!
//! Each stream keeps at most `capture_limit_bytes` in memory: the first half
//! and the last half of what was written; everything in between is counted
//! (bytes and line feeds), not kept.

#![deny(missing_docs)]

mod capture;
mod group;
#[cfg(target_os = "linux")]
mod served;
#[cfg(not(target_os = "linux"))]
#[path = "unserved.rs"]
mod served;
pub mod truncate;

pub use capture::{Capture, CapturedStream, Sink};
pub use group::Tree;

use crate::truncate::Limits;
use cogni_sandbox::Confined;
use group::{Group, Signal};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// Time between SIGTERM and SIGKILL when a command times out.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
/// How long output is still read after the command exited while some other
/// process (a background job it started) keeps the pipes open.
pub const DEFAULT_IO_DRAIN: Duration = Duration::from_millis(500);

const READ_CHUNK: usize = 64 * 1024;

/// One process to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// Program and arguments; the program is looked up in `PATH` of `env`.
    pub argv: Vec<String>,
    /// The directory the process starts in.
    pub cwd: PathBuf,
    /// The complete environment of the child (nothing else is inherited).
    pub env: BTreeMap<String, String>,
    /// How long it may run; then its process group gets SIGTERM and, after
    /// [`ExecRequest::kill_grace`], SIGKILL.
    pub timeout: Duration,
    /// Bytes kept in memory per stream (head + tail).
    pub capture_limit_bytes: usize,
    /// See [`DEFAULT_KILL_GRACE`].
    pub kill_grace: Duration,
    /// See [`DEFAULT_IO_DRAIN`].
    pub io_drain: Duration,
    /// The kernel sandbox to enter; `None` runs unconfined.
    pub sandbox: Option<Arc<Confined>>,
    /// Written to the process's stdin, which is then closed; `None`:
    /// stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
}

/// Why a process could not be run at all (a process that ran and failed is an
/// [`ExecOutput`], not an error).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// `argv` was empty.
    #[error("empty command")]
    EmptyCommand,
    /// The program could not be started (not found, not executable, the sandbox
    /// could not be set up).
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// `argv[0]`, as given.
        program: String,
        /// Why: the OS error from spawning, entering the sandbox before exec, or the fork server.
        source: io::Error,
    },
    /// Waiting for the child failed.
    #[error("cannot wait for the process: {0}")]
    Wait(io::Error),
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it (the signal's number).
    Signaled(i32),
}

impl Termination {
    fn from_status(status: ExitStatus) -> Self {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        // Windows has no signals: a killed process has an exit code.
        #[cfg(windows)]
        let signal = None;
        match (status.code(), signal) {
            (Some(code), _) => Termination::Exited(code),
            (None, Some(signal)) => Termination::Signaled(signal),
            // Unix statuses are always one or the other.
            (None, None) => Termination::Exited(-1),
        }
    }

    /// Shell convention: the exit code, or 128 + the signal number.
    pub fn exit_code(self) -> i32 {
        match self {
            Termination::Exited(code) => code,
            Termination::Signaled(signal) => 128 + signal,
        }
    }

    /// True for exit code 0; a signal is a failure.
    pub fn success(self) -> bool {
        self == Termination::Exited(0)
    }
}

/// What a finished [`run`] reports: how the process ended and what it wrote.
#[derive(Debug, Clone)]
pub struct ExecOutput {
    /// How the process ended (after a timeout: the signal that ended it).
    pub termination: Termination,
    /// From spawn until the call returned.
    pub duration: Duration,
    /// True when the timeout ran out and the process group was killed.
    pub timed_out: bool,
    /// What it wrote on stdout, head and tail.
    pub stdout: CapturedStream,
    /// What it wrote on stderr, head and tail.
    pub stderr: CapturedStream,
    /// The command exited but another process still held stdout or stderr
    /// open; reading stopped after the drain period and later output is lost.
    pub output_left_open: bool,
}

/// The executable regular file `name` in the first directory of `path` (a
/// `PATH` value) that has one. Only absolute directories are searched: a
/// relative entry (`.`, an empty one) would find a program in whatever
/// directory the command runs in. On Windows entries are separated by `;`
/// and a name without an extension is tried with `.exe`, `.com`, `.cmd`
/// and `.bat`, in that order.
pub fn find_program(name: &str, path: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .flat_map(|dir| candidates(&dir, name))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    vec![dir.join(name)]
}

#[cfg(windows)]
fn candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    if Path::new(name).extension().is_some() {
        return vec![dir.join(name)];
    }
    ["exe", "com", "cmd", "bat"]
        .iter()
        .map(|ext| dir.join(name).with_extension(ext))
        .collect()
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    let runnable = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0;
    // Windows runs what its extension says it can run.
    #[cfg(windows)]
    let runnable = true;
    meta.is_file() && runnable
}

/// Run `req` to completion, timeout or cancellation.
///
/// Dropping the returned future kills the child's process group.
pub async fn run(req: ExecRequest) -> Result<ExecOutput, ExecError> {
    run_captured(req, Launcher::Spawn).await
}

/// [`run`], starting an unconfined command given by its path from the
/// fork server (see `cogni_sandbox::fork_server`): the same supervision
/// without forking cogni. Anything else, or when the server is unavailable,
/// starts the usual way.
pub async fn run_served(req: ExecRequest) -> Result<ExecOutput, ExecError> {
    run_captured(req, Launcher::ForkServer).await
}

/// [`run`] or [`run_served`]. A command whose fork server died while it
/// ran (killing it) runs again the usual way, with a fresh capture, within
/// what is left of its timeout: the two runs together never take longer
/// than the one timeout.
async fn run_captured(
    mut req: ExecRequest,
    mut launcher: Launcher,
) -> Result<ExecOutput, ExecError> {
    let started = Instant::now();
    loop {
        let mut stdout = Capture::new(req.capture_limit_bytes);
        let mut stderr = Capture::new(req.capture_limit_bytes);
        let ended = run_launched(
            &req,
            launcher,
            &mut stdout,
            &mut stderr,
            std::future::pending(),
            |_| {},
        )
        .await;
        let ended = match ended {
            Err(ExecError::Wait(e)) if served::lost(&e) => {
                tracing::warn!("`{}`: {e}; running it again the usual way", req.argv[0]);
                launcher = Launcher::Spawn;
                req.timeout = req.timeout.saturating_sub(started.elapsed());
                continue;
            }
            ended => ended?,
        };
        return Ok(ExecOutput {
            termination: ended.termination,
            duration: started.elapsed(),
            timed_out: ended.timed_out,
            stdout: stdout.finish(),
            stderr: stderr.finish(),
            output_left_open: ended.output_left_open,
        });
    }
}

/// How a run ended; its output went to the sinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// How the process ended.
    pub termination: Termination,
    /// From spawn until the run returned.
    pub duration: Duration,
    /// True when the timeout ran out and the process group was killed.
    pub timed_out: bool,
    /// `stop` resolved and the process was terminated.
    pub stopped: bool,
    /// See [`ExecOutput::output_left_open`].
    pub output_left_open: bool,
}

/// Run `req`, passing its output to the sinks as it comes. When `stop`
/// resolves first, the process is terminated as on a timeout (SIGTERM,
/// then SIGKILL after the grace). `on_start` gets a handle on the
/// process's tree once it runs.
///
/// Dropping the returned future kills the child's process group.
pub async fn run_streaming(
    req: ExecRequest,
    stdout: &mut impl Sink,
    stderr: &mut impl Sink,
    stop: impl Future<Output = ()>,
    on_start: impl FnOnce(Tree),
) -> Result<Ended, ExecError> {
    run_launched(&req, Launcher::Spawn, stdout, stderr, stop, on_start).await
}

/// Who starts the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launcher {
    /// cogni forks it (tokio's spawn).
    Spawn,
    /// The fork server, when it can; else as `Spawn`.
    ForkServer,
}

async fn run_launched(
    req: &ExecRequest,
    launcher: Launcher,
    stdout: &mut impl Sink,
    stderr: &mut impl Sink,
    stop: impl Future<Output = ()>,
    on_start: impl FnOnce(Tree),
) -> Result<Ended, ExecError> {
    if req.argv.is_empty() {
        return Err(ExecError::EmptyCommand);
    }
    let start = Instant::now();
    let served = match launcher {
        Launcher::ForkServer => served::launch(req),
        Launcher::Spawn => None,
    };
    let mut process = match served {
        Some(process) => process?,
        None => spawn(req)?,
    };
    if let Some(tree) = process.handle.tree() {
        on_start(tree);
    }
    let input = req.stdin.clone().unwrap_or_default();
    let (stdin_pipe, stdout_pipe, stderr_pipe) = (
        process.stdin.take(),
        process.stdout.take(),
        process.stderr.take(),
    );
    let handle = &mut process.handle;

    let pumps = async {
        tokio::join!(
            feed(stdin_pipe, &input),
            pump(stdout_pipe, stdout),
            pump(stderr_pipe, stderr)
        );
    };
    let mut pumps = Pumps::new(pumps);
    let waited = pumps
        .alongside(async {
            tokio::select! {
                waited = tokio::time::timeout_at(start + req.timeout, handle.wait()) => {
                    waited.map(|status| (status, false)).map_err(|_| false)
                }
                () = stop => Err(true),
            }
        })
        .await;
    let (status, timed_out, stopped) = match waited {
        Ok((status, _)) => (status?, false, false),
        Err(stopped) => {
            let status = pumps.alongside(terminate(handle, req.kill_grace)).await?;
            (status, !stopped, stopped)
        }
    };
    let output_left_open = !pumps.finish_within(req.io_drain).await;
    handle.disarm();
    Ok(Ended {
        termination: Termination::from_status(status),
        duration: start.elapsed(),
        timed_out,
        stopped,
        output_left_open,
    })
}

/// A started process and our ends of its pipes.
struct Process {
    handle: Handle,
    stdin: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    stdout: Option<Box<dyn AsyncRead + Send + Unpin>>,
    stderr: Option<Box<dyn AsyncRead + Send + Unpin>>,
}

/// What waiting for a process and signalling its group go through.
enum Handle {
    /// cogni's own child; `group` kills its tree if the run is dropped.
    Child { child: Child, group: Group },
    /// Started by the fork server; dropping its socket kills the group.
    // Never made off Linux (no fork server there).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Served(served::Served),
}

impl Handle {
    /// The process's tree, known for cogni's own child.
    fn tree(&self) -> Option<Tree> {
        match self {
            Handle::Child { group, .. } => Some(group.tree()),
            Handle::Served(_) => None,
        }
    }

    async fn wait(&mut self) -> Result<ExitStatus, ExecError> {
        match self {
            Handle::Child { child, .. } => child.wait().await.map_err(ExecError::Wait),
            Handle::Served(served) => served.wait().await,
        }
    }

    /// Wait after a signal: a fork server that died took the command with
    /// it (SIGKILL).
    async fn wait_signaled(&mut self) -> Result<ExitStatus, ExecError> {
        match self {
            Handle::Child { child, .. } => child.wait().await.map_err(ExecError::Wait),
            Handle::Served(served) => served.wait_signaled().await,
        }
    }

    /// Wait after SIGKILL; the server gets `grace` to answer.
    async fn wait_killed(&mut self, grace: Duration) -> Result<ExitStatus, ExecError> {
        match self {
            Handle::Child { child, .. } => child.wait().await.map_err(ExecError::Wait),
            Handle::Served(served) => served.wait_killed(grace).await,
        }
    }

    fn signal(&self, signal: Signal) {
        match self {
            Handle::Child { group, .. } => group.signal(signal),
            Handle::Served(served) => served.signal(signal),
        }
    }

    /// The run ended normally: nothing to kill when it is dropped.
    fn disarm(&mut self) {
        if let Handle::Child { group, .. } = self {
            group.disarm();
        }
    }
}

/// Start `req` as cogni's own child: isolated, then confined or
/// supervised before exec.
fn spawn(req: &ExecRequest) -> Result<Process, ExecError> {
    let stdin = if req.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut cmd = supervised(&req.argv, &req.cwd, &req.env, req.sandbox.clone(), stdin)?;
    let (mut child, group) = start_child(&mut cmd, &req.argv)?;
    Ok(Process {
        stdin: child.stdin.take().map(|p| Box::new(p) as _),
        stdout: child.stdout.take().map(|p| Box::new(p) as _),
        stderr: child.stderr.take().map(|p| Box::new(p) as _),
        handle: Handle::Child { child, group },
    })
}

/// The command for `argv`: in `cwd`, with exactly `env`, stdout and
/// stderr piped, in its own process group, dying with cogni, and either
/// confined by `sandbox` or supervised by the subreaper.
fn supervised(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    sandbox: Option<Arc<Confined>>,
    stdin: Stdio,
) -> Result<Command, ExecError> {
    // On macOS a confined command runs under sandbox-exec.
    let argv = match &sandbox {
        Some(confined) => confined.argv(argv),
        None => argv.to_vec(),
    };
    let (program, args) = argv.split_first().ok_or(ExecError::EmptyCommand)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    group::isolate(&mut cmd);
    // SAFETY: `enter` and `enter_unconfined` are made for a pre_exec hook
    // (after `isolate`'s): they run between fork and exec and use only
    // async-signal-safe system calls on data prepared before the fork.
    #[cfg(unix)]
    unsafe {
        match sandbox {
            Some(confinement) => {
                cmd.pre_exec(move || confinement.enter());
            }
            // Off Linux there is no subreaper: the process group is what
            // cogni kills.
            #[cfg(target_os = "linux")]
            None => {
                cmd.pre_exec(|| cogni_sandbox::enter_unconfined());
            }
            #[cfg(not(target_os = "linux"))]
            None => {}
        }
    }
    // No backend confines a command on Windows: `Confinement::new`
    // refuses there, so no `Confined` exists to enter.
    #[cfg(windows)]
    drop(sandbox);
    Ok(cmd)
}

/// Spawn `cmd` and take hold of its tree.
fn start_child(cmd: &mut Command, argv: &[String]) -> Result<(Child, Group), ExecError> {
    let spawn_error = |source| ExecError::Spawn {
        program: argv.first().cloned().unwrap_or_default(),
        source,
    };
    let child = cmd.spawn().map_err(spawn_error)?;
    let group = Group::attach(&child).map_err(spawn_error)?;
    Ok((child, group))
}

/// A long-lived process cogni talks to over its stdin and stdout (an MCP
/// server), supervised like every command: its own process group, the
/// subreaper below it, killed with cogni. What it writes on stderr is kept
/// (head and tail) for error messages. Dropping it kills its process group
/// and everything the subreaper holds.
pub struct Service {
    /// Always cogni's own child.
    handle: Handle,
    stderr: Arc<std::sync::Mutex<Capture>>,
}

/// The pipes of a [`Service`].
pub struct ServicePipes {
    /// Writes to the server's stdin.
    pub stdin: tokio::process::ChildStdin,
    /// Reads the server's stdout.
    pub stdout: tokio::process::ChildStdout,
}

impl Service {
    /// Start `argv` in `cwd` with exactly `env`, unconfined (a server
    /// runs with the user's permissions, like a command approved to run
    /// without the sandbox). Keeps at most `stderr_limit` bytes of stderr.
    /// Call it on the runtime that reads the pipes.
    pub fn spawn(
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
        stderr_limit: usize,
    ) -> Result<(Service, ServicePipes), ExecError> {
        let mut cmd = supervised(argv, cwd, env, None, Stdio::piped())?;
        cmd.kill_on_drop(true);
        let (mut child, group) = start_child(&mut cmd, argv)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ExecError::Spawn {
                program: argv[0].clone(),
                source: io::Error::other("no pipes to the process"),
            });
        };
        let stderr = Arc::new(std::sync::Mutex::new(Capture::new(stderr_limit)));
        if let Some(pipe) = child.stderr.take() {
            let capture = stderr.clone();
            tokio::spawn(async move {
                pump(Some(pipe), &mut SharedCapture(capture)).await;
            });
        }
        Ok((
            Service {
                handle: Handle::Child { child, group },
                stderr,
            },
            ServicePipes { stdin, stdout },
        ))
    }

    /// What it wrote on stderr so far, capped to `limits`.
    pub fn stderr(&self, limits: Limits) -> String {
        match self.stderr.lock() {
            Ok(capture) => capture.clone().finish().to_model_text(limits),
            Err(_) => String::new(),
        }
    }

    /// How it ended, if it did.
    pub fn exited(&mut self) -> Option<Termination> {
        match &mut self.handle {
            Handle::Child { child, .. } => child.try_wait().ok().flatten(),
            Handle::Served(_) => None,
        }
        .map(Termination::from_status)
    }

    /// Stop it: SIGTERM to its group, SIGKILL after `grace`.
    pub async fn stop(mut self, grace: Duration) {
        let _ = terminate(&mut self.handle, grace).await;
    }
}

/// A capture shared with whoever reads it while the pipe is pumped.
struct SharedCapture(Arc<std::sync::Mutex<Capture>>);

impl Sink for SharedCapture {
    fn push(&mut self, bytes: &[u8]) {
        if let Ok(mut capture) = self.0.lock() {
            capture.push(bytes);
        }
    }
}

/// SIGTERM to the group, SIGKILL after `grace`, and SIGKILL again once the
/// leader is gone so that members ignoring SIGTERM do not survive.
async fn terminate(handle: &mut Handle, grace: Duration) -> Result<ExitStatus, ExecError> {
    handle.signal(Signal::Term);
    let status = match tokio::time::timeout(grace, handle.wait_signaled()).await {
        Ok(status) => status,
        Err(_) => {
            handle.signal(Signal::Kill);
            handle.wait_killed(grace).await
        }
    };
    handle.signal(Signal::Kill);
    status
}

/// The stdout/stderr readers, polled alongside whatever the caller waits for
/// so that a full pipe never blocks the child.
struct Pumps<F> {
    fut: Pin<Box<F>>,
    done: bool,
}

impl<F: Future<Output = ()>> Pumps<F> {
    fn new(fut: F) -> Self {
        Pumps {
            fut: Box::pin(fut),
            done: false,
        }
    }

    async fn alongside<T>(&mut self, other: impl Future<Output = T>) -> T {
        tokio::pin!(other);
        loop {
            tokio::select! {
                out = &mut other => return out,
                () = &mut self.fut, if !self.done => self.done = true,
            }
        }
    }

    /// True when both streams reached end of file within `limit`.
    async fn finish_within(&mut self, limit: Duration) -> bool {
        if !self.done {
            self.done = tokio::time::timeout(limit, &mut self.fut).await.is_ok();
        }
        self.done
    }
}

/// Write `input` to the child's stdin and close it; a child that does not
/// read it (a closed pipe) is not an error.
async fn feed(stdin: Option<impl AsyncWrite + Unpin>, input: &[u8]) {
    use tokio::io::AsyncWriteExt;
    if let Some(mut stdin) = stdin {
        let _ = stdin.write_all(input).await;
        let _ = stdin.shutdown().await;
    }
}

async fn pump<R: AsyncRead + Unpin>(reader: Option<R>, sink: &mut impl Sink) {
    let Some(mut reader) = reader else { return };
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => sink.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A broken pipe read ends like end of file: nothing more comes.
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn termination_exit_codes() {
        assert_eq!(Termination::Exited(3).exit_code(), 3);
        assert_eq!(Termination::Signaled(9).exit_code(), 137);
        assert!(Termination::Exited(0).success());
        assert!(!Termination::Signaled(15).success());
    }

    #[cfg(unix)]
    #[test]
    fn programs_are_found_in_absolute_directories_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("git");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let absolute = format!("/nonexistent:{}", dir.path().display());
        assert_eq!(find_program("git", &absolute), Some(program));
        // `.` and an empty entry mean the directory a command runs in.
        assert_eq!(find_program("git", ".::nonexistent"), None);
        assert_eq!(find_program("no-such-program", "/usr/bin:/bin"), None);
    }

    fn request(argv: &[&str], timeout: Duration) -> ExecRequest {
        ExecRequest {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: std::env::temp_dir(),
            env: std::env::vars().collect(),
            timeout,
            capture_limit_bytes: 1024,
            kill_grace: Duration::from_millis(200),
            io_drain: DEFAULT_IO_DRAIN,
            sandbox: None,
            stdin: None,
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn runs_and_captures_both_streams() {
        let out = run(request(
            &["/bin/sh", "-c", "echo out; echo err >&2; exit 4"],
            Duration::from_secs(10),
        ))
        .await
        .unwrap();
        assert_eq!(out.termination, Termination::Exited(4));
        assert_eq!(out.stdout.head, b"out\n");
        assert_eq!(out.stderr.head, b"err\n");
        assert!(!out.timed_out && !out.output_left_open);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn missing_program_is_a_spawn_error() {
        let err = run(request(
            &["/nonexistent/cogni-test"],
            Duration::from_secs(1),
        ))
        .await
        .unwrap_err();
        assert!(matches!(err, ExecError::Spawn { .. }), "{err}");
        let err = run(request(&[], Duration::from_secs(1))).await.unwrap_err();
        assert!(matches!(err, ExecError::EmptyCommand));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn timeout_reports_and_terminates() {
        let out = run(request(&["sleep", "30"], Duration::from_millis(100)))
            .await
            .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.termination, Termination::Signaled(libc::SIGTERM));
        assert!(out.duration < Duration::from_secs(5));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn stdin_is_given_then_closed_or_null() {
        let mut req = request(&["/bin/cat"], Duration::from_secs(10));
        req.stdin = Some(b"{\"x\": 1}".to_vec());
        let out = run(req).await.unwrap();
        assert_eq!(out.stdout.head, b"{\"x\": 1}");
        // A command that never reads it is not an error.
        let mut req = request(&["/bin/true"], Duration::from_secs(10));
        req.stdin = Some(vec![b'x'; 1 << 20]);
        assert!(run(req).await.unwrap().termination.success());
        // Without stdin, reading gets end of file at once.
        let out = run(request(&["/bin/cat"], Duration::from_secs(10)))
            .await
            .unwrap();
        assert!(out.stdout.is_empty());
    }

    /// Not a test of its own: the child that the Windows tests start (the
    /// test binary, running only this) and then kill.
    #[cfg(windows)]
    #[test]
    #[ignore = "started by other tests"]
    fn sleeper() {
        std::thread::sleep(Duration::from_secs(30));
    }

    #[cfg(windows)]
    #[tokio::test]
    async fn windows_commands_run_and_a_timeout_ends_the_job() {
        let out = run(request(
            &["cmd", "/C", "echo out& echo err 1>&2& exit /b 4"],
            Duration::from_secs(20),
        ))
        .await
        .unwrap();
        assert_eq!(out.termination, Termination::Exited(4));
        assert_eq!(String::from_utf8_lossy(&out.stdout.head).trim_end(), "out");
        assert_eq!(String::from_utf8_lossy(&out.stderr.head).trim_end(), "err");
        let me = std::env::current_exe().unwrap();
        let sleeper = [
            me.to_str().unwrap(),
            "--ignored",
            "--exact",
            "tests::sleeper",
        ];
        let out = run(request(&sleeper, Duration::from_millis(500)))
            .await
            .unwrap();
        assert!(out.timed_out);
        assert!(out.duration < Duration::from_secs(10), "{:?}", out.duration);
        assert!(!out.termination.success());
        let program = find_program("cmd", &std::env::var("PATH").unwrap()).unwrap();
        assert!(program
            .to_string_lossy()
            .to_lowercase()
            .ends_with("cmd.exe"));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn env_is_exactly_the_given_one() {
        let mut req = request(&["/usr/bin/env"], Duration::from_secs(10));
        req.env = BTreeMap::from([("ONLY_THIS".to_string(), "1".to_string())]);
        let out = run(req).await.unwrap();
        assert_eq!(out.stdout.head, b"ONLY_THIS=1\n");
    }
}
