//! The keyboard while a turn runs: Esc stops the turn (as Ctrl-C does),
//! and what else is typed is kept for the next prompt instead of being
//! lost or echoed into the answer. Ctrl-C stays a signal (the terminal
//! keeps ISIG). An approval question takes the keyboard over
//! ([`term::KEYBOARD`]) while it asks. With notifications on, the
//! terminal reports focus changes while the turn runs
//! ([`term::report_focus`]); the reports are read here, never taken for
//! an Esc.

use super::{term, tty};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the watch holds the keyboard between looks at the flag.
const POLL: Duration = Duration::from_millis(50);

/// How long after an Esc the rest of a key's sequence (an arrow's
/// `ESC [ A`) may take to arrive: an Esc alone is a key.
const SEQUENCE: Duration = Duration::from_millis(30);

/// The watch of one turn.
pub struct TurnKeys {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<u8>>,
    saved: tty::Mode,
}

impl TurnKeys {
    /// Watch the keyboard until [`TurnKeys::finish`]; Esc calls `stop`.
    /// With `focus`, the terminal reports focus changes meanwhile (it has
    /// the focus as the turn starts: the user just sent a message). `None`
    /// when stdin is not a terminal.
    pub fn start(stop: Arc<dyn Fn() + Send + Sync>, focus: bool) -> Option<TurnKeys> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        let saved = term::get_attr()?;
        // Keys one at a time, not shown; Ctrl-C still a signal.
        term::set_attr(&tty::keys(saved, tty::Keys::Watch));
        if focus {
            // Before the watch starts: a report typed already wins.
            term::set_focused(true);
        }
        let done = Arc::new(AtomicBool::new(false));
        let watching = done.clone();
        let thread = std::thread::Builder::new()
            .name("cogni-keys".into())
            .spawn(move || watch(&watching, &*stop))
            .ok()?;
        if focus {
            term::report_focus(true);
        }
        Some(TurnKeys {
            done,
            thread,
            saved,
        })
    }

    /// Stop watching, put the terminal back (focus reports off: a late
    /// one is a key the line editor ignores); what was typed meanwhile.
    pub fn finish(self) -> Typed {
        self.done.store(true, Ordering::SeqCst);
        let bytes = self.thread.join().unwrap_or_default();
        term::report_focus(false);
        term::set_attr(&self.saved);
        Typed::from_bytes(&bytes)
    }
}

/// Read keys until `done`: Esc alone calls `stop`; the other bytes are
/// kept (escape sequences of other keys dropped, focus reports noted).
fn watch(done: &AtomicBool, stop: &dyn Fn()) -> Vec<u8> {
    let mut typed = Vec::new();
    while !done.load(Ordering::SeqCst) {
        if term::WANTED.load(Ordering::SeqCst) > 0 {
            // A question asks: it has the keyboard until it is answered.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        let _reader = term::KEYBOARD.lock().unwrap_or_else(|e| e.into_inner());
        // A question that came while this waited gets what was typed.
        if !readable(POLL) || term::WANTED.load(Ordering::SeqCst) > 0 {
            continue;
        }
        let Some(byte) = read_byte() else {
            // End of input: nothing more to watch.
            return typed;
        };
        if byte != 0x1b {
            typed.push(byte);
            continue;
        }
        if after_esc() == Esc::Key {
            stop();
        }
    }
    typed
}

pub(super) use tty::{read_byte, readable};

/// What an Esc read from the keyboard was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Esc {
    /// The Esc key (alone, or with Alt and another key, or twice).
    Key,
    /// Another key's sequence (an arrow: `ESC [ A`, `ESC O B`), read;
    /// its last byte (`A` up, `B` down, `C` right, `D` left).
    Sequence(u8),
    /// A focus report, read (and taken note of: [`term::focused`]).
    Focus,
}

/// Read what follows an Esc just read from stdin: the rest of its
/// sequence, when one comes within [`SEQUENCE`].
pub(super) fn after_esc() -> Esc {
    if !readable(SEQUENCE) {
        return Esc::Key;
    }
    match read_byte() {
        // CSI: parameters and intermediates up to a final byte.
        Some(b'[') => {
            let mut body = Vec::new();
            while readable(SEQUENCE) {
                match read_byte() {
                    Some(b) => {
                        body.push(b);
                        if (0x40..=0x7e).contains(&b) {
                            break;
                        }
                    }
                    None => break,
                }
            }
            match body.as_slice() {
                b"I" | b"O" => {
                    term::set_focused(body == b"I");
                    Esc::Focus
                }
                _ => Esc::Sequence(body.last().copied().unwrap_or(0)),
            }
        }
        Some(b'O') => Esc::Sequence(if readable(SEQUENCE) {
            read_byte().unwrap_or(0)
        } else {
            0
        }),
        _ => Esc::Key,
    }
}

/// What was typed while a turn ran: whole lines to run next, in order,
/// and the line begun, for the next prompt.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Typed {
    /// Lines ended with Enter.
    pub lines: Vec<String>,
    /// The line begun.
    pub partial: String,
}

impl Typed {
    /// Bytes typed with the terminal's line editing off: Backspace takes
    /// the last character back, Enter ends a line, other controls go.
    fn from_bytes(bytes: &[u8]) -> Typed {
        let text = String::from_utf8_lossy(bytes);
        let mut typed = Typed::default();
        for c in text.chars() {
            match c {
                '\r' | '\n' => typed.lines.push(std::mem::take(&mut typed.partial)),
                '\u{7f}' | '\u{8}' => {
                    typed.partial.pop();
                }
                c if c.is_control() => {}
                c => typed.partial.push(c),
            }
        }
        typed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_bytes_become_lines_and_the_line_begun() {
        assert_eq!(
            Typed::from_bytes(b"fix it\r/statx\x7fus\rand th\x01en"),
            Typed {
                lines: vec!["fix it".into(), "/status".into()],
                partial: "and then".into(),
            }
        );
        assert_eq!(Typed::from_bytes(b""), Typed::default());
    }
}
