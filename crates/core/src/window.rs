//! The `sliding_window` context strategy (docs/context.md): each request
//! sends the initial context, one short note saying how many items are
//! left out, and the newest items that fit. History itself stays whole
//! (the session file, `/context`, a later switch of strategy); only the
//! request is cut.
//!
//! The window's start moves in steps, not item by item: it stays put while
//! what follows it fits the limit, and when it no longer does it moves so
//! that what is kept fills [`SLIDE_TO_PERCENT`] of the limit. Between
//! moves every request extends the previous one, so the provider's prompt
//! cache keeps working. The start never separates a tool call from its
//! output, nor a reasoning item from the item it precedes.

use super::context_strategy::{note, AtLimit, ContextStrategy, Conversation, View};
use cogni_protocol::{Content, ContextStrategyKind, HistoryItem};
use std::collections::HashSet;

/// After a move, what is kept fills this much of the limit.
pub const SLIDE_TO_PERCENT: u64 = 60;

/// The `sliding_window` strategy: where the window starts, and when that
/// was decided.
#[derive(Debug, Default)]
pub struct SlidingWindow {
    /// Items of history before this one (after the initial context) are
    /// left out of requests.
    start: usize,
    /// The history generation `start` refers to.
    generation: u64,
    /// Move at the next request even if the kept items seem to fit (the
    /// conversation passed the limit, or the last request overflowed: the
    /// estimate was too low).
    force: bool,
    /// Estimated tokens of the last view.
    last_estimate: u64,
    /// The last request did not fit: the next one may take at most this
    /// much (a share of the last one), whatever the limit says.
    cap: Option<u64>,
}

/// After a request that did not fit, the next one takes at most this share
/// of it (in percent).
const AFTER_OVERFLOW_PERCENT: u64 = 75;

impl ContextStrategy for SlidingWindow {
    fn name(&self) -> &str {
        ContextStrategyKind::SlidingWindow.as_str()
    }

    /// The initial context, the note and the newest items that fit the
    /// conversation's budget (the initial context and the note included).
    fn view(&mut self, conversation: &mut Conversation<'_>) -> View {
        let initial = conversation.initial();
        if conversation.generation() != self.generation {
            self.generation = conversation.generation();
            self.start = initial;
        }
        let force = std::mem::take(&mut self.force);
        let budget = match self.cap.take() {
            Some(cap) => conversation.budget().min(cap),
            None => conversation.budget(),
        };
        let items = conversation.items();
        let note_tokens = conversation.count(&note(items.len()));
        let fixed = (0..initial).map(|i| conversation.size(i)).sum::<u64>();
        let from = self.start.clamp(initial, items.len());
        let start = slide(
            items,
            &mut |i| conversation.size(i),
            from,
            budget.saturating_sub(fixed + note_tokens),
            force,
        );
        self.start = start;
        let mut estimate = fixed
            + (start..items.len())
                .map(|i| conversation.size(i))
                .sum::<u64>();
        if start > initial {
            estimate += note_tokens;
        }
        self.last_estimate = estimate;
        View::starting_at(conversation, start).with_estimate(estimate)
    }

    /// Move at the next request (`overflow`: the last request did not
    /// fit, so the next one also takes less than it did).
    fn at_limit(&mut self, overflow: bool) -> AtLimit {
        self.force = true;
        if overflow {
            self.cap = Some(self.last_estimate / 100 * AFTER_OVERFLOW_PERCENT);
        }
        AtLimit::Handled
    }
}

/// Where the window over `items` starts, given that it started at `from`:
/// `from` while the items from there fit `budget` (and `force` is off),
/// otherwise the earliest start that keeps the newest items within
/// [`SLIDE_TO_PERCENT`] of `budget`. When even the newest reply with its
/// outputs is larger than that, the window starts at that reply. Visits
/// only the items it keeps, plus one.
pub fn slide(
    items: &[HistoryItem],
    size: &mut impl FnMut(usize) -> u64,
    from: usize,
    budget: u64,
    force: bool,
) -> usize {
    let len = items.len();
    if !force {
        let mut total = 0u64;
        let fits = (from..len).rev().all(|i| {
            total += size(i);
            total <= budget
        });
        if fits {
            return from;
        }
    }
    let target = budget / 100 * SLIDE_TO_PERCENT + budget % 100 * SLIDE_TO_PERCENT / 100;
    let mut total = 0u64;
    // Outputs kept whose calls are not (yet) kept.
    let mut open: HashSet<&str> = HashSet::new();
    let mut best = None;
    let mut newest_valid = None;
    for i in (from..len).rev() {
        total += size(i);
        match &items[i].content {
            Content::ToolOutput(o) => {
                open.insert(o.call_id.as_str());
            }
            Content::ToolCall(c) => {
                open.remove(c.id.as_str());
            }
            _ => {}
        }
        let separates_reasoning = i > 0 && matches!(items[i - 1].content, Content::Reasoning(_));
        if open.is_empty() && !separates_reasoning {
            newest_valid.get_or_insert(i);
            if total <= target {
                best = Some(i);
            }
        }
        if total > target && newest_valid.is_some() {
            break;
        }
    }
    best.or(newest_valid).unwrap_or(from).max(from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_protocol::{Role, ToolCall, ToolOutput};
    use std::borrow::Cow;

    fn call(id: &str) -> HistoryItem {
        HistoryItem::tool_call(ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: "{}".into(),
            kind: Default::default(),
        })
    }

    fn output(id: &str) -> HistoryItem {
        HistoryItem::tool_output(ToolOutput {
            call_id: id.into(),
            content: "ok".into(),
            is_error: false,
            command: None,
            images: Vec::new(),
        })
    }

    fn text(role: Role) -> HistoryItem {
        HistoryItem::text(role, "x")
    }

    fn reasoning() -> HistoryItem {
        HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(cogni_protocol::Reasoning {
                id: None,
                text: "thinking".into(),
                encrypted: None,
                source: "responses".into(),
            }),
        }
    }

    /// A history of `units` turns: a user message, an assistant message
    /// with two calls, their outputs.
    fn history(units: usize) -> Vec<HistoryItem> {
        let mut items = Vec::new();
        for u in 0..units {
            items.push(text(Role::User));
            items.push(text(Role::Assistant));
            items.push(call(&format!("a{u}")));
            items.push(call(&format!("b{u}")));
            items.push(output(&format!("a{u}")));
            items.push(output(&format!("b{u}")));
        }
        items
    }

    /// No kept output without its call, no kept call without its output.
    fn assert_paired(items: &[HistoryItem]) {
        let calls: HashSet<&str> = items
            .iter()
            .filter_map(|i| match &i.content {
                Content::ToolCall(c) => Some(c.id.as_str()),
                _ => None,
            })
            .collect();
        let outputs: HashSet<&str> = items
            .iter()
            .filter_map(|i| match &i.content {
                Content::ToolOutput(o) => Some(o.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(calls, outputs);
    }

    #[test]
    fn stays_put_while_the_items_fit() {
        let items = history(10);
        let start = slide(&items, &mut |_| 10, 0, 600, false);
        assert_eq!(start, 0);
        let start = slide(&items, &mut |_| 10, 6, 540, false);
        assert_eq!(start, 6);
    }

    #[test]
    fn moves_to_a_boundary_that_keeps_calls_with_their_outputs() {
        let items = history(10);
        // 60 items of 10: over 500, so keep at most 300 = 30 items.
        let start = slide(&items, &mut |_| 10, 0, 500, false);
        assert!(items.len() - start <= 30, "{start}");
        assert!(start <= 36, "as much as fits: {start}");
        assert_paired(&items[start..]);
        // In steps: the next items fit without moving.
        let mut longer = items.clone();
        longer.extend(history(1));
        assert_eq!(slide(&longer, &mut |_| 10, start, 500, false), start);
    }

    #[test]
    fn force_moves_even_when_it_fits() {
        let items = history(10);
        assert_eq!(slide(&items, &mut |_| 10, 0, 700, false), 0);
        let start = slide(&items, &mut |_| 10, 0, 700, true);
        assert!(start >= 18 && items.len() - start <= 42, "{start}");
        assert_paired(&items[start..]);
    }

    #[test]
    fn a_reply_larger_than_the_window_is_kept_whole() {
        let items = history(3);
        // Each output 1000 tokens, budget 100: only the last reply unit.
        let sizes = |i: usize| {
            if matches!(items[i].content, Content::ToolOutput(_)) {
                1000
            } else {
                1
            }
        };
        let start = slide(&items, &mut { sizes }, 0, 100, false);
        assert_eq!(start, 14, "the last reply's calls with their outputs");
        assert_paired(&items[start..]);
    }

    #[test]
    fn never_separates_reasoning_from_what_follows() {
        let mut items = Vec::new();
        for u in 0..20 {
            items.push(reasoning());
            items.push(call(&format!("c{u}")));
            items.push(output(&format!("c{u}")));
        }
        for budget in [5, 10, 20, 40] {
            let start = slide(&items, &mut |_| 1, 0, budget, false);
            assert!(
                !matches!(items[start - 1].content, Content::Reasoning(_)),
                "budget {budget}: start {start}"
            );
            assert_paired(&items[start..]);
        }
    }

    #[test]
    fn random_histories_never_orphan_and_stay_within_the_window() {
        // A deterministic xorshift, so failures reproduce.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut items = Vec::new();
        let mut n = 0;
        while items.len() < 100_000 {
            items.push(text(Role::User));
            for _ in 0..next() % 4 {
                let calls = next() % 4;
                if next() % 3 == 0 {
                    items.push(reasoning());
                }
                for c in 0..calls {
                    items.push(call(&format!("{n}-{c}")));
                }
                for c in 0..calls {
                    items.push(output(&format!("{n}-{c}")));
                }
                items.push(text(Role::Assistant));
                n += 1;
            }
        }
        let sizes: Vec<u64> = (0..items.len()).map(|_| 1 + next() % 50).collect();
        let mut start = 0;
        for budget in [8_000u64, 30_000, 120_000, 500_000] {
            for end in [items.len() / 3, items.len() / 2, items.len()] {
                start = slide(
                    &items[..end],
                    &mut |i| sizes[i],
                    start.min(end),
                    budget,
                    false,
                );
                let kept: u64 = sizes[start..end].iter().sum();
                assert!(kept <= budget, "budget {budget}, kept {kept}");
                assert_paired(&items[start..end]);
                assert!(start == 0 || !matches!(items[start - 1].content, Content::Reasoning(_)));
            }
            start = 0;
        }
    }

    #[test]
    fn the_view_adds_one_note_after_the_initial_context() {
        let mut items = vec![HistoryItem::text(Role::User, "env")];
        items.extend(history(2));
        let view = View {
            initial: 1,
            start: 7,
            estimate: None,
        };
        let sent = view.items(&items);
        assert_eq!(sent.len(), 1 + 1 + 6);
        assert!(sent[1]
            .as_text()
            .unwrap_or_default()
            .contains("6 earlier items"));
        assert_paired(&sent);
        let all = View { start: 1, ..view };
        assert!(matches!(all.items(&items), Cow::Borrowed(_)));
    }
}
