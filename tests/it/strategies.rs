//! The test-driven loop, reflection and the done token through the real
//! binary: failing tests go back to the model until they pass, the step
//! limit ends a loop that never passes, retries and timeouts, each
//! reflection policy, a critique that is not JSON, the `[done]` token,
//! results.json's test runs, and the golden event stream of a whole
//! plan → step → tool → test → reflect → ... → done session.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, MockServer};
use serde_json::{json, Value};

fn user_config(env: &Env, text: &str) {
    std::fs::write(env.dir.path().join("home/config.toml"), text).unwrap();
}

/// A file in the workspace.
fn in_work(env: &Env, name: &str, text: &str) {
    std::fs::write(env.work().join(name), text).unwrap();
}

fn events_of(out: &std::process::Output) -> Vec<Value> {
    stdout_of(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn outcome(events: &[Value]) -> String {
    of_type(events, "turn.completed")
        .last()
        .map(|e| e["outcome"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// `cogni run --json --script` with `turns` as the script.
fn run_script(env: &Env, turns: Value, extra: &[&str]) -> (std::process::Output, Vec<Value>) {
    let path = env.script_file("script.toml", turns);
    let out = env
        .cmd()
        .args(["run", "--json"])
        .args(extra)
        .arg("--script")
        .arg(path)
        .arg("fix the tests")
        .output()
        .unwrap();
    let events = events_of(&out);
    (out, events)
}

/// `cogni run --json --model gpt-4.1 go` against `server` as OpenAI.
fn run_mock(env: &Env, server: &MockServer) -> (std::process::Output, Vec<Value>) {
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test-key-for-the-mock")
        .args(["run", "--json", "--model", "gpt-4.1", "fix the tests"])
        .output()
        .unwrap();
    let events = events_of(&out);
    (out, events)
}

/// A test script: passes once `fixed.txt` exists, printing libtest's
/// lines either way.
const CHECK: &str = "if test -f fixed.txt; then\n  echo 'test parser::works ... ok'\n  echo 'test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s'\nelse\n  echo 'test parser::works ... FAILED'\n  echo 'test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s'\n  exit 101\nfi\n";

#[test]
fn failing_tests_go_back_to_the_model_until_they_pass() {
    let env = Env::new();
    in_work(&env, "check.sh", CHECK);
    user_config(&env, "[agent]\ntest_command = \"sh check.sh\"\n");
    let server = MockServer::start();
    server.enqueue(chat::text_response("I think it works."));
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"touch fixed.txt"}"#,
    )]));
    server.enqueue(chat::text_response("Fixed."));
    let (out, events) = run_mock(&env, &server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(outcome(&events), "done");
    let tests = of_type(&events, "test");
    assert_eq!(tests.len(), 2, "{tests:?}");
    assert_eq!(tests[0]["passed"], false);
    assert_eq!(tests[0]["exit_code"], 101);
    assert_eq!(tests[0]["run"], 1);
    assert_eq!(tests[1]["passed"], true);
    assert_eq!(tests[1]["run"], 2);
    assert!(tests[0]["output_tail"]
        .as_str()
        .unwrap()
        .contains("parser::works ... FAILED"));
    // The failure reached the model in the next request, with the names.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let second = requests[1].body_text();
    assert!(
        second.contains("The test command `sh check.sh` exited with code 101"),
        "{second}"
    );
    // The system prompt says what runs when the model is done.
    let first = requests[0].body_text();
    assert!(first.contains("# Finishing"), "{first}");
    assert!(first.contains("`sh check.sh` runs in the workspace"));
    assert_eq!(stdout_of(&out).matches("\"type\":\"test\"").count(), 2);
}

#[test]
fn the_step_limit_ends_a_loop_whose_tests_keep_failing() {
    let env = Env::new();
    in_work(&env, "check.sh", CHECK);
    user_config(
        &env,
        "[agent]\nenable_test_run = true\ntest_command = \"sh check.sh\"\nmax_steps = 2\n",
    );
    let (out, events) = run_script(
        &env,
        json!([{ "text": "done" }, { "text": "done again" }, { "text": "never asked" }]),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert_eq!(outcome(&events), "max_steps");
    assert_eq!(of_type(&events, "test").len(), 2);
    assert!(
        stderr_of(&out).contains("limit of 2 steps"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn retries_run_a_flaky_command_again_and_a_timeout_kills_it() {
    let env = Env::new();
    // Fails the first time, passes the second.
    in_work(
        &env,
        "flaky.sh",
        "if test -f .tried; then echo '2 passed, 0 failed'; else touch .tried; echo '1 passed, 1 failed'; exit 1; fi\n",
    );
    user_config(
        &env,
        "[agent]\ntest_command = \"sh flaky.sh\"\ntest_retries = 1\n",
    );
    let (out, events) = run_script(&env, json!([{ "text": "done" }]), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    let tests = of_type(&events, "test");
    assert_eq!(tests.len(), 2);
    assert_eq!(
        (&tests[0]["attempt"], &tests[0]["passed"]),
        (&json!(1), &json!(false))
    );
    assert_eq!(
        (&tests[1]["attempt"], &tests[1]["passed"]),
        (&json!(2), &json!(true))
    );
    assert_eq!(tests[0]["run"], tests[1]["run"], "a retry is the same run");
    assert_eq!(of_type(&events, "model.request").len(), 1);

    let env = Env::new();
    user_config(
        &env,
        "[agent]\ntest_command = \"sleep 30\"\ntest_timeout_seconds = 1\nmax_steps = 1\n",
    );
    let started = std::time::Instant::now();
    let (out, events) = run_script(&env, json!([{ "text": "done" }]), &[]);
    assert!(
        started.elapsed().as_secs() < 20,
        "the test command was killed"
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let tests = of_type(&events, "test");
    assert_eq!(tests[0]["timed_out"], true);
    assert_eq!(tests[0]["exit_code"], Value::Null);
    assert!(tests[0]["test_summary"]
        .as_str()
        .unwrap()
        .contains("timed out after 1s"));
}

#[test]
fn a_test_run_without_a_command_is_a_config_error_and_a_repository_cannot_set_one() {
    let env = Env::new();
    user_config(&env, "[agent]\nenable_test_run = true\n");
    let (out, _) = run_script(&env, json!([{ "text": "done" }]), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("agent.test_command is not set"),
        "{}",
        stderr_of(&out)
    );

    // An untrusted repository's config does not choose the command.
    let env = Env::new();
    in_work(
        &env,
        "cogni.toml",
        "[agent]\ntest_command = \"touch pwned\"\n",
    );
    let (out, events) = run_script(&env, json!([{ "text": "done" }]), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(of_type(&events, "test").is_empty());
    assert!(!env.work().join("pwned").exists());
    assert!(
        stderr_of(&out).contains("agent.test_command"),
        "the ignored key is named: {}",
        stderr_of(&out)
    );
}

fn reflection(quality: &str, block: bool) -> String {
    format!(
        "```json\n{}\n```\nThat is my review.",
        json!({"quality": quality, "issues": ["the edit has no test"], "recommendations": ["add a test"], "block_apply": block, "notes": "n"})
    )
}

#[test]
fn a_reflection_after_each_step_feeds_the_next_request() {
    let env = Env::new();
    in_work(&env, "check.sh", CHECK);
    user_config(
        &env,
        "[agent]\nenable_reflect = true\nenable_self_diff = true\ntest_command = \"sh check.sh\"\n",
    );
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"echo step-one-output; touch fixed.txt"}"#,
    )]));
    server.enqueue(chat::text_response(&reflection("fair", false)));
    server.enqueue(chat::text_response("All fixed."));
    server.enqueue(chat::text_response(&reflection("good", false)));
    let (out, events) = run_mock(&env, &server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let reflects = of_type(&events, "reflect");
    assert_eq!(reflects.len(), 2, "one per step");
    assert_eq!(reflects[0]["reflection"]["quality"], "fair");
    assert_eq!(
        reflects[0]["reflection"]["issues"],
        json!(["the edit has no test"])
    );
    assert_eq!(reflects[0]["blocked"], false);
    assert!(!of_type(&events, "reflect.delta").is_empty(), "it streams");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The reflection request: the step's tool output, and the same
    // instructions and tools as the session's requests (cache friendly).
    let ask = requests[1].body_json();
    let ask_text = requests[1].body_text();
    assert!(ask_text.contains("step-one-output"), "{ask_text}");
    assert!(ask_text.contains("block_apply"));
    assert_eq!(ask["tools"], requests[0].body_json()["tools"]);
    assert_eq!(ask["messages"][0], requests[0].body_json()["messages"][0]);
    // The critique is in the next step's request.
    let next = requests[2].body_text();
    assert!(
        next.contains("Reflection on the last step (quality: fair)"),
        "{next}"
    );
    assert!(next.contains("add a test"));
    // The final reflection sees the test run and the self-diff.
    let last_ask = requests[3].body_text();
    assert!(last_ask.contains("The latest test run"), "{last_ask}");
    assert!(last_ask.contains("sh check.sh` passed"), "{last_ask}");
    assert!(last_ask.contains("What changed since the previous response"));
    // Reflection requests count like any other.
    let metrics = of_type(&events, "metrics");
    let requests_counted = metrics.last().unwrap()["snapshot"]["turn"]["model_requests"]
        .as_u64()
        .unwrap();
    assert_eq!(requests_counted, 4);
}

/// Two steps with a critique after each, then the answer: the requests
/// the session sent (not the critiques' own).
fn two_reflected_steps(placement: &str) -> Vec<Value> {
    let env = Env::new();
    user_config(
        &env,
        &format!("[agent]\nenable_plan = false\nenable_reflect = true\nreflection_placement = \"{placement}\"\n"),
    );
    let server = MockServer::start();
    let critique = |quality: &str, issue: &str| {
        json!({"quality": quality, "issues": [issue], "recommendations": [], "block_apply": false, "notes": ""}).to_string()
    };
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"true"}"#,
    )]));
    server.enqueue(chat::text_response(&critique("poor", "first-critique")));
    server.enqueue(chat::tool_calls_response(&[(
        "call_2",
        "shell",
        r#"{"command":"true"}"#,
    )]));
    server.enqueue(chat::text_response(&critique("fair", "second-critique")));
    server.enqueue(chat::text_response("Done."));
    server.enqueue(chat::text_response(&critique("good", "none")));
    let (out, _) = run_mock(&env, &server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    [0, 2, 4]
        .iter()
        .map(|&i| requests[i].body_json()["messages"].clone())
        .collect()
}

/// Index of the message whose text contains `needle`.
fn position(messages: &Value, needle: &str) -> Vec<usize> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, m)| m.to_string().contains(needle))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn the_latest_reflection_sits_before_history_or_stays_in_place() {
    // "front" (the default, the seed's order): system prompt, initial
    // context, the latest critique, then history with the task.
    let front = two_reflected_steps("front");
    let task = position(&front[2], "fix the tests")[0];
    assert_eq!(
        position(&front[2], "second-critique"),
        vec![task - 1],
        "{}",
        front[2]
    );
    assert!(
        position(&front[2], "first-critique").is_empty(),
        "only the latest"
    );
    assert_eq!(position(&front[1], "first-critique"), vec![task - 1]);
    assert!(position(&front[0], "critique").is_empty());
    // "history": each critique where it happened, after its step, and each
    // request extends the one before (cacheable).
    let history = two_reflected_steps("history");
    let first = position(&history[2], "first-critique");
    let second = position(&history[2], "second-critique");
    assert_eq!(first.len(), 1);
    assert_eq!(second.len(), 1);
    assert!(first[0] > position(&history[2], "fix the tests")[0]);
    assert!(second[0] > first[0]);
    let (before, after) = (
        history[1].as_array().unwrap(),
        history[2].as_array().unwrap(),
    );
    assert_eq!(&after[..before.len()], &before[..], "append-only");
}

#[test]
fn each_reflection_policy_and_a_critique_that_is_not_json() {
    let turns = |critique: String| {
        json!([
            { "text": "", "tool_calls": [{ "name": "shell", "arguments": { "command": "true" } }] },
            { "text": critique },
            { "text": "done" },
            { "text": reflection("good", false) },
        ])
    };
    // block_on_critical (the default): the run ends, exit 1.
    let env = Env::new();
    user_config(&env, "[agent]\nenable_reflect = true\n");
    let (out, events) = run_script(&env, turns(reflection("poor", true)), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert_eq!(outcome(&events), "blocked_by_reflect");
    assert_eq!(of_type(&events, "reflect")[0]["blocked"], true);
    assert!(stderr_of(&out).contains("a reflection blocked the step: the edit has no test"));

    // warn_only: a warning, the run goes on.
    let env = Env::new();
    user_config(
        &env,
        "[agent]\nenable_reflect = true\nreflection_policy = \"warn_only\"\n",
    );
    let (out, events) = run_script(&env, turns(reflection("poor", true)), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(of_type(&events, "warning")
        .iter()
        .any(|w| w["message"].as_str().unwrap().contains("warn_only")));

    // never_block: not even a warning.
    let env = Env::new();
    user_config(
        &env,
        "[agent]\nenable_reflect = true\nreflection_policy = \"never_block\"\n",
    );
    let (out, events) = run_script(&env, turns(reflection("poor", true)), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(of_type(&events, "warning").is_empty(), "{events:?}");
    let critique = of_type(&events, "reflect")[0];
    assert_eq!(critique["reflection"]["block_apply"], true, "it asked");
    assert_eq!(critique["blocked"], false, "and was not heeded");

    // Not JSON: reported, kept as text, not fatal.
    let env = Env::new();
    user_config(&env, "[agent]\nenable_reflect = true\n");
    let (out, events) = run_script(&env, turns("Looks fine to me.".into()), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let first = of_type(&events, "reflect")[0];
    assert_eq!(first["reflection"], Value::Null);
    assert!(first["error"].as_str().unwrap().contains("no JSON object"));
    assert!(of_type(&events, "warning").iter().any(|w| w["message"]
        .as_str()
        .unwrap()
        .contains("not the JSON asked for")));

    // A bad policy is a config error naming the choices.
    let env = Env::new();
    user_config(&env, "[agent]\nreflection_policy = \"sometimes\"\n");
    let (out, _) = run_script(&env, json!([{ "text": "done" }]), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("block_on_critical"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn the_done_token_ends_the_turn_after_the_replys_calls() {
    let env = Env::new();
    user_config(&env, "[agent]\ndone_token = \"[done]\"\n");
    let (out, events) = run_script(
        &env,
        json!([
            { "text": "Writing it. All set [done]", "tool_calls": [
                { "name": "shell", "arguments": { "command": "echo hi > out.txt" } }
            ] },
            { "text": "never asked" },
        ]),
        &["--no-sandbox"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(of_type(&events, "model.request").len(), 1);
    let done = of_type(&events, "turn.completed")[0];
    assert_eq!(done["outcome"], "done");
    assert_eq!(done["final_text"], "Writing it. All set");
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "hi\n"
    );

    // Without the JSON stream the answer on stdout has no token either.
    let path = env.script_file("plain.toml", json!([{ "text": "Done here. [done]" }]));
    let out = env
        .cmd()
        .args(["run", "--script"])
        .arg(path)
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(stdout_of(&out).trim(), "Done here.");
}

#[test]
fn results_json_records_each_test_run_of_a_task() {
    let env = Env::new();
    in_work(&env, "check.sh", CHECK);
    let script = env.script_file(
        "script.toml",
        json!([
            { "text": "done" },
            { "text": "", "tool_calls": [{ "name": "shell", "arguments": { "command": "touch fixed.txt" } }] },
            { "text": "fixed" },
        ]),
    );
    let (out, results) = env.run_tasks(&format!(
        "[[agents]]\nid = \"offline\"\nprovider = \"scripted\"\n\n[[tasks]]\nid = \"t\"\nprompt = \"go\"\nscript = \"{}\"\ntest_command = \"sh check.sh\"\n",
        script.display()
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    crate::runner::assert_valid(&results);
    let tests = results["tasks"][0]["attempts"][0]["tests"]
        .as_array()
        .unwrap();
    assert_eq!(tests.len(), 2);
    assert_eq!(tests[0]["passed"], false);
    assert_eq!(tests[0]["framework"], "cargo");
    assert_eq!(tests[0]["failing_tests"], json!(["parser::works"]));
    assert_eq!(tests[1]["passed"], true);
}

/// Fields that change from run to run, blanked for the golden stream.
fn normalize(mut event: Value) -> Value {
    fn walk(v: &mut Value) {
        if let Value::Object(map) = v {
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "duration_ms"
                    | "time_to_first_token_ms"
                    | "session_id"
                    | "cwd"
                    | "snapshot"
                    | "usage" => *value = json!("*"),
                    // `exit code 0, 0.0s`: the time is the machine's.
                    "output" => {
                        if let Some(text) = value.as_str() {
                            let (status, rest) = text.split_once('\n').unwrap_or((text, ""));
                            let status = status.split(", ").next().unwrap_or(status);
                            *value = json!(format!("{status}, *s\n{rest}"));
                        }
                    }
                    _ => walk(value),
                }
            }
        }
    }
    walk(&mut event);
    event
}

#[test]
fn the_golden_event_stream_of_plan_step_tool_test_reflect_done() {
    let env = Env::new();
    in_work(&env, "check.sh", CHECK);
    user_config(
        &env,
        "[agent]\nenable_plan = true\nenable_reflect = true\ntest_command = \"sh check.sh\"\n",
    );
    let (out, events) = run_script(
        &env,
        json!([
            { "text": "1. Fix the parser\n2. Run the tests" },
            { "text": "", "tool_calls": [{ "name": "shell", "arguments": { "command": "echo looked" } }] },
            { "text": reflection("fair", false) },
            { "text": "Done, I think." },
            { "text": reflection("poor", false) },
            { "text": "", "tool_calls": [{ "name": "shell", "arguments": { "command": "touch fixed.txt" } }] },
            { "text": reflection("good", false) },
            { "text": "Fixed the parser." },
            { "text": reflection("good", false) },
        ]),
        &["--no-sandbox"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // The deltas are many and depend on how text is split: the golden
    // stream has the complete items.
    let lines: Vec<String> = events
        .into_iter()
        .filter(|e| e["type"] != "reflect.delta" && e["type"] != "item.updated")
        .map(|e| normalize(e).to_string())
        .collect();
    let actual = lines.join("\n") + "\n";
    crate::common::assert_golden("golden/strategies.jsonl", &actual);
}

#[test]
fn with_every_strategy_off_requests_are_byte_identical_to_before() {
    let env = Env::new();
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"echo hi"}"#,
    )]));
    server.enqueue(chat::text_response("done"));
    let (out, _) = run_mock(&env, &server);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let work = env.work().display().to_string();
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            // The parts of a request that depend on the machine.
            let mut body = r.body_json().clone();
            let text = body.to_string().replace(&work, "<WORK>");
            body = serde_json::from_str(&text).unwrap();
            strip_volatile(&mut body);
            serde_json::to_string_pretty(&body).unwrap()
        })
        .collect();
    let actual = bodies.join("\n---\n") + "\n";
    crate::common::assert_golden("golden/requests_strategies_off.txt", &actual);
}

/// Today's date, the time zone, the shell's tool output timing and
/// sandbox details: what differs between machines and runs.
fn strip_volatile(body: &mut Value) {
    if let Some(messages) = body["messages"].as_array_mut() {
        for m in messages {
            if let Some(content) = m["content"].as_str() {
                let kept: Vec<&str> = content
                    .lines()
                    .filter(|l| {
                        !(l.starts_with("Today's date:")
                            || l.starts_with("Time zone:")
                            || l.contains("<current_date>")
                            || l.contains("<timezone>")
                            || l.contains("Wall time")
                            || l.starts_with("exit code")
                            || l.contains("<shell>")
                            || l.contains("<sandbox"))
                    })
                    .collect();
                m["content"] = json!(kept.join("\n"));
            }
        }
    }
}
