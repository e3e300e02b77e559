//! Files someone else names (the model, a repository, a task file) through
//! the real binary: a FIFO is refused instead of waited on, `/dev/zero` is
//! refused instead of read forever, an oversized file is refused, each
//! with an error (or a warning, where a bad file was always skipped) that
//! names the file. Every run goes through `timeout -k 5 30`, so a
//! regression fails here instead of hanging the suite (SIGTERM alone does
//! not end a process blocked in `open`).

use crate::cli::Env;
use crate::sandbox::{script_file, tool};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// How long any of these runs may take; far below the 30 s of the
/// `timeout` wrapper.
const PROMPT: Duration = Duration::from_secs(15);

/// `cogni ARGS` in `env`'s workspace under `timeout -k 5 30`; fails when
/// it was not done within [`PROMPT`].
fn bounded(env: &Env, args: &[&str]) -> Output {
    let started = Instant::now();
    let out = std::process::Command::new("timeout")
        .args(["-k", "5", "30"])
        .arg(assert_cmd::cargo::cargo_bin("cogni"))
        .args(args)
        .current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        took < PROMPT && !matches!(out.status.code(), Some(124 | 137) | None),
        "cogni {args:?} did not end promptly ({took:?}, {:?}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `cogni run --json` of one response's `calls` (then a final answer),
/// unconfined (these tools need no sandbox): the tool outputs, and stderr.
fn run_calls(env: &Env, calls: &[Value], extra: &[&str]) -> (Vec<String>, String) {
    let script = script_file(env, &[calls.to_vec()]);
    let mut args = vec![
        "run",
        "--json",
        "--sandbox",
        "danger-full-access",
        "--script",
        script.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("look at the files");
    let out = bounded(env, &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let outputs = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .map(|e| e["item"]["output"].as_str().unwrap_or("").to_string())
        .collect();
    (outputs, stderr)
}

#[test]
fn a_fifo_the_model_names_is_refused_and_the_run_ends() {
    let env = Env::new();
    let work = env.work();
    mkfifo(&work.join("pipe"));
    std::fs::write(work.join("notes.txt"), "needle\n").unwrap();
    let (outputs, stderr) = run_calls(
        &env,
        &[
            tool("read_file", json!({ "path": "pipe" })),
            tool("grep", json!({ "pattern": "needle" })),
            tool("read_file", json!({ "path": "/dev/zero" })),
        ],
        &["--context", "pipe"],
    );
    assert_eq!(outputs.len(), 3, "{stderr}");
    assert!(
        outputs[0].contains("cannot read `pipe`: it is a FIFO (named pipe), not a regular file"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].contains("notes.txt:1:needle"), "{}", outputs[1]);
    assert!(
        outputs[2].contains("it is a character device, not a regular file"),
        "{}",
        outputs[2]
    );
}

#[test]
fn a_walk_reads_no_ignore_file_that_never_ends() {
    let env = Env::new();
    let work = env.work();
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::write(work.join("sub/a.txt"), "needle\n").unwrap();
    std::fs::write(work.join("b.txt"), "needle\n").unwrap();
    std::os::unix::fs::symlink("/dev/zero", work.join("sub/.gitignore")).unwrap();
    mkfifo(&work.join(".ignore"));
    let (outputs, stderr) = run_calls(
        &env,
        &[
            tool("grep", json!({ "pattern": "needle" })),
            tool("list_dir", json!({})),
            tool("glob", json!({ "pattern": "*.txt" })),
        ],
        &[],
    );
    assert_eq!(outputs.len(), 3, "{stderr}");
    assert!(outputs[0].contains("b.txt:1:needle"), "{}", outputs[0]);
    assert!(outputs[1].contains("b.txt"), "{}", outputs[1]);
    assert!(outputs[2].contains("b.txt"), "{}", outputs[2]);
}

#[test]
fn a_task_file_naming_dev_zero_or_a_huge_prompt_fails_validation_at_once() {
    let env = Env::new();
    let huge = env.dir.path().join("huge.md");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(17 * 1024 * 1024)
        .unwrap();
    let fifo = env.dir.path().join("fifo.md");
    mkfifo(&fifo);
    for (prompt_file, needle) in [
        (
            "/dev/zero",
            "/dev/zero is a character device, not a regular file",
        ),
        (
            huge.to_str().unwrap(),
            "huge.md is larger than the limit of 16777216 bytes",
        ),
        (fifo.to_str().unwrap(), "fifo.md is a FIFO (named pipe)"),
    ] {
        let tasks = env.write(
            "tasks.toml",
            &format!(
                "[[agents]]\nid = \"a\"\nprovider = \"scripted\"\n\n[[tasks]]\nid = \"one\"\nprompt_file = \"{prompt_file}\"\n"
            ),
        );
        let out = bounded(&env, &["validate", tasks.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("tasks[0].prompt_file"), "{stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}

#[test]
fn agents_md_that_is_not_a_regular_file_is_skipped_with_a_warning() {
    let env = Env::new();
    let agents = env.work().join("AGENTS.md");
    for make in [
        (|p: &Path| std::os::unix::fs::symlink("/dev/zero", p).unwrap()) as fn(&Path),
        mkfifo,
    ] {
        let _ = std::fs::remove_file(&agents);
        make(&agents);
        let (_, stderr) = run_calls(&env, &[], &[]);
        assert!(
            stderr.contains("AGENTS.md is a")
                && stderr.contains("not a regular file; it is left out of the instructions"),
            "{stderr}"
        );
    }
}

#[test]
fn schema_files_that_are_devices_are_config_errors() {
    let env = Env::new();
    let script = script_file(&env, &[]);
    let config = env.write(
        "guard.toml",
        "[run.output_guardrail]\nschema_file = \"/dev/zero\"\n",
    );
    let script = script.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["--config", config.to_str().unwrap()],
            "run.output_guardrail.schema_file: /dev/zero is a character device",
        ),
        (
            vec!["--output-schema", "/dev/zero"],
            "--output-schema: /dev/zero is a character device",
        ),
    ] {
        let mut all = vec!["run", "--script", script];
        all.extend(args);
        all.push("hi");
        let out = bounded(&env, &all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}
