//! What the REPL shows under a finished tool call: the diff an edit made
//! (its first lines) or the last lines a command printed, each folded
//! with a marker that says how much is hidden and which `/expand` shows
//! it; the folded texts are kept for `/expand`.

use crate::cli::render::paint;
use crate::cli::view;
use crate::protocol::Item;
use std::collections::VecDeque;

/// Lines of a diff shown before it is folded.
pub const DIFF_LINES: usize = 40;
/// Last lines of a command's output shown.
pub const TAIL_LINES: usize = 5;
/// Folded texts kept for `/expand N`.
const KEPT: usize = 20;
/// How far the block is indented under the call's line.
const INDENT: &str = "    ";

/// The folded texts, numbered from 1 in the order they were shown.
#[derive(Debug, Default)]
pub struct Folds {
    kept: VecDeque<(usize, Vec<String>)>,
    last: usize,
}

impl Folds {
    /// Keep `lines` (as they print in full); returns their number.
    fn keep(&mut self, lines: Vec<String>) -> usize {
        self.last += 1;
        if self.kept.len() == KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back((self.last, lines));
        self.last
    }

    /// The lines of folded text `number`, or of the last one.
    pub fn get(&self, number: Option<usize>) -> Result<&[String], String> {
        let found = match number {
            None => self.kept.back(),
            Some(n) => self.kept.iter().find(|(k, _)| *k == n),
        };
        match (found, number) {
            (Some((_, lines)), _) => Ok(lines),
            (None, None) => Err("nothing is folded yet".into()),
            (None, Some(n)) => Err(format!(
                "nothing folded is numbered {n} (the last {KEPT} are kept; /expand shows the latest)"
            )),
        }
    }
}

/// The lines to show under a finished call: the diff it made, or what a
/// command printed last; empty for other calls. Long ones are folded and
/// kept in `folds`.
pub fn block(item: &Item, color: bool, folds: &mut Folds) -> Vec<String> {
    let Item::ToolCall {
        name, output, diff, ..
    } = item
    else {
        return Vec::new();
    };
    if let Some(diff) = diff {
        let lines = view::diff_lines(diff, color);
        return head(lines, color, folds);
    }
    match output
        .as_deref()
        .filter(|_| name == "shell")
        .and_then(printed)
    {
        Some(printed) => {
            let lines = printed.lines().map(|l| paint(color, "2", l)).collect();
            tail(lines, color, folds)
        }
        None => Vec::new(),
    }
}

/// What a `shell` call printed: its output without the status line the
/// tool starts it with (`exit code 0, 0.1s`, `killed by signal 9 ...`,
/// `timed out after 5s; ...`); `None` when the command did not run.
fn printed(output: &str) -> Option<&str> {
    let (status, rest) = output.split_once('\n')?;
    let ran = ["exit code ", "killed by signal ", "timed out after "]
        .iter()
        .any(|p| status.starts_with(p));
    Some(rest)
        .filter(|_| ran)
        .map(|rest| rest.strip_suffix("(no output)\n").unwrap_or(rest))
}

/// The first [`DIFF_LINES`] of `lines`, then a marker for the rest.
fn head(lines: Vec<String>, color: bool, folds: &mut Folds) -> Vec<String> {
    if lines.len() <= DIFF_LINES {
        return indent(lines);
    }
    let hidden = lines.len() - DIFF_LINES;
    let mut shown = indent(lines[..DIFF_LINES].to_vec());
    let n = folds.keep(lines);
    shown.push(marker(
        color,
        &format!("… {hidden} more lines (/expand {n})"),
    ));
    shown
}

/// A marker for all but the last [`TAIL_LINES`] of `lines`, then those.
fn tail(lines: Vec<String>, color: bool, folds: &mut Folds) -> Vec<String> {
    if lines.len() <= TAIL_LINES {
        return indent(lines);
    }
    let hidden = lines.len() - TAIL_LINES;
    let last = lines[hidden..].to_vec();
    let n = folds.keep(lines);
    let mut shown = vec![marker(
        color,
        &format!("… {hidden} lines above (/expand {n})"),
    )];
    shown.extend(indent(last));
    shown
}

fn marker(color: bool, text: &str) -> String {
    format!("{INDENT}{}", paint(color, "2;3", text))
}

fn indent(lines: Vec<String>) -> Vec<String> {
    lines.into_iter().map(|l| format!("{INDENT}{l}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolStatus;

    fn call(name: &str, output: &str, diff: Option<String>) -> Item {
        Item::ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: "{}".into(),
            status: ToolStatus::Completed,
            output: Some(output.into()),
            exit_code: Some(0),
            duration_ms: Some(1),
            diff,
        }
    }

    #[test]
    fn short_diffs_show_whole_and_coloured() {
        let mut folds = Folds::default();
        let diff = "--- a\n+++ a\n@@ -1 +1 @@\n-x\n+y\n".to_string();
        let lines = block(&call("edit_file", "ok", Some(diff)), true, &mut folds);
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[3], "    \x1b[31m-x\x1b[0m");
        assert_eq!(lines[4], "    \x1b[32m+y\x1b[0m");
        assert!(folds.get(None).is_err(), "nothing was folded");
    }

    #[test]
    fn long_diffs_fold_after_their_first_lines() {
        let mut folds = Folds::default();
        let diff: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let lines = block(&call("write_file", "ok", Some(diff)), false, &mut folds);
        assert_eq!(lines.len(), DIFF_LINES + 1);
        assert_eq!(lines[DIFF_LINES - 1], "    +line 39");
        assert_eq!(lines[DIFF_LINES], "    … 60 more lines (/expand 1)");
        let full = folds.get(None).unwrap();
        assert_eq!((full.len(), full[99].as_str()), (100, "+line 99"));
        assert_eq!(folds.get(Some(1)).unwrap().len(), 100);
        assert!(folds.get(Some(2)).unwrap_err().contains("numbered 2"));
    }

    #[test]
    fn commands_show_their_last_lines() {
        let mut folds = Folds::default();
        let printed: String = (1..=12).map(|i| format!("out {i}\n")).collect();
        let output = format!("exit code 0, 0.1s\n{printed}");
        let lines = block(&call("shell", &output, None), false, &mut folds);
        assert_eq!(lines[0], "    … 7 lines above (/expand 1)");
        assert_eq!(
            &lines[1..],
            [
                "    out 8",
                "    out 9",
                "    out 10",
                "    out 11",
                "    out 12"
            ]
        );
        assert_eq!(folds.get(Some(1)).unwrap()[0], "out 1");
        let quiet = block(
            &call("shell", "exit code 0, 0.0s\n(no output)\n", None),
            false,
            &mut folds,
        );
        assert!(quiet.is_empty(), "{quiet:?}");
        let refused = block(
            &call("shell", "invalid workdir: x\nmore", None),
            false,
            &mut folds,
        );
        assert!(refused.is_empty(), "a command that did not run has no tail");
        let other = block(
            &call("read_file", "a\nb\nc\nd\ne\nf\ng", None),
            false,
            &mut folds,
        );
        assert!(other.is_empty());
        let dim = block(
            &call("shell", "exit code 1, 0.1s\nboom\n", None),
            true,
            &mut folds,
        );
        assert_eq!(dim, ["    \x1b[2mboom\x1b[0m"]);
    }

    #[test]
    fn only_the_last_folds_are_kept() {
        let mut folds = Folds::default();
        for i in 0..KEPT + 5 {
            folds.keep(vec![format!("text {i}")]);
        }
        assert!(folds.get(Some(1)).is_err());
        assert_eq!(
            folds.get(Some(KEPT + 5)).unwrap(),
            [format!("text {}", KEPT + 4)]
        );
        assert_eq!(folds.get(None).unwrap(), folds.get(Some(KEPT + 5)).unwrap());
    }
}
