//! Delegation through the real binary: agents from cards and config,
//! `delegate_to_agent` and `spawn_agents` with the scripted provider and
//! the loopback mock, nested events, the guards, budgets carved from the
//! parent's, inherited tools, approvals in CI, worktree isolation.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, tool_names, MockServer};
use serde_json::{json, Value};
use std::path::Path;

fn card(dir: &Path, name: &str, front: &str, body: &str) {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join(format!("{name}.md")),
        format!("+++\n{front}\n+++\n{body}\n"),
    )
    .unwrap();
}

fn home(env: &Env) -> std::path::PathBuf {
    env.dir.path().join("home")
}

fn events(out: &std::process::Output) -> Vec<Value> {
    stdout_of(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// `cogni run --json --script` with `turns`.
fn run_script(env: &Env, turns: Value, extra: &[&str]) -> (std::process::Output, Vec<Value>) {
    let script = env.script_file("script.toml", turns);
    let out = env
        .cmd()
        .args(["run", "--json"])
        .args(extra)
        .arg("--script")
        .arg(script)
        .arg("do the task")
        .output()
        .unwrap();
    let events = events(&out);
    (out, events)
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "text": "", "tool_calls": [{ "name": name, "arguments": arguments }] })
}

fn text(t: &str) -> Value {
    json!({ "text": t })
}

/// The final output of the parent's call `name`.
fn output_of(events: &[Value], name: &str) -> Value {
    let done = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["name"] == name)
        .unwrap_or_else(|| panic!("no {name} call"));
    serde_json::from_str(done["item"]["output"].as_str().unwrap()).unwrap()
}

#[test]
fn a_delegated_agent_runs_to_its_answer_with_its_events_nested() {
    let env = Env::new();
    card(
        &home(&env),
        "reviewer",
        "description = \"Reviews files\"\ntools = [\"read_file\"]",
        "Review.",
    );
    std::fs::write(env.work().join("a.txt"), "alpha\n").unwrap();
    let (out, events) = run_script(
        &env,
        json!([
            call("list_agents", json!({})),
            call(
                "delegate_to_agent",
                json!({"agent": "reviewer", "task": "Review a.txt"})
            ),
            call("read_file", json!({"path": "a.txt"})),
            text("a.txt is fine."),
            text("The reviewer found nothing."),
        ]),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let listed = output_of(&events, "list_agents");
    assert_eq!(
        listed,
        json!([{"name": "reviewer", "description": "Reviews files"}])
    );
    let report = output_of(&events, "delegate_to_agent");
    assert_eq!(report["outcome"], "done");
    assert_eq!(report["answer"], "a.txt is fine.");
    assert_eq!(report["id"], "reviewer#1");
    assert!(report["tokens"].as_u64().unwrap() > 0);

    let started = of_type(&events, "subagent.started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["agent"], json!(["main", "reviewer#1"]));
    let call_id = started[0]["call_id"].clone();
    let nested = of_type(&events, "subagent");
    assert!(nested
        .iter()
        .all(|e| e["agent"] == json!(["main", "reviewer#1"]) && e["call_id"] == call_id));
    let child_call = nested
        .iter()
        .find(|e| {
            e["event"]["type"] == "item.completed" && e["event"]["item"]["name"] == "read_file"
        })
        .expect("the child's call, nested");
    assert!(child_call["event"]["item"]["output"]
        .as_str()
        .unwrap()
        .contains("alpha"));
    let finished = of_type(&events, "subagent.finished");
    assert_eq!(finished[0]["outcome"], "done");
    // Spend by agent; the totals include the child's.
    let metrics = of_type(&events, "metrics");
    let agents = &metrics.last().unwrap()["snapshot"]["agents"];
    let child = agents["main/reviewer#1"]["usage"]["input_tokens"]
        .as_u64()
        .unwrap();
    let own = agents["main"]["usage"]["input_tokens"].as_u64().unwrap();
    let done = of_type(&events, "turn.completed");
    assert_eq!(
        done[0]["usage"]["input_tokens"].as_u64().unwrap(),
        own + child
    );
    // The human renderer: one line at the start, one at the finish.
    let out = env
        .cmd()
        .args(["run", "--script"])
        .arg(env.dir.path().join("script.toml"))
        .arg("do the task")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(err.contains("↳ reviewer#1 started: Review a.txt"), "{err}");
    assert!(err.contains("reviewer#1 done"), "{err}");
}

#[test]
fn the_guards_refuse_depth_and_too_many_agents() {
    let env = Env::new();
    card(&home(&env), "helper", "description = \"Helps\"", "Help.");
    card(&home(&env), "deep", "description = \"Deeper\"", "Deep.");
    std::fs::write(
        home(&env).join("config.toml"),
        "[delegation]\nmax_delegation_depth = 1\nmax_agents_per_session = 1\n",
    )
    .unwrap();
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "delegate_to_agent",
                json!({"agent": "helper", "task": "go deeper"})
            ),
            // helper, at depth 1 of 1: not offered the tools, refused anyway.
            call("delegate_to_agent", json!({"agent": "deep", "task": "x"})),
            text("helper is done"),
            call(
                "delegate_to_agent",
                json!({"agent": "deep", "task": "one more"})
            ),
            text("stopped"),
        ]),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let outputs: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["name"] == "delegate_to_agent")
        .map(|e| serde_json::from_str(e["item"]["output"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(outputs[0]["outcome"], "done", "{}", outputs[0]);
    let nested_refusal = events
        .iter()
        .find(|e| e["type"] == "subagent" && e["event"]["type"] == "item.completed")
        .unwrap();
    let refusal = nested_refusal["event"]["item"]["output"].as_str().unwrap();
    assert!(refusal.contains("max_delegation_depth"), "{refusal}");
    assert_eq!(
        of_type(&events, "subagent.started").len(),
        1,
        "deep never started"
    );
    // The second agent of the session is over max_agents_per_session.
    assert_eq!(outputs[1]["outcome"], "error");
    assert!(
        outputs[1]["error"]
            .as_str()
            .unwrap()
            .contains("max_agents_per_session"),
        "{}",
        outputs[1]
    );
}

#[test]
fn an_agent_cannot_delegate_to_itself() {
    let env = Env::new();
    card(&home(&env), "lead", "description = \"Leads\"", "Lead.");
    card(&home(&env), "other", "description = \"Other\"", "Other.");
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "delegate_to_agent",
                json!({"agent": "lead", "task": "me again"})
            ),
            text("ok"),
        ]),
        &["--agent", "lead"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let report = output_of(&events, "delegate_to_agent");
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("cannot delegate to itself"),
        "{report}"
    );
    assert!(of_type(&events, "subagent.started").is_empty());
}

#[test]
fn the_first_failure_of_spawn_agents_stops_the_others_and_every_call_gets_an_output() {
    let env = Env::new();
    card(&home(&env), "sleeper", "description = \"Sleeps\"", "Sleep.");
    let started = std::time::Instant::now();
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "spawn_agents",
                json!({"runs": [
                    {"agent": "sleeper", "task": "sleep"},
                    {"agent": "ghost", "task": "fail"},
                    {"agent": "sleeper", "task": "never starts"}
                ]})
            ),
            call("shell", json!({"command": "sleep 20"})),
            text("one failed"),
        ]),
        &["--sandbox", "danger-full-access"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        started.elapsed().as_secs() < 15,
        "the sleeping agent was stopped"
    );
    let reports = output_of(&events, "spawn_agents");
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 3, "one result per run, in order");
    assert_eq!(reports[0]["outcome"], "interrupted", "{}", reports[0]);
    assert_eq!(reports[1]["outcome"], "error");
    assert!(reports[2]["error"]
        .as_str()
        .unwrap()
        .contains("not started"));
    // The stopped agent's call still got an output.
    let sleep = events
        .iter()
        .find(|e| {
            e["type"] == "subagent"
                && e["event"]["type"] == "item.completed"
                && e["event"]["item"]["name"] == "shell"
        })
        .expect("the stopped call's output");
    assert_eq!(sleep["event"]["item"]["status"], "failed");
    assert!(sleep["event"]["item"]["output"]
        .as_str()
        .unwrap()
        .contains("Interrupted"));
}

#[test]
fn a_childs_budget_is_carved_from_what_the_parent_has_left() {
    let env = Env::new();
    card(&home(&env), "spender", "description = \"Spends\"", "Spend.");
    std::fs::write(
        home(&env).join("config.toml"),
        "effects = [{ kind = \"token_limit\", tokens = 6000 }]\n",
    )
    .unwrap();
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "delegate_to_agent",
                json!({"agent": "spender", "task": "spend"})
            ),
            call("shell", json!({"command": "true"})),
            call("shell", json!({"command": "true"})),
            call("shell", json!({"command": "true"})),
            call("shell", json!({"command": "true"})),
            text("never reached"),
            text("the parent goes on"),
        ]),
        &[],
    );
    let report = output_of(&events, "delegate_to_agent");
    assert_eq!(report["outcome"], "budget_exceeded", "{report}");
    // Its spend counts against the parent, which stops too.
    let done = of_type(&events, "turn.completed");
    assert_eq!(done[0]["outcome"], "budget_exceeded", "{}", stderr_of(&out));
    let total = done[0]["usage"]["input_tokens"].as_u64().unwrap()
        + done[0]["usage"]["output_tokens"].as_u64().unwrap();
    let child = report["tokens"].as_u64().unwrap();
    assert!(child < 6000 && total >= child, "{child} {total}");
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn a_childs_question_in_ci_is_a_recorded_no_at_once() {
    let env = Env::new();
    card(&home(&env), "writer", "description = \"Writes\"", "Write.");
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "delegate_to_agent",
                json!({"agent": "writer", "task": "write"})
            ),
            call("shell", json!({"command": "touch made.txt"})),
            text("I was not allowed."),
            text("done"),
        ]),
        &["--approval", "untrusted"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "subagent" && e["event"]["type"] == "approval")
        .collect();
    assert!(
        asked.iter().any(|e| e["event"]["status"] == "denied"),
        "{asked:?}"
    );
    assert!(!env.work().join("made.txt").exists());
    assert_eq!(
        output_of(&events, "delegate_to_agent")["answer"],
        "I was not allowed."
    );
}

#[test]
fn a_child_gets_its_own_tools_first_then_the_parents_unless_it_opts_out() {
    let server = MockServer::start();
    let env = Env::new();
    card(
        &home(&env),
        "reader",
        "description = \"Reads\"\ntools = [\"read_file\"]",
        "Read.",
    );
    card(
        &home(&env),
        "loner",
        "description = \"Alone\"\ntools = [\"grep\"]\ninherit_tools = false",
        "Alone.",
    );
    for agent in ["reader", "loner"] {
        server.enqueue(chat::tool_calls_response(&[(
            "call_1",
            "delegate_to_agent",
            &json!({"agent": agent, "task": "t"}).to_string(),
        )]));
        server.enqueue(chat::text_response("child answer"));
        server.enqueue(chat::text_response("parent answer"));
    }
    for _ in 0..2 {
        let out = env
            .cmd()
            .env("OPENAI_BASE_URL", server.base_url())
            .env("OPENAI_API_KEY", "sk-test")
            .args(["run", "--json", "--model", "gpt-4.1", "go"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    }
    let requests = server.requests();
    let parent = tool_names(requests[0].body_json())
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>();
    assert!(parent.contains(&"delegate_to_agent".to_string()));
    let reader: Vec<String> = tool_names(requests[1].body_json())
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(reader[0], "read_file", "its own first: {reader:?}");
    assert!(
        reader.contains(&"shell".to_string()),
        "then the parent's: {reader:?}"
    );
    assert!(
        reader.contains(&"delegate_to_agent".to_string()),
        "and delegation: {reader:?}"
    );
    let loner: Vec<String> = tool_names(requests[4].body_json())
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(!loner.contains(&"shell".to_string()), "{loner:?}");
    assert_eq!(loner[0], "grep");
    server.assert_invariants();
}

#[test]
fn parallel_writers_in_worktrees_return_diffs_and_leave_the_workspace_alone() {
    let env = Env::new();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(env.work())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(env.work().join("shared.txt"), "base\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "base"]);
    card(
        &home(&env),
        "writer",
        "description = \"Writes\"\nisolation = \"worktree\"",
        "Write.",
    );
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "spawn_agents",
                json!({"runs": [
                    {"agent": "writer", "task": "one"},
                    {"agent": "writer", "task": "two"}
                ]})
            ),
            // Slow, so the second writer starts while the first waits.
            json!({ "text": "", "delay_ms": 500, "tool_calls": [
                { "name": "write_file", "arguments": {"path": "shared.txt", "content": "first\n"} }
            ] }),
            call(
                "write_file",
                json!({"path": "shared.txt", "content": "second\n"})
            ),
            text("wrote first"),
            text("wrote second"),
            text("both done"),
        ]),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let reports = output_of(&events, "spawn_agents");
    let diffs: Vec<&str> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["diff"].as_str().unwrap_or_else(|| panic!("{r}")))
        .collect();
    assert!(diffs.iter().any(|d| d.contains("+first")), "{diffs:?}");
    assert!(diffs.iter().any(|d| d.contains("+second")), "{diffs:?}");
    assert_eq!(
        std::fs::read_to_string(env.work().join("shared.txt")).unwrap(),
        "base\n"
    );
    // The diff applies.
    let file = reports[0]["diff_file"].as_str().unwrap();
    git(&["apply", file]);
    let now = std::fs::read_to_string(env.work().join("shared.txt")).unwrap();
    assert!(now == "first\n" || now == "second\n", "{now}");
    let worktrees = std::process::Command::new("git")
        .args(["worktree", "list"])
        .current_dir(env.work())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&worktrees.stdout).lines().count(),
        1,
        "removed"
    );
}

#[test]
fn agents_come_from_cards_and_config_and_a_projects_only_once_trusted() {
    let env = Env::new();
    card(&home(&env), "user-card", "description = \"From home\"", "x");
    card(
        &env.work().join(".cogni"),
        "project-card",
        "description = \"From the repo\"",
        "x",
    );
    std::fs::write(
        home(&env).join("config.toml"),
        "[agents.from-config]\ndescription = \"From config\"\nmodel = \"gpt-4.1\"\n",
    )
    .unwrap();
    let out = env.cmd().arg("agents").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let listed = stdout_of(&out);
    assert!(
        listed.contains("user-card") && listed.contains("from-config"),
        "{listed}"
    );
    assert!(listed.contains("config [agents.from-config]"), "{listed}");
    assert!(!listed.contains("project-card"), "untrusted: {listed}");
    assert!(
        stderr_of(&out).contains("until the directory is trusted"),
        "{}",
        stderr_of(&out)
    );
    let trust = env.cmd().args(["trust", "."]).output().unwrap();
    assert_eq!(trust.status.code(), Some(0), "{}", stderr_of(&trust));
    let listed = stdout_of(&env.cmd().arg("agents").output().unwrap());
    assert!(listed.contains("project-card"), "{listed}");
    // A bad [delegation] value names its key.
    std::fs::write(
        home(&env).join("config.toml"),
        "[delegation]\nmax_concurrent_agents = 0\n",
    )
    .unwrap();
    let out = env.cmd().arg("agents").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("delegation.max_concurrent_agents"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn subagent_start_and_stop_hooks_fire_in_the_child_and_stop_in_the_parent() {
    let env = Env::new();
    card(&home(&env), "helper", "description = \"Helps\"", "Help.");
    let log = env.dir.path().join("hooks.jsonl");
    let hook = format!(
        "sh -c 'cat >> {}; echo >> {}'",
        log.display(),
        log.display()
    );
    std::fs::write(
        home(&env).join("config.toml"),
        format!(
            "[[hooks.SubagentStart]]\nmatcher = \"help.*\"\ncommand = \"{hook}\"\n\
             [[hooks.SubagentStop]]\ncommand = \"{hook}\"\n\
             [[hooks.Stop]]\ncommand = \"{hook}\"\n"
        ),
    )
    .unwrap();
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "delegate_to_agent",
                json!({"agent": "helper", "task": "help"})
            ),
            text("helped"),
            text("ok"),
        ]),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let ran: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = ran
        .iter()
        .map(|e| e["hook_event_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["SubagentStart", "SubagentStop", "Stop"], "{ran:?}");
    assert_eq!(ran[0]["agent_type"], "helper");
    assert_eq!(ran[1]["stop_hook_active"], false);
    // Each run is a hook event, the child's nested.
    let nested_hooks = events
        .iter()
        .filter(|e| e["type"] == "subagent" && e["event"]["type"] == "hook")
        .count();
    assert_eq!(nested_hooks, 2);
}

#[test]
fn a_task_attempt_delegates_and_results_json_breaks_spend_down_by_agent() {
    let env = Env::new();
    card(&home(&env), "helper", "description = \"Helps\"", "Help.");
    let script = env.script_file(
        "task-script.toml",
        json!([
            call(
                "delegate_to_agent",
                json!({"agent": "helper", "task": "help"})
            ),
            text("helped"),
            text("done"),
        ]),
    );
    let (out, results) = env.run_tasks(&format!(
        "[[agents]]\nid = \"offline\"\nprovider = \"scripted\"\n\n[[tasks]]\nid = \"t\"\nprompt = \"go\"\nscript = \"{}\"\n",
        script.display()
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    crate::runner::assert_valid(&results);
    let attempt = &results["tasks"][0]["attempts"][0];
    let agents = attempt["agents"].as_object().expect("agents");
    assert!(agents.contains_key("offline"), "{agents:?}");
    assert!(agents.contains_key("offline/helper#1"), "{agents:?}");
    let sum: u64 = agents
        .values()
        .map(|a| a["usage"]["input_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(attempt["tokens"]["input"].as_u64().unwrap(), sum);
    // The transcript shows the child's start and finish in their place.
    let line = std::fs::read_to_string(env.dir.path().join("out/transcripts.jsonl")).unwrap();
    let transcript: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let notes: Vec<&str> = transcript["transcript"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["k"] == "note")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0], "agent offline/helper#1 started: help");
    assert!(
        notes[1].starts_with("agent offline/helper#1 finished: done in "),
        "{notes:?}"
    );
}

#[test]
fn depth_is_counted_from_the_root_through_nested_children() {
    let env = Env::new();
    for name in ["a", "b", "c"] {
        card(&home(&env), name, &format!("description = \"{name}\""), "x");
    }
    // A card cannot raise the limit for what it starts.
    card(
        &home(&env),
        "a",
        "description = \"a\"\nmax_delegation_depth = 9",
        "x",
    );
    let (out, events) = run_script(
        &env,
        json!([
            call("delegate_to_agent", json!({"agent": "a", "task": "1"})),
            call("delegate_to_agent", json!({"agent": "b", "task": "2"})),
            call("delegate_to_agent", json!({"agent": "c", "task": "3"})),
            text("b done"),
            text("a done"),
            text("main done"),
        ]),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let started: Vec<&Value> = of_type(&events, "subagent.started");
    assert_eq!(started.len(), 2, "c never starts");
    assert_eq!(started[1]["agent"], json!(["main", "a#1", "b#2"]));
    // b's own call, nested with its full path, refused at depth 2 of 2.
    let refused = events
        .iter()
        .find(|e| {
            e["type"] == "subagent"
                && e["agent"] == json!(["main", "a#1", "b#2"])
                && e["event"]["type"] == "item.completed"
        })
        .expect("b's call");
    let output = refused["event"]["item"]["output"].as_str().unwrap();
    assert!(output.contains("max_delegation_depth"), "{output}");
    assert_eq!(output_of(&events, "delegate_to_agent")["answer"], "a done");
}

#[test]
fn worktree_isolation_runs_nothing_the_repository_names() {
    let env = Env::new();
    let out_dir = env.dir.path().join("canaries");
    std::fs::create_dir_all(&out_dir).unwrap();
    let canary = |name: &str| format!("touch '{}'", out_dir.join(name).display());
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(env.work())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    // A repository whose config, hooks and attributes name programs (as
    // the model could have made it from its sandbox), with a change not
    // committed yet.
    git(&["init", "-q"]);
    std::fs::write(env.work().join(".gitattributes"), "* filter=x diff=d\n").unwrap();
    std::fs::write(env.work().join("a.txt"), "base\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "base"]);
    std::fs::write(env.work().join("a.txt"), "dirty\n").unwrap();
    let mut config = std::fs::read_to_string(env.work().join(".git/config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = {}\n[filter \"x\"]\n\tclean = {}; cat\n\tsmudge = {}; cat\n\trequired = true\n\
         [diff]\n\texternal = {}\n[diff \"d\"]\n\ttextconv = {}; cat\n",
        canary("fsmonitor"),
        canary("clean"),
        canary("smudge"),
        canary("diff-external"),
        canary("textconv"),
    ));
    std::fs::write(env.work().join(".git/config"), config).unwrap();
    let hook = env.work().join(".git/hooks/post-checkout");
    std::fs::write(&hook, format!("#!/bin/sh\n{}\n", canary("post-checkout"))).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    card(
        &home(&env),
        "writer",
        "description = \"Writes\"\nisolation = \"worktree\"",
        "Write.",
    );
    let (out, events) = run_script(
        &env,
        json!([
            call(
                "delegate_to_agent",
                json!({"agent": "writer", "task": "write"})
            ),
            call("write_file", json!({"path": "a.txt", "content": "child\n"})),
            text("wrote it"),
            text("done"),
        ]),
        &["--no-sandbox"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let mut ran: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    ran.sort();
    assert!(ran.is_empty(), "cogni's git ran the repository's {ran:?}");
    let report = output_of(&events, "delegate_to_agent");
    assert!(
        report["diff"]
            .as_str()
            .unwrap_or_default()
            .contains("+child"),
        "{report}"
    );
}

#[test]
fn the_model_typed_on_the_command_line_wins_over_the_cards() {
    let server = MockServer::start();
    let env = Env::new();
    card(
        &home(&env),
        "coder",
        "description = \"Codes\"\nmodel = \"gpt-4o\"",
        "Write code.",
    );
    // The card's model, when the command line names none.
    server.enqueue(chat::text_response("one"));
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test-key-for-the-mock")
        .args(["run", "--agent", "coder", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // What the user typed wins over the card.
    server.enqueue(chat::text_response("two"));
    let out = env.run_json_against(&server, &["--agent", "coder", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let models: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| r.json.as_ref()?["model"].as_str().map(String::from))
        .collect();
    assert_eq!(models, ["gpt-4o", "gpt-4.1"]);
}

#[test]
fn a_misspelled_agent_uses_up_nothing_of_max_agents_per_session() {
    let env = Env::new();
    card(&home(&env), "helper", "description = \"Helps\"", "Help.");
    std::fs::write(
        home(&env).join("config.toml"),
        "[delegation]\nmax_agents_per_session = 1\n",
    )
    .unwrap();
    let (out, events) = run_script(
        &env,
        json!([
            call("delegate_to_agent", json!({"agent": "helpr", "task": "x"})),
            call(
                "spawn_agents",
                json!({"runs": [{"agent": "nobody", "task": "x"}]})
            ),
            call("delegate_to_agent", json!({"agent": "helper", "task": "x"})),
            text("helper is done"),
            text("all done"),
        ]),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let helper = output_of(&events, "delegate_to_agent");
    let outputs: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .collect();
    assert!(
        outputs[0]["item"]["output"]
            .as_str()
            .unwrap()
            .contains("no agent named `helpr`"),
        "{}",
        outputs[0]
    );
    assert_eq!(
        of_type(&events, "subagent.started").len(),
        1,
        "the one real agent still starts: {helper}"
    );
}
