//! `/review` in the REPL and in `cogni acp`, against the loopback mock
//! as the model: the review runs in a session of its own (read-only
//! tools and `report_finding`, never the front door's own tools), its
//! report is shown, and the front door's conversation is told it.

use crate::acp::{drive_against, mentions, new_session, say};
use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, tool_names, MockServer};
use crate::review::git;
use serde_json::{json, Value};

/// A repository whose uncommitted change breaks `add`.
fn changed() -> Env {
    let env = Env::new();
    let work = env.work();
    std::fs::write(
        work.join("lib.rs"),
        "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    )
    .unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "-qm", "one"]);
    std::fs::write(
        work.join("lib.rs"),
        "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )
    .unwrap();
    env
}

/// The review's two responses (a finding, the verdict), then the front
/// door's answer to the next message.
fn enqueue(server: &MockServer) {
    let finding = json!({
        "path": "lib.rs", "start_line": 2, "end_line": 2, "priority": 1,
        "title": "add subtracts", "body": "It returns a - b.", "confidence": 0.9
    });
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "report_finding",
        &finding.to_string(),
    )]));
    server.enqueue(chat::text_response(
        r#"{"verdict": "needs_changes", "explanation": "add is broken."}"#,
    ));
    server.enqueue(chat::text_response("I will fix add."));
}

/// What the requests show: the review's model (the session's) and
/// read-only tools, and the front door's next request told of the
/// report, with its own tools.
fn check_requests(server: &MockServer, model: &str, review_tools: &[&str]) {
    let requests = server.requests();
    let models: Vec<&Value> = requests.iter().map(|r| &r.body_json()["model"]).collect();
    assert_eq!(models[0], model, "the session's model reviews: {models:?}");
    assert_eq!(
        requests.len(),
        3,
        "two for the review, one for the next message"
    );
    assert_eq!(tool_names(requests[0].body_json()), review_tools);
    let next = requests[2].message_lines();
    assert!(mentions(&next, "The user ran /review"), "{next:#?}");
    assert!(mentions(&next, "add subtracts"), "{next:#?}");
    let tools = tool_names(requests[2].body_json());
    assert!(!tools.contains(&"report_finding"), "{tools:?}");
    assert!(
        tools.contains(&"write_file"),
        "the front door's own tools: {tools:?}"
    );
}

#[test]
fn slash_review_in_the_repl_shows_the_report_and_tells_the_conversation() {
    let env = changed();
    let server = MockServer::start();
    enqueue(&server);
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test-key-for-the-mock")
        .env("COLUMNS", "200")
        .args(["repl", "--model", "gpt-4.1", "--no-sandbox", "--no-color"])
        .write_stdin(
            "/model gpt-4.1-mini\n/review --base nope\n/review --commit\n/review\nfix what the review found\n/exit\n",
        )
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert!(out.status.success(), "{stdout}\n{}", stderr_of(&out));
    assert!(stdout.contains("no merge base of nope"), "{stdout}");
    assert!(stdout.contains("usage: /review [--base BRANCH"), "{stdout}");
    assert!(
        stdout.contains(
            "Review of the uncommitted changes (staged, unstaged and untracked): needs changes"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("P1 add subtracts · line 2"), "{stdout}");
    assert!(stdout.contains("I will fix add."), "{stdout}");
    // --no-sandbox: no command could be confined, so no shell.
    check_requests(
        &server,
        "gpt-4.1-mini",
        &["read_file", "list_dir", "grep", "glob", "report_finding"],
    );
}

#[test]
fn slash_review_in_acp_answers_with_the_report_and_tells_the_conversation() {
    let env = changed();
    let server = MockServer::start();
    enqueue(&server);
    let work = env.work();
    drive_against(&env, &server, async |cx, editor| {
        let id = new_session(&cx, &work).await?.session_id;
        let report = say(&cx, &editor, &id, "/review").await?;
        assert!(
            report.contains("## cogni review: needs changes"),
            "{report}"
        );
        assert!(report.contains("#### P1 add subtracts"), "{report}");
        assert_eq!(say(&cx, &editor, &id, "fix it").await?, "I will fix add.");
        Ok(())
    });
    check_requests(
        &server,
        "gpt-4.1",
        &[
            "read_file",
            "list_dir",
            "grep",
            "glob",
            "shell",
            "report_finding",
        ],
    );
}
