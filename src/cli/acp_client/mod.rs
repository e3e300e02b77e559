//! `--acp CMD`: cogni as the client of an agent that speaks the Agent
//! Client Protocol (`cogni acp`, or any other ACP agent). `cogni run` and
//! the REPL start CMD, talk to it over its stdin and stdout through the
//! `agent-client-protocol` crate's client side, and front it as they
//! front cogni's own engine: its updates become cogni's events
//! ([`events`]), its permission requests go to cogni's approver, its
//! file reads and writes follow cogni's file rules ([`files`]). See
//! docs/acp.md.
//!
//! The agent is untrusted: its lines are bounded ([`transport`]), the
//! paths it names are checked, its text is rendered like a model's. It
//! runs as a supervised process (`crate::process::Service`: its own
//! process group under the subreaper, killed with cogni), with cogni's
//! environment (it needs its own API keys). Nothing waits on it without a
//! limit: starting has `--acp-timeout`, a cancel [`CANCEL_WAIT`], the end
//! [`STOP_GRACE`].

mod events;
mod files;
mod repl;
mod run;
mod session;
mod transport;

pub(super) use repl::run as repl;
pub(super) use run::run;

use super::builder::SessionBuilder;
use super::render::strip_terminal_controls;
use super::{exit, setup, ConfigArgs};
use crate::cli::PolicyArgs;
use crate::mcp::McpConfig;
use crate::process::truncate::Limits;
use crate::process::{Service, Termination};
use crate::store::Redactor;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::Client;
use files::Files;
use session::{Incoming, Remote};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The connection to the agent, as cogni's side holds it.
type Cx = agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>;

/// After its stdin closed, how long the agent has to exit by itself, and
/// then between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// After `session/cancel`, how long the agent has to end its turn before
/// it is killed.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// What is kept of the agent's stderr, for the message when it fails.
const STDERR_LIMIT: usize = 64 * 1024;

/// What of it a message shows.
const STDERR_SHOWN: Limits = Limits {
    max_bytes: 2000,
    max_lines: 20,
};

/// The agent to start.
pub(super) struct Launch {
    /// CMD as given.
    pub command: String,
    /// Where it works (`session/new`'s `cwd`, and the process's).
    pub cwd: PathBuf,
    /// How long it may take to answer `initialize` and `session/new`.
    pub timeout: Duration,
    /// The MCP servers of cogni's configuration, for `session/new`: the
    /// agent starts them.
    pub mcp: McpConfig,
}

/// What `--acp` takes from the configuration (cogni.toml, flags): where
/// the agent works and the sandbox its file access follows.
pub(super) struct Setup {
    pub cwd: PathBuf,
    pub files: Arc<Files>,
    pub redact: Redactor,
    pub verbose_max_bytes: usize,
    /// `$COGNI_HOME`.
    pub home: PathBuf,
    /// `[mcp_servers.NAME]`: passed on to the agent.
    pub mcp: McpConfig,
}

/// Load the configuration for an agent working in `-C DIR` (or here):
/// the sandbox mode (`--sandbox`, `--no-sandbox`, cogni.toml), its
/// writable roots and pinned files, the log.
pub(super) fn configure(common: &ConfigArgs, policy: &PolicyArgs) -> Result<Setup, String> {
    let (launch_dir, cwd) = setup::dirs(common)?;
    // The agent's own approval policy is its business: only the sandbox
    // mode applies, to the file access cogni serves it.
    let policy = PolicyArgs {
        approval: None,
        ..policy.clone()
    };
    let configured = SessionBuilder::new(common.clone(), policy, launch_dir, cwd)
        .workspace_check_only()
        .configure()?;
    let config = configured.config;
    Ok(Setup {
        files: Arc::new(Files::new(config.cwd.clone(), config.sandbox_policy)),
        cwd: config.cwd,
        redact: configured.redact,
        verbose_max_bytes: configured.verbose_max_bytes,
        home: configured.home,
        mcp: configured.mcp,
    })
}

/// Why the agent could not do its part.
#[derive(Debug)]
pub(super) enum Failure {
    /// A usage or configuration problem (exit 2): CMD does not start,
    /// the agent speaks another protocol version, wants a login.
    Usage(String),
    /// The agent failed (exit 3): an error answer, no answer in time.
    Agent(String),
    /// The agent's process ended or closed its output (exit 3), while
    /// doing what the text says; the exit status is added.
    Gone(String),
    /// cogni killed it (a second Ctrl-C, or no end after a cancel).
    Killed(String),
}

impl Failure {
    pub fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => exit::USAGE,
            Failure::Agent(_) | Failure::Gone(_) => exit::PROVIDER,
            Failure::Killed(_) => exit::INTERRUPTED,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::Usage(m) | Failure::Agent(m) | Failure::Gone(m) | Failure::Killed(m) => m,
        }
    }
}

/// Stops the agent's turn from outside (Ctrl-C, a signal, the approval
/// question's Ctrl-C): the first request of a turn sends
/// `session/cancel`, a later one kills the agent. Clones share it.
#[derive(Clone, Default)]
pub(super) struct Control(Arc<ControlState>);

#[derive(Default)]
struct ControlState {
    /// A turn is running.
    active: AtomicBool,
    /// Stop requests during this turn.
    stops: AtomicU32,
    changed: Notify,
    killed: AtomicBool,
    kill: Notify,
}

impl Control {
    /// A stop request; ignored between turns.
    pub fn stop(&self) {
        if !self.0.active.load(Ordering::SeqCst) {
            return;
        }
        if self.0.stops.fetch_add(1, Ordering::SeqCst) >= 1 {
            self.kill();
        }
        self.0.changed.notify_waiters();
    }

    /// A signal in `cogni run`: a stop request during the turn; before
    /// it (while the agent starts) the agent is stopped at once.
    pub fn interrupt(&self) {
        if self.0.active.load(Ordering::SeqCst) {
            self.stop();
        } else {
            self.kill();
        }
    }

    /// Kill the agent now.
    pub fn kill(&self) {
        self.0.killed.store(true, Ordering::SeqCst);
        self.0.kill.notify_waiters();
    }

    pub fn killed(&self) -> bool {
        self.0.killed.load(Ordering::SeqCst)
    }

    fn begin_turn(&self) {
        self.0.stops.store(0, Ordering::SeqCst);
        self.0.active.store(true, Ordering::SeqCst);
    }

    fn end_turn(&self) {
        self.0.active.store(false, Ordering::SeqCst);
    }

    /// Wait until the turn had more than `seen` stop requests; how many.
    async fn stops_after(&self, seen: u32) -> u32 {
        loop {
            let changed = self.0.changed.notified();
            let stops = self.0.stops.load(Ordering::SeqCst);
            if stops > seen {
                return stops;
            }
            changed.await;
        }
    }

    async fn kill_requested(&self) {
        loop {
            let kill = self.0.kill.notified();
            if self.killed() {
                return;
            }
            kill.await;
        }
    }
}

/// Start the agent, initialize it, open its session in `launch.cwd` and
/// run `body` with it; then close the connection and end the process
/// (it gets [`STOP_GRACE`] to exit after its stdin closed, then SIGTERM,
/// then SIGKILL to its whole process group).
pub(super) async fn connect<T>(
    launch: &Launch,
    files: Arc<Files>,
    control: Control,
    body: impl AsyncFnOnce(Remote) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let argv = transport::words(&launch.command).map_err(Failure::Usage)?;
    // The agent is a program the user chose to run, like an MCP server
    // of theirs: it gets their environment, API keys included.
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let (service, pipes) = Service::spawn(&argv, &launch.cwd, &env, STDERR_LIMIT)
        .map_err(|e| Failure::Usage(format!("--acp {}: {e}", launch.command)))?;
    let mut service = Some(service);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let builder = Client.v1().name("cogni");
    let builder = builder.on_receive_notification(
        {
            let tx = tx.clone();
            async move |note: acp::SessionNotification, _cx| {
                let _ = tx.send(Incoming::Update(note));
                Ok(())
            }
        },
        agent_client_protocol::on_receive_notification!(),
    );
    let builder = builder.on_receive_request(
        {
            let tx = tx.clone();
            async move |request: acp::RequestPermissionRequest, responder, _cx| {
                // Answered by the turn that reads it; a request nobody
                // reads is dropped with the connection, which answers it
                // with an error.
                let _ = tx.send(Incoming::Permission(request, responder));
                Ok(())
            }
        },
        agent_client_protocol::on_receive_request!(),
    );
    let builder = builder.on_receive_request(
        {
            let files = files.clone();
            async move |request: acp::ReadTextFileRequest, responder, cx: Cx| {
                let files = files.clone();
                cx.spawn(async move {
                    let read = tokio::task::spawn_blocking(move || files.read(&request)).await;
                    let answer = match read {
                        Ok(Ok(content)) => Ok(acp::ReadTextFileResponse::new(content)),
                        Ok(Err(e)) => Err(session::refused(e)),
                        Err(e) => Err(session::refused(e.to_string())),
                    };
                    let _ = responder.respond_with_result(answer);
                    Ok(())
                })
            }
        },
        agent_client_protocol::on_receive_request!(),
    );
    let builder = builder.on_receive_request(
        {
            let (files, tx) = (files.clone(), tx.clone());
            async move |request: acp::WriteTextFileRequest, responder, cx: Cx| {
                let (files, tx) = (files.clone(), tx.clone());
                cx.spawn(async move {
                    let path = request.path.clone();
                    let written = tokio::task::spawn_blocking(move || files.write(&request)).await;
                    let answer = match written {
                        Ok(Ok(_)) => Ok(acp::WriteTextFileResponse::new()),
                        Ok(Err(e)) => {
                            let _ = tx.send(Incoming::Refused(format!(
                                "the agent's write was refused: {e}"
                            )));
                            Err(session::refused(e))
                        }
                        Err(e) => Err(session::refused(format!(
                            "cannot write {}: {e}",
                            path.display()
                        ))),
                    };
                    let _ = responder.respond_with_result(answer);
                    Ok(())
                })
            }
        },
        agent_client_protocol::on_receive_request!(),
    );
    drop(tx);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let inner = control.clone();
    let connection = builder.connect_with(transport::lines(pipes), async move |cx: Cx| {
        let result = match Remote::start(cx, rx, launch, files, inner).await {
            Ok(remote) => body(remote).await,
            Err(failure) => Err(failure),
        };
        let _ = done_tx.send(());
        Ok(result)
    });
    tokio::pin!(connection);
    // Once the body is done, the connection only has to close; an agent
    // that keeps it from closing (it stopped reading) is killed.
    let stuck = async {
        let _ = done_rx.await;
        tokio::time::sleep(STOP_GRACE).await;
    };
    let ended = tokio::select! {
        ended = &mut connection => Some(ended),
        () = control.kill_requested() => None,
        () = stuck => None,
    };
    let ended = match ended {
        Some(ended) => ended,
        None => {
            if let Some(service) = service.take() {
                service.stop(Duration::ZERO).await;
            }
            match tokio::time::timeout(STOP_GRACE, &mut connection).await {
                Ok(ended) => ended,
                Err(_) => Ok(Err(Failure::Killed("the agent was killed".into()))),
            }
        }
    };
    let result = match ended {
        Ok(result) => result,
        // Its pipes broke (it went away while cogni wrote to it) or
        // carried something that is not the protocol.
        Err(e) => Err(Failure::Gone(
            match e.data.as_ref().and_then(|d| d.as_str()) {
                Some(detail) if detail.contains("os error 32") => "the agent went away".to_string(),
                Some(detail) => format!("the connection to the agent failed: {detail}"),
                None => format!("the connection to the agent failed: {}", e.message),
            },
        )),
    };
    let result = match (result, service.as_mut()) {
        (Err(Failure::Gone(what)), Some(service)) => {
            let how = describe_end(service).await;
            Err(Failure::Gone(format!("{what}: {how}")))
        }
        (result, _) => result,
    };
    if let Some(service) = service {
        finish(service).await;
    }
    result
}

/// How the agent's process ended (waiting a moment for it), with the end
/// of what it wrote on stderr.
async fn describe_end(service: &mut Service) -> String {
    let mut ended = service.exited();
    for _ in 0..20 {
        if ended.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        ended = service.exited();
    }
    let how = match ended {
        Some(Termination::Exited(code)) => format!("it exited with code {code}"),
        Some(Termination::Signaled(signal)) => format!("it was killed by signal {signal}"),
        None => "it closed its output".to_string(),
    };
    let stderr = service.stderr(STDERR_SHOWN);
    let stderr = strip_terminal_controls(stderr.trim());
    if stderr.is_empty() {
        how
    } else {
        format!("{how}; its stderr:\n{stderr}")
    }
}

/// End the agent's process: it has [`STOP_GRACE`] to exit after its stdin
/// closed, then SIGTERM, then SIGKILL.
async fn finish(mut service: Service) {
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while service.exited().is_none() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    service.stop(STOP_GRACE).await;
}
