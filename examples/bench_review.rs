//! Whole-process benchmark of `cogni review` on a 5,000-line diff against
//! the loopback mock (Chat Completions SSE, answered at once, TCP_NODELAY).
//!
//! The repository has a `main` with one small file and a branch that adds
//! 5,000 lines over 10 files (and changes the small one); the review is
//! `cogni review --base main`. For each run it measures the time from
//! spawn to the first request arriving at the mock (git reads the change,
//! the prompt is built, the session opens), the size of that request, and
//! the wall time of the whole review (the model answers at once with the
//! verdict). It prints the request's split: the diff shown to the model,
//! and the rest.
//!
//! With `--codex PATH` (Codex CLI from npm, `@openai/codex`), the same
//! review by `codex review --base main`, pointed at the mock as a custom
//! provider on the Responses API: the time from spawn to its first model
//! request and that request's size (it is stopped then).
//!
//! cargo build --profile dist && cargo run --profile dist --example bench_review -- [--runs N] [--cogni PATH] [--codex PATH]

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
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Lines the branch adds.
const LINES: usize = 5000;
const FILES: usize = 10;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .stdout(Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

/// The repository: `main`, and the checked-out branch adding the lines.
fn repository(work: &Path) {
    std::fs::create_dir_all(work.join("src")).expect("src");
    std::fs::write(work.join("src/lib.rs"), "pub mod gen;\n").expect("lib.rs");
    git(work, &["init", "-q", "-b", "main"]);
    git(work, &["add", "."]);
    git(work, &["commit", "-qm", "base"]);
    git(work, &["checkout", "-q", "-b", "topic"]);
    for f in 0..FILES {
        let text: String = (0..LINES / FILES)
            .map(|i| format!("pub fn f{f}_{i}(x: u64) -> u64 {{ x.wrapping_mul({i}) + {f} }}\n"))
            .collect();
        std::fs::write(work.join(format!("src/gen{f}.rs")), text).expect("gen");
    }
    git(work, &["add", "."]);
    git(work, &["commit", "-qm", "generated"]);
}

struct Run {
    wall: Duration,
    first_request: Duration,
    first_request_bytes: usize,
    prompt_bytes: usize,
}

fn one_run(cogni: &Path, work: &Path, home: &Path) -> Run {
    let server = MockServer::start();
    server.enqueue(chat::text_response(
        r#"{"verdict": "correct", "explanation": "Generated code, nothing wrong."}"#,
    ));
    let start = Instant::now();
    let status = Command::new(cogni)
        .args([
            "review",
            "--base",
            "main",
            "--provider",
            "openai",
            "--model",
            "gpt-4.1",
            "--no-persist",
            "--format",
            "json",
        ])
        .arg("-C")
        .arg(work)
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "bench-key")
        .env("COGNI_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn cogni");
    let wall = start.elapsed();
    assert!(status.success(), "cogni review failed: {status}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let prompt = requests[0]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .map(str::len)
        .max()
        .unwrap_or(0);
    Run {
        wall,
        first_request: requests[0].received_at.duration_since(start),
        first_request_bytes: requests[0].body.len(),
        prompt_bytes: prompt,
    }
}

/// `codex review --base main` against a fresh mock: the time to its first
/// model request and the request's size (Codex is stopped then, with
/// everything it started).
fn codex_run(codex: &Path, work: &Path, home: &Path) -> (Duration, usize) {
    use std::os::unix::process::CommandExt as _;
    let server = MockServer::start();
    for _ in 0..4 {
        server.enqueue(wire_responses::text_response(
            r#"{"findings": [], "overall_correctness": "patch is correct", "overall_explanation": "ok", "overall_confidence_score": 0.9}"#,
        ));
    }
    std::fs::create_dir_all(home).expect("codex home");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"gpt-4.1\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            server.base_url()
        ),
    )
    .expect("codex config");
    let start = Instant::now();
    let mut child = Command::new(codex)
        .args(["review", "--base", "main"])
        .current_dir(work)
        .env("CODEX_HOME", home)
        .env("HOME", home)
        .env("MOCK_API_KEY", "bench-key")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn codex");
    let first = loop {
        let inference = server
            .requests()
            .into_iter()
            .find(|r| r.path.ends_with("/responses") || r.path.ends_with("/chat/completions"));
        if let Some(request) = inference {
            break request;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("codex exited ({status}) before a model request");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "codex sent no request in 60 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    // SAFETY: kill(2) on the process group codex leads.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let _ = child.wait();
    (first.received_at.duration_since(start), first.body.len())
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut runs = 10;
    let mut cogni = PathBuf::from("target/dist/cogni");
    let mut codex: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--cogni" => cogni = PathBuf::from(args.next().expect("--cogni PATH")),
            "--codex" => codex = Some(PathBuf::from(args.next().expect("--codex PATH"))),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        cogni.exists(),
        "{} not found: run `cargo build --profile dist`",
        cogni.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().join("work");
    let home = dir.path().join("home");
    repository(&work);
    // One warm-up run (page cache), then the measured ones.
    one_run(&cogni, &work, &home);
    let results: Vec<Run> = (0..runs).map(|_| one_run(&cogni, &work, &home)).collect();
    let first: Vec<Duration> = results.iter().map(|r| r.first_request).collect();
    let wall: Vec<Duration> = results.iter().map(|r| r.wall).collect();
    println!("runs: {runs} (medians; min in parentheses), a {LINES}-line diff over {FILES} files");
    println!(
        "start -> first request: {} ({})",
        ms(median(first.clone())),
        ms(*first.iter().min().expect("runs"))
    );
    println!(
        "whole review, wall:     {} ({})",
        ms(median(wall.clone())),
        ms(*wall.iter().min().expect("runs"))
    );
    let r = &results[0];
    println!(
        "first request body:     {} bytes, of which the review's message {} bytes",
        r.first_request_bytes, r.prompt_bytes
    );
    if let Some(codex) = codex {
        let codex_home = dir.path().join("codex-home");
        codex_run(&codex, &work, &codex_home);
        let runs: Vec<(Duration, usize)> = (0..runs)
            .map(|_| codex_run(&codex, &work, &codex_home))
            .collect();
        let first: Vec<Duration> = runs.iter().map(|r| r.0).collect();
        println!(
            "codex review, start -> first request: {} ({}); its body {} bytes",
            ms(median(first.clone())),
            ms(*first.iter().min().expect("runs")),
            runs[0].1
        );
    }
}
