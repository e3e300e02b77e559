//! Menus on the terminal: a few lines redrawn in place while keys move a
//! selection, until a key ends them. The picker of `cogni resume` and the
//! model's questions (`ask_user`) are menus.

use super::keys::{after_esc, read_byte, Esc};
use super::term;
use std::io::Write;

/// What a key does in a menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Up,
    Down,
    Enter,
    /// Esc, Ctrl-C or Ctrl-D.
    Cancel,
    Backspace,
    Tab,
    Char(char),
}

/// A menu: its lines, and what keys do to it.
pub(super) trait Menu {
    /// How it ends.
    type Outcome;
    /// Its lines, each at most `width` columns wide (a longer one would
    /// wrap, and the redraw would go up too few rows).
    fn lines(&self, width: usize) -> Vec<String>;
    /// `key` was pressed: the outcome, when the key ends the menu.
    fn press(&mut self, key: Key) -> Option<Self::Outcome>;
}

/// Show `menu` below the cursor and redraw it after each key until a key
/// ends it; its lines are erased then. `None` when stdin is not a terminal
/// or its input ends. Blocking; it holds the keyboard meanwhile (the
/// watch of a running turn steps aside), with keys read one at a time,
/// unechoed, and Ctrl-C a key rather than a signal.
pub(super) fn run<M: Menu>(menu: &mut M) -> Option<M::Outcome> {
    let _keyboard = term::take_keyboard();
    let saved = term::get_attr()?;
    term::set_attr(&super::tty::keys(saved, super::tty::Keys::All));
    let mut out = std::io::stdout().lock();
    let mut drawn = 0;
    let outcome = loop {
        let lines = menu.lines(term::width());
        if drawn > 0 {
            let _ = write!(out, "\x1b[{drawn}F");
        }
        let _ = write!(out, "\x1b[J{}\r\n", lines.join("\r\n"));
        let _ = out.flush();
        drawn = lines.len();
        let Some(key) = read_key() else {
            break None;
        };
        if let Some(outcome) = menu.press(key) {
            break Some(outcome);
        }
    };
    let _ = write!(out, "\x1b[{drawn}F\x1b[J");
    let _ = out.flush();
    term::set_attr(&saved);
    outcome
}

/// The next key: arrows are `ESC [ A` and `ESC [ B` (or `ESC O A`); an
/// Esc alone cancels; focus reports and other keys' sequences are read
/// past. `None` at the end of input.
fn read_key() -> Option<Key> {
    loop {
        let byte = read_byte()?;
        let key = match byte {
            b'\r' | b'\n' => Key::Enter,
            0x03 | 0x04 => Key::Cancel,
            0x7f | 0x08 => Key::Backspace,
            b'\t' => Key::Tab,
            0x1b => match after_esc() {
                Esc::Key => Key::Cancel,
                Esc::Sequence(b'A') => Key::Up,
                Esc::Sequence(b'B') => Key::Down,
                _ => continue,
            },
            b if b < 0x20 => continue,
            b => {
                // A character of several bytes: read the rest.
                let len = match b {
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    0xf0..=0xf7 => 4,
                    _ => 1,
                };
                let mut bytes = vec![b];
                for _ in 1..len {
                    bytes.push(read_byte()?);
                }
                match String::from_utf8_lossy(&bytes).chars().next() {
                    Some(c) => Key::Char(c),
                    None => continue,
                }
            }
        };
        return Some(key);
    }
}
