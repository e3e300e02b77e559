//! The keyboard while a turn runs: Esc stops the turn (as Ctrl-C does),
//! and what else is typed is kept for the next prompt instead of being
//! lost or echoed into the answer. Ctrl-C stays a signal (the terminal
//! keeps ISIG). An approval question takes the keyboard over
//! ([`term::KEYBOARD`]) while it asks. With notifications on, the
//! terminal reports focus changes while the turn runs
//! ([`term::report_focus`]); the reports are read here, never taken for
//! an Esc.

use super::term::{self, read_byte, readable, Esc};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the watch holds the keyboard between looks at the flag.
const POLL: Duration = Duration::from_millis(50);

/// The watch of one turn.
pub struct TurnKeys {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<u8>>,
    saved: libc::termios,
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
        let mut quiet = saved;
        // Keys one at a time, not shown; Ctrl-C still a signal.
        quiet.c_lflag &= !(libc::ICANON | libc::ECHO);
        quiet.c_cc[libc::VMIN] = 0;
        quiet.c_cc[libc::VTIME] = 0;
        term::set_attr(&quiet);
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
        if term::after_esc() == Esc::Key {
            stop();
        }
    }
    typed
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
