//! cogni's protocol front doors against the official TypeScript SDKs, the
//! clients other software is built on: `cogni mcp-server` driven by
//! @modelcontextprotocol/sdk's `Client` (Claude Desktop and Claude Code
//! use it), `cogni acp` by @agentclientprotocol/sdk's client side. The
//! clients are small scripts in tests/mcp/clients/ that print what they
//! saw as JSON; `npm ci` in tests/mcp installs the SDKs. Without node or
//! the packages each test says why it skips, unless COGNI_REQUIRE_MCP is
//! set (CI sets it): then that is a failure.

use crate::cli::{stderr_of, Env};
use crate::mcp::{on_path, skip};
use crate::mcp_server::write_then_reply_model;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The longest a client script may run.
const LIMIT: Duration = Duration::from_secs(120);

/// tests/mcp, where the SDKs are installed, or why `test` skips.
pub(crate) fn sdks(test: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    if !on_path("node") {
        return skip(test, "node is not installed");
    }
    let modules = dir.join("node_modules");
    if !modules.join("@modelcontextprotocol/sdk").is_dir()
        || !modules.join("@agentclientprotocol/sdk").is_dir()
    {
        return skip(test, "the SDKs are not installed (`npm ci` in tests/mcp)");
    }
    Some(dir)
}

/// Run `tests/mcp/clients/SCRIPT` with node in `env`'s workspace, giving
/// it cogni's path and `args`; what it printed, parsed.
fn client(dir: &Path, env: &Env, script: &str, args: &[&str], vars: &[(&str, &str)]) -> Value {
    let mut cmd = Command::new("timeout");
    cmd.arg(LIMIT.as_secs().to_string())
        .arg("node")
        .arg(dir.join("clients").join(script))
        .arg(env!("CARGO_BIN_EXE_cogni"))
        .args(args)
        .current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .envs(vars.iter().copied());
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed ({}): {}",
        out.status,
        stderr_of(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr_of(&out)
        )
    })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn the_typescript_mcp_sdk_lists_runs_and_continues_a_task() {
    let Some(dir) = sdks("interop_mcp") else {
        return;
    };
    let env = Env::new();
    let mock = write_then_reply_model();
    let base = mock.base_url();
    let seen = client(
        &dir,
        &env,
        "mcp_client.mjs",
        &["--model", "gpt-4.1", "--sandbox", "danger-full-access"],
        &[("OPENAI_BASE_URL", &base), ("OPENAI_API_KEY", "sk-test")],
    );

    assert_eq!(seen["server"]["name"], "cogni");
    let tools = seen["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cogni", "cogni_reply"]);
    assert_eq!(tools[0]["required"], json!(["prompt"]));
    assert_eq!(tools[1]["required"], json!(["prompt", "session_id"]));
    // The SDK checks structured content against a tool's output schema:
    // a result that did not match would have failed the call.
    assert!(
        tools.iter().all(|t| t["hasOutputSchema"] == true),
        "{tools:?}"
    );

    let first = &seen["first"];
    assert_eq!(first["isError"], false, "{first}");
    assert_eq!(text(first), "Wrote out.txt.");
    assert_eq!(first["structuredContent"]["outcome"], "done");
    assert_eq!(first["structuredContent"]["exit_code"], 0);
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "hello\n"
    );
    let progress: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        progress.iter().any(|p| p.contains("echo hello > out.txt")),
        "the SDK's onprogress heard the command: {progress:?}"
    );

    let reply = &seen["reply"];
    assert_eq!(reply["isError"], false, "{reply}");
    assert_eq!(text(reply), "It says hello.");
    assert_eq!(
        reply["structuredContent"]["session_id"],
        first["structuredContent"]["session_id"]
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "the reply is one more request");
    let history = requests[2].messages();
    assert!(
        history
            .iter()
            .any(|m| m.to_string().contains("Wrote out.txt.")),
        "the reply carries the session's history: {history:#?}"
    );

    let bad = &seen["bad"];
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(text(bad).contains("sandbox"), "{bad}");
    mock.assert_invariants();
}

#[test]
fn the_typescript_acp_sdk_drives_a_session_through_the_editors_files() {
    let Some(dir) = sdks("interop_acp") else {
        return;
    };
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "saved notes\n").unwrap();
    let script = env.script_file(
        "script.toml",
        json!([
            {
                "reasoning": "The notes first.",
                "text": "Reading the notes.",
                "tool_calls": [{ "name": "read_file", "arguments": { "path": "notes.txt" } }],
            },
            {
                "expect": "unsaved notes",
                "text": "Writing.",
                "tool_calls": [{
                    "name": "write_file",
                    "arguments": { "path": "out.txt", "content": "hello\n" },
                }],
            },
            { "text": "All done." },
        ]),
    );
    let seen = client(
        &dir,
        &env,
        "acp_client.mjs",
        &[
            "--script",
            script.to_str().unwrap(),
            "--mode",
            "act",
            "--approval",
            "untrusted",
        ],
        &[],
    );
    let work = env.work();
    let at = |name: &str| work.join(name).display().to_string();

    let init = &seen["initialize"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentInfo"]["name"], "cogni");
    let modes = &seen["session"]["modes"];
    assert_eq!(modes["currentModeId"], "act");
    let offered: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["plan", "act", "auto"]);
    assert_eq!(seen["prompt"]["stopReason"], "end_turn");

    let updates = seen["updates"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&Value> {
        updates
            .iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    };
    let joined = |kind: &str| -> String {
        of(kind)
            .iter()
            .map(|u| u["content"]["text"].as_str().unwrap())
            .collect()
    };
    assert_eq!(of("available_commands_update").len(), 1);
    assert_eq!(joined("agent_thought_chunk"), "The notes first.");
    assert_eq!(
        joined("agent_message_chunk"),
        "Reading the notes.Writing.All done."
    );
    let calls = of("tool_call");
    assert_eq!(calls.len(), 2, "{updates:#?}");
    assert_eq!(calls[0]["title"], "Read notes.txt");
    assert_eq!(calls[0]["kind"], "read");
    assert_eq!(calls[0]["locations"][0]["path"], at("notes.txt"));
    assert_eq!(calls[1]["title"], "Write out.txt");
    assert_eq!(calls[1]["kind"], "edit");
    assert_eq!(calls[1]["content"][0]["type"], "diff");
    assert_eq!(calls[1]["content"][0]["newText"], "hello\n");
    let ended: Vec<&Value> = of("tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed")
        .collect();
    assert_eq!(ended.len(), 2, "{updates:#?}");
    assert!(
        ended[0]["rawOutput"]
            .as_str()
            .unwrap()
            .contains("unsaved notes"),
        "the read saw the editor's buffer: {}",
        ended[0]
    );

    // The file tools went through the editor: a read of the open buffer,
    // a write into it, nothing on disk.
    assert_eq!(seen["reads"], json!([at("notes.txt")]));
    assert_eq!(seen["writes"][at("out.txt")], "hello\n");
    assert!(
        !work.join("out.txt").exists(),
        "written through the editor only"
    );

    // Act mode asks before the write, and only then.
    let asked = seen["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], calls[1]["toolCallId"]);
    assert_eq!(asked[0]["toolCall"]["title"], "Write out.txt");
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);

    // Modes: a known one is taken and announced, an unknown one refused.
    assert_eq!(seen["setMode"], json!({}));
    assert_eq!(seen["badMode"]["code"], -32602);
    assert!(
        seen["badMode"]["message"]
            .as_str()
            .unwrap()
            .contains("plan, act, auto"),
        "{}",
        seen["badMode"]
    );
    let changed = of("current_mode_update");
    assert_eq!(changed.len(), 1, "{updates:#?}");
    assert_eq!(changed[0]["currentModeId"], "plan");

    // The session is saved and listed for this directory.
    let listed = seen["list"]["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["sessionId"], seen["session"]["sessionId"]);
    assert_eq!(listed[0]["title"], "answer the notes");

    // Closing stdin ends cogni acp cleanly.
    assert_eq!(seen["exit"], json!({ "code": 0, "signal": null }));
}
