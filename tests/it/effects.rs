//! Effects and middleware configured in TOML, through the real binary:
//! guardrails and budgets from `effects = [...]`, key-path errors, an
//! untrusted project's command-running effects, `[run]`.

use crate::cli::{stderr_of, stdout_of, Env};
use serde_json::{json, Value};

/// `cogni run --json` with a script of `turns` (each a list of tool
/// calls, or a final text); the events.
fn run(env: &Env, turns: Value) -> (std::process::Output, Vec<Value>) {
    let toml_value: toml::Value = serde_json::from_value(json!({ "turns": turns })).unwrap();
    let path = env.write("script.toml", &toml::to_string(&toml_value).unwrap());
    let out = env
        .cmd()
        .args(["run", "--json", "--no-sandbox", "--script"])
        .arg(&path)
        .arg("go")
        .output()
        .unwrap();
    let events = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, events)
}

fn shell(command: &str) -> Value {
    json!({ "name": "shell", "arguments": { "command": command } })
}

fn outputs(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .map(|e| e["item"]["output"].as_str().unwrap_or("").to_string())
        .collect()
}

fn user_config(env: &Env, text: &str) {
    std::fs::write(env.dir.path().join("home/config.toml"), text).unwrap();
}

#[test]
fn a_guardrail_blocks_a_call_and_a_budget_stops_the_turn() {
    let env = Env::new();
    user_config(
        &env,
        r#"effects = [
  { kind = "guardrail", on = "tool_call", tools = "shell", pattern = "rm\\s+-rf", reason = "no recursive deletes" },
  { kind = "tool_call_limit", calls = 1 },
]
"#,
    );
    let (out, events) = run(
        &env,
        json!([
            { "text": "", "tool_calls": [shell("rm -rf build")] },
            { "text": "", "tool_calls": [shell("echo one > one.txt"), shell("echo two > two.txt")] },
            { "text": "done" },
        ]),
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let outputs = outputs(&events);
    assert_eq!(outputs[0], "no recursive deletes");
    assert!(outputs[1].starts_with("exit code 0"), "{}", outputs[1]);
    assert!(
        outputs[2].contains("tool-call budget ran out"),
        "{}",
        outputs[2]
    );
    assert!(env.work().join("one.txt").exists());
    assert!(!env.work().join("two.txt").exists());
    let done = events.last().unwrap();
    assert_eq!(done["type"], "turn.completed");
    assert_eq!(done["outcome"], "budget_exceeded");
    assert_eq!(done["limit"], "tool_calls");
    let effects: Vec<&Value> = events.iter().filter(|e| e["type"] == "effect").collect();
    assert_eq!(effects[0]["name"], "guardrail");
    assert_eq!(effects[0]["phase"], "before_tool");
    assert!(stderr_of(&out).contains("tool-call budget is used up"));
}

#[test]
fn a_reply_guardrail_command_ends_the_turn_blocked() {
    let env = Env::new();
    user_config(
        &env,
        "effects = [{ kind = \"guardrail\", on = \"reply\", command = \"grep -q SECRET && echo 'mentions a secret' >&2 && exit 1 || exit 0\" }]\n",
    );
    let (out, events) = run(&env, json!([{ "text": "the SECRET is 42" }]));
    assert_eq!(out.status.code(), Some(1));
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "blocked");
    assert_eq!(done["reason"], "blocked by a guardrail: mentions a secret");
    assert!(stderr_of(&out).contains("mentions a secret"));
}

#[test]
fn bad_effects_are_config_errors_naming_the_key_path() {
    let env = Env::new();
    for (text, needles) in [
        (
            "effects = [{ kind = \"compact\" }, { kind = \"cost_limit\", usd = \"two\" }]\n",
            vec!["config.toml: effects[1]: invalid type: string \"two\", expected a number"],
        ),
        (
            "effects = [{ kind = \"spend_limit\", usd = 1 }]\n",
            vec![
                "effects[0].kind: unknown effect kind `spend_limit`",
                "cost_limit",
            ],
        ),
        (
            "effects = [{ kind = \"guardrail\", on = \"tool_call\", pattern = \"[\" }]\n",
            vec!["effects[0].pattern: not a valid regex"],
        ),
        (
            "[run]\ntimeout_secs = 0\n",
            vec!["run.timeout_secs must be greater than 0"],
        ),
    ] {
        user_config(&env, text);
        let (out, _) = run(&env, json!([{ "text": "x" }]));
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = stderr_of(&out);
        for needle in needles {
            assert!(err.contains(needle), "{needle} missing from: {err}");
        }
    }
}

#[test]
fn an_untrusted_projects_command_effects_are_ignored_until_trusted() {
    let env = Env::new();
    std::fs::write(
        env.work().join("cogni.toml"),
        "effects = [{ kind = \"guardrail\", on = \"tool_call\", command = \"touch ran-guardrail\" }]\n",
    )
    .unwrap();
    let turns = json!([{ "text": "", "tool_calls": [shell("true")] }, { "text": "done" }]);
    let (out, _) = run(&env, turns.clone());
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("effects[0] (it runs a command outside the sandbox)"),
        "{}",
        stderr_of(&out)
    );
    assert!(!env.work().join("ran-guardrail").exists());
    let trusted = env.cmd().arg("trust").output().unwrap();
    assert_eq!(trusted.status.code(), Some(0));
    let (out, _) = run(&env, turns);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(env.work().join("ran-guardrail").exists());
}

#[test]
fn the_output_guardrail_asks_once_more_then_fails_with_exit_1() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/answer.schema.json"),
        r#"{"type": "object", "required": ["ok"]}"#,
    )
    .unwrap();
    user_config(
        &env,
        "[run.output_guardrail]\nschema_file = \"answer.schema.json\"\n",
    );
    let (out, events) = run(
        &env,
        json!([{ "text": "not json" }, { "text": "{\"ok\": true}" }]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(events.last().unwrap()["final_text"], "{\"ok\": true}");
    let (out, events) = run(&env, json!([{ "text": "no" }, { "text": "{\"nope\": 1}" }]));
    assert_eq!(out.status.code(), Some(1));
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "invalid_output");
    assert!(done["reason"].as_str().unwrap().contains("rejected twice"));
}

/// `cogni run --max-tokens N` (and `--max-cost`, `--max-seconds`): a budget
/// effect of the flags' layer, exit 4 when it runs out; refused with
/// `--tasks`, whose budgets are the task file's.
#[test]
fn budget_flags_stop_a_run_and_are_refused_with_tasks() {
    let env = Env::new();
    let script = env.script_file(
        "s.toml",
        json!([
            {"text": "one", "tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]},
            {"text": "done"},
        ]),
    );
    let out = env
        .cmd()
        .args(["run", "--no-sandbox", "--max-tokens", "10", "--script"])
        .arg(&script)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("token"), "{}", stderr_of(&out));
    let out = env
        .cmd()
        .args(["run", "--max-seconds", "0", "--script"])
        .arg(&script)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--max-seconds 0: give a number greater than 0"));
    let tasks = env.write("tasks.toml", "[[tasks]]\nid = \"a\"\nprompt = \"x\"\n");
    let out = env
        .cmd()
        .args(["run", "--max-cost", "1", "--tasks"])
        .arg(&tasks)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("with --tasks set a task's `budget`"),
        "{}",
        stderr_of(&out)
    );
}
