//! `grep`: regex search over the workspace with ripgrep's engine
//! (grep-searcher + grep-regex), a parallel `.gitignore`-aware walk, and
//! deterministic output sorted by path and line.

use super::fs::open_regular;
use super::walk::{self, PathGlob};
use super::{parse_args, paths, truncate, Tool, ToolConfig, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

const MAX_CONTEXT: usize = 10;
/// Longer lines are cut (minified files would flood the output).
const MAX_LINE_BYTES: usize = 300;

/// The `grep` tool: searches file contents with a regex, skipping
/// .gitignore'd, .git and binary files.
pub struct GrepTool {
    description: String,
}

impl GrepTool {
    /// The tool, its description stating `config`'s caps.
    pub fn new(config: &ToolConfig) -> Self {
        GrepTool {
            description: format!(
                "Search file contents with a regex (Rust syntax); prints `path:line:text` \
                 sorted by path and line (context lines use `-`). .gitignore'd files, .git and \
                 binary files are skipped. `path`: dir or file (default cwd); `glob`: file filter \
                 (`*.rs`, `src/**/*.ts`); `context`: lines around each match (max {MAX_CONTEXT}); \
                 `max_results`: default and max {}.",
                config.grep_max_results
            ),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    context: usize,
    max_results: Option<usize>,
}

impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: self.description.clone(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string"},
                        "path": {"type": "string"},
                        "glob": {"type": "string"},
                        "case_insensitive": {"type": "boolean"},
                        "context": {"type": "integer", "minimum": 0},
                        "max_results": {"type": "integer", "minimum": 1}
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
            let args: Args = match parse_args("grep", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let root = match paths::existing(&ctx.cwd, args.path.as_deref()).await {
                Ok(root) => root,
                Err(message) => return ToolResult::error(message),
            };
            let query = match Query::new(&args, root, &ctx.config) {
                Ok(query) => query,
                Err(message) => return ToolResult::error(message),
            };
            let cwd = ctx.cwd.clone();
            let max_bytes = ctx.config.max_output_bytes;
            match tokio::task::spawn_blocking(move || {
                let found = search(&query);
                render(&found, &query, &cwd, max_bytes)
            })
            .await
            {
                Ok(text) => ToolResult::ok(text),
                Err(_) => ToolResult::error("the search was interrupted"),
            }
        })
    }
}

/// A validated search.
#[derive(Debug, Clone)]
struct Query {
    matcher: RegexMatcher,
    root: PathBuf,
    glob: Option<PathGlob>,
    context: usize,
    max_results: usize,
}

impl Query {
    fn new(args: &Args, root: PathBuf, config: &ToolConfig) -> Result<Self, String> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(args.case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
            .map_err(|e| format!("invalid regex: {e}"))?;
        let glob = args
            .glob
            .as_deref()
            .map(PathGlob::new)
            .transpose()
            .map_err(|e| format!("invalid glob: {e}"))?;
        let cap = config.grep_max_results;
        Ok(Query {
            matcher,
            root,
            glob,
            context: args.context.min(MAX_CONTEXT),
            max_results: args.max_results.unwrap_or(cap).clamp(1, cap),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Match,
    Before,
    After,
    Break,
}

#[derive(Debug, Clone)]
struct Line {
    number: u64,
    kind: Kind,
    text: String,
}

/// Matches of the files with the smallest paths, enough for `max_results`,
/// plus totals over everything searched.
#[derive(Debug, Default)]
struct Found {
    files: BTreeMap<PathBuf, Vec<Line>>,
    kept_matches: usize,
    total_matches: u64,
    total_files: u64,
}

impl Found {
    fn add(&mut self, path: PathBuf, file: FileSink, max_results: usize) {
        self.total_matches += file.matches;
        self.total_files += 1;
        self.kept_matches += file.kept;
        self.files.insert(path, file.lines);
        // Drop the largest paths while the rest still covers max_results:
        // the outcome does not depend on the order threads finish in.
        while let Some(entry) = self.files.last_entry() {
            let last = count_matches(entry.get());
            if self.kept_matches - last < max_results {
                break;
            }
            self.kept_matches -= last;
            entry.remove();
        }
    }
}

fn count_matches(lines: &[Line]) -> usize {
    lines.iter().filter(|l| l.kind == Kind::Match).count()
}

/// Search everything under `query.root` on a parallel walk.
fn search(query: &Query) -> Found {
    let found = Arc::new(Mutex::new(Found::default()));
    let mut searcher = SearcherBuilder::new();
    searcher
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(query.context)
        .after_context(query.context);
    walk::builder(&query.root).build_parallel().run(|| {
        let mut searcher = searcher.build();
        let found = Arc::clone(&found);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if let Some(glob) = &query.glob {
                if entry.depth() > 0 && !glob.is_match(&query.root, entry.path()) {
                    return WalkState::Continue;
                }
            }
            // Opened without blocking: a FIFO swapped in since the walk
            // saw a file is refused, not waited on.
            let Ok((file, _)) = open_regular(entry.path()) else {
                return WalkState::Continue;
            };
            let mut sink = FileSink::new(query.max_results);
            let searched = searcher.search_file(&query.matcher, &file, &mut sink);
            if searched.is_ok() && !sink.binary && sink.matches > 0 {
                found.lock().unwrap_or_else(PoisonError::into_inner).add(
                    entry.into_path(),
                    sink,
                    query.max_results,
                );
            }
            WalkState::Continue
        })
    });
    Arc::try_unwrap(found)
        .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
        .unwrap_or_default()
}

/// Collects one file's lines: at most `keep` matches (and their context),
/// but counts all of them.
struct FileSink {
    lines: Vec<Line>,
    keep: usize,
    kept: usize,
    matches: u64,
    binary: bool,
}

impl FileSink {
    fn new(keep: usize) -> Self {
        FileSink {
            lines: Vec::new(),
            keep,
            kept: 0,
            matches: 0,
            binary: false,
        }
    }

    fn push(&mut self, number: Option<u64>, kind: Kind, bytes: &[u8]) {
        self.lines.push(Line {
            number: number.unwrap_or(0),
            kind,
            text: line_text(bytes),
        });
    }
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        if self.kept < self.keep {
            self.kept += 1;
            self.push(mat.line_number(), Kind::Match, mat.bytes());
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let kind = match context.kind() {
            SinkContextKind::Before => Kind::Before,
            SinkContextKind::After => Kind::After,
            SinkContextKind::Other => return Ok(true),
        };
        // Before-context of a match that will not be kept is not kept either.
        if self.kept < self.keep || (kind == Kind::After && self.kept as u64 == self.matches) {
            self.push(context.line_number(), kind, context.bytes());
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.kept < self.keep {
            self.lines.push(Line {
                number: 0,
                kind: Kind::Break,
                text: String::new(),
            });
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.len() <= MAX_LINE_BYTES {
        return text.to_string();
    }
    let cut = truncate::floor_char_boundary(text, MAX_LINE_BYTES);
    format!("{} [... {} bytes]", &text[..cut], text.len() - cut)
}

fn render(found: &Found, query: &Query, cwd: &Path, max_bytes: usize) -> String {
    if found.total_matches == 0 {
        return "no matches\n".to_string();
    }
    let mut out = String::new();
    let mut shown = 0;
    let mut stopped_by_bytes = false;
    'files: for (path, lines) in &found.files {
        let name = paths::display(cwd, path);
        let mut pending = String::new();
        for line in lines {
            let mut entry = String::new();
            match line.kind {
                Kind::Match => {
                    if shown == query.max_results {
                        break 'files;
                    }
                    let _ = writeln!(entry, "{name}:{}:{}", line.number, line.text);
                }
                Kind::Before | Kind::After => {
                    let _ = writeln!(entry, "{name}-{}-{}", line.number, line.text);
                }
                Kind::Break => entry.push_str("--\n"),
            }
            // Before-context and breaks wait for the match they lead to.
            if line.kind != Kind::Match && line.kind != Kind::After {
                pending.push_str(&entry);
                continue;
            }
            if out.len() + pending.len() + entry.len() > max_bytes {
                stopped_by_bytes = true;
                break 'files;
            }
            out.push_str(&pending);
            pending.clear();
            out.push_str(&entry);
            if line.kind == Kind::Match {
                shown += 1;
            }
        }
        if query.context > 0 && shown < query.max_results {
            out.push_str("--\n");
        }
    }
    if query.context > 0 {
        while out.ends_with("--\n") {
            out.truncate(out.len() - 3);
        }
    }
    if (shown as u64) < found.total_matches {
        let why = if stopped_by_bytes {
            format!("output reached {max_bytes} bytes")
        } else {
            format!("max_results={}", query.max_results)
        };
        let _ = write!(
            out,
            "[showing {shown} of {} matches in {} files ({why}); narrow with path, glob or pattern]",
            found.total_matches, found.total_files
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

    async fn grep(ctx: &ToolContext, args: serde_json::Value) -> ToolResult {
        GrepTool::new(&ctx.config)
            .run(ToolInput::Json(args), ctx)
            .await
    }

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let path = tmp.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
        let c = ctx(tmp.path(), SandboxMode::ReadOnly);
        (tmp, c)
    }

    #[tokio::test]
    async fn finds_sorted_matches_and_respects_gitignore() {
        let (_tmp, c) = tree(&[
            ("b.rs", "fn b() {}\nlet x = 1;\nfn bb() {}\n"),
            ("a/z.rs", "fn z() {}\n"),
            ("ignored/x.rs", "fn ignored() {}\n"),
            (".gitignore", "ignored/\n"),
            (".hidden.rs", "fn hidden() {}\n"),
            (".git/config", "fn git() {}\n"),
        ]);
        let r = grep(&c, serde_json::json!({"pattern": "^fn \\w+"})).await;
        assert!(!r.is_error);
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            ".hidden.rs:1:fn hidden() {}\na/z.rs:1:fn z() {}\nb.rs:1:fn b() {}\nb.rs:3:fn bb() {}\n"
        );
    }

    #[tokio::test]
    async fn glob_case_and_path_filter() {
        let (_tmp, c) = tree(&[
            ("src/a.rs", "Hello\n"),
            ("src/a.txt", "hello\n"),
            ("docs/b.rs", "HELLO\n"),
        ]);
        let r = grep(&c, serde_json::json!({"pattern": "hello", "glob": "*.rs"})).await;
        assert_eq!(crate::paths::tests::slashed(&r.content), "no matches\n");
        let r = grep(
            &c,
            serde_json::json!({"pattern": "hello", "glob": "*.rs", "case_insensitive": true}),
        )
        .await;
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            "docs/b.rs:1:HELLO\nsrc/a.rs:1:Hello\n"
        );
        let r = grep(
            &c,
            serde_json::json!({"pattern": "(?i)hello", "path": "src"}),
        )
        .await;
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            "src/a.rs:1:Hello\nsrc/a.txt:1:hello\n"
        );
        let r = grep(
            &c,
            serde_json::json!({"pattern": "hello", "path": "src/a.txt"}),
        )
        .await;
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            "src/a.txt:1:hello\n"
        );
    }

    #[tokio::test]
    async fn context_lines_and_breaks() {
        let text = "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n";
        let (_tmp, c) = tree(&[("f", text), ("g", "hit\n")]);
        let r = grep(&c, serde_json::json!({"pattern": "hit", "context": 1})).await;
        assert_eq!(
            crate::paths::tests::slashed(&r.content),
            "f-2-2\nf:3:hit\nf-4-4\n--\nf-7-7\nf:8:hit\nf-9-9\n--\ng:1:hit\n"
        );
    }

    #[tokio::test]
    async fn max_results_is_deterministic_and_noted() {
        let files: Vec<(String, String)> = (0..50)
            .map(|i| {
                (
                    format!("d{}/f{i:02}.txt", i % 7),
                    "needle\nneedle\n".to_string(),
                )
            })
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_tmp, c) = tree(&refs);
        let first = grep(
            &c,
            serde_json::json!({"pattern": "needle", "max_results": 5}),
        )
        .await;
        for _ in 0..5 {
            let again = grep(
                &c,
                serde_json::json!({"pattern": "needle", "max_results": 5}),
            )
            .await;
            assert_eq!(again.content, first.content);
        }
        assert_eq!(
            crate::paths::tests::slashed(&first.content),
            "d0/f00.txt:1:needle\nd0/f00.txt:2:needle\nd0/f07.txt:1:needle\nd0/f07.txt:2:needle\n\
             d0/f14.txt:1:needle\n\
             [showing 5 of 100 matches in 50 files (max_results=5); narrow with path, glob or pattern]"
        );
    }

    #[tokio::test]
    async fn output_bytes_are_capped() {
        let long = "needle ".repeat(40);
        let content = format!("{long}\n").repeat(100);
        let (_tmp, mut c) = tree(&[("f", content.as_str())]);
        c.config = Arc::new(ToolConfig {
            max_output_bytes: 1000,
            ..ToolConfig::default()
        });
        let r = grep(&c, serde_json::json!({"pattern": "needle"})).await;
        let body = r.content.rsplit_once('[').unwrap().0;
        assert!(body.len() <= 1000, "{}", body.len());
        assert!(
            r.content.contains("output reached 1000 bytes"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn binary_files_and_long_lines() {
        let long = format!("needle{}\n", "x".repeat(1000));
        let (_tmp, c) = tree(&[("bin", "needle\0\n"), ("long", long.as_str())]);
        let r = grep(&c, serde_json::json!({"pattern": "needle"})).await;
        assert!(r.content.starts_with("long:1:needlexxx"), "{}", r.content);
        assert!(r.content.ends_with(" [... 706 bytes]\n"), "{}", r.content);
    }

    #[tokio::test]
    async fn bad_pattern_is_an_error() {
        let (_tmp, c) = tree(&[]);
        let r = grep(&c, serde_json::json!({"pattern": "("})).await;
        assert!(
            r.is_error && r.content.starts_with("invalid regex"),
            "{}",
            r.content
        );
        let r = grep(&c, serde_json::json!({"pattern": "x", "glob": "["})).await;
        assert!(
            r.is_error && r.content.starts_with("invalid glob"),
            "{}",
            r.content
        );
    }
}
