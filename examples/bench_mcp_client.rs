//! Benchmark of cogni's MCP client (figures in docs/performance.md, "MCP
//! servers: start and calls"), in process, against the real test servers
//! (`npm ci` in tests/mcp; `pip install -r tests/mcp/requirements.txt`):
//!
//! 1. start: `mcp::start` with each server alone and with all three
//!    (filesystem, everything, git) at once, `--starts` times each,
//!    interleaved; all three should take the slowest one's time, not the
//!    sum;
//! 2. per call: `mcp__everything__echo` called through cogni's tool (the
//!    session's path: arguments, the call with its timeout, the result
//!    rendered and capped) against the same call made by a bare rmcp
//!    client on a second server process, `--calls` times, interleaved;
//!    the difference of the medians is cogni's overhead per call.
//!
//! cargo run --profile dist --example bench_mcp_client -- [--calls N] [--starts N]

use cogni::mcp::{self, Launch, McpConfig, ServerConfig, Transport};
use cogni::protocol::SandboxPolicy;
use cogni::tools::env::ShellEnvPolicy;
use cogni::tools::{ToolConfig, ToolContext, ToolInput};
use rmcp::model::{CallToolRequestParams, JsonObject};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Options {
    calls: usize,
    starts: usize,
}

fn options() -> Options {
    let mut options = Options {
        calls: 500,
        starts: 10,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--calls" => options.calls = value().parse().expect("--calls N"),
            "--starts" => options.starts = value().parse().expect("--starts N"),
            other => panic!("unknown option {other}"),
        }
    }
    options
}

fn npm_server(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/.bin")
        .join(format!("mcp-server-{name}"));
    assert!(
        path.exists(),
        "{} is missing: run `npm ci` in tests/mcp",
        path.display()
    );
    path
}

fn server(name: &str, command: &Path, args: &[&str]) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        transport: Transport::Stdio {
            command: command.display().to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Default::default(),
            env_vars: Vec::new(),
            cwd: None,
        },
        enabled: true,
        required: true,
        startup_timeout: Duration::from_secs(30),
        tool_timeout: Duration::from_secs(30),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        trusted_tools: Vec::new(),
    }
}

fn config(servers: Vec<ServerConfig>) -> McpConfig {
    McpConfig {
        servers,
        ..McpConfig::default()
    }
}

async fn start(config: &McpConfig, launch: &Launch) -> (mcp::Servers, Duration) {
    let started = Instant::now();
    let result = mcp::start(config, launch).await;
    let took = started.elapsed();
    assert!(
        result.failed_required.is_none(),
        "{:?}",
        result.failed_required
    );
    (result.servers, took)
}

/// CPU time (user + system) of the reaped children so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn summary(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<46} median {:>8.3} ms  p90 {:>8.3} ms  min {:>8.3} ms  (n = {})",
        ms(at(0.5)),
        ms(at(0.9)),
        ms(times[0]),
        times.len()
    );
    at(0.5)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = options();
    let work = tempfile::tempdir().unwrap();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(work.path())
        .status()
        .unwrap();
    let launch = Launch {
        cwd: work.path().to_path_buf(),
        env: ShellEnvPolicy::default(),
        pins: Default::default(),
    };
    let root = work.path().display().to_string();
    let filesystem = server("filesystem", &npm_server("filesystem"), &[&root]);
    let everything = server("everything", &npm_server("everything"), &[]);
    let git = server("git", Path::new("mcp-server-git"), &["--repository", &root]);

    // 1. Starting servers: alone and all three at once, interleaved.
    let alone = [&filesystem, &everything, &git];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); 4];
    let mut cpu: Vec<Vec<Duration>> = vec![Vec::new(); 4];
    let all = config(alone.iter().map(|s| (*s).clone()).collect());
    for _ in 0..options.starts {
        for i in 0..4 {
            let one = match alone.get(i) {
                Some(one) => config(vec![(*one).clone()]),
                None => all.clone(),
            };
            let before = children_cpu();
            let (servers, took) = start(&one, &launch).await;
            servers.shut_down().await;
            times[i].push(took);
            cpu[i].push(children_cpu().saturating_sub(before));
        }
    }
    for (i, name) in ["filesystem", "everything", "git", "all three"]
        .iter()
        .enumerate()
    {
        println!(
            "  the servers' own CPU time, {name:<10}: median {:.0} ms",
            ms(median(cpu[i].clone()))
        );
    }
    let mut slowest = Duration::ZERO;
    let mut sum = Duration::ZERO;
    for (i, one) in alone.iter().enumerate() {
        let m = summary(&format!("start {} alone", one.name), times[i].clone());
        slowest = slowest.max(m);
        sum += m;
    }
    let all = summary("start all three at once", times[3].clone());
    println!(
        "all three / slowest alone = {:.2}; / sum of the three = {:.2}",
        all.as_secs_f64() / slowest.as_secs_f64(),
        all.as_secs_f64() / sum.as_secs_f64()
    );

    // 2. Calls: cogni's tool against a bare rmcp client, interleaved.
    let (servers, _) = start(&config(vec![everything.clone()]), &launch).await;
    let echo = servers
        .tools()
        .eager
        .iter()
        .find(|t| t.spec().name == "mcp__everything__echo")
        .expect("the everything server offers echo")
        .clone();
    let ctx = ToolContext::new(
        work.path().to_path_buf(),
        SandboxPolicy::default(),
        Arc::new(ToolConfig::default()),
    );
    let mut child = tokio::process::Command::new(npm_server("everything"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let bare = rmcp::serve_client((), (stdout, stdin)).await.unwrap();
    let arguments: JsonObject = json!({ "message": "hello" }).as_object().unwrap().clone();

    let (mut through_cogni, mut direct) = (Vec::new(), Vec::new());
    for i in 0..options.calls + 20 {
        let sent = Instant::now();
        let result = echo
            .run(ToolInput::Json(json!({ "message": "hello" })), &ctx)
            .await;
        let cogni_took = sent.elapsed();
        assert!(!result.is_error, "{}", result.content);
        assert!(result.content.contains("hello"), "{}", result.content);

        let params = CallToolRequestParams::new("echo").with_arguments(arguments.clone());
        let sent = Instant::now();
        let result = bare.peer().call_tool(params).await.unwrap();
        let direct_took = sent.elapsed();
        assert_ne!(result.is_error, Some(true));
        if i >= 20 {
            // the first calls warm both paths up
            through_cogni.push(cogni_took);
            direct.push(direct_took);
        }
    }
    let a = summary("echo through cogni's MCP tool", through_cogni.clone());
    let b = summary("echo through a bare rmcp client", direct.clone());
    let paired: Vec<Duration> = through_cogni
        .iter()
        .zip(&direct)
        .map(|(a, b)| a.saturating_sub(*b))
        .collect();
    println!(
        "cogni's overhead per call: {:.3} ms (difference of medians); {:.3} ms (median of paired differences)",
        ms(a.saturating_sub(b)),
        ms(median(paired))
    );
    let _ = bare.cancel().await;
    servers.shut_down().await;
}
