//! A task that is a review (`review = { base = "main" }`) and the checks
//! on what it found (`finding`, `min_findings` / `max_findings`,
//! `verdict`), as written and checked.

use super::Check;
use crate::Problem;
use cogni_tools::review::Scope;
use serde::Deserialize;

/// `review = { ... }` as written: exactly one scope.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawReview {
    uncommitted: Option<bool>,
    base: Option<String>,
    commit: Option<String>,
    files: Option<Vec<String>>,
}

/// The fields of a check about a review's findings, as written.
#[derive(Debug, Default)]
pub(super) struct RawFindingCheck {
    pub finding: Option<String>,
    pub lines: Option<Vec<i64>>,
    pub priority: Option<String>,
    pub min_findings: Option<u32>,
    pub max_findings: Option<u32>,
    pub verdict: Option<String>,
}

impl RawFindingCheck {
    /// The check kinds these fields set (`finding`, `findings`, `verdict`).
    pub fn kinds(&self) -> Vec<&'static str> {
        [
            ("finding", self.finding.is_some()),
            (
                "min_findings/max_findings",
                self.min_findings.is_some() || self.max_findings.is_some(),
            ),
            ("verdict", self.verdict.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, on)| on.then_some(k))
        .collect()
    }
}

/// The scope of `review`, or a problem at `at`.
pub(super) fn scope(at: &str, raw: RawReview, problems: &mut Vec<Problem>) -> Option<Scope> {
    let mut set = Vec::new();
    if raw.uncommitted == Some(true) {
        set.push(Scope::Uncommitted);
    }
    if let Some(base) = raw.base {
        set.push(Scope::Base(base));
    }
    if let Some(commit) = raw.commit {
        set.push(Scope::Commit(commit));
    }
    if let Some(files) = raw.files {
        if files.is_empty() || files.iter().any(|f| f.trim().is_empty()) {
            problems.push(Problem::new(
                format!("{at}.files"),
                "name at least one file or directory, each non-empty",
            ));
        }
        set.push(Scope::Files(files));
    }
    if set.len() != 1 {
        problems.push(Problem::new(
            at,
            "a review takes exactly one of uncommitted = true, base = \"BRANCH\", commit = \"SHA\", files = [\"PATH\", ...]",
        ));
        return None;
    }
    let scope = set.pop();
    if let Some(Scope::Base(rev) | Scope::Commit(rev)) = &scope {
        if rev.trim().is_empty() || rev.starts_with('-') {
            problems.push(Problem::new(
                at,
                format!("`{rev}` is not a revision: name a branch, tag or commit"),
            ));
        }
    }
    scope
}

/// `P0`..`P3` as a number, or a problem at `at`.
fn priority(at: &str, text: Option<&str>, problems: &mut Vec<Problem>) -> u8 {
    match text.map(str::to_ascii_uppercase).as_deref() {
        None | Some("P3") => 3,
        Some("P0") => 0,
        Some("P1") => 1,
        Some("P2") => 2,
        Some(other) => {
            problems.push(Problem::new(
                format!("{at}.priority"),
                format!("`{other}`: use P0, P1, P2 or P3 (a finding at it or more severe counts)"),
            ));
            3
        }
    }
}

/// The check these fields make (exactly one kind of them is set), with
/// problems at `at`; `review` says whether the task is a review.
pub(super) fn check(
    at: &str,
    raw: RawFindingCheck,
    review: bool,
    problems: &mut Vec<Problem>,
) -> Option<Check> {
    if !review {
        problems.push(Problem::new(
            at,
            "only a review task has findings and a verdict: add review = { base = \"BRANCH\" } (or uncommitted, commit, files)",
        ));
    }
    if raw.finding.is_none() && raw.lines.is_some() {
        problems.push(Problem::new(
            format!("{at}.lines"),
            "only a finding check takes lines",
        ));
    }
    if raw.verdict.is_some() && raw.priority.is_some() {
        problems.push(Problem::new(
            format!("{at}.priority"),
            "a verdict check takes no priority",
        ));
    }
    let at_least = priority(at, raw.priority.as_deref(), problems);
    if let Some(path) = raw.finding {
        let lines = match raw.lines.as_deref() {
            None => None,
            Some(&[start, end]) if 1 <= start && start <= end && end <= i64::from(u32::MAX) => {
                Some((start as u32, end as u32))
            }
            Some(_) => {
                problems.push(Problem::new(
                    format!("{at}.lines"),
                    "[START, END]: two line numbers from 1, START <= END",
                ));
                None
            }
        };
        if path.trim().is_empty() {
            problems.push(Problem::new(
                format!("{at}.finding"),
                "the path of a file, relative to the repository's root",
            ));
        }
        return Some(Check::Finding {
            path,
            lines,
            priority: at_least,
        });
    }
    if let Some(verdict) = raw.verdict {
        if !matches!(verdict.as_str(), "correct" | "needs_changes") {
            problems.push(Problem::new(
                format!("{at}.verdict"),
                format!("`{verdict}`: use correct or needs_changes"),
            ));
        }
        return Some(Check::Verdict(verdict));
    }
    if let (Some(min), Some(max)) = (raw.min_findings, raw.max_findings) {
        if min > max {
            problems.push(Problem::new(
                at,
                format!("min_findings {min} is more than max_findings {max}"),
            ));
        }
    }
    Some(Check::FindingCount {
        min: raw.min_findings,
        max: raw.max_findings,
        priority: at_least,
    })
}
