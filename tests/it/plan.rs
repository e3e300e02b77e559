//! The plan strategy through the real binary: `update_plan` updates as
//! `plan` events and a checklist on stderr, a plan with two steps in
//! progress refused, the tool offered only with `[agent] enable_plan`, and
//! results.json's last plan per attempt.

use crate::cli::{stderr_of, stdout_of, Env};
use serde_json::{json, Value};

fn user_config(env: &Env, text: &str) {
    std::fs::write(env.dir.path().join("home/config.toml"), text).unwrap();
}

fn update(plan: Value) -> Value {
    json!({ "text": "", "tool_calls": [{ "name": "update_plan", "arguments": plan }] })
}

fn script(env: &Env, turns: Value) -> std::path::PathBuf {
    let value: toml::Value = serde_json::from_value(json!({ "turns": turns })).unwrap();
    env.write("script.toml", &toml::to_string(&value).unwrap())
}

fn run(env: &Env, turns: Value) -> (std::process::Output, Vec<Value>) {
    let path = script(env, turns);
    let out = env
        .cmd()
        .args(["run", "--json", "--script"])
        .arg(path)
        .arg("go")
        .output()
        .unwrap();
    let events = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, events)
}

#[test]
fn updates_are_plan_events_and_a_bad_plan_is_refused() {
    let env = Env::new();
    user_config(&env, "[agent]\nenable_plan = true\n");
    let (out, events) = run(
        &env,
        json!([
            update(json!({"explanation": "two steps", "plan": [
                {"step": "read the code", "status": "in_progress"},
                {"step": "fix it", "status": "pending"},
            ]})),
            update(json!({"plan": [
                {"step": "read the code", "status": "in_progress"},
                {"step": "fix it", "status": "in_progress"},
            ]})),
            update(json!({"plan": [
                {"step": "read the code", "status": "completed"},
                {"step": "fix it", "status": "completed"},
            ]})),
            { "text": "done" },
        ]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let plans: Vec<&Value> = events.iter().filter(|e| e["type"] == "plan").collect();
    assert_eq!(plans.len(), 2, "the refused update is no event");
    assert_eq!(plans[0]["plan"]["explanation"], "two steps");
    assert_eq!(plans[0]["plan"]["plan"][0]["status"], "in_progress");
    assert_eq!(plans[1]["plan"]["plan"][1]["status"], "completed");
    let outputs: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .map(|e| e["item"]["output"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outputs[0], "Plan updated");
    assert!(
        outputs[1].contains("at most one step may be in progress"),
        "{}",
        outputs[1]
    );
}

#[test]
fn cogni_run_prints_the_checklist_on_stderr() {
    let env = Env::new();
    user_config(&env, "[agent]\nenable_plan = true\n");
    let path = script(
        &env,
        json!([
            update(json!({"plan": [
                {"step": "read the code", "status": "completed"},
                {"step": "fix it", "status": "in_progress"},
                {"step": "run the tests", "status": "pending"},
            ]})),
            { "text": "done" },
        ]),
    );
    let out = env
        .cmd()
        .args(["run", "--script"])
        .arg(path)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("plan\n  ✓ read the code\n  ▸ fix it\n  ○ run the tests"),
        "{err}"
    );
}

#[test]
fn without_enable_plan_there_is_no_update_plan_tool() {
    let env = Env::new();
    let (out, events) = run(
        &env,
        json!([update(json!({"plan": [{"step": "x", "status": "pending"}]})), { "text": "done" }]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(!events.iter().any(|e| e["type"] == "plan"));
    let output = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .map(|e| e["item"]["output"].as_str().unwrap_or("").to_string())
        .unwrap();
    assert!(output.contains("update_plan"), "an unknown tool: {output}");
}

#[test]
fn results_json_records_each_attempts_last_plan() {
    let env = Env::new();
    let path = script(
        &env,
        json!([
            update(json!({"plan": [{"step": "only step", "status": "completed"}]})),
            { "text": "done" },
        ]),
    );
    let tasks = env.write(
        "tasks.toml",
        &format!(
            "[[agents]]\nid = \"offline\"\nprovider = \"scripted\"\nenable_plan = true\nsandbox = \"danger-full-access\"\n\n[[tasks]]\nid = \"t\"\nprompt = \"go\"\nscript = \"{}\"\n",
            path.display()
        ),
    );
    let out_dir = env.dir.path().join("out");
    let out = env
        .cmd()
        .args(["run", "--tasks"])
        .arg(tasks)
        .arg("--output-dir")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
    let attempt = &results["tasks"][0]["attempts"][0];
    assert_eq!(
        attempt["plan"],
        json!({"plan": [{"step": "only step", "status": "completed"}]})
    );
}
