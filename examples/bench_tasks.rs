//! Whole-process benchmarks of the task runner at scale (figures in
//! docs/performance.md, "Task runner at scale"):
//!
//! 1. `cogni run --tasks` of N attempts (default 1,000), each three model
//!    turns (two `shell` calls, then an answer) and a check, against the
//!    loopback mock (TCP_NODELAY on its sockets) answering every request
//!    after 200 ms, with `--jobs 32`: wall time against the ideal
//!    (N × 3 × 0.2 s / 32) and cogni's peak RSS (wait4).
//! 2. The same attempts in 4 shards (`--shard K/4`, one after another),
//!    merged with `cogni merge`: the merged results.json must have the
//!    content of the single run (ids, times and the shard lists aside).
//! 3. `cogni merge` of 16 shards: the 1,000-attempt run cut in 16, and 16
//!    shards of 1,000 attempts each (16,000 attempts with transcripts,
//!    written with the library as a run would write them).
//!
//! cargo build --profile dist && cargo run --profile dist --example bench_tasks -- \
//!     [--attempts N] [--jobs J] [--delay-ms D] [--only run|shard|merge] [--cogni PATH]
//!     [--sandbox MODE] [--tools shell|files]
//!
//! BENCH_STDERR=FILE keeps cogni's progress lines, BENCH_DIR=DIR the files.

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

use mock::{chat, MockServer, Pause};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Options {
    attempts: usize,
    jobs: usize,
    delay: Duration,
    only: Option<String>,
    cogni: PathBuf,
    /// The agent's sandbox mode (default: workspace-write).
    sandbox: Option<String>,
    /// The two tool calls: `shell` commands (default), or `files`
    /// (write_file, read_file: no process started).
    tools: String,
}

/// Wall time and peak RSS (KiB) of one cogni process; its exit code.
struct Measured {
    wall: Duration,
    /// User + system time.
    cpu: Duration,
    max_rss_kib: i64,
    code: i32,
}

fn run_cogni(cogni: &Path, args: &[&str], env: &[(&str, &Path)], key: &str) -> Measured {
    let start = Instant::now();
    // Reaped by wait4 below, which also reads the peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(cogni)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .env("MOCK_KEY", key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // BENCH_STDERR=FILE keeps cogni's progress lines (each attempt's time).
        .stderr(match std::env::var_os("BENCH_STDERR") {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("BENCH_STDERR")),
            None => Stdio::null(),
        })
        .spawn()
        .expect("spawn cogni");
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4 failed");
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Measured {
        wall: start.elapsed(),
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
    }
}

/// Tool outputs in a Chat Completions request.
fn tool_messages(request: &mock::RecordedRequest) -> usize {
    request
        .json
        .as_ref()
        .and_then(|j| j["messages"].as_array())
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count())
}

/// The mock: each request answered after `delay`, by how far its
/// conversation is (write hello to out.txt, read it, then "done").
fn mock(delay: Duration, tools: &str) -> MockServer {
    let server = MockServer::start();
    let calls: [(&str, &str); 2] = if tools == "files" {
        [
            ("write_file", r#"{"path":"out.txt","content":"hello\n"}"#),
            ("read_file", r#"{"path":"out.txt"}"#),
        ]
    } else {
        [
            ("shell", r#"{"command":"echo hello > out.txt"}"#),
            ("shell", r#"{"command":"cat out.txt"}"#),
        ]
    };
    // Two calls, then the answer (a request with two tool outputs).
    let answers = calls.into_iter().map(Some).chain([None]);
    for (turn, call) in answers.enumerate() {
        server.answer_matching(
            move |r| tool_messages(r) == turn,
            move || {
                let response = match call {
                    Some((name, arguments)) => {
                        let id = format!("call_{turn}");
                        chat::tool_calls_response(&[(id.as_str(), name, arguments)])
                    }
                    None => chat::text_response("done"),
                };
                response.pause_before_headers(Pause::For(delay))
            },
        );
    }
    server
}

/// A directory with the config, a task file of `n` tasks and their source.
fn setup(dir: &Path, server: &MockServer, n: usize, sandbox: Option<&str>) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[model_providers.mock]\nbase_url = \"{}\"\nenv_key = \"MOCK_KEY\"\n",
            server.base_url()
        ),
    )
    .expect("config");
    let source = dir.join("source");
    std::fs::create_dir_all(&source).expect("source");
    std::fs::write(source.join("README.md"), "a small repository\n").expect("readme");
    let mut file =
        String::from("[[agents]]\nid = \"mock\"\nprovider = \"mock\"\nmodel = \"gpt-4.1\"\n");
    if let Some(mode) = sandbox {
        file.push_str(&format!("sandbox = \"{mode}\"\n"));
    }
    for i in 0..n {
        file.push_str(&format!(
            "\n[[tasks]]\nid = \"task-{i:04}\"\nprompt = \"Write hello to out.txt and show it.\"\n\
             source = \"source\"\nchecks = [{{ file_exists = \"out.txt\" }}]\n"
        ));
    }
    let tasks = dir.join("tasks.toml");
    std::fs::write(&tasks, file).expect("tasks");
    tasks
}

/// results.json without what differs between equal runs: ids, times, the
/// shard lists, where the task file was.
fn content(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let mut v: Value = serde_json::from_str(&text).expect("JSON");
    let top = v.as_object_mut().expect("object");
    for key in ["run_id", "started_at", "finished_at", "shards", "planned"] {
        top.remove(key);
    }
    v["summary"]["totals"]["wall_ms"] = Value::Null;
    v["summary"]["totals"]["agent_ms"] = Value::Null;
    for task in v["tasks"].as_array_mut().expect("tasks") {
        for a in task["attempts"].as_array_mut().expect("attempts") {
            a["wall_ms"] = Value::Null;
            a["agent_ms"] = Value::Null;
            for c in a["checks"].as_array_mut().expect("checks") {
                c["duration_ms"] = Value::Null;
            }
        }
    }
    v
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// `cogni run --tasks` of the task file in `dir` into `out`.
fn run_tasks(o: &Options, dir: &Path, out: &Path, extra: &[&str]) -> Measured {
    let tasks = dir.join("tasks.toml");
    let jobs = o.jobs.to_string();
    let mut args = vec![
        "run",
        "--tasks",
        tasks.to_str().expect("path"),
        "--jobs",
        &jobs,
    ];
    args.extend(["--output-dir", out.to_str().expect("path")]);
    args.extend(extra);
    run_cogni(
        &o.cogni,
        &args,
        &[("COGNI_HOME", &dir.join("home"))],
        "bench-key",
    )
}

fn bench_run(o: &Options, dir: &Path) {
    let server = mock(o.delay, &o.tools);
    setup(dir, &server, o.attempts, o.sandbox.as_deref());
    let out = dir.join("whole");
    let m = run_tasks(o, dir, &out, &[]);
    assert_eq!(m.code, 0, "the run failed (results in {})", out.display());
    assert_eq!(server.request_count(), 3 * o.attempts);
    server.assert_invariants();
    let ideal = o.delay.as_secs_f64() * 3.0 * o.attempts as f64 / o.jobs as f64;
    println!(
        "run: {} attempts x 3 turns ({} tools), {} ms per response, --jobs {}: {} (ideal {:.2} s, ratio {:.3}), peak RSS {:.1} MiB",
        o.attempts,
        o.tools,
        o.delay.as_millis(),
        o.jobs,
        secs(m.wall),
        ideal,
        m.wall.as_secs_f64() / ideal,
        m.max_rss_kib as f64 / 1024.0
    );
}

fn bench_shard(o: &Options, dir: &Path) {
    let whole = dir.join("whole");
    if !whole.join("results.json").exists() {
        bench_run(o, dir);
    }
    let server = mock(o.delay, &o.tools);
    setup(dir, &server, o.attempts, o.sandbox.as_deref());
    let mut shards = Vec::new();
    let mut total = Duration::ZERO;
    for k in 1..=4 {
        let out = dir.join(format!("shard-{k}"));
        let shard = format!("{k}/4");
        let m = run_tasks(o, dir, &out, &["--shard", &shard]);
        assert_eq!(m.code, 0, "shard {shard} failed");
        total += m.wall;
        shards.push(out);
    }
    let merged = dir.join("merged-4");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|p| p.to_str().expect("path")));
    args.extend(["--output-dir", merged.to_str().expect("path")]);
    let m = run_cogni(&o.cogni, &args, &[], "");
    assert_eq!(m.code, 0, "merge failed");
    let same = content(&merged) == content(&whole);
    println!(
        "shard: 4 shards ({} together), merged in {}: results.json content {} the single run's",
        secs(total),
        secs(m.wall),
        if same { "equals" } else { "DIFFERS FROM" }
    );
    assert!(same, "compare {} and {}", merged.display(), whole.display());
}

/// 16 shard directories of a run of `per_shard * 16` (or, with
/// `split`, `attempts` cut 16 ways) synthetic attempts with transcripts.
fn synthetic_shards(dir: &Path, attempts: usize) -> Vec<PathBuf> {
    use cogni::runner::results::*;
    use cogni::runner::shard::partition;
    use cogni::transcript::{Builder, Entry, Json};
    let names: Vec<String> = (0..attempts).map(|i| format!("task-{i:05}")).collect();
    let keys: Vec<(&str, &str, u32)> = names.iter().map(|n| (n.as_str(), "mock", 1)).collect();
    let of = partition(&keys, 16);
    let planned: Vec<PlannedTask> = names
        .iter()
        .map(|n| PlannedTask {
            task: n.clone(),
            agent: "mock".into(),
            attempts: 1,
        })
        .collect();
    let output: String = (0..12).map(|i| format!("output line {i}\n")).collect();
    (1..=16u32)
        .map(|index| {
            let tasks: Vec<TaskResult> = names
                .iter()
                .zip(&of)
                .filter(|(_, s)| **s == index)
                .map(|(name, _)| {
                    let mut a = AttemptResult::new(1);
                    let mut b = Builder::default();
                    b.user("Write hello to out.txt and show it.");
                    for (n, command) in [(1, "echo hello > out.txt"), (2, "cat out.txt")] {
                        b.push(Entry::Step {
                            n,
                            tokens: 15,
                            ms: 200,
                            dur: "200 ms".into(),
                        });
                        b.push(Entry::Tool {
                            id: format!("call_{n}"),
                            name: "shell".into(),
                            args: format!("{{\"command\":\"{command}\"}}"),
                            out: Some(output.clone()),
                            code: Some(0),
                            err: false,
                            dur: "3 ms".into(),
                        });
                    }
                    b.push(Entry::Assistant {
                        text: "done".into(),
                    });
                    a.transcript = Some(Json::of(&b.finish(false)));
                    a.steps = 3;
                    a.model_requests = 3;
                    a.final_answer = "done".into();
                    a.tool_calls.insert("shell".into(), 2);
                    TaskResult {
                        id: name.clone(),
                        agent: "mock".into(),
                        tags: vec![],
                        workspace: "copy".into(),
                        status: Status::Passed,
                        attempts: vec![a],
                    }
                })
                .collect();
            let results = RunResults {
                schema_version: SCHEMA_VERSION,
                run_id: format!("20260101T000000Z-{index:04x}"),
                started_at: "2026-01-01T00:00:00Z".into(),
                finished_at: "2026-01-01T00:10:00Z".into(),
                summary: Summary::of(&tasks, Duration::from_secs(600)),
                shards: vec![ShardInfo {
                    index,
                    total: 16,
                    run_id: format!("20260101T000000Z-{index:04x}"),
                    started_at: "2026-01-01T00:00:00Z".into(),
                    finished_at: "2026-01-01T00:10:00Z".into(),
                    attempts: tasks.len(),
                    wall_ms: 600_000,
                }],
                tasks,
                planned: planned.clone(),
                ..RunResults::default()
            };
            let out = dir.join(format!("shard-{index:02}"));
            cogni::runner::report::write_all(&out, &results).expect("write shard");
            out
        })
        .collect()
}

fn bench_merge(o: &Options, dir: &Path) {
    for (label, attempts) in [
        ("a 1,000-attempt run in 16 shards", 1_000),
        ("16 shards of 1,000 attempts each", 16_000),
    ] {
        let base = dir.join(format!("synthetic-{attempts}"));
        let shards = synthetic_shards(&base, attempts);
        let merged = base.join("merged");
        let mut args = vec!["merge"];
        args.extend(shards.iter().map(|p| p.to_str().expect("path")));
        args.extend(["--output-dir", merged.to_str().expect("path")]);
        // Warm the page cache, then the best of five.
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut rss = 0;
        for _ in 0..6 {
            let m = run_cogni(&o.cogni, &args, &[], "");
            assert_eq!(m.code, 0, "merge failed");
            walls.push(m.wall);
            cpus.push(m.cpu);
            rss = rss.max(m.max_rss_kib);
        }
        walls.remove(0);
        walls.sort();
        cpus.remove(0);
        cpus.sort();
        let size: u64 = [
            "results.json",
            "transcripts.jsonl",
            "report.html",
            "junit.xml",
        ]
        .iter()
        .filter_map(|f| std::fs::metadata(merged.join(f)).ok())
        .map(|m| m.len())
        .sum();
        println!(
            "merge: {label}: best {} median {}, CPU (user + sys) median {} (peak RSS {:.1} MiB, \
             {:.1} MiB written)",
            secs(walls[0]),
            secs(walls[walls.len() / 2]),
            secs(cpus[cpus.len() / 2]),
            rss as f64 / 1024.0,
            size as f64 / (1024.0 * 1024.0)
        );
    }
}

fn main() {
    let mut o = Options {
        attempts: 1_000,
        jobs: 32,
        delay: Duration::from_millis(200),
        only: None,
        cogni: PathBuf::from("target/dist/cogni"),
        sandbox: None,
        tools: "shell".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--attempts" => o.attempts = value().parse().expect("--attempts N"),
            "--jobs" => o.jobs = value().parse().expect("--jobs N"),
            "--delay-ms" => o.delay = Duration::from_millis(value().parse().expect("--delay-ms N")),
            "--only" => o.only = Some(value()),
            "--cogni" => o.cogni = PathBuf::from(value()),
            "--sandbox" => o.sandbox = Some(value()),
            "--tools" => o.tools = value(),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        o.cogni.exists(),
        "{} not found: run `cargo build --profile dist`",
        o.cogni.display()
    );
    // BENCH_DIR=DIR keeps the runs' files there (it must be empty).
    let temp = tempfile::tempdir().expect("temp dir");
    let kept = std::env::var_os("BENCH_DIR").map(PathBuf::from);
    let dir = kept.as_deref().unwrap_or(temp.path());
    let only = o.only.clone();
    let wants = |what: &str| only.as_deref().is_none_or(|o| o == what);
    if wants("run") {
        bench_run(&o, dir);
    }
    if wants("shard") {
        bench_shard(&o, dir);
    }
    if wants("merge") {
        bench_merge(&o, dir);
    }
}
