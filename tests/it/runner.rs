//! `cogni run --tasks`, `cogni validate` and `cogni compare` as CI runs
//! them: the real binary with the scripted provider and the loopback mock,
//! exit codes, results.json against its documented schema, JUnit parsed
//! back, budgets stopping turns mid-way.

use crate::cli::Env;
use crate::common::entries;
use crate::common::mock::{chat, tool_names, MockResponse, MockServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const SCHEMA: &str = include_str!("../../docs/results.schema.json");

/// A workspace (`env.work()`) with a task file and scripts beside it.
pub(crate) struct Tasks {
    pub(crate) env: Env,
}

impl Tasks {
    pub(crate) fn new() -> Self {
        let env = Env::new();
        std::fs::create_dir_all(env.dir.path().join("scripts")).unwrap();
        Tasks { env }
    }

    /// Write `scripts/<name>.toml`.
    pub(crate) fn script(&self, name: &str, body: &str) -> &Self {
        self.env.write(&format!("scripts/{name}.toml"), body);
        self
    }

    pub(crate) fn file(&self, body: &str) -> PathBuf {
        self.env.write("tasks.toml", body)
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.env.dir.path().join("out")
    }

    /// `cogni run --tasks tasks.toml --output-dir out ARGS`.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.run_in(self.env.cmd(), args)
    }

    /// The same with the mock provider's key set.
    fn run_mock(&self) -> Output {
        let mut cmd = self.env.cmd();
        cmd.env("MOCK_KEY", "sk-mock");
        self.run_in(cmd, &[])
    }

    pub(crate) fn run_in(&self, mut cmd: assert_cmd::Command, args: &[&str]) -> Output {
        cmd.arg("run")
            .arg("--tasks")
            .arg(self.env.dir.path().join("tasks.toml"))
            .arg("--output-dir")
            .arg(self.out())
            .args(args);
        cmd.output().unwrap()
    }

    pub(crate) fn results(&self) -> Value {
        let text = std::fs::read_to_string(self.out().join("results.json")).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_valid(&value);
        value
    }
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub(crate) fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stderr:\n{}\nstdout:\n{}",
        stderr(out),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// results.json against docs/results.schema.json.
pub(crate) fn assert_valid(results: &Value) {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(results)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "results.json does not match its schema:\n{}",
        errors.join("\n")
    );
}

/// The attempts of task `id`.
fn attempts<'a>(results: &'a Value, id: &str) -> &'a Vec<Value> {
    results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id} in {results:#}"))["attempts"]
        .as_array()
        .unwrap()
}

pub(crate) const OFFLINE_AGENT: &str = r#"
[[agents]]
id = "offline"
provider = "scripted"
model = "scripted"
"#;

const WRITE_HELLO: &str = r#"
[[turns]]
text = "Writing."
usage = { input_tokens = 100, output_tokens = 10 }
[[turns.tool_calls]]
name = "shell"
arguments = { command = "printf hello > out.txt" }
[[turns]]
text = "Done: <answer>hello</answer>"
usage = { input_tokens = 120, output_tokens = 8 }
"#;

#[test]
fn a_passing_task_writes_valid_results_junit_and_a_report() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    std::fs::write(t.env.work().join("README.md"), "the repository").unwrap();
    t.file(&format!(
        r#"{OFFLINE_AGENT}
input_price = 1.0
output_price = 2.0

[[tasks]]
id = "hello"
prompt = "Create out.txt containing hello"
script = "scripts/hello.toml"
tags = ["smoke"]
setup = ["test -f README.md", "echo ready > setup.txt"]
budget = {{ max_tokens = 50000, max_seconds = 120, max_tool_calls = 20 }}
checks = [
  {{ command = "test \"$(cat out.txt)\" = hello && cat setup.txt" }},
  {{ file_exists = "out.txt" }},
  {{ file_matches = "out.txt", pattern = "^hel+o$" }},
  {{ answer_regex = "(?i)done" }},
  {{ answer_equals = " hello " }},
]
"#
    ));
    let out = t.run(&[]);
    assert_code(&out, 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        t.out().join("results.json").display().to_string()
    );
    let err = stderr(&out);
    assert!(err.contains("cogni: start hello@offline"), "{err}");
    assert!(err.contains("[1/1] PASS hello@offline"), "{err}");
    assert!(err.contains("1 passed of 1 attempt"), "{err}");

    let results = t.results();
    assert_eq!(results["summary"]["passed"], 1);
    assert_eq!(results["summary"]["pass_rate"], 1.0);
    assert_eq!(results["agents"][0]["price"]["input"], 1.0);
    let a = &attempts(&results, "hello")[0];
    assert_eq!(a["status"], "passed");
    assert_eq!(a["outcome"], "done");
    assert_eq!(a["tokens"]["input"], 220);
    assert_eq!(a["tokens"]["output"], 18);
    // 220 input tokens at $1/M and 18 output tokens at $2/M.
    let cost = a["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.000256).abs() < 1e-9, "{cost}");
    assert_eq!(a["steps"], 2);
    assert_eq!(a["model_requests"], 2);
    assert_eq!(a["tool_calls"]["shell"], 1);
    assert_eq!(a["final_answer"], "Done: <answer>hello</answer>");
    assert_eq!(a["checks"].as_array().unwrap().len(), 5);
    assert_eq!(a["checks"][0]["output_tail"], "ready\n");
    // The workspace was a copy: the repository is untouched, and the copy is gone.
    assert!(!t.env.work().join("out.txt").exists());
    assert!(!t.env.work().join("setup.txt").exists());

    let junit = std::fs::read_to_string(t.out().join("junit.xml")).unwrap();
    let doc = xml::parse(&junit);
    assert_eq!(doc.name, "testsuites");
    assert_eq!(doc.attr("tests"), "1");
    assert_eq!(doc.attr("failures"), "0");
    let cases = doc.find_all("testcase");
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].attr("name"), "hello");
    assert_eq!(cases[0].attr("classname"), "cogni.offline");
    assert!(cases[0].children.iter().all(|c| c.name != "failure"));

    let html = std::fs::read_to_string(t.out().join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg") && html.contains("<table>"));
    // Inline styles and script only: nothing loaded from elsewhere.
    for remote in ["src=", "<link", "@import", "url(", "href=\"http"] {
        assert!(
            !html.contains(remote),
            "the report must be self-contained: {remote}"
        );
    }
    assert!(html.contains("<details id=\"a0\" class=\"attempt st-passed\" data-t=\"0\">"));
    assert!(t.out().join("transcripts.jsonl").is_file());
}

#[test]
fn a_failing_check_fails_the_task_with_its_output() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    t.file(&format!(
        r#"{OFFLINE_AGENT}
[[tasks]]
id = "wrong"
prompt = "Create out.txt containing bye"
script = "scripts/hello.toml"
checks = [
  {{ command = "echo checking; test \"$(cat out.txt)\" = bye" }},
  {{ file_exists = "out.txt" }},
  {{ answer_schema = {{ type = "object" }} }},
]
"#
    ));
    let out = t.run(&[]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("FAIL wrong@offline"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("check_failed: 2 of 3 checks failed"),
        "{}",
        stderr(&out)
    );
    let results = t.results();
    let a = &attempts(&results, "wrong")[0];
    assert_eq!(a["status"], "failed");
    assert_eq!(a["failure_reason"], "check_failed");
    let checks = a["checks"].as_array().unwrap();
    let passed: Vec<bool> = checks
        .iter()
        .map(|c| c["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(passed, [false, true, false]);
    let tail = checks[0]["output_tail"].as_str().unwrap();
    assert!(
        tail.contains("checking") && tail.contains("exit code 1"),
        "{tail}"
    );
    assert!(checks[2]["output_tail"]
        .as_str()
        .unwrap()
        .contains("not JSON"));

    let junit = std::fs::read_to_string(t.out().join("junit.xml")).unwrap();
    let doc = xml::parse(&junit);
    assert_eq!(doc.attr("failures"), "1");
    let failure = doc.find_all("failure");
    assert_eq!(failure.len(), 1);
    assert_eq!(failure[0].attr("type"), "check_failed");
    assert!(
        failure[0].text.contains("FAILED command"),
        "{}",
        failure[0].text
    );
    assert!(failure[0].text.contains("checking"), "{}", failure[0].text);
}

/// A turn that calls a tool which must never run (the budget trips first).
fn tool_turn(tokens: u64, marker: &str) -> String {
    format!(
        "[[turns]]\nusage = {{ input_tokens = {tokens}, output_tokens = 10 }}\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"touch {marker}\" }}\n"
    )
}

#[test]
fn each_budget_stops_the_turn_mid_way_and_exits_4() {
    let t = Tasks::new();
    let marker_dir = t.env.dir.path().join("markers");
    std::fs::create_dir_all(&marker_dir).unwrap();
    let m = |name: &str| marker_dir.join(name).display().to_string();
    // tokens: the first response alone uses the budget up; its call never runs.
    t.script(
        "tokens",
        &(tool_turn(600, &m("tokens")) + "[[turns]]\ntext = \"never\"\n"),
    );
    // cost: 600 input tokens at $1000/M are $0.6, over $0.5.
    t.script(
        "cost",
        &(tool_turn(600, &m("cost")) + "[[turns]]\ntext = \"never\"\n"),
    );
    // steps: two requests are allowed; the third is never made.
    t.script(
        "steps",
        &(tool_turn(10, &m("steps1"))
            + &tool_turn(10, &m("steps2"))
            + "[[turns]]\ntext = \"never\"\n"),
    );
    // tool calls: one of the two calls runs.
    t.script(
        "tools",
        &format!(
            "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"touch {}\" }}\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"touch {}\" }}\n[[turns]]\ntext = \"never\"\n",
            m("tools1"),
            m("tools2")
        ),
    );
    // seconds: the command is killed when the time is up.
    t.script(
        "seconds",
        &format!(
            "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"sleep 30; touch {}\" }}\n[[turns]]\ntext = \"never\"\n",
            m("seconds")
        ),
    );
    t.file(&format!(
        r#"{OFFLINE_AGENT}
input_price = 1000.0
output_price = 1000.0
# The markers are outside the workspace, where the sandbox would refuse them.
sandbox = "danger-full-access"

[[tasks]]
id = "tokens"
prompt = "x"
script = "scripts/tokens.toml"
budget = {{ max_tokens = 500 }}
checks = [{{ command = "false" }}]

[[tasks]]
id = "cost"
prompt = "x"
script = "scripts/cost.toml"
budget = {{ max_cost_usd = 0.5 }}

[[tasks]]
id = "steps"
prompt = "x"
script = "scripts/steps.toml"
budget = {{ max_steps = 2 }}

[[tasks]]
id = "tools"
prompt = "x"
script = "scripts/tools.toml"
budget = {{ max_tool_calls = 1 }}

[[tasks]]
id = "seconds"
prompt = "x"
script = "scripts/seconds.toml"
budget = {{ max_seconds = 0.5 }}
"#
    ));
    let started = Instant::now();
    let out = t.run(&["--jobs", "5"]);
    assert_code(&out, 4);
    assert!(started.elapsed() < Duration::from_secs(20));
    let results = t.results();
    assert_eq!(results["summary"]["budget_exceeded"], 5);
    let expect = [
        ("tokens", "tokens", 1, 0),
        ("cost", "cost", 1, 0),
        ("steps", "steps", 2, 2),
        ("tools", "tool_calls", 1, 1),
        ("seconds", "seconds", 1, 0),
    ];
    for (id, limit, steps, shell_calls) in expect {
        let a = &attempts(&results, id)[0];
        assert_eq!(a["status"], "budget_exceeded", "{id}: {a:#}");
        assert_eq!(a["failure_reason"], "budget_exceeded", "{id}");
        assert_eq!(a["limit"], limit, "{id}");
        assert_eq!(a["outcome"], "budget_exceeded", "{id}");
        assert_eq!(a["steps"], steps, "{id}");
        assert_eq!(
            a["tool_calls"]["shell"].as_u64().unwrap_or(0),
            shell_calls,
            "{id}: {a:#}"
        );
        // Checks do not run after a budget stop.
        assert_eq!(a["checks"].as_array().unwrap().len(), 0, "{id}");
    }
    let secs = &attempts(&results, "seconds")[0];
    assert!(secs["agent_ms"].as_u64().unwrap() < 5000, "{secs:#}");
    assert_eq!(entries(&marker_dir), ["steps1", "steps2", "tools1"]);
    let err = stderr(&out);
    assert!(err.contains("BUDGET tokens@offline"), "{err}");
    assert!(err.contains("token budget is used up"), "{err}");
    let junit = xml::parse(&std::fs::read_to_string(t.out().join("junit.xml")).unwrap());
    assert_eq!(junit.attr("failures"), "5");
    assert!(junit
        .find_all("failure")
        .iter()
        .all(|f| f.attr("type") == "budget_exceeded"));
}

/// A workspace whose user config declares the `mock` provider at `server`
/// (a repository's own cogni.toml may not redirect traffic until trusted).
fn mock_tasks(server: &MockServer) -> Tasks {
    let t = Tasks::new();
    std::fs::write(
        t.env.dir.path().join("home/config.toml"),
        format!(
            "[model_providers.mock]\nbase_url = \"{}\"\nenv_key = \"MOCK_KEY\"\nretry_base_ms = 10\n",
            server.base_url()
        ),
    )
    .unwrap();
    t
}

#[test]
fn against_the_mock_a_task_passes_and_catalog_prices_bound_the_cost() {
    let server = MockServer::start();
    server.enqueue(chat::tool_calls_response(&[(
        "call_1",
        "shell",
        r#"{"command":"echo hello > out.txt"}"#,
    )]));
    server.enqueue(chat::text_response("done"));
    // gpt-4.1 costs $2 per million input tokens: 100,000 tokens are $0.20.
    server.enqueue(MockResponse::sse([
        chat::role(),
        chat::tool_call(0, "call_9", "shell", r#"{"command":"touch never.txt"}"#),
        chat::finish("tool_calls"),
        chat::usage(100_000, 10, 0),
        chat::done(),
    ]));
    // A stream that stalls: the time budget stops it mid-response.
    server.enqueue(MockResponse::sse([chat::role(), chat::text("thinking")]).stall_forever());
    let t = mock_tasks(&server);
    t.file(
        r#"
[[agents]]
id = "mock"
provider = "mock"
model = "gpt-4.1"

[[tasks]]
id = "hello"
prompt = "write hello"
checks = [{ command = "grep -q hello out.txt" }, { answer_equals = "done" }]

[[tasks]]
id = "pricey"
prompt = "spend"
budget = { max_cost_usd = 0.1 }

[[tasks]]
id = "stalled"
prompt = "wait"
budget = { max_seconds = 0.5 }
"#,
    );
    let out = t.run_mock();
    assert_code(&out, 4);
    let results = t.results();
    assert_eq!(results["agents"][0]["model"], "gpt-4.1");
    assert_eq!(results["agents"][0]["price"]["input"], 2.0);
    let hello = &attempts(&results, "hello")[0];
    assert_eq!(hello["status"], "passed", "{hello:#}");
    let pricey = &attempts(&results, "pricey")[0];
    assert_eq!(pricey["limit"], "cost", "{pricey:#}");
    assert!(pricey["cost_usd"].as_f64().unwrap() > 0.1);
    assert_eq!(pricey["tool_calls"], serde_json::json!({}));
    let stalled = &attempts(&results, "stalled")[0];
    assert_eq!(stalled["limit"], "seconds", "{stalled:#}");
    assert_eq!(server.request_count(), 4);
    server.assert_invariants();
}

#[test]
fn concurrent_tasks_work_in_their_own_workspaces() {
    let t = Tasks::new();
    std::fs::write(t.env.work().join("shared.txt"), "original\n").unwrap();
    let mut file = String::from(OFFLINE_AGENT);
    for i in 0..4 {
        // Each task writes its own marker, overwrites the shared file, waits
        // for the others to be busy too, then checks its copy saw none of them.
        t.script(
            &format!("t{i}"),
            &format!(
                "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"touch mine-{i}; echo {i} > shared.txt; sleep 0.3\" }}\n[[turns]]\ntext = \"done {i}\"\n"
            ),
        );
        file.push_str(&format!(
            r#"
[[tasks]]
id = "t{i}"
prompt = "x"
script = "scripts/t{i}.toml"
checks = [{{ command = "test \"$(ls mine-*)\" = mine-{i} && test \"$(cat shared.txt)\" = {i}" }}]
"#
        ));
    }
    t.file(&file);
    let started = Instant::now();
    let out = t.run(&["-j", "4"]);
    assert_code(&out, 0);
    // Four 0.3 s attempts at once take well under 4 × 0.3 s.
    assert!(started.elapsed() < Duration::from_secs(10));
    let results = t.results();
    assert_eq!(results["summary"]["passed"], 4);
    assert_eq!(results["settings"]["jobs"], 4);
    assert_eq!(
        std::fs::read_to_string(t.env.work().join("shared.txt")).unwrap(),
        "original\n"
    );
    let left = entries(&t.env.work());
    assert_eq!(left.len(), 1, "the repository gained files: {left:?}");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn worktree_and_in_place_workspaces() {
    let t = Tasks::new();
    let repo = t.env.work();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("tracked.txt"), "committed\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);
    // Uncommitted changes are not in a worktree of HEAD.
    std::fs::write(repo.join("tracked.txt"), "edited\n").unwrap();
    t.script(
        "touch",
        "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = { command = \"echo agent > agent.txt\" }\n[[turns]]\ntext = \"ok\"\n",
    );
    t.file(&format!(
        r#"{OFFLINE_AGENT}
[[tasks]]
id = "tree"
prompt = "x"
script = "scripts/touch.toml"
workspace = "worktree"
repeat = 2
checks = [{{ command = "test \"$(cat tracked.txt)\" = committed && test -f agent.txt" }}]

[[tasks]]
id = "here"
prompt = "x"
script = "scripts/touch.toml"
workspace = "in_place"
checks = [{{ command = "test \"$(cat tracked.txt)\" = edited" }}]
"#
    ));
    let out = t.run(&["-j", "3"]);
    assert_code(&out, 0);
    let results = t.results();
    assert_eq!(results["summary"]["passed"], 3);
    let repository = &results["repository"];
    assert_eq!(repository["branch"], "main");
    assert_eq!(repository["dirty"], true);
    assert_eq!(repository["commit"].as_str().unwrap().len(), 40);
    // The in-place task wrote into the repository; the worktrees are gone.
    assert!(repo.join("agent.txt").exists());
    let worktrees = git(&repo, &["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
}

#[test]
fn repeat_counts_and_the_repeat_flag() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    t.file(&format!(
        r#"{OFFLINE_AGENT}
[[tasks]]
id = "twice"
prompt = "x"
script = "scripts/hello.toml"
repeat = 2
checks = [{{ file_exists = "out.txt" }}]

[[tasks]]
id = "once"
prompt = "x"
script = "scripts/hello.toml"
"#
    ));
    let out = t.run(&["-j", "2"]);
    assert_code(&out, 0);
    let results = t.results();
    assert_eq!(attempts(&results, "twice").len(), 2);
    assert_eq!(attempts(&results, "once").len(), 1);
    assert_eq!(results["summary"]["attempts"], 3);
    assert!(
        stderr(&out).contains("twice@offline #2/2"),
        "{}",
        stderr(&out)
    );

    let out = t.run(&["--repeat", "3", "twice"]);
    assert_code(&out, 0);
    let results = t.results();
    let numbers: Vec<u64> = attempts(&results, "twice")
        .iter()
        .map(|a| a["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(results["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(results["settings"]["repeat"], 3);
    let junit = xml::parse(&std::fs::read_to_string(t.out().join("junit.xml")).unwrap());
    let names: Vec<&str> = junit
        .find_all("testcase")
        .iter()
        .map(|c| c.attr("name"))
        .collect();
    assert_eq!(names, ["twice #1", "twice #2", "twice #3"]);
}

#[test]
fn selectors_choose_tasks_and_agents() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    t.file(
        r#"
[[agents]]
id = "a"
provider = "scripted"
script = "scripts/hello.toml"
[[agents]]
id = "b"
provider = "scripted"
script = "scripts/hello.toml"
max_steps = 5

[[tasks]]
id = "one"
agent = "a"
prompt = "x"
tags = ["smoke"]
[[tasks]]
id = "two"
agent = "a"
prompt = "x"
[[tasks]]
id = "three"
agent = "b"
prompt = "x"
tags = ["smoke"]
"#,
    );
    let ran = |args: &[&str]| -> Vec<String> {
        let out = t.run(args);
        assert_code(&out, 0);
        t.results()["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{}@{}",
                    t["id"].as_str().unwrap(),
                    t["agent"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(ran(&[]), ["one@a", "two@a", "three@b"]);
    assert_eq!(ran(&["tag:smoke"]), ["one@a", "three@b"]);
    assert_eq!(ran(&["two", "one@b"]), ["two@a", "one@b"]);
    assert_eq!(
        ran(&["--agent", "b", "two", "three@a"]),
        ["two@b", "three@a"]
    );

    for (args, needle) in [
        (&["nope"][..], "unknown task `nope`"),
        (&["one@ghost"][..], "unknown agent `ghost`"),
        (&["tag:none"][..], "no task has the tag `none`"),
        (&["--agent", "ghost"][..], "--agent: unknown agent `ghost`"),
    ] {
        let out = t.run(args);
        assert_code(&out, 2);
        assert!(stderr(&out).contains(needle), "{needle}: {}", stderr(&out));
    }
    // Selectors need --tasks.
    let out = t.env.cmd().args(["run", "one", "two"]).output().unwrap();
    assert_code(&out, 2);
}

#[test]
fn invalid_task_files_list_every_problem_by_path_and_exit_2() {
    let t = Tasks::new();
    let path = t.file(
        r#"
[[agents]]
id = "a"
provider = "scripted"
tempreature = 0.5

[[tasks]]
id = "one"
agent = "b"
prompt_file = "missing.md"
budget = { max_tokens = 0 }
checks = [{ answer_regex = "(" }, { answer_schema = { type = "nope" } }, { command = "x", file_exists = "y" }]
"#,
    );
    let expected = [
        "agents[0].tempreature: unknown key",
        "tasks[0].agent: unknown agent `b`",
        "tasks[0].prompt_file: cannot read",
        "tasks[0].budget.max_tokens: must be greater than 0",
        "tasks[0].checks[0].answer_regex: invalid regex",
        "tasks[0].checks[1].answer_schema: not a valid JSON Schema",
        "tasks[0].checks[2]: a check needs exactly one of",
    ];
    let out = t.env.cmd().arg("validate").arg(&path).output().unwrap();
    assert_code(&out, 2);
    let err = stderr(&out);
    for needle in expected {
        assert!(
            err.contains(&format!("{}:{needle}", path.display())),
            "{needle} missing:\n{err}"
        );
    }
    assert!(err.contains("7 problems in"), "{err}");
    let out = t.run(&[]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("tasks[0].prompt_file"),
        "{}",
        stderr(&out)
    );
    assert!(!t.out().exists(), "nothing ran");

    let out = t
        .env
        .cmd()
        .arg("validate")
        .arg("/nonexistent/tasks.toml")
        .output()
        .unwrap();
    assert_code(&out, 2);
    std::fs::write(&path, "[[tasks]]\nid = \"a\"\nprompt = \n").unwrap();
    let out = t.env.cmd().arg("validate").arg(&path).output().unwrap();
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains(&format!("{}:3:", path.display())),
        "{}",
        stderr(&out)
    );

    // Valid files say so, and what they hold.
    t.script("hello", WRITE_HELLO);
    t.file(&format!(
        "{OFFLINE_AGENT}\n[[tasks]]\nid = \"a\"\nprompt = \"x\"\nscript = \"scripts/hello.toml\"\nrepeat = 3\n"
    ));
    let out = t.env.cmd().arg("validate").arg(&path).output().unwrap();
    assert_code(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok (1 agent, 1 task, 3 attempts)"));
}

#[test]
fn problems_with_agents_are_found_before_anything_runs() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    // A cost budget on a model without a price.
    std::fs::write(
        t.env.dir.path().join("home/config.toml"),
        "[model_providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\ndefault_family = \"generic\"\n",
    )
    .unwrap();
    t.file(
        r#"
[[agents]]
id = "local"
provider = "local"
model = "my-model"
[[tasks]]
id = "a"
prompt = "x"
budget = { max_cost_usd = 1.0 }
"#,
    );
    let out = t.run(&[]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("task `a` with agent `local`: invalid config: a cost budget needs the price of `my-model`"),
        "{}",
        stderr(&out)
    );
    // An unknown provider.
    t.file("[[agents]]\nid = \"x\"\nprovider = \"nope\"\n[[tasks]]\nid = \"a\"\nprompt = \"x\"\n");
    let out = t.run(&[]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("agent `x`: unknown provider `nope`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn fail_fast_skips_what_has_not_started() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    let mut file = String::from(OFFLINE_AGENT);
    for (id, check) in [("bad", "false"), ("good1", "true"), ("good2", "true")] {
        file.push_str(&format!(
            "[[tasks]]\nid = \"{id}\"\nprompt = \"x\"\nscript = \"scripts/hello.toml\"\nchecks = [{{ command = \"{check}\" }}]\n"
        ));
    }
    t.file(&file);
    let out = t.run(&["--fail-fast"]);
    assert_code(&out, 1);
    let results = t.results();
    assert_eq!(results["summary"]["failed"], 1);
    assert_eq!(results["summary"]["skipped"], 2);
    assert_eq!(attempts(&results, "good2")[0]["status"], "skipped");
    let junit = xml::parse(&std::fs::read_to_string(t.out().join("junit.xml")).unwrap());
    assert_eq!(junit.attr("skipped"), "2");
    assert_eq!(junit.find_all("skipped").len(), 2);
}

#[test]
fn compare_shows_changes_and_fails_on_regressions() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    let file = |check: &str| {
        format!(
            "{OFFLINE_AGENT}\n[[tasks]]\nid = \"steady\"\nprompt = \"x\"\nscript = \"scripts/hello.toml\"\n[[tasks]]\nid = \"flaky\"\nprompt = \"x\"\nscript = \"scripts/hello.toml\"\nchecks = [{{ command = \"{check}\" }}]\n"
        )
    };
    let run_to = |name: &str, check: &str| -> PathBuf {
        t.file(&file(check));
        let dir = t.env.dir.path().join(name);
        let out = t
            .env
            .cmd()
            .arg("run")
            .arg("--tasks")
            .arg(t.env.dir.path().join("tasks.toml"))
            .arg("--output-dir")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.code() == Some(0) || out.status.code() == Some(1));
        dir
    };
    let good = run_to("good", "true");
    let bad = run_to("bad", "false");
    let compare = |a: &Path, b: &Path| t.env.cmd().arg("compare").arg(a).arg(b).output().unwrap();

    let out = compare(&good, &bad.join("results.json"));
    assert_code(&out, 1);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let header = table.lines().next().unwrap();
    for column in ["task", "A", "B", "change", "tokens Δ", "cost Δ", "time Δ"] {
        assert!(header.contains(column), "{table}");
    }
    let flaky = table
        .lines()
        .find(|l| l.starts_with("flaky@offline"))
        .unwrap();
    assert!(
        flaky.contains("1/1") && flaky.contains("0/1") && flaky.contains("REGRESSED"),
        "{table}"
    );
    let steady = table
        .lines()
        .find(|l| l.starts_with("steady@offline"))
        .unwrap();
    assert!(steady.contains("+0 (+0.0%)"), "{table}");
    assert!(
        table.ends_with("2 tasks compared: 1 regressed, 0 fixed\n"),
        "{table}"
    );

    let out = compare(&bad, &good);
    assert_code(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("fixed"));

    let out = compare(&good, Path::new("/nonexistent"));
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("cannot read /nonexistent"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_example_task_file_runs_offline_and_passes() {
    let t = Tasks::new();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tasks.toml");
    let out = t.env.cmd().arg("validate").arg(&example).output().unwrap();
    assert_code(&out, 0);
    let mut cmd = t.env.cmd();
    let out = cmd
        .args(["run", "-j", "4", "--tasks"])
        .arg(&example)
        .arg("--output-dir")
        .arg(t.out())
        .output()
        .unwrap();
    assert_code(&out, 0);
    let results = t.results();
    assert_eq!(results["summary"]["passed"], 5, "{results:#}");
    let fix = &attempts(&results, "fix-add")[0];
    assert_eq!(fix["files_read"], serde_json::json!(["add.sh"]));
    assert_eq!(fix["files_written"], serde_json::json!(["add.sh"]));
    // The fixture itself is untouched.
    let add =
        std::fs::read_to_string(example.parent().unwrap().join("tasks/fixture/add.sh")).unwrap();
    assert!(add.contains("$1 - $2"));
}

#[test]
fn results_go_under_cogni_results_by_default() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    t.file(&format!(
        "{OFFLINE_AGENT}\n[[tasks]]\nid = \"a\"\nprompt = \"x\"\nscript = \"scripts/hello.toml\"\n"
    ));
    let out = t
        .env
        .cmd()
        .arg("run")
        .arg("--tasks")
        .arg(t.env.dir.path().join("tasks.toml"))
        .output()
        .unwrap();
    assert_code(&out, 0);
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_valid(&results);
    let run_dir = t
        .env
        .work()
        .join(".cogni/results/no-commit")
        .join(results["run_id"].as_str().unwrap());
    assert_eq!(path, run_dir.join("results.json"));
    assert!(run_dir.join("junit.xml").is_file() && run_dir.join("report.html").is_file());
}

/// `cogni run --tasks` (the task file written) started in the background
/// and sent `signal` once `started` exists; returns its exit status.
fn signal_tasks_once(t: &Tasks, started: &Path, signal: i32) -> std::process::ExitStatus {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("cogni"))
        .current_dir(t.env.work())
        .env("COGNI_HOME", t.env.dir.path().join("home"))
        .arg("run")
        .arg("--tasks")
        .arg(t.env.dir.path().join("tasks.toml"))
        .arg("--output-dir")
        .arg(t.out())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the task never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    child.wait().unwrap()
}

/// `cogni run --tasks` with a task that sleeps, sent `signal` once it runs.
fn interrupt_tasks(signal: i32, code: i32) {
    let t = Tasks::new();
    let pid_file = t.env.dir.path().join("sleeper.pid");
    t.script(
        "sleep",
        &format!(
            "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"echo $$ > {}; exec sleep 30\" }}\n",
            pid_file.display()
        ),
    );
    t.file(&format!(
        "{OFFLINE_AGENT}sandbox = \"danger-full-access\" # the pid file is outside the workspace\n[[tasks]]\nid = \"slow\"\nprompt = \"x\"\nscript = \"scripts/sleep.toml\"\n[[tasks]]\nid = \"later\"\nprompt = \"x\"\nscript = \"scripts/sleep.toml\"\n"
    ));
    let status = signal_tasks_once(&t, &pid_file, signal);
    assert_eq!(status.code(), Some(code), "signal {signal}");
    let results = t.results();
    let slow = &attempts(&results, "slow")[0];
    assert_eq!(slow["status"], "error");
    assert_eq!(slow["failure_reason"], "interrupted");
    assert_eq!(attempts(&results, "later")[0]["status"], "skipped");
    assert!(t.out().join("junit.xml").is_file() && t.out().join("report.html").is_file());
}

#[test]
fn an_interrupted_run_stops_its_tasks_and_still_writes_results() {
    interrupt_tasks(libc::SIGINT, 130);
}

#[test]
fn a_signal_during_a_setup_command_stops_it_at_once() {
    let t = Tasks::new();
    let marker = t.env.dir.path().join("setup.started");
    t.script("answer", "[[turns]]\ntext = \"never asked\"\n");
    t.file(&format!(
        "{OFFLINE_AGENT}[[tasks]]\nid = \"slow-setup\"\nprompt = \"x\"\nscript = \"scripts/answer.toml\"\nsetup = [\"echo > {}; exec sleep 60.4242\"]\n",
        marker.display()
    ));
    let started = Instant::now();
    let status = signal_tasks_once(&t, &marker, libc::SIGTERM);
    assert_eq!(status.code(), Some(143));
    // Not after the setup's 60 s.
    assert!(started.elapsed() < Duration::from_secs(30));
    let results = t.results();
    let attempt = &attempts(&results, "slow-setup")[0];
    assert_eq!(attempt["failure_reason"], "interrupted");
    assert!(
        attempt["error"].as_str().unwrap().contains("during setup"),
        "{attempt}"
    );
    // Its process group was killed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !crate::common::pids_running("sleep\x0060.4242").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the setup command outlived the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_ci_cancellation_by_sigterm_or_sighup_still_writes_results() {
    interrupt_tasks(libc::SIGTERM, 143);
    interrupt_tasks(libc::SIGHUP, 129);
}

#[test]
fn on_a_terminal_each_running_task_has_a_live_line() {
    use std::io::Read;
    let t = Tasks::new();
    t.script(
        "slow",
        "[[turns]]\nusage = { input_tokens = 1200, output_tokens = 30 }\n[[turns.tool_calls]]\nname = \"shell\"\narguments = { command = \"sleep 0.6\" }\n[[turns]]\ntext = \"done\"\n",
    );
    t.file(&format!(
        "{OFFLINE_AGENT}\n[[tasks]]\nid = \"one\"\nprompt = \"x\"\nscript = \"scripts/slow.toml\"\n[[tasks]]\nid = \"two\"\nprompt = \"x\"\nscript = \"scripts/slow.toml\"\n"
    ));
    let (mut master, slave) = crate::approval_tty::openpty();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("cogni"))
        .current_dir(t.env.work())
        .env("COGNI_HOME", t.env.dir.path().join("home"))
        .env("NO_COLOR", "1")
        .args(["run", "-j", "2", "--tasks"])
        .arg(t.env.dir.path().join("tasks.toml"))
        .arg("--output-dir")
        .arg(t.out())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::from(slave))
        .spawn()
        .unwrap();
    // Read the terminal while cogni runs, so it never blocks on a full pty.
    let reader = std::thread::spawn(move || {
        let mut screen = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child has closed the terminal.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            screen.extend_from_slice(&buf[..n]);
        }
        screen
    });
    let out = child.wait_with_output().unwrap();
    let screen = reader.join().unwrap();
    let screen = String::from_utf8_lossy(&screen).into_owned();
    assert_code(&out, 0);
    // While the command runs, both tasks have a line: spinner, phase, elapsed, tokens, steps.
    let live = |id: &str| {
        screen.lines().any(|l| {
            l.contains(&format!("{id}@offline  agent  ")) && l.contains("1,230 tokens  1 steps")
        })
    };
    assert!(live("one") && live("two"), "{screen:?}");
    assert!(
        screen.contains("\x1b[2A"),
        "the live block is redrawn in place: {screen:?}"
    );
    assert!(screen.contains("PASS one@offline") && screen.contains("PASS two@offline"));
    assert!(
        !screen.contains("cogni: start"),
        "no plain start lines on a terminal"
    );
    assert!(!screen.contains("\x1b[32m"), "NO_COLOR is honoured");
}

/// A minimal XML reader for checking JUnit output: elements, attributes,
/// text, the five predefined entities; panics on anything malformed.
mod xml {
    #[derive(Debug, Default)]
    pub struct Element {
        pub name: String,
        pub attrs: Vec<(String, String)>,
        pub children: Vec<Element>,
        pub text: String,
    }

    impl Element {
        pub fn attr(&self, name: &str) -> &str {
            self.attrs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("<{}> has no {name}", self.name))
        }

        pub fn find_all(&self, name: &str) -> Vec<&Element> {
            let mut out = Vec::new();
            for child in &self.children {
                if child.name == name {
                    out.push(child);
                }
                out.extend(child.find_all(name));
            }
            out
        }
    }

    pub fn parse(text: &str) -> Element {
        let mut rest = text.trim_start();
        if rest.starts_with("<?xml") {
            rest = &rest[rest.find("?>").unwrap() + 2..];
        }
        let (root, rest) = element(rest.trim_start());
        assert!(rest.trim().is_empty(), "content after the root: {rest:?}");
        root
    }

    fn unescape(s: &str) -> String {
        assert!(!s.contains('<'), "raw < in text: {s:?}");
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&")
    }

    fn element(s: &str) -> (Element, &str) {
        let s = s.strip_prefix('<').expect("an element starts with <");
        let end = s.find('>').unwrap();
        let (head, mut rest) = (&s[..end], &s[end + 1..]);
        let self_closing = head.ends_with('/');
        let head = head.trim_end_matches('/');
        let name_end = head.find(char::is_whitespace).unwrap_or(head.len());
        let mut e = Element {
            name: head[..name_end].to_string(),
            ..Element::default()
        };
        let mut attrs = head[name_end..].trim();
        while !attrs.is_empty() {
            let eq = attrs.find("=\"").unwrap();
            let key = attrs[..eq].trim().to_string();
            let value_end = attrs[eq + 2..].find('"').unwrap();
            e.attrs
                .push((key, unescape(&attrs[eq + 2..eq + 2 + value_end])));
            attrs = attrs[eq + 2 + value_end + 1..].trim();
        }
        if self_closing {
            return (e, rest);
        }
        loop {
            let next = rest.find('<').unwrap();
            e.text.push_str(&unescape(&rest[..next]));
            rest = &rest[next..];
            if let Some(after) = rest.strip_prefix("</") {
                let close = after.find('>').unwrap();
                assert_eq!(&after[..close], e.name, "mismatched closing tag");
                return (e, &after[close + 1..]);
            }
            let (child, after) = element(rest);
            e.children.push(child);
            rest = after;
        }
    }
}

#[test]
fn the_agent_in_a_task_is_sandboxed_but_setup_and_checks_are_not() {
    let t = Tasks::new();
    let outside = t.env.dir.path().join("outside.txt");
    let by_check = t.env.dir.path().join("by-check.txt");
    t.script(
        "escape",
        &format!(
            "[[turns]]\n[[turns.tool_calls]]\nname = \"shell\"\narguments = {{ command = \"touch {}\" }}\n[[turns]]\ntext = \"tried\"\n",
            outside.display()
        ),
    );
    t.file(&format!(
        "{OFFLINE_AGENT}\n[[tasks]]\nid = \"escape\"\nprompt = \"x\"\nscript = \"scripts/escape.toml\"\nchecks = [{{ command = \"touch {}\" }}]\n",
        by_check.display()
    ));
    let out = t.run(&[]);
    assert_code(&out, 0);
    assert!(!outside.exists(), "the agent wrote outside its workspace");
    assert!(
        by_check.exists(),
        "the task file's own check is not the agent's"
    );
}

#[test]
fn an_agent_card_gives_the_model_instructions_tools_and_mode() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("reviewed"));
    let t = mock_tasks(&server);
    t.env.write(
        "reviewer.md",
        "+++\nmodel = \"gpt-4o-mini\"\ntools = [\"read_file\", \"grep\"]\nmode = \"plan\"\n+++\nReview the code; never edit.\n",
    );
    t.file(
        r#"
[[agents]]
id = "reviewer"
provider = "mock"
card = "reviewer.md"
instructions = "Be brief."

[[tasks]]
id = "review"
prompt = "review"
checks = [{ answer_equals = "reviewed" }]
"#,
    );
    let out = t.run_mock();
    assert_code(&out, 0);
    let request = server.last_request().unwrap();
    let body = request.body_json();
    assert_eq!(body["model"], "gpt-4o-mini");
    let text = request.body_text();
    assert!(text.contains("Be brief.") && text.contains("Review the code; never edit."));
    assert_eq!(tool_names(body), ["read_file", "grep"]);
    let results = t.results();
    assert_eq!(results["agents"][0]["sandbox"], "read-only", "{results:#}");
}

#[test]
fn copies_go_under_tmpdir_and_are_gone_after_the_run() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    let tmp = t.env.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let where_file = t.env.dir.path().join("where.txt");
    t.file(&format!(
        "{OFFLINE_AGENT}\n[[tasks]]\nid = \"a\"\nprompt = \"x\"\nscript = \"scripts/hello.toml\"\nrepeat = 2\nchecks = [{{ command = \"pwd >> {}\" }}]\n",
        where_file.display()
    ));
    let mut cmd = t.env.cmd();
    cmd.env("TMPDIR", &tmp);
    let out = t.run_in(cmd, &[]);
    assert_code(&out, 0);
    let places = std::fs::read_to_string(&where_file).unwrap();
    assert_eq!(places.lines().count(), 2, "{places}");
    assert!(
        places.lines().all(|l| l.starts_with(tmp.to_str().unwrap())),
        "{places}"
    );
    assert_eq!(entries(&tmp), Vec::<String>::new(), "removed after the run");
}

#[test]
fn each_attempt_ends_its_session_with_the_session_end_hooks() {
    let t = Tasks::new();
    t.script("hello", WRITE_HELLO);
    let log = t.env.dir.path().join("ends.log");
    std::fs::write(
        t.env.dir.path().join("home/config.toml"),
        format!(
            "[[hooks.SessionEnd]]\ncommand = \"grep -o '\\\"reason\\\":\\\"[a-z]*\\\"' >> {}\"\n",
            log.display()
        ),
    )
    .unwrap();
    t.file(&format!(
        r#"{OFFLINE_AGENT}
[[tasks]]
id = "hello"
prompt = "Create out.txt containing hello"
script = "scripts/hello.toml"
repeat = 2
"#
    ));
    let out = t.run(&[]);
    assert_code(&out, 0);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "\"reason\":\"done\"\n\"reason\":\"done\"\n"
    );
}

#[test]
fn task_runs_attach_context_within_max_context_bytes_and_with_auto_context() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("done"));
    server.enqueue(chat::text_response("done"));
    let t = mock_tasks(&server);
    let work = t.env.work();
    std::fs::write(work.join("notes.txt"), "n".repeat(10_000)).unwrap();
    std::fs::write(work.join("README.md"), "the readme says hello\n").unwrap();
    t.file(
        r#"
[[agents]]
id = "mock"
provider = "mock"
model = "gpt-4.1"
max_context_bytes = 2000

[[tasks]]
id = "given"
prompt = "read the notes"
context_paths = ["notes.txt"]

[[tasks]]
id = "auto"
prompt = "summarise README.md"
auto_context = true
"#,
    );
    let out = t.run_mock();
    assert_code(&out, 0);
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let given = bodies
        .iter()
        .find(|b| b.contains("read the notes"))
        .unwrap();
    assert!(given.contains(&"n".repeat(1000)), "the notes are attached");
    assert!(
        !given.contains(&"n".repeat(2500)),
        "within the agent's max_context_bytes, not the 64 KiB default"
    );
    let auto = bodies
        .iter()
        .find(|b| b.contains("summarise README.md"))
        .unwrap();
    assert!(
        auto.contains("the readme says hello"),
        "auto_context attaches the file the task names"
    );
}

#[test]
fn a_tasks_images_reach_the_model_and_a_missing_one_fails_the_setup() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("a square"));
    let t = mock_tasks(&server);
    let work = t.env.work();
    let shot = crate::common::images::png(20, 10);
    std::fs::write(work.join("shot.png"), &shot).unwrap();
    t.file(
        r#"
[[agents]]
id = "mock"
provider = "mock"
model = "gpt-4.1"

[[tasks]]
id = "look"
prompt = "what is in the screenshot?"
images = ["shot.png"]

[[tasks]]
id = "gone"
prompt = "and this one?"
images = ["missing.png"]
"#,
    );
    let out = t.run_mock();
    assert_code(&out, 1);
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        1,
        "the task whose image is missing sends nothing"
    );
    let body = String::from_utf8_lossy(&requests[0].body).into_owned();
    let data = crate::common::images::b64(&shot);
    assert!(
        body.contains(&format!("data:image/png;base64,{data}")),
        "{body}"
    );
    server.assert_invariants();
    assert!(
        stderr(&out).contains("images: missing.png"),
        "{}",
        stderr(&out)
    );
    let results = t.results();
    assert_eq!(attempts(&results, "look")[0]["status"], "passed");
    assert_eq!(
        attempts(&results, "gone")[0]["failure_reason"],
        "setup_failed"
    );
}
