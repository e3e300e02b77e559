//! `--acp CMD`: cogni in front of an ACP agent. Against `cogni acp`
//! itself (the binary under test, with the scripted provider: no network,
//! no key) and against a scripted agent (tests/fixtures/acp/agent.py) for
//! what `cogni acp` never does: stop with each stop reason, ignore a
//! cancel, never answer, die. `cogni run --acp` by its events, files and
//! exit codes; the REPL on a terminal.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::pty::{processes_with, Pty};
use crate::mcp::{on_path, skip};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

fn cogni() -> &'static str {
    env!("CARGO_BIN_EXE_cogni")
}

/// `cogni acp` with `args` as an agent's command line (paths quoted).
fn cogni_acp(args: &str) -> String {
    format!("'{}' acp --no-persist {args}", cogni())
}

/// `cogni acp` replaying `turns`.
fn cogni_acp_script(env: &Env, turns: Value, args: &str) -> String {
    let script = env.script_file("script.toml", turns);
    cogni_acp(&format!("--script '{}' {args}", script.display()))
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "name": name, "arguments": arguments })
}

/// The scripted agent playing `scenario`, or `None` (the test skips)
/// without python3. Its log is [`agent_log`].
fn scripted(env: &Env, test: &str, scenario: Value) -> Option<String> {
    if !on_path("python3") {
        return skip(test, "python3 is not installed");
    }
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/agent.py");
    let path = env.write("scenario.json", &scenario.to_string());
    Some(format!(
        "python3 '{}' '{}' '{}'",
        agent.display(),
        path.display(),
        log_path(env).display()
    ))
}

fn log_path(env: &Env) -> PathBuf {
    env.dir.path().join("agent.log")
}

/// What the client sent the scripted agent, and its answers.
fn agent_log(env: &Env) -> Vec<Value> {
    std::fs::read_to_string(log_path(env))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `cogni run --acp AGENT ARGS TASK` in the workspace.
fn run(env: &Env, agent: &str, args: &[&str], task: &str) -> Output {
    env.cmd()
        .args(["run", "--acp", agent])
        .args(args)
        .arg(task)
        .output()
        .unwrap()
}

/// The JSONL events of a `--json` run.
fn events(out: &Output) -> Vec<Value> {
    stdout_of(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn completed_call<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["name"] == name)
        .map(|e| &e["item"])
        .unwrap_or_else(|| panic!("no completed call `{name}`: {events:#?}"))
}

#[test]
fn a_prompt_streams_text_and_a_tool_call_with_its_diff() {
    let env = Env::new();
    let agent = cogni_acp_script(
        &env,
        json!([
            {
                "reasoning": "A file first.",
                "text": "Writing the file.",
                "tool_calls": [call("write_file", json!({ "path": "out.txt", "content": "hello\n" }))],
            },
            { "text": "Wrote out.txt." },
        ]),
        "",
    );
    let out = run(&env, &agent, &["--json"], "write hello to out.txt");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let events = events(&out);
    let started = &of_type(&events, "session.started")[0];
    assert_eq!(started["provider"], "acp");
    assert!(
        started["model"].as_str().unwrap().starts_with("cogni "),
        "{started}"
    );
    assert_eq!(started["sandbox"], "workspace-write");
    assert_eq!(of_type(&events, "reasoning")[0]["text"], "A file first.");
    let streamed: String = of_type(&events, "item.updated")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "Writing the file.Wrote out.txt.");
    assert!(
        of_type(&events, "item.updated").len() > 2,
        "streamed in chunks"
    );
    let write = completed_call(&events, "Write out.txt");
    assert_eq!(write["status"], "completed");
    let output = write["output"].as_str().unwrap();
    assert!(
        output.contains("+++ ") && output.contains("+hello"),
        "{output}"
    );
    let done = &of_type(&events, "turn.completed")[0];
    assert_eq!(done["outcome"], "done");
    assert_eq!(done["final_text"], "Wrote out.txt.");
    // Through the client's fs: written by cogni's rules, on disk.
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "hello\n"
    );

    // Without --json: progress on stderr, the answer on stdout.
    std::fs::remove_file(env.work().join("out.txt")).unwrap();
    let out = run(&env, &agent, &[], "write hello to out.txt");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "Wrote out.txt.\n");
    let progress = stderr_of(&out);
    assert!(
        progress.contains("cogni · acp · cogni ") && progress.contains("✓ Write out.txt"),
        "{progress}"
    );
    assert!(
        !progress.contains("tokens:"),
        "no token figures the agent never gave: {progress}"
    );
}

#[test]
fn a_permission_request_is_answered_no_in_run_and_recorded() {
    let env = Env::new();
    let agent = cogni_acp_script(
        &env,
        json!([
            { "text": "Running.", "tool_calls": [call("shell", json!({ "command": "touch ran.txt" }))] },
            { "expect": "denied", "text": "It was not allowed." },
        ]),
        "--approval untrusted",
    );
    let out = run(&env, &agent, &["--json"], "run it");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let events = events(&out);
    let approvals: Vec<(&str, &str)> = of_type(&events, "approval")
        .iter()
        .map(|e| (e["status"].as_str().unwrap(), e["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        approvals,
        [
            ("asked", "the agent asks for permission"),
            (
                "denied",
                "no one to ask in a non-interactive run: answered no"
            ),
        ]
    );
    assert_eq!(completed_call(&events, "touch ran.txt")["status"], "failed");
    assert!(!env.work().join("ran.txt").exists());
}

#[test]
fn the_agents_file_writes_follow_cognis_rules() {
    let env = Env::new();
    std::fs::create_dir_all(env.work().join(".git")).unwrap();
    let outside = env.dir.path().join("outside.txt");
    // The agent runs unconfined, so its own rules let everything through:
    // what is refused is refused by the client.
    let agent = cogni_acp_script(
        &env,
        json!([
            {
                "text": "Writing three files.",
                "tool_calls": [
                    call("write_file", json!({ "path": "inside.txt", "content": "in\n" })),
                    call("write_file", json!({ "path": outside.to_str().unwrap(), "content": "out\n" })),
                    call("write_file", json!({ "path": ".git/config", "content": "[core]\n" })),
                ],
            },
            { "text": "Done." },
        ]),
        "--no-sandbox --mode auto",
    );
    let out = run(&env, &agent, &["--json"], "write");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let seen = events(&out);
    assert_eq!(
        std::fs::read_to_string(env.work().join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!outside.exists());
    assert!(!env.work().join(".git/config").exists());
    let warnings: Vec<&str> = of_type(&seen, "warning")
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("the agent's write was refused")
            && warnings[0].contains("outside the workspace"),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("protected"), "{warnings:?}");
    let failed = completed_call(&seen, &format!("Write {}", outside.display()));
    assert_eq!(failed["status"], "failed");

    // A read-only sandbox refuses every write.
    std::fs::remove_file(env.work().join("inside.txt")).unwrap();
    let out = run(&env, &agent, &["--json", "--sandbox", "read-only"], "write");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(!env.work().join("inside.txt").exists());
    let refused = events(&out);
    let warnings = of_type(&refused, "warning");
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("the sandbox is read-only"),
        "{warnings:?}"
    );
}

/// `cogni run --acp AGENT --json TASK`, spawned: stdout and stderr go to
/// files in the test's directory.
fn spawn_run(env: &Env, agent: &str, task: &str) -> std::process::Child {
    Command::new(cogni())
        .current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .args(["run", "--json", "--acp", agent, task])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(env.dir.path().join("stdout")).unwrap())
        .stderr(std::fs::File::create(env.dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap()
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "no {what} within {WAIT:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("cogni did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interrupt(child: &std::process::Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

fn read(env: &Env, name: &str) -> String {
    std::fs::read_to_string(env.dir.path().join(name)).unwrap_or_default()
}

#[test]
fn ctrl_c_cancels_the_agents_turn() {
    let env = Env::new();
    let marker = format!("sleep 5{}.25", std::process::id() % 1000);
    let agent = cogni_acp_script(
        &env,
        json!([{ "text": "Waiting.", "tool_calls": [call("shell", json!({ "command": marker }))] }]),
        "--mode auto",
    );
    let mut child = spawn_run(&env, &agent, "wait");
    wait_until("running command", || !processes_with(&marker).is_empty());
    interrupt(&child);
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(130), "{}", read(&env, "stderr"));
    assert!(read(&env, "stderr").contains("interrupted (Ctrl-C)"));
    let events: Vec<Value> = read(&env, "stdout")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let done = &of_type(&events, "turn.completed")[0];
    assert_eq!(done["outcome"], "interrupted");
    assert!(
        processes_with(&marker).is_empty(),
        "the command was stopped"
    );
}

#[test]
fn a_second_ctrl_c_kills_an_agent_that_ignores_the_cancel() {
    let env = Env::new();
    let Some(agent) = scripted(
        &env,
        "acp_client_kill",
        json!({ "turns": [[
            { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Thinking forever." } } },
            { "hang": true },
        ]] }),
    ) else {
        return;
    };
    let mut child = spawn_run(&env, &agent, "go");
    wait_until("the agent's text", || {
        read(&env, "stdout").contains("Thinking forever.")
    });
    interrupt(&child);
    wait_until("the cancel", || {
        agent_log(&env)
            .iter()
            .any(|m| m["method"] == "session/cancel")
    });
    interrupt(&child);
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(130), "{}", read(&env, "stderr"));
    assert!(
        processes_with(&log_path(&env).display().to_string()).is_empty(),
        "the agent is gone"
    );
}

#[test]
fn the_exit_code_follows_the_agents_stop_reason() {
    let cases = [
        ("end_turn", 0, ""),
        ("max_tokens", 1, "the agent stopped: max_tokens"),
        (
            "max_turn_requests",
            1,
            "the agent stopped: max_turn_requests",
        ),
        ("refusal", 1, "the agent stopped: refusal"),
        ("cancelled", 130, "interrupted"),
    ];
    for (stop, code, said) in cases {
        let env = Env::new();
        let Some(agent) = scripted(
            &env,
            "acp_client_stop_reasons",
            json!({ "turns": [[
                { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Answer." } } },
                { "stop": stop },
            ]] }),
        ) else {
            return;
        };
        let out = run(&env, &agent, &["--json"], "go");
        assert_eq!(out.status.code(), Some(code), "{stop}: {}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains(said),
            "{stop}: {}",
            stderr_of(&out)
        );
        let events = events(&out);
        let outcome = of_type(&events, "turn.completed")[0]["outcome"].clone();
        let want = ["done", "truncated", "max_steps", "blocked", "interrupted"]
            [cases.iter().position(|c| c.0 == stop).unwrap()];
        assert_eq!(outcome, want, "{stop}");
    }

    // And end to end: `cogni acp` out of steps.
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        "[agent]\nmax_steps = 1\n",
    )
    .unwrap();
    let agent = cogni_acp_script(
        &env,
        json!([
            { "tool_calls": [call("list_dir", json!({}))] },
            { "tool_calls": [call("list_dir", json!({}))] },
        ]),
        "",
    );
    let out = run(&env, &agent, &[], "go");
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("max_turn_requests"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn the_configured_mcp_servers_go_to_the_agent_in_session_new() {
    let config = r#"
[mcp_servers.files]
command = "files-server"
args = ["--root", "."]
env = { MODE = "ro" }
env_vars = ["FILES_TOKEN", "NOT_SET_ANYWHERE"]

[mcp_servers.web]
url = "http://127.0.0.1:9/mcp"
http_headers = { "X-Team" = "core" }
bearer_token_env_var = "WEB_TOKEN"

[mcp_servers.off]
command = "never-started"
enabled = false
"#;
    let scenario = |http: bool| {
        json!({
            "agentCapabilities": { "mcpCapabilities": { "http": http } },
            "turns": [[{ "stop": "end_turn" }]],
        })
    };
    for http in [true, false] {
        let env = Env::new();
        std::fs::write(env.dir.path().join("home/config.toml"), config).unwrap();
        let Some(agent) = scripted(&env, "acp_client_mcp_servers", scenario(http)) else {
            return;
        };
        let out = env
            .cmd()
            .env("FILES_TOKEN", "files-secret")
            .env("WEB_TOKEN", "web-secret")
            .args(["run", "--acp", &agent, "go"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        let new = agent_log(&env)
            .into_iter()
            .find(|m| m["method"] == "session/new")
            .expect("session/new was sent");
        let servers = new["params"]["mcpServers"].as_array().unwrap().clone();
        let files = json!({
            "name": "files",
            "command": "files-server",
            "args": ["--root", "."],
            "env": [
                { "name": "MODE", "value": "ro" },
                { "name": "FILES_TOKEN", "value": "files-secret" },
            ],
        });
        if http {
            assert_eq!(
                servers,
                [
                    files,
                    json!({
                        "type": "http",
                        "name": "web",
                        "url": "http://127.0.0.1:9/mcp",
                        "headers": [
                            { "name": "X-Team", "value": "core" },
                            { "name": "Authorization", "value": "Bearer web-secret" },
                        ],
                    }),
                ],
                "{new}"
            );
        } else {
            assert_eq!(servers, [files], "{new}");
            assert!(
                stderr_of(&out).contains(
                    "MCP server `web` is left out: the agent does not take MCP servers over HTTP"
                ),
                "{}",
                stderr_of(&out)
            );
        }
    }
}

#[test]
fn an_agent_that_dies_mid_turn_is_an_error() {
    let env = Env::new();
    let script = env.script_file(
        "script.toml",
        json!([{ "text": "Going.", "tool_calls": [call("shell", json!({ "command": "kill -9 $(cat agent.pid)" }))] }]),
    );
    let agent = format!(
        "sh -c 'echo $$ > agent.pid; exec \"$0\" acp --no-persist --no-sandbox --mode auto --script \"$1\"' '{}' '{}'",
        cogni(),
        script.display()
    );
    let started = Instant::now();
    let out = run(&env, &agent, &["--json"], "go");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let said = stderr_of(&out);
    assert!(
        said.contains("the agent went away during the turn") && said.contains("killed by signal 9"),
        "{said}"
    );
    let events = events(&out);
    let failed = &of_type(&events, "turn.failed")[0];
    assert!(
        failed["error"].as_str().unwrap().contains("went away"),
        "{failed}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn an_agent_that_does_not_start_is_a_clear_error() {
    let env = Env::new();
    let marker = format!("sleep 7{}.5", std::process::id() % 1000);
    let started = Instant::now();
    let out = run(&env, &marker, &["--acp-timeout", "1"], "go");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("did not answer initialize within 1 s"),
        "{}",
        stderr_of(&out)
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(processes_with(&marker).is_empty(), "the agent was killed");

    let out = run(&env, "no-such-agent-program --stdio", &[], "go");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("cannot start `no-such-agent-program`"),
        "{}",
        stderr_of(&out)
    );

    let out = run(&env, "sh -c 'echo no keys here >&2; exit 4'", &[], "go");
    assert_eq!(out.status.code(), Some(3));
    let said = stderr_of(&out);
    assert!(
        said.contains("exited with code 4") && said.contains("no keys here"),
        "{said}"
    );

    let out = env
        .cmd()
        .args(["run", "--acp", "x", "--model", "m", "go"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "--model has no meaning with --acp"
    );
}

/// `cogni repl --acp AGENT` on a terminal.
fn repl(env: &Env, agent: &str) -> Pty {
    let mut cmd = Command::new(cogni());
    cmd.current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .env("TERM", "xterm-256color")
        .args(["repl", "--acp", agent]);
    Pty::spawn(cmd, 120)
}

fn text(chunk: &str) -> Value {
    json!({ "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": chunk } } })
}

#[test]
fn the_repl_fronts_the_agent_with_its_modes_commands_and_questions() {
    let env = Env::new();
    let file = env.work().join("a.txt");
    let Some(agent) = scripted(
        &env,
        "acp_client_repl",
        json!({
            "modes": {
                "currentModeId": "ask",
                "availableModes": [
                    { "id": "ask", "name": "Ask", "description": "asks before edits" },
                    { "id": "code", "name": "Code" },
                ],
            },
            "commands": [{ "name": "review", "description": "review the changes", "input": { "hint": "what to review" } }],
            "turns": [
                [
                    { "update": {
                        "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit a.txt", "kind": "edit", "status": "pending",
                        "content": [{ "type": "diff", "path": file, "oldText": "old\n", "newText": "new\n" }],
                    } },
                    { "request": { "method": "session/request_permission", "params": {
                        "toolCall": { "toolCallId": "c1" },
                        "options": [
                            { "optionId": "yes", "name": "Allow", "kind": "allow_once" },
                            { "optionId": "no", "name": "Skip", "kind": "reject_once" },
                        ],
                    } } },
                    { "update": { "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed" } },
                    text("Edited."),
                ],
                [text("Reviewing.")],
                [text("Waiting.\n"), { "wait_cancel": true }, { "stop": "cancelled" }],
                [text("Hanging.\n"), { "hang": true }],
            ],
        }),
    ) else {
        return;
    };
    let mut pty = repl(&env, &agent);
    pty.expect("scripted-agent 1.0", WAIT);
    pty.expect("ask › ", WAIT);
    pty.send("/mode\r");
    pty.expect("* ask", WAIT);
    pty.expect("code", WAIT);
    pty.send("/mode code\r");
    pty.expect("mode: code", WAIT);
    pty.expect("code › ", WAIT);
    pty.send("/help\r");
    pty.expect("/mode [ID]", WAIT);
    pty.expect("/review what to review", WAIT);
    pty.expect("review the changes", WAIT);

    pty.send("edit it\r");
    pty.expect("Allow Edit a.txt", WAIT);
    pty.expect("+new", WAIT);
    pty.expect("tell the model why >", WAIT);
    pty.send("y");
    pty.expect("Edited.", WAIT);
    pty.expect("code › ", WAIT);

    pty.send("/review src\r");
    pty.expect("Reviewing.", WAIT);
    pty.expect("code › ", WAIT);

    // Ctrl-C cancels the turn; the REPL goes on.
    pty.send("wait\r");
    pty.expect("Waiting.", WAIT);
    pty.send("\x03");
    pty.expect("(cancelled; back at the prompt)", WAIT);
    pty.expect("code › ", WAIT);

    // Twice, with an agent that does not stop: it is killed, the REPL ends.
    pty.send("hang\r");
    pty.expect("Hanging.", WAIT);
    pty.send("\x03");
    wait_until("the cancel", || {
        agent_log(&env)
            .iter()
            .filter(|m| m["method"] == "session/cancel")
            .count()
            == 2
    });
    pty.send("\x03");
    pty.expect("killed", WAIT);
    assert_eq!(pty.wait(WAIT).code(), Some(130), "{}", pty.screen());

    let log = agent_log(&env);
    let answer = log
        .iter()
        .find(|m| m["answer"] == "session/request_permission")
        .expect("the permission was answered");
    assert_eq!(answer["result"]["outcome"]["optionId"], "yes", "{answer}");
    assert!(log
        .iter()
        .any(|m| m["method"] == "session/set_mode" && m["params"]["modeId"] == "code"));
    let prompts: Vec<&str> = log
        .iter()
        .filter(|m| m["method"] == "session/prompt")
        .map(|m| m["params"]["prompt"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["edit it", "/review src", "wait", "hang"]);
    assert!(processes_with(&log_path(&env).display().to_string()).is_empty());
}

#[test]
fn the_repl_fronts_cogni_acp() {
    let env = Env::new();
    let agent = cogni_acp_script(&env, json!([{ "text": "Hello from **cogni acp**." }]), "");
    let mut pty = repl(&env, &agent);
    pty.expect("act › ", WAIT);
    pty.send("/mode\r");
    pty.expect("plan", WAIT);
    pty.expect("auto", WAIT);
    pty.send("hi\r");
    pty.expect("Hello from cogni acp.", WAIT);
    pty.expect("act › ", WAIT);
    pty.send("/mode plan\r");
    pty.expect("plan › ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
}

#[test]
fn the_typescript_sdks_agent_is_fronted_in_run_and_in_the_repl() {
    let Some(dir) = crate::interop::sdks("acp_client_sdk_agent") else {
        return;
    };
    let env = Env::new();
    let work = env.work();
    std::fs::write(work.join("README.md"), "# My Project\n\nA sample.\n").unwrap();
    let old = "{\"database\": {\"host\": \"old-host\"}}\n";
    std::fs::write(work.join("config.json"), old).unwrap();
    let outside = env.dir.path().join("sdk-agent-was-here.txt");
    let agent = format!("node '{}'", dir.join("agents/sdk_agent.mjs").display());

    // `cogni run`: the edit's permission is answered no.
    let out = run(&env, &agent, &["--json"], "improve it");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let events = events(&out);
    assert_eq!(
        of_type(&events, "session.started")[0]["model"],
        "sdk-agent 2.4.0"
    );
    assert_eq!(
        of_type(&events, "reasoning")[0]["text"],
        "Read first, then edit."
    );
    let read = completed_call(&events, "Reading project files");
    assert_eq!(read["output"], "# My Project\n\nA sample.\n");
    let plan = &of_type(&events, "plan")[0]["plan"];
    assert_eq!(plan["plan"][1]["status"], "in_progress", "{plan}");
    let approvals: Vec<&str> = of_type(&events, "approval")
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(approvals, ["asked", "denied"]);
    let answer = of_type(&events, "turn.completed")[0]["final_text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        answer.contains("I'll skip the configuration update."),
        "{answer}"
    );
    assert!(
        answer.contains("The client refused a write outside the workspace"),
        "{answer}"
    );
    assert!(answer.contains("outside the workspace"), "{answer}");
    assert_eq!(
        std::fs::read_to_string(work.join("config.json")).unwrap(),
        old
    );
    assert!(!outside.exists());

    // The REPL: its modes and command, the question answered yes, the
    // write through cogni's file rules.
    let mut pty = repl(&env, &agent);
    pty.expect("default › ", WAIT);
    pty.send("/help\r");
    pty.expect("/explain topic", WAIT);
    pty.send("/mode plan\r");
    pty.expect("plan › ", WAIT);
    pty.send("improve it\r");
    pty.expect("Allow Modifying critical configuration file", WAIT);
    pty.expect("+{\"database\": {\"host\": \"new-host\"}}", WAIT);
    pty.expect("tell the model why >", WAIT);
    pty.send("y");
    pty.expect("successfully updated the configuration", WAIT);
    pty.expect("plan › ", WAIT);
    pty.send("\x04");
    assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    assert_eq!(
        std::fs::read_to_string(work.join("config.json")).unwrap(),
        "{\"database\": {\"host\": \"new-host\"}}\n"
    );
    assert!(!outside.exists());
}
