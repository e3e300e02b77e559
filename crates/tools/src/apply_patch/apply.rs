//! Apply an update's hunks to a file's text, in memory.
//!
//! Every hunk is located before anything is rewritten. Lines the patch keeps
//! (context) keep their exact bytes from the file, so a fuzzy match never
//! rewrites whitespace or punctuation the model got slightly wrong. Added
//! lines take the file's dominant line ending; the final-newline state is
//! preserved unless a hunk at the end says otherwise with
//! `\ No newline at end of file`.

use super::parser::{Hunk, LineKind};
use super::seek::{closest_window, find_block, find_header, Found, Fuzz, Haystack};
use std::fmt::Write as _;

/// A hunk that cannot be applied. `Display` is the message for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: hunk {hunk} (patch line {patch_line}): {message}")]
pub struct HunkError {
    /// The file the hunk belongs to, as the patch names it.
    pub path: String,
    /// 1-based within the file's section.
    pub hunk: usize,
    /// 1-based line of the patch where the hunk starts.
    pub patch_line: usize,
    /// What did not match (with the nearest miss when there is one).
    pub message: String,
}

/// The new text of a file and how loosely each non-exact hunk matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Updated {
    /// The file's whole new text.
    pub text: String,
    /// (1-based hunk number, level) for hunks that needed fuzz.
    pub fuzz: Vec<(usize, Fuzz)>,
}

const BOM: &str = "\u{feff}";

/// A file split into lines, each with its own terminator (`""` only for a
/// last line without newline).
struct Lines<'a> {
    text: Vec<&'a str>,
    eol: Vec<&'a str>,
}

impl<'a> Lines<'a> {
    fn split(content: &'a str) -> Self {
        let count = content.bytes().filter(|&b| b == b'\n').count() + 1;
        let mut text = Vec::with_capacity(count);
        let mut eol = Vec::with_capacity(count);
        let mut rest = content;
        while !rest.is_empty() {
            let (line, ending, next) = match rest.find('\n') {
                Some(at) if at > 0 && rest.as_bytes()[at - 1] == b'\r' => {
                    (&rest[..at - 1], &rest[at - 1..=at], &rest[at + 1..])
                }
                Some(at) => (&rest[..at], &rest[at..=at], &rest[at + 1..]),
                None => (rest, "", ""),
            };
            text.push(line);
            eol.push(ending);
            rest = next;
        }
        Lines { text, eol }
    }

    /// True for an empty file too: lines added to it end normally.
    fn ends_with_newline(&self) -> bool {
        self.eol.last().is_none_or(|e| !e.is_empty())
    }
}

/// The line ending of new lines in `text`: CRLF when more lines end in CRLF
/// than in a bare LF, LF otherwise. Shared with `edit_file`, so both tools
/// agree on what a CRLF file is.
pub(crate) fn dominant_eol(text: &str) -> &'static str {
    let all = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    let crlf = text.matches("\r\n").count();
    if crlf > all - crlf {
        "\r\n"
    } else {
        "\n"
    }
}

/// Where a hunk goes: its old lines start at line `start` (0-based).
struct Placement<'h> {
    hunk: &'h Hunk,
    start: usize,
    fuzz: Fuzz,
}

/// Apply `hunks` (in file order) to `original`. `path` only labels errors.
pub fn update_text(path: &str, original: &str, hunks: &[Hunk]) -> Result<Updated, HunkError> {
    let (bom, body) = match original.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", original),
    };
    let lines = Lines::split(body);
    let hay = Haystack::new(&lines.text);
    let mut placements = Vec::with_capacity(hunks.len());
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let placement = locate(&hay, hunk, cursor).map_err(|message| HunkError {
            path: path.to_string(),
            hunk: index + 1,
            patch_line: hunk.patch_line,
            message,
        })?;
        cursor = placement.start + hunk.old_lines().count();
        placements.push(placement);
    }

    let eol = dominant_eol(body);
    let mut out: Vec<(&str, &str)> = Vec::with_capacity(lines.text.len() + 16);
    let mut final_newline = lines.ends_with_newline();
    let mut next = 0;
    for p in &placements {
        out.extend((next..p.start).map(|i| (lines.text[i], lines.eol[i])));
        let mut i = p.start;
        for line in &p.hunk.lines {
            match line.kind {
                LineKind::Context => {
                    out.push((lines.text[i], lines.eol[i]));
                    i += 1;
                }
                LineKind::Remove => i += 1,
                LineKind::Add => out.push((&line.text, eol)),
            }
        }
        if i == lines.text.len() && p.hunk.has_newline_marker() {
            final_newline = !p.hunk.new_lacks_final_newline;
        }
        next = i;
    }
    out.extend((next..lines.text.len()).map(|i| (lines.text[i], lines.eol[i])));

    let mut text = String::with_capacity(original.len() + 64);
    text.push_str(bom);
    let last = out.len().saturating_sub(1);
    for (i, (line, ending)) in out.iter().enumerate() {
        text.push_str(line);
        if i < last || final_newline {
            text.push_str(if ending.is_empty() { eol } else { ending });
        }
    }
    let fuzz = placements
        .iter()
        .enumerate()
        .filter(|(_, p)| p.fuzz != Fuzz::Exact)
        .map(|(i, p)| (i + 1, p.fuzz))
        .collect();
    Ok(Updated { text, fuzz })
}

/// Find where `hunk` applies, at or after line `cursor` (0-based).
fn locate<'h>(hay: &Haystack<'_>, hunk: &'h Hunk, cursor: usize) -> Result<Placement<'h>, String> {
    let n = hay.line_count();
    let mut from = cursor;
    let mut scope_end = n;
    // Headers are matched leniently by design (trimmed, or by the start of
    // the line), so their level is not reported as fuzz.
    for header in &hunk.headers {
        let Some((at, level)) = find_header(hay, header, from, Fuzz::HeaderPrefix) else {
            return Err(header_not_found(hay, header, from));
        };
        from = at + 1;
        // The header's section ends where the same header appears again.
        if let Some((again, _)) = find_header(hay, header, at + 1, level) {
            scope_end = scope_end.min(again);
        }
    }
    let old: Vec<&str> = hunk.old_lines().collect();
    if old.is_empty() {
        // Pure addition: after the last header, or at the end of the file.
        let start = if hunk.headers.is_empty() || hunk.end_of_file {
            n
        } else {
            from
        };
        return Ok(Placement {
            hunk,
            start,
            fuzz: Fuzz::Exact,
        });
    }
    let range_end = if hunk.end_of_file { n } else { scope_end };
    match find_block(hay, &old, from..range_end, hunk.end_of_file) {
        Found::Unique { at, fuzz } => Ok(Placement {
            hunk,
            start: at,
            fuzz,
        }),
        Found::Ambiguous { fuzz: level, at } => {
            let places: Vec<String> = at.iter().take(10).map(|i| (i + 1).to_string()).collect();
            let more = if at.len() > 10 { ", ..." } else { "" };
            Err(format!(
                "the hunk's context and `-` lines match {} places ({}), starting at lines {}{more}. \
                 Add more unchanged context lines, or an `@@` line naming the enclosing function or section, so that only one place matches.",
                at.len(),
                level.describe(),
                places.join(", "),
            ))
        }
        Found::None => Err(not_found(hay, hunk, &old, from, range_end, cursor)),
    }
}

fn header_not_found(hay: &Haystack<'_>, header: &str, from: usize) -> String {
    let mut msg = format!("the `@@ {header}` line was not found");
    if from > 0 {
        let _ = write!(msg, " after line {from}");
    }
    match find_header(hay, header, 0, Fuzz::HeaderPrefix) {
        Some((at, _)) if at < from => {
            let _ = write!(
                msg,
                "; it appears at line {}, before the previous hunk or header (hunks must be in file order)",
                at + 1
            );
        }
        _ => {
            if let Some(c) = closest_window(hay, &[header]) {
                let _ = write!(
                    msg,
                    ". The closest line is {}: `{}`",
                    c.start + 1,
                    hay.line(c.start)
                );
            }
        }
    }
    msg.push_str(". An `@@` line must repeat a line of the file, such as a function signature.");
    msg
}

/// Explain a miss: what was expected, whether it exists elsewhere, and the
/// closest lines of the file.
fn not_found(
    hay: &Haystack<'_>,
    hunk: &Hunk,
    old: &[&str],
    from: usize,
    range_end: usize,
    cursor: usize,
) -> String {
    let mut msg = String::from("context and `-` lines not found");
    let elsewhere = match find_block(hay, old, 0..hay.line_count(), false) {
        Found::Unique { at, .. } => vec![at],
        Found::Ambiguous { at, .. } => at,
        Found::None => Vec::new(),
    };
    if let Some(&at) = elsewhere.first() {
        let line = at + 1;
        let why = if hunk.end_of_file && at + old.len() != hay.line_count() {
            "but `*** End of File` (or `\\ No newline at end of file`) requires them to be the last lines of the file".to_string()
        } else if at < cursor {
            "which is before the previous hunk; hunks must be in file order".to_string()
        } else if at < from || at >= range_end {
            format!(
                "which is outside the section its `@@ {}` line selects",
                hunk.headers.join(" / @@ ")
            )
        } else {
            "but they overlap another hunk".to_string()
        };
        let _ = write!(msg, ": they appear at line {line}, {why}.");
        return msg;
    }
    msg.push_str(". Expected:\n");
    for line in &hunk.lines {
        let prefix = match line.kind {
            LineKind::Context => ' ',
            LineKind::Remove => '-',
            LineKind::Add => continue,
        };
        let _ = writeln!(msg, "{prefix}{}", line.text);
    }
    let Some(closest) = closest_window(hay, old) else {
        msg.push_str("Nothing in the file resembles these lines. Read the file again and copy the lines exactly.");
        return msg;
    };
    if let Some(j) = closest.first_difference() {
        let kind = hunk
            .lines
            .iter()
            .filter(|l| l.kind != LineKind::Add)
            .nth(j)
            .map_or(' ', |l| if l.kind == LineKind::Remove { '-' } else { ' ' });
        let _ = writeln!(
            msg,
            "First line that differs from the file: `{kind}{}` (line {} of the expected lines).",
            old[j],
            j + 1
        );
    }
    msg.push_str(&closest.render(hay));
    msg.push_str("Copy context lines exactly from the file (read it again if unsure).");
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply_patch::parser::{parse_patch, FileOp};

    /// Hunks of a one-file update patch body.
    fn hunks(body: &str) -> Vec<Hunk> {
        let patch = parse_patch(&format!(
            "*** Begin Patch\n*** Update File: f\n{body}*** End Patch"
        ))
        .unwrap();
        match patch.ops.into_iter().next() {
            Some(FileOp::Update { hunks, .. }) => hunks,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn apply(original: &str, body: &str) -> Result<Updated, HunkError> {
        update_text("f", original, &hunks(body))
    }

    #[test]
    fn replaces_and_keeps_context_bytes() {
        let got = apply("a  \nb\nc\n", "@@\n a\n-b\n+B\n").unwrap();
        assert_eq!(got.text, "a  \nB\nc\n");
        assert_eq!(got.fuzz, vec![(1, Fuzz::TrailingWhitespace)]);
    }

    #[test]
    fn crlf_and_bom_are_preserved() {
        let got = apply("\u{feff}x\r\ny\r\n", "@@\n x\n+new\n").unwrap();
        assert_eq!(got.text, "\u{feff}x\r\nnew\r\ny\r\n");
    }

    #[test]
    fn final_newline_state() {
        assert_eq!(apply("a\nb", "@@\n-b\n+c\n").unwrap().text, "a\nc");
        assert_eq!(apply("a\nb", "@@\n b\n+c\n").unwrap().text, "a\nb\nc");
        assert_eq!(
            apply("a\nb", "@@\n-b\n\\ No newline at end of file\n+b\n")
                .unwrap()
                .text,
            "a\nb\n"
        );
        assert_eq!(
            apply("a\nb\n", "@@\n-b\n+b\n\\ No newline at end of file\n")
                .unwrap()
                .text,
            "a\nb"
        );
        assert_eq!(apply("", "@@\n+x\n").unwrap().text, "x\n");
        assert_eq!(apply("a\nb\n", "@@\n-a\n-b\n").unwrap().text, "");
    }

    #[test]
    fn pure_additions() {
        assert_eq!(apply("a\nb\n", "@@\n+z\n").unwrap().text, "a\nb\nz\n");
        assert_eq!(apply("a\nb\n", "@@ a\n+z\n").unwrap().text, "a\nz\nb\n");
        assert_eq!(apply("a\nb\n", "@@\n+z\n a\n").unwrap().text, "z\na\nb\n");
    }

    #[test]
    fn headers_scope_ambiguity() {
        let file = "class A\n  fn m()\n    x\nclass B\n  fn m()\n    x\n";
        let got = apply(file, "@@ class A\n@@ fn m()\n-    x\n+    y\n").unwrap();
        assert_eq!(got.text, file.replacen("    x", "    y", 1));
        let got = apply(file, "@@ class B\n@@ fn m()\n-    x\n+    y\n").unwrap();
        assert_eq!(
            got.text,
            "class A\n  fn m()\n    x\nclass B\n  fn m()\n    y\n"
        );
        let e = apply(file, "@@\n-    x\n+    y\n").unwrap_err();
        assert!(e.message.contains("match 2 places"), "{e}");
        assert!(e.message.contains("lines 3, 6"), "{e}");
        let e = apply(file, "@@ class A\n-    x\n+    y\n").unwrap_err();
        assert!(e.message.contains("match 2 places"), "{e}");
    }

    #[test]
    fn hunks_apply_in_order_and_report_out_of_order() {
        let file = "a\nb\nc\nd\n";
        let got = apply(file, "@@\n-a\n+A\n@@\n-c\n+C\n").unwrap();
        assert_eq!(got.text, "A\nb\nC\nd\n");
        let e = apply(file, "@@\n-c\n+C\n@@\n-a\n+A\n").unwrap_err();
        assert_eq!(e.hunk, 2);
        assert!(e.message.contains("before the previous hunk"), "{e}");
    }

    #[test]
    fn end_of_file_anchor() {
        let file = "x\ny\nx\n";
        assert_eq!(
            apply(file, "@@\n-x\n+z\n*** End of File\n").unwrap().text,
            "x\ny\nz\n"
        );
        let e = apply("x\ny\n", "@@\n-x\n+z\n*** End of File\n").unwrap_err();
        assert!(e.message.contains("last lines of the file"), "{e}");
    }

    #[test]
    fn not_found_shows_closest_lines() {
        let file = "fn main() {\n    let a = 1;\n    println!(\"{a}\");\n}\n";
        let e = apply(file, "@@\n fn main() {\n-    let a = 2;\n+    let a = 3;\n").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("f: hunk 1 (patch line 3): context and `-` lines not found"),
            "{msg}"
        );
        assert!(
            msg.contains("First line that differs from the file: `-    let a = 2;`"),
            "{msg}"
        );
        assert!(msg.contains("      1 | fn main() {"), "{msg}");
        assert!(msg.contains("!     2 |     let a = 1;"), "{msg}");
    }

    #[test]
    fn missing_header_is_named() {
        let e = apply("fn a() {\n}\n", "@@ fn b()\n-}\n+};\n").unwrap_err();
        assert!(e.message.contains("`@@ fn b()` line was not found"), "{e}");
        assert!(e.message.contains("closest line is 1"), "{e}");
    }
}
