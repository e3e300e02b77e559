//! `write_file`: create or replace a whole file, atomically.

use super::fs::{stopped_before_commit, ReadTextError, Written};
use super::{diff, parse_args, paths, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::io;

/// The `write_file` tool: creates or overwrites a whole file, within what
/// the sandbox policy lets it write.
pub struct WriteFileTool;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

impl Tool for WriteFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create or overwrite a whole file with `content` (parent directories \
                          are created; the write is atomic). Prefer patches for small edits."
                .into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "content": {"type": "string"}
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }),
            },
            read_only: false,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match parse_args("write_file", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let target = match paths::writable_target(ctx, &args.path).await {
                Ok(target) => target,
                Err(e) => return ToolResult::error(format!("cannot write `{}`: {e}", args.path)),
            };
            let shown = paths::display(&ctx.cwd, target.real());
            let bytes = args.content.len();
            let (commits, files) = (ctx.commits.clone(), ctx.files.clone());
            let path = shown.clone();
            let written = tokio::task::spawn_blocking(move || {
                // What it replaces, for the diff people are shown: a file
                // that cannot be read as text gets none.
                let old = match files.read_text(&target) {
                    Ok((text, _)) => Some(Some(text)),
                    Err(ReadTextError::Io(e)) if e.kind() == io::ErrorKind::NotFound => Some(None),
                    Err(_) => None,
                };
                if !commits.admit() {
                    return Err(stopped_before_commit());
                }
                let written = files.write_text(&target, &args.content)?;
                let diff = old.and_then(|old| {
                    let old = old.as_deref().map(|text| (path.as_str(), text));
                    diff::unified(old, Some((&path, &args.content)))
                });
                Ok((written, diff))
            })
            .await;
            match written {
                Ok(Ok((Written::Created, diff))) => {
                    ToolResult::ok(format!("created {shown} ({bytes} bytes)")).with_diff(diff)
                }
                Ok(Ok((Written::Replaced, diff))) => {
                    ToolResult::ok(format!("overwrote {shown} ({bytes} bytes)")).with_diff(diff)
                }
                Ok(Err(e)) => ToolResult::error(format!("cannot write `{shown}`: {e}")),
                Err(_) => ToolResult::error(format!("writing `{shown}` was interrupted")),
            }
        })
    }
}

// Unix: they make symlinks, FIFOs and modes.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::fs::tests::{entries, use_openat2};
    use crate::paths::tests::ctx;
    use cogni_protocol::SandboxMode;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    async fn write(ctx: &ToolContext, path: &str, content: &str) -> ToolResult {
        WriteFileTool
            .run(
                ToolInput::Json(serde_json::json!({"path": path, "content": content})),
                ctx,
            )
            .await
    }

    fn tmp_ctx(mode: SandboxMode) -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let c = ctx(&tmp.path().canonicalize().unwrap(), mode);
        (tmp, c)
    }

    #[tokio::test]
    async fn creates_with_parents_then_overwrites() {
        let (tmp, c) = tmp_ctx(SandboxMode::WorkspaceWrite);
        let r = write(&c, "a/b/c.txt", "hello").await;
        assert_eq!(r.content, "created a/b/c.txt (5 bytes)");
        assert!(!r.is_error);
        assert_eq!(
            r.diff.as_deref(),
            Some("--- /dev/null\n+++ a/b/c.txt\n@@ -0,0 +1 @@\n+hello\n\\ No newline at end of file\n")
        );
        let r = write(&c, "a/b/c.txt", "bye").await;
        assert_eq!(r.content, "overwrote a/b/c.txt (3 bytes)");
        assert!(
            r.diff.as_deref().unwrap().ends_with(
                "-hello\n\\ No newline at end of file\n+bye\n\\ No newline at end of file\n"
            ),
            "{:?}",
            r.diff
        );
        assert_eq!(
            fs::read_to_string(tmp.path().join("a/b/c.txt")).unwrap(),
            "bye"
        );
        assert_eq!(entries(&tmp.path().join("a/b")), ["c.txt"]);
    }

    #[tokio::test]
    async fn a_stopped_turn_writes_nothing() {
        let (tmp, c) = tmp_ctx(SandboxMode::WorkspaceWrite);
        fs::write(tmp.path().join("old.txt"), "old").unwrap();
        assert!(!c.commits.close(), "nothing was admitted");
        let r = write(&c, "old.txt", "new").await;
        assert!(r.is_error && r.content.contains("stopped"), "{}", r.content);
        let r = write(&c, "new.txt", "new").await;
        assert!(r.is_error, "{}", r.content);
        assert_eq!(entries(tmp.path()), ["old.txt"]);
        assert_eq!(
            fs::read_to_string(tmp.path().join("old.txt")).unwrap(),
            "old"
        );
    }

    #[tokio::test]
    async fn keeps_permissions_of_existing_file() {
        let (tmp, c) = tmp_ctx(SandboxMode::WorkspaceWrite);
        let path = tmp.path().join("run.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        write(&c, "run.sh", "new").await;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[tokio::test]
    async fn writes_through_symlink_inside_workspace() {
        let (tmp, c) = tmp_ctx(SandboxMode::WorkspaceWrite);
        fs::write(tmp.path().join("real.txt"), "old").unwrap();
        std::os::unix::fs::symlink("real.txt", tmp.path().join("link.txt")).unwrap();
        write(&c, "link.txt", "new").await;
        assert_eq!(
            fs::read_to_string(tmp.path().join("real.txt")).unwrap(),
            "new"
        );
        assert!(fs::symlink_metadata(tmp.path().join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[tokio::test]
    async fn refusals_write_nothing() {
        let (tmp, c) = tmp_ctx(SandboxMode::ReadOnly);
        let r = write(&c, "x.txt", "x").await;
        assert!(
            r.is_error && r.content.contains("read-only"),
            "{}",
            r.content
        );
        assert!(entries(tmp.path()).is_empty());

        let (tmp, c) = tmp_ctx(SandboxMode::WorkspaceWrite);
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("x.txt");
        let r = write(&c, target.to_str().unwrap(), "x").await;
        assert!(
            r.is_error && r.content.contains("outside the workspace"),
            "{}",
            r.content
        );
        assert!(!target.exists());
        assert!(entries(tmp.path()).is_empty());
    }

    #[tokio::test]
    async fn directory_target_is_an_error_and_leaves_no_temp_file() {
        let (tmp, c) = tmp_ctx(SandboxMode::WorkspaceWrite);
        fs::create_dir(tmp.path().join("d")).unwrap();
        let r = write(&c, "d", "x").await;
        assert!(
            r.is_error && r.content.contains("directory"),
            "{}",
            r.content
        );
        assert_eq!(entries(tmp.path()), ["d"]);
    }

    /// `d` (a directory in the workspace) and `l` (a symlink to a
    /// directory outside) swap places (`RENAME_EXCHANGE`) in a loop while
    /// 400 writes go to `d/sub/f*`: none may land outside. Returns how many
    /// were written.
    async fn race(ctx: &ToolContext, ws: &std::path::Path, outside: &std::path::Path) -> usize {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let swapper = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            let d = CString::new(ws.join("d").as_os_str().as_bytes()).unwrap();
            let l = CString::new(ws.join("l").as_os_str().as_bytes()).unwrap();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: valid C strings.
                    let r = unsafe {
                        libc::renameat2(
                            libc::AT_FDCWD,
                            d.as_ptr(),
                            libc::AT_FDCWD,
                            l.as_ptr(),
                            libc::RENAME_EXCHANGE,
                        )
                    };
                    if r == 0 {
                        swaps.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        let mut created = 0;
        for i in 0..400 {
            let r = write(ctx, &format!("d/sub/f{i}"), "x").await;
            if !r.is_error {
                created += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(swaps.load(Ordering::Relaxed) > 0, "the swap never happened");
        let escaped = entries(&outside.join("sub"));
        assert!(
            escaped.is_empty(),
            "{} of 400 writes landed outside the workspace: {escaped:?}",
            escaped.len()
        );
        created
    }

    #[tokio::test]
    async fn a_directory_swapped_with_a_symlink_never_takes_a_write_outside() {
        let (tmp, c) = tmp_ctx(SandboxMode::WorkspaceWrite);
        let ws = tmp.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(ws.join("d/sub")).unwrap();
        fs::create_dir_all(outside.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("l")).unwrap();
        let with_openat2 = race(&c, &ws, outside.path()).await;
        // The same with the walk of one name at a time (no openat2).
        use_openat2(false);
        let walked = race(&c, &ws, outside.path()).await;
        use_openat2(true);
        // The writes that were not refused went into the workspace.
        assert!(with_openat2 + walked > 0);
    }
}
