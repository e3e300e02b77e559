//! The approval policy: which tool calls run at once, which need the
//! user's yes, and which may be retried without the sandbox.
//!
//! - `untrusted`: read-only tools and known-safe read-only commands run;
//!   everything else is asked.
//! - `on-failure`: everything runs sandboxed; a call that fails the way a
//!   sandbox refusal looks is offered for a retry without the sandbox when
//!   someone can answer (without a terminal the failure stands as it is:
//!   nothing is asked, nothing is added to the output).
//! - `on-request`: everything runs sandboxed; the model may ask for a shell
//!   command to run without the sandbox (`escalate` + `justification`).
//! - `never`: nobody is asked; what the sandbox forbids fails.
//!
//! Approving "for this session" covers the exact same call (tool and
//! arguments) later in the session. Every decision is an event and counted.

use cogni_protocol::{
    ApprovalDecision, ApprovalPolicy, ApprovalRequest, ApprovalStatus, SandboxMode, ToolCall,
};
use cogni_tools::safety;

/// What the policy says about a call before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Precheck {
    /// Run it (no decision was needed).
    Run,
    /// Run it; the policy approved it without asking.
    AutoApprove,
    /// Ask the user; `escalate` when the call would run without the sandbox.
    Ask { reason: String, escalate: bool },
}

/// The normalised identity of a call, for "approve for this session" and
/// for spotting repeated identical calls: the tool name and its arguments
/// (JSON re-serialised, so spacing and key order do not matter).
pub(crate) fn call_key(call: &ToolCall) -> String {
    let args = serde_json::from_str::<serde_json::Value>(&call.arguments)
        .map(|v| sorted_keys(v).to_string())
        .unwrap_or_else(|_| call.arguments.clone());
    format!("{}\u{0}{args}", call.name)
}

/// `value` with the keys of every object in order (a JSON object keeps the
/// order it was written in, which must not make two calls differ).
fn sorted_keys(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

/// A shell call's command as the model sent it.
enum ShellCommand {
    Line(String),
    Argv(Vec<String>),
}

impl ShellCommand {
    /// Known safe when run the way the shell tool runs it: a line goes to
    /// the configured `shell` ([`cogni_protocol::shell_argv`]), so the shell
    /// itself is checked too (only POSIX shells' lines can be known safe).
    fn is_known_safe(&self, shell: &str) -> bool {
        match self {
            ShellCommand::Line(line) => {
                let argv = cogni_protocol::shell_argv(shell, line);
                safety::is_known_safe(&safety::Command::Argv(&argv))
            }
            ShellCommand::Argv(argv) => safety::is_known_safe(&safety::Command::Argv(argv)),
        }
    }
}

/// The command a shell call would run and whether the model asked for
/// escalation (with its justification).
fn shell_request(call: &ToolCall) -> Option<(ShellCommand, Option<String>)> {
    let v: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    let command = match &v["command"] {
        serde_json::Value::String(s) => ShellCommand::Line(s.clone()),
        serde_json::Value::Array(a) => ShellCommand::Argv(
            a.iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    };
    let escalation = (v["escalate"] == serde_json::Value::Bool(true)).then(|| {
        v["justification"]
            .as_str()
            .unwrap_or("(no justification given)")
            .to_string()
    });
    Some((command, escalation))
}

/// Whether `call` only reads: a call of a read-only tool, or a shell call
/// whose command is known safe (what `untrusted` runs without asking).
/// `shell` is the configured shell that runs command lines.
pub(crate) fn only_reads(call: &ToolCall, read_only_tool: bool, shell: &str) -> bool {
    read_only_tool
        || (call.name == "shell"
            && matches!(shell_request(call), Some((command, None)) if command.is_known_safe(shell)))
}

/// `shell` is the configured shell that runs command lines.
pub(crate) fn precheck(
    policy: ApprovalPolicy,
    call: &ToolCall,
    read_only_tool: bool,
    shell: &str,
) -> Precheck {
    let asked = (call.name == "shell")
        .then(|| shell_request(call))
        .flatten();
    match policy {
        ApprovalPolicy::Never | ApprovalPolicy::OnFailure => Precheck::Run,
        ApprovalPolicy::OnRequest => match asked {
            Some((_, Some(justification))) => Precheck::Ask {
                reason: format!("the model asks to run this without the sandbox: {justification}"),
                escalate: true,
            },
            _ => Precheck::Run,
        },
        ApprovalPolicy::Untrusted => {
            if only_reads(call, read_only_tool, shell) {
                return Precheck::AutoApprove;
            }
            match asked {
                Some((_, Some(justification))) => Precheck::Ask {
                    reason: format!(
                        "approval policy is untrusted; the model asks to run this without the sandbox: {justification}"
                    ),
                    escalate: true,
                },
                _ => Precheck::Ask {
                    reason: "approval policy is untrusted: every command that may change something is asked".into(),
                    escalate: false,
                },
            }
        }
    }
}

/// Whether a failed result looks like the sandbox refused it, so the
/// on-failure policy may offer a retry without it.
pub(crate) fn looks_like_sandbox_denial(content: &str) -> bool {
    const SIGNS: &[&str] = &[
        "sandbox is read-only",
        "outside the workspace",
        "outside the writable roots",
        "protected by the sandbox",
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ];
    SIGNS.iter().any(|s| content.contains(s))
}

/// Whether to offer a failed call a retry without the sandbox: only under
/// `on-failure`, in a sandbox, when the failure looks like the sandbox's,
/// and when someone is there to answer (`interactive`); without anyone the
/// answer would be no, so asking would only add noise to a true output.
pub(crate) fn on_failure_retry(
    policy: ApprovalPolicy,
    mode: SandboxMode,
    interactive: bool,
    content: &str,
) -> bool {
    policy == ApprovalPolicy::OnFailure
        && mode != SandboxMode::DangerFullAccess
        && interactive
        && looks_like_sandbox_denial(content)
}

/// A one-line summary of a call for the question: a shell call's
/// command, a web_fetch call's `GET URL`, any other call's arguments.
pub(crate) fn describe(call: &ToolCall) -> String {
    if call.name == "shell" {
        if let Some((command, _)) = shell_request(call) {
            return match command {
                ShellCommand::Line(s) => s,
                ShellCommand::Argv(a) => a.join(" "),
            };
        }
    }
    if call.name == "web_fetch" {
        let args = serde_json::from_str::<serde_json::Value>(&call.arguments).ok();
        if let Some(url) = args.as_ref().and_then(|v| v["url"].as_str()) {
            return format!("GET {url}");
        }
    }
    call.arguments.clone()
}

pub(crate) fn request(call: &ToolCall, reason: String) -> ApprovalRequest {
    ApprovalRequest {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        summary: describe(call),
        arguments: call.arguments.clone(),
        reason,
    }
}

/// The status event name of a decision.
pub(crate) fn status_of(decision: &ApprovalDecision) -> ApprovalStatus {
    match decision {
        ApprovalDecision::Approve | ApprovalDecision::ApproveForSession => ApprovalStatus::Approved,
        ApprovalDecision::Deny | ApprovalDecision::DenyWithMessage(_) => ApprovalStatus::Denied,
    }
}

/// What follows a failed call's output when the user said no to running it
/// again without the sandbox: the call did run, in the sandbox.
pub(crate) fn retry_declined_output(decision: &ApprovalDecision) -> String {
    let declined = "The command ran in the sandbox and failed as shown above; the user declined to run it again without the sandbox.";
    match decision {
        ApprovalDecision::DenyWithMessage(m) => format!("{declined} They said: {m}"),
        _ => format!("{declined} Do something else or explain what you need."),
    }
}

/// What the model is told when the user said no.
pub(crate) fn denial_output(decision: &ApprovalDecision, non_interactive: bool) -> String {
    match decision {
        ApprovalDecision::DenyWithMessage(m) => {
            format!("The user denied this call and said: {m}\nNothing was run.")
        }
        _ if non_interactive => "Not run: this call needs the user's approval, and this run is non-interactive, so the answer is no. Find another way that the approval policy allows, or explain what you need.".into(),
        _ => "The user denied this call; nothing was run. Do something else or explain what you need.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_protocol::ToolCallKind;

    fn shell(args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "shell".into(),
            arguments: args.to_string(),
            kind: ToolCallKind::Function,
        }
    }

    #[test]
    fn untrusted_auto_approves_only_safe_reads() {
        let p = ApprovalPolicy::Untrusted;
        assert_eq!(
            precheck(
                p,
                &shell(serde_json::json!({"command": "ls -la"})),
                false,
                "/bin/bash"
            ),
            Precheck::AutoApprove
        );
        assert!(matches!(
            precheck(
                p,
                &shell(serde_json::json!({"command": "rm -rf x"})),
                false,
                "/bin/bash"
            ),
            Precheck::Ask {
                escalate: false,
                ..
            }
        ));
        assert!(matches!(
            precheck(
                p,
                &shell(serde_json::json!({"command": "ls; rm x"})),
                false,
                "/bin/bash"
            ),
            Precheck::Ask { .. }
        ));
        let write = ToolCall {
            name: "write_file".into(),
            ..shell(serde_json::json!({"path": "a"}))
        };
        assert!(matches!(
            precheck(p, &write, false, "/bin/bash"),
            Precheck::Ask { .. }
        ));
        let read = ToolCall {
            name: "read_file".into(),
            ..shell(serde_json::json!({"path": "a"}))
        };
        assert_eq!(precheck(p, &read, true, "/bin/bash"), Precheck::AutoApprove);
        // A line is only as safe as the shell that runs it.
        let ls = shell(serde_json::json!({"command": "ls"}));
        assert!(matches!(
            precheck(p, &ls, false, "/usr/bin/fish"),
            Precheck::Ask { .. }
        ));
        let argv = shell(serde_json::json!({"command": ["git", "status"]}));
        assert_eq!(
            precheck(p, &argv, false, "/usr/bin/fish"),
            Precheck::AutoApprove
        );
    }

    #[test]
    fn on_request_asks_only_for_escalation() {
        let p = ApprovalPolicy::OnRequest;
        assert_eq!(
            precheck(
                p,
                &shell(serde_json::json!({"command": "rm -rf x"})),
                false,
                "/bin/bash"
            ),
            Precheck::Run
        );
        let esc = shell(
            serde_json::json!({"command": "pip install x", "escalate": true, "justification": "needs network"}),
        );
        match precheck(p, &esc, false, "/bin/bash") {
            Precheck::Ask { reason, escalate } => {
                assert!(escalate);
                assert!(reason.contains("needs network"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            precheck(ApprovalPolicy::Never, &esc, false, "/bin/bash"),
            Precheck::Run
        );
    }

    #[test]
    fn on_failure_retries_only_sandbox_denials() {
        let p = ApprovalPolicy::OnFailure;
        assert!(on_failure_retry(
            p,
            SandboxMode::WorkspaceWrite,
            true,
            "`/etc/x` is outside the workspace (/w); nothing was written"
        ));
        assert!(on_failure_retry(
            p,
            SandboxMode::ReadOnly,
            true,
            "touch: cannot touch 'x': Read-only file system"
        ));
        assert!(!on_failure_retry(
            p,
            SandboxMode::WorkspaceWrite,
            true,
            "test failed: expected 1, got 2"
        ));
        assert!(!on_failure_retry(
            p,
            SandboxMode::DangerFullAccess,
            true,
            "Permission denied"
        ));
        assert!(!on_failure_retry(
            ApprovalPolicy::Never,
            SandboxMode::ReadOnly,
            true,
            "Permission denied"
        ));
        // Nobody to ask: nothing is offered.
        assert!(!on_failure_retry(
            p,
            SandboxMode::ReadOnly,
            false,
            "Permission denied"
        ));
    }

    #[test]
    fn the_path_policy_refusals_are_recognised() {
        let read_only = cogni_tools::paths::PathError::ReadOnly.to_string();
        assert!(looks_like_sandbox_denial(&read_only), "{read_only}");
    }

    #[test]
    fn a_web_fetch_is_asked_under_untrusted_and_shown_as_its_url() {
        let fetch = ToolCall {
            name: "web_fetch".into(),
            ..shell(serde_json::json!({"url": "http://169.254.169.254/latest"}))
        };
        assert_eq!(describe(&fetch), "GET http://169.254.169.254/latest");
        assert!(matches!(
            precheck(ApprovalPolicy::Untrusted, &fetch, false, "/bin/bash"),
            Precheck::Ask {
                escalate: false,
                ..
            }
        ));
        assert_eq!(request(&fetch, "r".into()).summary, describe(&fetch));
    }

    #[test]
    fn call_keys_ignore_json_spacing_and_key_order() {
        let a = shell(serde_json::json!({"command": "ls", "timeout_ms": 5}));
        let mut b = a.clone();
        b.arguments = "{ \"timeout_ms\": 5,  \"command\": \"ls\" }".into();
        assert_eq!(call_key(&a), call_key(&b));
        let c = shell(serde_json::json!({"command": "ls -a"}));
        assert_ne!(call_key(&a), call_key(&c));
    }
}
