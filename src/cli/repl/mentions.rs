//! `@path` in a message attaches that file (or a listing of that
//! directory) as context, all attachments together capped at
//! `max_context_bytes` with a `[truncated]` note.

use std::fmt::Write as _;
use std::path::Path;

/// Most directory entries listed for a directory mention.
const MAX_ENTRIES: usize = 200;

/// The message with its attachments appended, and the paths attached.
pub fn expand(text: &str, cwd: &Path, max_bytes: usize) -> (String, Vec<String>) {
    let mut out = text.to_string();
    let mut attached = Vec::new();
    let mut budget = max_bytes;
    for word in text.split_whitespace() {
        let Some(raw) = word.strip_prefix('@') else {
            continue;
        };
        // Trailing punctuation is not part of the path ("see @a.rs,").
        let name = raw.trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
        if name.is_empty() || attached.iter().any(|a| a == name) {
            continue;
        }
        let path = cwd.join(name);
        let body = if path.is_dir() {
            list_dir(&path)
        } else if path.is_file() {
            match std::fs::read(&path) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => text,
                    Err(e) => format!("[binary file, {} bytes, not attached]", e.as_bytes().len()),
                },
                Err(e) => format!("[cannot read: {e}]"),
            }
        } else {
            continue;
        };
        let body = cap(&body, budget);
        budget = budget.saturating_sub(body.len());
        let kind = if path.is_dir() { "directory" } else { "file" };
        let _ = write!(out, "\n\n<attached {kind}=\"{name}\">\n{body}\n</attached>");
        attached.push(name.to_string());
    }
    (out, attached)
}

fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n[truncated]", &text[..cut])
}

fn list_dir(path: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(path) else {
        return "[cannot list]".into();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| {
            let dir = e.file_type().is_ok_and(|t| t.is_dir());
            format!(
                "{}{}",
                e.file_name().to_string_lossy(),
                if dir { "/" } else { "" }
            )
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_ENTRIES);
    let mut out = format!("{total} entries:\n{}", names.join("\n"));
    if total > MAX_ENTRIES {
        let _ = write!(out, "\n… and {} more", total - MAX_ENTRIES);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_are_attached_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("big.txt"), "x".repeat(100)).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/f.rs"), "").unwrap();
        let (text, attached) = expand("see @a.txt, and @sub @missing", dir.path(), 1000);
        assert_eq!(attached, ["a.txt", "sub"]);
        assert!(text.starts_with("see @a.txt, and @sub @missing\n\n"));
        assert!(text.contains("<attached file=\"a.txt\">\nhello\n</attached>"));
        assert!(text.contains("<attached directory=\"sub\">\n1 entries:\nf.rs\n</attached>"));
        let (text, _) = expand("@big.txt", dir.path(), 10);
        assert!(
            text.contains(&format!("{}\n[truncated]", "x".repeat(10))),
            "{text}"
        );
    }
}
