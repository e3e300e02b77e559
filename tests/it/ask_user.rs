//! `ask_user` through the real binary, with the scripted provider:
//! `cogni run` answers at once with the model's default and records the
//! question (events, the progress on stderr, results.json); the REPL asks
//! with a menu on a terminal (arrows, numbers, a free answer, Esc) and
//! reads a line from a pipe. `cogni acp` is tested in acp.rs.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::pty::Pty;
use crate::repl::{cogni, WAIT};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A model turn that asks with `args`.
fn asks(args: Value) -> Value {
    json!({ "text": "", "tool_calls": [{ "name": "ask_user", "arguments": args }] })
}

fn database(default: Option<&str>, free: bool) -> Value {
    let mut args = json!({
        "question": "Which database should the cache use?",
        "options": [
            { "label": "SQLite", "description": "one file, nothing to run" },
            { "label": "Postgres", "description": "the server the app already has" },
        ],
        "allow_free_text": free,
    });
    if let Some(default) = default {
        args["default"] = json!(default);
    }
    args
}

fn events_of(out: &std::process::Output) -> Vec<Value> {
    stdout_of(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn outputs(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["name"] == "ask_user")
        .map(|e| e["item"]["output"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn cogni_run_answers_with_the_default_at_once_and_records_the_question() {
    let env = Env::new();
    let script = env.script_file(
        "script.toml",
        json!([
            asks(database(Some("SQLite"), false)),
            asks(database(None, true)),
            asks(json!({ "question": "Too few?", "options": [{ "label": "one" }] })),
            { "text": "done" },
        ]),
    );
    let started = Instant::now();
    let out = env
        .cmd()
        .args(["run", "--json", "--script"])
        .arg(&script)
        .arg("set up the cache")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "nothing waits for an answer"
    );
    let events = events_of(&out);
    let questions: Vec<&Value> = events.iter().filter(|e| e["type"] == "question").collect();
    assert_eq!(
        questions.len(),
        4,
        "asked and answered, twice: {questions:#?}"
    );
    assert_eq!(questions[0]["status"], "asked");
    assert_eq!(
        questions[0]["options"][1],
        json!({ "label": "Postgres", "description": "the server the app already has" })
    );
    assert_eq!(questions[0]["default"], "SQLite");
    assert_eq!(questions[1]["status"], "unattended");
    assert_eq!(questions[1]["answer"], "SQLite");
    assert_eq!(questions[3]["status"], "unattended");
    assert_eq!(questions[3].get("answer"), None);
    assert_eq!(questions[3]["free_text"], true);
    let outputs = outputs(&events);
    assert!(
        outputs[0].ends_with("your default stands: SQLite"),
        "{outputs:?}"
    );
    assert!(
        outputs[1].starts_with("no answer: decide yourself"),
        "{outputs:?}"
    );
    assert!(
        outputs[2].starts_with("nothing was asked: 1 options"),
        "{outputs:?}"
    );
    // The question event comes between the call's start and its end.
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    let started = at(&|e| e["type"] == "item.started" && e["item"]["name"] == "ask_user");
    let asked = at(&|e| e["type"] == "question");
    let completed = at(&|e| e["type"] == "item.completed" && e["item"]["name"] == "ask_user");
    assert!(started < asked && asked < completed);

    // Without --json, the progress on stderr says what was asked and answered.
    let out = env
        .cmd()
        .args(["run", "--script"])
        .arg(&script)
        .arg("set up the cache")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains(
            "? Which database should the cache use? → SQLite (the default: no one to ask)"
        ),
        "{err}"
    );
    assert!(err.contains("→ no answer (no one to ask)"), "{err}");
}

#[test]
fn results_json_records_each_attempts_questions_and_answers() {
    let env = Env::new();
    let script = env.script_file(
        "script.toml",
        json!([asks(database(Some("Postgres"), false)), { "text": "done" }]),
    );
    let (out, results) = env.run_tasks(&format!(
        "[[agents]]\nid = \"offline\"\nprovider = \"scripted\"\nsandbox = \"danger-full-access\"\n\n[[tasks]]\nid = \"t\"\nprompt = \"set up the cache\"\nscript = \"{}\"\n",
        script.display()
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    crate::runner::assert_valid(&results);
    let attempt = &results["tasks"][0]["attempts"][0];
    assert_eq!(
        attempt["questions"],
        json!([{
            "question": "Which database should the cache use?",
            "options": [
                { "label": "SQLite", "description": "one file, nothing to run" },
                { "label": "Postgres", "description": "the server the app already has" },
            ],
            "default": "Postgres",
            "free_text": false,
            "status": "unattended",
            "answer": "Postgres",
        }])
    );
    assert_eq!(attempt["tool_calls"]["ask_user"], 1);
}

/// The REPL on a terminal, with `turns` as the model.
fn repl(env: &Env, turns: Value) -> Pty {
    let script = env.script_file("script.toml", turns);
    let mut cmd = cogni(env, None, &["repl", "--script"]);
    cmd.arg(script);
    Pty::spawn(cmd, 100)
}

#[test]
fn the_repl_asks_with_a_menu_of_the_options() {
    let env = Env::new();
    let mut second = asks(database(None, true));
    second["expect"] = json!("The user chose: Postgres");
    let mut third = asks(database(Some("SQLite"), false));
    third["expect"] = json!("The user answered in their own words: MongoDB");
    let mut fourth = asks(database(Some("SQLite"), false));
    fourth["expect"] = json!("The user declined to answer");
    let mut pty = repl(
        &env,
        json!([
            asks(database(Some("SQLite"), false)),
            second,
            third,
            fourth,
            { "text": "Noted.", "expect": "The user chose: SQLite" },
        ]),
    );
    pty.expect("› ", WAIT);
    pty.send("set up the cache\r");
    // The default is marked and selected; ↓ moves, Enter confirms.
    pty.expect("? Which database should the cache use?", WAIT);
    pty.expect("1. SQLite (recommended) · one file, nothing to run", WAIT);
    pty.expect("↑↓ or 1-2 choose · Enter confirms · Esc declines", WAIT);
    pty.send("\x1b[B");
    pty.send("\r");
    pty.expect("→ Postgres", WAIT);
    // A free answer: typing moves to "Other".
    pty.expect("3. Other: type your own answer", WAIT);
    pty.send("MongoDB");
    pty.expect("Other: MongoDB", WAIT);
    pty.send("\r");
    pty.expect("→ “MongoDB”", WAIT);
    // Esc declines.
    pty.expect("↑↓ or 1-2 choose", WAIT);
    pty.send("\x1b");
    pty.expect("→ declined", WAIT);
    // A number selects, Enter confirms.
    pty.expect("↑↓ or 1-2 choose", WAIT);
    pty.send("2");
    pty.send("1\r");
    pty.expect("Noted.", WAIT);
    pty.expect("› ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    let screen = pty.screen();
    assert!(!screen.contains("script expectation failed"), "{screen}");
    assert!(
        !screen.contains("→ ask_user"),
        "the call shows as its question: {screen}"
    );
}

#[test]
fn the_repl_without_a_terminal_reads_the_answer_as_a_line() {
    let env = Env::new();
    let script = env.script_file(
        "script.toml",
        json!([
            asks(database(None, false)),
            { "text": "Noted.", "expect": "The user chose: Postgres" },
        ]),
    );
    let out = env
        .cmd()
        .args(["repl", "--script"])
        .arg(script)
        .write_stdin("set up the cache\n2\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(
        text.contains("  2. Postgres · the server the app already has\n"),
        "{text}"
    );
    assert!(text.contains("answer 1-2; empty declines > "), "{text}");
    assert!(text.contains("Noted."), "{text}");
}
