//! Context strategies through the real binary: a small window slides by
//! default and says so in the event stream, `/context` shows the strategy
//! and the window, a bad `context_strategy` is a config error.

use crate::cli::{stderr_of, stdout_of, Env};
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
