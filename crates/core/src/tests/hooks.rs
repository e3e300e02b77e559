//! The loop with hooks: real commands (`sh`) at every event, the fake
//! provider and the echo tools of the engine tests.

use super::*;
use crate::effects::EndReason;
use cogni_spec::hooks::{HookEvent, HookSpec, OnFailure, DEFAULT_TIMEOUT};
use std::time::Duration;

fn hook(event: HookEvent, matcher: Option<&str>, command: &str) -> HookSpec {
    HookSpec {
        event,
        matcher: matcher.map(String::from),
        command: command.into(),
        timeout: DEFAULT_TIMEOUT,
        on_failure: OnFailure::Allow,
    }
}

/// A harness whose session works in `dir` with `hooks`.
fn with_hooks(dir: &tempfile::TempDir, hooks: Vec<HookSpec>, script: &str) -> Harness {
    let mut c = config();
    c.cwd = dir.path().to_path_buf();
    c.hooks = hooks;
    harness_with(script, c)
}

impl Harness {
    /// The `hook` events, as JSON.
    fn hook_events(&self) -> Vec<serde_json::Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .filter(|e| e["type"] == "hook")
            .collect()
    }

    fn warnings(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Warning { message } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    async fn end(&mut self, reason: EndReason) {
        let events = self.events.clone();
        let sink = move |e: AgentEvent| events.lock().unwrap().push(e);
        self.session.end(reason, &sink).await;
    }
}

/// The text of the last tool output the model was sent in request `n`.
fn last_output(h: &Harness, n: usize) -> String {
    h.fake.seen()[n]
        .input
        .iter()
        .rev()
        .find_map(|i| match &i.content {
            Content::ToolOutput(o) => Some(o.content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

const SHELL_THEN_DONE: &str = r#"
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "rm -rf build" }
[[turns.tool_calls]]
name = "echo"
arguments = { text = "hi" }
[[turns]]
text = "done"
"#;

#[tokio::test]
async fn exit_2_blocks_a_matching_call_with_stderr_as_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let block = hook(
        HookEvent::PreToolUse,
        Some("shell"),
        "echo 'no deletes, use git clean' >&2; exit 2",
    );
    let mut h = with_hooks(&dir, vec![block], SHELL_THEN_DONE);
    let r = h.run("clean up").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    // The shell call never ran; the echo call (not matched) did.
    assert_eq!(*h.log.lock().unwrap(), ["start hi", "end hi"]);
    let blocked = &r.tool_calls[0];
    assert!(blocked.is_error);
    assert_eq!(
        blocked.result,
        "Blocked by a PreToolUse hook: no deletes, use git clean"
    );
    let events = h.hook_events();
    assert_eq!(events.len(), 1, "the matcher skips `echo`: {events:?}");
    assert_eq!(events[0]["event"], "PreToolUse");
    assert_eq!(events[0]["hook"], "hooks.PreToolUse[0]");
    assert_eq!(events[0]["decision"], "block");
    assert_eq!(events[0]["exit_code"], 2);
    assert!(events[0]["duration_ms"].is_u64());
    // The model saw the reason as the call's output.
    let sent = h.fake.seen();
    assert!(sent[1].input.iter().any(|i| matches!(&i.content,
        Content::ToolOutput(o) if o.content.contains("no deletes, use git clean"))));
}

#[tokio::test]
async fn updated_inputs_chain_in_config_order() {
    let dir = tempfile::tempdir().unwrap();
    let first = hook(
        HookEvent::PreToolUse,
        Some("shell"),
        r#"echo '{"updated_input": {"command": "first"}}'"#,
    );
    // Sees the first hook's input, answers in Claude Code's form.
    let second = hook(
        HookEvent::PreToolUse,
        None,
        r#"grep -q '"command":"first"' && echo '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "first then second"}}}'"#,
    );
    let mut h = with_hooks(&dir, vec![first, second], SHELL_THEN_DONE);
    let r = h.run("x").await.unwrap();
    assert_eq!(
        h.log.lock().unwrap()[0],
        "start first then second",
        "what ran"
    );
    assert_eq!(r.tool_calls[0].input, r#"{"command":"first then second"}"#);
    let decisions: Vec<String> = h
        .hook_events()
        .iter()
        .map(|e| format!("{} {}", e["hook"], e["decision"]))
        .collect();
    assert_eq!(
        decisions,
        [
            "\"hooks.PreToolUse[0]\" \"update_input\"",
            "\"hooks.PreToolUse[1]\" \"update_input\"",
            // The echo call: the first hook does not match, the second finds no "first".
            "\"hooks.PreToolUse[1]\" \"failed\"",
        ]
    );
}

#[tokio::test]
async fn ask_without_anyone_to_ask_is_a_recorded_no() {
    let dir = tempfile::tempdir().unwrap();
    let ask = hook(
        HookEvent::PreToolUse,
        Some("shell"),
        r#"echo '{"decision": "ask", "reason": "deleting files"}'"#,
    );
    let mut h = with_hooks(&dir, vec![ask], SHELL_THEN_DONE);
    let started = std::time::Instant::now();
    let r = h.run("x").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "never a hang");
    assert_eq!(*h.log.lock().unwrap(), ["start hi", "end hi"]);
    assert!(r.tool_calls[0].result.contains("non-interactive"), "{r:?}");
    let approvals: Vec<(String, String)> = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Approval { status, reason, .. } => {
                Some((status.as_str().to_string(), reason.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(approvals.len(), 2, "{approvals:?}");
    assert_eq!(approvals[0].0, "asked");
    assert!(approvals[0].1.contains("deleting files"), "{approvals:?}");
    assert_eq!(approvals[1].0, "denied");
    assert_eq!(h.hook_events()[0]["decision"], "ask");
}

/// An approver that says yes and counts the questions.
struct Yes(Mutex<u32>);

impl Approver for Yes {
    fn ask<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        *self.0.lock().unwrap() += 1;
        Box::pin(async { ApprovalDecision::Approve })
    }

    fn is_interactive(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn ask_approved_runs_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let ask = hook(
        HookEvent::PreToolUse,
        Some("shell"),
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask"}}'"#,
    );
    let mut h = with_hooks(&dir, vec![ask], SHELL_THEN_DONE);
    let yes = Arc::new(Yes(Mutex::new(0)));
    h.session.set_approver(yes.clone());
    h.run("x").await.unwrap();
    assert_eq!(*yes.0.lock().unwrap(), 1);
    assert_eq!(h.log.lock().unwrap()[0], "start rm -rf build");
}

#[tokio::test]
async fn notification_hooks_hear_every_question_someone_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("notices");
    std::fs::create_dir(&log).unwrap();
    // One file a notice: notices do not wait for each other.
    let notices = || -> Vec<serde_json::Value> {
        std::fs::read_dir(&log)
            .unwrap()
            .map(|f| serde_json::from_slice(&std::fs::read(f.unwrap().path()).unwrap()).unwrap())
            .collect()
    };
    let hooks = || {
        vec![
            hook(
                HookEvent::PreToolUse,
                Some("shell"),
                r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask"}}'"#,
            ),
            hook(
                HookEvent::Notification,
                Some("permission_prompt"),
                &format!("cat > \"$(mktemp '{}/n.XXXXXX')\"", log.display()),
            ),
        ]
    };
    // The hook's `ask` about the shell call, then the policy's own
    // questions about both calls: three notices.
    let mut c = config();
    c.cwd = dir.path().to_path_buf();
    c.hooks = hooks();
    c.approval_policy = ApprovalPolicy::Untrusted;
    let mut h = harness_with(SHELL_THEN_DONE, c);
    let yes = Arc::new(Yes(Mutex::new(0)));
    h.session.set_approver(yes.clone());
    h.run("x").await.unwrap();
    h.end(EndReason::Exit).await;
    assert_eq!(*yes.0.lock().unwrap(), 3);
    let got = notices();
    let mut messages: Vec<&str> = got.iter().map(|n| n["message"].as_str().unwrap()).collect();
    messages.sort_unstable();
    assert_eq!(
        messages,
        [
            "cogni needs your permission to use echo",
            "cogni needs your permission to use shell",
            "cogni needs your permission to use shell",
        ]
    );
    for notice in &got {
        assert_eq!(notice["hook_event_name"], "Notification");
        assert_eq!(notice["notification_type"], "permission_prompt");
        assert_eq!(notice["session_id"], h.session.id.as_str());
    }
    assert!(
        h.hook_events().iter().all(|e| e["event"] != "Notification"),
        "not an effect: no hook event"
    );
    // No one to ask: no notice.
    std::fs::remove_dir_all(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    let mut h = with_hooks(&dir, hooks(), SHELL_THEN_DONE);
    h.run("x").await.unwrap();
    h.end(EndReason::Exit).await;
    assert!(notices().is_empty());
}

#[tokio::test]
async fn post_tool_use_feeds_a_reason_back_and_adds_context() {
    let dir = tempfile::tempdir().unwrap();
    let post = hook(
        HookEvent::PostToolUse,
        Some("shell"),
        r#"grep -q '"output":"echo: rm -rf build"' && echo '{"decision": "block", "reason": "lint failed"}'"#,
    );
    let context = hook(
        HookEvent::PostToolUse,
        Some("echo"),
        r#"echo '{"hookSpecificOutput": {"additionalContext": "echo is deprecated"}}'"#,
    );
    let mut h = with_hooks(&dir, vec![post, context], SHELL_THEN_DONE);
    let r = h.run("x").await.unwrap();
    assert_eq!(
        r.tool_calls[0].result,
        "echo: rm -rf build\n\n[PostToolUse hook] lint failed"
    );
    let sent = h.fake.seen();
    let context: Vec<&str> = sent[1]
        .input
        .iter()
        .filter(|i| i.role == Role::User)
        .filter_map(|i| i.as_text())
        .filter(|t| t.contains("deprecated"))
        .collect();
    assert_eq!(
        context,
        ["Context from a PostToolUse hook:\necho is deprecated"]
    );
}

#[tokio::test]
async fn a_refused_prompt_never_joins_history_and_plain_stdout_is_context() {
    let dir = tempfile::tempdir().unwrap();
    let guard = hook(
        HookEvent::UserPromptSubmit,
        None,
        r#"if grep -q password; then echo 'no secrets in prompts' >&2; exit 2; fi; echo 'sprint ends friday'"#,
    );
    let mut h = with_hooks(&dir, vec![guard], "[[turns]]\ntext = \"ok\"\n");
    let before = h.session.history().len();
    let r = h.run("my password is hunter2").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Blocked);
    assert!(r
        .reason
        .as_deref()
        .unwrap()
        .contains("no secrets in prompts"));
    assert_eq!(h.session.history().len(), before, "the prompt was kept out");
    assert!(h.fake.seen().is_empty(), "the model was not asked");

    let r = h.run("plan the week").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    let texts: Vec<&str> = h.session.history()[before..]
        .iter()
        .filter_map(|i| i.as_text())
        .collect();
    assert_eq!(
        texts,
        [
            "plan the week",
            "Context from a UserPromptSubmit hook:\nsprint ends friday",
            "ok"
        ]
    );
}

#[tokio::test]
async fn a_stop_hook_keeps_the_turn_going_once() {
    let dir = tempfile::tempdir().unwrap();
    let stop = hook(
        HookEvent::Stop,
        None,
        r#"grep -q '"stop_hook_active":true' && exit 0; echo 'run the tests first' >&2; exit 2"#,
    );
    let script = "[[turns]]\ntext = \"done\"\n[[turns]]\ntext = \"tests pass, done\"\n";
    let mut h = with_hooks(&dir, vec![stop], script);
    let r = h.run("fix it").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(r.final_text, "tests pass, done");
    assert_eq!(r.iterations, 2);
    let last = h.fake.seen()[1].input.last().unwrap().clone();
    assert_eq!(
        last.as_text(),
        Some("A Stop hook did not let the turn end yet: run the tests first")
    );
    let decisions: Vec<String> = h
        .hook_events()
        .iter()
        .map(|e| e["decision"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(decisions, ["block", "continue"]);
}

#[tokio::test]
async fn session_start_runs_once_before_the_first_prompt_and_session_end_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let record = |name: &str| {
        format!(
            "cat >> {}; echo ' {name}' >> {}",
            log.display(),
            log.display()
        )
    };
    let hooks = vec![
        hook(
            HookEvent::SessionStart,
            Some("startup"),
            "echo 'on branch main'",
        ),
        hook(HookEvent::SessionStart, Some("resume"), "echo resumed"),
        hook(HookEvent::SessionEnd, None, &record("end")),
    ];
    let script = "[[turns]]\ntext = \"one\"\n[[turns]]\ntext = \"two\"\n";
    let mut h = with_hooks(&dir, hooks.clone(), script);
    // A session that never ran a turn has nothing to end.
    h.end(EndReason::Exit).await;
    assert!(h.hook_events().is_empty());
    let initial = h.session.initial_len();
    h.run("a").await.unwrap();
    h.run("b").await.unwrap();
    let texts: Vec<&str> = h.session.history()[initial..]
        .iter()
        .filter_map(|i| i.as_text())
        .collect();
    assert_eq!(
        texts,
        [
            "Context from a SessionStart hook:\non branch main",
            "a",
            "one",
            "b",
            "two"
        ]
    );
    h.end(EndReason::Exit).await;
    h.end(EndReason::Exit).await;
    let events: Vec<String> = h
        .hook_events()
        .iter()
        .map(|e| e["hook"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["hooks.SessionStart[0]", "hooks.SessionEnd[0]"]);
    let logged = std::fs::read_to_string(&log).unwrap();
    let end: serde_json::Value =
        serde_json::from_str(logged.trim_end().trim_end_matches("end").trim()).unwrap();
    assert_eq!(end["hook_event_name"], "SessionEnd");
    assert_eq!(end["reason"], "exit");
    assert_eq!(end["session_id"], h.session.id.as_str());

    // A resumed session starts with source "resume".
    let mut h = with_hooks(&dir, hooks, script);
    let saved = h.session.history().to_vec();
    h.session.restore_history(saved);
    h.run("c").await.unwrap();
    let starts: Vec<String> = h
        .hook_events()
        .iter()
        .map(|e| e["hook"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(starts, ["hooks.SessionStart[1]"]);
}

#[tokio::test]
async fn failures_go_on_with_a_warning_unless_on_failure_blocks() {
    let dir = tempfile::tempdir().unwrap();
    // The secret is in what it prints, not in the command line.
    let failing = "printf 'token sk-%s expired' abcdefghijklmnopqrstuvwx01 >&2; exit 1";
    let mut h = with_hooks(
        &dir,
        vec![hook(HookEvent::PreToolUse, Some("shell"), failing)],
        SHELL_THEN_DONE,
    );
    h.run("x").await.unwrap();
    assert_eq!(h.log.lock().unwrap()[0], "start rm -rf build", "it ran");
    let warning = h
        .warnings()
        .into_iter()
        .find(|w| w.contains("hooks.PreToolUse[0]"))
        .unwrap();
    assert!(warning.contains("exit code 1"), "{warning}");
    assert!(warning.contains("going on"), "{warning}");
    assert!(warning.contains("token [REDACTED] expired"), "{warning}");
    assert_eq!(h.hook_events()[0]["decision"], "failed");
    assert_eq!(h.hook_events()[0]["exit_code"], 1);

    let strict = HookSpec {
        on_failure: OnFailure::Block,
        ..hook(HookEvent::PreToolUse, Some("shell"), failing)
    };
    let mut h = with_hooks(&dir, vec![strict], SHELL_THEN_DONE);
    let r = h.run("x").await.unwrap();
    assert_eq!(*h.log.lock().unwrap(), ["start hi", "end hi"]);
    // Fixed text: what the command printed stays with the user.
    assert_eq!(
        r.tool_calls[0].result,
        format!("Blocked by a PreToolUse hook: the PreToolUse hook `{failing}` failed (exit code 1) and its on_failure is \"block\"")
    );
    assert!(!last_output(&h, 1).contains("expired"));
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_and_its_call_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let slow = HookSpec {
        timeout: Duration::from_millis(300),
        ..hook(HookEvent::PreToolUse, Some("shell"), "sleep 30")
    };
    let mut h = with_hooks(&dir, vec![slow], SHELL_THEN_DONE);
    let started = std::time::Instant::now();
    let r = h.run("x").await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "not waited out"
    );
    assert_eq!(*h.log.lock().unwrap(), ["start hi", "end hi"], "blocked");
    assert!(
        r.tool_calls[0].result.contains("gave no answer (timed out"),
        "{}",
        r.tool_calls[0].result
    );
    let event = &h.hook_events()[0];
    assert_eq!(event["decision"], "failed");
    assert_eq!(event["exit_code"], serde_json::Value::Null);
    assert!(
        event["reason"].as_str().unwrap().contains("timed out"),
        "{event}"
    );
}

#[tokio::test]
async fn pre_compact_hooks_see_the_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("compact.json");
    let pre = hook(
        HookEvent::PreCompact,
        Some("manual"),
        &format!("cat > {}", out.display()),
    );
    let script = "[[turns]]\ntext = \"first\"\n[[turns]]\ntext = \"summary\"\n";
    let mut h = with_hooks(&dir, vec![pre], script);
    h.run("x").await.unwrap();
    let events = h.events.clone();
    let sink = move |e: AgentEvent| events.lock().unwrap().push(e);
    h.session.compact(&sink).await.unwrap();
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(seen["hook_event_name"], "PreCompact");
    assert_eq!(seen["trigger"], "manual");
}

#[tokio::test]
async fn hooks_get_the_project_dir_and_session_id_in_their_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env");
    let record = format!(
        "echo \"$COGNI_PROJECT_DIR $CLAUDE_PROJECT_DIR $COGNI_SESSION_ID\" > {}",
        out.display()
    );
    let mut h = with_hooks(
        &dir,
        vec![hook(HookEvent::UserPromptSubmit, None, &record)],
        "[[turns]]\ntext = \"ok\"\n",
    );
    h.run("x").await.unwrap();
    let d = dir.path().display();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap().trim(),
        format!("{d} {d} {}", h.session.id)
    );
}
