//! The apply_patch parser (`tools::apply_patch::parse_patch`).
//!
//! Input: the patch text (inputs that are not UTF-8 are skipped; the tool
//! receives a string). Checked, besides "no panic":
//!
//! - an accepted patch keeps the parser's promises: at least one
//!   operation, relative paths without `..`, no path named twice, every
//!   hunk has lines and changes something;
//! - an error's line number is a line of the text;
//! - round trip: the accepted patch written out again in the canonical
//!   form parses to the same operations (skipped for the few texts the
//!   format cannot say twice: a line ending in `\r`, a header that reads as
//!   a unified-diff range, `\ No newline` markers in updates, a path whose
//!   last part ends in white space). A path that starts with white space
//!   (which only `./ name` can give) is written as `./ name`.
#![no_main]

use cogni::tools::apply_patch::{parse_patch, FileOp, Hunk, LineKind, Patch};
use libfuzzer_sys::fuzz_target;
use std::path::{Component, Path};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let patch = match parse_patch(text) {
        Ok(patch) => patch,
        Err(error) => {
            if let Some(line) = error.line {
                let lines = text.lines().count();
                assert!(
                    line >= 1 && line <= lines.max(1),
                    "error at line {line} of {lines}: {error}"
                );
            }
            return;
        }
    };
    check_promises(&patch);
    if let Some(canonical) = render(&patch) {
        match parse_patch(&canonical) {
            Ok(again) => assert_eq!(
                without_line_numbers(again),
                without_line_numbers(patch),
                "round trip through:\n{canonical}"
            ),
            Err(error) => panic!("the canonical form does not parse: {error}\n{canonical}"),
        }
    }
});

fn check_promises(patch: &Patch) {
    assert!(!patch.ops.is_empty());
    let mut seen: Vec<&Path> = Vec::new();
    for op in &patch.ops {
        let mut paths = vec![op.path()];
        if let FileOp::Update {
            move_to: Some(dest),
            ..
        } = op
        {
            paths.push(dest);
            assert!(dest != op.path(), "a move onto itself");
        }
        for path in paths {
            assert!(path.is_relative(), "{path:?}");
            assert!(
                path.components().all(|c| matches!(c, Component::Normal(_))),
                "{path:?}"
            );
            assert!(!seen.contains(&path), "{path:?} twice");
            seen.push(path);
        }
        if let FileOp::Update { hunks, move_to, .. } = op {
            assert!(!hunks.is_empty() || move_to.is_some());
            for hunk in hunks {
                assert!(!hunk.lines.is_empty());
                assert!(
                    hunk.lines.iter().any(|l| l.kind != LineKind::Context)
                        || hunk.has_newline_marker()
                );
                if hunk.has_newline_marker() {
                    assert!(hunk.end_of_file);
                }
            }
        }
    }
}

fn without_line_numbers(mut patch: Patch) -> Patch {
    for op in &mut patch.ops {
        if let FileOp::Update { hunks, .. } = op {
            for hunk in hunks {
                hunk.patch_line = 0;
            }
        }
    }
    patch
}

/// The patch in the canonical form, or `None` when it holds something the
/// format cannot write back unchanged.
fn render(patch: &Patch) -> Option<String> {
    let mut out = String::from("*** Begin Patch\n");
    for op in &patch.ops {
        match op {
            FileOp::Add { path, contents } => {
                out.push_str(&format!("*** Add File: {}\n", path_text(path)?));
                if !contents.is_empty() {
                    let (body, final_newline) = match contents.strip_suffix('\n') {
                        Some(body) => (body, true),
                        None => (contents.as_str(), false),
                    };
                    for line in body.split('\n') {
                        if line.ends_with('\r') {
                            return None;
                        }
                        out.push_str(&format!("+{line}\n"));
                    }
                    if !final_newline {
                        out.push_str("\\ No newline at end of file\n");
                    }
                }
            }
            FileOp::Delete { path } => {
                out.push_str(&format!("*** Delete File: {}\n", path_text(path)?));
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                out.push_str(&format!("*** Update File: {}\n", path_text(path)?));
                if let Some(dest) = move_to {
                    out.push_str(&format!("*** Move to: {}\n", path_text(dest)?));
                }
                for hunk in hunks {
                    render_hunk(hunk, &mut out)?;
                }
            }
        }
    }
    out.push_str("*** End Patch\n");
    Some(out)
}

/// A path as written after a marker, which the parser trims.
fn path_text(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    if text.ends_with(char::is_whitespace) {
        return None;
    }
    if text.starts_with(char::is_whitespace) {
        return Some(format!("./{text}"));
    }
    Some(text.to_string())
}

fn render_hunk(hunk: &Hunk, out: &mut String) -> Option<()> {
    if hunk.has_newline_marker() {
        return None;
    }
    if hunk.headers.is_empty() {
        out.push_str("@@\n");
    }
    for header in &hunk.headers {
        let unified = header
            .strip_prefix('-')
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        if unified {
            return None;
        }
        out.push_str(&format!("@@ {header}\n"));
    }
    for line in &hunk.lines {
        if line.text.ends_with('\r') {
            return None;
        }
        let prefix = match line.kind {
            LineKind::Context => ' ',
            LineKind::Remove => '-',
            LineKind::Add => '+',
        };
        out.push(prefix);
        out.push_str(&line.text);
        out.push('\n');
    }
    if hunk.end_of_file {
        out.push_str("*** End of File\n");
    }
    Some(())
}
