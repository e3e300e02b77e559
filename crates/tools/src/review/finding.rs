//! A finding: what `report_finding` takes from the model, checked against
//! the scope's diff, and what reports are made of. A finding points at
//! lines the diff shows: on the new side (added and context lines; the
//! default), or with `side = "old"` at lines the change deleted, which
//! then also carry the new-side line where they stood (`anchor_line`),
//! for the code hosts that can only point at the new file. A file whose
//! change has no lines (binary files, symlinks, submodules, a change of
//! mode only, an empty file) takes findings about the whole of it:
//! `start_line` and `end_line` 0.

use super::diff::{Content, DiffLine, FileDiff, FileStatus, ScopeDiff, Side};
use crate::apply_patch::{parse_patch, update_text, FileOp};
use crate::ask_user::{clean, visible};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The most findings one review keeps; more are refused.
pub const MAX_FINDINGS: usize = 100;
/// The most characters of a title.
pub const MAX_TITLE_CHARS: usize = 200;
/// The most bytes of a body.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// The most bytes of a fix.
pub const MAX_FIX_BYTES: usize = 64 * 1024;
/// The most code lines a finding keeps to show (its fingerprint reads
/// them all).
const MAX_CODE_LINES: usize = 40;
/// The most characters of a code line kept to show.
const MAX_CODE_LINE_CHARS: usize = 300;

/// The arguments of one `report_finding` call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingArgs {
    /// The file, relative to the repository's root.
    pub path: String,
    /// First line, 1-based (0 with `end_line` 0: the whole file).
    pub start_line: i64,
    /// Last line, inclusive.
    pub end_line: i64,
    /// 0 to 3: P0 (must fix now) to P3 (a nit).
    pub priority: i64,
    /// One line.
    pub title: String,
    /// Why it is wrong, and what to do.
    pub body: String,
    /// 0 to 1.
    pub confidence: f64,
    /// Which side the lines count on (default new).
    #[serde(default)]
    pub side: Option<Side>,
    /// A patch in apply_patch's format that fixes it.
    #[serde(default)]
    pub fix: Option<String>,
}

/// A line of code a finding points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeLine {
    /// Its number on the finding's side.
    pub line: u32,
    /// Its text (long lines cut).
    pub text: String,
}

/// One whole-line replacement of a fix: lines `start_line..=end_line` of
/// the file as it is (their text, without the last line's ending) become
/// `text`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replacement {
    /// First line replaced, 1-based.
    pub start_line: u32,
    /// Last line replaced, inclusive.
    pub end_line: u32,
    /// What replaces them.
    pub text: String,
}

/// A suggested fix, checked: it applies to the file as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// The patch as the model wrote it (apply_patch's format).
    pub patch: String,
    /// The unified diff it makes, for people (without control
    /// characters).
    pub diff: String,
    /// The same change as replacements of whole lines of the file.
    pub replacements: Vec<Replacement>,
}

/// A finding, checked against the scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The file, relative to the repository's root (its new path; the old
    /// one for a deleted file).
    pub path: String,
    /// The path it had before a rename or copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// The side `start_line` and `end_line` count on.
    pub side: Side,
    /// First line (0: the whole file).
    pub start_line: u32,
    /// Last line, inclusive (0: the whole file).
    pub end_line: u32,
    /// For old-side lines: the line of the new file where they stood.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_line: Option<u32>,
    /// 0 (P0, most severe) to 3 (P3).
    pub priority: u8,
    /// One line.
    pub title: String,
    /// The explanation.
    pub body: String,
    /// 0 to 1.
    pub confidence: f64,
    /// The lines pointed at, as the diff shows them (at most 40).
    pub code: Vec<CodeLine>,
    /// Stable across pushes while the code it points at stays the same:
    /// a hash of the path, the side, the priority and the code lines (the
    /// title for a whole-file finding), whitespace ignored.
    pub fingerprint: String,
    /// The suggested fix, when the model gave one that applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
}

impl Finding {
    /// `P0` .. `P3`.
    pub fn priority_name(&self) -> String {
        format!("P{}", self.priority)
    }

    /// The width of the widest line number of [`Finding::code`], for
    /// showing the lines aligned.
    pub fn number_width(&self) -> usize {
        self.code
            .iter()
            .map(|c| c.line.to_string().len())
            .max()
            .unwrap_or(1)
    }

    /// True for a finding about a whole file (no lines).
    pub fn whole_file(&self) -> bool {
        self.start_line == 0
    }

    /// `path:start-end`, with `(deleted)` for old-side lines.
    pub fn location(&self) -> String {
        let lines = match (self.start_line, self.end_line) {
            (0, _) => String::new(),
            (s, e) if s == e => format!(":{s}"),
            (s, e) => format!(":{s}-{e}"),
        };
        let side = match self.side {
            Side::Old => " (deleted lines)",
            Side::New => "",
        };
        format!("{}{lines}{side}", self.path)
    }
}

/// A finding checked against `diff`, without its fix; `prefix` is the
/// working directory relative to the repository's root (`""` at the
/// root), for paths the model gave relative to it. `Err` is the reason
/// for the model.
pub fn check(args: &FindingArgs, diff: &ScopeDiff, prefix: &str) -> Result<Finding, String> {
    let priority = u8::try_from(args.priority)
        .ok()
        .filter(|p| *p <= 3)
        .ok_or_else(|| {
            format!(
                "priority {} is not one of 0, 1, 2, 3 (P0 most severe, P3 a nit)",
                args.priority
            )
        })?;
    if !(args.confidence.is_finite() && (0.0..=1.0).contains(&args.confidence)) {
        return Err(format!(
            "confidence {} is not between 0 and 1",
            args.confidence
        ));
    }
    // What the model wrote, and what the repository holds, is shown to
    // people: nothing in it may act on a terminal.
    let title = &clean(&args.title, true);
    if title.is_empty() || title.contains('\n') || title.chars().count() > MAX_TITLE_CHARS {
        return Err(format!(
            "the title must be one line of 1 to {MAX_TITLE_CHARS} characters"
        ));
    }
    if args.body.trim().is_empty() || args.body.len() > MAX_BODY_BYTES {
        return Err(format!(
            "the body must say what is wrong, in 1 to {MAX_BODY_BYTES} bytes"
        ));
    }
    let side = args.side.unwrap_or_default();
    let file = find(diff, &args.path, prefix, side)?;
    let (start, end) = lines(args, file, side)?;
    let code: Vec<&DiffLine> = if start == 0 {
        Vec::new()
    } else {
        file.lines(side, start, end).ok_or_else(|| {
            let shown = file
                .ranges(side)
                .iter()
                .map(|(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}-{b}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            let shown = if shown.is_empty() {
                "none".to_string()
            } else {
                shown
            };
            format!(
                "lines {start}-{end} of `{}` ({} side) are not all in this review's diff; the \
                 lines it shows on that side are: {shown}. Point at lines the change added, \
                 deleted (side \"old\") or shows as context",
                file.path,
                side.as_str()
            )
        })?
    };
    let anchor = match side {
        Side::Old => file.anchor(start, end),
        Side::New => None,
    };
    Ok(Finding {
        path: file.path.clone(),
        old_path: file.old_path.clone(),
        side,
        start_line: start,
        end_line: end,
        anchor_line: anchor,
        priority,
        title: title.to_string(),
        body: clean(&args.body, true),
        confidence: args.confidence,
        fingerprint: fingerprint(&file.path, side, priority, title, &code),
        code: code
            .iter()
            .take(MAX_CODE_LINES)
            .map(|l| CodeLine {
                line: match side {
                    Side::New => l.new.unwrap_or_default(),
                    Side::Old => l.old.unwrap_or_default(),
                },
                text: cut(&visible(&l.text), MAX_CODE_LINE_CHARS),
            })
            .collect(),
        fix: None,
    })
}

/// The file of `diff` the model's `path` names.
fn find<'d>(
    diff: &'d ScopeDiff,
    path: &str,
    prefix: &str,
    side: Side,
) -> Result<&'d FileDiff, String> {
    // In git's form: `/` between names on every platform.
    let clean = crate::paths::model_path(path, false)?
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let in_cwd = (!prefix.is_empty()).then(|| format!("{prefix}/{clean}"));
    for candidate in std::iter::once(clean.to_string()).chain(in_cwd) {
        if let Some(file) = diff.file(&candidate) {
            return Ok(file);
        }
        if let Some(file) = diff.renamed_from(&candidate) {
            if side == Side::Old {
                return Ok(file);
            }
            return Err(format!(
                "`{candidate}` is now `{}` ({} in this change): report on `{}` (side \"old\" \
                 for lines the change deleted)",
                file.path,
                file.status.as_str(),
                file.path
            ));
        }
    }
    let mut names: Vec<&str> = diff
        .files
        .iter()
        .take(20)
        .map(|f| f.path.as_str())
        .collect();
    if diff.files.len() > names.len() {
        names.push("...");
    }
    Err(format!(
        "`{path}` is not part of this review's scope, so no finding can point at it; the files \
         in scope (paths relative to the repository's root) are: {}",
        names.join(", ")
    ))
}

/// The finding's lines, checked against what the file's change has.
fn lines(args: &FindingArgs, file: &FileDiff, side: Side) -> Result<(u32, u32), String> {
    let whole = args.start_line == 0 && args.end_line == 0;
    let lineless = !file.content.has_lines() || file.hunks.is_empty();
    if lineless {
        if !whole {
            let what = match &file.content {
                Content::Binary => "a binary file".to_string(),
                Content::Symlink => "a symbolic link".to_string(),
                Content::Submodule => "a submodule".to_string(),
                Content::Skipped(why) => format!("not shown ({why})"),
                Content::Text => "changed without a line to point at".to_string(),
            };
            return Err(format!(
                "`{}` is {what}: it has no lines in this diff. Report on the whole file with \
                 start_line 0 and end_line 0",
                file.path
            ));
        }
        return Ok((0, 0));
    }
    if whole {
        return Err(format!(
            "`{}` has lines in this diff: name them (start_line and end_line from 1)",
            file.path
        ));
    }
    if side == Side::New && file.status == FileStatus::Deleted {
        return Err(format!(
            "`{}` is deleted in this change: its lines are on the old side; set side \"old\"",
            file.path
        ));
    }
    let valid = |n: i64| u32::try_from(n).ok().filter(|n| *n >= 1);
    match (valid(args.start_line), valid(args.end_line)) {
        (Some(start), Some(end)) if start <= end => Ok((start, end)),
        _ => Err(format!(
            "start_line {} and end_line {} must be line numbers from 1, start_line <= end_line",
            args.start_line, args.end_line
        )),
    }
}

fn fingerprint(path: &str, side: Side, priority: u8, title: &str, code: &[&DiffLine]) -> String {
    let mut hash = Sha256::new();
    for part in [path, side.as_str(), &priority.to_string()] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    if code.is_empty() {
        hash.update(squash(title).as_bytes());
    }
    for line in code {
        hash.update(squash(&line.text).as_bytes());
        hash.update([b'\n']);
    }
    let digest = hash.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// `text` without whitespace.
fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Check `patch` (apply_patch's format) as a fix of the file `path`,
/// whose text is now `current`: one `*** Update File:` of that file that
/// applies to it. `Err` is the reason for the model.
pub fn fix(patch: &str, path: &str, current: &str) -> Result<Fix, String> {
    if patch.len() > MAX_FIX_BYTES {
        return Err(format!("the fix is larger than {MAX_FIX_BYTES} bytes"));
    }
    let parsed = parse_patch(patch)
        .map_err(|e| format!("the fix is not a patch in apply_patch's format: {e}"))?;
    let hunks = match &parsed.ops[..] {
        [FileOp::Update {
            path: target,
            move_to: None,
            hunks,
        }] if target.as_path() == Path::new(path) => hunks,
        _ => {
            return Err(format!(
                "the fix must be one `*** Update File: {path}` section changing the finding's \
                 file in place (no other file, no move)"
            ))
        }
    };
    let updated = update_text(path, current, hunks)
        .map_err(|e| {
            format!(
                "the fix does not apply to `{path}` as it is now: {}",
                e.message
            )
        })?
        .text;
    if updated == current {
        return Err("the fix changes nothing".into());
    }
    Ok(Fix {
        patch: patch.to_string(),
        diff: visible(
            &crate::diff::unified(Some((path, current)), Some((path, &updated)))
                .unwrap_or_default(),
        ),
        replacements: replacements(current, &updated)?,
    })
}

/// The change from `old` to `new` as replacements of whole lines of
/// `old` (each region's last line ending stays, as SARIF's line regions
/// leave it).
fn replacements(old: &str, new: &str) -> Result<Vec<Replacement>, String> {
    let o: Vec<&str> = old.split_inclusive('\n').collect();
    let n: Vec<&str> = new.split_inclusive('\n').collect();
    let total = o.len();
    if total == 0 {
        return Err("the file is empty: there is no line to replace".into());
    }
    let joined = |lines: &[&str]| -> String {
        let text: String = lines.concat();
        strip_last_eol(&text).to_string()
    };
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for group in diff.grouped_ops(0) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (a, b) = (first.old_range().start, last.old_range().end);
        let (c, d) = (first.new_range().start, last.new_range().end);
        let at = |s: usize, e: usize, text: String| Replacement {
            start_line: s as u32,
            end_line: e as u32,
            text,
        };
        out.push(match (b > a, d > c) {
            (true, true) => at(a + 1, b, joined(&n[c..d])),
            // A deletion takes the line after it (or before it, at the end)
            // along, so that its line ending goes too.
            (true, false) if b < total => at(a + 1, b + 1, strip_last_eol(o[b]).to_string()),
            (true, false) if a > 0 => at(a, b, strip_last_eol(o[a - 1]).to_string()),
            (true, false) => at(1, total, String::new()),
            // An insertion goes before the line it precedes (or after the
            // last one).
            (false, _) if a < total => at(
                a + 1,
                a + 1,
                format!("{}{}", n[c..d].concat(), strip_last_eol(o[a])),
            ),
            (false, _) => {
                let last_line = o[total - 1];
                let eol = if last_line.ends_with('\n') { "" } else { "\n" };
                at(
                    total,
                    total,
                    format!("{last_line}{eol}{}", joined(&n[c..d])),
                )
            }
        });
    }
    Ok(out)
}

fn strip_last_eol(text: &str) -> &str {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.strip_suffix('\r').unwrap_or(text)
}

#[cfg(test)]
mod tests;
