//! MCP servers for front doors (docs/mcp.md): starting them for a session,
//! `cogni mcp list | add | remove`, and the listing `/mcp` shows too.

use super::{exit, setup, ConfigArgs};
use crate::agent::Session;
use crate::config::{self, ConfigFile, NewServer};
use crate::mcp::{self, Launch, McpConfig, ServerReport, Servers, Status};
use crate::protocol::{AgentEvent, EventSink};
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start the configured servers and list them: status and tools.
    List(ListArgs),
    /// Add a server to $COGNI_HOME/config.toml: `cogni mcp add NAME -- CMD ARGS...` or `--url URL`.
    Add(AddArgs),
    /// Remove a server from $COGNI_HOME/config.toml.
    Remove(RemoveArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub common: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name: its tools are offered as mcp__NAME__TOOL.
    pub name: String,

    /// An environment variable for the server, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// A streamable HTTP server at this URL instead of a command.
    #[arg(long, conflicts_with_all = ["command", "env"])]
    pub url: Option<String>,

    /// With --url: the environment variable holding the bearer token.
    #[arg(long, value_name = "VAR", requires = "url")]
    pub bearer_token_env_var: Option<String>,

    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    pub name: String,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

/// Start `config`'s servers for `session` and add their tools; every
/// server that did not start is a `warning` event. Fails when a required
/// server did not start. `None` when none is configured.
pub(super) async fn attach(
    session: &mut Session,
    config: &McpConfig,
    sink: &dyn EventSink,
) -> Result<Option<Servers>, String> {
    if config.enabled().next().is_none() {
        return Ok(None);
    }
    let launch = Launch {
        cwd: session.context().cwd.clone(),
        env: session.shell_env().clone(),
        pins: session.context().sandbox_policy.pins.clone(),
    };
    let started = mcp::start(config, &launch).await;
    if let Some(error) = started.failed_required {
        started.servers.shut_down().await;
        return Err(error);
    }
    for message in started.warnings {
        sink.emit(AgentEvent::Warning { message });
    }
    session.add_tools(started.servers.tools());
    Ok(Some(started.servers))
}

/// The listing of `cogni mcp list` and `/mcp`.
pub(super) fn render(reports: &[ServerReport]) -> String {
    if reports.is_empty() {
        return "no MCP servers configured (add one with `cogni mcp add NAME -- CMD ARGS...` or [mcp_servers.NAME] in cogni.toml)\n".into();
    }
    let mut out = String::new();
    for r in reports {
        let status = match &r.status {
            Status::Running => format!("running, {} tools", r.tools.len()),
            Status::Failed(why) => format!("failed: {why}"),
            Status::Disabled => "disabled".into(),
        };
        let required = if r.required { ", required" } else { "" };
        out.push_str(&format!(
            "{} ({status}{required}): {}\n",
            r.name, r.transport
        ));
        for tool in &r.tools {
            out.push_str(&format!("  {tool}\n"));
        }
        if !r.filtered.is_empty() {
            out.push_str(&format!(
                "  left out (enabled_tools, disabled_tools): {}\n",
                r.filtered.join(", ")
            ));
        }
    }
    out
}

pub fn run(args: McpArgs) -> u8 {
    let result = match args.command {
        McpCommand::List(args) => list(args),
        McpCommand::Add(args) => add(args).map(|()| exit::DONE),
        McpCommand::Remove(args) => {
            let home = config::cogni_home(&|k| std::env::var(k).ok());
            config::remove_server(&home, &args.name)
                .map(|()| {
                    println!("removed MCP server `{}`", args.name);
                    exit::DONE
                })
                .map_err(|e| e.to_string())
        }
    };
    result.unwrap_or_else(|message| {
        eprintln!("cogni: {message}");
        exit::USAGE
    })
}

/// Exit 1 when a server that should run did not start.
fn list(args: ListArgs) -> Result<u8, String> {
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    let loaded = setup::load(&args.common, &launch_dir, cwd, ConfigFile::default())?;
    let config = loaded.config;
    let launch = Launch {
        cwd: config.session.cwd.clone(),
        env: config.session.tool_config.shell_env.clone(),
        pins: config.session.sandbox_policy.pins.clone(),
    };
    let runtime = setup::runtime()?;
    let reports = runtime.block_on(async {
        let started = mcp::start(&config.mcp, &launch).await;
        let reports = started.servers.reports().await;
        started.servers.shut_down().await;
        reports
    });
    print!("{}", render(&reports));
    let failed = reports
        .iter()
        .any(|r| matches!(r.status, Status::Failed(_)));
    Ok(if failed {
        exit::TASK_FAILED
    } else {
        exit::DONE
    })
}

fn add(args: AddArgs) -> Result<(), String> {
    let server = match args.url {
        Some(url) => NewServer::Http {
            url,
            bearer_token_env_var: args.bearer_token_env_var,
        },
        None if args.command.is_empty() => {
            return Err(format!(
            "give the server's command after `--` (`cogni mcp add {} -- CMD ARGS...`) or --url URL",
            args.name
        ))
        }
        None => NewServer::Stdio {
            argv: args.command,
            env: args.env.into_iter().collect(),
        },
    };
    let home = config::cogni_home(&|k| std::env::var(k).ok());
    let replaced = config::add_server(&home, &args.name, &server).map_err(|e| e.to_string())?;
    println!(
        "{} MCP server `{}` in {}; `cogni mcp list` starts it and shows its tools",
        if replaced { "replaced" } else { "added" },
        args.name,
        home.join("config.toml").display()
    );
    Ok(())
}
