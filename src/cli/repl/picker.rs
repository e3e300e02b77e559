//! `cogni resume` without an id: a picker of the saved sessions of this
//! directory (Tab: of every directory), newest first: ↑ and ↓ move, typing
//! filters by prompt or id, Enter opens, Esc or Ctrl-C cancels.

use super::menu::{self, Key, Menu};
use super::term;
use crate::cli::render::strip_terminal_controls;
use crate::store::{Store, Summary};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Sessions shown at once.
const ROWS: usize = 10;

/// The picker's state: the sessions, the filter, the selection.
struct Picker {
    sessions: Vec<Summary>,
    cwd: PathBuf,
    /// Every directory's sessions, not only this one's.
    all: bool,
    filter: String,
    selected: usize,
    /// Seconds since the Unix epoch, for ages.
    now: u64,
    /// The selection is shown in reverse video.
    color: bool,
}

/// How the picker ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Chosen(String),
    Cancelled,
}

impl Picker {
    fn visible(&self) -> Vec<&Summary> {
        let filter = self.filter.to_lowercase();
        self.sessions
            .iter()
            .filter(|s| self.all || s.cwd == self.cwd)
            .filter(|s| {
                filter.is_empty()
                    || s.first_prompt.to_lowercase().contains(&filter)
                    || s.id.starts_with(&filter)
            })
            .collect()
    }
}

impl Menu for Picker {
    type Outcome = Outcome;

    fn press(&mut self, key: Key) -> Option<Outcome> {
        let count = self.visible().len();
        match key {
            Key::Up => self.selected = self.selected.saturating_sub(1),
            Key::Down => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            Key::Enter => {
                return self
                    .visible()
                    .get(self.selected)
                    .map(|s| Outcome::Chosen(s.id.clone()))
            }
            Key::Cancel => return Some(Outcome::Cancelled),
            Key::Backspace => {
                self.filter.pop();
                self.selected = 0;
            }
            Key::Tab => {
                self.all = !self.all;
                self.selected = 0;
            }
            Key::Char(c) => {
                self.filter.push(c);
                self.selected = 0;
            }
        }
        None
    }

    fn lines(&self, width: usize) -> Vec<String> {
        let visible = self.visible();
        let scope = if self.all {
            "every directory".to_string()
        } else {
            strip_terminal_controls(&self.cwd.display().to_string()).into_owned()
        };
        let mut lines = vec![
            format!("resume a session of {scope} · ↑↓ move · type to filter · Enter opens · Tab: {} · Esc cancels",
                if self.all { "this directory" } else { "every directory" }),
            format!("filter: {}", self.filter),
        ];
        if visible.is_empty() {
            lines.push("  (no session matches)".into());
        }
        let first = self.selected.saturating_sub(ROWS - 1);
        for (i, s) in visible.iter().enumerate().skip(first).take(ROWS) {
            let prompt =
                strip_terminal_controls(s.first_prompt.lines().next().unwrap_or("")).into_owned();
            let prompt = if prompt.is_empty() {
                "(no prompt)".to_string()
            } else {
                prompt
            };
            let row = format!(
                "{} {:>8}  {:>7}  {}",
                if i == self.selected { '›' } else { ' ' },
                age(self.now.saturating_sub(s.updated_at)),
                size(s.bytes),
                prompt
            );
            let row = term::fit(&row, width);
            lines.push(if i == self.selected && self.color {
                format!("\x1b[7m{row}\x1b[0m")
            } else {
                row
            });
        }
        lines
    }
}

/// `secs` as an age: `42 s ago`, `5 min ago`, `3 h ago`, `12 d ago`.
fn age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// `bytes` as `512 B`, `12 KB`, `3.4 MB`.
fn size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{} KB", bytes / 1024),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// Let the user pick a saved session of `cwd` on the terminal: its id,
/// or `None` when they cancel.
pub fn pick(home: &Path, cwd: &Path, color: bool) -> Result<Option<String>, String> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(
            "no terminal to pick a session on: name one (`cogni resume ID`; `cogni sessions` lists them) or use --last"
                .into(),
        );
    }
    let store = Store::new(home);
    let sessions = store.list().map_err(|e| e.to_string())?;
    if sessions.is_empty() {
        return Err(format!("no saved sessions in {}", store.dir().display()));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut sessions = sessions;
    sessions.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
    let here = sessions.iter().any(|s| s.cwd == cwd);
    let mut picker = Picker {
        sessions,
        cwd: cwd.to_path_buf(),
        all: !here,
        filter: String::new(),
        selected: 0,
        now,
        color,
    };
    Ok(match menu::run(&mut picker) {
        Some(Outcome::Chosen(id)) => Some(id),
        Some(Outcome::Cancelled) | None => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, cwd: &str, prompt: &str, updated_at: u64) -> Summary {
        Summary {
            id: id.into(),
            started_at: updated_at,
            cwd: cwd.into(),
            first_prompt: prompt.into(),
            tokens: 0,
            updated_at,
            bytes: 2048,
        }
    }

    fn picker() -> Picker {
        Picker {
            sessions: vec![
                session("a1", "/repo", "fix the parser", 1000),
                session("b2", "/other", "write docs", 900),
                session("c3", "/repo", "add tests\x1b]0;evil\x07", 100),
            ],
            cwd: "/repo".into(),
            all: false,
            filter: String::new(),
            selected: 0,
            now: 1060,
            color: false,
        }
    }

    #[test]
    fn keys_move_filter_and_choose_among_this_directorys_sessions() {
        let mut p = picker();
        let lines = p.lines(100);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(
            lines[2] == "› 1 min ago     2 KB  fix the parser",
            "{lines:#?}"
        );
        assert!(!lines.iter().any(|l| l.contains("write docs")));
        assert!(!lines.iter().any(|l| l.contains('\x1b')), "{lines:#?}");
        p.press(Key::Down);
        p.press(Key::Down);
        assert_eq!(p.press(Key::Enter), Some(Outcome::Chosen("c3".into())));
        for c in "PARSER".chars() {
            p.press(Key::Char(c));
        }
        assert_eq!(p.visible().len(), 1);
        assert_eq!(p.press(Key::Enter), Some(Outcome::Chosen("a1".into())));
        p.press(Key::Char('x'));
        assert!(p
            .lines(100)
            .iter()
            .any(|l| l.contains("no session matches")));
        assert_eq!(p.press(Key::Enter), None, "nothing to choose");
        p.filter.clear();
        p.press(Key::Tab);
        assert_eq!(p.visible().len(), 3, "every directory");
        assert_eq!(p.press(Key::Cancel), Some(Outcome::Cancelled));
    }

    #[test]
    fn ages_and_sizes_read_as_people_say_them() {
        assert_eq!(age(5), "5 s ago");
        assert_eq!(age(300), "5 min ago");
        assert_eq!(age(7200), "2 h ago");
        assert_eq!(age(3 * 86_400), "3 d ago");
        assert_eq!(size(10), "10 B");
        assert_eq!(size(12 * 1024), "12 KB");
        assert_eq!(size(3 * 1_048_576 + 400_000), "3.4 MB");
    }
}
