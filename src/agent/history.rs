//! The conversation's one owner: its items, the context stack's
//! checkpoints, the observer told about every change (the session file),
//! and the conversation's size in tokens. Items change only through
//! [`History::append`] and [`History::replace`], which tell the observer;
//! a tool call and its output always enter together (the loop appends a
//! reply with its outputs), and every stack operation keeps them paired.

use crate::protocol::{HistoryItem, HistoryObserver, MessageTag};
use std::sync::Arc;

/// The conversation's size in tokens and how it is estimated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TokenCount {
    /// As of the last model response (provider usage, or an estimate).
    pub(crate) context: u64,
    /// History changed without a model request (context stack, resume):
    /// `context` is re-estimated before the next request.
    pub(crate) stale: bool,
    /// What the provider counts per locally estimated token (at least 1),
    /// learnt from the first request after a compaction.
    pub(crate) scale: f64,
    /// The estimated size of the request after a compaction, until the
    /// provider reports the real one.
    pub(crate) compacted_estimate: Option<u64>,
}

impl Default for TokenCount {
    fn default() -> Self {
        TokenCount {
            context: 0,
            stale: false,
            scale: 1.0,
            compacted_estimate: None,
        }
    }
}

pub(crate) struct History {
    items: Vec<HistoryItem>,
    observer: Option<Arc<dyn HistoryObserver>>,
    /// Named snapshots of the items (the context stack).
    pub(crate) checkpoints: Vec<(String, Vec<HistoryItem>)>,
    pub(crate) tokens: TokenCount,
}

impl std::ops::Deref for History {
    type Target = [HistoryItem];

    fn deref(&self) -> &[HistoryItem] {
        &self.items
    }
}

impl History {
    pub(crate) fn new(items: Vec<HistoryItem>) -> Self {
        History {
            items,
            observer: None,
            checkpoints: Vec::new(),
            tokens: TokenCount::default(),
        }
    }

    /// Who is told about changes from now on.
    /// The session file the observer writes, if it has one (for hooks).
    pub(crate) fn transcript_path(&self) -> Option<&std::path::Path> {
        self.observer.as_ref().and_then(|o| o.transcript_path())
    }

    pub(crate) fn set_observer(&mut self, observer: Arc<dyn HistoryObserver>) {
        self.observer = Some(observer);
    }

    /// Append `items`, telling the observer.
    pub(crate) fn append(&mut self, items: Vec<HistoryItem>) {
        if items.is_empty() {
            return;
        }
        if let Some(observer) = &self.observer {
            observer.appended(&items);
        }
        self.items.extend(items);
    }

    /// Replace the items as a whole, telling the observer.
    pub(crate) fn replace(&mut self, items: Vec<HistoryItem>) {
        if let Some(observer) = &self.observer {
            observer.replaced(&items);
        }
        self.items = items;
    }

    /// Start from saved items (resume): the observer has them already.
    pub(crate) fn restore(&mut self, items: Vec<HistoryItem>) {
        self.items = items;
        self.tokens.stale = true;
    }

    /// Items of the initial context, which stack operations never remove.
    pub(crate) fn initial_len(&self) -> usize {
        initial_len(&self.items)
    }
}

fn is_initial(item: &HistoryItem) -> bool {
    matches!(
        item.tag(),
        Some(
            MessageTag::DeveloperInstructions
                | MessageTag::UserInstructions
                | MessageTag::Environment
        )
    )
}

/// Items of the initial context at the start of `history`.
pub(crate) fn initial_len(history: &[HistoryItem]) -> usize {
    history.iter().take_while(|i| is_initial(i)).count()
}
