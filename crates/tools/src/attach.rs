//! Context files: files and directories attached to a prompt, for `cogni
//! run --context`, a task's `context_paths`, the REPL's `@path` and
//! `[agent] auto_context` (docs/context.md#context-files). Files are
//! inlined; a directory is summarised as a tree with sizes and the first
//! lines of its key files. Everything together stays within a byte cap,
//! cut with `[truncated]`.

use super::fs::read_head;
use cogni_protocol::ContextFile;
use std::fmt::Write as _;
use std::path::Path;

/// The cap of everything attached to one prompt, unless configured
/// (`max_context_bytes`).
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024;

/// Most entries a directory's tree lists.
const MAX_ENTRIES: usize = 200;
/// How deep a directory's tree goes.
const MAX_DEPTH: usize = 2;
/// Lines of each key file a directory summary shows.
const KEY_FILE_LINES: usize = 20;
/// The most read of a key file for them.
const KEY_FILE_MAX_BYTES: usize = 16 * 1024;
/// Files that say what a project is, in the order they are shown.
pub const KEY_FILES: &[&str] = &[
    "README.md",
    "README",
    "Cargo.toml",
    "package.json",
    "go.mod",
    "pyproject.toml",
];
/// Directories a tree does not descend into.
const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", "target", ".venv", "__pycache__"];

/// `paths` (relative to `cwd`, or absolute) attached within `max_bytes`:
/// the text to append to a prompt and what went in. Paths that do not
/// exist are left out (and reported by the caller); a path given twice is
/// attached once.
pub fn attach(paths: &[String], cwd: &Path, max_bytes: usize) -> (String, Vec<ContextFile>) {
    let mut out = String::new();
    let mut attached: Vec<ContextFile> = Vec::new();
    let mut budget = max_bytes;
    for name in paths {
        if attached.iter().any(|a| &a.path == name) {
            continue;
        }
        let path = cwd.join(name);
        let (kind, body) = if path.is_dir() {
            ("directory", summarise_dir(&path))
        } else {
            match read_text(&path, budget) {
                Some(text) => ("file", text),
                None => continue,
            }
        };
        let (body, truncated) = cap(&body, budget);
        budget = budget.saturating_sub(body.len());
        let _ = write!(out, "\n\n<attached {kind}=\"{name}\">\n{body}\n</attached>");
        attached.push(ContextFile {
            path: name.clone(),
            kind: kind.to_string(),
            bytes: body.len(),
            truncated,
            detail: None,
        });
    }
    (out, attached)
}

/// The context files of a task: `given` (each must exist under `cwd`;
/// the error is the first that does not), else with `auto` the files the
/// task names and the project's key files ([`relevant`]), else none.
pub fn paths_for(
    task: &str,
    given: &[String],
    auto: bool,
    cwd: &Path,
) -> Result<Vec<String>, String> {
    if let Some(missing) = given.iter().find(|p| !cwd.join(p).exists()) {
        return Err(missing.clone());
    }
    Ok(if !given.is_empty() {
        given.to_vec()
    } else if auto {
        relevant(task, cwd)
    } else {
        Vec::new()
    })
}

/// The paths a prompt names that exist under `cwd` (words that look like
/// paths: with a `/` or a `.`), then the key files of `cwd`: what
/// `auto_context` attaches.
pub fn relevant(prompt: &str, cwd: &Path) -> Vec<String> {
    let mut paths: Vec<String> = prompt
        .split_whitespace()
        .map(|w| {
            w.trim_start_matches(|c: char| "`'\"([{<".contains(c))
                .trim_end_matches(|c: char| "`'\")]}>,;:!?.".contains(c))
        })
        .filter(|w| w.contains(['/', '.']) && !w.starts_with('-') && !w.contains(".."))
        .filter(|w| cwd.join(w).exists())
        .map(str::to_string)
        .collect();
    paths.extend(
        KEY_FILES
            .iter()
            .filter(|f| cwd.join(f).is_file())
            .map(|f| f.to_string()),
    );
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    paths
}

/// At most `max` bytes (and one more, so the cut shows) of the file at
/// `path`, or a note saying why it is not attached; `None` when nothing is
/// there. Never blocks: a FIFO or a device is named, not read.
fn read_text(path: &Path, max: usize) -> Option<String> {
    match read_head(path, max as u64 + 1) {
        Ok(head) => {
            let len = head.bytes.len();
            Some(
                head.into_text()
                    .unwrap_or_else(|| format!("[binary file, not attached ({len} bytes read)]")),
            )
        }
        Err(e) if e.is_missing() => None,
        Err(e) => Some(format!("[not attached: {e}]")),
    }
}

/// `text` cut to `max` bytes on a character boundary.
fn cap(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (format!("{}\n[truncated]", &text[..cut]), true)
}

/// A directory as a tree with sizes (two levels, at most [`MAX_ENTRIES`]
/// entries), then the first lines of its key files.
fn summarise_dir(path: &Path) -> String {
    let mut lines = Vec::new();
    let mut total = 0;
    tree(path, "", 0, &mut lines, &mut total);
    let mut out = format!("{total} entries:\n{}", lines.join("\n"));
    if total > lines.len() {
        let _ = write!(out, "\n… and {} more", total - lines.len());
    }
    for key in KEY_FILES {
        let file = path.join(key);
        if !file.is_file() {
            continue;
        }
        let text = read_text(&file, KEY_FILE_MAX_BYTES).unwrap_or_default();
        let head: Vec<&str> = text.lines().take(KEY_FILE_LINES).collect();
        let _ = write!(out, "\n\n{key} (first lines):\n{}", head.join("\n"));
    }
    out
}

fn tree(dir: &Path, prefix: &str, depth: usize, lines: &mut Vec<String>, total: &mut usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        lines.push(format!("{prefix}[cannot list]"));
        return;
    };
    let mut entries: Vec<(String, bool, u64)> = entries
        .filter_map(|e| e.ok())
        .map(|e| {
            let meta = e.metadata().ok();
            let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
            let size = meta.map_or(0, |m| m.len());
            (e.file_name().to_string_lossy().into_owned(), is_dir, size)
        })
        .collect();
    entries.sort();
    for (name, is_dir, size) in entries {
        *total += 1;
        if lines.len() < MAX_ENTRIES {
            lines.push(if is_dir {
                format!("{prefix}{name}/")
            } else {
                format!("{prefix}{name} ({})", human_size(size))
            });
        }
        if is_dir && depth + 1 < MAX_DEPTH && !SKIPPED_DIRS.contains(&name.as_str()) {
            tree(
                &dir.join(&name),
                &format!("{prefix}  "),
                depth + 1,
                lines,
                total,
            );
        }
    }
}

fn human_size(bytes: u64) -> String {
    match bytes {
        0..=1023 => format!("{bytes} B"),
        1024..=1_048_575 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_inlined_and_directories_summarised_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
        std::fs::create_dir_all(dir.path().join("proj/src")).unwrap();
        std::fs::write(dir.path().join("proj/src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(
            dir.path().join("proj/Cargo.toml"),
            "[package]\nname = \"x\"\n",
        )
        .unwrap();
        let paths = ["a.txt", "proj", "missing", "a.txt"].map(String::from);
        let (text, attached) = attach(&paths, dir.path(), 10_000);
        assert_eq!(attached.len(), 2);
        assert_eq!(attached[0].kind, "file");
        assert_eq!(attached[1].kind, "directory");
        assert!(text.contains("<attached file=\"a.txt\">\nhello\n</attached>"));
        assert!(text.contains("Cargo.toml (21 B)"), "{text}");
        assert!(text.contains("src/\n  main.rs (13 B)"), "{text}");
        assert!(
            text.contains("Cargo.toml (first lines):\n[package]\nname = \"x\""),
            "{text}"
        );
    }

    #[test]
    fn everything_together_stays_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.txt"), "x".repeat(100)).unwrap();
        std::fs::write(dir.path().join("more.txt"), "y".repeat(100)).unwrap();
        let paths = ["big.txt", "more.txt"].map(String::from);
        let (text, attached) = attach(&paths, dir.path(), 150);
        assert!(attached[0].bytes == 100 && !attached[0].truncated);
        assert!(attached[1].truncated);
        assert!(
            text.contains(&format!("{}\n[truncated]", "y".repeat(50))),
            "{text}"
        );
        let total: usize = attached.iter().map(|a| a.bytes).sum();
        assert!(total <= 150 + 2 * "\n[truncated]".len());
    }

    #[test]
    fn relevant_files_are_those_named_then_the_key_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "# x").unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        let found = relevant(
            "fix the bug in `src/lib.rs`. Also see nope/x.rs and README.md",
            dir.path(),
        );
        assert_eq!(found, ["src/lib.rs", "README.md", "Cargo.toml"]);
    }
}
