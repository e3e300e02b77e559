//! Background shell jobs: `shell` with `background: true` starts one and
//! returns at once; `shell_output` reads what it wrote since the last read
//! (capped like every output) and whether it ended; `shell_kill` stops it.
//!
//! A job runs exactly like a foreground command (same sandbox, same
//! environment, same supervision: nothing it starts outlives it), under a
//! longer timeout. At most `max_background_jobs` run at once. The table
//! belongs to the session ([`super::ToolContext::jobs`]): when it is
//! dropped, every job still running is killed.

use super::output::{render_streams, status_line};
use super::{parse_args, Tool, ToolContext, ToolInput, ToolResult};
use cogni_process::truncate::Limits;
use cogni_process::{self as exec, Capture, CapturedStream, Ended, ExecRequest, Sink};
use cogni_protocol::{CommandEnd, ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};

/// Longest `shell_output` waits for new output.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// Ended jobs kept with unread output; the oldest goes when there are more.
const MAX_ENDED: usize = 16;

/// The background jobs of a session.
#[derive(Debug)]
pub struct JobTable {
    max_running: usize,
    timeout: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u32,
    jobs: BTreeMap<u32, Job>,
}

#[derive(Debug)]
struct Job {
    command: String,
    started: Instant,
    shared: Arc<Shared>,
    /// Ask the job to stop (SIGTERM, then SIGKILL after the grace).
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

/// What the job's task and the readers share.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Bumped on every change (output, end), for readers that wait.
    changed: watch::Sender<u64>,
}

#[derive(Debug)]
struct State {
    stdout: Capture,
    stderr: Capture,
    /// The process tree, once the job runs (killed when the table goes).
    tree: Option<exec::Tree>,
    end: Option<End>,
}

#[derive(Debug, Clone)]
enum End {
    Ran {
        ended: Ended,
        timeout: Duration,
        note: Option<String>,
    },
    Failed(String),
}

/// A job as `/jobs` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobInfo {
    /// The job's id, as `shell` returned it to the model.
    pub id: u32,
    /// The command as the model gave it.
    pub command: String,
    /// True until the job's process has ended.
    pub running: bool,
    /// Running for, or ran for.
    pub elapsed: Duration,
    /// "running", "exited with code 0", ...
    pub status: String,
}

/// What a read returns: the command, how long the job has run, its state,
/// and the new output of each stream.
#[derive(Debug)]
struct Read {
    command: String,
    elapsed: Duration,
    end: Option<End>,
    stdout: CapturedStream,
    stderr: CapturedStream,
}

/// Runs on the job's task when it ends, for cleanup with the exit (the
/// shell tool's protected-path check); its text is added to the end note.
pub type OnEnd = Box<dyn FnOnce() -> futures::future::BoxFuture<'static, Option<String>> + Send>;

impl JobTable {
    /// An empty table allowing `max_running` jobs at once (0 switches
    /// background jobs off), each stopped after `timeout` at most.
    pub fn new(max_running: usize, timeout: Duration) -> Self {
        JobTable {
            max_running,
            timeout,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// False when background jobs are switched off.
    pub fn enabled(&self) -> bool {
        self.max_running > 0
    }

    /// The timeout of a job: `asked` if given, at most the table's.
    pub fn timeout(&self, asked: Option<Duration>) -> Duration {
        asked.map_or(self.timeout, |t| t.min(self.timeout))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start `req` in the background; its id, or why not.
    pub fn start(&self, req: ExecRequest, command: String, on_end: OnEnd) -> Result<u32, String> {
        let mut inner = self.lock();
        let running = inner
            .jobs
            .values()
            .filter(|j| !j.task.is_finished())
            .count();
        if running >= self.max_running {
            return Err(format!(
                "{running} background jobs are running, the most allowed at once \
                 (tools.max_background_jobs); stop one with shell_kill or wait for one to end"
            ));
        }
        inner.forget_oldest_ended();
        inner.next_id += 1;
        let id = inner.next_id;
        let limit = req.capture_limit_bytes;
        let timeout = req.timeout;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                stdout: Capture::new(limit),
                stderr: Capture::new(limit),
                tree: None,
                end: None,
            }),
            changed: watch::channel(0).0,
        });
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let task_shared = shared.clone();
        let task = tokio::spawn(async move {
            let s = &task_shared;
            let stop = async {
                // A dropped sender (the table went away) also stops it.
                let _ = stop_rx.await;
            };
            let result = exec::run_streaming(
                req,
                &mut StreamSink(s, Stream::Stdout),
                &mut StreamSink(s, Stream::Stderr),
                stop,
                |tree| s.update(|st| st.tree = Some(tree)),
            )
            .await;
            let end = match result {
                Ok(ended) => End::Ran {
                    ended,
                    timeout,
                    note: on_end().await,
                },
                Err(e) => End::Failed(e.to_string()),
            };
            s.update(|st| {
                st.tree = None;
                st.end = Some(end);
            });
        });
        inner.jobs.insert(
            id,
            Job {
                command,
                started: Instant::now(),
                shared,
                stop: Some(stop_tx),
                task,
            },
        );
        Ok(id)
    }

    /// The new output of job `id` and its state, waiting up to `wait` for
    /// something new while it runs (with `until_end`, for its end). A job
    /// read after it ended is removed.
    async fn read(&self, id: u32, wait: Duration, until_end: bool) -> Result<Read, String> {
        let (shared, command, started) = {
            let inner = self.lock();
            let job = inner.jobs.get(&id).ok_or_else(|| unknown(id, &inner))?;
            (job.shared.clone(), job.command.clone(), job.started)
        };
        let mut changes = shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        loop {
            {
                let mut st = shared.lock();
                let fresh = st.end.is_some()
                    || (!until_end && (st.stdout.has_data() || st.stderr.has_data()));
                if fresh || tokio::time::Instant::now() >= deadline {
                    let read = Read {
                        command,
                        elapsed: started.elapsed(),
                        end: st.end.clone(),
                        stdout: st.stdout.take(),
                        stderr: st.stderr.take(),
                    };
                    drop(st);
                    if read.end.is_some() {
                        self.lock().jobs.remove(&id);
                    }
                    return Ok(read);
                }
            }
            // Woken by output or the end, or at the deadline.
            let _ = tokio::time::timeout_at(deadline, changes.changed()).await;
        }
    }

    /// Stop job `id` (SIGTERM, SIGKILL after the grace) and wait for it.
    async fn kill(&self, id: u32) -> Result<Read, String> {
        let stop = {
            let mut inner = self.lock();
            if !inner.jobs.contains_key(&id) {
                return Err(unknown(id, &inner));
            }
            inner.jobs.get_mut(&id).and_then(|job| job.stop.take())
        };
        if let Some(stop) = stop {
            let _ = stop.send(());
        }
        self.read(id, MAX_WAIT, true).await
    }

    /// What `shell_output` returns for job `id`.
    pub async fn output(&self, id: u32, wait: Duration, limits: Limits) -> ToolResult {
        match self.read(id, wait, false).await {
            Ok(read) => render(id, &read, limits),
            Err(e) => ToolResult::error(e),
        }
    }

    /// What `shell_kill` returns for job `id` (also `/jobs kill`).
    pub async fn stop(&self, id: u32, limits: Limits) -> ToolResult {
        match self.kill(id).await {
            Ok(read) => render(id, &read, limits),
            Err(e) => ToolResult::error(e),
        }
    }

    /// Every job, by id.
    pub fn list(&self) -> Vec<JobInfo> {
        let inner = self.lock();
        inner
            .jobs
            .iter()
            .map(|(&id, job)| {
                let st = job.shared.lock();
                let (running, elapsed, status) = match &st.end {
                    None => (true, job.started.elapsed(), "running".to_string()),
                    Some(End::Ran { ended, timeout, .. }) => {
                        (false, ended.duration, end_status(ended, *timeout))
                    }
                    Some(End::Failed(e)) => (false, Duration::ZERO, format!("failed: {e}")),
                };
                JobInfo {
                    id,
                    command: job.command.clone(),
                    running,
                    elapsed,
                    status,
                }
            })
            .collect()
    }
}

impl Inner {
    fn forget_oldest_ended(&mut self) {
        let ended: Vec<u32> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.task.is_finished())
            .map(|(&id, _)| id)
            .collect();
        for id in ended.iter().take(ended.len().saturating_sub(MAX_ENDED - 1)) {
            self.jobs.remove(id);
        }
    }
}

/// Every job still running is killed with the table: its process group at
/// once, and its task (whose supervisor then takes the rest down).
impl Drop for JobTable {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        for job in inner.jobs.values() {
            if let Some(tree) = &job.shared.lock().tree {
                tree.kill();
            }
            job.task.abort();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.lock());
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

struct StreamSink<'a>(&'a Shared, Stream);

impl Sink for StreamSink<'_> {
    fn push(&mut self, bytes: &[u8]) {
        let stream = self.1;
        self.0.update(|st| match stream {
            Stream::Stdout => st.stdout.push(bytes),
            Stream::Stderr => st.stderr.push(bytes),
        });
    }
}

fn unknown(id: u32, inner: &Inner) -> String {
    let ids: Vec<String> = inner.jobs.keys().map(u32::to_string).collect();
    if ids.is_empty() {
        format!("no background job {id}: there are none (they are gone once read after they end)")
    } else {
        format!(
            "no background job {id}; the jobs are {} (a job is gone once read after it ended)",
            ids.join(", ")
        )
    }
}

fn end_status(ended: &Ended, timeout: Duration) -> String {
    status_line(
        ended.termination,
        ended.timed_out.then_some(timeout),
        ended.duration,
    )
}

/// The text the model sees for a read of job `id`.
fn render(id: u32, read: &Read, limits: Limits) -> ToolResult {
    let mut text = format!("job {id} (`{}`): ", read.command);
    let mut result = ToolResult::ok("");
    match &read.end {
        None => {
            let _ = writeln!(text, "running for {:.1}s", read.elapsed.as_secs_f64());
        }
        Some(End::Ran {
            ended,
            timeout,
            note,
        }) => {
            let _ = writeln!(text, "{}", end_status(ended, *timeout));
            if ended.stopped {
                text.push_str("stopped by shell_kill\n");
            }
            if let Some(note) = note {
                let _ = writeln!(text, "{note}");
            }
            result.command = Some(CommandEnd {
                exit_code: (!ended.timed_out).then(|| ended.termination.exit_code()),
                output_start: 0,
            });
            result.is_error = !ended.stopped && (ended.timed_out || !ended.termination.success());
        }
        Some(End::Failed(e)) => {
            let _ = writeln!(text, "failed: {e}");
            result.is_error = true;
        }
    }
    if let Some(command) = &mut result.command {
        command.output_start = text.len();
    }
    if read.stdout.is_empty() && read.stderr.is_empty() {
        text.push_str("(no new output)\n");
    } else {
        text.push_str(&render_streams(&read.stdout, &read.stderr, limits));
    }
    result.content = text;
    result
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    id: u32,
    wait_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArgs {
    id: u32,
}

/// `shell_output`.
pub struct ShellOutputTool;

impl Tool for ShellOutputTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "shell_output".into(),
            description: format!(
                "New output of a background shell job since the last read, and whether it \
                 ended. `wait_ms` (up to {}s) waits for output or the end.",
                MAX_WAIT.as_secs()
            ),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer", "minimum": 1},
                        "wait_ms": {"type": "integer", "minimum": 0}
                    },
                    "required": ["id"],
                    "additionalProperties": false
                }),
            },
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args = match parse_args::<OutputArgs>("shell_output", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let wait = Duration::from_millis(args.wait_ms.unwrap_or(0));
            ctx.jobs
                .output(args.id, wait, ctx.config.output_limits())
                .await
        })
    }
}

/// `shell_kill`.
pub struct ShellKillTool;

impl Tool for ShellKillTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "shell_kill".into(),
            description: "Stop a background shell job and everything it started; returns its \
                          last output."
                .into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"id": {"type": "integer", "minimum": 1}},
                    "required": ["id"],
                    "additionalProperties": false
                }),
            },
            // It only ends a process this session started.
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args = match parse_args::<KillArgs>("shell_kill", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            ctx.jobs.stop(args.id, ctx.config.output_limits()).await
        })
    }
}

// Unix: they run `sh` scripts (and the shell tool's need a sandbox).
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use cogni_process::{DEFAULT_IO_DRAIN, DEFAULT_KILL_GRACE};

    fn request(script: &str, timeout: Duration) -> ExecRequest {
        ExecRequest {
            argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: std::env::vars().collect(),
            timeout,
            capture_limit_bytes: 1024,
            kill_grace: DEFAULT_KILL_GRACE,
            io_drain: DEFAULT_IO_DRAIN,
            sandbox: None,
            stdin: None,
        }
    }

    fn limits() -> Limits {
        Limits {
            max_bytes: 4096,
            max_lines: 100,
        }
    }

    fn start(table: &JobTable, script: &str) -> u32 {
        table
            .start(
                request(script, Duration::from_secs(60)),
                script.into(),
                Box::new(|| Box::pin(async { None })),
            )
            .unwrap()
    }

    /// `sleep MARKER` processes alive.
    fn running(marker: &str) -> usize {
        let needle = format!("sleep\0{marker}");
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                let zombie = stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'));
                String::from_utf8_lossy(&cmdline).contains(&needle) && !zombie
            })
            .count()
    }

    #[tokio::test]
    async fn output_is_read_as_it_comes_and_the_end_once() {
        let table = JobTable::new(2, Duration::from_secs(60));
        let id = start(&table, "echo one; sleep 0.3; echo two >&2; exit 3");
        let first = table.output(id, MAX_WAIT, limits()).await;
        assert!(first.content.contains("running for"), "{}", first.content);
        assert!(first.content.contains("one"), "{}", first.content);
        assert!(!first.is_error);
        // Nothing new yet without waiting.
        let none = table.output(id, Duration::ZERO, limits()).await;
        assert!(none.content.contains("(no new output)"), "{}", none.content);
        let mut last = table.output(id, MAX_WAIT, limits()).await;
        if !last.content.contains("exit code") {
            last = table.output(id, MAX_WAIT, limits()).await;
        }
        assert!(last.content.contains("exit code 3"), "{}", last.content);
        assert!(last.is_error && last.exit_code() == Some(3));
        assert!(table.list().is_empty(), "a job read after its end is gone");
        let gone = table.output(id, Duration::ZERO, limits()).await;
        assert!(gone.is_error && gone.content.contains("no background job"));
    }

    #[tokio::test]
    async fn at_most_the_limit_run_and_kill_frees_a_slot() {
        let table = JobTable::new(1, Duration::from_secs(60));
        let marker = "31.4159";
        let id = start(&table, &format!("sleep {marker}"));
        let refused = table.start(
            request("true", Duration::from_secs(5)),
            "true".into(),
            Box::new(|| Box::pin(async { None })),
        );
        assert!(refused.unwrap_err().contains("tools.max_background_jobs"));
        let stopped = table.stop(id, limits()).await;
        assert!(
            stopped.content.contains("stopped by shell_kill"),
            "{}",
            stopped.content
        );
        assert!(!stopped.is_error, "{}", stopped.content);
        assert_eq!(running(marker), 0);
        assert!(table
            .start(
                request("true", Duration::from_secs(5)),
                "true".into(),
                Box::new(|| Box::pin(async { None }))
            )
            .is_ok());
    }

    #[tokio::test]
    async fn a_job_times_out_and_its_output_stays_capped() {
        let table = JobTable::new(1, Duration::from_millis(300));
        assert_eq!(
            table.timeout(Some(Duration::from_secs(9))),
            Duration::from_millis(300)
        );
        assert_eq!(
            table.timeout(Some(Duration::from_millis(5))),
            Duration::from_millis(5)
        );
        let id = table
            .start(
                request("yes | head -c 100000; sleep 30", table.timeout(None)),
                "yes".into(),
                Box::new(|| Box::pin(async { Some("note from the end".into()) })),
            )
            .unwrap();
        let mut read = table.output(id, MAX_WAIT, limits()).await;
        while !read.content.contains("timed out") {
            read = table.output(id, MAX_WAIT, limits()).await;
        }
        assert!(
            read.content.contains("timed out after 0.3s"),
            "{}",
            read.content
        );
        assert!(
            read.content.contains("note from the end"),
            "{}",
            read.content
        );
        assert!(read.content.len() < 8192, "{}", read.content.len());
    }

    #[tokio::test]
    async fn dropping_the_table_kills_every_job() {
        let marker = "27.1828";
        let table = JobTable::new(4, Duration::from_secs(60));
        start(&table, &format!("setsid sleep {marker} & sleep {marker}"));
        for _ in 0..100 {
            if running(marker) == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(running(marker), 2);
        assert_eq!(table.list().len(), 1);
        assert!(table.list()[0].running);
        drop(table);
        for _ in 0..100 {
            if running(marker) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(running(marker), 0, "jobs outlived their table");
    }
}
