//! Notifications: the terminal is told when a turn ended or an approval
//! question waits while it does not have the focus (the bell, OSC 9 or
//! OSC 777: `[repl] notify`), and Notification hooks hear `idle_prompt`
//! once the prompt has waited a while after a turn (`[repl]
//! notify_idle_secs`).
//!
//! The focus is what the terminal reports while a turn runs (xterm's
//! focus reporting, read by [`super::keys`] and [`term::read_key`]); it
//! has the focus when the turn starts (the user just sent a message), so
//! a terminal that reports nothing is never notified. What a notification
//! says is cogni's own words and, for a question, the tool and its
//! command on one line with every control character taken out: nothing
//! the model wrote can end the sequence and start one of its own.

use super::editor::{Editor, Input, Prompt};
use super::term::{self, Caps};
use super::Repl;
use crate::agent::{AgentError, Notice, TurnResult};
use crate::cli::render::one_line;
use crate::config::{Notify, Repl as Settings};
use crate::protocol::{ApprovalRequest, TurnOutcome};
use crate::transcript::format_ms;
use std::io::Write;
use std::time::Duration;

/// How the terminal is notified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// BEL.
    Bell,
    /// `ESC ] 9 ; MESSAGE BEL`.
    Osc9,
    /// `ESC ] 777 ; notify ; TITLE ; BODY BEL`.
    Osc777,
}

/// The terminal's notifications. Off by default (the REPL in front of an
/// ACP agent).
#[derive(Debug, Clone, Copy, Default)]
pub struct Notifier {
    /// `None`: off.
    method: Option<Method>,
    /// Turns shorter than this end without one.
    min: Duration,
}

impl Notifier {
    /// As `settings` say, on this terminal, in this environment (`env`
    /// reads a variable): off when stdout is not a terminal (or a dumb
    /// one) and when `CI` is set.
    pub fn new(settings: &Settings, caps: Caps, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let ci = env("CI").is_some_and(|v| !v.is_empty());
        let method = match settings.notify {
            _ if !caps.ansi || ci => None,
            Notify::Off => None,
            Notify::Bell => Some(Method::Bell),
            Notify::Osc9 => Some(Method::Osc9),
            Notify::Osc777 => Some(Method::Osc777),
            Notify::Auto => Some(auto(env)),
        };
        Notifier {
            method,
            min: settings.notify_min,
        }
    }

    /// It may notify: the terminal's focus is worth following.
    pub fn enabled(&self) -> bool {
        self.method.is_some()
    }

    /// An approval question about `request` is about to wait for a key.
    pub fn approval(&self, request: &ApprovalRequest) {
        self.send(&question(request));
    }

    /// The model's question (`ask_user`) is about to wait for an answer.
    pub fn question(&self, question: &str) {
        self.send(&format!("question: {}", one_line(question, 80)));
    }

    /// A turn ended after `took`, having failed or not.
    fn turn_ended(&self, took: Duration, failed: bool) {
        if took < self.min {
            return;
        }
        let what = if failed { "failed" } else { "finished" };
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        self.send(&format!("turn {what} ({})", format_ms(ms)));
    }

    /// Notify with `body`, unless the terminal has the focus.
    fn send(&self, body: &str) {
        let Some(method) = self.method else {
            return;
        };
        if term::focused() {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(sequence(method, body).as_bytes());
        let _ = out.flush();
    }
}

/// What a notification of a question about `request` says: its tool and
/// command, each on one line and cut short.
fn question(request: &ApprovalRequest) -> String {
    format!(
        "approval needed: {} `{}`",
        one_line(&request.tool, 40),
        one_line(&request.summary, 80)
    )
}

/// The bytes that notify with `method`: `body` (after `cogni: `, or as
/// the body under the title `cogni`) without any control character.
fn sequence(method: Method, body: &str) -> String {
    let body: String = body.chars().filter(|c| !c.is_control()).collect();
    match method {
        Method::Bell => "\x07".to_string(),
        Method::Osc9 => format!("\x1b]9;cogni: {body}\x07"),
        Method::Osc777 => format!("\x1b]777;notify;cogni;{body}\x07"),
    }
}

/// `notify = "auto"`: OSC 9 where the terminal is known to show it
/// (iTerm2, WezTerm, Ghostty and kitty by `TERM_PROGRAM` or `TERM`,
/// Windows Terminal by `WT_SESSION`), OSC 777 on foot, the bell elsewhere
/// (Terminal.app, VS Code, tmux and screen, the Linux console, ...).
fn auto(env: &dyn Fn(&str) -> Option<String>) -> Method {
    let program = env("TERM_PROGRAM").unwrap_or_default();
    let term = env("TERM").unwrap_or_default();
    if matches!(program.as_str(), "iTerm.app" | "WezTerm" | "ghostty")
        || matches!(term.as_str(), "xterm-kitty" | "xterm-ghostty")
        || env("WT_SESSION").is_some()
    {
        Method::Osc9
    } else if term == "foot" || term.starts_with("foot-") {
        Method::Osc777
    } else {
        Method::Bell
    }
}

/// The REPL's notifications: the terminal's, and the idle notice for
/// Notification hooks.
#[derive(Debug)]
pub struct Notices {
    terminal: Notifier,
    /// How long the prompt waits after a turn before the idle notice.
    idle: Duration,
    /// A turn ended and the prompt after it was not answered yet.
    after_turn: bool,
}

impl Notices {
    /// As `settings` say (see [`Notifier::new`]).
    pub fn new(settings: &Settings, caps: Caps, env: &dyn Fn(&str) -> Option<String>) -> Self {
        Notices {
            terminal: Notifier::new(settings, caps, env),
            idle: settings.notify_idle,
            after_turn: false,
        }
    }

    /// The terminal's notifications, for the approver.
    pub fn terminal(&self) -> Notifier {
        self.terminal
    }

    /// The terminal should report focus changes while a turn runs.
    pub fn follow_focus(&self) -> bool {
        self.terminal.enabled()
    }

    /// A turn that took `took` ended as `result`: the terminal is
    /// notified (not for a turn the user stopped: they are there).
    pub fn turn_ended(&mut self, took: Duration, result: &Result<TurnResult, AgentError>) {
        self.after_turn = true;
        match result {
            Ok(turn) if turn.outcome == TurnOutcome::Interrupted => {}
            Ok(_) => self.terminal.turn_ended(took, false),
            Err(_) => self.terminal.turn_ended(took, true),
        }
    }
}

impl Repl {
    /// Read the next input at `prompt`. After a turn, Notification hooks
    /// hear `idle_prompt` once the prompt has waited `[repl]
    /// notify_idle_secs` (Claude Code's `idle_prompt`), and the read goes
    /// on.
    pub(super) async fn read_input(&mut self, editor: &Editor, prompt: Prompt) -> Input {
        let read = editor.read(prompt);
        if !std::mem::take(&mut self.notices.after_turn) {
            return read.await;
        }
        tokio::pin!(read);
        tokio::select! {
            input = &mut read => input,
            () = tokio::time::sleep(self.notices.idle) => {
                self.session.notify(&Notice::Idle);
                read.await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TERMINAL: Caps = Caps {
        color: true,
        ansi: true,
    };

    fn settings(notify: Notify) -> Settings {
        Settings {
            status_line: true,
            notify,
            notify_min: Settings::NOTIFY_MIN,
            notify_idle: Settings::NOTIFY_IDLE,
        }
    }

    fn method(notify: Notify, caps: Caps, env: &[(&str, &str)]) -> Option<Method> {
        let var = |name: &str| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        Notifier::new(&settings(notify), caps, &var).method
    }

    #[test]
    fn auto_picks_what_the_terminal_shows() {
        for (env, want) in [
            (vec![("TERM_PROGRAM", "iTerm.app")], Method::Osc9),
            (vec![("TERM_PROGRAM", "WezTerm")], Method::Osc9),
            (vec![("TERM_PROGRAM", "ghostty")], Method::Osc9),
            (vec![("TERM", "xterm-kitty")], Method::Osc9),
            (
                vec![("WT_SESSION", "0b1c"), ("TERM", "xterm-256color")],
                Method::Osc9,
            ),
            (vec![("TERM", "foot")], Method::Osc777),
            (vec![("TERM", "foot-extra")], Method::Osc777),
            (vec![("TERM_PROGRAM", "Apple_Terminal")], Method::Bell),
            (
                vec![("TERM_PROGRAM", "tmux"), ("TERM", "tmux-256color")],
                Method::Bell,
            ),
            (vec![("TERM", "xterm-256color")], Method::Bell),
            (vec![], Method::Bell),
        ] {
            assert_eq!(method(Notify::Auto, TERMINAL, &env), Some(want), "{env:?}");
        }
    }

    #[test]
    fn set_methods_win_and_off_is_off_without_a_terminal_and_in_ci() {
        let kitty = [("TERM", "xterm-kitty")];
        assert_eq!(method(Notify::Bell, TERMINAL, &kitty), Some(Method::Bell));
        assert_eq!(method(Notify::Osc777, TERMINAL, &[]), Some(Method::Osc777));
        assert_eq!(method(Notify::Osc9, TERMINAL, &[]), Some(Method::Osc9));
        assert_eq!(method(Notify::Off, TERMINAL, &kitty), None);
        let piped = Caps {
            color: false,
            ansi: false,
        };
        assert_eq!(method(Notify::Osc9, piped, &[]), None);
        assert_eq!(method(Notify::Bell, TERMINAL, &[("CI", "true")]), None);
        assert_eq!(
            method(Notify::Bell, TERMINAL, &[("CI", "")]),
            Some(Method::Bell),
            "set but empty is not CI"
        );
    }

    #[test]
    fn sequences_carry_no_control_character_of_the_message() {
        assert_eq!(sequence(Method::Bell, "turn finished"), "\x07");
        assert_eq!(
            sequence(Method::Osc9, "turn finished (12.0 s)"),
            "\x1b]9;cogni: turn finished (12.0 s)\x07"
        );
        assert_eq!(
            sequence(Method::Osc777, "turn finished"),
            "\x1b]777;notify;cogni;turn finished\x07"
        );
        // A hostile command tries to end the sequence and start its own
        // (a clipboard write, a title), with 7-bit and 8-bit controls.
        let hostile = "ls \x07\x1b]52;c;cHduZWQ=\x07 \x1b\\\u{9c}\u{9d}0;title\u{9c}\r\n\x1b[2J";
        for method in [Method::Osc9, Method::Osc777] {
            let out = sequence(method, hostile);
            let inside = &out[2..out.len() - 1];
            assert!(!inside.chars().any(char::is_control), "{out:?}");
            assert!(out.starts_with("\x1b]") && out.ends_with('\x07'), "{out:?}");
        }
    }

    #[test]
    fn a_question_reads_as_its_tool_and_command_on_one_line() {
        let request = ApprovalRequest {
            call_id: "c".into(),
            tool: "shell".into(),
            summary: "cargo test\n\x1b]9;pwned\x07 --all".into(),
            arguments: String::new(),
            reason: String::new(),
        };
        assert_eq!(
            sequence(Method::Osc9, &question(&request)),
            "\x1b]9;cogni: approval needed: shell `cargo test  ]9;pwned  --all`\x07"
        );
    }
}
