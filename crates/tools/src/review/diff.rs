//! The change a review covers, as data: each file's status, whether it
//! has lines at all (binary files, symlinks and submodules do not), and
//! its hunks with both sides' line numbers. Built from git's patch and
//! raw output ([`parse`]) or from files read whole ([`whole_file`],
//! [`new_file`]); shown to the model by [`ScopeDiff::render`].

use cogni_process::truncate::{head_tail, Limits};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// A NUL byte in this many first bytes marks a file as binary (git's rule).
const BINARY_PROBE_BYTES: usize = 8000;

/// How a file changed in the scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// New in the scope (an untracked file, or one added by the commits).
    Added,
    /// Changed in place.
    Modified,
    /// Deleted: only its old side has lines.
    Deleted,
    /// Moved from `old_path` (maybe changed too).
    Renamed,
    /// Copied from `old_path` (maybe changed too).
    Copied,
    /// Its kind changed (a file became a symlink, ...).
    TypeChanged,
    /// In conflict (a merge in progress).
    Unmerged,
    /// Reviewed whole (`--files`): every line is in scope.
    Whole,
}

impl FileStatus {
    /// The status as people read it.
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Added => "added",
            FileStatus::Modified => "modified",
            FileStatus::Deleted => "deleted",
            FileStatus::Renamed => "renamed",
            FileStatus::Copied => "copied",
            FileStatus::TypeChanged => "type changed",
            FileStatus::Unmerged => "unmerged",
            FileStatus::Whole => "whole file",
        }
    }
}

/// What a file's change holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum Content {
    /// Text: the hunks are its lines.
    Text,
    /// A binary file: no lines.
    Binary,
    /// A symbolic link: no lines (its target is not reviewed as code).
    Symlink,
    /// A submodule's commit: no lines.
    Submodule,
    /// Not shown, for the reason given (too large, not a regular file, ...).
    Skipped(String),
}

impl Content {
    /// True when the change has no lines to point at: a finding on the
    /// file is about the whole of it.
    pub fn has_lines(&self) -> bool {
        matches!(self, Content::Text)
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// Unchanged (on both sides).
    Context,
    /// Only on the new side.
    Added,
    /// Only on the old side.
    Removed,
}

/// A line of a hunk with its number on each side it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    /// Context, added or removed.
    pub kind: LineKind,
    /// Its number in the old file (not for added lines).
    pub old: Option<u32>,
    /// Its number in the new file (not for removed lines).
    pub new: Option<u32>,
    /// The text, without its line ending.
    pub text: String,
}

/// A hunk: a run of changed lines with their context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// What git shows after `@@ ... @@` (the enclosing function).
    pub header: String,
    /// Its lines in order.
    pub lines: Vec<DiffLine>,
}

/// One file of the scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Its path relative to the repository's root: the new path (the old
    /// one for a deleted file).
    pub path: String,
    /// The path it was renamed or copied from.
    pub old_path: Option<String>,
    /// How it changed.
    pub status: FileStatus,
    /// Whether it has lines.
    pub content: Content,
    /// Its hunks (none when it has no lines or only its mode changed).
    pub hunks: Vec<Hunk>,
}

/// Which side of a change a line number counts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The file after the change (the default).
    #[default]
    New,
    /// The file before it: lines the change deleted.
    Old,
}

impl Side {
    /// `new` or `old`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::New => "new",
            Side::Old => "old",
        }
    }
}

impl FileDiff {
    /// The lines `start..=end` on `side`, when every one of them is a line
    /// the diff shows (an added, removed or context line of a hunk), in
    /// order; `None` when one is not.
    pub fn lines(&self, side: Side, start: u32, end: u32) -> Option<Vec<&DiffLine>> {
        let number = |l: &DiffLine| match side {
            Side::New => l.new,
            Side::Old => l.old,
        };
        let mut found: Vec<&DiffLine> = self
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| number(l).is_some_and(|n| (start..=end).contains(&n)))
            .collect();
        found.sort_by_key(|l| number(l));
        found.dedup_by_key(|l| number(l));
        (found.len() as u64 == u64::from(end - start) + 1).then_some(found)
    }

    /// The ranges of lines the diff shows on `side`, as `(first, last)`,
    /// for telling the model where it may point.
    pub fn ranges(&self, side: Side) -> Vec<(u32, u32)> {
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for hunk in &self.hunks {
            for n in hunk.lines.iter().filter_map(|l| match side {
                Side::New => l.new,
                Side::Old => l.old,
            }) {
                match ranges.last_mut() {
                    Some((_, last)) if *last + 1 == n => *last = n,
                    _ => ranges.push((n, n)),
                }
            }
        }
        ranges
    }

    /// Where old-side lines `start..=end` stand in the new file: the new
    /// line after the last of them in their hunk (or the one before the
    /// first, at the hunk's end); `None` when no line of the new file is
    /// near (the file was deleted).
    pub fn anchor(&self, start: u32, end: u32) -> Option<u32> {
        let hunk = self.hunks.iter().find(|h| {
            h.lines
                .iter()
                .any(|l| l.old.is_some_and(|n| (start..=end).contains(&n)))
        })?;
        let last = hunk
            .lines
            .iter()
            .rposition(|l| l.old.is_some_and(|n| (start..=end).contains(&n)))?;
        let after = hunk.lines[last..].iter().find_map(|l| l.new);
        after.or_else(|| hunk.lines[..last].iter().rev().find_map(|l| l.new))
    }

    fn shown_status(&self) -> String {
        match &self.old_path {
            Some(old) => format!("{} from {old}", self.status.as_str()),
            None => self.status.as_str().to_string(),
        }
    }
}

/// Every file of a review's scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeDiff {
    /// The files, in git's order.
    pub files: Vec<FileDiff>,
}

impl ScopeDiff {
    /// True when the scope holds no change.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The file at `path` (its new path, or for a deleted file its old
    /// one).
    pub fn file(&self, path: &str) -> Option<&FileDiff> {
        self.files.iter().find(|f| f.path == path)
    }

    /// The file renamed or copied from `path`, if any.
    pub fn renamed_from(&self, path: &str) -> Option<&FileDiff> {
        self.files
            .iter()
            .find(|f| f.old_path.as_deref() == Some(path))
    }

    /// Lines added and removed, over every file.
    pub fn counts(&self) -> (usize, usize) {
        let lines = self
            .files
            .iter()
            .flat_map(|f| &f.hunks)
            .flat_map(|h| &h.lines);
        lines.fold((0, 0), |(a, r), l| match l.kind {
            LineKind::Added => (a + 1, r),
            LineKind::Removed => (a, r + 1),
            LineKind::Context => (a, r),
        })
    }

    /// The diff as the model reads it, within `limits` (head and tail
    /// kept, with a marker saying what was left out): each file's status,
    /// then its hunks with the old and the new line number before each
    /// line, so that findings can name lines exactly.
    pub fn render(&self, limits: Limits) -> String {
        let mut text = String::new();
        for file in &self.files {
            let _ = writeln!(text, "=== {} ({}) ===", file.path, file.shown_status());
            match &file.content {
                Content::Text if file.hunks.is_empty() => {
                    text.push_str("(no line changed: only the file's mode or name)\n")
                }
                Content::Text => {}
                Content::Binary => text.push_str("(binary file: no lines)\n"),
                Content::Symlink => text.push_str("(symbolic link: no lines)\n"),
                Content::Submodule => text.push_str("(submodule: no lines)\n"),
                Content::Skipped(why) => {
                    let _ = writeln!(text, "(not shown: {why})");
                }
            }
            for hunk in &file.hunks {
                if file.status != FileStatus::Whole {
                    let _ = writeln!(text, "@@ {}", hunk.header.trim());
                }
                for line in &hunk.lines {
                    let number = |n: Option<u32>| n.map_or(String::new(), |n| n.to_string());
                    let mark = match line.kind {
                        LineKind::Context => ' ',
                        LineKind::Added => '+',
                        LineKind::Removed => '-',
                    };
                    let _ = writeln!(
                        text,
                        "{:>6} {:>6} {mark}{}",
                        number(line.old),
                        number(line.new),
                        line.text
                    );
                }
            }
        }
        head_tail(&text, limits)
    }
}

/// The text of `bytes` as lines, or the reason it has none: binary (a NUL
/// byte near the start, as git decides).
fn text_lines(bytes: &[u8]) -> Result<Vec<String>, Content> {
    if bytes[..bytes.len().min(BINARY_PROBE_BYTES)].contains(&0) {
        return Err(Content::Binary);
    }
    let text = String::from_utf8_lossy(bytes);
    Ok(text
        .split_inclusive('\n')
        .map(|l| strip_eol(l).to_string())
        .collect())
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// A file new to the scope (untracked), from its bytes: every line added.
pub fn new_file(path: String, bytes: Result<Vec<u8>, Content>) -> FileDiff {
    lines_file(path, FileStatus::Added, bytes)
}

/// A file reviewed whole (`--files`), from its bytes: every line in scope,
/// as context.
pub fn whole_file(path: String, bytes: Result<Vec<u8>, Content>) -> FileDiff {
    lines_file(path, FileStatus::Whole, bytes)
}

fn lines_file(path: String, status: FileStatus, bytes: Result<Vec<u8>, Content>) -> FileDiff {
    let lines = bytes.and_then(|b| text_lines(&b));
    let (content, lines) = match lines {
        Ok(lines) => (Content::Text, lines),
        Err(content) => (content, Vec::new()),
    };
    let lines: Vec<DiffLine> = lines
        .into_iter()
        .zip(1u32..)
        .map(|(text, n)| DiffLine {
            kind: match status {
                FileStatus::Whole => LineKind::Context,
                _ => LineKind::Added,
            },
            old: (status == FileStatus::Whole).then_some(n),
            new: Some(n),
            text,
        })
        .collect();
    let hunks = if lines.is_empty() {
        Vec::new()
    } else {
        vec![Hunk {
            header: format!("-0,0 +1,{} @@", lines.len()),
            lines,
        }]
    };
    FileDiff {
        path,
        old_path: None,
        status,
        content,
        hunks,
    }
}

/// One record of `git diff --raw -z`: the modes and status of a file and
/// its path (and the path it came from, for a rename or copy).
#[derive(Debug, Clone, PartialEq, Eq)]
struct RawEntry {
    new_mode: String,
    old_mode: String,
    status: char,
    path: String,
    old_path: Option<String>,
}

/// The records of `git diff --raw -z` output.
fn parse_raw(raw: &[u8]) -> Result<Vec<RawEntry>, String> {
    let fields: Vec<String> = raw
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let mut entries = Vec::new();
    let mut at = 0;
    while at < fields.len() {
        let meta = &fields[at];
        if meta.trim().is_empty() {
            at += 1;
            continue;
        }
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, _, _, status] = parts[..] else {
            return Err(format!("unexpected line in git's raw diff: {meta:?}"));
        };
        let status = status.chars().next().unwrap_or('M');
        let two = matches!(status, 'R' | 'C');
        let path_at = |i: usize| {
            fields
                .get(i)
                .cloned()
                .ok_or_else(|| format!("git's raw diff ends after {meta:?}"))
        };
        let (old_path, path) = if two {
            (Some(path_at(at + 1)?), path_at(at + 2)?)
        } else {
            (None, path_at(at + 1)?)
        };
        at += if two { 3 } else { 2 };
        entries.push(RawEntry {
            old_mode: old_mode.to_string(),
            new_mode: new_mode.to_string(),
            status,
            path,
            old_path,
        });
    }
    Ok(entries)
}

/// The files of a change from git: `raw` is `git diff --raw -z` and
/// `patch` the same diff as a patch (`-p`), in the same order.
pub fn parse(raw: &[u8], patch: &[u8]) -> Result<Vec<FileDiff>, String> {
    let entries = parse_raw(raw)?;
    let patch = String::from_utf8_lossy(patch);
    let sections = split_sections(&patch);
    if sections.len() != entries.len() {
        return Err(format!(
            "git listed {} changed files but its patch has {} sections",
            entries.len(),
            sections.len()
        ));
    }
    entries
        .into_iter()
        .zip(sections)
        .map(|(entry, section)| file_of(entry, &section))
        .collect()
}

/// The patch cut at each file's header (`diff --git`, or `* Unmerged
/// path` for a file in conflict).
fn split_sections(patch: &str) -> Vec<Vec<&str>> {
    let mut sections: Vec<Vec<&str>> = Vec::new();
    let mut lines = patch.split('\n').peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("diff --git ") || line.starts_with("* Unmerged path ") {
            sections.push(vec![line]);
            // A hunk's lines are read by its counts, so content that looks
            // like a header is never taken for one.
            let section = sections.last_mut().expect("pushed");
            while let Some(next) = lines.peek() {
                if next.starts_with("@@ ") {
                    let header = lines.next().expect("peeked");
                    section.push(header);
                    let (mut old, mut new) = hunk_counts(header).unwrap_or((0, 0));
                    while old > 0 || new > 0 {
                        let Some(body) = lines.next() else { break };
                        section.push(body);
                        match body.as_bytes().first() {
                            Some(b'+') => new = new.saturating_sub(1),
                            Some(b'-') => old = old.saturating_sub(1),
                            Some(b'\\') => {}
                            _ => {
                                old = old.saturating_sub(1);
                                new = new.saturating_sub(1);
                            }
                        }
                    }
                } else if next.starts_with("diff --git ") || next.starts_with("* Unmerged path ") {
                    break;
                } else {
                    section.push(lines.next().expect("peeked"));
                }
            }
        }
    }
    sections
}

/// `(old count, new count)` of a `@@ -a,b +c,d @@` line.
fn hunk_counts(header: &str) -> Option<(u32, u32)> {
    let (old, new) = hunk_numbers(header)?;
    Some((old.1, new.1))
}

/// `((old start, old count), (new start, new count))` of a hunk header.
fn hunk_numbers(header: &str) -> Option<((u32, u32), (u32, u32))> {
    let rest = header.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    Some((range(old)?, range(new)?))
}

fn file_of(entry: RawEntry, section: &[&str]) -> Result<FileDiff, String> {
    let status = match entry.status {
        'A' => FileStatus::Added,
        'D' => FileStatus::Deleted,
        'R' => FileStatus::Renamed,
        'C' => FileStatus::Copied,
        'T' => FileStatus::TypeChanged,
        'U' => FileStatus::Unmerged,
        _ => FileStatus::Modified,
    };
    let mode = if status == FileStatus::Deleted {
        &entry.old_mode
    } else {
        &entry.new_mode
    };
    let binary = section
        .iter()
        .any(|l| l.starts_with("Binary files ") || *l == "GIT binary patch");
    let content = match mode.as_str() {
        "120000" => Content::Symlink,
        "160000" => Content::Submodule,
        _ if binary => Content::Binary,
        _ if status == FileStatus::Unmerged => {
            Content::Skipped("in conflict: resolve it first".into())
        }
        _ => Content::Text,
    };
    let hunks = if content.has_lines() {
        hunks_of(section)?
    } else {
        Vec::new()
    };
    Ok(FileDiff {
        path: entry.path,
        old_path: entry.old_path,
        status,
        content,
        hunks,
    })
}

fn hunks_of(section: &[&str]) -> Result<Vec<Hunk>, String> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut numbers = (0u32, 0u32);
    for line in section {
        if line.starts_with("@@ ") {
            let ((old, _), (new, _)) =
                hunk_numbers(line).ok_or_else(|| format!("unreadable hunk header {line:?}"))?;
            numbers = (old, new);
            hunks.push(Hunk {
                header: line.strip_prefix("@@ ").unwrap_or(line).to_string(),
                lines: Vec::new(),
            });
            continue;
        }
        let Some(hunk) = hunks.last_mut() else {
            continue;
        };
        let (kind, text) = match line.as_bytes().first() {
            Some(b'+') => (LineKind::Added, &line[1..]),
            Some(b'-') => (LineKind::Removed, &line[1..]),
            Some(b' ') => (LineKind::Context, &line[1..]),
            // `\ No newline at end of file`, and the patch's last newline.
            _ => continue,
        };
        let (old, new) = match kind {
            LineKind::Added => (None, Some(numbers.1)),
            LineKind::Removed => (Some(numbers.0), None),
            LineKind::Context => (Some(numbers.0), Some(numbers.1)),
        };
        if old.is_some() {
            numbers.0 += 1;
        }
        if new.is_some() {
            numbers.1 += 1;
        }
        hunk.lines.push(DiffLine {
            kind,
            old,
            new,
            text: text.strip_suffix('\r').unwrap_or(text).to_string(),
        });
    }
    Ok(hunks)
}

#[cfg(test)]
mod tests;
