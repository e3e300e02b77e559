//! A resumed conversation on screen: what was said before (the user's
//! messages, the answers, one line per tool call), so the user sees where
//! they left off, as Codex and Claude Code show it.

use crate::cli::render::{one_line, paint, strip_terminal_controls};
use crate::protocol::{Content, HistoryItem, MessageTag, Role};

/// Messages and calls shown at most; earlier ones are counted.
const SHOWN: usize = 20;

/// Lines of one message shown at most.
const MESSAGE_LINES: usize = 12;

/// The earlier conversation of `history` (after its first `initial`
/// items), as lines for the screen.
pub fn lines(history: &[HistoryItem], initial: usize, color: bool) -> Vec<String> {
    let shown: Vec<Vec<String>> = history
        .iter()
        .skip(initial)
        .filter_map(|item| item_lines(item, color))
        .collect();
    let mut out = Vec::new();
    if shown.is_empty() {
        return out;
    }
    let skipped = shown.len().saturating_sub(SHOWN);
    out.push(paint(color, "2", "── earlier in this session ──"));
    if skipped > 0 {
        out.push(paint(
            color,
            "2",
            &format!("… {skipped} earlier messages and calls"),
        ));
    }
    for item in shown.into_iter().skip(skipped) {
        out.extend(item);
    }
    out.push(paint(color, "2", "── now ──"));
    out
}

fn item_lines(item: &HistoryItem, color: bool) -> Option<Vec<String>> {
    match &item.content {
        Content::Text { text, tag: None } => {
            let text = strip_terminal_controls(text.trim());
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            if lines.len() > MESSAGE_LINES {
                let more = lines.len() - MESSAGE_LINES;
                lines.truncate(MESSAGE_LINES);
                lines.push(format!("… {more} more lines"));
            }
            match item.role {
                Role::User => {
                    let first = lines.first().cloned().unwrap_or_default();
                    let mut out = vec![paint(color, "1", &format!("› {first}"))];
                    out.extend(lines.into_iter().skip(1).map(|l| format!("  {l}")));
                    Some(out)
                }
                Role::Assistant => Some(lines),
                _ => None,
            }
        }
        Content::Text {
            tag: Some(MessageTag::Summary),
            ..
        } => Some(vec![paint(
            color,
            "2",
            "(a summary of the conversation before)",
        )]),
        Content::ToolCall(call) => {
            let args = strip_terminal_controls(&call.arguments);
            Some(vec![paint(
                color,
                "2",
                &format!("→ {} {}", call.name, one_line(&args, 80)),
            )])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolCallKind};

    #[test]
    fn the_conversation_after_the_initial_context_without_controls() {
        let history = vec![
            HistoryItem::text(Role::Developer, "instructions"),
            HistoryItem::text(Role::User, "fix the \x1b[31mparser"),
            HistoryItem::tool_call(ToolCall {
                id: "c1".into(),
                name: "shell".into(),
                arguments: "{\"command\":\"cargo test\"}".into(),
                kind: ToolCallKind::Function,
            }),
            HistoryItem::text(Role::Assistant, "Fixed it.\nAll tests pass."),
        ];
        let lines = lines(&history, 1, false);
        assert_eq!(
            lines,
            [
                "── earlier in this session ──",
                "› fix the parser",
                "→ shell {\"command\":\"cargo test\"}",
                "Fixed it.",
                "All tests pass.",
                "── now ──"
            ]
        );
        assert!(super::lines(&history[..1], 1, false).is_empty());
        let many: Vec<HistoryItem> = (0..30)
            .map(|i| HistoryItem::text(Role::User, format!("q{i}")))
            .collect();
        let lines = super::lines(&many, 0, false);
        assert_eq!(lines[1], "… 10 earlier messages and calls");
        assert_eq!(lines[2], "› q10");
    }
}
