//! Approval questions on a terminal.
//!
//! Only used when stdin is a terminal; otherwise the engine's
//! [`crate::protocol::NonInteractive`] answers "no" at once, so cogni never
//! waits on stdin in CI.

use super::render::{paint, show_controls};
use super::view::{self, Shown};
use crate::protocol::{ApprovalDecision, ApprovalRequest, Approver};
use futures::future::BoxFuture;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// Asks on stderr and reads the answer from stdin, off the async runtime.
pub struct TerminalApprover {
    /// The session's working directory (a `write_file` question shows
    /// the diff against the file there).
    pub cwd: PathBuf,
    /// Diffs in questions are coloured.
    pub color: bool,
}

const MAX_TRIES: usize = 3;

impl Approver for TerminalApprover {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        let request = request.clone();
        let (cwd, color) = (self.cwd.clone(), self.color);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let asked = question(&request, Some(&cwd), color);
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut err = std::io::stderr().lock();
                ask_blocking(&asked, &mut input, &mut err)
            })
            .await
            .unwrap_or(ApprovalDecision::Deny)
        })
    }

    fn is_interactive(&self) -> bool {
        true
    }
}

/// Lines of a change a question shows; the rest is counted.
const QUESTION_DIFF_LINES: usize = 60;

/// The question about `request`, on its own lines: a command as the shell
/// reads it (a script with its real newlines), a file change as the diff
/// it would make (coloured when `color`), anything else as its summary.
/// `cwd` is where relative paths are, when known (a `write_file` is then
/// diffed against the file there).
pub fn question(request: &ApprovalRequest, cwd: Option<&Path>, color: bool) -> String {
    let tool = show_controls(&request.tool);
    let body = match view::call(&request.tool, &request.arguments, cwd) {
        Some(Shown::Command(script)) if !script.contains('\n') => {
            format!("{tool}: {}", show_controls(&script))
        }
        Some(Shown::Command(script)) => {
            let lines: Vec<String> = script
                .lines()
                .map(|l| format!("    {}", show_controls(l)))
                .collect();
            format!("{tool}:\n{}", lines.join("\n"))
        }
        Some(Shown::Change { file, diff }) => {
            let lines = view::diff_lines(&diff, color);
            let mut text = format!("{tool}: {}", show_controls(&file));
            for line in lines.iter().take(QUESTION_DIFF_LINES) {
                text.push_str(&format!("\n    {line}"));
            }
            if lines.len() > QUESTION_DIFF_LINES {
                let more = lines.len() - QUESTION_DIFF_LINES;
                text.push_str(&format!("\n    … {more} more lines"));
            }
            text
        }
        None => format!("{tool}: {}", show_controls(&request.summary)),
    };
    let (head, rest) = body.split_once('\n').unwrap_or((&body, ""));
    let mut text = format!("\n{}", paint(color, "33", &format!("? Allow {head}")));
    if !rest.is_empty() {
        text.push('\n');
        text.push_str(rest);
    }
    text.push('\n');
    text.push_str(&paint(
        color,
        "33",
        &format!("  ({})", show_controls(&request.reason)),
    ));
    text
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

/// The question (as [`question`] words it) and answer loop, on any reader
/// and writer (tested below).
pub fn ask_blocking(
    question: &str,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> ApprovalDecision {
    let _ = writeln!(out, "{question}");
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
            arguments: r#"{"command":"rm -rf build"}"#.into(),
            reason: "policy".into(),
        };
        let mut out = Vec::new();
        let asked = question(&request, None, false);
        let decision = ask_blocking(&asked, &mut answers.as_bytes(), &mut out);
        (decision, String::from_utf8(out).unwrap())
    }

    #[test]
    fn questions_show_scripts_and_changes_as_they_are() {
        let request = |tool: &str, arguments: serde_json::Value| ApprovalRequest {
            call_id: "c".into(),
            tool: tool.into(),
            summary: "-".into(),
            arguments: arguments.to_string(),
            reason: "policy".into(),
        };
        let script = request(
            "shell",
            serde_json::json!({"command": "cd build &&\nmake\x1b[2J"}),
        );
        let text = question(&script, None, false);
        assert!(
            text.contains("? Allow shell:\n    cd build &&\n    make\\u{1b}[2J\n  (policy)"),
            "{text}"
        );
        let edit = request(
            "edit_file",
            serde_json::json!({"path": "a.rs", "old_string": "x\n", "new_string": "y\n"}),
        );
        let text = question(&edit, None, true);
        assert!(text.contains("? Allow edit_file: a.rs"), "{text}");
        assert!(
            text.contains("\n    \x1b[31m-x\x1b[0m\n    \x1b[32m+y\x1b[0m"),
            "{text:?}"
        );
        let other = request("mcp__x__y", serde_json::json!({}));
        assert!(question(&other, None, false).contains("? Allow mcp__x__y: -\n"));
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
