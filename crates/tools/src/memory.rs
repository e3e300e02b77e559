//! Memory: notes that outlive a session. The user's in
//! `$COGNI_HOME/memory.md`, the project's in `.cogni/memory.md`; the most
//! relevant ones (by keyword match with the task) go into the system
//! prompt's memory section, and the `remember` tool adds a dated note to
//! the project's file (docs/memory.md).
//!
//! A note is a list item (`- ` or `* `, with its indented continuation
//! lines) or a paragraph; headings and blank lines only separate notes.

use super::fs::{read_text_limited, stopped_before_commit, SPEC_FILE_MAX_BYTES};
use super::{parse_args, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{SandboxMode, ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Default cap of the memory section, in bytes.
pub const DEFAULT_MAX_BYTES: usize = 4096;

/// Longest note `remember` takes, in characters.
pub const MAX_NOTE_CHARS: usize = 500;

/// Where a session's notes are.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryFiles {
    /// `$COGNI_HOME/memory.md`.
    pub user: PathBuf,
    /// `.cogni/memory.md` at the project's root (the repository's, else
    /// the working directory).
    pub project: PathBuf,
    /// The memory section's size cap in bytes.
    pub max_bytes: usize,
}

/// Whose a note is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The project's `.cogni/memory.md`.
    Project,
    /// The user's `$COGNI_HOME/memory.md`; marked `(user)` in the memory
    /// section.
    User,
}

/// One note of a memory file.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// Which file it is from.
    pub scope: Scope,
    /// The note's text, trimmed.
    pub text: String,
}

/// The notes of a memory file's text, in order.
pub fn parse_notes(text: &str) -> Vec<String> {
    let mut notes = Vec::new();
    let mut current: Option<String> = None;
    let mut flush = |current: &mut Option<String>| {
        if let Some(note) = current.take() {
            let note = note.trim().to_string();
            if !note.is_empty() {
                notes.push(note);
            }
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        let item = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "));
        if trimmed.is_empty() || trimmed.starts_with('#') {
            flush(&mut current);
        } else if let Some(item) = item.filter(|_| !line.starts_with([' ', '\t'])) {
            flush(&mut current);
            current = Some(item.to_string());
        } else if let Some(note) = current.as_mut() {
            note.push(' ');
            note.push_str(trimmed);
        } else {
            current = Some(trimmed.to_string());
        }
    }
    flush(&mut current);
    notes
}

impl MemoryFiles {
    /// Every note: the project's first, then the user's. Missing or
    /// unreadable files (not a regular file, larger than
    /// [`SPEC_FILE_MAX_BYTES`]) have none.
    pub fn notes(&self) -> Vec<Note> {
        let read = |path: &Path, scope| {
            read_text_limited(path, SPEC_FILE_MAX_BYTES)
                .map(|text| parse_notes(&text))
                .unwrap_or_default()
                .into_iter()
                .map(move |text| Note { scope, text })
        };
        read(&self.project, Scope::Project)
            .chain(read(&self.user, Scope::User))
            .collect()
    }

    /// The memory section for a task: the notes that share the most words
    /// with `query` first (ties keep the files' order: the project's, then
    /// the user's), as long as they fit `max_bytes`; `None` without notes.
    pub fn select(&self, query: &str) -> Option<String> {
        select(self.notes(), query, self.max_bytes)
    }

    /// Remove the project's `n`th note (from 1); the file is written again
    /// with its notes as a list. Returns the note removed.
    pub fn forget(&self, n: usize) -> Result<String, String> {
        let text =
            read_text_limited(&self.project, SPEC_FILE_MAX_BYTES).map_err(|e| e.to_string())?;
        let mut notes = parse_notes(&text);
        if n == 0 || n > notes.len() {
            return Err(format!(
                "there is no note {n}: the project has {}",
                notes.len()
            ));
        }
        let gone = notes.remove(n - 1);
        let mut kept = String::from("# Project notes\n\n");
        for note in &notes {
            kept.push_str(&format!("- {note}\n"));
        }
        super::fs::write_atomic(&self.project, kept.as_bytes())
            .map(|_| gone)
            .map_err(|e| format!("cannot write {}: {e}", self.project.display()))
    }

    /// Append `note`, dated `date` (`YYYY-MM-DD`), to the project's file:
    /// a regular file (a symlink there is not followed, a FIFO not waited
    /// on).
    pub fn remember(&self, note: &str, date: &str) -> std::io::Result<()> {
        if let Some(dir) = self.project.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut options,
            libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
        );
        // A symlink or junction is opened as itself, then refused below.
        #[cfg(windows)]
        std::os::windows::fs::OpenOptionsExt::custom_flags(
            &mut options,
            windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT,
        );
        let mut file = options.open(&self.project)?;
        let meta = file.metadata()?;
        if !meta.is_file() || meta.file_type().is_symlink() {
            return Err(std::io::Error::other(format!(
                "{} is not a regular file",
                self.project.display()
            )));
        }
        let starts_fresh = meta.len() == 0;
        let header = if starts_fresh {
            "# Project notes\n\n"
        } else {
            ""
        };
        file.write_all(format!("{header}- {date}: {note}\n").as_bytes())?;
        file.sync_all()
    }
}

/// Lower-case words of three or more letters or digits, without the most
/// common English ones.
fn keywords(text: &str) -> HashSet<String> {
    const COMMON: &[&str] = &[
        "the", "and", "for", "with", "that", "this", "are", "was", "you", "your", "use", "uses",
        "from", "not", "all", "can", "has", "have", "our", "out", "into", "when", "then", "than",
        "its", "but", "any", "one", "how", "what", "please", "make", "sure",
    ];
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !COMMON.contains(&w.as_str()))
        .collect()
}

fn select(notes: Vec<Note>, query: &str, max_bytes: usize) -> Option<String> {
    let wanted = keywords(query);
    let mut scored: Vec<(usize, usize, Note)> = notes
        .into_iter()
        .enumerate()
        .map(|(i, note)| (keywords(&note.text).intersection(&wanted).count(), i, note))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut text = String::new();
    for (_, _, note) in scored {
        let line = format!(
            "- {}{}\n",
            note.text,
            if note.scope == Scope::User {
                " (user)"
            } else {
                ""
            }
        );
        if text.len() + line.len() > max_bytes {
            continue;
        }
        text.push_str(&line);
    }
    (!text.is_empty()).then_some(text)
}

/// `remember {note}`: a dated note in the project's memory file.
pub struct RememberTool {
    files: MemoryFiles,
}

impl RememberTool {
    /// The tool, writing to `files.project`.
    pub fn new(files: MemoryFiles) -> Self {
        RememberTool { files }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    note: String,
}

impl Tool for RememberTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "remember".into(),
            description: format!(
                "Save a short note for later sessions in this project (a fact about the \
                 project, the user's preference, a command that works). One line, at most \
                 {MAX_NOTE_CHARS} characters; it is dated and shown in future system prompts."
            ),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"note": {"type": "string"}},
                    "required": ["note"],
                    "additionalProperties": false
                }),
            },
            read_only: false,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match parse_args("remember", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let note = args.note.split_whitespace().collect::<Vec<_>>().join(" ");
            if note.is_empty() {
                return ToolResult::error("the note is empty");
            }
            if note.chars().count() > MAX_NOTE_CHARS {
                return ToolResult::error(format!(
                    "the note has {} characters; keep it under {MAX_NOTE_CHARS}",
                    note.chars().count()
                ));
            }
            if ctx.sandbox.mode == SandboxMode::ReadOnly {
                return ToolResult::error(
                    "cannot remember: the sandbox is read-only (plan mode); say the note instead",
                );
            }
            let files = self.files.clone();
            let commits = ctx.commits.clone();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let (date, _) = cogni_protocol::utc_date_time(now);
            let saved = tokio::task::spawn_blocking(move || {
                if !commits.admit() {
                    return Err(stopped_before_commit());
                }
                files.remember(&note, &date)
            })
            .await;
            match saved {
                Ok(Ok(())) => ToolResult::ok(format!(
                    "remembered in {}",
                    super::paths::display(&ctx.cwd, &self.files.project)
                )),
                Ok(Err(e)) => ToolResult::error(format!("cannot remember: {e}")),
                Err(e) => ToolResult::error(format!("cannot remember: {e}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_items_and_paragraphs() {
        let text = "# Project notes\n\n- tests run with `make check`\n- the API\n  lives in api/\n\nA paragraph\nof two lines.\n* starred\n";
        assert_eq!(
            parse_notes(text),
            [
                "tests run with `make check`",
                "the API lives in api/",
                "A paragraph of two lines.",
                "starred"
            ]
        );
        assert!(parse_notes("# only a heading\n\n").is_empty());
    }

    #[test]
    fn the_most_relevant_notes_come_first_within_the_cap() {
        let note = |scope, text: &str| Note {
            scope,
            text: text.into(),
        };
        let notes = vec![
            note(Scope::Project, "deploys go through the staging cluster"),
            note(
                Scope::Project,
                "tests run with make check, never cargo test",
            ),
            note(Scope::User, "prefers tabs over spaces"),
        ];
        let text = select(notes.clone(), "fix the failing tests", 4096).unwrap();
        assert!(text.starts_with("- tests run with make check"), "{text}");
        assert!(
            text.ends_with("- prefers tabs over spaces (user)\n"),
            "{text}"
        );
        // Within the cap: the most relevant note that fits, then others that fit.
        let text = select(notes.clone(), "tests", 40).unwrap();
        assert_eq!(
            text, "- prefers tabs over spaces (user)\n",
            "the first two are too long"
        );
        let text = select(notes, "tests", 50).unwrap();
        assert_eq!(text, "- tests run with make check, never cargo test\n");
        assert!(select(Vec::new(), "x", 100).is_none());
    }

    #[test]
    fn remember_appends_a_dated_note_to_a_new_or_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let files = MemoryFiles {
            user: dir.path().join("home/memory.md"),
            project: dir.path().join("work/.cogni/memory.md"),
            max_bytes: DEFAULT_MAX_BYTES,
        };
        files
            .remember("tests need `make check`", "2026-11-24")
            .unwrap();
        files
            .remember("the API lives in api/", "2026-11-25")
            .unwrap();
        let text = std::fs::read_to_string(&files.project).unwrap();
        assert_eq!(
            text,
            "# Project notes\n\n- 2026-11-24: tests need `make check`\n- 2026-11-25: the API lives in api/\n"
        );
        assert_eq!(files.notes().len(), 2);
        assert_eq!(
            files.forget(1).unwrap(),
            "2026-11-24: tests need `make check`"
        );
        assert_eq!(
            std::fs::read_to_string(&files.project).unwrap(),
            "# Project notes\n\n- 2026-11-25: the API lives in api/\n"
        );
        assert!(files.forget(2).unwrap_err().contains("no note 2"));
    }
}
