//! The conversation's one owner: its items, the context stack's
//! checkpoints, the observer told about every change (the session file),
//! and the conversation's size in tokens. Items change only through
//! [`History::append`] and [`History::replace`], which tell the observer;
//! a tool call and its output always enter together (the loop appends a
//! reply with its outputs), and every stack operation keeps them paired.

use cogni_metrics::tokens::Estimator;
use cogni_protocol::{HistoryItem, HistoryObserver, MessageTag};
use std::sync::Arc;

/// An item whose size is not estimated yet.
const UNKNOWN: u32 = u32::MAX;

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
    /// What the provider counted per estimated token in the last request
    /// it reported usage for (the model's [`Estimator`], not the
    /// compaction's tokenizer); estimates are multiplied by it.
    pub(crate) calibration: f64,
}

impl Default for TokenCount {
    fn default() -> Self {
        TokenCount {
            context: 0,
            stale: false,
            scale: 1.0,
            compacted_estimate: None,
            calibration: 1.0,
        }
    }
}

pub(crate) struct History {
    items: Vec<HistoryItem>,
    observer: Option<Arc<dyn HistoryObserver>>,
    /// Named snapshots of the items (the context stack).
    pub(crate) checkpoints: Vec<(String, Vec<HistoryItem>)>,
    pub(crate) tokens: TokenCount,
    /// Each item's estimated tokens, filled on demand ([`UNKNOWN`] until
    /// then), with the estimator that counted them.
    sizes: Vec<u32>,
    estimator: Estimator,
    /// Changes when items are replaced rather than appended, so views of
    /// the history (the sliding window's start) know to start over.
    generation: u64,
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
            sizes: Vec::new(),
            estimator: Estimator::Bytes,
            generation: 0,
        }
    }

    /// The session file the observer writes, if it has one (for hooks).
    pub(crate) fn transcript_path(&self) -> Option<&std::path::Path> {
        self.observer.as_ref().and_then(|o| o.transcript_path())
    }

    /// Who is told about changes (the session file), if anyone.
    pub(crate) fn observer(&self) -> Option<&Arc<dyn HistoryObserver>> {
        self.observer.as_ref()
    }

    /// Who is told about changes from now on.
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
        self.replaced();
    }

    /// Start from saved items (resume): the observer has them already.
    pub(crate) fn restore(&mut self, items: Vec<HistoryItem>) {
        self.items = items;
        self.tokens.stale = true;
        self.replaced();
    }

    fn replaced(&mut self) {
        self.sizes.clear();
        self.generation += 1;
    }

    /// Which replacement of the items this is (see `generation`).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Count with `estimator` from now on (the model's).
    pub(crate) fn set_estimator(&mut self, estimator: Estimator) {
        if estimator != self.estimator {
            self.estimator = estimator;
            self.sizes.clear();
        }
    }

    pub(crate) fn estimator(&self) -> Estimator {
        self.estimator
    }

    /// The items with a function giving each one's estimated tokens
    /// (counted once, then remembered).
    pub(crate) fn sized(&mut self) -> (&[HistoryItem], impl FnMut(usize) -> u64 + '_) {
        self.sizes.resize(self.items.len(), UNKNOWN);
        let (items, sizes, estimator) = (&self.items, &mut self.sizes, self.estimator);
        let size = move |i: usize| {
            if sizes[i] == UNKNOWN {
                sizes[i] = estimator.count_item(&items[i]).min(u64::from(UNKNOWN - 1)) as u32;
            }
            u64::from(sizes[i])
        };
        (&self.items[..], size)
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
                | MessageTag::Plan
        )
    )
}

/// Items of the initial context at the start of `history`.
pub(crate) fn initial_len(history: &[HistoryItem]) -> usize {
    history.iter().take_while(|i| is_initial(i)).count()
}
