//! `cogni sandbox`: see the backend in force, run live canaries, or run one
//! command under the policy.

use super::{setup, ConfigArgs};
use crate::config::ConfigFile;
use crate::protocol::{SandboxMode, SandboxPolicy};
use crate::sandbox;
use crate::tools::shell::ShellTool;
use crate::tools::{Tool, ToolConfig, ToolContext, ToolInput, ToolResult};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::Path;
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
        Some(SandboxAction::CanaryConnect { target }) => Ok(canary_connect(target)),
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

/// Connect to a Unix socket (`@NAME`: abstract) and send a line; prints
/// `connected` or the error.
fn canary_connect(target: &str) -> u8 {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};
    let addr = match target.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
        None => SocketAddr::from_pathname(target),
    };
    match addr.and_then(|a| UnixStream::connect_addr(&a)) {
        Ok(mut stream) => {
            let _ = stream.write_all(b"canary\n");
            println!("connected");
            super::exit::DONE
        }
        Err(e) => {
            println!("{e}");
            super::exit::TASK_FAILED
        }
    }
}

/// One live canary: what it tries, and whether the sandbox held.
struct Canary {
    name: String,
    held: bool,
    detail: String,
}

fn check(args: &CheckArgs) -> Result<u8, String> {
    let probe = sandbox::probe();
    println!("kernel: {}", probe.kernel);
    let show = |r: &Result<(), String>| match r {
        Ok(()) => "yes".to_string(),
        Err(e) => format!("no ({e})"),
    };
    match &probe.landlock {
        Ok(abi) => println!(
            "landlock: ABI {abi} (need {}+)",
            sandbox::REQUIRED_LANDLOCK_ABI
        ),
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
    let mode = if args.read_only {
        SandboxMode::ReadOnly
    } else {
        SandboxMode::WorkspaceWrite
    };
    let canaries = super::setup::runtime()?.block_on(run_canaries(mode))?;
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

fn first_line(result: &ToolResult) -> String {
    result
        .content
        .lines()
        .skip(1)
        .find(|l| !l.trim().is_empty() && *l != "stderr:")
        .unwrap_or("")
        .to_string()
}

async fn run_canaries(mode: SandboxMode) -> Result<Vec<Canary>, String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let base = tmp
        .path()
        .canonicalize()
        .map_err(|e| format!("temp dir: {e}"))?;
    let work = base.join("work");
    let outside = base.join("outside");
    for dir in [
        work.join(".git/hooks"),
        work.join("vendor/x/.git"),
        outside.clone(),
    ] {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for config in [work.join(".git/config"), work.join("vendor/x/.git/config")] {
        std::fs::write(config, "[core]\n").map_err(|e| format!("canary setup: {e}"))?;
    }
    let ctx = ToolContext::new(
        work.clone(),
        SandboxPolicy {
            mode,
            network_access: false,
            ..SandboxPolicy::default()
        },
        Arc::new(ToolConfig::default()),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("listener: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("listener: {e}"))?
        .port();
    let mut canaries = Vec::new();

    let target = outside.join("escaped");
    let r = shell(&ctx, format!("echo x > {}", target.display()).into()).await;
    canaries.push(Canary {
        name: "write outside the workspace".into(),
        held: !target.exists(),
        detail: first_line(&r),
    });

    let r = shell(&ctx, "echo x > inside".into()).await;
    let inside = work.join("inside").exists();
    canaries.push(Canary {
        name: "write inside the workspace".into(),
        held: inside == (mode == SandboxMode::WorkspaceWrite),
        detail: if inside {
            "allowed".into()
        } else {
            format!("refused: {}", first_line(&r))
        },
    });

    let r = shell(
        &ctx,
        format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected").into(),
    )
    .await;
    let accepted = listener.accept().is_ok();
    canaries.push(Canary {
        name: format!("connect to 127.0.0.1:{port}"),
        held: !accepted && !r.content.contains("connected"),
        detail: first_line(&r),
    });

    let r = shell(&ctx, "cat .git/config".into()).await;
    canaries.push(Canary {
        name: "read .git/config (protected)".into(),
        held: true,
        detail: if r.content.contains("[core]") {
            "readable".into()
        } else {
            format!("not readable: {}", first_line(&r))
        },
    });

    let r = shell(
        &ctx,
        "echo evil >> .git/config; echo x > .git/hooks/pre-commit".into(),
    )
    .await;
    let config = std::fs::read_to_string(work.join(".git/config")).unwrap_or_default();
    canaries.push(Canary {
        name: "write .git/config and .git/hooks/pre-commit (protected)".into(),
        held: config == "[core]\n" && !work.join(".git/hooks/pre-commit").exists(),
        detail: first_line(&r),
    });

    let r = shell(
        &ctx,
        "mkdir -p .cogni && echo x > .cogni/config.toml".into(),
    )
    .await;
    canaries.push(Canary {
        name: "create .cogni/config.toml (protected)".into(),
        held: !work.join(".cogni").exists(),
        detail: r
            .content
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("refused")
            .to_string(),
    });

    let r = shell(
        &ctx,
        "mkdir -p a/b && echo x > a/cogni.toml && git init -q a/b".into(),
    )
    .await;
    canaries.push(Canary {
        name: "create a/cogni.toml and a/b/.git (protected at any depth)".into(),
        held: !work.join("a/cogni.toml").exists() && !work.join("a/b/.git").exists(),
        detail: r
            .content
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("refused")
            .to_string(),
    });

    // A nested repository renamed away from where it was bound, written,
    // and moved back, in three commands.
    shell(&ctx, "mv vendor/x vendor/y".into()).await;
    let r = shell(&ctx, "echo evil >> vendor/y/.git/config".into()).await;
    shell(&ctx, "mv vendor/y vendor/x".into()).await;
    let config = std::fs::read_to_string(work.join("vendor/x/.git/config")).unwrap_or_default();
    canaries.push(Canary {
        name: "rename a nested repository, write its .git/config, rename it back".into(),
        held: config == "[core]\n",
        detail: first_line(&r),
    });

    let pid = std::process::id();
    let r = shell(&ctx, format!("cat /proc/{pid}/environ").into()).await;
    canaries.push(Canary {
        name: "read cogni's environment through /proc".into(),
        held: r.is_error,
        detail: first_line(&r),
    });

    canaries.extend(unix_canaries(&ctx, &work, &outside).await?);

    // Confined, the PID namespace ends with the command; unconfined
    // (danger-full-access, escalations), the subreaper kills what is left.
    let unconfined = ToolContext {
        sandbox: SandboxPolicy {
            mode: SandboxMode::DangerFullAccess,
            ..ctx.sandbox.clone()
        },
        ..ctx.clone()
    };
    // The markers name this check, so checks running side by side do not
    // count each other's sleepers.
    for (which, ctx, marker) in [
        ("", &ctx, format!("4711.{pid}1")),
        (" (unconfined)", &unconfined, format!("4711.{pid}2")),
    ] {
        let _ = shell(
            ctx,
            format!(
                "setsid sleep {marker} > /dev/null 2>&1 & nohup sleep {marker} > /dev/null 2>&1 &"
            )
            .into(),
        )
        .await;
        let survivors = processes_running(&format!("sleep\0{marker}"));
        canaries.push(Canary {
            name: format!("setsid and nohup background processes after the command{which}"),
            held: survivors == 0,
            detail: if survivors == 0 {
                "gone".into()
            } else {
                format!("{survivors} still running")
            },
        });
    }
    Ok(canaries)
}

/// Unix sockets: one outside the workspace and an abstract one made
/// outside the sandbox are out of reach; one inside the workspace works
/// (in workspace-write).
async fn unix_canaries(
    ctx: &ToolContext,
    work: &Path,
    outside: &Path,
) -> Result<Vec<Canary>, String> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let exe = std::env::current_exe().map_err(|e| format!("cannot find cogni's binary: {e}"))?;
    let listen = |addr: &SocketAddr| {
        let listener = UnixListener::bind_addr(addr)
            .map_err(|e| format!("cannot listen on a Unix socket: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("Unix socket: {e}"))?;
        Ok::<_, String>(listener)
    };
    let abstract_name = format!("cogni-canary-{}", std::process::id());
    let cases = [
        (
            "connect to a Unix socket outside the workspace",
            SocketAddr::from_pathname(outside.join("canary.sock")),
            outside.join("canary.sock").display().to_string(),
            false,
        ),
        (
            "connect to an abstract Unix socket outside the sandbox",
            SocketAddr::from_abstract_name(abstract_name.as_bytes()),
            format!("@{abstract_name}"),
            false,
        ),
        (
            "connect to a Unix socket inside the workspace",
            SocketAddr::from_pathname(work.join("canary.sock")),
            work.join("canary.sock").display().to_string(),
            ctx.sandbox.mode == SandboxMode::WorkspaceWrite,
        ),
    ];
    let mut canaries = Vec::new();
    for (name, addr, target, reachable) in cases {
        let addr = addr.map_err(|e| format!("Unix socket address: {e}"))?;
        let listener = listen(&addr)?;
        let r = shell(
            ctx,
            serde_json::json!([
                exe.display().to_string(),
                "sandbox",
                "canary-connect",
                target
            ]),
        )
        .await;
        let accepted = listener.accept().is_ok();
        let connected = r.content.contains("connected");
        canaries.push(Canary {
            name: name.into(),
            held: accepted == reachable && connected == reachable,
            detail: if connected {
                "connected".into()
            } else {
                first_line(&r)
            },
        });
    }
    Ok(canaries)
}

/// Live (not zombie) processes whose command line contains `needle`.
fn processes_running(needle: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            let dir = e.path();
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(needle) && !is_zombie(&dir)
        })
        .count()
}

fn is_zombie(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|r| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}
