//! What a tool call reads as for people: a unified diff coloured line by
//! line, a command as the shell would read it, and what an approval
//! question shows of a call (the diff a file tool would make, the command
//! a shell call would run). Shared by the REPL and the approval questions
//! of `cogni run`.

use super::render::{paint, show_controls};
use crate::tools::diff;
use crate::tools::fs::read_text_limited;
use std::path::Path;

/// The largest file a `write_file` question reads to diff against.
const QUESTION_READ_LIMIT: u64 = 1 << 20;

/// The lines of a unified diff (or an `apply_patch` patch), coloured when
/// `color`: added lines green, removed lines red, file headers bold, hunk
/// headers and context dim. Control characters other than tabs are shown
/// as escapes, so a file's bytes never act on the terminal.
pub fn diff_lines(diff: &str, color: bool) -> Vec<String> {
    diff.lines()
        .map(|line| {
            let shown: Vec<String> = line.split('\t').map(show_controls).collect();
            let shown = shown.join("\t");
            let code =
                if line.starts_with("+++ ") || line.starts_with("--- ") || line.starts_with("*** ")
                {
                    "1"
                } else if line.starts_with('+') {
                    "32"
                } else if line.starts_with('-') {
                    "31"
                } else {
                    "2"
                };
            paint(color, code, &shown)
        })
        .collect()
}

/// `argv` as a shell would read it back: each word quoted when it holds
/// anything but plain characters.
pub fn shell_join(argv: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    argv.iter()
        .map(|word| {
            if !word.is_empty() && word.chars().all(plain) {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a call would do, for a question about it.
#[derive(Debug, PartialEq, Eq)]
pub enum Shown {
    /// A command, as the shell reads it (a script with its real newlines).
    Command(String),
    /// A file change: the file, and the diff (or patch) it would make.
    Change { file: String, diff: String },
}

/// What `tool` called with `arguments` would do, when it is a command or
/// a file change cogni knows how to show; `cwd` is where a relative path
/// of `write_file` is, to diff against the file there.
pub fn call(tool: &str, arguments: &str, cwd: Option<&Path>) -> Option<Shown> {
    let args: Option<serde_json::Value> = serde_json::from_str(arguments).ok();
    let field = |name: &str| args.as_ref()?.get(name)?.as_str().map(str::to_string);
    match tool {
        "shell" => match args.as_ref()?.get("command")? {
            serde_json::Value::String(line) => Some(Shown::Command(line.clone())),
            serde_json::Value::Array(words) => {
                let argv: Option<Vec<String>> = words
                    .iter()
                    .map(|w| w.as_str().map(str::to_string))
                    .collect();
                Some(Shown::Command(shell_join(&argv?)))
            }
            _ => None,
        },
        "apply_patch" => {
            // JSON `{"input": PATCH}`, or a freeform call's own text.
            let patch = field("input").unwrap_or_else(|| arguments.to_string());
            patch
                .trim_start()
                .starts_with("*** Begin Patch")
                .then(|| Shown::Change {
                    file: patch_files(&patch),
                    diff: patch,
                })
        }
        "edit_file" => {
            let file = field("path")?;
            let (old, new) = (field("old_string")?, field("new_string")?);
            let old = (!old.is_empty()).then_some((file.as_str(), old.as_str()));
            let diff = diff::unified(old, Some((&file, &new)))?;
            Some(Shown::Change { file, diff })
        }
        "write_file" => {
            let file = field("path")?;
            let content = field("content")?;
            let current = cwd
                .map(|cwd| cwd.join(&file))
                .and_then(|path| read_text_limited(&path, QUESTION_READ_LIMIT).ok());
            let old = current.as_deref().map(|text| (file.as_str(), text));
            let diff = diff::unified(old, Some((&file, &content)))?;
            Some(Shown::Change { file, diff })
        }
        _ => None,
    }
}

/// The files a patch names, for its question's first line.
fn patch_files(patch: &str) -> String {
    let files: Vec<&str> = patch
        .lines()
        .filter_map(|l| {
            ["*** Add File: ", "*** Delete File: ", "*** Update File: "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
        })
        .collect();
    files.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_are_coloured_by_line_and_controls_shown() {
        let lines = diff_lines(
            "--- a\n+++ a\n@@ -1 +1 @@\n ctx\n-old\n+new\x1b[2J\tx\n",
            true,
        );
        assert_eq!(lines[0], "\x1b[1m--- a\x1b[0m");
        assert_eq!(lines[2], "\x1b[2m@@ -1 +1 @@\x1b[0m");
        assert_eq!(lines[3], "\x1b[2m ctx\x1b[0m");
        assert_eq!(lines[4], "\x1b[31m-old\x1b[0m");
        assert_eq!(lines[5], "\x1b[32m+new\\u{1b}[2J\tx\x1b[0m");
        assert_eq!(diff_lines("-old\n+new", false), ["-old", "+new"]);
    }

    #[test]
    fn argv_is_quoted_as_a_shell_reads_it() {
        let argv: Vec<String> = ["git", "commit", "-m", "it's done", "", "a;b"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            shell_join(&argv),
            r#"git commit -m 'it'\''s done' '' 'a;b'"#
        );
    }

    #[cfg(unix)]
    #[test]
    fn calls_show_as_commands_and_diffs() {
        assert_eq!(
            call("shell", r#"{"command":"cargo build\ncargo test"}"#, None),
            Some(Shown::Command("cargo build\ncargo test".into()))
        );
        assert_eq!(
            call("shell", r#"{"command":["echo","a b"]}"#, None),
            Some(Shown::Command("echo 'a b'".into()))
        );
        let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\n*** End Patch";
        let json = serde_json::json!({ "input": patch }).to_string();
        for arguments in [json.as_str(), patch] {
            assert_eq!(
                call("apply_patch", arguments, None),
                Some(Shown::Change {
                    file: "a.txt".into(),
                    diff: patch.into()
                })
            );
        }
        let edit = r#"{"path":"a.txt","old_string":"x\n","new_string":"y\n"}"#;
        let Some(Shown::Change { diff, .. }) = call("edit_file", edit, None) else {
            panic!()
        };
        assert!(diff.ends_with("-x\n+y\n"), "{diff}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.txt"), "one\ntwo\n").unwrap();
        let write = r#"{"path":"w.txt","content":"one\n2\n"}"#;
        let Some(Shown::Change { diff, .. }) = call("write_file", write, Some(dir.path())) else {
            panic!()
        };
        assert!(diff.contains(" one\n-two\n+2\n"), "{diff}");
        let Some(Shown::Change { diff, .. }) = call("write_file", write, None) else {
            panic!()
        };
        assert!(diff.contains("+one\n+2\n"), "a new file's head: {diff}");
        // A FIFO the model names is not waited on: the new file's lines.
        let fifo = dir.path().join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let write = r#"{"path":"pipe","content":"x\n"}"#;
        let Some(Shown::Change { diff, .. }) = call("write_file", write, Some(dir.path())) else {
            panic!()
        };
        assert!(diff.starts_with("--- /dev/null\n"), "{diff}");
        assert_eq!(call("read_file", r#"{"path":"a"}"#, None), None);
    }
}
