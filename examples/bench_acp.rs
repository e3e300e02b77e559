//! Whole-process benchmark of `cogni acp` start-up: from spawning the
//! process to its answer to `initialize` on stdout (the request is
//! written at once; the answer is the first line). Then stdin closes and
//! the process must exit 0. `cogni --version` is timed in the same run,
//! for the cost of starting any process.
//!
//! cargo build --profile dist && cargo run --profile dist --example bench_acp -- [--runs N] [--cogni PATH]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}"#;

fn command(cogni: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(cogni);
    cmd.current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COGNI_HOME", home);
    cmd
}

/// Spawn to the `initialize` answer.
fn initialize(cogni: &Path, home: &Path) -> Duration {
    let started = Instant::now();
    let mut child = command(cogni, home)
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cogni starts");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{INITIALIZE}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let took = started.elapsed();
    assert!(
        line.contains(r#""id":1"#) && line.contains("protocolVersion"),
        "{line}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success(), "exit 0 after stdin closed");
    took
}

fn version(cogni: &Path, home: &Path) -> Duration {
    let started = Instant::now();
    let out = command(cogni, home).arg("--version").output().unwrap();
    assert!(out.status.success());
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut runs = 50;
    let mut cogni = PathBuf::from("target/dist/cogni");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            "--cogni" => cogni = PathBuf::from(args.next().expect("--cogni PATH")),
            other => panic!("unknown argument {other}; use --runs N, --cogni PATH"),
        }
    }
    let cogni = std::fs::canonicalize(&cogni).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; build it with cargo build --profile dist",
            cogni.display()
        )
    });
    let home = tempfile::tempdir().unwrap();
    // Warm the page cache.
    initialize(&cogni, home.path());
    let mut init = Vec::new();
    let mut bare = Vec::new();
    for _ in 0..runs {
        init.push(initialize(&cogni, home.path()));
        bare.push(version(&cogni, home.path()));
    }
    let (m, min) = median(init);
    println!(
        "cogni acp: spawn to the initialize answer: {} (min {})",
        ms(m),
        ms(min)
    );
    let (m, min) = median(bare);
    println!("cogni --version: {} (min {})", ms(m), ms(min));
}
