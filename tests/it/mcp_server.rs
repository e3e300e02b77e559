//! `cogni mcp-server` driven by rmcp's client: the real binary as a
//! subprocess speaking MCP over its stdin and stdout, with the scripted
//! provider (`--script`) or the loopback mock as the model.

use crate::cli::Env;
use crate::common::mock::{chat, MockServer};
use crate::common::pids_running;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, JsonObject, ProgressNotificationParam,
    Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::{json, Value};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::process::Child;
use tokio::sync::mpsc;

/// The client's side: it hands the progress notifications it gets to the test.
struct Client {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

/// A running `cogni mcp-server` and rmcp's client connected to it.
struct Served {
    client: RunningService<RoleClient, Client>,
    child: Child,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    env: Env,
}

/// Start `cogni mcp-server ARGS` in `env`'s workspace with the variables
/// `vars`; its stderr goes to `server.stderr` beside the workspace.
async fn serve(env: Env, args: &[&str], vars: &[(&str, &str)]) -> Served {
    let stderr = std::fs::File::create(env.dir.path().join("server.stderr")).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_cogni"))
        .current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .envs(vars.iter().copied())
        .arg("mcp-server")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, progress) = mpsc::unbounded_channel();
    let client = rmcp::serve_client(Client { progress: tx }, (stdout, stdin))
        .await
        .unwrap_or_else(|e| panic!("initialize failed: {e}; stderr: {}", stderr_of(&env)));
    Served {
        client,
        child,
        progress,
        env,
    }
}

fn stderr_of(env: &Env) -> String {
    std::fs::read_to_string(env.dir.path().join("server.stderr")).unwrap_or_default()
}

fn arguments(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string()).with_arguments(arguments(args))
}

impl Served {
    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        self.client
            .peer()
            .call_tool(params(tool, args))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}; stderr: {}", stderr_of(&self.env)))
    }

    /// Close the client's side (the server's stdin) and wait for the
    /// server to exit.
    async fn close(mut self) -> (ExitStatus, Env) {
        let _ = self.client.cancel().await;
        let status = self.child.wait().await.unwrap();
        // Every call had answered when rmcp's clean-up began: none was
        // left waiting on a client that is gone.
        let log = std::fs::read_to_string(self.env.dir.path().join("home/log/cogni.log"))
            .unwrap_or_default();
        assert!(!log.contains("timed out draining"), "{log}");
        (status, self.env)
    }
}

/// The first text block of a result.
fn text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn structured(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structured content: {result:?}"))
}

const WRITE_HELLO: &str = r#"
[[turns]]
text = "Writing."
[[turns.tool_calls]]
name = "shell"
arguments = { command = "echo hello > out.txt" }
[[turns]]
text = "Done: out.txt says hello."
"#;

#[tokio::test]
async fn initialize_and_tools_list_show_both_tools_with_their_schemas() {
    let env = Env::new();
    let served = serve(env, &[], &[]).await;
    let info = served
        .client
        .peer_info()
        .expect("the server's initialize result");
    assert_eq!(info.server_info.as_ref().unwrap().name, "cogni");
    assert!(info.capabilities.tools.is_some());
    let tools = served.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["cogni", "cogni_reply"]);
    let run = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(run["inputSchema"]["required"], json!(["prompt"]));
    for key in [
        "prompt",
        "cwd",
        "sandbox",
        "approval_policy",
        "model",
        "agent",
    ] {
        assert!(
            run["inputSchema"]["properties"][key].is_object(),
            "{key}: {run}"
        );
    }
    assert_eq!(
        run["inputSchema"]["properties"]["sandbox"]["enum"],
        json!(["read-only", "workspace-write", "danger-full-access"])
    );
    assert_eq!(
        run["outputSchema"]["required"],
        json!(["session_id", "outcome", "exit_code", "answer", "usage"])
    );
    let reply = serde_json::to_value(&tools[1]).unwrap();
    assert_eq!(
        reply["inputSchema"]["required"],
        json!(["session_id", "prompt"])
    );
    let (status, _) = served.close().await;
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn a_task_writes_a_file_through_a_tool_call_and_reports_answer_outcome_and_usage() {
    let env = Env::new();
    let script = env.write("script.toml", WRITE_HELLO);
    let mut served = serve(env, &["--script", script.to_str().unwrap()], &[]).await;
    let result = served
        .call_with_progress(
            "cogni",
            json!({ "prompt": "write hello", "sandbox": "danger-full-access" }),
        )
        .await;
    let stderr = stderr_of(&served.env);
    assert_eq!(result.is_error, Some(false), "{result:?}; stderr: {stderr}");
    assert_eq!(text(&result), "Done: out.txt says hello.");
    assert_eq!(
        std::fs::read_to_string(served.env.work().join("out.txt")).unwrap(),
        "hello\n"
    );
    let report = structured(&result);
    assert_eq!(report["outcome"], "done");
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["answer"], "Done: out.txt says hello.");
    assert!(report.get("reason").is_none(), "{report}");
    let usage = &report["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(usage["output_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(usage["model_requests"], 2);
    assert_eq!(usage["tool_calls"], 1);
    assert!(usage.get("cost_usd").is_some(), "{usage}");
    let id = report["session_id"].as_str().unwrap();
    let saved = served
        .env
        .dir
        .path()
        .join(format!("home/sessions/{id}.jsonl"));
    assert!(
        saved.is_file(),
        "the session is saved as {}",
        saved.display()
    );
    // The client heard how it went while it ran.
    let messages = served.progress_until("shell ").await;
    assert_eq!(messages[0], "model request 1");
    assert!(
        messages.last().unwrap().contains("echo hello > out.txt"),
        "{messages:?}"
    );
    let (status, env) = served.close().await;
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&env));
}

impl Served {
    /// Call `tool` with a progress token (rmcp's cancellable requests carry one).
    async fn call_with_progress(&self, tool: &str, args: Value) -> CallToolResult {
        let request = ClientRequest::CallToolRequest(Request::new(params(tool, args)));
        let handle = self
            .client
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .unwrap();
        match handle.await_response().await {
            Ok(ServerResult::CallToolResult(result)) => result,
            other => panic!(
                "not a tool result: {other:?}; stderr: {}",
                stderr_of(&self.env)
            ),
        }
    }

    /// The progress messages up to the first that contains `needle`
    /// (the client handles notifications on tasks of their own, so they
    /// may come after the result).
    async fn progress_until(&mut self, needle: &str) -> Vec<String> {
        let mut messages = Vec::new();
        while !messages.iter().any(|m: &String| m.contains(needle)) {
            let note = tokio::time::timeout(Duration::from_secs(30), self.progress.recv())
                .await
                .unwrap_or_else(|_| panic!("no progress with {needle:?} among {messages:?}"))
                .unwrap();
            messages.push(note.message.unwrap_or_default());
        }
        messages
    }
}

/// The first message of `role` in `messages` whose text contains `needle`.
fn position(messages: &[Value], role: &str, needle: &str) -> usize {
    messages
        .iter()
        .position(|m| m["role"] == role && m.to_string().contains(needle))
        .unwrap_or_else(|| panic!("no {role} message with {needle:?} in {messages:#?}"))
}

/// A model that writes hello into out.txt with a shell call, answers
/// "Wrote out.txt.", and then, asked again, "It says hello.".
pub(crate) fn write_then_reply_model() -> MockServer {
    let mock = MockServer::start();
    mock.enqueue(chat::tool_calls_response(&[(
        "c1",
        "shell",
        &json!({ "command": "echo hello > out.txt" }).to_string(),
    )]));
    mock.enqueue(chat::text_response("Wrote out.txt."));
    mock.enqueue(chat::text_response("It says hello."));
    mock
}

#[tokio::test]
async fn a_reply_continues_the_session_with_its_history() {
    let env = Env::new();
    let mock = write_then_reply_model();
    let base = mock.base_url();
    let served = serve(
        env,
        &["--model", "gpt-4.1", "--sandbox", "danger-full-access"],
        &[("OPENAI_BASE_URL", &base), ("OPENAI_API_KEY", "sk-test")],
    )
    .await;
    let first = served
        .call("cogni", json!({ "prompt": "write hello into out.txt" }))
        .await;
    assert_eq!(first.is_error, Some(false), "{first:?}");
    assert_eq!(text(&first), "Wrote out.txt.");
    let id = structured(&first)["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let second = served
        .call(
            "cogni_reply",
            json!({ "session_id": id, "prompt": "what does it say?" }),
        )
        .await;
    assert_eq!(second.is_error, Some(false), "{second:?}");
    assert_eq!(text(&second), "It says hello.");
    let report = structured(&second);
    assert_eq!(report["session_id"], id.as_str(), "the same session");
    assert_eq!(report["usage"]["model_requests"], 1, "this turn's usage");

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[2].messages();
    let asked = position(&messages, "user", "write hello into out.txt");
    let called = position(&messages, "assistant", "echo hello > out.txt");
    let output = position(&messages, "tool", "exit code 0");
    let answered = position(&messages, "assistant", "Wrote out.txt.");
    let replied = position(&messages, "user", "what does it say?");
    assert!(
        asked < called && called < output && output < answered && answered < replied,
        "{messages:#?}"
    );
    mock.assert_invariants();
    let (status, env) = served.close().await;
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&env));
}

#[tokio::test]
async fn an_approval_question_is_answered_no_at_once() {
    let env = Env::new();
    let script = env.write(
        "script.toml",
        r#"
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "touch made.txt" }
[[turns]]
text = "I was not allowed to."
"#,
    );
    let mut served = serve(env, &["--script", script.to_str().unwrap()], &[]).await;
    let result = served
        .call_with_progress(
            "cogni",
            json!({
                "prompt": "make a file",
                "sandbox": "danger-full-access",
                "approval_policy": "untrusted"
            }),
        )
        .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "I was not allowed to.");
    assert!(
        !served.env.work().join("made.txt").exists(),
        "the command never ran"
    );
    let messages = served.progress_until("denied").await;
    assert!(
        messages
            .last()
            .unwrap()
            .starts_with("shell denied: no one to ask"),
        "{messages:?}"
    );
    let (status, env) = served.close().await;
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&env));
}

#[tokio::test]
async fn unknown_sessions_and_bad_arguments_are_errors_that_name_the_problem() {
    let env = Env::new();
    let script = env.write("script.toml", "[[turns]]\ntext = \"ok\"\n");
    let served = serve(env, &["--script", script.to_str().unwrap()], &[]).await;
    let cases = [
        (
            "cogni_reply",
            json!({ "session_id": "18eb0000-1", "prompt": "more" }),
            "no session `18eb0000-1`: give the session_id a `cogni` call returned",
        ),
        (
            "cogni_reply",
            json!({ "session_id": "../../config", "prompt": "more" }),
            "`session_id` `../../config` is not a session id",
        ),
        (
            "cogni",
            json!({ "sandbox": "read-only" }),
            "invalid arguments to `cogni`: missing field `prompt`",
        ),
        (
            "cogni",
            json!({ "prompt": "x", "sandbox": "roomy" }),
            "`sandbox`: unknown sandbox mode `roomy`; use one of: read-only, workspace-write, danger-full-access",
        ),
        (
            "cogni",
            json!({ "prompt": "x", "approval_policy": "sometimes" }),
            "`approval_policy`: unknown approval policy `sometimes`",
        ),
        (
            "cogni",
            json!({ "prompt": "x", "cwd": "no-such-dir" }),
            "no-such-dir: No such file or directory",
        ),
        (
            "cogni",
            json!({ "prompt": "x", "agent": "nobody", "sandbox": "danger-full-access" }),
            "no agent is named `nobody`",
        ),
        (
            "cogni",
            json!({ "prompt": "x", "cwd": "/", "sandbox": "workspace-write" }),
            "the working directory is /: with sandbox workspace-write commands could write anywhere",
        ),
    ];
    for (tool, args, expected) in cases {
        let result = served.call(tool, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}: {result:?}");
        assert!(
            text(&result).contains(expected),
            "{args}: {}",
            text(&result)
        );
        assert!(
            result.structured_content.is_none(),
            "nothing ran: {result:?}"
        );
    }
    // An unknown tool is the protocol's error.
    let error = served
        .client
        .peer()
        .call_tool(params("cogni_run", json!({ "prompt": "x" })))
        .await
        .unwrap_err();
    match error {
        ServiceError::McpError(e) => assert!(
            e.message.contains("unknown tool `cogni_run`"),
            "{}",
            e.message
        ),
        other => panic!("not an MCP error: {other}"),
    }
    // The server is still there.
    let ok = served
        .call(
            "cogni",
            json!({ "prompt": "x", "sandbox": "danger-full-access" }),
        )
        .await;
    assert_eq!(text(&ok), "ok");
    let (status, env) = served.close().await;
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&env));
}

/// A tool call that runs a command holding `marker` in its command line
/// until it is killed.
fn sleeper(id: &str, marker: &str) -> crate::common::mock::MockResponse {
    let command = format!("sleep 600 && echo {marker}");
    chat::tool_calls_response(&[(id, "shell", &json!({ "command": command }).to_string())])
}

/// Wait until `marker`'s command runs (or give up after a minute).
fn running(marker: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if !pids_running(marker).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn gone(marker: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_running(marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    pids_running(marker).is_empty()
}

#[tokio::test]
async fn calls_run_at_once_and_closing_stdin_stops_them_and_exits_0() {
    let env = Env::new();
    let mock = MockServer::start();
    let pid = std::process::id();
    let markers = [
        format!("cogni-mcp-server-a-{pid}"),
        format!("cogni-mcp-server-b-{pid}"),
    ];
    for (n, marker) in markers.iter().enumerate() {
        mock.enqueue(sleeper(&format!("c{n}"), marker));
    }
    let base = mock.base_url();
    let served = serve(
        env,
        &["--model", "gpt-4.1"],
        &[("OPENAI_BASE_URL", &base), ("OPENAI_API_KEY", "sk-test")],
    )
    .await;
    let mut handles = Vec::new();
    for prompt in ["first", "second"] {
        let request = ClientRequest::CallToolRequest(Request::new(params(
            "cogni",
            json!({ "prompt": prompt, "sandbox": "danger-full-access" }),
        )));
        handles.push(
            served
                .client
                .send_cancellable_request(request, PeerRequestOptions::no_options())
                .await
                .unwrap(),
        );
    }
    let both = tokio::task::spawn_blocking({
        let markers = markers.clone();
        move || markers.iter().all(|m| running(m))
    });
    assert!(
        both.await.unwrap(),
        "both calls' commands run at once; stderr: {}",
        stderr_of(&served.env)
    );
    drop(handles);
    let (status, env) = served.close().await;
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&env));
    for marker in &markers {
        assert!(gone(marker), "{marker} outlived the server");
    }
    // Each call had a session of its own, saved as it ended.
    let sessions = crate::common::entries(&env.dir.path().join("home/sessions"));
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let stderr = stderr_of(&env);
    assert_eq!(
        stderr.matches(": interrupted (exit code 130)").count(),
        2,
        "{stderr}"
    );
}

#[tokio::test]
async fn a_cancelled_call_stops_its_turn_and_the_server_goes_on() {
    let env = Env::new();
    let mock = MockServer::start();
    let marker = format!("cogni-mcp-server-cancel-{}", std::process::id());
    mock.enqueue(sleeper("c1", &marker));
    mock.enqueue(chat::text_response("still here"));
    let base = mock.base_url();
    let served = serve(
        env,
        &["--model", "gpt-4.1", "--sandbox", "danger-full-access"],
        &[("OPENAI_BASE_URL", &base), ("OPENAI_API_KEY", "sk-test")],
    )
    .await;
    let request =
        ClientRequest::CallToolRequest(Request::new(params("cogni", json!({ "prompt": "sleep" }))));
    let handle = served
        .client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let started = tokio::task::spawn_blocking({
        let marker = marker.clone();
        move || running(&marker)
    });
    assert!(started.await.unwrap(), "{}", stderr_of(&served.env));
    // Its session is busy while it runs.
    let sessions = crate::common::entries(&served.env.dir.path().join("home/sessions"));
    let [file] = sessions.as_slice() else {
        panic!("one session: {sessions:?}")
    };
    let id = file.trim_end_matches(".jsonl");
    let busy = served
        .call("cogni_reply", json!({ "session_id": id, "prompt": "and?" }))
        .await;
    assert_eq!(busy.is_error, Some(true), "{busy:?}");
    assert!(
        text(&busy).contains(&format!("session `{id}` is busy")),
        "{}",
        text(&busy)
    );
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    let stopped = tokio::task::spawn_blocking({
        let marker = marker.clone();
        move || gone(&marker)
    });
    assert!(
        stopped.await.unwrap(),
        "the cancelled call's command was killed"
    );
    let next = served.call("cogni", json!({ "prompt": "again" })).await;
    assert_eq!(text(&next), "still here", "{next:?}");
    let (status, env) = served.close().await;
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&env));
    assert!(stderr_of(&env).contains(": interrupted (exit code 130)"));
}

/// Raw JSON-RPC lines, as a client writes them.
const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
);

#[test]
fn stdout_carries_only_protocol_messages() {
    use std::io::{BufRead, Write};
    let env = Env::new();
    let script = env.write(
        "script.toml",
        r#"
[[turns]]
text = "Talking."
[[turns.tool_calls]]
name = "shell"
arguments = { command = "echo to-stdout; echo to-stderr >&2" }
[[turns]]
text = "Said it."
"#,
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cogni"))
        .current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .args(["mcp-server", "--sandbox", "danger-full-access", "--script"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take();
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "cogni", "arguments": { "prompt": "talk" }, "_meta": { "progressToken": 9 } }
    });
    let pipe = stdin.as_mut().unwrap();
    writeln!(pipe, "{HANDSHAKE}{call}").unwrap();
    pipe.flush().unwrap();
    let mut lines = Vec::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        let answered = message["id"] == 2;
        lines.push(message);
        if answered {
            // The client is done: it closes the server's stdin.
            drop(stdin.take());
        }
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let result = &lines.last().unwrap()["result"];
    assert_eq!(
        result["structuredContent"]["answer"], "Said it.",
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["method"] == "notifications/progress"),
        "{lines:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // What the command printed went to the model, not to the client.
    assert!(
        stderr.contains(": done (exit code 0)") && !stderr.contains("to-stderr"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_server_with_a_broken_config_exits_2_naming_it() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        "sandbox_mode = \"roomy\"\n",
    )
    .unwrap();
    let out = env.cmd().arg("mcp-server").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "stdout is for the protocol only");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("roomy"), "{stderr}");
}

#[tokio::test]
async fn the_servers_sandbox_and_approval_are_a_ceiling_that_calls_may_only_tighten() {
    let env = Env::new();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let escaped = outside.join("escaped");
    let script = env.write(
        "script.toml",
        &format!(
            "[[turns]]\ntext = \"Writing.\"\n[[turns.tool_calls]]\nname = \"shell\"\n\
             arguments = {{ command = \"echo pwned > {}\" }}\n[[turns]]\ntext = \"done\"\n",
            escaped.display()
        ),
    );
    let served = serve(
        env,
        &[
            "--sandbox",
            "read-only",
            "--approval",
            "untrusted",
            "--script",
            script.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    let refused = [
        (
            json!({ "prompt": "x", "sandbox": "danger-full-access", "approval_policy": "never" }),
            "`sandbox` \"danger-full-access\" is looser than this server allows: it was started with --sandbox read-only, which a call may only tighten (use one of: read-only)",
        ),
        (
            json!({ "prompt": "x", "sandbox": "workspace-write" }),
            "started with --sandbox read-only",
        ),
        (
            json!({ "prompt": "x", "approval_policy": "never" }),
            "`approval_policy` \"never\" is looser than this server allows: it was started with --approval untrusted, which a call may only tighten (use one of: untrusted)",
        ),
        (
            json!({ "prompt": "x", "sandbox": "read-only", "approval_policy": "on-request" }),
            "--approval untrusted",
        ),
    ];
    for (args, expected) in refused {
        let result = served.call("cogni", args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}: {result:?}");
        assert!(
            text(&result).contains(expected),
            "{args}: {}",
            text(&result)
        );
        assert!(
            result.structured_content.is_none(),
            "nothing ran: {result:?}"
        );
        assert!(!escaped.exists(), "{args}: a call wrote outside");
    }
    // As tight as the ceiling (or tighter) runs; the write is asked and,
    // with nobody to ask, not run.
    if crate::sandbox::backend("the_servers_sandbox_and_approval_are_a_ceiling") {
        let result = served
            .call(
                "cogni",
                json!({ "prompt": "x", "sandbox": "read-only", "approval_policy": "untrusted" }),
            )
            .await;
        assert_eq!(result.is_error, Some(false), "{result:?}");
        assert_eq!(text(&result), "done");
        assert!(!escaped.exists());
    }
    let (status, env) = served.close().await;
    assert_eq!(status.code(), Some(0), "{}", stderr_of(&env));
}
