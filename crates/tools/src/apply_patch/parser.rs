//! Parse `*** Begin Patch` ... `*** End Patch` text into file operations.
//!
//! Nothing here touches the file system: the result says what the patch asks
//! for, and [`super::apply`] decides whether the files allow it.
//!
//! Leniency (things models commonly get slightly wrong, with one obvious
//! reading): a heredoc (`<<'EOF'` ... `EOF`) or Markdown fence around the
//! patch, whitespace around `***` marker lines, a missing space after the
//! marker's colon, a first hunk without `@@`, `@@ -1,3 +1,4 @@` unified-diff
//! headers (the numbers are ignored, any trailing text is a context header),
//! and an empty line where an empty context line (`" "`) was meant. Empty
//! lines at the end of a hunk or file section are separators, not content.
//!
//! Strictness (where a guess could corrupt a file): missing begin or end
//! markers, unknown `***` markers, lines without a valid prefix, absolute
//! paths, `..` components, the same file named twice, and hunks that change
//! nothing are all errors.

use crate::paths::model_path;
use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: file operations in patch order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// One operation per file section, in patch order.
    pub ops: Vec<FileOp>,
}

/// One `*** Add/Delete/Update File:` section. Paths are relative and free of
/// `..` (checked while parsing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// `*** Add File:`: a new file (the call fails if it exists).
    Add {
        /// The new file's path, relative to the working directory.
        path: PathBuf,
        /// The new file's text, lines joined with `\n`.
        contents: String,
    },
    /// `*** Delete File:`: remove an existing file.
    Delete {
        /// The file's path, relative to the working directory.
        path: PathBuf,
    },
    /// `*** Update File:`: change an existing file, optionally moving it.
    Update {
        /// The file's path, relative to the working directory.
        path: PathBuf,
        /// `*** Move to:`: where the updated file goes; `None`: it stays.
        move_to: Option<PathBuf>,
        /// The changes, in file order (may be empty for a pure move).
        hunks: Vec<Hunk>,
    },
}

impl FileOp {
    /// The path the section names in its header.
    pub fn path(&self) -> &Path {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path } | FileOp::Update { path, .. } => {
                path
            }
        }
    }
}

/// What a hunk line does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// ` ` prefix: present before and after.
    Context,
    /// `-` prefix: removed.
    Remove,
    /// `+` prefix: added.
    Add,
}

/// One line of a hunk: its prefix's meaning and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLine {
    /// Context, removed or added (from the ` `, `-` or `+` prefix).
    pub kind: LineKind,
    /// The line without its prefix and line ending.
    pub text: String,
}

/// One `@@` hunk of an update.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// Stacked `@@ <text>` headers, outermost first; each narrows where the
    /// hunk is looked for.
    pub headers: Vec<String>,
    /// The hunk's lines, in order.
    pub lines: Vec<HunkLine>,
    /// `*** End of File`: the hunk's old lines end the file.
    pub end_of_file: bool,
    /// `\ No newline at end of file` after a `-` or context line.
    pub old_lacks_final_newline: bool,
    /// `\ No newline at end of file` after a `+` or context line.
    pub new_lacks_final_newline: bool,
    /// 1-based line of the patch where the hunk starts, for error messages.
    pub patch_line: usize,
}

impl Hunk {
    /// Context and `-` lines: what must be found in the file.
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .filter(|l| l.kind != LineKind::Add)
            .map(|l| l.text.as_str())
    }

    /// Whether the patch says something about the file's last newline.
    pub fn has_newline_marker(&self) -> bool {
        self.old_lacks_final_newline || self.new_lacks_final_newline
    }
}

/// A patch that cannot be parsed. `line` is 1-based in the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The line the problem is on; `None` when the patch is empty.
    pub line: Option<usize>,
    /// What is wrong, for the model.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "invalid patch, line {line}: {}", self.message),
            None => write!(f, "invalid patch: {}", self.message),
        }
    }
}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line: Some(line),
        message: message.into(),
    }
}

/// Parse a whole patch.
pub fn parse_patch(text: &str) -> Result<Patch, ParseError> {
    let all: Vec<&str> = text.lines().collect();
    let (offset, lines) = unwrap_envelope(&all);
    let Some(first) = lines.first() else {
        return Err(ParseError {
            line: None,
            message: format!("the patch is empty; it must start with `{BEGIN}`"),
        });
    };
    let position = |marker: &str| lines.iter().position(|l| l.trim() == marker);
    if first.trim() != BEGIN {
        let hint = match position(BEGIN) {
            Some(at) => format!("; remove the text before it (line {})", offset + at + 1),
            None => String::new(),
        };
        return Err(err(
            offset + 1,
            format!(
                "the first line must be `{BEGIN}`, got `{}`{hint}",
                clip(first)
            ),
        ));
    }
    let last_index = lines.len() - 1;
    if last_index == 0 || lines[last_index].trim() != END {
        let message = match position(END) {
            Some(at) if at > 0 => format!(
                "the last line must be `{END}`; remove the text after line {}",
                offset + at + 1
            ),
            _ => format!("the last line must be `{END}` (was the patch cut off?)"),
        };
        return Err(err(offset + lines.len(), message));
    }
    let body = Body {
        lines: &lines[1..last_index],
        first_line: offset + 2,
    };
    let ops = body.parse()?;
    if ops.is_empty() {
        return Err(err(
            offset + 1,
            "the patch contains no file operations; add `*** Add File:`, `*** Delete File:` or `*** Update File:` sections",
        ));
    }
    check_distinct_paths(&ops, &body)?;
    Ok(Patch { ops })
}

/// Strip blank lines around the patch and one heredoc or code-fence wrapper
/// (either order). Returns the index of the first kept line and the lines.
fn unwrap_envelope<'a, 'b>(all: &'b [&'a str]) -> (usize, &'b [&'a str]) {
    let mut start = 0;
    let mut end = all.len();
    for _ in 0..3 {
        while start < end && all[start].trim().is_empty() {
            start += 1;
        }
        while end > start && all[end - 1].trim().is_empty() {
            end -= 1;
        }
        if end - start < 2 {
            break;
        }
        let (open, close) = (all[start].trim(), all[end - 1].trim());
        let wrapped = match heredoc_delimiter(open) {
            Some(word) => close == word,
            None => open.starts_with("```") && close == "```",
        };
        if !wrapped {
            break;
        }
        start += 1;
        end -= 1;
    }
    (start, &all[start..end])
}

/// The delimiter word of a heredoc opener such as `<<'EOF'`, `<<-"PATCH"` or
/// `apply_patch <<EOF`.
pub(crate) fn heredoc_delimiter(line: &str) -> Option<&str> {
    let line = line.trim();
    let rest = ["apply_patch", "applypatch"]
        .iter()
        .find_map(|cmd| line.strip_prefix(cmd))
        .map_or(line, str::trim_start);
    let rest = rest.strip_prefix("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let word = match rest.chars().next() {
        Some(q @ ('\'' | '"')) => rest.strip_prefix(q)?.strip_suffix(q)?,
        _ => rest,
    };
    let valid = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    valid.then_some(word)
}

/// Lines between the begin and end markers.
struct Body<'a, 'b> {
    lines: &'b [&'a str],
    /// Patch line number of `lines[0]`.
    first_line: usize,
}

impl Body<'_, '_> {
    fn number(&self, index: usize) -> usize {
        self.first_line + index
    }

    fn parse(&self) -> Result<Vec<FileOp>, ParseError> {
        let mut ops = Vec::new();
        let mut i = 0;
        while i < self.lines.len() {
            let raw = self.lines[i];
            let line = raw.trim();
            if line.is_empty() {
                i += 1;
                continue;
            }
            let n = self.number(i);
            if let Some(path) = line.strip_prefix(ADD) {
                let path = parse_path(path, n)?;
                let (contents, next) = self.parse_add(i + 1)?;
                ops.push(FileOp::Add { path, contents });
                i = next;
            } else if let Some(path) = line.strip_prefix(DELETE) {
                ops.push(FileOp::Delete {
                    path: parse_path(path, n)?,
                });
                i += 1;
            } else if let Some(path) = line.strip_prefix(UPDATE) {
                let path = parse_path(path, n)?;
                i += 1;
                let mut move_to = None;
                if let Some(dest) = self.lines.get(i).and_then(|l| l.trim().strip_prefix(MOVE)) {
                    let dest = parse_path(dest, self.number(i))?;
                    // Moving a file onto itself is a plain update.
                    move_to = (dest != path).then_some(dest);
                    i += 1;
                }
                let (hunks, next) = self.parse_hunks(i)?;
                if hunks.is_empty() && move_to.is_none() {
                    return Err(err(
                        n,
                        format!(
                            "`*** Update File: {}` has no hunks; add `@@` hunks or remove the section",
                            path.display()
                        ),
                    ));
                }
                ops.push(FileOp::Update {
                    path,
                    move_to,
                    hunks,
                });
                i = next;
            } else if line.starts_with(MOVE) {
                return Err(err(
                    n,
                    "`*** Move to:` must directly follow an `*** Update File:` line",
                ));
            } else if line == END || line == BEGIN {
                return Err(err(n, format!("unexpected `{line}` inside the patch")));
            } else {
                return Err(err(
                    n,
                    format!(
                        "expected a file header (`*** Add File: <path>`, `*** Delete File: <path>` or `*** Update File: <path>`), got `{}`",
                        clip(raw)
                    ),
                ));
            }
        }
        Ok(ops)
    }

    /// `+` lines of an added file, up to the next marker. Returns the
    /// contents and the index of the first line not consumed.
    fn parse_add(&self, mut i: usize) -> Result<(String, usize), ParseError> {
        let mut out: Vec<&str> = Vec::new();
        let mut blanks = 0;
        let mut final_newline = true;
        while let Some(&raw) = self.lines.get(i) {
            if raw.is_empty() {
                blanks += 1;
            } else if let Some(text) = raw.strip_prefix('+') {
                if !final_newline {
                    return Err(err(
                        self.number(i),
                        "`\\ No newline at end of file` must follow the last `+` line",
                    ));
                }
                // Empty lines between `+` lines were meant as empty `+` lines.
                out.extend(std::iter::repeat_n("", blanks));
                blanks = 0;
                out.push(text);
            } else if raw.starts_with('\\') {
                if out.is_empty() || blanks > 0 {
                    return Err(err(
                        self.number(i),
                        "`\\ No newline at end of file` must directly follow a `+` line",
                    ));
                }
                final_newline = false;
            } else if raw.trim_start().starts_with("***") {
                break;
            } else {
                return Err(err(
                    self.number(i),
                    format!(
                        "every line of an added file must start with `+`, got `{}`",
                        clip(raw)
                    ),
                ));
            }
            i += 1;
        }
        let mut contents = out.join("\n");
        if final_newline && !out.is_empty() {
            contents.push('\n');
        }
        Ok((contents, i))
    }

    /// Hunks of an update, up to the next file header. Returns the hunks and
    /// the index of the first line not consumed.
    fn parse_hunks(&self, mut i: usize) -> Result<(Vec<Hunk>, usize), ParseError> {
        let mut hunks: Vec<Hunk> = Vec::new();
        let mut current: Option<Hunk> = None;
        // Empty lines seen since the last hunk line: context if more hunk
        // lines follow, separators otherwise.
        let mut blanks = 0;
        while let Some(&raw) = self.lines.get(i) {
            let n = self.number(i);
            if raw.is_empty() {
                blanks += 1;
                i += 1;
                continue;
            }
            let kind = match raw.as_bytes()[0] {
                b' ' => Some(LineKind::Context),
                b'-' => Some(LineKind::Remove),
                b'+' => Some(LineKind::Add),
                _ => None,
            };
            if let Some(kind) = kind {
                let hunk = current.get_or_insert_with(|| Hunk {
                    patch_line: n,
                    ..Hunk::default()
                });
                if hunk.has_newline_marker() {
                    check_after_marker(hunk, kind, n)?;
                }
                if !hunk.lines.is_empty() {
                    for _ in 0..blanks {
                        hunk.lines.push(HunkLine {
                            kind: LineKind::Context,
                            text: String::new(),
                        });
                    }
                }
                blanks = 0;
                hunk.lines.push(HunkLine {
                    kind,
                    text: raw[1..].to_string(),
                });
            } else if raw.starts_with("@@") {
                blanks = 0;
                let header = hunk_header(raw);
                match &mut current {
                    Some(hunk) if hunk.lines.is_empty() => hunk.headers.extend(header),
                    _ => {
                        if let Some(done) = current.take() {
                            hunks.push(finish_hunk(done, hunks.len() + 1)?);
                        }
                        current = Some(Hunk {
                            headers: header.into_iter().collect(),
                            patch_line: n,
                            ..Hunk::default()
                        });
                    }
                }
            } else if raw.starts_with('\\') {
                let Some(hunk) = current
                    .as_mut()
                    .filter(|h| !h.lines.is_empty() && blanks == 0)
                else {
                    return Err(err(
                        n,
                        "`\\ No newline at end of file` must directly follow a hunk line",
                    ));
                };
                match hunk.lines.last().map(|l| l.kind) {
                    Some(LineKind::Remove) => hunk.old_lacks_final_newline = true,
                    Some(LineKind::Add) => hunk.new_lacks_final_newline = true,
                    _ => {
                        hunk.old_lacks_final_newline = true;
                        hunk.new_lacks_final_newline = true;
                    }
                }
            } else if raw.trim() == END_OF_FILE {
                blanks = 0;
                let Some(mut hunk) = current.take() else {
                    return Err(err(n, "`*** End of File` must end a hunk"));
                };
                hunk.end_of_file = true;
                hunks.push(finish_hunk(hunk, hunks.len() + 1)?);
            } else if raw.trim_start().starts_with("***") {
                let trimmed = raw.trim();
                let known = [ADD, DELETE, UPDATE, MOVE, END, BEGIN]
                    .iter()
                    .any(|m| trimmed.starts_with(m));
                if !known {
                    return Err(err(n, format!("unknown marker `{}`", clip(raw))));
                }
                break;
            } else {
                return Err(err(
                    n,
                    format!(
                        "`{}`: every hunk line must start with ' ' (context), '-' (remove) or '+' (add); hunks start with `@@`",
                        clip(raw)
                    ),
                ));
            }
            i += 1;
        }
        if let Some(done) = current {
            hunks.push(finish_hunk(done, hunks.len() + 1)?);
        }
        Ok((hunks, i))
    }
}

/// After `\ No newline at end of file`, the side it describes has ended.
fn check_after_marker(hunk: &Hunk, kind: LineKind, line: usize) -> Result<(), ParseError> {
    let old_ended = hunk.old_lacks_final_newline && kind != LineKind::Add;
    let new_ended = hunk.new_lacks_final_newline && kind != LineKind::Remove;
    if old_ended || new_ended {
        return Err(err(
            line,
            "a line follows `\\ No newline at end of file` on the same side; the marker must follow the last line",
        ));
    }
    Ok(())
}

fn finish_hunk(mut hunk: Hunk, number: usize) -> Result<Hunk, ParseError> {
    if hunk.lines.is_empty() {
        return Err(err(
            hunk.patch_line,
            format!("hunk {number} has no lines; add context, `-` and `+` lines after `@@`"),
        ));
    }
    let changes = hunk.lines.iter().any(|l| l.kind != LineKind::Context);
    if !changes && !hunk.has_newline_marker() {
        return Err(err(
            hunk.patch_line,
            format!("hunk {number} changes nothing: it has no `-` or `+` lines"),
        ));
    }
    if hunk.has_newline_marker() {
        hunk.end_of_file = true;
    }
    Ok(hunk)
}

/// The context text of an `@@` line, if any. `@@ -3,4 +3,5 @@ fn x()`
/// (unified-diff style) yields `fn x()`.
fn hunk_header(raw: &str) -> Option<String> {
    let rest = raw.trim_end().strip_prefix("@@")?;
    let trimmed = rest.trim_start();
    let text = match trimmed.strip_prefix('-') {
        Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => {
            // `@@ -a,b +c,d @@ text`: keep only what follows the closing `@@`.
            trimmed.find("@@").map_or("", |at| &trimmed[at + 2..])
        }
        _ => rest,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Validate a path as written after a marker: relative, no `..`.
fn parse_path(raw: &str, line: usize) -> Result<PathBuf, ParseError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(err(line, "missing path after the marker"));
    }
    model_path(text, false).map_err(|message| err(line, message))
}

/// No path may be the subject of two operations (including move targets):
/// the order they would apply in would be a guess.
fn check_distinct_paths(ops: &[FileOp], body: &Body<'_, '_>) -> Result<(), ParseError> {
    // A set: comparing each path with every earlier one took minutes for
    // a patch of 20,000 operations.
    let mut seen: HashSet<&Path> = HashSet::new();
    for op in ops {
        let mut paths = vec![op.path()];
        if let FileOp::Update {
            move_to: Some(dest),
            ..
        } = op
        {
            paths.push(dest);
        }
        for path in paths {
            if !seen.insert(path) {
                let line = body
                    .lines
                    .iter()
                    .rposition(|l| l.contains(&*path.to_string_lossy()))
                    .map(|i| body.number(i));
                return Err(ParseError {
                    line,
                    message: format!(
                        "`{}` appears in more than one file operation; combine them into one section",
                        path.display()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A patch line shortened for an error message.
fn clip(line: &str) -> String {
    const MAX: usize = 80;
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Patch, ParseError> {
        parse_patch(&format!("*** Begin Patch\n{body}*** End Patch\n"))
    }

    fn ctx(t: &str) -> HunkLine {
        HunkLine {
            kind: LineKind::Context,
            text: t.into(),
        }
    }
    fn rm(t: &str) -> HunkLine {
        HunkLine {
            kind: LineKind::Remove,
            text: t.into(),
        }
    }
    fn add(t: &str) -> HunkLine {
        HunkLine {
            kind: LineKind::Add,
            text: t.into(),
        }
    }

    #[test]
    fn parses_all_operations() {
        let patch = parse(
            "*** Add File: a/new.txt\n+one\n+two\n*** Delete File: old.txt\n\
             *** Update File: src/x.rs\n*** Move to: src/y.rs\n@@ fn main()\n ctx\n-old\n+new\n",
        )
        .unwrap();
        assert_eq!(
            patch.ops,
            vec![
                FileOp::Add {
                    path: "a/new.txt".into(),
                    contents: "one\ntwo\n".into()
                },
                FileOp::Delete {
                    path: "old.txt".into()
                },
                FileOp::Update {
                    path: "src/x.rs".into(),
                    move_to: Some("src/y.rs".into()),
                    hunks: vec![Hunk {
                        headers: vec!["fn main()".into()],
                        lines: vec![ctx("ctx"), rm("old"), add("new")],
                        patch_line: 8,
                        ..Hunk::default()
                    }],
                },
            ]
        );
    }

    #[test]
    fn stacked_headers_and_end_of_file() {
        let patch =
            parse("*** Update File: f\n@@ class A\n@@   fn m()\n-x\n+y\n*** End of File\n@@\n+z\n")
                .unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else {
            panic!("not an update")
        };
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].headers, vec!["class A", "fn m()"]);
        assert!(hunks[0].end_of_file);
        assert!(hunks[1].headers.is_empty());
        assert!(!hunks[1].end_of_file);
    }

    #[test]
    fn blank_lines_inside_hunk_are_context_and_trailing_ones_separators() {
        let patch = parse("*** Update File: f\n@@\n a\n\n-b\n+c\n\n\n@@\n-d\n+e\n\n").unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else {
            panic!("not an update")
        };
        assert_eq!(hunks[0].lines, vec![ctx("a"), ctx(""), rm("b"), add("c")]);
        assert_eq!(hunks[1].lines, vec![rm("d"), add("e")]);
    }

    #[test]
    fn first_hunk_may_omit_at_at_and_unified_headers_are_reduced() {
        let patch =
            parse("*** Update File: f\n a\n+b\n@@ -10,2 +10,3 @@ fn x()\n-c\n+d\n").unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else {
            panic!("not an update")
        };
        assert_eq!(hunks[0].lines, vec![ctx("a"), add("b")]);
        assert_eq!(hunks[1].headers, vec!["fn x()"]);
        assert_eq!(hunk_header("@@ -1 +1 @@"), None);
        assert_eq!(hunk_header("@@"), None);
        assert_eq!(hunk_header("@@ -x"), Some("-x".into()));
    }

    #[test]
    fn heredoc_and_fence_wrappers_are_removed() {
        for text in [
            "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
            "apply_patch <<\"PATCH\"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH",
            "```diff\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```\n",
            "\n  *** Begin Patch  \r\n*** Delete File: a\r\n *** End Patch\n\n",
        ] {
            let patch = parse_patch(text).unwrap();
            assert_eq!(
                patch.ops,
                vec![FileOp::Delete { path: "a".into() }],
                "{text}"
            );
        }
        // The closing word must match the opener.
        assert!(
            parse_patch("<<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEND").is_err()
        );
    }

    #[test]
    fn add_file_blank_lines_and_missing_final_newline() {
        let patch = parse("*** Add File: a\n+x\n\n+y\n\\ No newline at end of file\n\n").unwrap();
        assert_eq!(
            patch.ops[0],
            FileOp::Add {
                path: "a".into(),
                contents: "x\n\ny".into()
            }
        );
        let patch = parse("*** Add File: empty\n").unwrap();
        assert_eq!(
            patch.ops[0],
            FileOp::Add {
                path: "empty".into(),
                contents: String::new()
            }
        );
    }

    #[test]
    fn newline_markers_set_sides_and_anchor_at_end() {
        let patch = parse(
            "*** Update File: f\n@@\n-a\n\\ No newline at end of file\n+a\n+b\n\\ No newline at end of file\n",
        )
        .unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else {
            panic!("not an update")
        };
        assert!(hunks[0].old_lacks_final_newline);
        assert!(hunks[0].new_lacks_final_newline);
        assert!(hunks[0].end_of_file);
        let e =
            parse("*** Update File: f\n@@\n-a\n\\ No newline at end of file\n a\n").unwrap_err();
        assert!(e.message.contains("must follow the last line"), "{e}");
    }

    #[test]
    fn pure_rename_needs_no_hunks() {
        let patch = parse("*** Update File: a\n*** Move to: b\n").unwrap();
        assert_eq!(
            patch.ops[0],
            FileOp::Update {
                path: "a".into(),
                move_to: Some("b".into()),
                hunks: vec![]
            }
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            (
                "*** Update File: f\n@@\n-a\n+b\nfoo\n",
                6,
                "must start with ' '",
            ),
            ("*** Update File: f\n", 2, "has no hunks"),
            (
                "*** Update File: f\n@@\n*** End of File\n",
                3,
                "has no lines",
            ),
            ("*** Update File: f\n@@\n a\n", 3, "changes nothing"),
            ("*** Add File: a\nx\n", 3, "must start with `+`"),
            ("*** Frobnicate File: a\n", 2, "expected a file header"),
            (
                "*** Update File: a\n@@\n-x\n*** Frob\n",
                5,
                "unknown marker",
            ),
            ("*** Add File: /etc/passwd\n+x\n", 2, "absolute path"),
            ("*** Delete File: ../x\n", 2, "contains `..`"),
            ("*** Delete File: a/../../x\n", 2, "contains `..`"),
            ("*** Delete File: \n", 2, "missing path"),
            ("*** Move to: b\n", 2, "must directly follow"),
        ];
        for (body, line, needle) in cases {
            let e = parse(body).unwrap_err();
            assert_eq!(e.line, Some(*line), "{body:?}: {e}");
            assert!(e.message.contains(needle), "{body:?}: {e}");
        }
    }

    #[test]
    fn boundary_errors() {
        let e = parse_patch("").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = parse_patch("*** Add File: a\n+x\n*** End Patch").unwrap_err();
        assert!(e.message.contains("first line must be"), "{e}");
        let e = parse_patch("*** Begin Patch\n*** Add File: a\n+x\n").unwrap_err();
        assert!(e.message.contains("cut off"), "{e}");
        let e = parse_patch("Here you go:\n*** Begin Patch\n*** Delete File: a\n*** End Patch")
            .unwrap_err();
        assert!(
            e.message.contains("remove the text before it (line 2)"),
            "{e}"
        );
        let e =
            parse_patch("*** Begin Patch\n*** Delete File: a\n*** End Patch\nDone.").unwrap_err();
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("remove the text after line 3"), "{e}");
        let e = parse_patch("*** Begin Patch\n*** End Patch").unwrap_err();
        assert!(e.message.contains("no file operations"), "{e}");
        let e = parse("*** Delete File: a\n*** Update File: ./a\n@@\n+x\n").unwrap_err();
        assert!(e.message.contains("more than one"), "{e}");
        let e = parse("*** Add File: b\n*** Update File: a\n*** Move to: b\n").unwrap_err();
        assert!(e.message.contains("more than one"), "{e}");
    }

    #[test]
    fn many_operations_parse_in_linear_time() {
        // Found while writing the apply_patch_parser fuzz target (a scaling
        // check; fuzz inputs are too small to show it): the check that no
        // path appears twice compared every path with every earlier one,
        // 142 s for these 20,000 operations in a debug build.
        let mut patch = String::from("*** Begin Patch\n");
        for i in 0..20_000 {
            patch.push_str(&format!("*** Delete File: dir/f{i}.rs\n"));
        }
        patch.push_str("*** Delete File: dir/f7.rs\n*** End Patch\n");
        let started = std::time::Instant::now();
        let e = parse_patch(&patch).unwrap_err();
        assert!(
            crate::paths::tests::slashed(&e.message)
                .contains("`dir/f7.rs` appears in more than one"),
            "{e}"
        );
        let patch = patch.replace("*** Delete File: dir/f7.rs\n*** End", "*** End");
        assert_eq!(parse_patch(&patch).unwrap().ops.len(), 20_000);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn heredoc_delimiters() {
        assert_eq!(heredoc_delimiter("<<'EOF'"), Some("EOF"));
        assert_eq!(heredoc_delimiter("<<-EOF"), Some("EOF"));
        assert_eq!(heredoc_delimiter("applypatch << \"P_1\""), Some("P_1"));
        assert_eq!(heredoc_delimiter("<<'EOF"), None);
        assert_eq!(heredoc_delimiter("cat <<EOF"), None);
        assert_eq!(heredoc_delimiter("<<"), None);
    }
}
