//! The MCP client (docs/mcp.md): the servers of `[mcp_servers.NAME]`
//! start in parallel when a front door starts a session, each within its
//! `startup_timeout`; their tools become the session's tools
//! `mcp__SERVER__TOOL`, offered at once or, beyond `[mcp]
//! max_eager_tools`, through `search_tools`. Protocol and transports are
//! rmcp's; processes are `tools::exec`'s.

#![deny(missing_docs)]

mod client;
pub mod config;
pub mod names;
mod output;
mod server;

pub use client::Launch;
pub use config::{McpConfig, ServerConfig, Transport, DEFAULT_STARTUP_TIMEOUT};
pub use server::Server;

use cogni_tools::{ExtraTools, Tool};
use server::McpTool;
use std::sync::Arc;

/// How a configured server is doing.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Started; its tools are offered.
    Running,
    /// It did not start (or stopped): why.
    Failed(String),
    /// `enabled = false`.
    Disabled,
}

/// One configured server as a listing shows it.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// The server's name in config.
    pub name: String,
    /// Its command line or URL.
    pub transport: String,
    /// A required server that does not start fails the session.
    pub required: bool,
    /// Whether it runs, and why not.
    pub status: Status,
    /// Its tools as offered (`mcp__SERVER__TOOL`).
    pub tools: Vec<String>,
    /// Its tools left out by `enabled_tools` / `disabled_tools`.
    pub filtered: Vec<String>,
}

/// The servers of a session, started.
pub struct Servers {
    servers: Vec<Arc<Server>>,
    reports: Vec<ServerReport>,
    /// The tools they offer.
    tools: ExtraTools,
}

impl Servers {
    /// The tools to add to a session.
    pub fn tools(&self) -> &ExtraTools {
        &self.tools
    }

    /// Every configured server: status and tools (a server that died
    /// since it started shows why).
    pub async fn reports(&self) -> Vec<ServerReport> {
        let mut reports = self.reports.clone();
        for report in &mut reports {
            let Some(server) = self.servers.iter().find(|s| s.name() == report.name) else {
                continue;
            };
            if let Some(why) = server.down().await {
                report.status = Status::Failed(why);
            }
        }
        reports
    }

    /// Stop every server (at the end of the session; dropping the last
    /// hold on a server kills it too).
    pub async fn shut_down(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shut_down())).await;
    }
}

/// What starting the servers gave.
pub struct Started {
    /// The servers that run (and the reports of all of them).
    pub servers: Servers,
    /// Servers that did not start, filters that name no tool: for the
    /// user, as warnings.
    pub warnings: Vec<String>,
    /// A required server did not start: which and why (a session must
    /// not go on without it).
    pub failed_required: Option<String>,
}

/// Start every enabled server of `config` at once, each within its
/// `startup_timeout`. A server that does not start is a warning (and,
/// when it is `required`, [`Started::failed_required`]).
pub async fn start(config: &McpConfig, launch: &Launch) -> Started {
    let attempts = config.enabled().map(|server| async move {
        let started =
            tokio::time::timeout(server.startup_timeout, client::connect(server, launch)).await;
        let result = match started {
            Ok(result) => result,
            Err(_) => Err(format!(
                "it did not start within {} s (startup_timeout_sec)",
                server.startup_timeout.as_secs_f64()
            )),
        };
        (server, result)
    });
    let results = futures::future::join_all(attempts).await;
    let mut warnings = Vec::new();
    let mut servers = Vec::new();
    let mut reports = Vec::new();
    let mut offered: Vec<(String, Arc<dyn Tool>)> = Vec::new();
    let mut namer = names::Namer::default();
    let mut failed_required = None;
    for server in config.servers.iter().filter(|s| !s.enabled) {
        reports.push(report(server, Status::Disabled));
    }
    for (server, result) in results {
        let (connection, tools) = match result {
            Ok(started) => started,
            Err(why) => {
                if server.required && failed_required.is_none() {
                    failed_required = Some(format!(
                        "MCP server `{}` is required (required = true) but did not start: {why}",
                        server.name
                    ));
                }
                warnings.push(format!(
                    "MCP server `{}` did not start and is skipped: {why}",
                    server.name
                ));
                reports.push(report(server, Status::Failed(why)));
                continue;
            }
        };
        let handle = Arc::new(Server::new(server.clone(), launch.clone(), connection));
        let mut report = report(server, Status::Running);
        for named in server
            .enabled_tools
            .iter()
            .flatten()
            .chain(&server.disabled_tools)
            .chain(&server.trusted_tools)
        {
            if !tools.iter().any(|t| t.name == *named) {
                warnings.push(format!(
                    "MCP server `{}` has no tool `{named}` (named in its enabled_tools, disabled_tools or trusted_tools)",
                    server.name
                ));
            }
        }
        for info in &tools {
            if !server.offers(&info.name) {
                report.filtered.push(info.name.to_string());
                continue;
            }
            let name = namer.name(&server.name, &info.name);
            report.tools.push(name.clone());
            offered.push((
                server.name.clone(),
                Arc::new(McpTool::new(handle.clone(), name, info)),
            ));
        }
        reports.push(report);
        servers.push(handle);
    }
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    let servers = Servers {
        servers,
        reports,
        tools: if offered.len() > config.max_eager_tools {
            ExtraTools {
                eager: Vec::new(),
                deferred: offered,
            }
        } else {
            ExtraTools {
                eager: offered.into_iter().map(|(_, tool)| tool).collect(),
                deferred: Vec::new(),
            }
        },
    };
    Started {
        servers,
        warnings,
        failed_required,
    }
}

fn report(server: &ServerConfig, status: Status) -> ServerReport {
    ServerReport {
        name: server.name.clone(),
        transport: server.transport.describe(),
        required: server.required,
        status,
        tools: Vec::new(),
        filtered: Vec::new(),
    }
}
