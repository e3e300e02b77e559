//! Context strategies: which items of history go into each request
//! (docs/context.md).
//!
//! - `summarize`: every item, and when the conversation passes the
//!   compaction limit, older history is summarised (`agent/compact.rs`).
//! - `sliding_window`: the initial context, one short note saying how many
//!   items are left out, and the newest items that fit. History itself
//!   stays whole (the session file, `/context`, a later switch of
//!   strategy); only the request is cut.
//!
//! The window's start moves in steps, not item by item: it stays put while
//! what follows it fits the limit, and when it no longer does it moves so
//! that what is kept fills [`SLIDE_TO_PERCENT`] of the limit. Between
//! moves every request extends the previous one, so the provider's prompt
//! cache keeps working. The start never separates a tool call from its
//! output, nor a reasoning item from the item it precedes.

use super::history::History;
use cogni_protocol::{Content, ContextStrategyKind, HistoryItem, Role};
use std::borrow::Cow;
use std::collections::HashSet;

/// After a move, what is kept fills this much of the limit.
pub const SLIDE_TO_PERCENT: u64 = 60;

/// Where a sliding window starts, and when that was decided.
#[derive(Debug, Default)]
pub struct SlidingWindow {
    /// Items of history before this one (after the initial context) are
    /// left out of requests.
    start: usize,
    /// The history generation `start` refers to.
    generation: u64,
    /// Move at the next request even if the kept items seem to fit (the
    /// last request overflowed: the estimate was too low).
    force: bool,
    /// Items the last view left out.
    dropped: usize,
    /// Estimated tokens of the last view.
    last_estimate: u64,
    /// The last request did not fit: the next one may take at most this
    /// much (a share of the last one), whatever the limit says.
    cap: Option<u64>,
}

/// After a request that did not fit, the next one takes at most this share
/// of it (in percent).
const AFTER_OVERFLOW_PERCENT: u64 = 75;

/// What one request sends of history.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The strategy that chose it.
    pub strategy: ContextStrategyKind,
    /// Items of the initial context (always sent).
    pub initial: usize,
    /// First item sent after the initial context.
    pub start: usize,
    /// Estimated tokens of the items sent (before calibration; the sliding
    /// window only: summarized views are estimated when needed).
    pub estimate: u64,
}

impl View {
    /// Items left out of the request.
    pub fn dropped(&self) -> usize {
        self.start - self.initial
    }

    /// The request's items: all of history, or the initial context, the
    /// note and the newest items.
    pub fn items<'a>(&self, history: &'a [HistoryItem]) -> Cow<'a, [HistoryItem]> {
        if self.dropped() == 0 {
            return Cow::Borrowed(history);
        }
        let mut items = Vec::with_capacity(self.initial + 1 + history.len() - self.start);
        items.extend_from_slice(&history[..self.initial]);
        items.push(note(self.dropped()));
        items.extend_from_slice(&history[self.start..]);
        Cow::Owned(items)
    }
}

/// The note that stands for the items left out.
pub fn note(dropped: usize) -> HistoryItem {
    HistoryItem::text(
        Role::User,
        format!(
            "[{dropped} earlier items of this conversation are left out of this request to fit the model's context window. What they showed of files and commands may be out of date: read or run again what you need.]"
        ),
    )
}

impl SlidingWindow {
    /// The view for the next request of `history`, whose items may take
    /// `budget` estimated tokens (the initial context and the note
    /// included).
    pub(crate) fn view(&mut self, history: &mut History, budget: u64) -> View {
        let initial = history.initial_len();
        if history.generation() != self.generation {
            self.generation = history.generation();
            self.start = initial;
        }
        let force = std::mem::take(&mut self.force);
        let budget = match self.cap.take() {
            Some(cap) => budget.min(cap),
            None => budget,
        };
        let note_tokens = history.estimator().count_item(&note(history.len()));
        let (items, mut size) = history.sized();
        let fixed = (0..initial).map(&mut size).sum::<u64>();
        let from = self.start.clamp(initial, items.len());
        let start = slide(
            items,
            &mut size,
            from,
            budget.saturating_sub(fixed + note_tokens),
            force,
        );
        self.start = start;
        self.dropped = start - initial;
        let mut estimate = fixed + (start..items.len()).map(&mut size).sum::<u64>();
        if start > initial {
            estimate += note_tokens;
        }
        self.last_estimate = estimate;
        View {
            strategy: ContextStrategyKind::SlidingWindow,
            initial,
            start,
            estimate,
        }
    }

    /// Items the last view left out.
    pub(crate) fn dropped(&self) -> usize {
        self.dropped
    }

    /// The conversation passed the limit (`overflow`: the last request
    /// did not fit, so the next one also takes less than it did): move at
    /// the next request.
    pub(crate) fn tighten(&mut self, overflow: bool) {
        self.force = true;
        if overflow {
            self.cap = Some(self.last_estimate / 100 * AFTER_OVERFLOW_PERCENT);
        }
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
    use cogni_protocol::{ToolCall, ToolOutput};

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
            strategy: ContextStrategyKind::SlidingWindow,
            initial: 1,
            start: 7,
            estimate: 0,
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
