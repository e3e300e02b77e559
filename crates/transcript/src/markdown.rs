//! Transcripts as Markdown (`cogni sessions export --format md`): the
//! same entries as the HTML renderer, each output in a fence longer than
//! any run of backticks inside it.

use super::{Entry, Transcript};
use std::fmt::Write as _;

/// A fenced block of `text` (info string `info`), its fence longer than
/// any run of backticks inside it.
pub fn fence(out: &mut String, info: &str, text: &str) {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out, "{ticks}{info}");
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "{ticks}\n");
}

/// Render `t` under a `# title` and the `header` lines.
pub fn render(title: &str, header: &[String], t: &Transcript) -> String {
    let mut out = format!("# {title}\n\n");
    for line in header {
        let _ = writeln!(out, "- {line}");
    }
    if !header.is_empty() {
        out.push('\n');
    }
    for (i, entry) in t.entries.iter().enumerate() {
        if t.failure == Some(i) {
            out.push_str("> **Failure:**\n\n");
        }
        match entry {
            Entry::User { text } => {
                out.push_str("## Task\n\n");
                fence(&mut out, "text", text);
            }
            Entry::Assistant { text } => {
                out.push_str(text.trim_end());
                out.push_str("\n\n");
            }
            Entry::Step { n, tokens, dur, .. } => {
                let _ = write!(out, "### Step {n}");
                let mut parts = Vec::new();
                if *tokens > 0 {
                    parts.push(format!("{tokens} tokens"));
                }
                if !dur.is_empty() {
                    parts.push(dur.clone());
                }
                if !parts.is_empty() {
                    let _ = write!(out, " ({})", parts.join(", "));
                }
                out.push_str("\n\n");
            }
            Entry::Tool {
                name,
                args,
                out: output,
                code,
                err,
                dur,
                ..
            } => {
                let mut status = match (code, err, output) {
                    (_, _, None) => "no output".to_string(),
                    (Some(code), _, _) => format!("exit {code}"),
                    (None, true, _) => "failed".into(),
                    (None, false, _) => "ok".into(),
                };
                if !dur.is_empty() {
                    status.push_str(&format!(", {dur}"));
                }
                let mark = if *err { " ✗" } else { "" };
                let _ = writeln!(out, "**{name}**{mark} ({status})\n");
                fence(&mut out, "json", args);
                if let Some(output) = output {
                    fence(&mut out, "text", output);
                }
            }
            Entry::Plan { text, items } => {
                out.push_str("**Plan**");
                if !text.is_empty() {
                    let _ = write!(out, ": {text}");
                }
                out.push_str("\n\n");
                for (status, step) in items {
                    let mark = if status == "completed" { "x" } else { " " };
                    let now = if status == "in_progress" {
                        " (in progress)"
                    } else {
                        ""
                    };
                    let _ = writeln!(out, "- [{mark}] {step}{now}");
                }
                out.push('\n');
            }
            Entry::Test {
                command,
                passed,
                summary,
                failing,
                out: output,
                dur,
            } => {
                let verdict = if *passed { "passed" } else { "failed" };
                let what = if summary.is_empty() { command } else { summary };
                let _ = writeln!(out, "**Tests {verdict}**: {what} ({dur})\n");
                for name in failing {
                    let _ = writeln!(out, "- failing: `{name}`");
                }
                if !failing.is_empty() {
                    out.push('\n');
                }
                fence(&mut out, "text", output);
            }
            Entry::Check {
                what,
                passed,
                out: output,
                dur,
            } => {
                let mark = if *passed { "✓" } else { "✗" };
                let _ = writeln!(out, "**Check {mark}** {what} ({dur})\n");
                if !output.is_empty() {
                    fence(&mut out, "text", output);
                }
            }
            Entry::Note { text } => {
                let _ = writeln!(out, "_{}_\n", text.trim());
            }
            Entry::Warning { text } => {
                let _ = writeln!(out, "> **Warning:** {}\n", text.trim());
            }
            Entry::Error { text } => {
                let _ = writeln!(out, "> **Error:** {}\n", text.trim());
            }
            Entry::Outcome {
                outcome, reason, ..
            } => {
                let _ = write!(out, "**Outcome:** {outcome}");
                if let Some(reason) = reason {
                    let _ = write!(out, " ({reason})");
                }
                out.push_str("\n\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_fenced_beyond_their_own_backticks() {
        let t = Transcript {
            entries: vec![
                Entry::User {
                    text: "do it".into(),
                },
                Entry::Tool {
                    id: "c".into(),
                    name: "shell".into(),
                    args: "{}".into(),
                    out: Some("```\ncode\n```\n".into()),
                    code: Some(1),
                    err: true,
                    dur: "2 ms".into(),
                },
            ],
            failure: Some(1),
        };
        let md = render("Session s", &["model m".into()], &t);
        assert!(
            md.starts_with("# Session s\n\n- model m\n\n## Task\n"),
            "{md}"
        );
        assert!(
            md.contains("> **Failure:**\n\n**shell** ✗ (exit 1, 2 ms)"),
            "{md}"
        );
        assert!(md.contains("````text\n```\ncode\n```\n````\n"), "{md}");
    }
}
