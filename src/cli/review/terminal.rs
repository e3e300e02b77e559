//! A review for people at a terminal: the verdict and explanation, then
//! the findings by file, most severe first, each with its code lines and
//! its fix. Nothing the model or the repository wrote acts on the
//! terminal: every such text passes [`strip_terminal_controls`] before
//! cogni adds its colors.

use crate::cli::render::{paint, strip_terminal_controls};
use crate::cli::view::diff_lines;
use crate::runner::review::{markdown::tally, Review, Verdict};
use crate::tools::review::Finding;
use std::fmt::Write as _;

/// The report, colored when `color`; with `width`, the explanation and
/// each finding's body are wrapped to it (the REPL, which cuts longer
/// lines).
pub fn render(review: &Review, color: bool, width: Option<usize>) -> String {
    let s = |t: &str| strip_terminal_controls(t).into_owned();
    let verdict = match review.verdict {
        Verdict::Correct => paint(color, "1;32", "correct"),
        Verdict::NeedsChanges => paint(color, "1;31", "needs changes"),
    };
    let mut out = format!(
        "Review of {}: {verdict}\n{} file{}, +{} -{} lines · {}\n",
        s(&review.scope.describe()),
        review.files,
        if review.files == 1 { "" } else { "s" },
        review.added,
        review.removed,
        tally(review)
    );
    if !review.explanation.is_empty() {
        out.push('\n');
        for line in wrap(&s(&review.explanation), width) {
            let _ = writeln!(out, "{line}");
        }
    }
    let mut file: Option<&str> = None;
    for f in &review.findings {
        if file != Some(f.path.as_str()) {
            let _ = writeln!(out, "\n{}", paint(color, "1", &s(&f.path)));
            file = Some(&f.path);
        }
        finding(&mut out, f, color, width.map(|w| w.saturating_sub(5)));
    }
    out
}

fn finding(out: &mut String, f: &Finding, color: bool, width: Option<usize>) {
    let s = |t: &str| strip_terminal_controls(t).into_owned();
    let severity = match f.priority {
        0 | 1 => "1;31",
        2 => "1;33",
        _ => "2",
    };
    let lines = match (f.start_line, f.end_line) {
        (0, _) => "the whole file".to_string(),
        (a, b) if a == b => format!("line {a}"),
        (a, b) => format!("lines {a}-{b}"),
    };
    let side = if f.side == crate::tools::review::Side::Old {
        " (deleted)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  {} {} {}",
        paint(color, severity, &f.priority_name()),
        s(&f.title),
        paint(
            color,
            "2",
            &format!("· {lines}{side} · confidence {:.2}", f.confidence)
        )
    );
    for line in wrap(&s(&f.body), width) {
        let _ = writeln!(out, "     {line}");
    }
    let width = f.number_width();
    for c in &f.code {
        let number = paint(color, "2", &format!("{:>width$} │", c.line));
        let _ = writeln!(out, "       {number} {}", s(&c.text));
    }
    if let Some(fix) = &f.fix {
        let _ = writeln!(out, "     {}", paint(color, "1", "suggested fix:"));
        for line in diff_lines(&fix.diff, color) {
            let _ = writeln!(out, "       {line}");
        }
    }
}

/// `text`'s lines, each broken at spaces to `width` characters when
/// given (a word longer than that stays whole).
fn wrap(text: &str, width: Option<usize>) -> Vec<String> {
    let Some(width) = width.map(|w| w.max(20)) else {
        return text.lines().map(str::to_string).collect();
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let mut current = String::new();
        for word in line.split(' ') {
            let len = current.chars().count();
            if len > 0 && len + 1 + word.chars().count() > width {
                out.push(std::mem::take(&mut current));
            } else if len > 0 {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push(current);
    }
    out
}
