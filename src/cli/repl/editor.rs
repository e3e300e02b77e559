//! The line editor (rustyline) on its own thread, so the async runtime is
//! never blocked on the keyboard: history persisted under `$COGNI_HOME`,
//! multi-line input (a trailing backslash, or a paste), Tab completion of
//! slash commands and `@path` mentions. Ctrl-C clears a line that has
//! text and reports an interrupt on an empty one; Esc clears the line.

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, CompletionType, ConditionalEventHandler, Config, Context, Editor as Rl, Event,
    EventContext, EventHandler, KeyCode, KeyEvent, Modifiers, Movement, RepeatCount,
};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use tokio::sync::oneshot;

/// How long after an Esc the next byte must come to make an escape
/// sequence with it, in milliseconds.
const ESC_ALONE_MS: u16 = 30;

/// What the user did at the prompt.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    Line(String),
    /// Ctrl-C on an empty line.
    Interrupted,
    /// Ctrl-D, end of input, or the terminal is gone.
    Eof,
    /// Shift-Tab: switch to the next mode; the line typed so far is kept
    /// for the next prompt.
    NextMode(String),
}

/// A prompt: plain, and styled (same width).
pub struct Prompt {
    pub raw: String,
    pub styled: String,
    /// Text already on the line (what was typed before a Shift-Tab).
    pub initial: String,
}

type Request = (Prompt, oneshot::Sender<Input>);

/// Handle to the editor thread.
pub struct Editor {
    requests: mpsc::Sender<Request>,
}

/// What Tab completes: slash command names (kept current by the REPL) and
/// paths under the working directory.
#[derive(Clone)]
pub struct Completions {
    pub commands: Arc<Mutex<Vec<String>>>,
    pub cwd: PathBuf,
}

impl Editor {
    /// Start the editor thread; `history` is the file of earlier input.
    pub fn start(history: Option<PathBuf>, completions: Completions) -> Result<Editor, String> {
        let config = Config::builder()
            .auto_add_history(false)
            .history_ignore_space(true)
            .completion_type(CompletionType::List)
            .bracketed_paste(true)
            // A lone Esc is a key of its own, not the start of Alt-key:
            // the bytes of an escape sequence (arrows, function keys)
            // arrive together, a person's next key does not.
            .keyseq_timeout(Some(ESC_ALONE_MS))
            .build();
        let mut rl: Rl<Helper, rustyline::history::DefaultHistory> =
            Rl::with_config(config).map_err(|e| format!("cannot start the line editor: {e}"))?;
        rl.set_helper(Some(Helper(completions)));
        rl.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(CtrlC)),
        );
        let shift_tab = Arc::new(Mutex::new(None));
        rl.bind_sequence(
            KeyEvent(KeyCode::BackTab, Modifiers::NONE),
            EventHandler::Conditional(Box::new(ShiftTab(shift_tab.clone()))),
        );
        // Esc clears the line, and nothing else: it never changes what the
        // next line means.
        rl.bind_sequence(
            KeyEvent(KeyCode::Esc, Modifiers::NONE),
            EventHandler::Simple(Cmd::Kill(Movement::WholeBuffer)),
        );
        if let Some(path) = &history {
            // A missing file is a first start.
            let _ = rl.load_history(path);
        }
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("cogni-editor".into())
            .spawn(move || editor_thread(rl, incoming, history, shift_tab))
            .map_err(|e| format!("cannot start the line editor: {e}"))?;
        Ok(Editor { requests })
    }

    /// Read one input; the thread does the waiting.
    pub async fn read(&self, prompt: Prompt) -> Input {
        let (tx, rx) = oneshot::channel();
        if self.requests.send((prompt, tx)).is_err() {
            return Input::Eof;
        }
        rx.await.unwrap_or(Input::Eof)
    }
}

fn editor_thread(
    mut rl: Rl<Helper, rustyline::history::DefaultHistory>,
    incoming: mpsc::Receiver<Request>,
    history: Option<PathBuf>,
    shift_tab: Arc<Mutex<Option<String>>>,
) {
    // Ends when the REPL drops its handle.
    while let Ok((prompt, reply)) = incoming.recv() {
        let shown = (prompt.raw.as_str(), prompt.styled.as_str());
        let read = rl.readline_with_initial(&shown, (prompt.initial.as_str(), ""));
        let input = match read {
            Ok(line) => {
                if !line.trim().is_empty() && rl.add_history_entry(line.as_str()).unwrap_or(false) {
                    if let Some(path) = &history {
                        let _ = rl.append_history(path);
                    }
                }
                Input::Line(join_continuations(&line))
            }
            Err(ReadlineError::Interrupted) => {
                match shift_tab.lock().ok().and_then(|mut s| s.take()) {
                    Some(line) => Input::NextMode(line),
                    None => Input::Interrupted,
                }
            }
            Err(_) => Input::Eof,
        };
        if reply.send(input).is_err() {
            break;
        }
    }
}

/// Lines ending with a backslash continue on the next one.
fn join_continuations(text: &str) -> String {
    text.replace("\\\n", "\n")
}

/// Shift-Tab: leave the line (kept in the slot) so the REPL can switch
/// mode and prompt again with it.
struct ShiftTab(Arc<Mutex<Option<String>>>);

impl ConditionalEventHandler for ShiftTab {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(ctx.line().to_string());
        }
        Some(Cmd::Interrupt)
    }
}

/// Ctrl-C: clear the line when it has text, else report an interrupt.
struct CtrlC;

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() {
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

struct Helper(Completions);

impl rustyline::Helper for Helper {}
impl Hinter for Helper {
    type Hint = String;
}
impl Highlighter for Helper {}

impl Validator for Helper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Completer for Helper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let commands = self
            .0
            .commands
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        Ok(complete(line, pos, &commands, &self.0.cwd))
    }
}

/// Completion candidates for the word before `pos`: a slash command at the
/// start of the line, or a path after `@`.
pub fn complete(line: &str, pos: usize, commands: &[String], cwd: &Path) -> (usize, Vec<String>) {
    let before = &line[..pos];
    let start = before
        .rfind(char::is_whitespace)
        .map(|i| i + 1)
        .unwrap_or(0);
    let word = &before[start..];
    if start == 0 && word.starts_with('/') {
        let mut found: Vec<String> = commands
            .iter()
            .filter(|c| c.starts_with(word))
            .cloned()
            .collect();
        found.sort();
        return (0, found);
    }
    if let Some(partial) = word.strip_prefix('@') {
        let (dir, prefix) = match partial.rfind('/') {
            Some(i) => (&partial[..=i], &partial[i + 1..]),
            None => ("", partial),
        };
        let Ok(entries) = std::fs::read_dir(cwd.join(dir)) else {
            return (start, Vec::new());
        };
        let mut found: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.'))
                {
                    return None;
                }
                let slash = if e.file_type().ok()?.is_dir() {
                    "/"
                } else {
                    ""
                };
                Some(format!("@{dir}{name}{slash}"))
            })
            .collect();
        found.sort();
        return (start, found);
    }
    (start, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_commands_at_the_start_and_paths_after_at() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        let commands = vec!["/help".to_string(), "/history".into(), "/model".into()];
        assert_eq!(
            complete("/h", 2, &commands, dir.path()),
            (0, vec!["/help".to_string(), "/history".into()])
        );
        assert_eq!(complete("say /h", 6, &commands, dir.path()).1.len(), 0);
        assert_eq!(
            complete("look at @s", 10, &commands, dir.path()),
            (8, vec!["@src/".to_string()])
        );
        assert_eq!(
            complete("@src/m", 6, &commands, dir.path()),
            (0, vec!["@src/main.rs".to_string()])
        );
    }

    #[test]
    fn backslash_newline_joins_lines() {
        assert_eq!(join_continuations("one \\\ntwo"), "one \ntwo");
    }
}
