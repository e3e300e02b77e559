//! `/undo`, `/rewind` and `/diff` in the REPL (docs/checkpoints.md): the
//! work is [`crate::cli::undo`]'s; asking about paths changed by hand is
//! the REPL's, one key on a terminal, "cancel" otherwise.

use super::commands::Flow;
use super::term;
use super::Repl;
use crate::cli::render::paint;
use crate::cli::undo::{self, Settle};
use crate::cli::view::diff_lines;
use std::io::{IsTerminal, Write};

/// `/undo [--force|--keep-mine]`: the last turn's files and its place in
/// the conversation.
pub async fn undo(r: &mut Repl, args: &str) -> Flow {
    take_back(r, args, true).await
}

/// `/rewind`: list the turns; `/rewind N [both|files|conversation]`: go
/// back to before turn N.
pub async fn rewind(r: &mut Repl, args: &str) -> Flow {
    take_back(r, args, false).await
}

async fn take_back(r: &mut Repl, args: &str, last: bool) -> Flow {
    let asked = match undo::parse(args, last) {
        Ok(Some(asked)) => asked,
        Ok(None) => {
            let list = r.session.turn_checkpoints();
            if list.is_empty() {
                r.sink.say("no checkpoints yet: nothing to rewind");
            } else {
                let mut text = String::from("turns (/rewind N goes back to before one):\n");
                text.push_str(&undo::list_turns(list).join("\n"));
                r.sink.say(&text);
            }
            return Flow::Continue;
        }
        Err(usage) => {
            r.sink.error(&usage);
            return Flow::Continue;
        }
    };
    let prepared = match undo::prepare(&mut r.session, asked, &r.sink).await {
        Ok(prepared) => prepared,
        Err(e) => {
            r.sink.error(&e);
            return Flow::Continue;
        }
    };
    r.sink.say(&prepared.text);
    let settle = match prepared.settled() {
        Some(settle) => settle,
        None if prepared.conflicts().is_empty() => Settle::Overwrite,
        None => {
            let color = r.sink.caps().color;
            let count = prepared.conflicts().len();
            tokio::task::spawn_blocking(move || ask(color, count))
                .await
                .unwrap_or(Settle::Cancel)
        }
    };
    match undo::finish(&mut r.session, prepared, settle).await {
        Ok(done) => r.sink.note(&done),
        Err(e) => r.sink.error(&e),
    }
    Flow::Continue
}

/// Ask what to do with `count` paths changed by hand: one key on a
/// terminal (o, k; anything else cancels); no terminal: cancel.
fn ask(color: bool, count: usize) -> Settle {
    let mut out = std::io::stdout().lock();
    let question = format!(
        "{count} path(s) above were changed by hand after the turn: [o]verwrite them, [k]eep yours and restore the rest, or [c]ancel? "
    );
    let _ = write!(out, "{}", paint(color, "33", &question));
    let _ = out.flush();
    if !std::io::stdin().is_terminal() {
        let _ = writeln!(out, "cancel (no terminal to ask)");
        return Settle::Cancel;
    }
    let (settle, label) = match term::read_key().map(|k| k.to_ascii_lowercase()) {
        Some(b'o') => (Settle::Overwrite, "overwrite"),
        Some(b'k') => (Settle::KeepMine, "keep mine"),
        _ => (Settle::Cancel, "cancel"),
    };
    let _ = writeln!(out, "{label}");
    settle
}

/// `/diff`: everything changed since the session's first turn, coloured
/// on a colour terminal.
pub async fn diff(r: &mut Repl, _: &str) -> Flow {
    let color = r.sink.caps().color;
    match r.session.checkpoint_diff(&r.sink).await {
        Ok(diff) if diff.trim().is_empty() => {
            r.sink.say("no changes since the session's first turn")
        }
        // The diff shows the files' contents: none of their terminal
        // controls reach the screen (`diff_lines` shows them as escapes).
        Ok(diff) => r.sink.say(&diff_lines(diff.trim_end(), color).join("\n")),
        Err(e) => r.sink.error(&e.to_string()),
    }
    Flow::Continue
}
