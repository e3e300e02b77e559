//! Approval questions on a terminal.
//!
//! Only used when stdin is a terminal; otherwise the engine's
//! [`crate::protocol::NonInteractive`] answers "no" at once, so cogni never
//! waits on stdin in CI.

use super::render::show_controls;
use crate::protocol::{ApprovalDecision, ApprovalRequest, Approver};
use futures::future::BoxFuture;
use std::io::{BufRead, Write};

/// Asks on stderr and reads the answer from stdin, off the async runtime.
pub struct TerminalApprover;

const MAX_TRIES: usize = 3;

impl Approver for TerminalApprover {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        let request = request.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut err = std::io::stderr().lock();
                ask_blocking(&request, &mut input, &mut err)
            })
            .await
            .unwrap_or(ApprovalDecision::Deny)
        })
    }

    fn is_interactive(&self) -> bool {
        true
    }
}

/// The question about `request`, on its own lines.
pub fn question(request: &ApprovalRequest) -> String {
    format!(
        "\n? Allow {}: {}\n  ({})",
        show_controls(&request.tool),
        show_controls(&request.summary),
        show_controls(&request.reason)
    )
}

/// The choices, shown before the answer.
pub const CHOICES: &str =
    "  [y] yes once  [a] yes for this session  [n] no  [m] no, and tell the model why > ";

/// What an answer means; `None` for "m" (a message follows) and for
/// answers that mean nothing.
pub fn decision(answer: &str) -> Option<ApprovalDecision> {
    match answer.to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(ApprovalDecision::Approve),
        "a" | "always" => Some(ApprovalDecision::ApproveForSession),
        "n" | "no" | "" => Some(ApprovalDecision::Deny),
        _ => None,
    }
}

/// Ask for the message to the model that goes with a "no".
pub fn deny_with_message(input: &mut dyn BufRead, out: &mut dyn Write) -> ApprovalDecision {
    let _ = write!(out, "  message to the model > ");
    let _ = out.flush();
    match read_line(input) {
        Some(m) if !m.is_empty() => ApprovalDecision::DenyWithMessage(m),
        _ => ApprovalDecision::Deny,
    }
}

/// The question and answer loop, on any reader and writer (tested below).
pub fn ask_blocking(
    request: &ApprovalRequest,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> ApprovalDecision {
    let _ = writeln!(out, "{}", question(request));
    for _ in 0..MAX_TRIES {
        let _ = write!(out, "{CHOICES}");
        let _ = out.flush();
        let Some(answer) = read_line(input) else {
            return ApprovalDecision::Deny;
        };
        if answer.eq_ignore_ascii_case("m") {
            return deny_with_message(input, out);
        }
        match decision(&answer) {
            Some(d) => return d,
            None => {
                let _ = writeln!(out, "  please answer y, a, n or m");
            }
        }
    }
    ApprovalDecision::Deny
}

/// One trimmed line; `None` at end of input or on a read error.
fn read_line(input: &mut dyn BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(answers: &str) -> (ApprovalDecision, String) {
        let request = ApprovalRequest {
            call_id: "c".into(),
            tool: "shell".into(),
            summary: "rm -rf build".into(),
            reason: "policy".into(),
        };
        let mut out = Vec::new();
        let decision = ask_blocking(&request, &mut answers.as_bytes(), &mut out);
        (decision, String::from_utf8(out).unwrap())
    }

    #[test]
    fn answers_map_to_decisions() {
        assert_eq!(ask("y\n").0, ApprovalDecision::Approve);
        assert_eq!(ask("A\n").0, ApprovalDecision::ApproveForSession);
        assert_eq!(ask("n\n").0, ApprovalDecision::Deny);
        assert_eq!(ask("\n").0, ApprovalDecision::Deny);
        assert_eq!(ask("").0, ApprovalDecision::Deny, "end of input is no");
        assert_eq!(
            ask("m\nuse cargo clean instead\n").0,
            ApprovalDecision::DenyWithMessage("use cargo clean instead".into())
        );
        let (d, text) = ask("what\ny\n");
        assert_eq!(d, ApprovalDecision::Approve);
        assert!(text.contains("please answer"), "{text}");
        assert!(text.contains("Allow shell: rm -rf build"), "{text}");
        assert_eq!(
            ask("x\nx\nx\ny\n").0,
            ApprovalDecision::Deny,
            "gives up after 3 tries"
        );
    }
}
