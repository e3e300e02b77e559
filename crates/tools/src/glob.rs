//! `glob`: find files by name pattern, `.gitignore` respected.

use super::walk::{self, PathGlob};
use super::{parse_args, paths, Tool, ToolConfig, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::cmp::Reverse;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The `glob` tool: lists files whose path matches a glob pattern.
pub struct GlobTool {
    description: String,
}

impl GlobTool {
    /// The tool, its description stating `config`'s caps.
    pub fn new(config: &ToolConfig) -> Self {
        GlobTool {
            description: format!(
                "Find files by glob: without `/` it matches file names at any depth (`*.rs`), \
                 with `/` the path under `path` (`src/**/*.ts`). .gitignore'd files and .git are \
                 skipped. `path` default cwd; `sort`: \"name\" (default) or \"mtime\" (newest \
                 first). At most {} paths.",
                config.list_max_entries
            ),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    #[serde(default)]
    sort: Sort,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Sort {
    #[default]
    Name,
    Mtime,
}

impl Tool for GlobTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".into(),
            description: self.description.clone(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string"},
                        "path": {"type": "string"},
                        "sort": {"type": "string", "enum": ["name", "mtime"]}
                    },
                    "required": ["pattern"],
                    "additionalProperties": false
                }),
            },
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match parse_args("glob", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let glob = match PathGlob::new(&args.pattern) {
                Ok(glob) => glob,
                Err(e) => return ToolResult::error(format!("invalid glob: {e}")),
            };
            let root = match paths::existing(&ctx.cwd, args.path.as_deref()).await {
                Ok(root) => root,
                Err(message) => return ToolResult::error(message),
            };
            let cwd = ctx.cwd.clone();
            let max = ctx.config.list_max_entries;
            let found = tokio::task::spawn_blocking(move || {
                let files = find(&root, &glob, args.sort);
                render(&files, &cwd, max)
            })
            .await;
            match found {
                Ok(text) => ToolResult::ok(text),
                Err(_) => ToolResult::error("the search was interrupted"),
            }
        })
    }
}

/// Matching files, sorted.
fn find(root: &Path, glob: &PathGlob, sort: Sort) -> Vec<PathBuf> {
    let mut files: Vec<(Reverse<SystemTime>, PathBuf)> = walk::builder(root)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter(|entry| glob.is_match(root, entry.path()))
        .map(|entry| {
            let mtime = match sort {
                Sort::Name => SystemTime::UNIX_EPOCH,
                Sort::Mtime => entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH),
            };
            (Reverse(mtime), entry.into_path())
        })
        .collect();
    // Newest first for mtime (ties by name); by name otherwise.
    files.sort();
    files.into_iter().map(|(_, path)| path).collect()
}

fn render(files: &[PathBuf], cwd: &Path, max: usize) -> String {
    if files.is_empty() {
        return "no files match\n".to_string();
    }
    let mut out = String::new();
    for path in files.iter().take(max) {
        out.push_str(&paths::display(cwd, path));
        out.push('\n');
    }
    if files.len() > max {
        let _ = write!(
            out,
            "[{} more not shown; narrow the pattern or path]",
            files.len() - max
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::tests::ctx;
    use cogni_protocol::SandboxMode;
    use std::fs;
    use std::sync::Arc;
    use std::time::Duration;

    async fn glob(ctx: &ToolContext, args: serde_json::Value) -> ToolResult {
        GlobTool::new(&ctx.config)
            .run(ToolInput::Json(args), ctx)
            .await
    }

    fn tree() -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            "b.rs",
            "src/a.rs",
            "src/deep/c.rs",
            "src/x.txt",
            "target/t.rs",
        ] {
            let path = tmp.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        fs::write(tmp.path().join(".gitignore"), "target/\n").unwrap();
        let c = ctx(tmp.path(), SandboxMode::ReadOnly);
        (tmp, c)
    }

    #[tokio::test]
    async fn name_pattern_matches_at_any_depth() {
        let (_tmp, c) = tree();
        let r = glob(&c, serde_json::json!({"pattern": "*.rs"})).await;
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            "b.rs\nsrc/a.rs\nsrc/deep/c.rs\n"
        );
    }

    #[tokio::test]
    async fn path_pattern_and_root() {
        let (_tmp, c) = tree();
        let r = glob(&c, serde_json::json!({"pattern": "src/*.rs"})).await;
        assert_eq!(crate::paths::tests::slashed(&r.content), "src/a.rs\n");
        let r = glob(&c, serde_json::json!({"pattern": "**/*.rs", "path": "src"})).await;
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            "src/a.rs\nsrc/deep/c.rs\n"
        );
        let r = glob(&c, serde_json::json!({"pattern": "*.md"})).await;
        assert_eq!(crate::paths::tests::slashed(&r.content), "no files match\n");
    }

    #[tokio::test]
    async fn mtime_sort_is_newest_first() {
        let (tmp, c) = tree();
        let old = SystemTime::now() - Duration::from_secs(3600);
        for (i, name) in ["src/deep/c.rs", "b.rs", "src/a.rs"].iter().enumerate() {
            let file = fs::File::options()
                .write(true)
                .open(tmp.path().join(name))
                .unwrap();
            file.set_modified(old + Duration::from_secs(i as u64 * 60))
                .unwrap();
        }
        let r = glob(&c, serde_json::json!({"pattern": "*.rs", "sort": "mtime"})).await;
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            "src/a.rs\nb.rs\nsrc/deep/c.rs\n"
        );
    }

    #[tokio::test]
    async fn cap_and_errors() {
        let (_tmp, mut c) = tree();
        c.config = Arc::new(ToolConfig {
            list_max_entries: 1,
            ..ToolConfig::default()
        });
        let r = glob(&c, serde_json::json!({"pattern": "*.rs"})).await;
        assert_eq!(
            r.content,
            "b.rs\n[2 more not shown; narrow the pattern or path]"
        );
        let r = glob(&c, serde_json::json!({"pattern": "a["})).await;
        assert!(r.is_error);
        let r = glob(&c, serde_json::json!({"pattern": "*", "sort": "size"})).await;
        assert!(r.is_error);
        let r = glob(&c, serde_json::json!({"pattern": "*", "path": "nope"})).await;
        assert!(
            r.is_error && r.content.starts_with("`nope`: "),
            "{}",
            r.content
        );
    }
}
