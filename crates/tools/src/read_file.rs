//! `read_file`: a slice of a text file as numbered lines.

use super::editor::Files;
use super::fs::{open_regular, ReadLimitError};
use super::{parse_args, paths, truncate, Tool, ToolConfig, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// Lines returned when the call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 2000;
/// A NUL byte in this many first bytes marks a file as binary.
const BINARY_PROBE_BYTES: u64 = 8 * 1024;

/// The `read_file` tool: reads a text file as numbered lines, a range at a
/// time.
pub struct ReadFileTool {
    description: String,
}

impl ReadFileTool {
    /// The tool, its description stating `config`'s caps.
    pub fn new(config: &ToolConfig) -> Self {
        ReadFileTool {
            description: format!(
                "Read a text file as numbered lines (`N<TAB>text`). `offset`: first line, 1-based \
                 (default 1); `limit`: number of lines (default {DEFAULT_LIMIT}). At most {} bytes \
                 per call; a note gives the offset to continue from. Binary files are refused.",
                config.read_max_bytes
            ),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: self.description.clone(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "offset": {"type": "integer", "minimum": 1},
                        "limit": {"type": "integer", "minimum": 1}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
            },
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match parse_args("read_file", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let path = paths::resolve(&ctx.cwd, &args.path);
            let slice = Slice {
                offset: args.offset.unwrap_or(1).max(1),
                limit: args.limit.unwrap_or(DEFAULT_LIMIT).max(1),
                max_bytes: ctx.config.read_max_bytes,
            };
            let shown = paths::display(&ctx.cwd, &path);
            let files = ctx.files.clone();
            match tokio::task::spawn_blocking(move || read_slice(&files, &path, slice)).await {
                Ok(Ok(text)) => ToolResult::ok(text),
                Ok(Err(e)) => ToolResult::error(format!("cannot read `{shown}`: {e}")),
                Err(_) => ToolResult::error(format!("reading `{shown}` was interrupted")),
            }
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Slice {
    offset: usize,
    limit: usize,
    max_bytes: usize,
}

#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("it is a directory; use list_dir")]
    Directory,
    #[error("it is {0}, not a regular file; only regular files are read")]
    NotRegular(&'static str),
    #[error("it is a binary file ({0} bytes); not shown")]
    Binary(u64),
    #[error("offset {offset} is past the end of the file (last line: {lines})")]
    PastEnd { offset: usize, lines: usize },
}

/// The slice of the regular file at `path`: opened without blocking (a
/// FIFO or a device is refused, not waited on) and read only as far as
/// the slice needs.
fn read_slice(files: &Files, path: &Path, slice: Slice) -> Result<String, ReadError> {
    let (mut file, st) = open_regular(path).map_err(|e| match e {
        e if e.is_directory() => ReadError::Directory,
        ReadLimitError::NotRegular { kind, .. } => ReadError::NotRegular(kind),
        ReadLimitError::Io { source, .. } => ReadError::Io(source),
        other => ReadError::Io(io::Error::other(other.to_string())),
    })?;
    if let Some(text) = files.editor_text(path) {
        let text = text?;
        let probe = &text.as_bytes()[..text.len().min(BINARY_PROBE_BYTES as usize)];
        if memchr::memchr(0, probe).is_some() {
            return Err(ReadError::Binary(text.len() as u64));
        }
        return render_lines(&mut Cursor::new(text.as_bytes()), slice);
    }
    let mut probe = Vec::new();
    (&mut file)
        .take(BINARY_PROBE_BYTES)
        .read_to_end(&mut probe)?;
    if memchr::memchr(0, &probe).is_some() {
        return Err(ReadError::Binary(st.len()));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(probe).chain(file));
    render_lines(&mut reader, slice)
}

fn render_lines(reader: &mut impl BufRead, slice: Slice) -> Result<String, ReadError> {
    let mut out = String::new();
    let mut line = Vec::new();
    let mut line_no = 0;
    let mut shown = 0;
    let mut note = None;
    loop {
        line.clear();
        let len = read_line_capped(reader, &mut line, slice.max_bytes)?;
        if len == 0 {
            break;
        }
        line_no += 1;
        if line_no < slice.offset {
            continue;
        }
        if shown == slice.limit {
            note = Some(format!(
                "[{} lines shown; more follow: continue with offset={line_no}]",
                shown
            ));
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let entry = format!("{line_no:>5}\t{text}\n");
        if out.len() + entry.len() <= slice.max_bytes {
            out.push_str(&entry);
            shown += 1;
            continue;
        }
        if shown == 0 {
            // A single line larger than the budget: show its start.
            let cut = truncate::floor_char_boundary(&entry, slice.max_bytes.saturating_sub(1));
            out.push_str(&entry[..cut]);
            out.push('\n');
            let _ = write!(
                out,
                "[line {line_no} cut: {len} bytes long; continue with offset={}]",
                line_no + 1
            );
            return Ok(out);
        }
        note = Some(format!(
            "[{} bytes shown; continue with offset={line_no}]",
            out.len()
        ));
        break;
    }
    if shown == 0 {
        if line_no == 0 {
            return Ok("(empty file)".to_string());
        }
        return Err(ReadError::PastEnd {
            offset: slice.offset,
            lines: line_no,
        });
    }
    if let Some(note) = note {
        out.push_str(&note);
    }
    Ok(out)
}

/// Read one line (through its line feed) and return its full length, keeping
/// at most `keep` bytes of it in `buf`. Returns 0 at end of file.
fn read_line_capped(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> io::Result<usize> {
    let mut total = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(total);
        }
        let (used, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&available[..used.min(room)]);
        reader.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::tests::ctx;
    use cogni_protocol::SandboxMode;
    use std::sync::Arc;

    async fn read(ctx: &ToolContext, args: serde_json::Value) -> ToolResult {
        ReadFileTool::new(&ctx.config)
            .run(ToolInput::Json(args), ctx)
            .await
    }

    fn setup(files: &[(&str, &[u8])]) -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        for (name, content) in files {
            std::fs::write(tmp.path().join(name), content).unwrap();
        }
        let c = ctx(tmp.path(), SandboxMode::ReadOnly);
        (tmp, c)
    }

    #[tokio::test]
    async fn numbers_lines() {
        let (_tmp, c) = setup(&[("a.txt", b"one\ntwo\r\nthree")]);
        let r = read(&c, serde_json::json!({"path": "a.txt"})).await;
        assert!(!r.is_error);
        assert_eq!(r.content, "    1\tone\n    2\ttwo\n    3\tthree\n");
    }

    #[tokio::test]
    async fn offset_and_limit_select_a_slice_with_next_offset() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let (_tmp, c) = setup(&[("a.txt", text.as_bytes())]);
        let r = read(
            &c,
            serde_json::json!({"path": "a.txt", "offset": 3, "limit": 2}),
        )
        .await;
        assert_eq!(
            r.content,
            "    3\tl3\n    4\tl4\n[2 lines shown; more follow: continue with offset=5]"
        );
        let r = read(
            &c,
            serde_json::json!({"path": "a.txt", "offset": 9, "limit": 2}),
        )
        .await;
        assert_eq!(r.content, "    9\tl9\n   10\tl10\n");
    }

    #[tokio::test]
    async fn byte_cap_says_where_to_continue() {
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let (_tmp, mut c) = setup(&[("a.txt", text.as_bytes())]);
        c.config = Arc::new(ToolConfig {
            read_max_bytes: 100,
            ..ToolConfig::default()
        });
        let r = read(&c, serde_json::json!({"path": "a.txt"})).await;
        let body_len = r.content.find('[').unwrap();
        assert!(body_len <= 100, "{}", r.content);
        assert!(
            r.content.ends_with("continue with offset=8]"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn giant_line_is_cut() {
        let text = format!("{}\nnext\n", "é".repeat(100_000));
        let (_tmp, mut c) = setup(&[("a.txt", text.as_bytes())]);
        c.config = Arc::new(ToolConfig {
            read_max_bytes: 101,
            ..ToolConfig::default()
        });
        let r = read(&c, serde_json::json!({"path": "a.txt"})).await;
        assert!(!r.is_error);
        assert!(!r.content.contains('\u{FFFD}'), "{}", r.content);
        assert!(
            r.content
                .ends_with("[line 1 cut: 200001 bytes long; continue with offset=2]"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn binary_files_are_refused() {
        let (_tmp, c) = setup(&[("b.bin", b"abc\0def")]);
        let r = read(&c, serde_json::json!({"path": "b.bin"})).await;
        assert!(r.is_error);
        assert!(r.content.contains("binary file (7 bytes)"), "{}", r.content);
    }

    #[tokio::test]
    async fn invalid_utf8_is_shown_lossily() {
        let (_tmp, c) = setup(&[("l.txt", b"caf\xe9\n")]);
        let r = read(&c, serde_json::json!({"path": "l.txt"})).await;
        assert_eq!(r.content, "    1\tcaf\u{FFFD}\n");
    }

    #[tokio::test]
    async fn errors_name_the_problem() {
        let (tmp, c) = setup(&[("e.txt", b""), ("a.txt", b"x\n")]);
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        let r = read(&c, serde_json::json!({"path": "e.txt"})).await;
        assert!(
            !r.is_error && r.content.contains("(empty file)"),
            "{}",
            r.content
        );
        let r = read(&c, serde_json::json!({"path": "a.txt", "offset": 5})).await;
        assert!(
            r.is_error
                && r.content
                    .contains("past the end of the file (last line: 1)")
        );
        let r = read(&c, serde_json::json!({"path": "d"})).await;
        assert!(
            r.is_error && r.content.contains("use list_dir"),
            "{}",
            r.content
        );
        let r = read(&c, serde_json::json!({"path": "missing"})).await;
        assert!(
            r.is_error && r.content.contains("cannot read `missing`"),
            "{}",
            r.content
        );
    }

    #[test]
    fn spec_is_read_only() {
        assert!(ReadFileTool::new(&ToolConfig::default()).spec().read_only);
    }
}
