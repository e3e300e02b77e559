//! Record and replay through the binary: `cogni run --record FILE`
//! against the loopback mock (standing in for a real model), then `cogni
//! run --script FILE` offline with the tools run for real; a workspace
//! that behaves differently stops the replay at the step that diverged;
//! recordings are redacted; a task's `record` records with a live agent
//! and replays with a scripted one.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, MockResponse, MockServer};
use crate::runner::{assert_code, stderr, Tasks};
use std::path::Path;

const KEY: &str = "sk-live-abcdefghijklmnop123456";

/// An Env whose user config points the `mock` provider at `server`.
fn mock_env(server: &MockServer) -> Env {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "[model_providers.mock]\nbase_url = \"{}\"\nenv_key = \"MOCK_KEY\"\nretry_base_ms = 10\n",
            server.base_url()
        ),
    )
    .unwrap();
    env
}

/// The model's side of a session: write a file, read notes.txt, answer
/// (and mention the API key, which the recording must not keep).
fn serve_session(server: &MockServer) {
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"printf hello > out.txt && cat out.txt"}"#,
    )]));
    server.enqueue(chat::tool_calls_response(&[(
        "call_2",
        "shell",
        r#"{"command":"cat notes.txt"}"#,
    )]));
    server.enqueue(MockResponse::sse([
        chat::role(),
        chat::text(&format!("Done: out.txt says hello (key {KEY}).")),
        chat::finish("stop"),
        chat::usage(300, 12, 100),
        chat::done(),
    ]));
}

/// Record the session into `rec.toml` beside the workspace.
fn record(extra: &[&str]) -> (Env, std::path::PathBuf) {
    let server = MockServer::start();
    serve_session(&server);
    let env = mock_env(&server);
    std::fs::write(env.work().join("notes.txt"), "v1\n").unwrap();
    let rec = env.dir.path().join("rec.toml");
    let out = env
        .cmd()
        .env("MOCK_KEY", KEY)
        .args([
            "run",
            "--provider",
            "mock",
            "--model",
            "gpt-4.1",
            "--record",
        ])
        .arg(&rec)
        .args(extra)
        .arg("write hello and read the notes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains(&format!("cogni: recorded 3 responses to {}", rec.display())),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(server.request_count(), 3);
    server.assert_invariants();
    (env, rec)
}

/// `cogni run --script rec` in a fresh workspace (no provider configured)
/// with notes.txt saying `notes`.
fn replay(rec: &Path, notes: &str) -> (Env, std::process::Output) {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), notes).unwrap();
    let out = env
        .cmd()
        .arg("run")
        .arg("--script")
        .arg(rec)
        .arg("write hello and read the notes")
        .output()
        .unwrap();
    (env, out)
}

#[test]
fn a_recorded_session_replays_offline_with_the_tools_run_for_real() {
    let (_env, rec) = record(&[]);
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(
        !text.contains(KEY),
        "the key leaked into the recording:\n{text}"
    );
    assert!(text.contains("[REDACTED]"), "{text}");
    let script: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(script["model"].as_str(), Some("gpt-4.1"));
    let turns = script["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    let call = &turns[0]["tool_calls"][0];
    assert_eq!(call["id"].as_str(), Some("call_1"));
    assert_eq!(
        call["arguments"]["command"].as_str(),
        Some("printf hello > out.txt && cat out.txt")
    );
    assert_eq!(call["expect"]["exit_code"].as_integer(), Some(0));
    assert_eq!(call["expect"]["is_error"].as_bool(), Some(false));
    assert!(call["expect"].get("output").is_none(), "{text}");
    assert_eq!(
        turns[2]["usage"]["cached_input_tokens"].as_integer(),
        Some(100)
    );

    let (env, out) = replay(&rec, "v1\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "Done: out.txt says hello (key [REDACTED]).\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "hello"
    );
    // Exit codes only: other notes do not stop the replay.
    let (_env, out) = replay(&rec, "v2\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

#[test]
fn a_replay_whose_workspace_differs_stops_at_the_step_that_diverged() {
    let (_env, rec) = record(&["--record-outputs"]);
    let text = std::fs::read_to_string(&rec).unwrap();
    let script: toml::Value = toml::from_str(&text).unwrap();
    let expect = &script["turns"][0]["tool_calls"][0]["expect"];
    assert_eq!(expect["output"].as_str(), Some("hello\n"), "{text}");

    // Same workspace: the outputs match.
    let (_env, out) = replay(&rec, "v1\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // The notes changed: the second call printed something else.
    let (_env, out) = replay(&rec, "v2\n");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("replay diverged at step 3: call 1 of step 2 (`shell` {\"command\":\"cat notes.txt\"}) printed something else than when it was recorded: line 1 should be \"v1\", but is \"v2\""),
        "{err}"
    );
    assert!(stdout_of(&out).is_empty());

    // out.txt cannot be written (a directory is in the way): the first
    // call's exit code differs.
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "v1\n").unwrap();
    std::fs::create_dir(env.work().join("out.txt")).unwrap();
    let out = env
        .cmd()
        .arg("run")
        .arg("--script")
        .arg(&rec)
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("replay diverged at step 2: call 1 of step 1 (`shell`")
            && err.contains("should have exited with code 0, but exited with code 1"),
        "{err}"
    );

    // A script that runs out names the step it could not answer.
    let short: String = text
        .split("\n[[turns]]")
        .take(3)
        .collect::<Vec<_>>()
        .join("\n[[turns]]");
    let short_path = rec.with_file_name("short.toml");
    std::fs::write(&short_path, short).unwrap();
    let (_env, out) = replay(&short_path, "v1\n");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("script exhausted at step 3: it has 2 responses"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn bad_record_options_are_refused_before_anything_runs() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["run", "--script", "x.toml", "--record-outputs", "task"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("--record-outputs goes with --record FILE"),
        "{}",
        stderr_of(&out)
    );
    let out = env
        .cmd()
        .args(["run", "--record"])
        .arg(env.work())
        .args(["--script", "x.toml", "task"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("a directory; give the script's file name"),
        "{}",
        stderr_of(&out)
    );
    let out = env
        .cmd()
        .args(["run", "--tasks", "t.toml", "--record", "r.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("cannot be used with"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_task_records_with_a_live_agent_and_replays_with_a_scripted_one() {
    let server = MockServer::start();
    serve_session(&server);
    let t = Tasks::new();
    std::fs::write(
        t.env.dir.path().join("home/config.toml"),
        format!(
            "[model_providers.mock]\nbase_url = \"{}\"\nenv_key = \"MOCK_KEY\"\nretry_base_ms = 10\n",
            server.base_url()
        ),
    )
    .unwrap();
    std::fs::write(t.env.work().join("notes.txt"), "v1\n").unwrap();
    t.file(
        r#"
[[agents]]
id = "live"
provider = "mock"
model = "gpt-4.1"

[[agents]]
id = "replay"
provider = "scripted"
model = "gpt-4.1"

[[tasks]]
id = "hello"
agent = "replay"
prompt = "write hello and read the notes"
record = "recordings/hello.toml"
checks = [{ command = "test \"$(cat out.txt)\" = hello" }]
"#,
    );
    let rec = t.env.dir.path().join("recordings/hello.toml");
    // Nothing recorded yet: the replay agent has nothing to play.
    let out = t.run(&[]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("does not exist yet: record it first"),
        "{}",
        stderr(&out)
    );

    let mut cmd = t.env.cmd();
    cmd.env("MOCK_KEY", KEY);
    let out = t.run_in(cmd, &["--agent", "live"]);
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains(&format!(
            "hello@live: recorded 3 responses to {}",
            rec.display()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.request_count(), 3);
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(!text.contains(KEY), "{text}");

    // Offline: the scripted agent replays it, the check runs for real.
    let out = t.run(&[]);
    assert_code(&out, 0);
    let results = t.results();
    let a = &results["tasks"][0]["attempts"][0];
    assert_eq!(a["status"], "passed", "{a:#}");
    assert_eq!(a["tool_calls"]["shell"], 2);
    // The recorded model prices the replay like the live run.
    assert_eq!(
        results["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == "replay")
            .unwrap()["model"],
        "gpt-4.1"
    );
    assert_eq!(server.request_count(), 3);

    // A recording holds one session.
    let mut cmd = t.env.cmd();
    cmd.env("MOCK_KEY", KEY);
    let out = t.run_in(cmd, &["--agent", "live", "--repeat", "2"]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("would be written by 2 attempts (hello@live #1, hello@live #2)"),
        "{}",
        stderr(&out)
    );
}
