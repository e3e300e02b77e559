//! One tool call: a session started (or continued) as `cogni run` starts
//! it, its turn, progress notifications while it runs, and its report.

use super::tools::{self, Reply, Report, Task, Usage};
use crate::agent::{AgentError, Session, TurnResult};
use crate::cli::builder::{Card, SessionBuilder};
use crate::cli::persist::Resume;
use crate::cli::PolicyArgs;
use crate::cli::{launch, ConfigArgs};
use crate::protocol::{AgentEvent, ApprovalPolicy, ApprovalStatus, EventSink, Item, SandboxMode};
use crate::store::{Store, StoreError};
use rmcp::model::{CallToolResult, JsonObject, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Mutex;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// What a progress message shows of a tool call's arguments.
const ARGUMENTS_SHOWN: usize = 160;

/// What a session runs with, kept for the replies that continue it.
#[derive(Debug, Clone)]
struct Settings {
    cwd: PathBuf,
    sandbox: Option<SandboxMode>,
    approval: Option<ApprovalPolicy>,
    model: Option<String>,
    agent: Option<String>,
}

/// The server's options: what every session starts from.
pub(super) struct Defaults {
    /// Where the server started: relative paths of its options (`--script`,
    /// `--config`) start here.
    pub launch_dir: PathBuf,
    /// The default working directory (`-C`), where a relative `cwd` starts.
    pub cwd: PathBuf,
    /// Model, provider, script and config file.
    pub common: ConfigArgs,
    pub sandbox: Option<SandboxMode>,
    pub approval: Option<ApprovalPolicy>,
    /// `$COGNI_HOME`.
    pub home: PathBuf,
}

/// A setting of a call that the server's flag caps: `sandbox` under
/// `--sandbox`, `approval_policy` under `--approval`.
trait Capped: Copy + 'static {
    /// The call's argument and the server's flag.
    const NAMES: (&'static str, &'static str);
    fn looser_than(self, other: Self) -> bool;
    fn name(self) -> &'static str;
    fn parse(name: &str) -> Option<Self>;
    const VARIANTS: &'static [&'static str];
}

impl Capped for SandboxMode {
    const NAMES: (&'static str, &'static str) = ("sandbox", "--sandbox");
    const VARIANTS: &'static [&'static str] = SandboxMode::VARIANTS;

    fn looser_than(self, other: Self) -> bool {
        self.reach() > other.reach()
    }

    fn name(self) -> &'static str {
        self.as_str()
    }

    fn parse(name: &str) -> Option<Self> {
        SandboxMode::parse(name)
    }
}

impl Capped for ApprovalPolicy {
    const NAMES: (&'static str, &'static str) = ("approval_policy", "--approval");
    const VARIANTS: &'static [&'static str] = ApprovalPolicy::VARIANTS;

    fn looser_than(self, other: Self) -> bool {
        self.strictness() < other.strictness()
    }

    fn name(self) -> &'static str {
        self.as_str()
    }

    fn parse(name: &str) -> Option<Self> {
        ApprovalPolicy::parse(name)
    }
}

/// What a call `asked` for, when it is no looser than the server's
/// `ceiling` (the flag the operator gave); the ceiling when the call asks
/// for nothing. A looser one is an error that names the ceiling and what
/// a call may ask for: a client may only tighten what the operator
/// allowed.
fn within<T: Capped>(asked: Option<T>, ceiling: Option<T>) -> Result<Option<T>, String> {
    match (asked, ceiling) {
        (Some(asked), Some(ceiling)) if asked.looser_than(ceiling) => {
            let (key, flag) = T::NAMES;
            let allowed: Vec<&str> = T::VARIANTS
                .iter()
                .copied()
                .filter(|name| T::parse(name).is_some_and(|v| !v.looser_than(ceiling)))
                .collect();
            Err(format!(
                "`{key}` \"{}\" is looser than this server allows: it was started with {flag} {}, \
                 which a call may only tighten (use one of: {}); nothing was run",
                asked.name(),
                ceiling.name(),
                allowed.join(", ")
            ))
        }
        (asked, ceiling) => Ok(asked.or(ceiling)),
    }
}

/// The server's state, shared by its calls.
pub(super) struct Server {
    defaults: Defaults,
    store: Store,
    /// Cancelled when the client is gone (stdin closed) or a signal came:
    /// running calls stop, new ones are refused.
    pub(super) shutdown: CancellationToken,
    /// The settings of each session this server started.
    sessions: Mutex<HashMap<String, Settings>>,
    /// Sessions a call is working in now.
    busy: Mutex<HashSet<String>>,
    /// How many calls are running.
    active: watch::Sender<usize>,
}

/// Counts a running call until it is dropped.
struct Active<'a>(&'a watch::Sender<usize>);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// Marks a session busy until it is dropped.
struct Busy<'a> {
    server: &'a Server,
    id: String,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if let Ok(mut busy) = self.server.busy.lock() {
            busy.remove(&self.id);
        }
    }
}

/// Where a call's progress goes: notifications with the client's progress
/// token, when it gave one.
pub(super) struct Progress {
    pub peer: Peer<RoleServer>,
    pub token: Option<ProgressToken>,
}

impl Server {
    pub(super) fn new(defaults: Defaults) -> Self {
        Server {
            store: Store::new(&defaults.home),
            defaults,
            shutdown: CancellationToken::new(),
            sessions: Mutex::default(),
            busy: Mutex::default(),
            active: watch::Sender::new(0),
        }
    }

    /// Once no call is running.
    pub(super) async fn idle(&self) {
        let mut active = self.active.subscribe();
        let _ = active.wait_for(|n| *n == 0).await;
    }

    /// Call tool `name` (one of [`tools::list`]); `cancelled` fires when
    /// the client cancels the request.
    pub(super) async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        cancelled: CancellationToken,
        progress: Progress,
    ) -> CallToolResult {
        self.active.send_modify(|n| *n += 1);
        let _active = Active(&self.active);
        if self.shutdown.is_cancelled() {
            return tools::failure("cogni mcp-server is shutting down; nothing was run");
        }
        let stop = Stop {
            cancelled,
            shutdown: self.shutdown.clone(),
        };
        let result = if name == tools::REPLY {
            match Reply::parse(arguments) {
                Ok(reply) => self.reply(reply, stop, progress).await,
                Err(message) => Err(message),
            }
        } else {
            match Task::parse(arguments) {
                Ok(task) => self.task(task, stop, progress).await,
                Err(message) => Err(message),
            }
        };
        result.unwrap_or_else(tools::failure)
    }

    async fn task(
        &self,
        task: Task,
        stop: Stop,
        progress: Progress,
    ) -> Result<CallToolResult, String> {
        let defaults = &self.defaults;
        let settings = Settings {
            cwd: self.directory(task.cwd.as_deref())?,
            sandbox: within(task.sandbox, defaults.sandbox)?,
            approval: within(task.approval, defaults.approval)?,
            model: task.model,
            agent: task.agent,
        };
        self.turn(settings, None, &task.prompt, stop, progress)
            .await
    }

    async fn reply(
        &self,
        reply: Reply,
        stop: Stop,
        progress: Progress,
    ) -> Result<CallToolResult, String> {
        let id = self.store.resolve(&reply.session_id).map_err(|e| match e {
            StoreError::NotFound(_) => format!(
                "no session `{}`: give the session_id a `{}` call returned (`cogni sessions` lists the saved ones)",
                reply.session_id,
                tools::RUN
            ),
            other => other.to_string(),
        })?;
        let busy = self.claim(&id)?;
        let remembered = self.sessions.lock().ok().and_then(|s| s.get(&id).cloned());
        let settings = match remembered {
            Some(settings) => settings,
            // Saved by another process: where it worked, with the
            // server's defaults.
            None => Settings {
                cwd: self.store.header(&id).map_err(|e| e.to_string())?.cwd,
                sandbox: self.defaults.sandbox,
                approval: self.defaults.approval,
                model: None,
                agent: None,
            },
        };
        if !settings.cwd.is_dir() {
            return Err(format!(
                "session `{id}` worked in {}, which is not a directory any more",
                settings.cwd.display()
            ));
        }
        let result = self
            .turn(settings, Some(id), &reply.prompt, stop, progress)
            .await;
        drop(busy);
        result
    }

    /// Mark session `id` busy, or say that a call is working in it.
    fn claim(&self, id: &str) -> Result<Busy<'_>, String> {
        let mut busy = self.busy.lock().map_err(|e| e.to_string())?;
        if !busy.insert(id.to_string()) {
            return Err(format!(
                "session `{id}` is busy: another call is working in it; reply once that call has returned"
            ));
        }
        Ok(Busy {
            server: self,
            id: id.to_string(),
        })
    }

    /// A call's `cwd`: relative to the server's working directory.
    fn directory(&self, cwd: Option<&str>) -> Result<PathBuf, String> {
        let Some(cwd) = cwd else {
            return Ok(self.defaults.cwd.clone());
        };
        let path = self.defaults.cwd.join(cwd);
        match crate::sandbox::sys::canonicalize(&path) {
            Ok(dir) if dir.is_dir() => Ok(dir),
            Ok(_) => Err(format!("`cwd` {}: not a directory", path.display())),
            Err(e) => Err(format!("`cwd` {}: {e}", path.display())),
        }
    }

    /// Start the session (or continue `resume`), run `prompt` as its turn
    /// and report how it went.
    async fn turn(
        &self,
        settings: Settings,
        resume: Option<String>,
        prompt: &str,
        stop: Stop,
        progress: Progress,
    ) -> Result<CallToolResult, String> {
        let defaults = &self.defaults;
        let common = ConfigArgs {
            model: settings
                .model
                .clone()
                .or_else(|| defaults.common.model.clone()),
            cd: None,
            ..defaults.common.clone()
        };
        let policy = PolicyArgs {
            sandbox: settings.sandbox,
            approval: settings.approval,
            no_sandbox: false,
        };
        let launch = SessionBuilder::new(
            common,
            policy,
            defaults.launch_dir.clone(),
            settings.cwd.clone(),
        )
        .card(settings.agent.clone().map(Card::Named))
        .persist(true, resume.clone().map(Resume::Id), false)
        .configure()?;
        launch.warn_problems();
        let (mut session, file) = launch.start(None)?;
        let _busy = match resume {
            Some(_) => None,
            None => {
                if let Ok(mut sessions) = self.sessions.lock() {
                    sessions.insert(session.id.clone(), settings);
                }
                Some(self.claim(&session.id)?)
            }
        };
        let handle = session.stop_handle();
        let (sink, forward) = progress.start(&stop);
        let work = async {
            let turn = async {
                // A required MCP server that does not start: no turn runs.
                let servers = crate::cli::mcp::attach(&mut session, &launch.mcp, &sink).await?;
                let run = launch::run_task(&mut session, servers, file.as_deref(), prompt, &sink);
                tokio::pin!(run);
                let turn = tokio::select! {
                    turn = &mut run => turn,
                    () = stop.requested() => {
                        handle.close();
                        run.await
                    }
                };
                Ok::<_, String>(turn)
            }
            .await;
            drop(sink);
            turn
        };
        let (turn, ()) = tokio::join!(work, forward);
        let report = report(&session, turn?);
        eprintln!(
            "cogni mcp-server: session {}: {} (exit code {})",
            report.session_id,
            report.reason.as_deref().unwrap_or("done"),
            report.exit_code
        );
        Ok(report.into_result())
    }
}

/// How the session's turn went: its outcome, answer and spend.
fn report(session: &Session, turn: Result<TurnResult, AgentError>) -> Report {
    let (exit_code, reason) = launch::verdict(&turn, session.context().max_iterations);
    let totals = session.metrics().snapshot().turn;
    let usage = Usage {
        input_tokens: totals.usage.input_tokens,
        output_tokens: totals.usage.output_tokens,
        cached_input_tokens: totals.usage.cached_input_tokens,
        estimated: totals.usage.estimated,
        cost_usd: totals.cost_usd,
        model_requests: totals.model_requests,
        tool_calls: totals.tool_calls(),
        wall_ms: totals.wall_ms,
    };
    let (outcome, answer) = match turn {
        Ok(turn) => (Some(turn.outcome), turn.final_text),
        Err(_) => (None, String::new()),
    };
    Report {
        session_id: session.id.clone(),
        outcome,
        exit_code,
        answer,
        reason,
        usage,
    }
}

/// What stops a call's turn: the client cancels the request, or the
/// server shuts down.
struct Stop {
    cancelled: CancellationToken,
    shutdown: CancellationToken,
}

impl Stop {
    async fn requested(&self) {
        tokio::select! {
            () = self.cancelled.cancelled() => {}
            () = self.shutdown.cancelled() => {}
        }
    }
}

impl Progress {
    /// The sink the session's events go to, and the future that sends
    /// them on as progress notifications. It ends when the sink is
    /// dropped, or once `stop` is requested: nobody waits for them then
    /// (and after the client is gone, sending one would wait forever).
    fn start(self, stop: &Stop) -> (ProgressSink, impl Future<Output = ()> + '_) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = ProgressSink(self.token.is_some().then_some(tx));
        let forward = async move {
            let Some(token) = self.token else {
                return;
            };
            let mut sent = 0u32;
            while let Some(message) = rx.recv().await {
                sent += 1;
                let note = ProgressNotificationParam::new(token.clone(), f64::from(sent))
                    .with_message(message);
                tokio::select! {
                    _ = self.peer.notify_progress(note) => {}
                    () = stop.requested() => return,
                }
            }
        };
        (sink, forward)
    }
}

/// Turns the engine's events into progress messages.
struct ProgressSink(Option<mpsc::UnboundedSender<String>>);

impl EventSink for ProgressSink {
    fn emit(&self, event: AgentEvent) {
        if let (Some(tx), Some(message)) = (&self.0, progress_message(&event)) {
            let _ = tx.send(message);
        }
    }
}

/// What a progress notification says of `event`, if anything.
fn progress_message(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::ModelRequest { iteration, .. } => Some(format!("model request {iteration}")),
        AgentEvent::ItemStarted {
            item: Item::ToolCall {
                name, arguments, ..
            },
        } => {
            let mut shown: String = arguments.chars().take(ARGUMENTS_SHOWN).collect();
            if shown.len() < arguments.len() {
                shown.push_str(" ...");
            }
            Some(format!("{name} {shown}"))
        }
        AgentEvent::Approval {
            tool,
            status: ApprovalStatus::Denied,
            reason,
            ..
        } => Some(format!("{tool} denied: {reason}")),
        AgentEvent::Retry { reason, .. } => Some(format!("retrying: {reason}")),
        AgentEvent::Warning { message } => Some(format!("warning: {message}")),
        _ => None,
    }
}
