//! Context strategies through the real binary: a small window slides by
//! default and says so in the event stream, `/context` shows the strategy
//! and the window, a bad `context_strategy` is a config error.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, MockServer};
use serde_json::{json, Value};

fn user_config(env: &Env, text: &str) {
    std::fs::write(env.dir.path().join("home/config.toml"), text).unwrap();
}

/// A script of `steps` shell calls with a few KB of output each, then an
/// answer.
fn long_script(env: &Env, steps: usize) -> std::path::PathBuf {
    let mut turns: Vec<Value> = (0..steps)
        .map(|n| {
            json!({ "text": "", "tool_calls": [
                { "name": "shell", "arguments": { "command": format!("seq -f 'line {n} %g' 1 200") } }
            ] })
        })
        .collect();
    turns.push(json!({ "text": "done" }));
    let script: toml::Value = serde_json::from_value(json!({ "turns": turns })).unwrap();
    env.write("script.toml", &toml::to_string(&script).unwrap())
}

#[test]
fn a_small_window_slides_by_default_and_reports_each_move() {
    let env = Env::new();
    user_config(&env, "[model_families.scripted]\ncontext_window = 16000\n");
    let script = long_script(&env, 40);
    let out = env
        .cmd()
        .args([
            "run",
            "--json",
            "--no-sandbox",
            "--max-iterations",
            "60",
            "--script",
        ])
        .arg(&script)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let events: Vec<Value> = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let moves: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "context_window")
        .collect();
    assert!(!moves.is_empty(), "the window moved");
    let mut last_dropped = 0;
    for m in &moves {
        let dropped = m["dropped_items"].as_u64().unwrap();
        assert!(dropped > last_dropped, "the window only moves forward: {m}");
        last_dropped = dropped;
        assert!(m["kept_items"].as_u64().unwrap() > 0);
        assert!(m["estimated_tokens"].as_u64().unwrap() <= 16000 * 8 / 10);
    }
    assert!(!events.iter().any(|e| e["type"] == "compaction"));
    let done = events.last().unwrap();
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["outcome"], "done");
}

#[test]
fn context_shows_the_strategy_the_window_and_what_is_left_out() {
    let env = Env::new();
    user_config(
        &env,
        "max_iterations = 60\ncontext_strategy = \"sliding_window\"\n[model_families.scripted]\ncontext_window = 64000\n[compaction]\ntoken_limit = 12000\n",
    );
    let script = long_script(&env, 40);
    let out = env
        .cmd()
        .args(["repl", "--script"])
        .arg(&script)
        .env("COLUMNS", "200")
        .write_stdin("go\n/context\n/status\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("strategy sliding_window (acts at 12000 tokens)"),
        "{stdout}"
    );
    assert!(stdout.contains("of 64000 tokens"), "{stdout}");
    assert!(
        stdout.contains("earlier items left out of requests"),
        "{stdout}"
    );
}

#[test]
fn a_bad_context_strategy_is_a_config_error_naming_the_choices() {
    let env = Env::new();
    user_config(&env, "context_strategy = \"fifo\"\n");
    let out = env
        .cmd()
        .args(["run", "--script"])
        .arg(long_script(&env, 0))
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("context_strategy"), "{err}");
    assert!(err.contains("sliding_window"), "{err}");
}

/// The text of the request's last user message.
fn last_user_text(server: &MockServer) -> String {
    let body = server.requests()[0].body_json().clone();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn context_event(out: &std::process::Output) -> Value {
    stdout_of(out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "context")
        .expect("a context event")
}

#[test]
fn context_files_and_directories_are_attached_and_reported() {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "the notes\n").unwrap();
    std::fs::create_dir_all(env.work().join("src")).unwrap();
    std::fs::write(env.work().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    let server = MockServer::start();
    server.enqueue(chat::text_response("ok"));
    let out = env.run_json_against(
        &server,
        &["--context", "notes.txt", "--context", "src", "summarise"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = last_user_text(&server);
    assert!(
        text.starts_with("summarise\n\n<attached file=\"notes.txt\">\nthe notes\n"),
        "{text}"
    );
    assert!(
        text.contains("<attached directory=\"src\">\n1 entries:\nlib.rs (14 B)"),
        "{text}"
    );
    let event = context_event(&out);
    assert_eq!(
        event["files"],
        json!([
            {"path": "notes.txt", "kind": "file", "bytes": 10, "truncated": false},
            {"path": "src", "kind": "directory", "bytes": 24, "truncated": false},
        ])
    );
}

#[test]
fn a_missing_context_path_is_a_usage_error() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["run", "--context", "nope.txt", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--context nope.txt: no such file or directory"));
}

#[test]
fn auto_context_attaches_the_files_the_prompt_names_then_the_readme() {
    let env = Env::new();
    user_config(&env, "[agent]\nauto_context = true\n");
    std::fs::create_dir_all(env.work().join("src")).unwrap();
    std::fs::write(env.work().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(env.work().join("README.md"), "# The project\n").unwrap();
    let server = MockServer::start();
    server.enqueue(chat::text_response("ok"));
    let out = env.run_json_against(&server, &["Fix the bug in src/lib.rs please"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let paths: Vec<String> = context_event(&out)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths, ["src/lib.rs", "README.md"]);
    assert!(last_user_text(&server).contains("<attached file=\"README.md\">\n# The project\n"));
}
