//! Unified diffs of what the file tools changed, for people: front doors
//! show them (the REPL after each edit; `--json` events carry them). The
//! model is never sent one: its output stays the tool's short summary.

use cogni_process::truncate::{head_tail, Limits};
use similar::TextDiff;
use std::time::Duration;

/// A diff longer than this is cut (its head and tail kept, with a marker
/// saying what was left out).
pub const LIMITS: Limits = Limits {
    max_bytes: 64 * 1024,
    max_lines: 2000,
};

/// Texts larger than this, old and new together, get no diff: finding it
/// would cost more than showing it is worth.
const MAX_INPUT_BYTES: usize = 8 << 20;

/// How long finding the smallest diff may take; past it the diff is still
/// right, only less small.
const TIMEOUT: Duration = Duration::from_millis(300);

/// The unified diff (three lines of context) that turns the file `old`
/// into the file `new`, each a path (as the model named it) and its text:
/// `old` `None` for a file created, `new` `None` for one deleted. `None`
/// when nothing changed or the texts are too large to compare.
pub fn unified(old: Option<(&str, &str)>, new: Option<(&str, &str)>) -> Option<String> {
    let (from, before) = old.unwrap_or(("/dev/null", ""));
    let (to, after) = new.unwrap_or(("/dev/null", ""));
    if before.len() + after.len() > MAX_INPUT_BYTES || (old.is_some() && old == new) {
        return None;
    }
    let mut text = format!("--- {from}\n+++ {to}\n");
    let diff = TextDiff::configure()
        .timeout(TIMEOUT)
        .diff_lines(before, after);
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        text.push_str(&hunk.to_string());
    }
    Some(head_tail(&text, LIMITS))
}

/// The diffs of several files as one text, in order; `None` when there is
/// none.
pub fn join(diffs: impl IntoIterator<Item = Option<String>>) -> Option<String> {
    let all: String = diffs.into_iter().flatten().collect();
    (!all.is_empty()).then(|| head_tail(&all, LIMITS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_creations_and_deletions() {
        let d = unified(
            Some(("a.txt", "one\ntwo\nthree\n")),
            Some(("a.txt", "one\n2\nthree\n")),
        )
        .unwrap();
        assert_eq!(
            d,
            "--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        );
        let d = unified(None, Some(("new.txt", "hello\n"))).unwrap();
        assert_eq!(d, "--- /dev/null\n+++ new.txt\n@@ -0,0 +1 @@\n+hello\n");
        let d = unified(Some(("gone.txt", "bye\n")), None).unwrap();
        assert_eq!(d, "--- gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n");
        assert_eq!(unified(Some(("same", "x\n")), Some(("same", "x\n"))), None);
        let moved = unified(Some(("old", "x\n")), Some(("new", "x\n"))).unwrap();
        assert_eq!(moved, "--- old\n+++ new\n");
    }

    #[test]
    fn long_diffs_are_cut_and_joined_in_order() {
        let new: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let d = unified(None, Some(("big.txt", &new))).unwrap();
        assert!(d.len() <= LIMITS.max_bytes + 200, "{}", d.len());
        assert!(d.starts_with("--- /dev/null\n+++ big.txt\n"), "{d:.40}");
        assert!(d.ends_with("+line 4999\n"));
        let both = join([
            unified(None, Some(("a", "a\n"))),
            None,
            unified(None, Some(("b", "b\n"))),
        ]);
        let both = both.unwrap();
        assert!(both.find("+++ a").unwrap() < both.find("+++ b").unwrap());
        assert_eq!(join([None, None]), None);
    }
}
