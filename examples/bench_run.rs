//! Whole-process benchmark of `cogni run` against a loopback mock that
//! answers instantly (Chat Completions SSE with usage).
//!
//! The task has three model turns: run `echo hello > out.txt`, run
//! `cat out.txt`, answer "done". For each run it measures wall time and
//! peak RSS of the cogni process (wait4), the time from spawn to the first
//! request, the gaps between the end of a response and the next request
//! (running the command included; the same commands spawned bare are timed
//! in the same run for reference), the time from the end of the last
//! response to the process's end, and the size of the first request.
//! It also times `cogni --version`.
//!
//! cargo build --profile dist && cargo run --profile dist --example bench_run -- [--runs N] [--cogni PATH]

#[path = "../tests/it/common/images.rs"]
#[allow(dead_code)]
mod images;
#[path = "../tests/it/common/mock.rs"]
#[allow(dead_code)]
mod mock;
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

use mock::{chat, MockServer};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Run {
    wall: Duration,
    max_rss_kib: i64,
    first_request: Duration,
    gaps: Vec<Duration>,
    /// From the last byte of the last response to the process's end
    /// (wait4 returning).
    to_exit: Duration,
    first_request_bytes: usize,
}

fn wait_with_rusage(child: &std::process::Child) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4 failed");
    (status, usage.ru_maxrss)
}

fn one_run(cogni: &PathBuf, extra: &[String]) -> Run {
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"echo hello > out.txt"}"#,
    )]));
    server.enqueue(chat::tool_calls_response(&[(
        "call_2",
        "shell",
        r#"{"command":"cat out.txt"}"#,
    )]));
    server.enqueue(chat::text_response("done"));
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).expect("workspace");

    let start = Instant::now();
    // Reaped by wait4 in `wait_with_rusage`, which also reads peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(cogni)
        .args(["run", "--provider", "openai", "--model", "gpt-4.1"])
        .args(extra)
        .arg("-C")
        .arg(&work)
        .arg("Write hello to out.txt, show it, then answer done.")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench-key")
        .env("COGNI_HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cogni");
    let (status, max_rss_kib) = wait_with_rusage(&child);
    let ended = Instant::now();
    let wall = ended.duration_since(start);
    assert_eq!(status, 0, "cogni failed (wait status {status})");
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).expect("out.txt"),
        "hello\n"
    );
    server.assert_invariants();
    let requests = server.requests();
    let finished = server.response_finish_times();
    assert_eq!(requests.len(), 3);
    let gaps = (1..requests.len())
        .map(|i| requests[i].received_at.duration_since(finished[i - 1]))
        .collect();
    Run {
        wall,
        max_rss_kib,
        first_request: requests[0].received_at.duration_since(start),
        gaps,
        to_exit: ended.duration_since(finished[finished.len() - 1]),
        first_request_bytes: requests[0].body.len(),
    }
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut runs = 20;
    let mut extra = Vec::new();
    let mut cogni = PathBuf::from("target/dist/cogni");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--cogni" => cogni = PathBuf::from(args.next().expect("--cogni PATH")),
            // The rest goes to `cogni run`, e.g. `-- --no-sandbox`.
            "--" => extra.extend(args.by_ref()),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        cogni.exists(),
        "{} not found: run `cargo build --profile dist`",
        cogni.display()
    );

    let version: Vec<Duration> = (0..runs.max(20))
        .map(|_| {
            let start = Instant::now();
            let status = Command::new(&cogni)
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .expect("cogni --version");
            assert!(status.success());
            start.elapsed()
        })
        .collect();

    // One warm-up run (page cache), then the measured ones.
    one_run(&cogni, &extra);
    let results: Vec<Run> = (0..runs).map(|_| one_run(&cogni, &extra)).collect();

    println!("runs: {runs} (medians; min in parentheses)");
    println!(
        "cogni --version:          {} ({})",
        ms(median(version.clone())),
        ms(*version.iter().min().expect("runs"))
    );
    let walls: Vec<Duration> = results.iter().map(|r| r.wall).collect();
    println!(
        "3-turn task, wall:        {} ({})",
        ms(median(walls.clone())),
        ms(*walls.iter().min().expect("runs"))
    );
    let rss: Vec<i64> = results.iter().map(|r| r.max_rss_kib).collect();
    println!(
        "3-turn task, peak RSS:    {:.1} MiB ({:.1})",
        median(rss.clone()) as f64 / 1024.0,
        *rss.iter().min().expect("runs") as f64 / 1024.0
    );
    let first: Vec<Duration> = results.iter().map(|r| r.first_request).collect();
    println!(
        "start -> first request:   {} ({})",
        ms(median(first.clone())),
        ms(*first.iter().min().expect("runs"))
    );
    let gaps: Vec<Duration> = results.iter().flat_map(|r| r.gaps.clone()).collect();
    println!(
        "response -> next request: {} ({}) (command included)",
        ms(median(gaps.clone())),
        ms(*gaps.iter().min().expect("runs"))
    );
    let to_exit: Vec<Duration> = results.iter().map(|r| r.to_exit).collect();
    println!(
        "last response -> exit:    {} ({})",
        ms(median(to_exit.clone())),
        ms(*to_exit.iter().min().expect("runs"))
    );
    // The same commands spawned bare, measured in the same run: what the
    // gap costs beyond the command itself is cogni's own work.
    let dir = tempfile::tempdir().expect("temp dir");
    let bare: Vec<Duration> = (0..runs)
        .flat_map(|_| ["echo hello > out.txt", "cat out.txt"])
        .map(|command| {
            let start = Instant::now();
            let status = Command::new("/bin/bash")
                .args(["-c", command])
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .status()
                .expect("bash");
            assert!(status.success());
            start.elapsed()
        })
        .collect();
    println!(
        "  bare `bash -c` of the same commands: {} ({})",
        ms(median(bare.clone())),
        ms(*bare.iter().min().expect("runs"))
    );
    println!(
        "first request body:       {} bytes",
        results[0].first_request_bytes
    );
    let to_tool: Vec<Duration> = (0..runs).map(|_| response_to_tool_start()).collect();
    println!(
        "in process, response's last byte -> tool starts: {} ({})",
        us(median(to_tool.clone())),
        us(*to_tool.iter().min().expect("runs"))
    );
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// The engine in this process against the mock: from the last byte of a
/// response asking for a tool to the moment that tool starts.
fn response_to_tool_start() -> Duration {
    use cogni::agent::{start_session, SessionConfig};
    use cogni::protocol::{AgentEvent, Item};
    use cogni::provider::{ProviderInfo, WireApi};
    use std::sync::{Arc, Mutex};

    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "read_file",
        r#"{"path":"a.txt"}"#,
    )]));
    server.enqueue(chat::text_response("done"));
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), "a").expect("file");
    let mut info = ProviderInfo::new("mock", &server.base_url(), WireApi::Chat);
    info.default_model = Some("gpt-4.1".into());
    let mut session =
        start_session(SessionConfig::new(info, dir.path().to_path_buf())).expect("session");
    let started: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = started.clone();
    let sink = move |event: AgentEvent| {
        if let AgentEvent::ItemStarted {
            item: Item::ToolCall { .. },
        } = event
        {
            seen.lock().expect("lock").get_or_insert_with(Instant::now);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(session.run_turn("read a.txt", &sink))
        .expect("turn");
    let tool_started = started.lock().expect("lock").expect("a tool started");
    tool_started.duration_since(server.response_finish_times()[0])
}
