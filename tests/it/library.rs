//! The engine as a library: the examples of cogni-core
//! (crates/core/examples/) are built and run against the loopback mock,
//! as a program that embeds the engine would run. None of them depends on
//! the `cogni` package (the front doors).

use crate::common::mock::{chat, MockServer};
use std::path::PathBuf;
use std::process::Command;

/// Build cogni-core's examples (a no-op when they are up to date) and
/// give the path of one.
fn example(name: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "cogni-core", "--examples"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cogni-core's examples build");
    // target/debug/deps/it-HASH -> target/debug/examples/NAME
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(path.is_file(), "{} exists", path.display());
    path
}

fn run(name: &str, server: &MockServer) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(example(name))
        .arg(server.base_url())
        .arg(dir.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.assert_invariants();
    stdout
}

#[test]
fn the_custom_tool_example_offers_its_tool_and_runs_it() {
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "word_count",
        r#"{"text":"the quick brown fox"}"#,
    )]));
    server.enqueue(chat::text_response("Four words."));
    let stdout = run("custom_tool", &server);
    assert!(stdout.contains("tool output: word_count -> 4"), "{stdout}");
    assert!(stdout.contains("answer: Four words."), "{stdout}");
    // The tool was offered beside the built-in ones, with its schema.
    let first = server.requests()[0].body_json().clone();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"word_count"), "{names:?}");
    assert!(names.contains(&"read_file"), "{names:?}");
}

#[test]
fn the_closure_effect_example_blocks_a_delete_and_its_middleware_sees_the_turn() {
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"rm -rf build"}"#,
    )]));
    server.enqueue(chat::text_response("I was not allowed to delete it."));
    let stdout = run("closure_effect", &server);
    // A blocked call's output is the effect's reason.
    assert!(
        stdout.contains("tool output: shell -> deleting files is not allowed here\n"),
        "{stdout}"
    );
    assert!(stdout.contains("turns counted: 1"), "{stdout}");
    // The model saw the reason as the call's output.
    let second = server.requests()[1].body_json().clone();
    assert!(
        second
            .to_string()
            .contains("deleting files is not allowed here"),
        "{second}"
    );
}

#[test]
fn the_delegating_example_runs_the_reviewer_as_a_child_session() {
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "delegate_to_agent",
        r#"{"agent":"reviewer","task":"Is renaming `run` to `start` safe?"}"#,
    )]));
    server.enqueue(chat::text_response("Correct: nothing else calls it."));
    server.enqueue(chat::text_response("The reviewer says it is safe."));
    let stdout = run("delegating_agent", &server);
    assert!(
        stdout.contains("Correct: nothing else calls it."),
        "the reviewer's answer is the tool's output: {stdout}"
    );
    assert!(
        stdout.contains("answer: The reviewer says it is safe."),
        "{stdout}"
    );
    // The child had its own instructions and only the task, not the
    // parent's conversation.
    let child = server.requests()[1].body_json().to_string();
    assert!(child.contains("You review changes."), "{child}");
    assert!(!child.contains("Ask the reviewer"), "{child}");
    let offered = server.requests()[0].body_json().to_string();
    assert!(offered.contains("delegate_to_agent"), "{offered}");
}
