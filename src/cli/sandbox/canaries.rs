//! The live canaries of `cogni sandbox check` (Linux: the backend they
//! test is Linux's): what a command tries, and whether the sandbox held.

use super::shell;
use crate::protocol::{SandboxMode, SandboxPolicy};
use crate::tools::{ToolConfig, ToolContext, ToolResult};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Connect to a Unix socket (`@NAME`: abstract) and send a line; prints
/// `connected` or the error.
pub(super) fn canary_connect(target: &str) -> u8 {
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
            crate::cli::exit::DONE
        }
        Err(e) => {
            println!("{e}");
            crate::cli::exit::TASK_FAILED
        }
    }
}

/// One live canary: what it tries, and whether the sandbox held.
pub(super) struct Canary {
    pub name: String,
    pub held: bool,
    pub detail: String,
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

pub(super) async fn run_canaries(mode: SandboxMode) -> Result<Vec<Canary>, String> {
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
