//! Real processes through `cogni-process` and the `shell` tool: process-group
//! kills on timeout and cancel, background jobs holding the pipes, bounded
//! capture of huge output, binary output, environment stripping, exit codes
//! and signals.

use crate::common;
use cogni::process::{self as exec, ExecOutput, ExecRequest, Termination, DEFAULT_IO_DRAIN};
use cogni::protocol::SandboxPolicy;
use cogni::tools::env::ShellEnvPolicy;
use cogni::tools::shell::ShellTool;
use cogni::tools::{Tool, ToolConfig, ToolContext, ToolInput, ToolResult};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SAFETY_TIMEOUT: Duration = Duration::from_secs(20);

fn request(script: &str, timeout: Duration) -> ExecRequest {
    ExecRequest {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        env: ShellEnvPolicy::default().child_env().unwrap(),
        timeout,
        capture_limit_bytes: 64 * 1024,
        kill_grace: Duration::from_millis(300),
        io_drain: DEFAULT_IO_DRAIN,
        sandbox: None,
        stdin: None,
    }
}

async fn run(script: &str, timeout: Duration) -> ExecOutput {
    exec::run(request(script, timeout)).await.unwrap()
}

async fn shell(command: serde_json::Value) -> ToolResult {
    let config = ToolConfig::default();
    let ctx = ToolContext::new(
        std::env::temp_dir().canonicalize().unwrap(),
        SandboxPolicy::default(),
        Arc::new(config.clone()),
    );
    ShellTool::new(&config)
        .run(
            ToolInput::Json(serde_json::json!({ "command": command })),
            &ctx,
        )
        .await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Alive and not a zombie (nothing may reap orphans in a container).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|s| s.trim_start().chars().next());
    state != Some('Z')
}

/// Poll until none of `pids` is alive; false when some still are after 3 s.
async fn all_gone(pids: &[i32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if !pids.iter().any(|&p| alive(p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let out = run(
        "echo $$; sleep 30 & echo $!; (sleep 30; echo never) & echo $!; sleep 30",
        Duration::from_millis(300),
    )
    .await;
    assert!(out.timed_out);
    assert_eq!(out.termination, Termination::Signaled(libc::SIGTERM));
    assert!(out.duration < Duration::from_secs(5), "{:?}", out.duration);
    let pids = pids(&text(&out.stdout.head));
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(all_gone(&pids).await, "left alive: {pids:?}");
}

#[tokio::test]
async fn sigterm_ignored_escalates_to_sigkill() {
    let out = run(
        "trap '' TERM; sleep 30 & echo $!; while :; do sleep 0.05; done",
        // Long enough for a loaded machine's bash to reach its trap before
        // the timeout's SIGTERM (at 200 ms it sometimes did not).
        Duration::from_millis(1000),
    )
    .await;
    assert!(out.timed_out);
    assert_eq!(out.termination, Termination::Signaled(libc::SIGKILL));
    // 1 s timeout + 300 ms grace.
    assert!(
        out.duration >= Duration::from_millis(1300),
        "{:?}",
        out.duration
    );
    let pids = pids(&text(&out.stdout.head));
    assert_eq!(pids.len(), 1);
    assert!(all_gone(&pids).await, "left alive: {pids:?}");
}

#[tokio::test]
async fn background_job_holding_stdout_does_not_hang() {
    // Unconfined, the subreaper kills the job when the command exits, so
    // nothing holds the pipes and the call returns at once.
    let start = Instant::now();
    let out = run("sleep 30 & echo $!; echo done", SAFETY_TIMEOUT).await;
    let pids = pids(&text(&out.stdout.head));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(!out.timed_out);
    assert_eq!(out.termination, Termination::Exited(0));
    assert!(!out.output_left_open);
    assert!(text(&out.stdout.head).ends_with("done\n"));
    assert!(all_gone(&pids).await, "left alive: {pids:?}");

    // In the sandbox the background job dies with the command (its PID
    // namespace ends), so nothing holds the pipes.
    let start = Instant::now();
    let r = shell(serde_json::json!("sleep 30.2468 & echo started")).await;
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(r.content.ends_with("started\n"), "{}", r.content);
    assert!(
        !r.content.contains("kept stdout/stderr open"),
        "{}",
        r.content
    );
    assert_eq!(common::processes_running("sleep\x0030.2468"), 0);
}

#[tokio::test]
async fn hundred_megabytes_of_output_stay_bounded() {
    let mut req = request("yes | head -c 100000000", SAFETY_TIMEOUT);
    req.capture_limit_bytes = 1024 * 1024;
    let out = exec::run(req).await.unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    let s = &out.stdout;
    assert_eq!(s.total_bytes, 100_000_000);
    assert_eq!(s.total_lines, 50_000_000);
    assert!(s.head.len() + s.tail.len() <= 1024 * 1024);
    assert!(s.head.capacity() <= 1024 * 1024 && s.tail.capacity() <= 1024 * 1024);
    assert_eq!(
        s.gap.bytes,
        100_000_000 - (s.head.len() + s.tail.len()) as u64
    );
    assert!(s.head.starts_with(b"y\ny\n") && s.tail.ends_with(b"y\ny\n"));

    let r = shell(serde_json::json!("yes | head -c 100000000")).await;
    let config = ToolConfig::default();
    assert!(
        r.content.len() < config.max_output_bytes + 200,
        "{}",
        r.content.len()
    );
    assert!(
        r.content.contains("[... 49999744 lines omitted ...]"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn stdout_and_stderr_are_drained_concurrently() {
    // Sequential reading would deadlock: stderr fills its pipe first.
    let out = run(
        "head -c 1000000 /dev/zero >&2; head -c 1000000 /dev/zero",
        SAFETY_TIMEOUT,
    )
    .await;
    assert!(!out.timed_out);
    assert_eq!(out.stdout.total_bytes, 1_000_000);
    assert_eq!(out.stderr.total_bytes, 1_000_000);
}

#[tokio::test]
async fn binary_output_is_shown_lossily() {
    let r = shell(serde_json::json!("printf 'a\\000b\\377c\\n'")).await;
    assert!(!r.is_error);
    assert!(r.content.ends_with("a\0b\u{FFFD}c\n"), "{:?}", r.content);
}

#[tokio::test]
async fn environment_strips_secrets_but_keeps_path() {
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    vars.push(("FOO_API_KEY".into(), "sk-test".into()));
    vars.push(("MY_TOKEN".into(), "tok".into()));
    vars.push(("OPENAI_API_KEY".into(), "sk-openai".into()));
    let mut req = request("env", SAFETY_TIMEOUT);
    req.env = ShellEnvPolicy::default().apply(vars).unwrap();
    let env = text(&exec::run(req).await.unwrap().stdout.head);
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    for secret in ["FOO_API_KEY=", "MY_TOKEN=", "OPENAI_API_KEY=", "sk-"] {
        assert!(!env.contains(secret), "{secret} leaked: {env}");
    }

    // The tool itself: no inherited name looks secret.
    let r = shell(serde_json::json!(["env"])).await;
    for line in r.content.lines().skip(1) {
        let name = line.split('=').next().unwrap_or("").to_ascii_uppercase();
        for word in ["KEY", "SECRET", "TOKEN", "PASSWORD"] {
            assert!(!name.contains(word), "{line}");
        }
    }
}

#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let script = format!(
        "echo $$ > {f}; sleep 30 & echo $! >> {f}; wait",
        f = pid_file.display()
    );
    let mut fut = Box::pin(exec::run(request(&script, SAFETY_TIMEOUT)));
    let deadline = Instant::now() + Duration::from_secs(5);
    let pids = loop {
        tokio::select! {
            _ = &mut fut => panic!("finished before it was cancelled"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let found = pids(&std::fs::read_to_string(&pid_file).unwrap_or_default());
        if found.len() == 2 {
            break found;
        }
        assert!(Instant::now() < deadline, "child never wrote its pids");
    };
    assert!(pids.iter().all(|&p| alive(p)));
    drop(fut);
    assert!(all_gone(&pids).await, "left alive: {pids:?}");
}

#[tokio::test]
async fn exit_codes_and_signals_are_reported() {
    assert_eq!(
        run("exit 7", SAFETY_TIMEOUT).await.termination,
        Termination::Exited(7)
    );
    let out = run("kill -9 $$", SAFETY_TIMEOUT).await;
    assert_eq!(out.termination, Termination::Signaled(9));
    assert_eq!(out.termination.exit_code(), 137);

    let r = shell(serde_json::json!(["false"])).await;
    assert_eq!(r.exit_code(), Some(1));
    assert!(r.is_error);
    let r = shell(serde_json::json!("kill -TERM $$")).await;
    assert_eq!(r.exit_code(), Some(143));
    assert!(
        r.content.starts_with("killed by signal 15 (SIGTERM), "),
        "{}",
        r.content
    );
}
