//! What the REPL shows of the agent's work, on a pseudo-terminal: the
//! diff each edit made, a command's last lines, approval questions that
//! read as the change or the script, the line still streaming.

use crate::cli::Env;
use crate::common::mock::{chat, Gate, MockResponse, MockServer};
use crate::repl::{repl, WAIT};

/// Whether a line of `screen`, without its indentation, is `line`.
fn has_line(screen: &str, line: &str) -> bool {
    screen.lines().any(|l| l.trim() == line)
}

#[test]
fn edits_show_their_diff_and_long_ones_fold_until_expand() {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let patch =
        "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+2\n three\n*** End Patch\n";
    let big: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "apply_patch",
        &serde_json::json!({ "input": patch }).to_string(),
    )]));
    server.enqueue(chat::tool_calls_response(&[(
        "call_2",
        "write_file",
        &serde_json::json!({ "path": "big.txt", "content": big }).to_string(),
    )]));
    server.enqueue(chat::text_response("Both written."));
    let mut pty = repl(&env, &server, &["--mode", "auto"]);
    pty.expect("auto › ", WAIT);
    pty.send("change the notes\r");
    pty.expect("Both written.", WAIT);
    pty.expect("› ", WAIT);
    let raw = pty.raw();
    assert!(raw.contains("\x1b[31m-two\x1b[0m"), "{raw:?}");
    assert!(raw.contains("\x1b[32m+2\x1b[0m"), "{raw:?}");
    assert!(raw.contains("\x1b[2m@@ -1,3 +1,3 @@\x1b[0m"), "{raw:?}");
    let screen = pty.screen();
    // 103 lines: two headers, a hunk header, 100 added; 40 are shown.
    assert!(screen.contains("… 63 more lines (/expand 1)"), "{screen}");
    assert!(has_line(&screen, "+line 36"), "{screen}");
    assert!(!has_line(&screen, "+line 37"), "{screen}");
    pty.send("/expand\r");
    pty.expect("+line 99", WAIT);
    pty.expect("› ", WAIT);
    assert!(has_line(&pty.screen(), "+line 37"));
    pty.send("/expand 7\r");
    pty.expect("nothing folded is numbered 7", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(env.work().join("notes.txt")).unwrap(),
        "one\n2\nthree\n"
    );
}

#[test]
fn commands_show_their_exit_and_last_lines() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"seq 1 12"}"#,
    )]));
    server.enqueue(chat::text_response("Counted."));
    let mut pty = repl(&env, &server, &["--mode", "auto"]);
    pty.expect("auto › ", WAIT);
    pty.send("count to twelve\r");
    pty.expect("exit 0 ·", WAIT);
    pty.expect("… 7 lines above (/expand 1)", WAIT);
    pty.expect("8\n", WAIT);
    pty.expect("12\n", WAIT);
    pty.expect("Counted.", WAIT);
    pty.expect("› ", WAIT);
    assert!(pty.raw().contains("\x1b[2m12\x1b[0m"), "dimmed");
    assert!(!has_line(&pty.screen(), "7"), "{}", pty.screen());
    pty.send("/expand 1\r");
    pty.expect("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn approval_questions_show_the_script_and_the_diff() {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let patch =
        "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+2\n three\n*** End Patch\n";
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"touch a.txt\ntouch b.txt"}"#,
    )]));
    server.enqueue(chat::tool_calls_response(&[(
        "call_2",
        "apply_patch",
        &serde_json::json!({ "input": patch }).to_string(),
    )]));
    server.enqueue(chat::text_response("Patched instead."));
    let mut pty = repl(&env, &server, &["--mode", "act", "--approval", "untrusted"]);
    pty.expect("act › ", WAIT);
    pty.send("touch two files\r");
    // The script with its real newlines, not JSON with escaped ones.
    pty.expect("? Allow shell:\n    touch a.txt\n    touch b.txt\n", WAIT);
    pty.expect("tell the model why >", WAIT);
    pty.send("n");
    pty.expect("? Allow apply_patch: notes.txt", WAIT);
    pty.expect("-two\n    +2\n", WAIT);
    pty.expect("tell the model why >", WAIT);
    let raw = pty.raw();
    assert!(raw.contains("\x1b[31m-two\x1b[0m"), "{raw:?}");
    assert!(raw.contains("\x1b[32m+2\x1b[0m"), "{raw:?}");
    pty.send("y");
    pty.expect("Patched instead.", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    assert!(!env.work().join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.work().join("notes.txt")).unwrap(),
        "one\n2\nthree\n"
    );
}

#[test]
fn a_long_line_shows_while_it_streams() {
    let env = Env::new();
    let server = MockServer::start();
    let gate = Gate::new();
    server.enqueue(
        MockResponse::sse([
            chat::role(),
            chat::text("A long paragraph begins here, and it keeps"),
        ])
        .wait_for(&gate)
        .chunks([
            chat::text(" going until the model is done with it.\nNext line.\n"),
            chat::finish("stop"),
            chat::usage(10, 5, 0),
            chat::done(),
        ]),
    );
    let mut pty = repl(&env, &server, &[]);
    pty.expect("› ", WAIT);
    pty.send("tell me\r");
    // The start of the line is on screen before its end was even sent.
    pty.expect("A long paragraph begins here, and it keeps", WAIT);
    gate.release();
    pty.expect("Next line.", WAIT);
    pty.expect("› ", WAIT);
    let screen = pty.screen();
    assert!(
        screen.contains(
            "A long paragraph begins here, and it keeps going until the model is done with it.\n"
        ),
        "the whole line, once complete: {screen}"
    );
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn the_status_line_shows_model_mode_context_tokens_and_cost_unless_turned_off() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("First."));
    server.enqueue(chat::text_response("Second."));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("act › ", WAIT);
    pty.send("one\r");
    pty.expect("First.", WAIT);
    // Each mock answer counts 10 tokens in and 5 out.
    pty.expect(
        "gpt-4.1 · act mode · context 0% of 1.0M · 15 tokens · $0.0001\nact › ",
        WAIT,
    );
    // A switch shows in it too; a command that changes nothing does not.
    pty.send("/mode plan\r");
    pty.expect("gpt-4.1 · plan mode · context 0% of 1.0M · 15 tokens", WAIT);
    pty.expect("plan › ", WAIT);
    pty.send("/help\r");
    pty.expect("/expand [N]", WAIT);
    pty.expect("plan › ", WAIT);
    assert_eq!(pty.screen().matches("plan mode · context").count(), 1);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));

    std::fs::write(
        env.dir.path().join("home/config.toml"),
        "[repl]\nstatus_line = false\n",
    )
    .unwrap();
    let mut pty = repl(&env, &server, &[]);
    pty.expect("act › ", WAIT);
    pty.send("two\r");
    pty.expect("Second.", WAIT);
    pty.expect("act › ", WAIT);
    assert!(!pty.screen().contains("mode · context"), "{}", pty.screen());
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
}

#[test]
fn init_writes_agents_md_from_the_models_answer_and_keeps_one_that_exists() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::text_response("# Guide\n\nRun `make test`.\n"));
    server.enqueue(chat::text_response("```markdown\n# New guide\n```"));
    let mut pty = repl(&env, &server, &[]);
    pty.expect("act › ", WAIT);
    pty.send("/init\r");
    pty.expect("wrote AGENTS.md (3 lines)", WAIT);
    pty.expect("› ", WAIT);
    let agents = env.work().join("AGENTS.md");
    assert_eq!(
        std::fs::read_to_string(&agents).unwrap(),
        "# Guide\n\nRun `make test`.\n"
    );
    let asked = server.requests()[0].body_text();
    assert!(asked.contains("write an AGENTS.md for it"), "{asked}");
    pty.send("/init\r");
    pty.expect("AGENTS.md exists already; /init --force replaces it", WAIT);
    pty.expect("› ", WAIT);
    assert_eq!(server.request_count(), 1, "nothing was asked");
    pty.send("/init --force\r");
    pty.expect("wrote AGENTS.md (1 line)", WAIT);
    pty.expect("› ", WAIT);
    assert_eq!(std::fs::read_to_string(&agents).unwrap(), "# New guide\n");
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0));
    server.assert_invariants();
}
