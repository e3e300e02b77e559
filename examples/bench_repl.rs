//! Whole-process benchmark of the REPL on a pseudo-terminal, against the
//! loopback mock (Chat Completions SSE):
//!
//! - launch to prompt: from spawning `cogni repl` to its prompt on the
//!   terminal, for a new session and for resuming a 2,000-item session;
//! - keystroke to echo: from writing a key to the terminal to the key
//!   coming back (the editor thread echoes it);
//! - streamed token to screen: the mock holds the stream after a first
//!   line; from releasing it to the next line appearing on the terminal
//!   (the mock's wake-up, loopback, SSE parsing, the engine, the renderer
//!   and the terminal included).
//!
//! cargo build --profile dist && cargo run --profile dist --example bench_repl -- [--runs N] [--cogni PATH]

#[path = "../tests/it/common/images.rs"]
#[allow(dead_code)]
mod images;
#[path = "../tests/it/common/mock.rs"]
#[allow(dead_code)]
mod mock;
#[path = "../tests/it/common/pty.rs"]
#[allow(dead_code)]
mod pty;
#[path = "../tests/it/common/web_search.rs"]
#[allow(dead_code)]
mod web_search;
#[path = "../tests/it/common/wire_anthropic.rs"]
#[allow(dead_code)]
mod wire_anthropic;
#[path = "../tests/it/common/wire_chat.rs"]
#[allow(dead_code)]
mod wire_chat;
#[path = "../tests/it/common/wire_ollama.rs"]
#[allow(dead_code)]
mod wire_ollama;
#[path = "../tests/it/common/wire_responses.rs"]
#[allow(dead_code)]
mod wire_responses;

use cogni::protocol::{HistoryItem, HistoryObserver, Role};
use cogni::store::{Header, Store};
use mock::{chat, Gate, MockResponse, MockServer};
use pty::Pty;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(20);

fn command(cogni: &Path, home: &Path, work: &Path, server: &MockServer, args: &[&str]) -> Command {
    let mut cmd = Command::new(cogni);
    cmd.current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COGNI_HOME", home)
        .env("TERM", "xterm-256color")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench-key")
        .args(args)
        .args(["--model", "gpt-4.1"]);
    cmd
}

/// Wait until the terminal shows `needle` after byte `from` (raw output);
/// returns when it appeared and where it ended.
fn wait_for(pty: &Pty, needle: &str, from: usize) -> (Instant, usize) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let raw = pty.raw();
        if let Some(at) = raw.get(from..).and_then(|s| s.find(needle)) {
            return (Instant::now(), from + at + needle.len());
        }
        assert!(
            Instant::now() < deadline,
            "`{needle}` never appeared: {raw:?}"
        );
        std::thread::sleep(Duration::from_micros(50));
    }
}

struct Sample {
    launch: Duration,
    echo: Duration,
    token: Duration,
}

fn one_run(cogni: &Path) -> Sample {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(&work).expect("work");
    let server = MockServer::start();
    let gate = Gate::new();
    server.enqueue(
        MockResponse::sse([chat::role(), chat::text("first line\n")])
            .wait_for(&gate)
            .chunks([
                chat::text("SECOND\n"),
                chat::finish("stop"),
                chat::usage(10, 5, 0),
                chat::done(),
            ]),
    );
    let started = Instant::now();
    let mut pty = Pty::spawn(command(cogni, &home, &work, &server, &["repl"]), 100);
    let (at, end) = wait_for(&pty, "› ", 0);
    let launch = at - started;

    let sent = Instant::now();
    pty.send("q");
    let (at, end) = wait_for(&pty, "q", end);
    let echo = at - sent;

    pty.send("\r");
    let (_, end) = wait_for(&pty, "first line", end);
    let released = Instant::now();
    gate.release();
    let (at, end) = wait_for(&pty, "SECOND", end);
    let token = at - released;
    wait_for(&pty, "› ", end);
    pty.send("\x04");
    pty.wait(TIMEOUT);
    Sample {
        launch,
        echo,
        token,
    }
}

/// Launch to prompt when resuming a 2,000-item session.
fn resume_run(cogni: &Path) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(&work).expect("work");
    let store = Store::new(&home);
    let header = Header::new("big", 0, &work, "gpt-4.1", "openai");
    let file = store
        .create(&header, &[], std::sync::Arc::new(|l: &str| l.to_string()))
        .expect("create");
    for i in 0..2000 {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        file.appended(&[HistoryItem::text(
            role,
            format!(
                "message {i}: {}",
                "some text of a typical length ".repeat(10)
            ),
        )]);
    }
    drop(file);
    let server = MockServer::start();
    let started = Instant::now();
    let mut pty = Pty::spawn(
        command(cogni, &home, &work, &server, &["resume", "big"]),
        100,
    );
    let (at, _) = wait_for(&pty, "› ", 0);
    pty.send("\x04");
    pty.wait(TIMEOUT);
    at - started
}

fn median(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut runs = 20;
    let mut cogni = PathBuf::from("target/dist/cogni");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs),
            "--cogni" => cogni = args.next().map(PathBuf::from).unwrap_or(cogni),
            other => panic!("unknown argument {other}"),
        }
    }
    let cogni =
        std::fs::canonicalize(&cogni).expect("the cogni binary (cargo build --profile dist)");
    let samples: Vec<Sample> = (0..runs).map(|_| one_run(&cogni)).collect();
    let resumes: Vec<Duration> = (0..runs).map(|_| resume_run(&cogni)).collect();
    let report = |name: &str, v: Vec<Duration>| {
        let (med, min) = median(v);
        println!("{name:<40} median {:>10}  min {:>10}", ms(med), ms(min));
    };
    println!("{runs} runs of {}", cogni.display());
    report(
        "launch to prompt",
        samples.iter().map(|s| s.launch).collect(),
    );
    report("launch to prompt, resuming 2,000 items", resumes);
    report(
        "keystroke to echo",
        samples.iter().map(|s| s.echo).collect(),
    );
    report(
        "streamed token to screen",
        samples.iter().map(|s| s.token).collect(),
    );
}
