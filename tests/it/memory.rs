//! Memory through the real binary: notes from both files in the system
//! prompt, the most relevant first; the `remember` tool writing a dated
//! note (and asked for under `untrusted`); `/memory`; memory off changes
//! nothing in the request.

use crate::cli::{stderr_of, Env};
use crate::common::mock::chat::{self, system_prompt};
use crate::common::mock::{tool_names, MockServer};

fn setup(env: &Env, enabled: bool) {
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!("[memory]\nenabled = {enabled}\n"),
    )
    .unwrap();
    std::fs::write(
        env.dir.path().join("home/memory.md"),
        "# My notes\n- prefers small commits\n",
    )
    .unwrap();
    std::fs::create_dir_all(env.work().join(".cogni")).unwrap();
    std::fs::write(
        env.work().join(".cogni/memory.md"),
        "- deploys go through the staging cluster\n- the tests run with make check, never plain cargo test\n",
    )
    .unwrap();
}

#[test]
fn notes_feed_the_prompt_most_relevant_first_and_remember_appends_one() {
    let env = Env::new();
    setup(&env, true);
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "remember",
        r#"{"note": "the linter is clippy with -D warnings"}"#,
    )]));
    server.enqueue(chat::text_response("noted"));
    let out = env.run_json_against(&server, &["--approval", "never", "Fix the failing tests"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let requests = server.requests();
    let first = system_prompt(requests[0].body_json());
    let memory = first.split("# Memory\n").nth(1).expect("a memory section");
    assert!(
        memory.starts_with("- the tests run with make check"),
        "the note sharing words with the task comes first: {memory}"
    );
    assert!(
        memory.contains("- prefers small commits (user)"),
        "{memory}"
    );
    assert!(tool_names(requests[0].body_json()).contains(&"remember"));
    // Byte-identical prompt across the session's requests.
    assert_eq!(system_prompt(requests[1].body_json()), first);
    let notes = std::fs::read_to_string(env.work().join(".cogni/memory.md")).unwrap();
    assert!(
        notes
            .lines()
            .last()
            .unwrap()
            .ends_with(": the linter is clippy with -D warnings"),
        "{notes}"
    );
    assert!(
        notes.lines().last().unwrap().starts_with("- 20"),
        "dated: {notes}"
    );
}

#[test]
fn remember_is_asked_under_untrusted_and_a_run_without_a_terminal_says_no() {
    let env = Env::new();
    setup(&env, true);
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "remember",
        r#"{"note": "something"}"#,
    )]));
    server.enqueue(chat::text_response("ok"));
    let out = env.run_json_against(&server, &["--approval", "untrusted", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // The call was asked and answered no at once, not run unasked.
    let statuses: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "approval" && e["tool"] == "remember")
        .map(|e| e["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["asked", "denied"]);
    let notes = std::fs::read_to_string(env.work().join(".cogni/memory.md")).unwrap();
    assert!(!notes.contains("something"), "{notes}");
}

#[test]
fn memory_off_sends_no_section_and_no_tool() {
    let env = Env::new();
    setup(&env, false);
    let server = MockServer::start();
    server.enqueue(chat::text_response("ok"));
    let out = env.run_json_against(&server, &["go"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let body = server.requests()[0].body_json().clone();
    assert!(!system_prompt(&body).contains("# Memory"));
    assert!(!tool_names(&body).contains(&"remember"));
}

#[test]
fn the_memory_command_shows_adds_and_forgets() {
    let env = Env::new();
    setup(&env, true);
    let out = env.repl_with("/memory add build with make release\n/memory forget 1\n/memory\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("forgot: deploys go through the staging cluster"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  1 the tests run with make check"),
        "{stdout}"
    );
    assert!(stdout.contains(": build with make release"), "{stdout}");
    assert!(stdout.contains("  - prefers small commits"), "{stdout}");
}
