//! Whole-process benchmark of `cogni mcp-server` (figures in
//! docs/performance.md, "cogni as an MCP server"), driven by rmcp's client
//! over the server's stdin and stdout:
//!
//! 1. start → initialize: from spawning the server to the answer to
//!    `initialize` (and `notifications/initialized` sent), `--starts` times;
//! 2. per call: `tools/call` of `cogni` with a trivial task (the scripted
//!    provider answers "ok" at once, with usage, so no tokenizer loads),
//!    from sending the request to reading the result, `--calls` times in
//!    one server; the same task as `cogni run --script` (a process per
//!    task) for comparison;
//! 3. the protocol alone: a call the server refuses at once (a bad
//!    argument), so no session starts.
//!
//! cargo build --profile dist && cargo run --profile dist --example bench_mcp_server -- \
//!     [--calls N] [--starts N] [--cogni PATH] [--sandbox MODE]

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

struct Options {
    calls: usize,
    starts: usize,
    cogni: PathBuf,
    sandbox: Option<String>,
}

fn options() -> Options {
    let mut options = Options {
        calls: 200,
        starts: 20,
        cogni: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/dist/cogni"),
        sandbox: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--calls" => options.calls = value().parse().expect("--calls N"),
            "--starts" => options.starts = value().parse().expect("--starts N"),
            "--cogni" => options.cogni = PathBuf::from(value()),
            "--sandbox" => options.sandbox = Some(value()),
            other => panic!("unknown option {other}"),
        }
    }
    options
}

const SCRIPT: &str =
    "[[turns]]\ntext = \"ok\"\nusage = { input_tokens = 100, output_tokens = 1 }\n";

/// A temporary COGNI_HOME and workspace, and the script.
struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    script: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let script = tmp.path().join("script.toml");
    std::fs::write(&script, SCRIPT).unwrap();
    Dirs {
        _tmp: tmp,
        home,
        work,
        script,
    }
}

fn command(dirs: &Dirs, program: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.current_dir(&dirs.work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &dirs.home)
        .env("COGNI_HOME", &dirs.home)
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

struct Served {
    client: RunningService<RoleClient, ()>,
    child: tokio::process::Child,
}

async fn start(options: &Options, dirs: &Dirs) -> (Served, Duration) {
    let mut cmd = command(dirs, &options.cogni);
    cmd.arg("mcp-server").arg("--script").arg(&dirs.script);
    if let Some(mode) = &options.sandbox {
        cmd.args(["--sandbox", mode]);
    }
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let client = rmcp::serve_client((), (stdout, stdin)).await.unwrap();
    (Served { client, child }, started.elapsed())
}

impl Served {
    async fn close(mut self) {
        let _ = self.client.cancel().await;
        let status = self.child.wait().await.unwrap();
        assert!(status.success(), "the server exited with {status}");
    }

    async fn call(&self, arguments: Value) -> (Value, Duration) {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        let params = CallToolRequestParams::new("cogni").with_arguments(arguments as JsonObject);
        let sent = Instant::now();
        let result = self.client.peer().call_tool(params).await.unwrap();
        let took = sent.elapsed();
        (serde_json::to_value(result).unwrap(), took)
    }
}

fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<44} median {:>7.2} ms  p90 {:>7.2} ms  min {:>7.2} ms  (n = {})",
        ms(at(0.5)),
        ms(at(0.9)),
        ms(times[0]),
        times.len()
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = options();
    assert!(
        options.cogni.exists(),
        "{} not found: cargo build --profile dist first",
        options.cogni.display()
    );
    let dirs = dirs();

    let mut starts = Vec::new();
    for _ in 0..options.starts {
        let (served, took) = start(&options, &dirs).await;
        starts.push(took);
        served.close().await;
    }
    summary("start -> initialize answered", starts);

    let (served, _) = start(&options, &dirs).await;
    // The first call loads what stays loaded (the sandbox probe's answer,
    // the config's parsers): measured apart.
    let (first, took_first) = served.call(json!({ "prompt": "say ok" })).await;
    assert_eq!(first["structuredContent"]["answer"], "ok", "{first}");
    let mut calls = Vec::new();
    for _ in 0..options.calls {
        let (result, took) = served.call(json!({ "prompt": "say ok" })).await;
        assert_eq!(result["isError"], false, "{result}");
        calls.push(took);
    }
    summary("first tools/call cogni", vec![took_first]);
    summary("tools/call cogni (trivial task)", calls);
    let mut refused = Vec::new();
    for _ in 0..options.calls {
        let (result, took) = served
            .call(json!({ "prompt": "x", "sandbox": "roomy" }))
            .await;
        assert_eq!(result["isError"], true, "{result}");
        refused.push(took);
    }
    summary("tools/call refused (protocol round trip)", refused);
    served.close().await;

    let mut runs = Vec::new();
    for _ in 0..options.calls.min(50) {
        let mut cmd = command(&dirs, &options.cogni);
        cmd.arg("run").arg("--script").arg(&dirs.script);
        if let Some(mode) = &options.sandbox {
            cmd.args(["--sandbox", mode]);
        }
        let started = Instant::now();
        let out = cmd
            .arg("say ok")
            .stdout(Stdio::piped())
            .output()
            .await
            .unwrap();
        runs.push(started.elapsed());
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    }
    summary("cogni run --script (a process per task)", runs);
}
