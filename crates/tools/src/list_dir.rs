//! `list_dir`: a directory tree, `.gitignore` respected.

use super::{parse_args, paths, walk, Tool, ToolConfig, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::path::Path;

const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 20;

/// The `list_dir` tool: lists a directory as an indented tree, to a depth.
pub struct ListDirTool {
    description: String,
}

impl ListDirTool {
    /// The tool, its description stating `config`'s caps.
    pub fn new(config: &ToolConfig) -> Self {
        ListDirTool {
            description: format!(
                "List a directory as an indented tree (dirs end with `/`), sorted by name. \
                 .gitignore'd files and .git are left out; hidden files are shown. \
                 `path` default cwd, `depth` default {DEFAULT_DEPTH}. At most {} entries.",
                config.list_max_entries
            ),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
}

impl Tool for ListDirTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_dir".into(),
            description: self.description.clone(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "depth": {"type": "integer", "minimum": 1}
                    },
                    "additionalProperties": false
                }),
            },
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match parse_args("list_dir", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let root = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
            let shown = paths::display(&ctx.cwd, &root);
            if !tokio::fs::metadata(&root).await.is_ok_and(|m| m.is_dir()) {
                return ToolResult::error(format!("`{shown}` is not a directory"));
            }
            let depth = args.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH);
            let max = ctx.config.list_max_entries;
            match tokio::task::spawn_blocking(move || list(&root, depth, max)).await {
                Ok(text) => ToolResult::ok(text),
                Err(_) => ToolResult::error(format!("listing `{shown}` was interrupted")),
            }
        })
    }
}

fn list(root: &Path, depth: usize, max_entries: usize) -> String {
    let walker = walk::builder(root)
        .max_depth(Some(depth))
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut out = String::new();
    let mut count = 0;
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if count == max_entries {
            out.push_str(&format!(
                "[stopped at {max_entries} entries; list a subdirectory or lower `depth`]\n"
            ));
            return out;
        }
        count += 1;
        push_entry(
            &mut out,
            entry.depth(),
            entry.path(),
            entry.file_type().is_some_and(|t| t.is_dir()),
        );
    }
    if count == 0 {
        out.push_str("(empty directory)\n");
    }
    out
}

fn push_entry(out: &mut String, depth: usize, path: &Path, is_dir: bool) {
    for _ in 1..depth {
        out.push_str("  ");
    }
    if let Some(name) = path.file_name() {
        out.push_str(&name.to_string_lossy());
    }
    if is_dir {
        out.push('/');
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::tests::ctx;
    use cogni_protocol::SandboxMode;
    use std::fs;
    use std::sync::Arc;

    async fn ls(ctx: &ToolContext, args: serde_json::Value) -> ToolResult {
        ListDirTool::new(&ctx.config)
            .run(ToolInput::Json(args), ctx)
            .await
    }

    fn tree() -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for dir in ["src/deep/deeper", ".git/objects", "target", ".github"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [
            "b.txt",
            "A.txt",
            "src/main.rs",
            "src/deep/x.rs",
            "target/out",
            ".env",
        ] {
            fs::write(root.join(file), "x").unwrap();
        }
        fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let c = ctx(root, SandboxMode::ReadOnly);
        (tmp, c)
    }

    #[tokio::test]
    async fn lists_sorted_tree_respecting_gitignore() {
        let (_tmp, c) = tree();
        let r = ls(&c, serde_json::json!({})).await;
        assert!(!r.is_error);
        assert_eq!(
            r.content,
            ".env\n.github/\n.gitignore\nA.txt\nb.txt\nsrc/\n  deep/\n  main.rs\n"
        );
    }

    #[tokio::test]
    async fn depth_and_path_are_honoured() {
        let (_tmp, c) = tree();
        let r = ls(&c, serde_json::json!({"path": "src", "depth": 5})).await;
        assert_eq!(r.content, "deep/\n  deeper/\n  x.rs\nmain.rs\n");
        let r = ls(&c, serde_json::json!({"path": "src", "depth": 1})).await;
        assert_eq!(r.content, "deep/\nmain.rs\n");
    }

    #[tokio::test]
    async fn cap_adds_a_note() {
        let (_tmp, mut c) = tree();
        c.config = Arc::new(ToolConfig {
            list_max_entries: 3,
            ..ToolConfig::default()
        });
        let r = ls(&c, serde_json::json!({})).await;
        assert_eq!(
            r.content,
            ".env\n.github/\n.gitignore\n[stopped at 3 entries; list a subdirectory or lower `depth`]\n"
        );
    }

    #[tokio::test]
    async fn empty_and_missing_directories() {
        let (tmp, c) = tree();
        fs::create_dir(tmp.path().join("empty")).unwrap();
        let r = ls(&c, serde_json::json!({"path": "empty"})).await;
        assert_eq!(r.content, "(empty directory)\n");
        let r = ls(&c, serde_json::json!({"path": "nope"})).await;
        assert!(r.is_error && r.content.contains("`nope` is not a directory"));
        let r = ls(&c, serde_json::json!({"path": "b.txt"})).await;
        assert!(r.is_error);
    }

    #[test]
    fn spec_is_read_only() {
        assert!(ListDirTool::new(&ToolConfig::default()).spec().read_only);
    }
}
