//! `@path` in a message attaches that file (or a summary of that
//! directory) as context, all attachments together capped at
//! `max_context_bytes` with a `[truncated]` note ([`attach`]).

use crate::tools::attach;
use std::path::Path;

/// The message with its attachments appended, and the paths attached.
pub fn expand(text: &str, cwd: &Path, max_bytes: usize) -> (String, Vec<String>) {
    let names: Vec<String> = text
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        // Trailing punctuation is not part of the path ("see @a.rs,").
        .map(|raw| {
            raw.trim_end_matches([',', '.', ';', ':', ')', '!', '?'])
                .to_string()
        })
        .filter(|name| !name.is_empty())
        .collect();
    let (appendix, attached) = attach::attach(&names, cwd, max_bytes);
    (
        format!("{text}{appendix}"),
        attached.into_iter().map(|a| a.path).collect(),
    )
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
        assert!(text.contains("<attached directory=\"sub\">\n1 entries:\nf.rs (0 B)\n</attached>"));
        let (text, _) = expand("@big.txt", dir.path(), 10);
        assert!(
            text.contains(&format!("{}\n[truncated]", "x".repeat(10))),
            "{text}"
        );
    }
}
