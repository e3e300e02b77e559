//! `cogni run` as a user runs it: the real binary, exit codes, the
//! stdout/stderr split, JSONL events and -o.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// A temp workspace and COGNI_HOME, and a command with a clean environment.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Env { dir }
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("cogni").unwrap();
        cmd.current_dir(self.work())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("COGNI_HOME", self.dir.path().join("home"))
            .timeout(std::time::Duration::from_secs(60));
        cmd
    }

    /// `turns` (JSON) written as the script file `name` (TOML).
    pub fn script_file(&self, name: &str, turns: serde_json::Value) -> PathBuf {
        let value: toml::Value =
            serde_json::from_value(serde_json::json!({ "turns": turns })).unwrap();
        self.write(name, &toml::to_string(&value).unwrap())
    }

    /// `cogni run --tasks` with `tasks` as the task file; the output and
    /// results.json (null when none was written).
    pub fn run_tasks(&self, tasks: &str) -> (std::process::Output, serde_json::Value) {
        let path = self.write("tasks.toml", tasks);
        let out_dir = self.dir.path().join("out");
        let out = self
            .cmd()
            .args(["run", "--tasks"])
            .arg(path)
            .arg("--output-dir")
            .arg(&out_dir)
            .output()
            .unwrap();
        let results = std::fs::read_to_string(out_dir.join("results.json"))
            .map(|text| serde_json::from_str(&text).unwrap())
            .unwrap_or_default();
        (out, results)
    }

    /// `cogni run --json --model gpt-4.1 ARGS` against the mock `server`
    /// as OpenAI.
    pub fn run_json_against(
        &self,
        server: &crate::common::mock::MockServer,
        args: &[&str],
    ) -> std::process::Output {
        self.cmd()
            .env("OPENAI_BASE_URL", server.base_url())
            .env("OPENAI_API_KEY", "sk-test-key-for-the-mock")
            .args(["run", "--json", "--model", "gpt-4.1"])
            .args(args)
            .output()
            .unwrap()
    }

    /// `cogni repl` with a script that answers "ok", 200 columns wide,
    /// reading `input` (slash commands) from a pipe.
    pub fn repl_with(&self, input: &str) -> std::process::Output {
        let script = self.write("script.toml", "[[turns]]\ntext = \"ok\"\n");
        self.cmd()
            .args(["repl", "--script"])
            .arg(script)
            .env("COLUMNS", "200")
            .write_stdin(input)
            .output()
            .unwrap()
    }

    /// `cogni run --script <script> <task>` in the workspace.
    pub fn run_script(&self, script: &str, task: &str) -> Command {
        let path = self.write("script.toml", script);
        let mut cmd = self.cmd();
        cmd.args(["run", "--script"]).arg(path).arg(task);
        cmd
    }
}

pub fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const HELLO: &str = r#"
[[turns]]
text = "Writing."
[[turns.tool_calls]]
name = "shell"
arguments = { command = "echo hello > out.txt" }
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "cat out.txt" }
[[turns]]
expect = "hello"
text = "Done: out.txt says hello."
"#;

#[test]
fn version_and_help_exit_zero() {
    let env = Env::new();
    let out = env.cmd().arg("--version").output().unwrap();
    assert!(out.status.success());
    // The version, then the target, profile and commit it was built from.
    let version = stdout_of(&out);
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".to_string(), |o| {
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        });
    assert!(
        version.starts_with(&format!(
            "cogni {} ({}-",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::ARCH
        )) && version.contains(", debug profile, commit ")
            && version.trim_end().ends_with(&format!("{commit})")),
        "{version}"
    );
    let out = env.cmd().args(["run", "--help"]).output().unwrap();
    assert!(out.status.success());
    assert!(stdout_of(&out).contains("--output-last-message"));
}

#[test]
fn scripted_task_runs_tools_for_real_and_prints_only_the_answer() {
    let env = Env::new();
    let out = env.run_script(HELLO, "write hello").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "Done: out.txt says hello.\n");
    let err = stderr_of(&out);
    assert!(err.contains("Writing."), "{err}");
    assert!(err.contains("shell"), "{err}");
    assert!(
        !err.contains("\x1b["),
        "no colors when stderr is not a terminal: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn profile_chooses_a_profile_of_config_and_an_unknown_one_is_a_usage_error() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        "[profiles.short]\nmax_iterations = 1\n",
    )
    .unwrap();
    let out = env
        .run_script(HELLO, "write hello")
        .args(["--profile", "short"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("reached the limit of 1 steps"),
        "{}",
        stderr_of(&out)
    );
    let out = env
        .run_script(HELLO, "write hello")
        .args(["--profile", "shrot"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("no profile is named `shrot`; the profiles are: short"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn print_and_exec_are_run_for_other_agents_habits() {
    // `cogni -p TASK` (Claude Code's) and `cogni exec TASK` (Codex's),
    // options before and after.
    for args in [
        vec!["-p", "write hello", "--script", "SCRIPT"],
        vec!["--script", "SCRIPT", "--print", "write hello"],
        vec!["exec", "--script", "SCRIPT", "write hello"],
    ] {
        let env = Env::new();
        let script = env.write("script.toml", HELLO);
        let args: Vec<String> = args
            .iter()
            .map(|a| match *a {
                "SCRIPT" => script.display().to_string(),
                a => a.to_string(),
            })
            .collect();
        let out = env.cmd().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
        assert_eq!(stdout_of(&out), "Done: out.txt says hello.\n", "{args:?}");
    }
    // After a command name, -p is that command's business.
    let env = Env::new();
    let out = env.cmd().args(["sessions", "-p"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
}

#[test]
fn the_fork_servers_mode_started_by_hand_exits_2_saying_it_is_internal() {
    let env = Env::new();
    let out = env.cmd().arg("__fork-server").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_of(&out),
        "cogni: `__fork-server` is internal: the process cogni starts to run hooks\n"
    );
    assert_eq!(stdout_of(&out), "");
}

#[test]
fn a_workspace_in_the_root_directory_is_refused_under_workspace_write() {
    let env = Env::new();
    let script = env.write("script.toml", HELLO);
    let run = |sandbox: &str| {
        env.cmd()
            .args(["run", "-C", "/", "--sandbox", sandbox, "--script"])
            .arg(&script)
            .arg("write hello")
            .output()
            .unwrap()
    };
    let out = run("workspace-write");
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("the working directory is /")
            && err.contains("-C DIR")
            && err.contains("--sandbox read-only"),
        "names the problem and the fix: {err}"
    );
    assert!(
        !Path::new("/out.txt").exists(),
        "nothing ran: {}",
        stdout_of(&out)
    );
    // Read-only is allowed there: nothing can be written anyway.
    let out = run("read-only");
    assert!(
        !stderr_of(&out).contains("the working directory is /"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let env = Env::new();
    let out = env
        .run_script(HELLO, "write hello")
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    let events: Vec<serde_json::Value> = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[0], "session.started");
    assert_eq!(types[1], "turn.started");
    assert_eq!(*types.last().unwrap(), "turn.completed");
    assert_eq!(types.iter().filter(|t| **t == "model.request").count(), 3);
    let tools: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["item"]["status"], "completed");
    assert_eq!(tools[0]["item"]["exit_code"], 0);
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "done");
    assert_eq!(last["final_text"], "Done: out.txt says hello.");
    assert_eq!(last["iterations"], 3);
    assert!(stderr_of(&out).is_empty(), "{}", stderr_of(&out));
}

/// Events without what differs between two runs (ids, timings).
fn comparable(stdout: &str) -> Vec<String> {
    fn strip(v: &mut serde_json::Value, seconds: &regex::Regex) {
        match v {
            serde_json::Value::Object(map) => {
                map.retain(|k, _| k != "session_id" && !k.ends_with("_ms"));
                map.values_mut().for_each(|v| strip(v, seconds));
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| strip(v, seconds)),
            // "exit code 0, 0.1s" in a tool's output.
            serde_json::Value::String(s) => *s = seconds.replace_all(s, "N.Ns").into_owned(),
            _ => {}
        }
    }
    let seconds = regex::Regex::new(r"\b\d+\.\ds\b").unwrap();
    stdout
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            strip(&mut v, &seconds);
            v.to_string()
        })
        .collect()
}

#[test]
fn verbose_logs_go_to_stderr_and_never_change_the_json_on_stdout() {
    let env = Env::new();
    let quiet = env
        .run_script(HELLO, "write hello")
        .arg("--json")
        .output()
        .unwrap();
    std::fs::remove_file(env.work().join("out.txt")).unwrap();
    let verbose = env
        .run_script(HELLO, "write hello")
        .args(["--json", "--verbose"])
        .output()
        .unwrap();
    assert_eq!(verbose.status.code(), Some(0), "{}", stderr_of(&verbose));
    let (loud, quiet) = (
        comparable(&stdout_of(&verbose)),
        comparable(&stdout_of(&quiet)),
    );
    for (loud, quiet) in loud.iter().zip(&quiet) {
        assert_eq!(loud, quiet);
    }
    assert_eq!(loud.len(), quiet.len());
    // The prompt is logged on stderr instead.
    let err = stderr_of(&verbose);
    assert!(err.contains("[verbose] model request #1: {"), "{err}");
    assert!(err.contains("write hello"), "{err}");
}

#[test]
fn on_failure_without_a_terminal_leaves_a_failed_commands_output_alone() {
    let env = Env::new();
    let script = r#"
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "echo 'ls: cannot open directory x: Permission denied' >&2; exit 2" }
[[turns]]
expect = "Permission denied"
text = "seen"
"#;
    let out = env
        .run_script(script, "x")
        .args(["--json", "--approval", "on-failure"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let events: Vec<serde_json::Value> = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        !events.iter().any(|e| e["type"] == "approval"),
        "nobody was asked: {}",
        stdout_of(&out)
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .unwrap();
    let output = done["item"]["output"].as_str().unwrap();
    assert!(output.contains("Permission denied"), "{output}");
    assert!(
        !output.contains("Not run") && !output.contains("approval"),
        "{output}"
    );
    let metrics = events.iter().find(|e| e["type"] == "metrics").unwrap();
    assert_eq!(
        metrics["snapshot"]["session"]["approvals"],
        serde_json::json!({})
    );
}

#[test]
fn output_last_message_and_stdin_task() {
    let env = Env::new();
    let script = env.write("s.toml", "[[turns]]\ntext = \"the answer\"\n");
    let out_file = env.dir.path().join("last.txt");
    let out = env
        .cmd()
        .args(["run", "--script"])
        .arg(&script)
        .arg("-o")
        .arg(&out_file)
        .arg("-")
        .write_stdin("a task from stdin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "the answer");
}

#[test]
fn verbose_logs_go_to_stderr_and_do_not_change_stdout() {
    let env = Env::new();
    let quiet = env.run_script(HELLO, "x").output().unwrap();
    let env2 = Env::new();
    let loud = env2
        .run_script(HELLO, "x")
        .arg("--verbose")
        .output()
        .unwrap();
    assert_eq!(quiet.stdout, loud.stdout);
    let err = stderr_of(&loud);
    for needle in [
        "[verbose] model request #1",
        "[verbose] tool call shell",
        "[verbose] tool output shell",
        "[verbose] metrics",
    ] {
        assert!(err.contains(needle), "{needle} missing: {err}");
    }
}

#[test]
fn iteration_limit_exits_1() {
    let env = Env::new();
    let turn =
        "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = { command = \"true\" }\n";
    let out = env
        .run_script(&turn.repeat(4), "loop")
        .args(["--max-iterations", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("limit of 2 steps"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn empty_responses_exit_1() {
    let env = Env::new();
    let out = env
        .run_script("[[turns]]\n[[turns]]\n", "x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("empty"), "{}", stderr_of(&out));
}

#[test]
fn provider_failure_exits_3() {
    let env = Env::new();
    // The script runs out: the "model" is gone.
    let out = env.run_script("[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = { command = \"true\" }\n", "x").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr_of(&out).contains("script exhausted"),
        "{}",
        stderr_of(&out)
    );
    assert!(out.stdout.is_empty());
}

fn assert_usage_error(out: &std::process::Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr_of(out));
    assert!(
        stderr_of(out).contains(needle),
        "{needle:?} not in {}",
        stderr_of(out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn usage_and_config_errors_exit_2_and_say_what_to_fix() {
    let env = Env::new();
    let run = |args: &[&str]| env.cmd().arg("run").args(args).output().unwrap();
    assert_usage_error(&run(&["  "]), "the task is empty");
    assert_usage_error(
        &run(&["--sandbox", "yolo", "x"]),
        "unknown sandbox mode `yolo`",
    );
    assert_usage_error(
        &run(&["--provider", "nope", "x"]),
        "unknown provider `nope`",
    );
    // No key and no provider set up: the three ways to get going.
    let out = run(&["x"]);
    for needle in ["$OPENAI_API_KEY", "--provider ollama", "--script FILE"] {
        assert_usage_error(&out, needle);
    }
    assert!(
        !stderr_of(&out).contains("invalid config"),
        "{}",
        stderr_of(&out)
    );
    assert_usage_error(
        &run(&["--script", "/nonexistent.toml", "x"]),
        "script: cannot read /nonexistent.toml",
    );
    assert_usage_error(
        &run(&["--output-schema", "/nonexistent.json", "x"]),
        "--output-schema",
    );

    let out = env
        .cmd()
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--model", "mystery", "x"])
        .output()
        .unwrap();
    assert_usage_error(&out, "unknown model `mystery` for provider `openai`");
    assert!(!stderr_of(&out).contains("sk-test"));

    std::fs::write(
        env.work().join("cogni.toml"),
        "model = \"x\"\nsandbox_mode = \n",
    )
    .unwrap();
    assert_usage_error(&run(&["x"]), "cogni.toml:2:");
    std::fs::write(
        env.work().join("cogni.toml"),
        "[tools]\nshel_timeout_ms = 5\n",
    )
    .unwrap();
    assert_usage_error(
        &run(&["x"]),
        "cogni.toml:2:1: unknown key `tools.shel_timeout_ms`; did you mean `tools.shell_timeout_ms`?",
    );
    assert_usage_error(&run(&["x"]), "`cogni config example`");
    std::fs::write(env.work().join("cogni.toml"), "sandbox = \"readonly\"\n").unwrap();
    let out = run(&["x"]);
    assert_usage_error(&out, "cogni.toml:1:11");
    assert!(
        !stderr_of(&out).contains("SandboxLimitsFile"),
        "no Rust type names: {}",
        stderr_of(&out)
    );
    std::fs::remove_file(env.work().join("cogni.toml")).unwrap();

    let out = env
        .cmd()
        .env("COGNI_APPROVAL", "maybe")
        .args(["run", "x"])
        .output()
        .unwrap();
    assert_usage_error(&out, "COGNI_APPROVAL");
}

#[test]
fn config_example_prints_the_annotated_example_built_in() {
    let env = Env::new();
    let out = env.cmd().args(["config", "example"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cogni.toml.example"),
    )
    .unwrap();
    assert_eq!(stdout_of(&out), example);
}

#[test]
fn models_without_a_key_fails_before_any_request_naming_the_variable() {
    let server = crate::common::mock::MockServer::start();
    let env = Env::new();
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", server.base_url())
        .arg("models")
        .output()
        .unwrap();
    assert_usage_error(&out, "$OPENAI_API_KEY");
    assert_eq!(server.request_count(), 0, "no request without a key");
}

#[test]
fn cd_option_sets_the_workspace() {
    let env = Env::new();
    let other = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    let script = env.write("s.toml", HELLO);
    let out = env
        .cmd()
        .args(["run", "-C"])
        .arg(&other)
        .arg("--script")
        .arg(&script)
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(Path::new(&other.join("out.txt")).exists());
    assert!(!env.work().join("out.txt").exists());
}

#[test]
fn diagnostics_go_to_the_log_file_filtered_by_rust_log() {
    let env = Env::new();
    let out = env.run_script(HELLO, "x").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let log = std::fs::read_to_string(env.dir.path().join("home/log/cogni.log")).unwrap();
    assert!(log.contains("turn completed"), "{log}");
    assert!(
        !log.contains("model response"),
        "debug lines are off by default: {log}"
    );

    let env = Env::new();
    let out = env
        .run_script(HELLO, "x")
        .env("RUST_LOG", "cogni=debug")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let log = std::fs::read_to_string(env.dir.path().join("home/log/cogni.log")).unwrap();
    assert!(
        log.contains("model response") && log.contains("tool call finished"),
        "{log}"
    );
    // Logs never reach the terminal streams.
    assert!(!String::from_utf8_lossy(&out.stderr).contains("model response"));
}

/// The log's lines (from `from` bytes on) that carry `message`.
fn log_lines(env: &Env, from: usize, message: &str) -> Vec<String> {
    let log = std::fs::read_to_string(env.dir.path().join("home/log/cogni.log")).unwrap();
    log[from..]
        .lines()
        .filter(|l| l.contains(message))
        .map(String::from)
        .collect()
}

#[test]
fn the_logger_records_each_runs_start_finish_and_error_with_the_agents_name() {
    use crate::common::mock::{chat, MockResponse, MockServer};
    let env = Env::new();
    let agents = env.dir.path().join("home/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "+++\ndescription = \"Reviews\"\n+++\nYou review.\n",
    )
    .unwrap();
    std::fs::write(env.work().join("notes.txt"), "some notes\n").unwrap();
    let server = MockServer::start();
    // Two iterations (a read, then the answer), with usage the log must sum.
    server.enqueue(MockResponse::sse([
        chat::role(),
        chat::tool_call(0, "call_1", "read_file", r#"{"path":"notes.txt"}"#),
        chat::finish("tool_calls"),
        chat::usage(1200, 30, 0),
        chat::done(),
    ]));
    server.enqueue(MockResponse::sse([
        chat::role(),
        chat::text("Read."),
        chat::finish("stop"),
        chat::usage(1300, 41, 0),
        chat::done(),
    ]));
    let out = env.run_json_against(&server, &["--agent", "reviewer", "read the notes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    server.assert_invariants();

    let started = log_lines(&env, 0, "turn started");
    assert_eq!(started.len(), 1, "{started:#?}");
    for field in ["agent=reviewer", "turn=1", "model=gpt-4.1", "session="] {
        assert!(started[0].contains(field), "{field}: {}", started[0]);
    }
    let finished = log_lines(&env, 0, "turn completed");
    assert_eq!(finished.len(), 1, "{finished:#?}");
    for field in [
        "agent=reviewer",
        "turn=1",
        "outcome=Done",
        "iterations=2",
        "input_tokens=2500",
        "output_tokens=71",
    ] {
        assert!(finished[0].contains(field), "{field}: {}", finished[0]);
    }
    assert!(log_lines(&env, 0, "turn failed").is_empty());

    // A provider error: the start, then the error, and no finish.
    let before = std::fs::metadata(env.dir.path().join("home/log/cogni.log"))
        .unwrap()
        .len() as usize;
    server.enqueue(MockResponse::error(400, "the mock refuses this request"));
    let out = env.run_json_against(&server, &["--agent", "reviewer", "try again"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let started = log_lines(&env, before, "turn started");
    assert_eq!(started.len(), 1, "{started:#?}");
    assert!(started[0].contains("agent=reviewer"), "{}", started[0]);
    let failed = log_lines(&env, before, "turn failed");
    assert_eq!(failed.len(), 1, "{failed:#?}");
    for field in [
        "WARN",
        "agent=reviewer",
        "turn=1",
        "the mock refuses this request",
    ] {
        assert!(failed[0].contains(field), "{field}: {}", failed[0]);
    }
    assert!(log_lines(&env, before, "turn completed").is_empty());
}

/// `cogni run --json` with a shell call that sleeps, interrupted by
/// `signal` once the command runs: the exit status, stdout, and the saved
/// session file.
fn interrupt_run(signal: i32, tag: &str) -> (std::process::Output, String) {
    let env = Env::new();
    let pid_file = env.work().join("sleeper.pid");
    // `$$` would be the pid inside the sandbox's PID namespace: the test
    // finds the sleeper by its command line instead (tagged per test, as
    // tests run at once).
    let script = format!(
        "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"echo started > {}; exec sleep 30.{tag}\" }}\n",
        pid_file.display()
    );
    let path = env.write("s.toml", &script);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("cogni"))
        .current_dir(env.work())
        .env("COGNI_HOME", env.dir.path().join("home"))
        .args(["run", "--json", "--script"])
        .arg(&path)
        .arg("x")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let needle = format!("sleep\x0030.{tag}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let sleeper: i32 = loop {
        if let Some(&pid) = std::fs::read_to_string(&pid_file)
            .is_ok()
            .then(|| crate::common::pids_running(&needle))
            .as_ref()
            .and_then(|pids| pids.first())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    // The command's process group was killed with cogni's turn.
    let gone = (0..100).any(|_| {
        // SAFETY: probing a pid with signal 0.
        let alive = unsafe { libc::kill(sleeper, 0) } == 0 && !is_zombie(sleeper);
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        !alive
    });
    assert!(gone, "sleep {sleeper} outlived cogni");
    let sessions: Vec<_> = std::fs::read_dir(env.dir.path().join("home/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let session = std::fs::read_to_string(&sessions[0]).unwrap();
    (out, session)
}

#[test]
fn interrupt_exits_130_and_kills_running_commands() {
    let (out, _) = interrupt_run(libc::SIGINT, "1313");
    assert_eq!(out.status.code(), Some(130), "{}", stderr_of(&out));
}

#[test]
fn sigterm_and_sighup_stop_the_turn_like_ctrl_c_and_the_session_records_it() {
    for (signal, code, name, tag) in [
        (libc::SIGTERM, 143, "SIGTERM", "1515"),
        (libc::SIGHUP, 129, "SIGHUP", "1717"),
    ] {
        let (out, session) = interrupt_run(signal, tag);
        assert_eq!(out.status.code(), Some(code), "{name}: {}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains(&format!("interrupted ({name})")),
            "{}",
            stderr_of(&out)
        );
        // The events end with the turn's outcome, the call with its output.
        let stdout = stdout_of(&out);
        let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "turn.completed", "{stdout}");
        assert_eq!(last["outcome"], "interrupted");
        // The session file has the call, its output and the turn's usage.
        let records: Vec<serde_json::Value> = session
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let output = records
            .iter()
            .find(|r| r["item"]["content"]["type"] == "tool_output")
            .unwrap_or_else(|| panic!("{name}: no call output saved: {session}"));
        assert!(output.to_string().contains("did not finish"), "{output}");
        assert!(records.iter().any(|r| r["type"] == "usage"), "{session}");
    }
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[test]
fn output_schema_is_enforced_on_the_final_answer() {
    let env = Env::new();
    let schema = env.write(
        "schema.json",
        r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#,
    );
    let good = env.write("good.toml", "[[turns]]\ntext = '{\"ok\": true}'\n");
    let out = env
        .cmd()
        .args(["run", "--output-schema"])
        .arg(&schema)
        .arg("--script")
        .arg(&good)
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "{\"ok\": true}\n");

    let bad = env.write("bad.toml", "[[turns]]\ntext = 'yes'\n");
    let out = env
        .cmd()
        .args(["run", "--output-schema"])
        .arg(&schema)
        .arg("--script")
        .arg(&bad)
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("not JSON"), "{}", stderr_of(&out));

    let broken = env.write("broken.json", r#"{"type": 7}"#);
    let out = env
        .cmd()
        .args(["run", "--output-schema"])
        .arg(&broken)
        .arg("--script")
        .arg(&good)
        .arg("x")
        .output()
        .unwrap();
    assert_usage_error(&out, "not a valid JSON Schema");
}

#[test]
fn trust_takes_list_revoke_and_allowlist_as_subcommands_and_as_flags() {
    let env = Env::new();
    let run = |args: &[&str]| env.cmd().arg("trust").args(args).output().unwrap();
    assert_eq!(run(&[]).status.code(), Some(0));
    let work = env.work().canonicalize().unwrap().display().to_string();
    for list in [&["list"][..], &["--list"]] {
        let out = run(list);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        assert_eq!(stdout_of(&out).trim(), work);
    }
    let out = run(&["allowlist"]);
    assert!(
        stdout_of(&out).contains("approval_policy"),
        "{}",
        stdout_of(&out)
    );
    let out = run(&["revoke"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&run(&["list"])).trim(), "");
    // `--revoke DIR` still works, and a bad directory is an error.
    assert_eq!(run(&[]).status.code(), Some(0));
    let out = env
        .cmd()
        .args(["trust", "--revoke"])
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_usage_error(&run(&["revoke", "/nonexistent/dir"]), "/nonexistent/dir");
}

#[test]
fn every_front_door_that_runs_the_agent_takes_the_same_policy_flags() {
    // One definition (cli::PolicyArgs): the same flags with the same help
    // in `run`, the REPL, `acp` and `mcp-server`.
    let help = |sub: &str| {
        let out = Command::cargo_bin("cogni")
            .unwrap()
            .args([sub, "--help"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{sub} --help");
        String::from_utf8(out.stdout).unwrap()
    };
    let policy_lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                l.contains("--sandbox <MODE>")
                    || l.contains("--approval <POLICY>")
                    || l.contains("--no-sandbox")
            })
            // Columns are padded per command: compare the words.
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let run = policy_lines(&help("run"));
    assert_eq!(run.len(), 3, "{run:?}");
    for sub in ["repl", "acp", "mcp-server"] {
        assert_eq!(policy_lines(&help(sub)), run, "{sub}");
    }
}
