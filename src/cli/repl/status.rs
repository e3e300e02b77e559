//! The status line above the prompt: model, mode, context used of the
//! window, tokens and cost of the session. One plain line, printed when
//! it changed (after a turn, a mode or model switch) and cut to the
//! terminal's width: nothing stays drawn that a resize could tear or a
//! terminal without colour could show as codes. On a terminal only, and
//! off with `[repl] status_line = false`.

use super::Repl;
use crate::runner::report::{format_cost, format_count};

/// Whether the status line is shown, and what it said last.
#[derive(Debug)]
pub struct StatusLine {
    enabled: bool,
    last: Option<String>,
}

impl StatusLine {
    pub fn new(enabled: bool) -> Self {
        StatusLine {
            enabled,
            last: None,
        }
    }

    /// `text` when it differs from what was shown last (or, the first
    /// time, from what the banner says: it is remembered, not shown).
    fn changed(&mut self, text: String) -> Option<String> {
        let first = self.last.is_none();
        if self.last.as_ref() == Some(&text) {
            return None;
        }
        self.last = Some(text.clone());
        (!first).then_some(text)
    }
}

/// What the session's numbers read as.
pub struct Numbers<'a> {
    pub model: &'a str,
    pub mode: &'a str,
    /// Tokens of the last request and its answer, when one was made.
    pub context: Option<u64>,
    pub window: u64,
    /// Tokens of the session, in and out.
    pub tokens: u64,
    /// Its cost, when every model used has a price.
    pub cost: Option<f64>,
}

/// `gpt-4.1 · act mode · context 3% of 1.0M · 12,345 tokens · $0.0123`.
pub fn text(n: &Numbers) -> String {
    let mut parts = vec![n.model.to_string(), format!("{} mode", n.mode)];
    if let Some(used) = n.context {
        let percent = used as f64 * 100.0 / n.window.max(1) as f64;
        parts.push(format!("context {percent:.0}% of {}", short(n.window)));
    }
    parts.push(format!("{} tokens", format_count(n.tokens)));
    if n.cost.is_some() {
        parts.push(format_cost(n.cost));
    }
    parts.join(" · ")
}

/// A window's size the short way: `128k`, `1.0M`.
fn short(tokens: u64) -> String {
    if tokens >= 1_000_000 {
        format!("{:.1}M", tokens as f64 / 1_000_000.0)
    } else if tokens >= 1_000 {
        format!("{}k", tokens / 1_000)
    } else {
        tokens.to_string()
    }
}

impl Repl {
    /// Print the status line above the prompt when it changed.
    pub(super) fn show_status(&mut self) {
        if !self.status.enabled || !self.sink.caps().ansi {
            return;
        }
        let snapshot = self.session.metrics().snapshot().session;
        let ctx = self.session.context();
        let line = text(&Numbers {
            model: &ctx.model,
            mode: self.mode.name(),
            context: self.sink.context_used(),
            window: ctx.model_family.context_window,
            tokens: snapshot.usage.total(),
            cost: snapshot.cost_usd,
        });
        if let Some(line) = self.status.changed(line) {
            self.sink.note(&line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_model_mode_context_tokens_and_cost() {
        let mut n = Numbers {
            model: "gpt-4.1",
            mode: "act",
            context: None,
            window: 1_047_576,
            tokens: 0,
            cost: Some(0.0),
        };
        assert_eq!(text(&n), "gpt-4.1 · act mode · 0 tokens · $0.0000");
        n.context = Some(52_000);
        n.tokens = 61_234;
        n.cost = None;
        assert_eq!(
            text(&n),
            "gpt-4.1 · act mode · context 5% of 1.0M · 61,234 tokens"
        );
        n.window = 128_000;
        assert!(text(&n).contains("context 41% of 128k"), "{}", text(&n));
    }

    #[test]
    fn it_shows_only_when_it_changed_and_not_at_first() {
        let mut s = StatusLine::new(true);
        assert_eq!(s.changed("a".into()), None, "the banner said it");
        assert_eq!(s.changed("a".into()), None);
        assert_eq!(s.changed("b".into()).as_deref(), Some("b"));
        assert_eq!(s.changed("b".into()), None);
    }
}
