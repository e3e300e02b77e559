//! The plan strategy through the real binary: `update_plan` updates as
//! `plan` events and a checklist on stderr, a plan with two steps in
//! progress refused, the tool offered only with `[agent] enable_plan`, and
//! results.json's last plan per attempt.

use crate::cli::{stderr_of, stdout_of, Env};
use serde_json::{json, Value};

fn user_config(env: &Env, text: &str) {
    std::fs::write(env.dir.path().join("home/config.toml"), text).unwrap();
}

/// The answer to the plan request before the first step.
fn first_plan() -> Value {
    json!({ "text": "1. read the code\n2. fix it" })
}

fn update(plan: Value) -> Value {
    json!({ "text": "", "tool_calls": [{ "name": "update_plan", "arguments": plan }] })
}

fn script(env: &Env, turns: Value) -> std::path::PathBuf {
    env.script_file("script.toml", turns)
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
            first_plan(),
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
    assert_eq!(
        plans.len(),
        3,
        "the first plan, then two updates (the refused one is none)"
    );
    assert_eq!(
        plans[0]["plan"],
        json!({"plan": [{"step": "read the code", "status": "pending"}, {"step": "fix it", "status": "pending"}]})
    );
    assert_eq!(plans[1]["plan"]["explanation"], "two steps");
    assert_eq!(plans[1]["plan"]["plan"][0]["status"], "in_progress");
    assert_eq!(plans[2]["plan"]["plan"][1]["status"], "completed");
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
            first_plan(),
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
            first_plan(),
            update(json!({"plan": [{"step": "only step", "status": "completed"}]})),
            { "text": "done" },
        ]),
    );
    let (out, results) = env.run_tasks(&format!(
        "[[agents]]\nid = \"offline\"\nprovider = \"scripted\"\nenable_plan = true\nsandbox = \"danger-full-access\"\n\n[[tasks]]\nid = \"t\"\nprompt = \"go\"\nscript = \"{}\"\n",
        path.display()
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let attempt = &results["tasks"][0]["attempts"][0];
    assert_eq!(
        attempt["plan"],
        json!({"plan": [{"step": "only step", "status": "completed"}]})
    );
}

#[test]
fn the_first_plan_is_asked_once_and_sent_after_the_instructions_in_every_request() {
    use crate::common::mock::{chat, MockServer};
    let env = Env::new();
    user_config(&env, "[agent]\nenable_plan = true\n");
    let server = MockServer::start();
    server.enqueue(chat::text_response("1. Look around\n2. Answer"));
    server.enqueue(chat::tool_calls_response(&[(
        "c1",
        "list_dir",
        r#"{"path": "."}"#,
    )]));
    server.enqueue(chat::text_response("done"));
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test-key-for-the-mock")
        .args(["run", "--model", "gpt-4.1", "Describe the workspace"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one plan request, then the two steps");
    let texts = |n: usize| -> Vec<String> {
        requests[n].body_json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let asked = texts(0);
    assert!(asked
        .last()
        .unwrap()
        .starts_with("Before you start, write a short plan"));
    assert_eq!(asked[asked.len() - 2], "Describe the workspace");
    // Both later requests: the plan right before the task, the same bytes.
    for n in [1, 2] {
        let sent = texts(n);
        let at = sent
            .iter()
            .position(|t| t == "Describe the workspace")
            .unwrap();
        assert!(
            sent[at - 1].ends_with("update_plan):\n1. Look around\n2. Answer"),
            "request {n}: {:?}",
            &sent[..at]
        );
        assert!(!sent.iter().any(|t| t.starts_with("Before you start")));
    }
    server.assert_invariants();
}
