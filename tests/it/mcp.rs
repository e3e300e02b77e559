//! The MCP client through the real binary, against real servers installed
//! from the package registries (`tests/mcp/`: `npm ci` for
//! @modelcontextprotocol/server-filesystem and server-everything, `pip
//! install -r tests/mcp/requirements.txt` for mcp-server-git), with the
//! loopback mock as the model. Without node or python, or without the
//! packages, each test says why it skips, unless COGNI_REQUIRE_MCP is set
//! (CI sets it): then that is a failure.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, tool_names, MockResponse, MockServer, Pause};
use crate::common::pids_running;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// Commands run unconfined here: these tests are about MCP, and then run
/// where the kernel sandbox is unavailable too.
const UNCONFINED: &[&str] = &["--sandbox", "danger-full-access"];

/// Where the installed test servers are.
struct Installed {
    bin: PathBuf,
}

impl Installed {
    fn server(&self, name: &str) -> String {
        self.bin
            .join(format!("mcp-server-{name}"))
            .display()
            .to_string()
    }

    /// `[mcp_servers.filesystem]` serving `root`.
    fn filesystem(&self, root: &Path) -> String {
        format!(
            "[mcp_servers.filesystem]\ncommand = \"{}\"\nargs = [\"{}\"]\n",
            self.server("filesystem"),
            root.display()
        )
    }

    fn everything(&self) -> String {
        format!(
            "[mcp_servers.everything]\ncommand = \"{}\"\n",
            self.server("everything")
        )
    }
}

pub(crate) fn on_path(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A test skips with a printed reason, unless COGNI_REQUIRE_MCP is set.
pub(crate) fn skip<T>(test: &str, why: &str) -> Option<T> {
    if std::env::var_os("COGNI_REQUIRE_MCP").is_some() {
        panic!("{test}: {why}, and COGNI_REQUIRE_MCP is set (see .ci/run)");
    }
    eprintln!("skipped {test}: {why}");
    None
}

/// The npm servers, or why `test` skips.
fn installed(test: &str) -> Option<Installed> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/node_modules/.bin");
    if !on_path("node") {
        return skip(test, "node is not installed");
    }
    if !bin.join("mcp-server-filesystem").exists() || !bin.join("mcp-server-everything").exists() {
        return skip(
            test,
            "the test servers are not installed (`npm ci` in tests/mcp)",
        );
    }
    Some(Installed { bin })
}

/// An environment with `a.txt` ("alpha\n") in its workspace and the
/// user config `config(workspace)`.
fn workspace_env(config: impl FnOnce(&Path) -> String) -> Env {
    let env = Env::new();
    std::fs::write(env.work().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.dir.path().join("home/config.toml"), config(&env.work())).unwrap();
    env
}

/// An environment whose user config is `config`.
fn env_with(config: &str) -> Env {
    let env = Env::new();
    std::fs::write(env.dir.path().join("home/config.toml"), config).unwrap();
    env
}

/// `cogni run --json` against the mock, with `args` before the task.
fn run(env: &Env, server: &MockServer, args: &[&str]) -> (Output, Vec<Value>) {
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--json", "--model", "gpt-4.1"])
        .args(UNCONFINED)
        .args(args)
        .arg("go")
        .output()
        .unwrap();
    let events = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (out, events)
}

/// The output of the completed call with id `id`.
fn output_of<'a>(events: &'a [Value], id: &str) -> &'a str {
    events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["id"] == id)
        .and_then(|e| e["item"]["output"].as_str())
        .unwrap_or_else(|| panic!("no output for {id}: {events:?}"))
}

fn warnings(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn names(body: &Value) -> Vec<String> {
    tool_names(body).iter().map(|s| s.to_string()).collect()
}

fn call(id: &str, name: &str, args: Value) -> MockResponse {
    chat::tool_calls_response(&[(id, name, &args.to_string())])
}

#[test]
fn the_model_reads_a_file_and_gets_images_and_structured_content_from_real_servers() {
    let Some(servers) = installed("mcp_real_servers") else {
        return;
    };
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "the answer is 42\n").unwrap();
    let config = servers.filesystem(&env.work()) + &servers.everything();
    std::fs::write(env.dir.path().join("home/config.toml"), config).unwrap();
    let mock = MockServer::start();
    let notes = env.work().join("notes.txt");
    mock.enqueue(chat::tool_calls_response(&[
        (
            "c1",
            "mcp__filesystem__read_text_file",
            &json!({ "path": notes }).to_string(),
        ),
        ("c2", "mcp__everything__get-tiny-image", "{}"),
        (
            "c3",
            "mcp__everything__get-structured-content",
            &json!({ "location": "New York" }).to_string(),
        ),
        (
            "c4",
            "mcp__everything__echo",
            &json!({ "message": "x".repeat(40_000) }).to_string(),
        ),
    ]));
    mock.enqueue(chat::text_response("It is 42."));
    let (out, events) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(warnings(&events).is_empty(), "{:?}", warnings(&events));
    let requests = mock.requests();
    let first = requests[0].body_json();
    let offered = names(first);
    for name in [
        "shell",
        "mcp__filesystem__read_text_file",
        "mcp__filesystem__write_file",
        "mcp__everything__echo",
    ] {
        assert!(offered.contains(&name.to_string()), "{name}: {offered:?}");
    }
    // With the server's own schema.
    let read = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__filesystem__read_text_file")
        .unwrap();
    assert_eq!(read["function"]["parameters"]["type"], "object");
    assert!(
        read["function"]["parameters"]["properties"]["path"].is_object(),
        "{read}"
    );
    assert_eq!(output_of(&events, "c1"), "the answer is 42\n");
    let image = output_of(&events, "c2");
    assert!(image.contains("[image: tool image (image/png, "), "{image}");
    let structured = output_of(&events, "c3");
    assert!(structured.contains("temperature"), "{structured}");
    // Capped like every tool output.
    let echoed = output_of(&events, "c4");
    assert!(echoed.len() < 20_000, "{}", echoed.len());
    assert!(echoed.contains("omitted"), "{echoed:.200}");
    // The model got the outputs.
    let tool_messages: Vec<Value> = requests[1]
        .messages()
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_messages.len(), 4);
    assert!(tool_messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("the answer is 42"));
    // The server's image, as an image, in the user message after them.
    let after = requests[1].messages().last().cloned().unwrap();
    assert_eq!(after["role"], "user", "{after}");
    let url = after["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,"), "{url:.60}");
    mock.assert_invariants();
}

#[test]
fn a_broken_or_slow_server_is_skipped_with_a_warning_and_a_required_one_fails_the_session() {
    let Some(servers) = installed("mcp_broken_servers") else {
        return;
    };
    let marker = format!("{}", 31_000_000 + std::process::id());
    let env = env_with(&format!(
        "{}[mcp_servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo cannot open the database >&2; exit 3\"]\n\
         [mcp_servers.slow]\ncommand = \"sleep\"\nargs = [\"{marker}\"]\nstartup_timeout_sec = 1\n\
         [mcp_servers.missing]\ncommand = \"/nonexistent/mcp-server\"\n",
        servers.filesystem(&PathBuf::from("/tmp"))
    ));
    let mock = MockServer::start();
    mock.enqueue(chat::text_response("done"));
    let started = Instant::now();
    let (out, events) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // The slow one costs its timeout, not more.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let warnings = warnings(&events).join("\n");
    for wanted in [
        "MCP server `broken` did not start and is skipped: the server exited with code 3; its stderr: cannot open the database",
        "MCP server `slow` did not start and is skipped: it did not start within 1 s (startup_timeout_sec)",
        "MCP server `missing` did not start and is skipped: cannot start `/nonexistent/mcp-server`",
    ] {
        assert!(warnings.contains(wanted), "{wanted}\nin:\n{warnings}");
    }
    let offered = names(mock.requests()[0].body_json());
    assert!(offered.iter().any(|n| n.starts_with("mcp__filesystem__")));
    assert!(!offered.iter().any(|n| n.starts_with("mcp__broken")));
    assert!(
        pids_running(&marker).is_empty(),
        "the slow server outlived cogni"
    );

    // Required: the session does not start, and says why.
    let env = env_with(
        "[mcp_servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo no licence >&2; exit 3\"]\nrequired = true\n",
    );
    let mock = MockServer::start();
    let (out, _) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains(
            "cogni: MCP server `broken` is required (required = true) but did not start: the server exited with code 3; its stderr: no licence"
        ),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn tool_filters_and_trusted_tools_decide_what_is_offered_and_asked() {
    let Some(servers) = installed("mcp_filters") else {
        return;
    };
    let env = workspace_env(|work| {
        format!(
        "{}enabled_tools = [\"read_text_file\", \"write_file\", \"list_directory\"]\n\
         disabled_tools = [\"list_directory\", \"no_such_tool\"]\ntrusted_tools = [\"read_text_file\"]\n",
        servers.filesystem(work)
    )
    });
    let mock = MockServer::start();
    mock.enqueue(chat::tool_calls_response(&[
        (
            "read",
            "mcp__filesystem__read_text_file",
            &json!({ "path": env.work().join("a.txt") }).to_string(),
        ),
        (
            "write",
            "mcp__filesystem__write_file",
            &json!({ "path": env.work().join("b.txt"), "content": "beta" }).to_string(),
        ),
    ]));
    mock.enqueue(chat::text_response("done"));
    // Untrusted: what is not known to only read is asked, and without a
    // terminal the answer is no.
    let (out, events) = run(&env, &mock, &["--approval", "untrusted"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let offered: Vec<String> = names(mock.requests()[0].body_json())
        .into_iter()
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    assert_eq!(
        offered,
        [
            "mcp__filesystem__read_text_file",
            "mcp__filesystem__write_file"
        ]
    );
    assert!(
        warnings(&events)
            .iter()
            .any(|w| w.contains("MCP server `filesystem` has no tool `no_such_tool`")),
        "{:?}",
        warnings(&events)
    );
    assert_eq!(output_of(&events, "read"), "alpha\n");
    let write = output_of(&events, "write");
    assert!(write.contains("non-interactive"), "{write}");
    assert!(!env.work().join("b.txt").exists());
    let approvals: Vec<&Value> = events.iter().filter(|e| e["type"] == "approval").collect();
    assert!(
        approvals
            .iter()
            .any(|a| a["tool"] == "mcp__filesystem__read_text_file"
                && a["status"] == "auto_approved"),
        "{approvals:?}"
    );
    assert!(
        approvals
            .iter()
            .any(|a| a["tool"] == "mcp__filesystem__write_file" && a["status"] == "denied"),
        "{approvals:?}"
    );
}

#[test]
fn beyond_max_eager_tools_the_model_finds_tools_with_search_tools() {
    let Some(servers) = installed("mcp_lazy") else {
        return;
    };
    let env = workspace_env(|work| {
        format!(
            "[mcp]\nmax_eager_tools = 5\n{}{}",
            servers.filesystem(work),
            servers.everything()
        )
    });
    let mock = MockServer::start();
    mock.enqueue(call(
        "s1",
        "search_tools",
        json!({ "query": "read text file", "limit": 1 }),
    ));
    mock.enqueue(call(
        "r1",
        "mcp__filesystem__read_text_file",
        json!({ "path": env.work().join("a.txt") }),
    ));
    mock.enqueue(call(
        "s2",
        "search_tools",
        json!({ "query": "nothing-like-this" }),
    ));
    mock.enqueue(chat::text_response("alpha"));
    let (out, events) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let requests = mock.requests();
    let first = names(requests[0].body_json());
    assert!(first.contains(&"search_tools".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    let search = requests[0].body_json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "search_tools")
        .unwrap()["function"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        search.contains("filesystem (14 tools)") && search.contains("everything ("),
        "{search}"
    );
    let found = output_of(&events, "s1");
    assert!(
        found.contains("mcp__filesystem__read_text_file [filesystem]"),
        "{found}"
    );
    // Appended: the tools offered before keep their places.
    let second = names(requests[1].body_json());
    assert_eq!(second[..first.len()], first[..]);
    assert_eq!(second[first.len()..], ["mcp__filesystem__read_text_file"]);
    assert_eq!(output_of(&events, "r1"), "alpha\n");
    let nothing = output_of(&events, "s2");
    assert!(
        nothing.contains("no tool matches") && nothing.contains("mcp__everything__echo"),
        "{nothing}"
    );
    assert_eq!(names(requests[3].body_json()), second);
    mock.assert_invariants();
}

#[test]
fn an_untrusted_projects_servers_start_only_once_it_is_trusted() {
    let Some(servers) = installed("mcp_trust") else {
        return;
    };
    let env = Env::new();
    std::fs::write(
        env.work().join("cogni.toml"),
        servers.filesystem(&env.work()),
    )
    .unwrap();
    let mock = MockServer::start();
    mock.enqueue(chat::text_response("done"));
    let (out, _) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("mcp_servers.filesystem"),
        "{}",
        stderr_of(&out)
    );
    assert!(!names(mock.requests()[0].body_json())
        .iter()
        .any(|n| n.starts_with("mcp__")));
    let trusted = env.cmd().args(["trust"]).output().unwrap();
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr_of(&trusted));
    mock.enqueue(chat::text_response("done"));
    let (out, _) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(names(mock.requests()[1].body_json())
        .iter()
        .any(|n| n == "mcp__filesystem__read_text_file"));
}

#[test]
fn hooks_see_and_can_block_mcp_calls() {
    let Some(servers) = installed("mcp_hooks") else {
        return;
    };
    let env = Env::new();
    let log = env.dir.path().join("pre.json");
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "{}[[hooks.PreToolUse]]\nmatcher = \"mcp__filesystem__.*\"\ncommand = \"cat > '{}'\"\n\
             [[hooks.PreToolUse]]\nmatcher = \"mcp__filesystem__write_file\"\ncommand = \"echo no writes here >&2; exit 2\"\n",
            servers.filesystem(&env.work()),
            log.display()
        ),
    )
    .unwrap();
    let mock = MockServer::start();
    mock.enqueue(call(
        "w",
        "mcp__filesystem__write_file",
        json!({ "path": env.work().join("x.txt"), "content": "x" }),
    ));
    mock.enqueue(chat::text_response("done"));
    let (out, events) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    assert_eq!(seen["tool_name"], "mcp__filesystem__write_file");
    assert_eq!(seen["tool_input"]["content"], "x");
    assert!(output_of(&events, "w").contains("no writes here"));
    assert!(!env.work().join("x.txt").exists());
}

#[test]
fn a_delegated_agent_inherits_the_mcp_tools() {
    let Some(servers) = installed("mcp_delegation") else {
        return;
    };
    let env = workspace_env(|work| servers.filesystem(work));
    let agents = env.dir.path().join("home/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reader.md"),
        "+++\ndescription = \"Reads\"\ntools = [\"read_file\"]\n+++\nRead.\n",
    )
    .unwrap();
    let mock = MockServer::start();
    mock.enqueue(call(
        "d",
        "delegate_to_agent",
        json!({"agent": "reader", "task": "read a.txt"}),
    ));
    mock.enqueue(call(
        "r",
        "mcp__filesystem__read_text_file",
        json!({ "path": env.work().join("a.txt") }),
    ));
    mock.enqueue(chat::text_response("it says alpha"));
    mock.enqueue(chat::text_response("alpha"));
    let (out, events) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let child = names(mock.requests()[1].body_json());
    assert_eq!(child[0], "read_file");
    assert!(
        child.contains(&"mcp__filesystem__read_text_file".to_string()),
        "{child:?}"
    );
    let nested = events
        .iter()
        .find(|e| e["type"] == "subagent" && e["event"]["type"] == "item.completed")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(nested["event"]["item"]["output"], "alpha\n");
    mock.assert_invariants();
}

/// An environment with the everything server, whose command line
/// carries a marker the test finds its processes by.
fn marked_everything(servers: &Installed, test: &str) -> (Env, String) {
    let marker = format!("/tmp/cogni-mcp-{test}-{}", std::process::id());
    let env = env_with(&format!(
        "{}args = [\"stdio\", \"{marker}\"]\n",
        servers.everything()
    ));
    (env, marker)
}

#[test]
fn a_server_that_dies_mid_call_is_restarted_once_and_nothing_outlives_cogni() {
    let Some(servers) = installed("mcp_restart") else {
        return;
    };
    let (env, marker) = marked_everything(&servers, "restart");
    let mock = MockServer::start();
    mock.enqueue(call(
        "long",
        "mcp__everything__trigger-long-running-operation",
        json!({ "duration": 30, "steps": 3 }),
    ));
    mock.enqueue(call(
        "e1",
        "mcp__everything__echo",
        json!({ "message": "again" }),
    ));
    mock.enqueue(chat::text_response("done"));
    let killer = std::thread::spawn({
        let marker = marker.clone();
        move || {
            // Once the long call runs, kill the server.
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                let pids = pids_running(&marker);
                if !pids.is_empty() {
                    std::thread::sleep(Duration::from_millis(1500));
                    for pid in pids_running(&marker) {
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        }
    });
    let (out, events) = run(&env, &mock, &[]);
    assert!(killer.join().unwrap(), "the server never ran");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let died = output_of(&events, "long");
    assert!(
        died.contains(
            "MCP server `everything` stopped during the call (the server was killed by signal 9"
        ) && died.contains("it was restarted: call again"),
        "{died}"
    );
    assert_eq!(output_of(&events, "e1"), "Echo: again");
    assert!(
        pids_running(&marker).is_empty(),
        "the restarted server outlived cogni"
    );
}

#[test]
fn a_killed_cogni_leaves_no_server_behind() {
    let Some(servers) = installed("mcp_kill") else {
        return;
    };
    let (env, marker) = marked_everything(&servers, "kill");
    let mock = MockServer::start();
    mock.enqueue(chat::text_response("never sent").pause_before_headers(Pause::Forever));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("cogni"))
        .current_dir(env.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("COGNI_HOME", env.dir.path().join("home"))
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--model", "gpt-4.1"])
        .args(UNCONFINED)
        .arg("go")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while mock.request_count() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !pids_running(&marker).is_empty(),
        "the server is not running: {} requests, {:?}",
        mock.request_count(),
        child.try_wait()
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_running(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        pids_running(&marker).is_empty(),
        "the server outlived a killed cogni"
    );
}

#[test]
fn the_git_server_from_pypi_answers() {
    if !on_path("python3") {
        skip::<()>("mcp_git", "python3 is not installed");
        return;
    }
    let found = std::process::Command::new("python3")
        .args(["-c", "import mcp_server_git"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip::<()>(
            "mcp_git",
            "mcp-server-git is not installed (`pip install -r tests/mcp/requirements.txt`)",
        );
        return;
    }
    let env =
        env_with("[mcp_servers.git]\ncommand = \"python3\"\nargs = [\"-m\", \"mcp_server_git\"]\n");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(env.work())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(env.work().join("new.txt"), "n\n").unwrap();
    let mock = MockServer::start();
    mock.enqueue(call(
        "st",
        "mcp__git__git_status",
        json!({ "repo_path": env.work() }),
    ));
    mock.enqueue(chat::text_response("one untracked file"));
    let (out, events) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let status = output_of(&events, "st");
    assert!(status.contains("new.txt"), "{status}");
}

#[test]
fn a_streamable_http_server_is_reached_with_its_token_from_the_environment() {
    let Some(servers) = installed("mcp_http") else {
        return;
    };
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut http = std::process::Command::new(servers.server("everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let env = env_with(&format!(
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env_var = \"WEB_TOKEN\"\n"
    ));
    let mock = MockServer::start();
    mock.enqueue(call(
        "e",
        "mcp__web__echo",
        json!({ "message": "over http" }),
    ));
    mock.enqueue(chat::text_response("done"));
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .env("WEB_TOKEN", "t0ken")
        .args(["run", "--json", "--model", "gpt-4.1"])
        .args(UNCONFINED)
        .arg("go")
        .output()
        .unwrap();
    let _ = http.kill();
    let _ = http.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let events: Vec<Value> = stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(output_of(&events, "e"), "Echo: over http");
    // Without the variable, the server is skipped and says why.
    let mock = MockServer::start();
    mock.enqueue(chat::text_response("done"));
    let (out, events) = run(&env, &mock, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        warnings(&events)
            .iter()
            .any(|w| w.contains("$WEB_TOKEN (bearer_token_env_var) is not set")),
        "{:?}",
        warnings(&events)
    );
}

#[test]
fn mcp_list_add_and_remove() {
    let Some(servers) = installed("mcp_cli") else {
        return;
    };
    let env = Env::new();
    let config = env.dir.path().join("home/config.toml");
    std::fs::write(&config, "# mine\nmodel = \"gpt-4.1\"\n").unwrap();
    let add = env
        .cmd()
        .args(["mcp", "add", "files", "--", &servers.server("filesystem")])
        .arg(env.work())
        .output()
        .unwrap();
    assert_eq!(add.status.code(), Some(0), "{}", stderr_of(&add));
    let add = env
        .cmd()
        .args(["mcp", "add", "broken", "--env", "A=1", "--", "false"])
        .output()
        .unwrap();
    assert_eq!(add.status.code(), Some(0), "{}", stderr_of(&add));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("# mine\nmodel = \"gpt-4.1\"\n"), "{text}");
    let list = env.cmd().args(["mcp", "list"]).output().unwrap();
    let listing = stdout_of(&list);
    assert_eq!(list.status.code(), Some(1), "a server failed: {listing}");
    assert!(
        listing.contains("broken (failed: the server exited with code 1): false\n"),
        "{listing}"
    );
    assert!(listing.contains("files (running, 14 tools): "), "{listing}");
    assert!(
        listing.contains("\n  mcp__files__read_text_file\n"),
        "{listing}"
    );
    let remove = env
        .cmd()
        .args(["mcp", "remove", "broken"])
        .output()
        .unwrap();
    assert_eq!(remove.status.code(), Some(0), "{}", stderr_of(&remove));
    let list = env.cmd().args(["mcp", "list"]).output().unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", stdout_of(&list));
    let remove = env
        .cmd()
        .args(["mcp", "remove", "broken"])
        .output()
        .unwrap();
    assert_eq!(remove.status.code(), Some(2));
    assert!(stderr_of(&remove).contains("no MCP server `broken`"));
    let none = env.cmd().args(["mcp", "add", "x"]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr_of(&none).contains("after `--`"),
        "{}",
        stderr_of(&none)
    );
}

/// The figures in docs/performance.md: the first request's tools array
/// and whole body with the filesystem and everything servers, offered at
/// once and through search_tools (`cargo test --test it
/// first_request_size -- --nocapture` prints them).
#[test]
fn first_request_size_with_eager_and_lazy_mcp_tools() {
    let Some(servers) = installed("mcp_first_request_size") else {
        return;
    };
    let mut sizes = Vec::new();
    for (label, mcp) in [
        ("no MCP servers", String::new()),
        (
            "eager (max_eager_tools = 40)",
            format!(
                "[mcp]\nmax_eager_tools = 40\n{}{}",
                servers.filesystem(Path::new("/tmp")),
                servers.everything()
            ),
        ),
        (
            "lazy (max_eager_tools = 0)",
            format!(
                "[mcp]\nmax_eager_tools = 0\n{}{}",
                servers.filesystem(Path::new("/tmp")),
                servers.everything()
            ),
        ),
    ] {
        let env = env_with(&mcp);
        let mock = MockServer::start();
        mock.enqueue(chat::text_response("done"));
        let (out, _) = run(&env, &mock, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        let body = mock.requests()[0].body_json().clone();
        let tools = serde_json::to_string(&body["tools"]).unwrap().len();
        let count = body["tools"].as_array().map_or(0, Vec::len);
        let whole = serde_json::to_string(&body).unwrap().len();
        println!("{label}: {count} tools, tools array {tools} bytes, request body {whole} bytes");
        sizes.push(tools);
    }
    let (none, eager, lazy) = (sizes[0], sizes[1], sizes[2]);
    assert!(eager > none + 10_000, "{sizes:?}");
    // Lazy: only search_tools more than without servers.
    assert!(lazy < none + 1_000, "{sizes:?}");
}
