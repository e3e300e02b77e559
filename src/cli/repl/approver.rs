//! Approval questions inside the REPL: asked inline, answered with one key
//! (y, a, n, m; Enter or Esc is no). Ctrl-C answers no and stops the turn.
//! The model's questions (`ask_user`) are menus of their options
//! ([`super::question`]). When stdin is not a terminal, answers are read
//! as lines. A terminal without the focus is notified of the question
//! ([`Notifier`]).

use super::notify::Notifier;
use super::question;
use super::term::{self, Caps};
use crate::cli::approve::{self, ask_blocking, CHOICES};
use crate::protocol::{ApprovalDecision, ApprovalRequest, Approver, Question, UserAnswer};
use futures::future::BoxFuture;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

pub struct ReplApprover {
    /// Stops the running turn (Ctrl-C at the question).
    stop: Arc<dyn Fn() + Send + Sync>,
    caps: Caps,
    /// The working directory: a `write_file` question shows the diff
    /// against the file there.
    cwd: PathBuf,
    /// Tells a terminal without the focus that a question waits.
    notifier: Notifier,
}

impl ReplApprover {
    pub fn new(
        stop: Arc<dyn Fn() + Send + Sync>,
        caps: Caps,
        cwd: PathBuf,
        notifier: Notifier,
    ) -> Self {
        ReplApprover {
            stop,
            caps,
            cwd,
            notifier,
        }
    }
}

/// What a key means; `None` for keys that mean nothing.
fn key_decision(key: u8) -> Option<Key> {
    Some(match key.to_ascii_lowercase() {
        b'y' => Key::Answer(ApprovalDecision::Approve, "yes"),
        b'a' => Key::Answer(ApprovalDecision::ApproveForSession, "yes, for this session"),
        b'n' | b'\r' | b'\n' | 0x1b => Key::Answer(ApprovalDecision::Deny, "no"),
        b'm' => Key::Message,
        0x03 | 0x04 => Key::Stop,
        _ => return None,
    })
}

enum Key {
    Answer(ApprovalDecision, &'static str),
    Message,
    Stop,
}

impl Approver for ReplApprover {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        let request = request.clone();
        let stop = self.stop.clone();
        let (color, cwd, notifier) = (self.caps.color, self.cwd.clone(), self.notifier);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                // From before the question shows until it is answered.
                let _keyboard = term::Wanted::new();
                let asked = approve::question(&request, Some(&cwd), color);
                if !std::io::stdin().is_terminal() {
                    let mut out = std::io::stdout().lock();
                    return ask_blocking(&asked, &mut std::io::stdin().lock(), &mut out);
                }
                notifier.approval(&request);
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{asked}");
                for _ in 0..3 {
                    let _ = write!(out, "{CHOICES}");
                    let _ = out.flush();
                    let Some(key) = term::read_key() else {
                        return ApprovalDecision::Deny;
                    };
                    match key_decision(key) {
                        Some(Key::Answer(decision, label)) => {
                            let _ = writeln!(out, "{label}");
                            return decision;
                        }
                        Some(Key::Message) => {
                            let _ = writeln!(out, "m");
                            return term::cooked(|| {
                                approve::deny_with_message(&mut std::io::stdin().lock(), &mut out)
                            });
                        }
                        Some(Key::Stop) => {
                            let _ = writeln!(out, "no (stopping the turn)");
                            stop();
                            return ApprovalDecision::Deny;
                        }
                        None => {
                            let _ = writeln!(out, "\n  please press y, a, n or m");
                        }
                    }
                }
                ApprovalDecision::Deny
            })
            .await
            .unwrap_or(ApprovalDecision::Deny)
        })
    }

    fn is_interactive(&self) -> bool {
        true
    }

    fn question<'a>(&'a self, _call_id: &'a str, asked: &'a Question) -> BoxFuture<'a, UserAnswer> {
        let asked = asked.clone();
        let (color, notifier) = (self.caps.color, self.notifier);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                // From before the question shows until it is answered.
                let _keyboard = term::Wanted::new();
                if !std::io::stdin().is_terminal() {
                    let mut out = std::io::stdout().lock();
                    return question::ask_lines(&asked, &mut std::io::stdin().lock(), &mut out);
                }
                notifier.question(&asked.question);
                question::ask(&asked, color)
            })
            .await
            .unwrap_or(UserAnswer::Declined)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_answers() {
        assert!(matches!(
            key_decision(b'Y'),
            Some(Key::Answer(ApprovalDecision::Approve, _))
        ));
        assert!(matches!(
            key_decision(b'a'),
            Some(Key::Answer(ApprovalDecision::ApproveForSession, _))
        ));
        assert!(matches!(
            key_decision(b'\r'),
            Some(Key::Answer(ApprovalDecision::Deny, _))
        ));
        assert!(matches!(key_decision(b'm'), Some(Key::Message)));
        assert!(matches!(key_decision(3), Some(Key::Stop)));
        assert!(key_decision(b'x').is_none());
    }
}
