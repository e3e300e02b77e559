//! Hooks through the real binary: `[[hooks.EVENT]]` in the user's config
//! (or a project's), scripted model turns, and what the hooks saw, did and
//! left behind.

use crate::cli::Env;
use crate::sandbox::{gone_soon, patch, run_script, run_turns, shell, signal_mid_run, tool, Run};
use serde_json::{json, Value};
use std::path::Path;

/// Commands here run unconfined: hooks are not about the sandbox, and the
/// tests then run where it is unavailable too.
const UNCONFINED: &[&str] = &["--sandbox", "danger-full-access"];

/// An environment whose user config is `config` (apply_patch as the edit
/// tool, then the given hooks).
fn env_with(config: &str) -> Env {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!("[tools]\nedit_tool = \"apply_patch\"\n{config}"),
    )
    .unwrap();
    env
}

/// Every event, in lifecycle order.
const EVENTS: [&str; 7] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "Stop",
    "SessionEnd",
];

/// The `hook` events of a run.
fn hook_events(run: &Run) -> Vec<&Value> {
    run.events.iter().filter(|e| e["type"] == "hook").collect()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", path.display()))
}

#[test]
fn every_event_runs_with_claude_codes_json_on_stdin() {
    let env = Env::new();
    let log = env.dir.path().join("log");
    std::fs::create_dir_all(&log).unwrap();
    let mut config = String::from("[compaction]\ntoken_limit = 50000\n");
    for event in EVENTS {
        config.push_str(&format!(
            "[[hooks.{event}]]\ncommand = \"cat > '{}/{event}.json'\"\n",
            log.display()
        ));
    }
    std::fs::write(env.dir.path().join("home/config.toml"), config).unwrap();
    // The first reply reports a context over the compaction limit, so the
    // next request is preceded by a compaction (whose summary is turn 2).
    let script = r#"
[[turns]]
text = "looking"
usage = { input_tokens = 60000, output_tokens = 10 }
[[turns.tool_calls]]
name = "shell"
arguments = { command = "echo hi" }
[[turns]]
text = "summary of the work"
usage = { input_tokens = 900, output_tokens = 10 }
[[turns]]
text = "done"
usage = { input_tokens = 1000, output_tokens = 5 }
"#;
    let out = env
        .run_script(script, "say hi")
        .args(["--json"])
        .args(UNCONFINED)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started = &events[0];
    assert_eq!(started["type"], "session.started");
    let seen = |event: &str| {
        let v = read_json(&log.join(format!("{event}.json")));
        assert_eq!(v["hook_event_name"], event, "{v}");
        assert_eq!(v["session_id"], started["session_id"], "{v}");
        assert_eq!(v["cwd"], started["cwd"], "{v}");
        let transcript = v["transcript_path"].as_str().unwrap();
        assert!(
            transcript.ends_with(".jsonl") && Path::new(transcript).exists(),
            "{v}"
        );
        v
    };
    assert_eq!(seen("SessionStart")["source"], "startup");
    assert_eq!(seen("UserPromptSubmit")["prompt"], "say hi");
    let pre = seen("PreToolUse");
    assert_eq!(pre["tool_name"], "shell");
    assert_eq!(pre["tool_input"], json!({ "command": "echo hi" }));
    let post = seen("PostToolUse");
    assert_eq!(post["tool_input"], json!({ "command": "echo hi" }));
    assert!(
        post["tool_response"]["output"]
            .as_str()
            .unwrap()
            .contains("hi"),
        "{post}"
    );
    assert_eq!(post["tool_response"]["exit_code"], 0);
    assert_eq!(post["tool_response"]["is_error"], false);
    assert_eq!(seen("PreCompact")["trigger"], "auto");
    assert_eq!(seen("Stop")["stop_hook_active"], false);
    assert_eq!(seen("SessionEnd")["reason"], "done");

    // One `hook` event per run, in lifecycle order, the last after the turn.
    let order: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "hook" || e["type"] == "turn.completed")
        .map(|e| e["event"].as_str().unwrap_or("(turn.completed)"))
        .collect();
    let mut expected = EVENTS.to_vec();
    expected.insert(6, "(turn.completed)");
    assert_eq!(order, expected);
    for e in events.iter().filter(|e| e["type"] == "hook") {
        assert_eq!(e["decision"], "continue", "{e}");
        assert_eq!(e["exit_code"], 0, "{e}");
        assert!(e["duration_ms"].is_u64(), "{e}");
        assert!(e["command"].as_str().unwrap().starts_with("cat > "), "{e}");
    }
}

#[test]
fn exit_2_blocks_a_shell_call_and_an_apply_patch_and_nothing_runs() {
    let env = env_with(
        "[[hooks.PreToolUse]]\nmatcher = \"shell|apply_patch\"\ncommand = \"echo 'protected: ask the user first' >&2; exit 2\"\n",
    );
    std::fs::write(env.work().join("keep.txt"), "original\n").unwrap();
    let calls = vec![
        shell("echo x > made.txt"),
        patch("*** Update File: keep.txt\n@@\n-original\n+changed"),
        tool("read_file", json!({ "path": "keep.txt" })),
    ];
    let r = run_turns(&env, std::slice::from_ref(&calls), UNCONFINED);
    assert_eq!(r.calls.len(), 3, "{}", r.stderr);
    for call in &r.calls[..2] {
        assert!(call.failed, "{call:?}");
        assert_eq!(
            call.output,
            "Blocked by a PreToolUse hook: protected: ask the user first"
        );
    }
    assert!(!env.work().join("made.txt").exists(), "the shell call ran");
    assert_eq!(
        std::fs::read_to_string(env.work().join("keep.txt")).unwrap(),
        "original\n",
        "the patch was applied"
    );
    // read_file is not matched: it ran.
    assert!(!r.calls[2].failed && r.calls[2].output.contains("original"));
    let hooks = hook_events(&r);
    assert_eq!(hooks.len(), 2);
    for h in hooks {
        assert_eq!(h["decision"], "block");
        assert_eq!(h["exit_code"], 2);
        assert_eq!(h["reason"], "protected: ask the user first");
    }

    // People see the block on stderr.
    let script = crate::sandbox::script_file(&env, &[calls]);
    let out = env
        .cmd()
        .args(["run", "--script"])
        .arg(script)
        .args(UNCONFINED)
        .arg("try")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("⚑ hooks.PreToolUse[0] blocked: protected: ask the user first"),
        "{stderr}"
    );
}

#[test]
fn updated_input_changes_what_runs() {
    let env = env_with(
        r#"[[hooks.PreToolUse]]
matcher = "shell"
command = """echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"command": "echo rewritten > out.txt"}}}'"""
"#,
    );
    let r = run_turns(&env, &[vec![shell("echo original > out.txt")]], UNCONFINED);
    assert_eq!(
        std::fs::read_to_string(env.work().join("out.txt")).unwrap(),
        "rewritten\n",
        "{}",
        r.stderr
    );
    let completed = r
        .events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .unwrap();
    assert_eq!(
        completed["item"]["arguments"],
        r#"{"command":"echo rewritten > out.txt"}"#
    );
    assert_eq!(hook_events(&r)[0]["decision"], "update_input");
}

#[test]
fn ask_without_a_terminal_is_a_recorded_no_at_once() {
    let env = env_with(
        r#"[[hooks.PreToolUse]]
command = """echo '{"decision": "ask", "reason": "touches the database"}'"""
"#,
    );
    let r = run_script(&env, &[vec![shell("echo x > made.txt")]], UNCONFINED, |c| {
        c.write_stdin("");
    });
    assert!(!env.work().join("made.txt").exists(), "it ran");
    assert!(r.calls[0].failed);
    assert!(
        r.calls[0].output.contains("non-interactive"),
        "{}",
        r.calls[0].output
    );
    let approvals: Vec<(&str, &str)> = r
        .events
        .iter()
        .filter(|e| e["type"] == "approval")
        .map(|e| (e["status"].as_str().unwrap(), e["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(approvals.len(), 2, "{approvals:?}");
    assert_eq!(approvals[0].0, "asked");
    assert!(approvals[0].1.contains("touches the database"));
    assert_eq!(
        approvals[1],
        (
            "denied",
            "no one to ask in a non-interactive run: answered no"
        )
    );
    assert_eq!(hook_events(&r)[0]["decision"], "ask");
}

#[test]
fn a_notification_hook_hears_a_question_asked_on_a_terminal_and_nothing_without_one() {
    use crate::common::pty::Pty;
    use std::time::Duration;
    let env = Env::new();
    let notice = env.dir.path().join("notice.json");
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "[[hooks.Notification]]\nmatcher = \"permission_prompt\"\ncommand = \"cat > '{}'\"\n",
            notice.display()
        ),
    )
    .unwrap();
    let run = || crate::approval_tty::cogni(&env);
    // No terminal: the answer is no at once, and no one is called for.
    let out = run().stdin(std::process::Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!notice.exists(), "nobody to notify");
    // On a terminal the hook hears the question before it is answered.
    let mut pty = Pty::spawn(run(), 100);
    let wait = Duration::from_secs(20);
    pty.expect("Allow shell: touch created.txt", wait);
    crate::repl_notify::wait_for_file(&notice);
    pty.send("y\r");
    assert_eq!(pty.wait(wait).code(), Some(0));
    assert!(env.work().join("created.txt").exists());
    let v = read_json(&notice);
    assert_eq!(v["hook_event_name"], "Notification", "{v}");
    assert_eq!(v["notification_type"], "permission_prompt", "{v}");
    assert_eq!(
        v["message"], "cogni needs your permission to use shell",
        "{v}"
    );
    assert_eq!(v["title"], "cogni", "{v}");
    assert!(
        v["session_id"].as_str().is_some_and(|s| !s.is_empty()),
        "{v}"
    );
    let transcript = v["transcript_path"].as_str().unwrap();
    assert!(Path::new(transcript).exists(), "{v}");
    assert_eq!(
        Path::new(v["cwd"].as_str().unwrap()),
        env.work().canonicalize().unwrap()
    );
}

#[test]
fn a_hook_that_hangs_is_killed_at_its_timeout() {
    let marker = format!("{}.{}", 5000 + std::process::id() % 1000, 4321);
    let env = env_with(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"sleep {marker}\"\ntimeout_ms = 500\n"
    ));
    let r = run_turns(&env, &[vec![shell("echo ran")]], UNCONFINED);
    // A hook that gave no answer blocks its call.
    assert!(
        r.calls[0].failed && r.calls[0].output.contains("gave no answer (timed out"),
        "{:?}",
        r.calls
    );
    let hook = hook_events(&r)[0];
    assert_eq!(hook["decision"], "failed");
    assert_eq!(hook["exit_code"], Value::Null);
    assert!(
        hook["reason"]
            .as_str()
            .unwrap()
            .contains("timed out after 0.5s"),
        "{hook}"
    );
    assert!(
        r.events.iter().any(|e| e["type"] == "warning"
            && e["message"].as_str().unwrap().contains("timed out")),
        "the failure is a warning"
    );
    assert!(
        gone_soon(&marker).is_empty(),
        "the hook's process outlived its timeout"
    );
}

/// Shell lines that put the pid of the hook's grandparent in `$top` and
/// its command line in `$starter`: the fork server (its worker is the
/// hook's parent), or a copy of cogni (the usual way: the hook's parent is
/// the supervisor R, whose parent is S).
const STARTER: &str = "top=$(cut -d' ' -f4 /proc/$PPID/stat)\n\
                       starter=$(tr '\\0' ' ' < /proc/$top/cmdline)\n";

/// An environment whose PreToolUse hook is `sh hook.sh`, `script` in the
/// workspace.
fn with_hook_script(script: &str) -> Env {
    let env = env_with("[[hooks.PreToolUse]]\ncommand = \"sh hook.sh\"\n");
    std::fs::write(env.work().join("hook.sh"), script).unwrap();
    env
}

#[test]
fn a_hook_starts_from_the_fork_server_and_its_background_jobs_end_with_it() {
    let marker = format!("{}.{}", 6000 + std::process::id() % 1000, 98);
    let env = with_hook_script(&format!(
        "sleep {marker}1 &\n\
         setsid sleep {marker}2 > /dev/null 2>&1 &\n\
         nohup sleep {marker}3 > /dev/null 2>&1 &\n\
         {STARTER}echo \"$starter\" > started-by\n"
    ));
    // Run after the hook returned: its jobs are gone already.
    let count = format!(
        "n=0; for f in /proc/[0-9]*/cmdline; do \
         tr '\\0' ' ' < $f 2>/dev/null | grep -q 'sleep {marker}[1-3]' && n=$((n+1)); \
         done; echo left=$n"
    );
    let r = run_turns(&env, &[vec![shell(&count)]], UNCONFINED);
    assert_eq!(hook_events(&r)[0]["decision"], "continue", "{:?}", r.events);
    let started_by = std::fs::read_to_string(env.work().join("started-by")).unwrap();
    assert!(started_by.contains("__fork-server"), "{started_by}");
    assert!(
        r.calls[0].output.contains("left=0"),
        "{}",
        r.calls[0].output
    );
    assert!(
        gone_soon(&marker).is_empty(),
        "the hook's jobs outlived cogni"
    );
}

#[test]
fn a_hook_that_cannot_be_exec_d_gave_no_answer_and_blocks() {
    let env = env_with("[[hooks.PreToolUse]]\ncommand = \"not-a-program\"\n");
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // Executable, but neither a binary nor a script: exec fails (ENOEXEC).
    let path = bin.join("not-a-program");
    std::fs::write(&path, [0u8, 1, 2, 3]).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let search = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let r = run_script(&env, &[vec![shell("echo ran")]], UNCONFINED, |cmd| {
        cmd.env("PATH", &search);
    });
    // Not a `#!` script nor a binary, so the shell is asked to run it, and
    // cannot (126).
    let hook = hook_events(&r)[0];
    assert_eq!(hook["decision"], "failed", "{hook}");
    let reason = hook["reason"].as_str().unwrap();
    assert!(reason.contains("could not run"), "{reason}");
    assert!(
        r.calls[0].output.starts_with(
            "Blocked by a PreToolUse hook: the PreToolUse hook `not-a-program` gave no answer"
        ),
        "a hook that cannot answer blocks: {}",
        r.calls[0].output
    );
}

#[test]
fn a_hook_whose_fork_server_dies_runs_again_the_usual_way() {
    // Served: kill the server (which kills this hook); else say so.
    let env = with_hook_script(&format!(
        "{STARTER}case \"$starter\" in\n\
         *__fork-server*) echo served >> runs; kill -9 $top; sleep 10 ;;\n\
         *) echo usual >> runs ;;\n\
         esac\n"
    ));
    let started = std::time::Instant::now();
    let r = run_turns(
        &env,
        &[vec![shell("echo one")], vec![shell("echo two")]],
        UNCONFINED,
    );
    let runs = std::fs::read_to_string(env.work().join("runs")).unwrap();
    assert_eq!(runs, "served\nusual\nusual\n");
    for hook in hook_events(&r) {
        assert_eq!(hook["decision"], "continue", "{hook}");
    }
    assert_eq!(r.calls.len(), 2);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "the killed hook's sleep held things up"
    );
    let log = std::fs::read_to_string(env.dir.path().join("home/log/cogni.log")).unwrap();
    assert!(log.contains("running it again the usual way"), "{log}");
}

#[test]
fn a_hook_run_again_after_its_fork_server_died_keeps_its_one_timeout() {
    // Served: 1.5 s, then the server dies; the usual way would sleep 10 s.
    // The hook's 2.5 s timeout covers both runs: the second gets what is
    // left (about 1 s), not 2.5 s afresh.
    let marker = format!("{}.{}", 6000 + std::process::id() % 1000, 96);
    let env = env_with("[[hooks.PreToolUse]]\ncommand = \"sh hook.sh\"\ntimeout_ms = 2500\n");
    std::fs::write(
        env.work().join("hook.sh"),
        format!(
            "{STARTER}case \"$starter\" in\n\
             *__fork-server*) echo served >> runs; sleep 1.5; kill -9 $top; sleep 10 ;;\n\
             *) echo usual >> runs; sleep {marker} ;;\n\
             esac\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let r = run_turns(&env, &[vec![shell("echo one")]], UNCONFINED);
    let took = started.elapsed();
    let runs = std::fs::read_to_string(env.work().join("runs")).unwrap();
    assert_eq!(runs, "served\nusual\n");
    let hook = hook_events(&r)[0];
    assert!(
        hook["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out after 2.5s"),
        "{hook}"
    );
    // 2.5 s for both runs; a fresh timeout for the second would be 4 s.
    assert!(
        took < std::time::Duration::from_millis(3700),
        "the second run got a fresh timeout: {took:?}"
    );
    assert!(
        gone_soon(&marker).is_empty(),
        "the hook outlived its timeout"
    );
}

#[test]
fn nothing_a_hook_started_outlives_cogni_killed_mid_hook() {
    for (i, signal) in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT]
        .into_iter()
        .enumerate()
    {
        let marker = format!("{}.{i}7", 6000 + std::process::id() % 1000);
        let env = with_hook_script(&format!(
            "{STARTER}echo $top > server\n\
             sleep {marker}1 &\n\
             setsid sleep {marker}2 > /dev/null 2>&1 &\n\
             sleep {marker}9\n"
        ));
        let turns = [vec![shell("echo never")]];
        let started = signal_mid_run(&env, &turns, UNCONFINED, &marker, 3, signal);
        assert!(started, "signal {signal}: the hook never started");
        let left = gone_soon(&marker);
        assert!(
            left.is_empty(),
            "signal {signal}: the hook's processes outlived cogni: {left:?}"
        );
        let server = std::fs::read_to_string(env.work().join("server")).unwrap();
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.trim())).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains("__fork-server"),
            "signal {signal}: the fork server outlived cogni"
        );
    }
}

#[test]
fn an_untrusted_projects_hooks_are_ignored_until_it_is_trusted() {
    let env = Env::new();
    std::fs::write(
        env.work().join("cogni.toml"),
        "[[hooks.PreToolUse]]\ncommand = \"touch hook-ran\"\n",
    )
    .unwrap();
    let r = run_turns(&env, &[vec![shell("echo hi")]], UNCONFINED);
    assert!(!env.work().join("hook-ran").exists());
    assert!(hook_events(&r).is_empty());
    for needle in [
        "not trusted",
        "allowlist",
        "hooks.PreToolUse",
        "cogni trust",
    ] {
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }

    let trusted = env.cmd().arg("trust").output().unwrap();
    assert_eq!(trusted.status.code(), Some(0));
    let r = run_turns(&env, &[vec![shell("echo hi")]], UNCONFINED);
    assert!(env.work().join("hook-ran").exists(), "{}", r.stderr);
    assert_eq!(hook_events(&r).len(), 1);
    assert!(!r.stderr.contains("not trusted"), "{}", r.stderr);
}
