//! What a hook reads and writes: the JSON event on stdin (Claude Code's
//! shape, so scripts port), its exit code, and the JSON it may print on
//! stdout (cogni's flat keys or Claude Code's).

use super::super::command::Ran;
use super::HookEvent;
use cogni_protocol::ToolCall;
use cogni_tools::ToolResult;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;

/// Most of a reason (exit 2's stderr, a JSON `reason`) the model sees.
pub const MAX_REASON_BYTES: usize = 4 * 1024;
/// Most of a hook's additional context the model sees.
pub const MAX_CONTEXT_BYTES: usize = 10 * 1024;

/// What happened at the hook's event, with its data.
#[derive(Debug, Clone, Copy)]
pub enum EventData<'a> {
    SessionStart {
        source: &'static str,
    },
    UserPromptSubmit {
        prompt: &'a str,
    },
    PreToolUse {
        call: &'a ToolCall,
    },
    PostToolUse {
        call: &'a ToolCall,
        result: &'a ToolResult,
    },
    PreCompact {
        trigger: &'static str,
    },
    Stop {
        stop_hook_active: bool,
    },
    SessionEnd {
        reason: &'static str,
    },
    SubagentStart {
        agent: &'a str,
    },
    SubagentStop {
        agent: &'a str,
        stop_hook_active: bool,
    },
    /// Not an effect's point: see `notify`.
    Notification {
        kind: &'static str,
        message: &'a str,
    },
}

impl EventData<'_> {
    pub fn event(&self) -> HookEvent {
        match self {
            EventData::SessionStart { .. } => HookEvent::SessionStart,
            EventData::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            EventData::PreToolUse { .. } => HookEvent::PreToolUse,
            EventData::PostToolUse { .. } => HookEvent::PostToolUse,
            EventData::PreCompact { .. } => HookEvent::PreCompact,
            EventData::Stop { .. } => HookEvent::Stop,
            EventData::SessionEnd { .. } => HookEvent::SessionEnd,
            EventData::SubagentStart { .. } => HookEvent::SubagentStart,
            EventData::SubagentStop { .. } => HookEvent::SubagentStop,
            EventData::Notification { .. } => HookEvent::Notification,
        }
    }

    /// What a matcher is matched against; `None` for events without one.
    pub fn subject(&self) -> Option<&str> {
        match self {
            EventData::SessionStart { source } => Some(source),
            EventData::PreToolUse { call } | EventData::PostToolUse { call, .. } => {
                Some(&call.name)
            }
            EventData::PreCompact { trigger } => Some(trigger),
            EventData::SessionEnd { reason } => Some(reason),
            EventData::SubagentStart { agent } | EventData::SubagentStop { agent, .. } => {
                Some(agent)
            }
            EventData::Notification { kind, .. } => Some(kind),
            EventData::UserPromptSubmit { .. } | EventData::Stop { .. } => None,
        }
    }
}

/// The session as a hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    pub id: &'a str,
    pub transcript_path: Option<&'a Path>,
    pub cwd: &'a Path,
}

/// A call's arguments as JSON: the object the model sent, or the raw text
/// of a freeform call (a patch) as a string.
pub fn tool_input(call: &ToolCall) -> Value {
    serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::String(call.arguments.clone()))
}

/// The JSON event on the hook's stdin.
pub fn input(session: Session<'_>, data: &EventData<'_>) -> Value {
    let mut v = json!({
        "session_id": session.id,
        "transcript_path": session.transcript_path,
        "cwd": session.cwd,
        "hook_event_name": data.event().name(),
    });
    let extra = match *data {
        EventData::SessionStart { source } => json!({ "source": source }),
        EventData::UserPromptSubmit { prompt } => json!({ "prompt": prompt }),
        EventData::PreToolUse { call } => json!({
            "tool_name": call.name,
            "tool_input": tool_input(call),
            "tool_use_id": call.id,
        }),
        EventData::PostToolUse { call, result } => json!({
            "tool_name": call.name,
            "tool_input": tool_input(call),
            "tool_use_id": call.id,
            "tool_response": {
                "output": result.content,
                "is_error": result.is_error,
                "exit_code": result.exit_code(),
            },
        }),
        EventData::PreCompact { trigger } => json!({ "trigger": trigger }),
        EventData::Stop { stop_hook_active } => json!({ "stop_hook_active": stop_hook_active }),
        EventData::SessionEnd { reason } => json!({ "reason": reason }),
        EventData::SubagentStart { agent } => json!({ "agent_type": agent }),
        EventData::SubagentStop {
            agent,
            stop_hook_active,
        } => json!({ "agent_type": agent, "stop_hook_active": stop_hook_active }),
        EventData::Notification { kind, message } => json!({
            "message": message,
            "title": "cogni",
            "notification_type": kind,
        }),
    };
    if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
        v.extend(extra);
    }
    v
}

/// What a hook asked for in its JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    Allow,
    Deny,
    Ask,
    /// `decision: "block"`: deny before a call, feedback after it, keep
    /// going at Stop, refuse a prompt.
    Block,
}

/// The JSON a hook printed on stdout (exit 0), both key styles read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Said {
    pub decision: Option<Asked>,
    pub reason: Option<String>,
    pub additional_context: Option<String>,
    pub updated_input: Option<Value>,
    /// `continue: false`: end the turn, with this reason.
    pub stop: Option<String>,
    /// `systemMessage`: shown to the user.
    pub system_message: Option<String>,
}

/// Read a hook's stdout: `Ok(None)` when it is not meant as JSON (it does
/// not start with `{`), the JSON object's answer, or why an answer that
/// starts like one cannot be read (not a JSON object, a `decision` that
/// is none of the known ones).
pub fn parse_stdout(stdout: &str) -> Result<Option<Said>, String> {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return Ok(None);
    }
    let top = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(top)) => top,
        Ok(_) => return Err("stdout starts with `{` but is not a JSON object".into()),
        Err(e) => return Err(format!("stdout starts with `{{` but is not JSON: {e}")),
    };
    let specific = match top.get("hookSpecificOutput") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let mut said = Said::default();
    let text_of =
        |m: &Map<String, Value>, key: &str| m.get(key).and_then(Value::as_str).map(str::to_string);
    // Claude Code's specific keys first, then cogni's flat ones (and
    // Claude Code's top-level `decision`/`reason`).
    let decision = specific
        .get("permissionDecision")
        .map(|d| ("hookSpecificOutput.permissionDecision", d))
        .or_else(|| top.get("decision").map(|d| ("decision", d)));
    if let Some((key, value)) = decision {
        said.decision = match value.as_str() {
            Some("allow" | "approve") => Some(Asked::Allow),
            Some("deny") => Some(Asked::Deny),
            Some("ask") => Some(Asked::Ask),
            Some("block") => Some(Asked::Block),
            _ => {
                return Err(format!(
                    "`{key}` is {value}, not one of \"allow\", \"deny\", \"ask\", \"block\""
                ))
            }
        };
    }
    said.reason =
        text_of(&specific, "permissionDecisionReason").or_else(|| text_of(&top, "reason"));
    said.additional_context = text_of(&specific, "additionalContext")
        .or_else(|| text_of(&top, "additional_context"))
        .filter(|c| !c.trim().is_empty());
    said.updated_input = specific
        .get("updatedInput")
        .or_else(|| top.get("updated_input"))
        .cloned();
    if top.get("continue") == Some(&Value::Bool(false)) {
        said.stop = Some(
            text_of(&top, "stopReason")
                .or_else(|| text_of(&top, "stop_reason"))
                .unwrap_or_default(),
        );
    }
    said.system_message = text_of(&top, "systemMessage");
    Ok(Some(said))
}

/// How a hook's run came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Exit 0, with what its stdout said (empty when it said nothing).
    Done(Said),
    /// Exit 2: block, with stderr (redacted and capped) as the reason.
    Blocked(String),
    /// It answered that it failed: an exit code other than 0, 2, 126 and
    /// 127. `status` says which (and is all a model may see); `stderr` is
    /// for the user.
    Failed { status: String, stderr: String },
    /// It gave no answer: it could not start (126 and 127 are the shell's
    /// "cannot run" and "not found"), timed out, died by a signal, or
    /// printed JSON that cannot be read. A guard that cannot answer blocks.
    NoAnswer { status: String, stderr: String },
}

/// The verdict of a run of `event`'s hook. Plain (non-JSON) stdout of a
/// SessionStart or UserPromptSubmit hook is context for the model, as in
/// Claude Code; elsewhere it is ignored.
pub fn verdict(event: HookEvent, ran: &Ran, timeout: Duration) -> Verdict {
    let stderr = || cap(&ran.stderr, MAX_REASON_BYTES);
    match ran.exit_code {
        Some(0) => match parse_stdout(&ran.stdout) {
            Ok(Some(said)) => Verdict::Done(said),
            Ok(None) if event.plain_stdout_is_context() && !ran.stdout.trim().is_empty() => {
                Verdict::Done(Said {
                    additional_context: Some(ran.stdout.clone()),
                    ..Said::default()
                })
            }
            Ok(None) => Verdict::Done(Said::default()),
            Err(problem) => Verdict::NoAnswer {
                status: format!("its answer cannot be read: {problem}"),
                stderr: stderr(),
            },
        },
        Some(2) => Verdict::Blocked(stderr()),
        Some(code @ (126 | 127)) => Verdict::NoAnswer {
            status: format!(
                "exit code {code}: the shell could not {} it",
                if code == 126 { "run" } else { "find" }
            ),
            stderr: stderr(),
        },
        Some(_) => Verdict::Failed {
            status: ran.status(timeout),
            stderr: stderr(),
        },
        None => Verdict::NoAnswer {
            status: ran.status(timeout),
            stderr: stderr(),
        },
    }
}

/// `text` with secrets redacted, cut to at most `max` bytes (on a
/// character boundary) with a note saying how much was cut.
pub fn cap(text: &str, max: usize) -> String {
    cogni_process::truncate::clip(&cogni_sandbox::redact::redact(text.trim()), max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_protocol::{CommandEnd, ToolCallKind};

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: arguments.into(),
            kind: ToolCallKind::Function,
        }
    }

    fn ran(code: Option<i32>, stdout: &str, stderr: &str) -> Ran {
        Ran {
            exit_code: code,
            timed_out: code.is_none(),
            stdout: stdout.into(),
            stderr: stderr.into(),
            duration: Duration::from_millis(3),
        }
    }

    fn session() -> Session<'static> {
        Session {
            id: "s-1",
            transcript_path: None,
            cwd: Path::new("/work"),
        }
    }

    #[test]
    fn stdin_has_claude_codes_shape_for_every_event() {
        let shell = call("shell", r#"{"command":"ls"}"#);
        let patch = ToolCall {
            kind: ToolCallKind::Freeform,
            ..call("apply_patch", "*** Begin Patch\n*** End Patch")
        };
        let result = ToolResult {
            content: "a\nb".into(),
            is_error: false,
            command: Some(CommandEnd {
                exit_code: Some(0),
                output_start: 0,
            }),
            diff: None,
            images: Vec::new(),
        };
        let saved = Session {
            transcript_path: Some(Path::new("/home/.cogni/sessions/s-1.jsonl")),
            ..session()
        };
        let cases = [
            (
                input(saved, &EventData::SessionStart { source: "resume" }),
                json!({"session_id": "s-1", "transcript_path": "/home/.cogni/sessions/s-1.jsonl", "cwd": "/work",
                       "hook_event_name": "SessionStart", "source": "resume"}),
            ),
            (
                input(session(), &EventData::UserPromptSubmit { prompt: "fix it" }),
                json!({"session_id": "s-1", "transcript_path": null, "cwd": "/work",
                       "hook_event_name": "UserPromptSubmit", "prompt": "fix it"}),
            ),
            (
                input(session(), &EventData::PreToolUse { call: &shell }),
                json!({"session_id": "s-1", "transcript_path": null, "cwd": "/work",
                       "hook_event_name": "PreToolUse", "tool_name": "shell",
                       "tool_input": {"command": "ls"}, "tool_use_id": "call_1"}),
            ),
            (
                input(session(), &EventData::PreToolUse { call: &patch }),
                json!({"session_id": "s-1", "transcript_path": null, "cwd": "/work",
                       "hook_event_name": "PreToolUse", "tool_name": "apply_patch",
                       "tool_input": "*** Begin Patch\n*** End Patch", "tool_use_id": "call_1"}),
            ),
            (
                input(
                    session(),
                    &EventData::PostToolUse {
                        call: &shell,
                        result: &result,
                    },
                ),
                json!({"session_id": "s-1", "transcript_path": null, "cwd": "/work",
                       "hook_event_name": "PostToolUse", "tool_name": "shell",
                       "tool_input": {"command": "ls"}, "tool_use_id": "call_1",
                       "tool_response": {"output": "a\nb", "is_error": false, "exit_code": 0}}),
            ),
            (
                input(session(), &EventData::PreCompact { trigger: "auto" }),
                json!({"session_id": "s-1", "transcript_path": null, "cwd": "/work",
                       "hook_event_name": "PreCompact", "trigger": "auto"}),
            ),
            (
                input(
                    session(),
                    &EventData::Stop {
                        stop_hook_active: true,
                    },
                ),
                json!({"session_id": "s-1", "transcript_path": null, "cwd": "/work",
                       "hook_event_name": "Stop", "stop_hook_active": true}),
            ),
            (
                input(session(), &EventData::SessionEnd { reason: "exit" }),
                json!({"session_id": "s-1", "transcript_path": null, "cwd": "/work",
                       "hook_event_name": "SessionEnd", "reason": "exit"}),
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn cognis_flat_keys_are_read() {
        let said = parse_stdout(
            r#"{"decision": "deny", "reason": "no", "additional_context": "ctx", "updated_input": {"command": "ls -a"}}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            said,
            Said {
                decision: Some(Asked::Deny),
                reason: Some("no".into()),
                additional_context: Some("ctx".into()),
                updated_input: Some(json!({"command": "ls -a"})),
                ..Said::default()
            }
        );
        for (word, asked) in [
            ("allow", Asked::Allow),
            ("ask", Asked::Ask),
            ("block", Asked::Block),
            ("approve", Asked::Allow),
        ] {
            let said = parse_stdout(&format!(r#"{{"decision": "{word}"}}"#))
                .unwrap()
                .unwrap();
            assert_eq!(said.decision, Some(asked), "{word}");
        }
    }

    #[test]
    fn claude_codes_keys_are_read_and_win() {
        let said = parse_stdout(
            r#"{
              "decision": "allow",
              "continue": false,
              "stopReason": "enough",
              "systemMessage": "note for the user",
              "suppressOutput": true,
              "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": "sure?",
                "additionalContext": "more",
                "updatedInput": {"command": "ls"}
              }
            }"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            said,
            Said {
                decision: Some(Asked::Ask),
                reason: Some("sure?".into()),
                additional_context: Some("more".into()),
                updated_input: Some(json!({"command": "ls"})),
                stop: Some("enough".into()),
                system_message: Some("note for the user".into()),
            }
        );
        // Claude Code's PostToolUse / Stop form.
        let said = parse_stdout(r#"{"decision": "block", "reason": "tests fail"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(said.decision, Some(Asked::Block));
        assert_eq!(said.reason.as_deref(), Some("tests fail"));
        // `continue: false` without a reason still stops.
        assert_eq!(
            parse_stdout(r#"{"continue": false}"#)
                .unwrap()
                .unwrap()
                .stop,
            Some(String::new())
        );
    }

    #[test]
    fn text_is_not_an_answer_and_an_answer_that_cannot_be_read_is_an_error() {
        assert_eq!(parse_stdout("all good"), Ok(None));
        assert_eq!(parse_stdout("[1, 2]"), Ok(None));
        assert_eq!(parse_stdout(""), Ok(None));
        let err = parse_stdout("{not json").unwrap_err();
        assert!(err.contains("is not JSON"), "{err}");
        let err = parse_stdout(r#"{"decision": "allow""#).unwrap_err();
        assert!(err.contains("is not JSON"), "{err}");
        let err = parse_stdout(r#"{"decision": "maybe"}"#).unwrap_err();
        assert!(err.contains("\"maybe\""), "{err}");
    }

    #[test]
    fn exit_codes_decide() {
        let timeout = Duration::from_secs(1);
        assert_eq!(
            verdict(HookEvent::PreToolUse, &ran(Some(0), "", ""), timeout),
            Verdict::Done(Said::default())
        );
        // Exit 2: stderr is the reason; stdout's JSON is not read.
        assert_eq!(
            verdict(
                HookEvent::PreToolUse,
                &ran(Some(2), r#"{"decision":"allow"}"#, "no rm -rf\n"),
                timeout
            ),
            Verdict::Blocked("no rm -rf".into())
        );
        assert_eq!(
            verdict(HookEvent::PreToolUse, &ran(Some(1), "", "oops"), timeout),
            Verdict::Failed {
                status: "exit code 1".into(),
                stderr: "oops".into()
            }
        );
        // No answer: timed out (or killed), not found or not runnable by
        // the shell, JSON that cannot be read.
        match verdict(HookEvent::PreToolUse, &ran(None, "", ""), timeout) {
            Verdict::NoAnswer { status, .. } => assert!(status.contains("timed out"), "{status}"),
            other => panic!("{other:?}"),
        }
        for (code, stdout, says) in [
            (127, "", "could not find"),
            (126, "", "could not run"),
            (0, "{\"decision\":", "cannot be read"),
        ] {
            match verdict(HookEvent::PreToolUse, &ran(Some(code), stdout, ""), timeout) {
                Verdict::NoAnswer { status, .. } => assert!(status.contains(says), "{status}"),
                other => panic!("{code}: {other:?}"),
            }
        }
        // Plain stdout is context at SessionStart and UserPromptSubmit only.
        let plain = ran(Some(0), "branch: main\n", "");
        match verdict(HookEvent::SessionStart, &plain, timeout) {
            Verdict::Done(said) => {
                assert_eq!(said.additional_context.as_deref(), Some("branch: main\n"))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            verdict(HookEvent::PostToolUse, &plain, timeout),
            Verdict::Done(Said::default())
        );
    }

    #[test]
    fn reasons_are_capped_and_redacted() {
        let secret = "sk-abcdefghijklmnopqrstuvwxyz012345";
        let long = format!("key {secret} {}", "é".repeat(5000));
        let out = cap(&long, MAX_REASON_BYTES);
        assert!(!out.contains(secret), "{}", &out[..80]);
        assert!(out.contains("[REDACTED]"));
        assert!(out.len() <= MAX_REASON_BYTES + 40, "{}", out.len());
        assert!(out.ends_with(" more bytes]"), "{}", out.len());
        assert_eq!(cap("  short\n", MAX_REASON_BYTES), "short");
    }
}
