//! A review for people on a code host: Markdown for a pull request's
//! comment ([`markdown`]), and the JSON body of a pull-request review
//! with a comment on each finding's lines ([`github`]: `gh api
//! repos/OWNER/REPO/pulls/N/reviews --input FILE`).
//!
//! The texts are the model's and the repository's: they come without
//! control characters (findings are cleaned when they are reported), and
//! here `&`, `<`, `>` and `@` become entities, so that nothing in them is
//! HTML or mentions anyone; code sits in fences longer than any run of
//! backticks in it.

use super::{Review, Verdict};
use cogni_tools::ask_user::{clean, visible};
use cogni_tools::review::{Finding, Side};
use cogni_transcript::markdown::fence;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Text as Markdown shows it literally enough: no HTML, no mentions.
fn text(s: &str) -> String {
    visible(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('@', "&#64;")
}

/// `s` as inline code, whatever backticks it holds.
fn code(s: &str) -> String {
    let s = clean(s, false);
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

fn verdict_line(review: &Review) -> &'static str {
    match review.verdict {
        Verdict::Correct => "correct",
        Verdict::NeedsChanges => "needs changes",
    }
}

/// Counts by priority: `2 findings (P1: 1, P2: 1)`, or `no findings`.
pub fn tally(review: &Review) -> String {
    let n = review.findings.len();
    if n == 0 {
        return "no findings".into();
    }
    let by: Vec<String> = (0..=3u8)
        .filter_map(|p| {
            let count = review.findings.iter().filter(|f| f.priority == p).count();
            (count > 0).then(|| format!("P{p}: {count}"))
        })
        .collect();
    format!(
        "{n} finding{} ({})",
        if n == 1 { "" } else { "s" },
        by.join(", ")
    )
}

/// The review as Markdown: the verdict and explanation, then the
/// findings by file, each with its code and its fix.
pub fn markdown(review: &Review) -> String {
    let mut out = format!("## cogni review: {}\n\n", verdict_line(review));
    let _ = writeln!(out, "{}\n", text(&review.explanation));
    let _ = writeln!(
        out,
        "{} in {} file{} ({}; +{} -{} lines).\n",
        tally(review),
        review.files,
        if review.files == 1 { "" } else { "s" },
        text(&review.scope.describe()),
        review.added,
        review.removed
    );
    let mut file: Option<&str> = None;
    for f in &review.findings {
        if file != Some(f.path.as_str()) {
            let _ = writeln!(out, "### {}\n", code(&f.path));
            file = Some(&f.path);
        }
        finding(&mut out, f);
    }
    out
}

fn finding(out: &mut String, f: &Finding) {
    let _ = writeln!(
        out,
        "#### {} {}\n\n{} · confidence {:.2}\n",
        f.priority_name(),
        text(&f.title),
        code(&f.location()),
        f.confidence
    );
    let _ = writeln!(out, "{}\n", text(&f.body));
    if !f.code.is_empty() {
        let width = f.number_width();
        let lines: String = f
            .code
            .iter()
            .map(|c| format!("{:>width$} | {}\n", c.line, c.text))
            .collect();
        fence(out, "text", &lines);
    }
    if let Some(fix) = &f.fix {
        out.push_str("<details><summary>Suggested fix</summary>\n\n");
        fence(out, "diff", &fix.diff);
        out.push_str("</details>\n\n");
    }
}

/// The JSON body of a pull-request review (GitHub's "create a review for
/// a pull request"): the Markdown summary as its body, and one comment on
/// each finding's lines (new side `RIGHT`, deleted lines `LEFT`; a fix
/// that replaces exactly those lines as a suggestion). Findings about a
/// whole file have no line to comment on: they go into the body.
pub fn github(review: &Review) -> String {
    let (lines, whole): (Vec<&Finding>, Vec<&Finding>) =
        review.findings.iter().partition(|f| !f.whole_file());
    let mut body = format!(
        "## cogni review: {}\n\n{}\n\n{} in {} file{} ({}).\n",
        verdict_line(review),
        text(&review.explanation),
        tally(review),
        review.files,
        if review.files == 1 { "" } else { "s" },
        text(&review.scope.describe())
    );
    if !whole.is_empty() {
        body.push('\n');
        for f in &whole {
            let _ = writeln!(
                body,
                "- **{} {}** ({}): {}",
                f.priority_name(),
                text(&f.title),
                code(&f.path),
                text(&f.body)
            );
        }
    }
    let comments: Vec<Value> = lines.iter().map(|f| comment(f)).collect();
    let mut review_body = json!({
        "event": "COMMENT",
        "body": body,
        "comments": comments
    });
    if let Some(head) = &review.head {
        review_body["commit_id"] = json!(head);
    }
    serde_json::to_string_pretty(&review_body).unwrap_or_default() + "\n"
}

fn comment(f: &Finding) -> Value {
    let side = match f.side {
        Side::New => "RIGHT",
        Side::Old => "LEFT",
    };
    let mut body = format!(
        "**{} {}** (confidence {:.2})\n\n{}\n",
        f.priority_name(),
        text(&f.title),
        f.confidence,
        text(&f.body)
    );
    if let Some(fix) = &f.fix {
        body.push('\n');
        match &fix.replacements[..] {
            [only]
                if f.side == Side::New
                    && (only.start_line, only.end_line) == (f.start_line, f.end_line) =>
            {
                fence(&mut body, "suggestion", &only.text);
            }
            _ => fence(&mut body, "diff", &fix.diff),
        }
    }
    let mut value = json!({
        "path": f.path,
        "line": f.end_line,
        "side": side,
        "body": body.trim_end()
    });
    if f.start_line < f.end_line {
        value["start_line"] = json!(f.start_line);
        value["start_side"] = json!(side);
    }
    value
}
