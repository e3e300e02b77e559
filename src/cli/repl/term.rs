//! The terminal: what it can show, its width, one-key reads, and putting
//! it back the way it was on every way out (panics included).

use super::{keys, tty};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// What the output may contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// SGR colors and styles.
    pub color: bool,
    /// Cursor control (`\r`, erase line): a spinner can be drawn.
    pub ansi: bool,
}

impl Caps {
    /// From the environment: stdout a terminal, `TERM` not `dumb`, and for
    /// color also no `NO_COLOR` and no `--no-color`.
    pub fn detect(no_color: bool) -> Self {
        let tty = std::io::stdout().is_terminal();
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let ansi = tty && !dumb;
        Caps {
            ansi,
            color: ansi && !no_color && std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

/// Columns of the terminal on stdout (80 when unknown).
pub fn width() -> usize {
    tty::columns(false).unwrap_or_else(|| {
        // Not a terminal: `COLUMNS` when it is set, as shells export it.
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .filter(|&c: &usize| c > 0)
            .unwrap_or(80)
    })
}

/// `text` cut to `width` visible characters (escape sequences do not
/// count), with `…` where it was cut.
pub fn fit(text: &str, width: usize) -> String {
    let width = width.max(8);
    let mut out = String::new();
    let mut visible = 0;
    let mut chars = text.chars().peekable();
    let mut styled = false;
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            out.push(c);
            styled = true;
            for e in chars.by_ref() {
                out.push(e);
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        if visible + 1 == width && chars.peek().is_some() {
            out.push('…');
            if styled {
                out.push_str("\x1b[0m");
            }
            return out;
        }
        out.push(c);
        visible += 1;
    }
    out
}

/// The terminal settings of stdin at start, restored on every exit.
static SAVED: OnceLock<tty::Mode> = OnceLock::new();

pub(super) use tty::{get as get_attr, set as set_attr};

/// Remember the terminal's settings and restore them if cogni panics (and,
/// on Windows, let the console show ANSI styles).
pub fn guard_panics() {
    tty::enable_sequences();
    if let Some(t) = get_attr() {
        let _ = SAVED.set(t);
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Put the terminal back as it was at start (focus reporting off too).
pub fn restore() {
    report_focus(false);
    if let Some(t) = SAVED.get() {
        set_attr(t);
    }
}

/// xterm's focus reporting (mode 1004) is on: the terminal sends `ESC [ I`
/// when it gains the focus and `ESC [ O` when it loses it.
static REPORTING: AtomicBool = AtomicBool::new(false);

/// The terminal has the focus, as it last reported (a terminal that
/// reports nothing has it).
static FOCUSED: AtomicBool = AtomicBool::new(true);

/// Turn focus reporting on or off (a no-op when it already is). Written
/// straight to stdout's descriptor: this also runs in the panic hook.
pub fn report_focus(on: bool) {
    if REPORTING.swap(on, Ordering::SeqCst) == on {
        return;
    }
    let mode: &[u8] = if on { b"\x1b[?1004h" } else { b"\x1b[?1004l" };
    tty::write_stdout(mode);
}

/// Whether the terminal has the focus, as far as cogni knows.
pub fn focused() -> bool {
    FOCUSED.load(Ordering::SeqCst)
}

/// Take the terminal's word (or the user's typing) for where the focus is.
pub(super) fn set_focused(focused: bool) {
    FOCUSED.store(focused, Ordering::SeqCst);
}

/// One reader of the keyboard at a time: an approval question
/// ([`read_key`], [`cooked`]), a menu ([`super::menu`]) and the watch of a running turn
/// ([`super::keys`]), which steps aside while [`WANTED`] is set.
pub(super) static KEYBOARD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Readers waiting for [`KEYBOARD`] (not the watch), and questions being
/// asked ([`Wanted`]).
pub(super) static WANTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A question wants the keyboard: while this lives the watch of a running
/// turn reads nothing more, so a key typed as soon as the question shows
/// is the question's.
pub(super) struct Wanted(());

impl Wanted {
    pub(super) fn new() -> Wanted {
        WANTED.fetch_add(1, Ordering::SeqCst);
        Wanted(())
    }
}

impl Drop for Wanted {
    fn drop(&mut self) {
        WANTED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Hold the keyboard for a question (or a menu).
pub(super) fn take_keyboard() -> std::sync::MutexGuard<'static, ()> {
    let _wanted = Wanted::new();
    KEYBOARD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run `f` (which reads a line from stdin) with the keyboard held and the
/// terminal as it was at start (echo, line editing, no focus reports in
/// the line), then as it was.
pub fn cooked<T>(f: impl FnOnce() -> T) -> T {
    let _reader = take_keyboard();
    let now = get_attr();
    let reporting = REPORTING.load(Ordering::SeqCst);
    restore();
    let result = f();
    if let Some(t) = now {
        set_attr(&t);
    }
    report_focus(reporting);
    result
}

/// Read one key from stdin without waiting for Enter and without echo;
/// `None` when stdin is not a terminal or at end of input. Blocking. The
/// sequences of other keys (arrows) and focus reports are read past; Esc
/// is the byte 0x1b.
pub fn read_key() -> Option<u8> {
    let _reader = take_keyboard();
    let before = get_attr()?;
    set_attr(&tty::keys(before, tty::Keys::All));
    struct Restore(tty::Mode);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_attr(&self.0);
        }
    }
    let _restore = Restore(before);
    loop {
        let byte = keys::read_byte()?;
        if byte != 0x1b || keys::after_esc() == keys::Esc::Key {
            return Some(byte);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_counts_visible_characters_only() {
        assert_eq!(fit("short", 80), "short");
        assert_eq!(fit("abcdefghijkl", 10), "abcdefghi…");
        let painted = "\x1b[32m✓\x1b[0m shell 12 ms and a long tail";
        let out = fit(painted, 12);
        assert!(out.starts_with("\x1b[32m✓\x1b[0m shell"), "{out:?}");
        assert!(out.ends_with("…\x1b[0m"), "{out:?}");
    }
}
