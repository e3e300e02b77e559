//! `cogni sandbox`: see the backend in force, run live canaries, or run one
//! command under the policy.

use super::{setup, ConfigArgs};
use crate::config::ConfigFile;
use crate::protocol::SandboxMode;
use crate::sandbox;
use crate::tools::shell::ShellTool;
use crate::tools::{Tool, ToolContext, ToolInput, ToolResult};
use clap::{Args, Subcommand};

#[cfg(target_os = "linux")]
mod canaries;
use std::io::Write;
use std::sync::Arc;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SandboxArgs {
    #[command(subcommand)]
    pub action: Option<SandboxAction>,

    #[command(flatten)]
    pub common: ConfigArgs,

    /// Sandbox mode: read-only, workspace-write, danger-full-access (default: from config).
    #[arg(long, value_name = "MODE", value_parser = super::parse_sandbox)]
    pub mode: Option<SandboxMode>,

    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum SandboxAction {
    /// Print the backend in force and run live canaries; exit 1 if one escapes.
    Check(CheckArgs),
    /// The Unix-socket canaries' client, run inside the sandbox: connect to
    /// PATH (or @NAME, an abstract socket) and send a line.
    #[command(name = "canary-connect", hide = true)]
    CanaryConnect { target: String },
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Check read-only instead of workspace-write.
    #[arg(long)]
    pub read_only: bool,
}

pub fn run(args: SandboxArgs) -> u8 {
    let result = match &args.action {
        Some(SandboxAction::Check(check_args)) => check(check_args),
        #[cfg(target_os = "linux")]
        Some(SandboxAction::CanaryConnect { target }) => Ok(canaries::canary_connect(target)),
        #[cfg(not(target_os = "linux"))]
        Some(SandboxAction::CanaryConnect { .. }) => Err("the canaries are Linux only".into()),
        None => run_command(&args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("cogni: {message}");
            super::exit::USAGE
        }
    }
}

async fn shell(ctx: &ToolContext, command: serde_json::Value) -> ToolResult {
    ShellTool::new(&ctx.config)
        .run(
            ToolInput::Json(serde_json::json!({ "command": command })),
            ctx,
        )
        .await
}

/// `cogni sandbox [--mode M] -- CMD ARGS`: the command as the shell tool
/// runs it, with what the model would see.
fn run_command(args: &SandboxArgs) -> Result<u8, String> {
    if args.command.is_empty() {
        return Err("give a command after `--` (e.g. `cogni sandbox -- touch /tmp/x`), or `cogni sandbox check`".into());
    }
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    let flags = ConfigFile {
        sandbox_mode: args.mode,
        ..Default::default()
    };
    let loaded = setup::load(&args.common, &launch_dir, cwd, flags)?;
    let session = loaded.config.session;
    let policy = session.sandbox_policy;
    if policy.mode == SandboxMode::DangerFullAccess {
        eprintln!("cogni: sandbox: danger-full-access: the command runs unconfined");
    } else {
        sandbox::probe().backend().map_err(|e| e.to_string())?;
    }
    let ctx = ToolContext::new(session.cwd, policy, Arc::new(session.tool_config));
    let result = super::setup::runtime()?.block_on(shell(&ctx, serde_json::json!(args.command)));
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(result.content.as_bytes());
    let _ = out.flush();
    Ok(match result.exit_code() {
        Some(code) => code.clamp(0, 255) as u8,
        None => super::exit::TASK_FAILED,
    })
}

fn check(args: &CheckArgs) -> Result<u8, String> {
    let probe = sandbox::probe();
    println!("kernel: {}", probe.kernel);
    let show = |r: &Result<(), String>| match r {
        Ok(()) => "yes".to_string(),
        Err(e) => format!("no ({e})"),
    };
    match &probe.landlock {
        #[cfg(target_os = "linux")]
        Ok(abi) => println!(
            "landlock: ABI {abi} (need {}+)",
            sandbox::REQUIRED_LANDLOCK_ABI
        ),
        #[cfg(not(target_os = "linux"))]
        Ok(abi) => println!("landlock: ABI {abi}"),
        Err(e) => println!("landlock: no ({e})"),
    }
    println!("seccomp: {}", show(&probe.seccomp));
    println!("user/mount/pid namespaces: {}", show(&probe.namespaces));
    println!("process limit: {}", probe.process_limit());
    match probe.backend() {
        Ok(name) => println!("backend: {name}"),
        Err(e) => {
            println!("backend: none");
            println!("{e}");
            return Ok(super::exit::TASK_FAILED);
        }
    }
    live_canaries(args)
}

/// Run the canaries of `args`' mode and report them.
#[cfg(target_os = "linux")]
fn live_canaries(args: &CheckArgs) -> Result<u8, String> {
    let mode = if args.read_only {
        SandboxMode::ReadOnly
    } else {
        SandboxMode::WorkspaceWrite
    };
    let canaries = super::setup::runtime()?.block_on(canaries::run_canaries(mode))?;
    println!("canaries ({}, network off):", mode.as_str());
    let mut escaped = 0;
    for canary in &canaries {
        if !canary.held {
            escaped += 1;
        }
        println!(
            "  {} {}: {}",
            if canary.held { "ok     " } else { "ESCAPED" },
            canary.name,
            canary.detail
        );
    }
    if escaped > 0 {
        println!(
            "{escaped} canar{} escaped: the sandbox does not hold on this system",
            if escaped == 1 { "y" } else { "ies" }
        );
        return Ok(super::exit::TASK_FAILED);
    }
    println!("all canaries held");
    Ok(super::exit::DONE)
}

/// The live canaries probe Linux's backend; elsewhere (macOS's Seatbelt)
/// the backend's tests are the runtime tests of its CI job.
#[cfg(not(target_os = "linux"))]
fn live_canaries(_args: &CheckArgs) -> Result<u8, String> {
    println!("canaries: none on this platform (the live canaries are Linux's)");
    Ok(super::exit::DONE)
}
