//! `cogni mcp-server`: cogni as an MCP server over stdio (docs/mcp.md),
//! so other agents and tools can delegate tasks to it. Two tools: `cogni`
//! runs a task in a new session as `cogni run` would, `cogni_reply`
//! continues a session. The protocol is rmcp's; stdout carries only its
//! messages, everything else goes to stderr.
//!
//! Calls run concurrently, each in a session of its own, on one thread.
//! When stdin closes (the client is gone) or a signal comes, running
//! turns are stopped (their commands killed, their sessions ended and
//! saved, their MCP servers stopped) and the server exits.

mod call;
mod tools;

use super::signals::{self, Interrupt};
use super::{exit, setup, ConfigArgs};
use crate::agent::effects::panic_message;
use crate::config::ConfigFile;
use call::{Defaults, Progress, Server};
use clap::Args;
use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// The longest the server waits for stopped calls to end their sessions
/// before it exits anyway (whatever they started dies with it).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
pub struct McpServerArgs {
    /// Model, provider (`--script FILE` for offline replay), config file and
    /// working directory of every session; a call's `model` and `cwd` win.
    #[command(flatten)]
    pub common: ConfigArgs,

    #[command(flatten)]
    pub policy: super::PolicyArgs,
}

/// Serve until the client is gone; 0 then, 128 + N after signal N.
pub fn run(args: McpServerArgs) -> u8 {
    let defaults = match defaults(args) {
        Ok(defaults) => defaults,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    let runtime = match setup::runtime() {
        Ok(runtime) => runtime,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::TASK_FAILED;
        }
    };
    let code = runtime.block_on(serve(Arc::new(Server::new(defaults))));
    // A read of stdin that cannot be cancelled (when it is not a pipe)
    // must not keep the process.
    runtime.shutdown_background();
    code
}

/// The server's options, with the configuration loaded once to find a
/// mistake in it before any client calls.
fn defaults(args: McpServerArgs) -> Result<Defaults, String> {
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    let loaded = setup::load(
        &args.common,
        &launch_dir,
        cwd.clone(),
        ConfigFile::default(),
    )?;
    Ok(Defaults {
        launch_dir,
        cwd,
        common: ConfigArgs {
            cd: None,
            ..args.common
        },
        sandbox: args.policy.sandbox_mode(),
        approval: args.policy.approval,
        home: loaded.home,
    })
}

async fn serve(server: Arc<Server>) -> u8 {
    let shutdown = server.shutdown.clone();
    let received = match signals::stop_on_interrupt({
        let shutdown = shutdown.clone();
        move |_| shutdown.cancel()
    }) {
        Ok(received) => received,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::TASK_FAILED;
        }
    };
    let code = || received.get().map_or(exit::DONE, Interrupt::exit_code);
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let stdin = Watched {
        inner: stdin,
        gone: shutdown.clone(),
    };
    let service = tokio::select! {
        started = rmcp::serve_server(Handler(server.clone()), (stdin, stdout)) => match started {
            Ok(service) => service,
            Err(_) if shutdown.is_cancelled() => return code(),
            Err(e) => {
                eprintln!("cogni mcp-server: the client's initialization failed: {e}");
                return exit::USAGE;
            }
        },
        () = shutdown.cancelled() => return code(),
    };
    // After a signal, the stopped calls answer before the service ends.
    let stop_service = service.cancellation_token();
    tokio::spawn({
        let server = server.clone();
        async move {
            server.shutdown.cancelled().await;
            server.idle().await;
            stop_service.cancel();
        }
    });
    let _ = service.waiting().await;
    shutdown.cancel();
    if tokio::time::timeout(SHUTDOWN_WAIT, server.idle())
        .await
        .is_err()
    {
        eprintln!(
            "cogni mcp-server: calls still ending after {} s; exiting anyway",
            SHUTDOWN_WAIT.as_secs()
        );
    }
    code()
}

/// The MCP side: the tools and their calls.
struct Handler(Arc<Server>);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("cogni", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "cogni is a coding agent. Call `cogni` with a task to have it done in a \
                 directory (it runs commands in a sandbox and edits files), and \
                 `cogni_reply` with the session_id it returns to continue that session.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::list().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != tools::RUN && request.name != tools::REPLY {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`: this server has `{}` and `{}`",
                    request.name,
                    tools::RUN,
                    tools::REPLY
                ),
                None,
            ));
        }
        let progress = Progress {
            peer: context.peer.clone(),
            token: context.meta.get_progress_token(),
        };
        let call = self
            .0
            .call(&request.name, request.arguments, context.ct, progress);
        // A bug in a call answers that call; the server goes on.
        let result = AssertUnwindSafe(call)
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                tools::failure(format!("internal error: {}", panic_message(&*panic)))
            });
        Ok(result.into())
    }
}

/// stdin, watched: its end (or an error reading it) means the client is
/// gone, which cancels `gone` at once, before rmcp's own clean-up.
struct Watched<R> {
    inner: R,
    gone: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let (room, before) = (buf.remaining(), buf.filled().len());
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            Poll::Ready(Ok(())) => room > 0 && buf.filled().len() == before,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.gone.cancel();
        }
        polled
    }
}
