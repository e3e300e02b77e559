//! `edit_file`: replace an exact string in a file.
//!
//! `old_string` must occur exactly once unless `replace_all`; an empty
//! `old_string` creates a missing (or fills an empty) file. The write is
//! atomic and goes through the same path policy as `apply_patch`. In a CRLF
//! file, `\n` in the strings stands for the file's `\r\n`.

use super::apply_patch::dominant_eol;
use super::apply_patch::seek::{closest_window, Haystack};
use super::editor::Files;
use super::fs::{stopped_before_commit, CommitGate, ReadTextError};
use super::paths::{model_path, FinalLink, WriteAccess};
use super::{diff, parse_args, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{SandboxPolicy, ToolFormat, ToolSpec};
use cogni_sandbox::Workspace;
use futures::future::BoxFuture;
use serde::Deserialize;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// Arguments of one edit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    /// The file, relative to the working directory or absolute.
    pub path: String,
    /// The exact text to replace (indentation included); empty creates a
    /// new file.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence; otherwise `old_string` must occur exactly
    /// once.
    #[serde(default)]
    pub replace_all: bool,
}

/// Why an edit was refused; `Display` is the message for the model. Nothing
/// was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EditError(String);

/// The `edit_file` tool: replaces exact text in a file (old_string /
/// new_string), within what the sandbox policy lets it write.
pub struct EditFileTool;

impl Tool for EditFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description:
                "Replace text in a file. `old_string` must match the file exactly (including \
                indentation) and occur exactly once, unless `replace_all` is true; include enough \
                surrounding lines to make it unique. An empty `old_string` creates a new file with \
                `new_string` as its content."
                    .into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File to edit, relative to the working directory."},
                        "old_string": {"type": "string", "description": "Exact text to replace; empty to create a new file."},
                        "new_string": {"type": "string", "description": "Replacement text."},
                        "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
                    },
                    "required": ["path", "old_string", "new_string"],
                    "additionalProperties": false
                }),
            },
            read_only: false,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let request: EditRequest = match parse_args("edit_file", input) {
                Ok(r) => r,
                Err(e) => return e,
            };
            let (access, commits, files) =
                (WriteAccess::of(ctx), ctx.commits.clone(), ctx.files.clone());
            let edited = tokio::task::spawn_blocking(move || {
                let access = access.map_err(|e| EditError(e.to_string()))?;
                edit_file_through(&files, &access, &commits, &request)
            });
            match edited.await {
                Ok(Ok((summary, diff))) => ToolResult::ok(summary).with_diff(diff),
                Ok(Err(e)) => {
                    ToolResult::error(format!("edit_file failed; nothing was changed.\n{e}"))
                }
                Err(join) => ToolResult::error(format!(
                    "edit_file failed unexpectedly ({join}); check the file before retrying"
                )),
            }
        })
    }
}

/// Apply one edit under `cwd` on disk, committed through `commits`, in a
/// workspace of its own (pinned now). Blocking. Returns the summary for
/// the model.
pub fn edit_file_in(
    cwd: &Path,
    policy: &SandboxPolicy,
    commits: &CommitGate,
    req: &EditRequest,
) -> Result<String, EditError> {
    let workspace = Arc::new(Workspace::pin(cwd, &policy.writable_roots));
    let access = WriteAccess::new(cwd, policy, &workspace).map_err(|e| EditError(e.to_string()))?;
    edit_file_through(&Files::default(), &access, commits, req).map(|(summary, _)| summary)
}

/// [`edit_file_in`] with `access`, reading and writing the file through
/// `files`; returns the summary and the diff of the change.
fn edit_file_through(
    files: &Files,
    access: &WriteAccess,
    commits: &CommitGate,
    req: &EditRequest,
) -> Result<(String, Option<String>), EditError> {
    let path = model_path(req.path.trim(), true).map_err(EditError)?;
    let target = access
        .resolve(&path, FinalLink::Follow)
        .map_err(|e| EditError(e.to_string()))?;
    let shown = path.display();

    let content = match files.read_text(&target) {
        Ok((text, _)) => Some(text),
        Err(ReadTextError::Io(e)) if e.kind() == io::ErrorKind::NotFound => None,
        Err(ReadTextError::Io(e)) => return Err(EditError(format!("cannot read `{shown}`: {e}"))),
        Err(ReadTextError::Directory) => {
            return Err(EditError(format!("`{shown}` is a directory")))
        }
        Err(e) => return Err(EditError(format!("cannot edit `{shown}`: {e}"))),
    };

    let (new_content, summary) = match &content {
        None if req.old_string.is_empty() => {
            let lines = req.new_string.lines().count();
            (
                req.new_string.clone(),
                format!("Created {shown} ({lines} lines)"),
            )
        }
        None => {
            return Err(EditError(format!(
                "`{shown}` does not exist; to create it, pass an empty `old_string`"
            )))
        }
        Some(content) if req.old_string.is_empty() => {
            if !content.is_empty() {
                return Err(EditError(format!(
                    "`old_string` is empty but `{shown}` already exists and is not empty; give the exact text to replace"
                )));
            }
            (req.new_string.clone(), format!("Wrote {shown}"))
        }
        Some(content) => replace(content, req, &shown.to_string())?,
    };

    if !commits.admit() {
        return Err(EditError(stopped_before_commit().to_string()));
    }
    files
        .write_text(&target, &new_content)
        .map_err(|e| EditError(format!("cannot write `{shown}`: {e}")))?;
    let shown = shown.to_string();
    let diff = diff::unified(
        content.as_deref().map(|text| (shown.as_str(), text)),
        Some((&shown, &new_content)),
    );
    Ok((summary, diff))
}

/// Replace in existing text; returns the new text and the summary.
fn replace(content: &str, req: &EditRequest, shown: &str) -> Result<(String, String), EditError> {
    if req.old_string == req.new_string {
        return Err(EditError(
            "`old_string` and `new_string` are identical; nothing to change".into(),
        ));
    }
    let crlf = dominant_eol(content) == "\r\n";
    let adapt = |s: &str| {
        if crlf && !s.contains('\r') {
            s.replace('\n', "\r\n")
        } else {
            s.to_string()
        }
    };
    let (old, new) = (adapt(&req.old_string), adapt(&req.new_string));
    let starts: Vec<usize> = content.match_indices(&old).map(|(i, _)| i).collect();
    let line_of = |offset: usize| content[..offset].matches('\n').count() + 1;
    match starts.len() {
        0 => Err(EditError(not_found(content, &req.old_string, shown))),
        1 => {
            let updated = content.replacen(&old, &new, 1);
            let line = line_of(starts[0]);
            Ok((
                updated,
                format!("Edited {shown}: replaced 1 occurrence at line {line}"),
            ))
        }
        n if req.replace_all => {
            let lines: Vec<String> = starts.iter().map(|&s| line_of(s).to_string()).collect();
            Ok((
                content.replace(&old, &new),
                format!(
                    "Edited {shown}: replaced {n} occurrences (lines {})",
                    lines.join(", ")
                ),
            ))
        }
        n => {
            let lines: Vec<String> = starts
                .iter()
                .take(20)
                .map(|&s| line_of(s).to_string())
                .collect();
            Err(EditError(format!(
                "`old_string` occurs {n} times in `{shown}` (starting at lines {}); include more surrounding lines so it occurs once, or set `replace_all` to change every occurrence",
                lines.join(", ")
            )))
        }
    }
}

fn not_found(content: &str, old: &str, shown: &str) -> String {
    let mut msg = format!("`old_string` was not found in `{shown}`.");
    let file_lines: Vec<&str> = content.lines().collect();
    let old_lines: Vec<&str> = old.lines().collect();
    let hay = Haystack::new(&file_lines);
    match closest_window(&hay, &old_lines) {
        Some(closest) => {
            if let Some(j) = closest.first_difference() {
                msg.push_str(&format!(
                    "\nLine {} of `old_string` differs from the file: `{}`",
                    j + 1,
                    old_lines[j]
                ));
            }
            msg.push('\n');
            msg.push_str(&closest.render(&hay));
            msg.push_str("Copy the text exactly from the file, including whitespace.");
        }
        None => msg.push_str(" Nothing in the file resembles it; read the file again."),
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::tests::ctx;
    use cogni_protocol::SandboxMode;
    use std::fs;

    fn req(path: &str, old: &str, new: &str, all: bool) -> EditRequest {
        EditRequest {
            path: path.into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    fn edit(dir: &Path, r: EditRequest) -> Result<String, EditError> {
        edit_file_in(dir, &SandboxPolicy::default(), &CommitGate::default(), &r)
    }

    #[test]
    fn a_stopped_turn_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "old\n").unwrap();
        let gate = CommitGate::default();
        assert!(!gate.close(), "nothing was committing");
        let e = edit_file_in(
            dir.path(),
            &SandboxPolicy::default(),
            &gate,
            &req("f", "old", "new", false),
        )
        .unwrap_err();
        assert!(e.0.contains("stopped"), "{e}");
        assert_eq!(fs::read_to_string(dir.path().join("f")).unwrap(), "old\n");
        let created = edit_file_in(
            dir.path(),
            &SandboxPolicy::default(),
            &gate,
            &req("g", "", "new", false),
        );
        assert!(created.is_err());
        assert!(!dir.path().join("g").exists());
    }

    #[test]
    fn replaces_a_unique_string() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let s = edit(dir.path(), req("a.rs", "fn b()", "fn c()", false)).unwrap();
        assert_eq!(s, "Edited a.rs: replaced 1 occurrence at line 2");
        assert_eq!(
            fs::read_to_string(dir.path().join("a.rs")).unwrap(),
            "fn a() {}\nfn c() {}\n"
        );
    }

    #[test]
    fn multiple_matches_need_replace_all() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "x\ny\nx\n").unwrap();
        let e = edit(dir.path(), req("f", "x", "z", false)).unwrap_err();
        assert!(e.0.contains("occurs 2 times"), "{e}");
        assert!(e.0.contains("lines 1, 3"), "{e}");
        assert_eq!(
            fs::read_to_string(dir.path().join("f")).unwrap(),
            "x\ny\nx\n"
        );
        let s = edit(dir.path(), req("f", "x", "z", true)).unwrap();
        assert_eq!(s, "Edited f: replaced 2 occurrences (lines 1, 3)");
        assert_eq!(
            fs::read_to_string(dir.path().join("f")).unwrap(),
            "z\ny\nz\n"
        );
    }

    #[test]
    fn missing_string_shows_closest_lines() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "alpha\n    beta = 1\ngamma\n").unwrap();
        let e = edit(dir.path(), req("f", "alpha\n    beta = 2\n", "x", false)).unwrap_err();
        assert!(e.0.contains("was not found in `f`"), "{e}");
        assert!(e.0.contains("Line 2 of `old_string` differs"), "{e}");
        assert!(e.0.contains("!     2 |     beta = 1"), "{e}");
    }

    #[test]
    fn creates_missing_file_with_empty_old_string() {
        let dir = tempfile::tempdir().unwrap();
        let s = edit(dir.path(), req("new/dir/f.txt", "", "hi\n", false)).unwrap();
        assert_eq!(
            crate::paths::tests::slashed(&s),
            "Created new/dir/f.txt (1 lines)"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("new/dir/f.txt")).unwrap(),
            "hi\n"
        );
        let e = edit(dir.path(), req("new/dir/f.txt", "", "again", false)).unwrap_err();
        assert!(e.0.contains("already exists"), "{e}");
        let e = edit(dir.path(), req("nope.txt", "a", "b", false)).unwrap_err();
        assert!(e.0.contains("does not exist"), "{e}");
    }

    #[test]
    fn crlf_files_stay_crlf() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
        edit(dir.path(), req("w.txt", "one\ntwo\n", "one\n2\n", false)).unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("w.txt")).unwrap(),
            "one\r\n2\r\nthree\r\n"
        );
    }

    #[test]
    fn same_path_policy_as_apply_patch() {
        let dir = tempfile::tempdir().unwrap();
        let e = edit(dir.path(), req("../x", "", "y", false)).unwrap_err();
        assert!(e.0.contains(".."), "{e}");
        let e = edit(dir.path(), req("/etc/hostname", "a", "b", false)).unwrap_err();
        assert!(e.0.contains("outside the writable roots"), "{e}");
        let read_only = SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            ..SandboxPolicy::default()
        };
        let e = edit_file_in(
            dir.path(),
            &read_only,
            &CommitGate::default(),
            &req("f", "", "y", false),
        )
        .unwrap_err();
        assert!(e.0.contains("read-only"), "{e}");
        let e = edit(dir.path(), req("f", "same", "same", false)).unwrap_err();
        assert!(e.0.contains("does not exist"), "{e}");
    }

    #[test]
    fn identical_strings_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "a\n").unwrap();
        let e = edit(dir.path(), req("f", "a", "a", false)).unwrap_err();
        assert!(e.0.contains("identical"), "{e}");
    }

    #[tokio::test]
    async fn tool_decodes_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path(), SandboxMode::default());
        let r = EditFileTool
            .run(
                ToolInput::Json(
                    serde_json::json!({"path": "n.txt", "old_string": "", "new_string": "x"}),
                ),
                &ctx,
            )
            .await;
        assert!(!r.is_error, "{}", r.content);
        let r = EditFileTool
            .run(
                ToolInput::Json(
                    serde_json::json!({"path": "n.txt", "old_string": "x", "new_string": "y\nz"}),
                ),
                &ctx,
            )
            .await;
        let diff = r.diff.unwrap();
        assert!(
            diff.starts_with("--- n.txt\n+++ n.txt\n@@ -1 +1,2 @@\n-x\n"),
            "{diff}"
        );
        assert!(diff.contains("+y\n+z\n"), "{diff}");
        let r = EditFileTool
            .run(
                ToolInput::Json(serde_json::json!({"path": "n.txt", "old": "x"})),
                &ctx,
            )
            .await;
        assert!(r.is_error);
        assert!(r.content.contains("invalid arguments"), "{}", r.content);
    }
}
