//! `cogni acp`: cogni as an agent for editors, speaking the Agent Client
//! Protocol (v1, through the official `agent-client-protocol` crate) on
//! stdin and stdout. Logs and warnings go to stderr and the log file;
//! stdout carries the protocol only. See docs/acp.md.
//!
//! One thread runs everything: the connection, the agent that owns the
//! sessions ([`agent`]) and each session on a task of its own ([`live`]).
//! When stdin closes, running turns are stopped (their commands killed),
//! every session ends, and the process exits 0.

mod agent;
mod client;
mod commands;
mod live;
mod updates;

use super::interactive::Options;
use super::mode::Mode;
use super::{exit, setup, ConfigArgs};
use agent::{Agent, Request};
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, Stdio};
use clap::Args;

/// The connection to the client, as cogni's side holds it.
type Cx = agent_client_protocol::v1::ConnectionTo<Client>;

/// How a request is answered.
type Responder<T> = agent_client_protocol::v1::Responder<T>;

#[derive(Debug, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub common: ConfigArgs,

    #[command(flatten)]
    pub policy: super::PolicyArgs,

    /// Start every session in this mode: plan, act or auto.
    #[arg(long, value_name = "MODE", value_parser = ["plan", "act", "auto"])]
    pub mode: Option<String>,

    /// Do not save sessions under $COGNI_HOME/sessions (nothing to list
    /// or load then).
    #[arg(long)]
    pub no_persist: bool,
}

/// Serve one client on stdin and stdout; returns the exit code.
pub fn run(args: AcpArgs) -> u8 {
    let launch_dir = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("cogni: cannot read the current directory: {e}");
            return exit::USAGE;
        }
    };
    let options = Options {
        common: args.common,
        policy: args.policy,
        mode: args.mode.as_deref().and_then(Mode::parse),
        persist: !args.no_persist,
    };
    let runtime = match setup::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::TASK_FAILED;
        }
    };
    let local = tokio::task::LocalSet::new();
    match local.block_on(&runtime, serve(options, launch_dir)) {
        Ok(()) => exit::DONE,
        Err(e) => {
            eprintln!("cogni: acp: {e}");
            exit::TASK_FAILED
        }
    }
}

/// Every request goes to the agent as it arrives; answers come from it
/// or from the session it concerns.
macro_rules! forward {
    ($builder:expr, $tx:expr, $variant:ident, $request:ty) => {
        $builder.on_receive_request(
            {
                let tx = $tx.clone();
                async move |request: $request, responder, _cx| {
                    // A refused request (the agent is ending) drops its
                    // responder, which answers with an error.
                    let _ = tx.send(Request::$variant(request, responder));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
    };
}

async fn serve(
    options: Options,
    launch_dir: std::path::PathBuf,
) -> Result<(), agent_client_protocol::Error> {
    let home = crate::config::cogni_home(&|key| std::env::var(key).ok());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let builder = agent_client_protocol::Agent.v1().name("cogni");
    // Answered at once, so initialization is complete before the next
    // message is read.
    let builder = builder.on_receive_request(
        {
            let tx = tx.clone();
            async move |request: acp::InitializeRequest, responder: Responder<_>, _cx| {
                let _ = tx.send(Request::Client(request.client_capabilities));
                responder.respond(agent::initialize())
            }
        },
        agent_client_protocol::on_receive_request!(),
    );
    let builder = forward!(builder, tx, New, acp::NewSessionRequest);
    let builder = forward!(builder, tx, Load, acp::LoadSessionRequest);
    let builder = forward!(builder, tx, List, acp::ListSessionsRequest);
    let builder = forward!(builder, tx, Prompt, acp::PromptRequest);
    let builder = forward!(builder, tx, SetMode, acp::SetSessionModeRequest);
    let builder = builder.on_receive_notification(
        {
            let tx = tx.clone();
            async move |note: acp::CancelNotification, _cx| {
                let _ = tx.send(Request::Cancel(note));
                Ok(())
            }
        },
        agent_client_protocol::on_receive_notification!(),
    );
    drop(tx);
    // The agent runs beside the connection, so that however the
    // connection ends (stdin closed, stdout gone), its sessions end too.
    let (cx_tx, cx_rx) = tokio::sync::oneshot::channel::<Cx>();
    let (over_tx, over_rx) = tokio::sync::oneshot::channel::<()>();
    let agent = tokio::task::spawn_local(async move {
        if let Ok(cx) = cx_rx.await {
            let over = async {
                let _ = over_rx.await;
            };
            Agent::new(options, launch_dir, home, cx)
                .serve(rx, over)
                .await;
        }
    });
    let eof = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = eof.clone();
    let connection = builder
        .connect_with(Stdio::new(), async move |cx: Cx| {
            let _ = cx_tx.send(cx.clone());
            cx.incoming_closed().await;
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })
        .await;
    let _ = over_tx.send(());
    if let Err(e) = agent.await {
        tracing::warn!(error = %e, "the agent's task failed");
    }
    match connection {
        // The client left: once stdin is closed, a reply it can no longer
        // read (a broken stdout) is no failure.
        Err(e) if eof.load(std::sync::atomic::Ordering::SeqCst) || gone(&e) => {
            tracing::debug!(error = %e, "the client left");
            Ok(())
        }
        other => other,
    }
}

/// Whether `e` says the client stopped reading (stdout is a broken pipe).
fn gone(e: &agent_client_protocol::Error) -> bool {
    let text = format!("{} {:?}", e.message, e.data);
    text.contains("Broken pipe") || text.contains("os error 32")
}
