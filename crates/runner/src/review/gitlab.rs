//! A review as GitLab's code quality report (`artifacts: reports:
//! codequality`): a JSON array of issues, each with its description, the
//! priority as its check and severity, its fingerprint and its location
//! (a finding on deleted lines at the new-side line where they stood, one
//! about a whole file at its line 1, as in [`super::sarif`]).

use super::Review;
use cogni_tools::review::Side;
use serde_json::{json, Value};

/// GitLab's severity of each priority, P0 to P3.
const SEVERITY: [&str; 4] = ["blocker", "critical", "major", "minor"];

/// The code quality report of `review` (pretty JSON, ending with a
/// newline).
pub fn code_quality(review: &Review) -> String {
    let issues: Vec<Value> = review
        .findings
        .iter()
        .map(|f| {
            let (begin, end) = match (f.side, f.anchor_line) {
                _ if f.whole_file() => (1, 1),
                (Side::Old, Some(anchor)) => (anchor, anchor),
                _ => (f.start_line, f.end_line),
            };
            json!({
                "type": "issue",
                "description": format!("{}: {}", f.title, f.body),
                "check_name": f.priority_name(),
                "categories": ["Bug Risk"],
                "severity": SEVERITY[usize::from(f.priority.min(3))],
                "fingerprint": f.fingerprint,
                "location": {"path": f.path, "lines": {"begin": begin, "end": end}}
            })
        })
        .collect();
    serde_json::to_string_pretty(&issues).unwrap_or_default() + "\n"
}
