//! `apply_patch`: edit files with the `*** Begin Patch` format.
//!
//! The patch is parsed (`parser`), every path is checked against the sandbox
//! ([`crate::paths`]) and every hunk of every file located (`seek`, `apply`) before
//! any file changes (`plan`); then all files are written at once (`commit`).
//! A failing patch leaves every file exactly as it was.
//!
//! The tool is offered either as a JSON function (`{"input": "<patch>"}`) or
//! as a freeform tool constrained by [`LARK_GRAMMAR`]; see
//! [`apply_patch_tool`]. Model families that get neither call it through the
//! shell after reading [`APPLY_PATCH_INSTRUCTIONS`]; [`shell_patch_from_script`]
//! recognises such calls.

mod apply;
pub(crate) mod commit;
mod invocation;
mod parser;
mod plan;
pub(crate) mod seek;

pub(crate) use apply::dominant_eol;
pub use apply::{update_text, HunkError, Updated};
pub use invocation::{shell_patch_from_argv, shell_patch_from_script, ShellPatch};
pub use parser::{parse_patch, FileOp, Hunk, HunkLine, LineKind, ParseError, Patch};
pub use plan::{apply_patch_in, ApplyPatchError, FileOutcome, PatchReport};
pub use seek::Fuzz;

use super::{Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;

/// The patch format in a few lines; shared by the tool description and the
/// shell instructions.
macro_rules! patch_format {
    () => {
        "Format (paths are relative to the working directory, never absolute):
*** Begin Patch
*** Add File: <path>        then every line of the new file, each prefixed `+` (fails if it exists)
*** Delete File: <path>     nothing follows
*** Update File: <path>     optionally `*** Move to: <new path>`, then hunks
*** End Patch
A hunk starts with `@@`, optionally followed by a line copied from the file (e.g. the enclosing `fn`, `def` or `class` line) saying where it is; stack several `@@` lines to narrow it down. Each hunk line starts with ` ` (unchanged context), `-` (remove) or `+` (add). Give about 3 context lines above and below each change, copied exactly from the file: the context and `-` lines must match exactly one place. Hunks of a file go in file order; end a hunk that reaches the end of the file with `*** End of File`.
Example:
*** Begin Patch
*** Update File: src/app.py
@@ def greet():
     name = get_name()
-    print(\"Hi\")
+    print(f\"Hello, {name}\")
     return name
*** Add File: notes.txt
+first line
*** End Patch
The patch applies all-or-nothing; on error nothing changes and the message says what did not match."
    };
}

/// Instructions for model families that need them when no `apply_patch`
/// tool is offered: they call it through the shell.
pub const APPLY_PATCH_INSTRUCTIONS: &str = concat!(
    "## apply_patch\n\nEdit files by running `apply_patch` in the shell with the patch as a heredoc:\n\n\
     apply_patch <<'EOF'\n*** Begin Patch\n...\n*** End Patch\nEOF\n\n",
    patch_format!(),
    "\n"
);

const DESCRIPTION: &str = concat!(
    "Edit files by applying a patch: add, delete, move and update files in one call.\n\n",
    patch_format!()
);

/// Lark grammar of the patch format, for the freeform variant.
pub const LARK_GRAMMAR: &str = r#"start: begin_patch file_op+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

file_op: add_file | delete_file | update_file
add_file: "*** Add File: " PATH LF added_line* no_newline?
delete_file: "*** Delete File: " PATH LF
update_file: "*** Update File: " PATH LF move_to? hunk*
move_to: "*** Move to: " PATH LF

hunk: hunk_header+ hunk_line+ end_of_file?
hunk_header: "@@" (" " TEXT)? LF
hunk_line: (context_line | removed_line | added_line) no_newline?
context_line: " " TEXT? LF
removed_line: "-" TEXT? LF
added_line: "+" TEXT? LF
no_newline: "\\ No newline at end of file" LF
end_of_file: "*** End of File" LF

PATH: /[^\r\n]+/
TEXT: /[^\r\n]+/
LF: "\n"
"#;

/// Appended to parse errors: the shape of a patch at a glance.
const PARSE_HINT: &str = "\n\nA patch looks like this:\n*** Begin Patch\n*** Update File: path/to/file   (or `*** Add File: <path>` with `+` lines, or `*** Delete File: <path>`)\n@@ optional line copied from the file, e.g. `fn name(`\n unchanged context line\n-removed line\n+added line\n*** End Patch";

/// The `apply_patch` tool; `freeform` picks the variant.
pub struct ApplyPatchTool {
    freeform: bool,
}

/// `apply_patch` as a JSON function tool (`freeform == false`) or as a
/// freeform tool with [`LARK_GRAMMAR`]. Both are named `apply_patch`.
pub fn apply_patch_tool(freeform: bool) -> Arc<dyn Tool> {
    Arc::new(ApplyPatchTool { freeform })
}

impl Tool for ApplyPatchTool {
    fn spec(&self) -> ToolSpec {
        let format = if self.freeform {
            ToolFormat::Freeform {
                syntax: "lark".into(),
                definition: LARK_GRAMMAR.into(),
            }
        } else {
            ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "input": {
                            "type": "string",
                            "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`."
                        }
                    },
                    "required": ["input"],
                    "additionalProperties": false
                }),
            }
        };
        ToolSpec {
            name: "apply_patch".into(),
            description: DESCRIPTION.into(),
            format,
            read_only: false,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match patch_text(input) {
                Ok(patch) => run_patch(ctx, ctx.cwd.clone(), patch).await,
                Err(e) => e,
            }
        })
    }
}

/// Apply `patch` in `cwd` (under `ctx`'s sandbox policy, committed through
/// its gate) off the async runtime and report it as a tool result; shared
/// by the tool and by `apply_patch` invoked through the shell.
pub async fn run_patch(ctx: &ToolContext, cwd: PathBuf, patch: String) -> ToolResult {
    let access = crate::paths::WriteAccess::new(&cwd, &ctx.sandbox, &ctx.workspace);
    let (commits, files) = (ctx.commits.clone(), ctx.files.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        plan::apply_patch_through(&files, &access?, &commits, &patch)
    })
    .await;
    match outcome {
        Ok(Ok(report)) => ToolResult::ok(report.to_string()).with_diff(report.diff),
        Ok(Err(e)) => ToolResult::error(failure_message(&e)),
        Err(join) => ToolResult::error(format!(
            "apply_patch failed unexpectedly ({join}); check the files before retrying"
        )),
    }
}

/// The patch text of a call: the `input` field of JSON arguments, or the
/// raw text of a freeform call (which may still arrive as JSON).
fn patch_text(input: ToolInput) -> Result<String, ToolResult> {
    let value = match input {
        ToolInput::Text(text) => {
            if !text.trim_start().starts_with('{') {
                return Ok(text);
            }
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => v,
                Err(_) => return Ok(text),
            }
        }
        ToolInput::Json(v) => v,
    };
    match value.get("input").and_then(|v| v.as_str()) {
        Some(patch) => Ok(patch.to_string()),
        None => Err(ToolResult::error(
            "arguments to `apply_patch` need a string field `input` holding the whole patch; nothing was changed",
        )),
    }
}

fn failure_message(e: &ApplyPatchError) -> String {
    let state = if e.nothing_changed() {
        "apply_patch failed; no file was changed."
    } else {
        "apply_patch failed and some files could not be restored; check them before retrying."
    };
    let hint = match e {
        ApplyPatchError::Parse(_) => PARSE_HINT,
        _ => "",
    };
    format!("{state}\n{e}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::CommitGate;
    use crate::paths::tests::ctx;
    use cogni_protocol::{SandboxMode, SandboxPolicy};
    use std::path::Path;

    const ADD: &str = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n";

    #[test]
    fn instructions_are_short() {
        assert!(
            APPLY_PATCH_INSTRUCTIONS.len() < 2048,
            "{}",
            APPLY_PATCH_INSTRUCTIONS.len()
        );
        assert!(APPLY_PATCH_INSTRUCTIONS.contains("apply_patch <<'EOF'"));
    }

    #[test]
    fn instructions_example_is_a_valid_patch() {
        let start = DESCRIPTION.find("Example:\n").unwrap() + "Example:\n".len();
        let end = DESCRIPTION.find("*** End Patch\nThe").unwrap() + "*** End Patch".len();
        let patch = parse_patch(&DESCRIPTION[start..end]).unwrap();
        assert_eq!(patch.ops.len(), 2);
    }

    #[test]
    fn specs_of_both_variants() {
        let json = apply_patch_tool(false).spec();
        assert_eq!(json.name, "apply_patch");
        assert!(!json.read_only);
        assert!(matches!(json.format, ToolFormat::Function { .. }));
        let free = apply_patch_tool(true).spec();
        assert_eq!(free.name, "apply_patch");
        match free.format {
            ToolFormat::Freeform { syntax, definition } => {
                assert_eq!(syntax, "lark");
                assert!(definition.starts_with("start: begin_patch"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn json_and_freeform_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), SandboxMode::WorkspaceWrite);
        let r = apply_patch_tool(false)
            .run(ToolInput::Json(serde_json::json!({ "input": ADD })), &c)
            .await;
        assert!(!r.is_error, "{}", r.content);
        assert_eq!(r.content, "A a.txt");
        assert_eq!(
            r.diff.as_deref(),
            Some("--- /dev/null\n+++ a.txt\n@@ -0,0 +1 @@\n+hello\n")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "hello\n"
        );

        let del = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch";
        let r = apply_patch_tool(true)
            .run(ToolInput::Text(del.into()), &c)
            .await;
        assert_eq!(r.content, "D a.txt");
        assert_eq!(
            r.diff.as_deref(),
            Some("--- a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-hello\n")
        );

        let r = apply_patch_tool(false)
            .run(ToolInput::Json(serde_json::json!({ "patch": ADD })), &c)
            .await;
        assert!(r.is_error);
        assert!(r.content.contains("field `input`"), "{}", r.content);
    }

    #[tokio::test]
    async fn read_only_refuses_everything() {
        let dir = tempfile::tempdir().unwrap();
        let r = apply_patch_tool(false)
            .run(
                ToolInput::Json(serde_json::json!({ "input": ADD })),
                &ctx(dir.path(), SandboxMode::ReadOnly),
            )
            .await;
        assert!(r.is_error);
        assert!(r.content.contains("read-only"), "{}", r.content);
        assert!(!dir.path().join("a.txt").exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlink_escape_is_refused_before_any_write() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let patch = "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Add File: out/evil.txt\n+x\n*** End Patch";
        let r = apply_patch_tool(false)
            .run(
                ToolInput::Json(serde_json::json!({ "input": patch })),
                &ctx(dir.path(), SandboxMode::WorkspaceWrite),
            )
            .await;
        assert!(r.is_error);
        assert!(
            r.content.contains("outside the writable roots"),
            "{}",
            r.content
        );
        assert!(!dir.path().join("ok.txt").exists());
        assert!(!outside.path().join("evil.txt").exists());
    }

    #[test]
    fn report_lists_files_and_fuzz() {
        let report = PatchReport {
            files: vec![
                FileOutcome::Added("a".into()),
                FileOutcome::Modified {
                    path: "m".into(),
                    fuzz: vec![(2, Fuzz::Trimmed)],
                },
                FileOutcome::Deleted("d".into()),
                FileOutcome::Moved {
                    from: "x".into(),
                    to: "y".into(),
                    fuzz: vec![],
                },
            ],
            diff: None,
        };
        assert_eq!(
            report.to_string(),
            "A a\nM m\nD d\nR x -> y\nnote: m hunk 2 matched ignoring leading and trailing whitespace"
        );
    }

    #[test]
    fn parse_errors_carry_the_format_reminder() {
        let e = apply_patch_in(
            Path::new("."),
            &SandboxPolicy::default(),
            &CommitGate::default(),
            "nope",
        )
        .unwrap_err();
        let msg = failure_message(&e);
        assert!(
            msg.starts_with("apply_patch failed; no file was changed.\ninvalid patch, line 1"),
            "{msg}"
        );
        assert!(msg.contains("A patch looks like this:"), "{msg}");
    }
}
