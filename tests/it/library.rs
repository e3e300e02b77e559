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

#[test]
fn the_custom_strategy_example_leaves_old_items_out_of_its_requests() {
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "read_file",
        r#"{"path":"notes.txt"}"#,
    )]));
    server.enqueue(chat::text_response("It lists three tasks."));
    server.enqueue(chat::text_response("Tests come first."));
    server.enqueue(chat::text_response("The release is last."));
    server.enqueue(chat::text_response("There are three."));
    let stdout = run("custom_strategy", &server);
    assert!(
        stdout.contains("context window: 3 items left out"),
        "{stdout}"
    );
    assert!(
        stdout.contains("context window: 5 items left out"),
        "{stdout}"
    );
    assert!(stdout.contains("answer: There are three."), "{stdout}");
    assert!(
        stdout.contains("strategy newest_items (acts at")
            && stdout.contains("5 earlier items left out of requests"),
        "{stdout}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let lines: Vec<Vec<String>> = requests.iter().map(|r| r.message_lines()).collect();
    let sent = |n: usize| lines[n].join("\n");
    // The first turns fit: everything is sent, the file read with its call.
    assert!(sent(2).contains("user: Read notes.txt."), "{}", sent(2));
    assert!(sent(2).contains("1. tests"), "{}", sent(2));
    assert!(!sent(2).contains("left out"), "{}", sent(2));
    // Then the first prompt, the call and its output are left out
    // together, a note stands for them, and the rest is sent.
    for n in [3, 4] {
        assert!(!sent(n).contains("Read notes.txt."), "{}", sent(n));
        assert!(!sent(n).contains("1. tests"), "{}", sent(n));
        assert!(
            requests[n]
                .messages()
                .iter()
                .all(|m| m["role"] != "tool" && m["tool_calls"].is_null()),
            "{}",
            sent(n)
        );
    }
    assert!(sent(3).contains("[3 earlier items"), "{}", sent(3));
    assert!(
        sent(3).contains("assistant: It lists three tasks."),
        "{}",
        sent(3)
    );
    assert!(sent(4).contains("[5 earlier items"), "{}", sent(4));
    assert!(!sent(4).contains("Which task comes first?"), "{}", sent(4));
    assert!(sent(4).contains("user: How many are there?"), "{}", sent(4));
    // The instructions, the initial context, the note and four items:
    // the first request's messages (its prompt the one item) and four.
    assert_eq!(lines[3].len(), lines[0].len() + 4, "{:#?}", lines[3]);
    assert_eq!(lines[4].len(), lines[0].len() + 4, "{:#?}", lines[4]);
}
