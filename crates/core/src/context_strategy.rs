//! Context strategies: which items of history each request sends, and what
//! happens when the conversation grows past the compaction limit
//! (docs/context.md).
//!
//! A strategy implements [`ContextStrategy`]. The two built-ins are
//! [`SlidingWindow`] (`sliding_window`) and [`Summarize`] (`summarize`);
//! the configuration's `context_strategy` chooses one of them
//! ([`built_in`]), and an embedding program may set a strategy of its own
//! with [`Session::set_context_strategy`](crate::Session::set_context_strategy),
//! which wins over the configured one.
//!
//! ```
//! use cogni_core::{AtLimit, ContextStrategy, Conversation, View};
//!
//! /// Sends the initial context and the newest `keep` items.
//! struct Newest {
//!     keep: usize,
//! }
//!
//! impl ContextStrategy for Newest {
//!     fn name(&self) -> &str {
//!         "newest"
//!     }
//!
//!     fn view(&mut self, conversation: &mut Conversation<'_>) -> View {
//!         // (A real strategy also keeps tool calls with their outputs:
//!         // see crates/core/examples/custom_strategy.rs.)
//!         let start = conversation.items().len().saturating_sub(self.keep);
//!         View::starting_at(conversation, start)
//!     }
//!
//!     fn at_limit(&mut self, _overflow: bool) -> AtLimit {
//!         AtLimit::Summarize
//!     }
//! }
//! ```

use cogni_metrics::tokens::Estimator;
use cogni_protocol::{ContextStrategyKind, HistoryItem, Role};
use std::borrow::Cow;

pub use crate::window::SlidingWindow;

/// Decides what of history each request sends, and what happens when the
/// conversation grows past the compaction limit.
///
/// The engine asks [`view`](ContextStrategy::view) before every model
/// request, and also when it estimates the next request's size (after
/// history changed without a request, for `/context`); the view returned
/// last is the one sent. It calls [`at_limit`](ContextStrategy::at_limit)
/// when the conversation passed the compaction limit before a request, and
/// when the provider refused a request as too large (once in a row).
///
/// A view never changes history itself: the session file, `/context` and
/// a later strategy see every item.
pub trait ContextStrategy: Send + Sync {
    /// The strategy's name, shown by `/context` and `/status`.
    fn name(&self) -> &str;

    /// Which items of `conversation` the next request sends.
    fn view(&mut self, conversation: &mut Conversation<'_>) -> View;

    /// The conversation passed the compaction limit, or (`overflow`) the
    /// last request was refused as too large: make room, or ask the engine
    /// to summarize.
    fn at_limit(&mut self, overflow: bool) -> AtLimit;
}

/// What happens when the conversation passes the compaction limit
/// ([`ContextStrategy::at_limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtLimit {
    /// The strategy makes room itself: its next view sends less, and
    /// history stays whole. After an overflow the engine also raises its
    /// token estimates by a quarter, since they proved too low.
    Handled,
    /// The engine summarizes older history (compaction: the
    /// `before_compact` effects run, a summary replaces the older items,
    /// a `compaction` event is sent).
    Summarize,
}

/// What a strategy sees of the conversation when it chooses a view.
pub struct Conversation<'a> {
    items: &'a [HistoryItem],
    initial: usize,
    generation: u64,
    estimator: Estimator,
    size: &'a mut dyn FnMut(usize) -> u64,
    budget: &'a mut dyn FnMut() -> u64,
}

impl<'a> Conversation<'a> {
    /// The conversation of `items`, whose first `initial` items are the
    /// initial context; `size` estimates item `i` of `items`, `budget`
    /// gives what a request's items may take.
    pub(crate) fn new(
        items: &'a [HistoryItem],
        initial: usize,
        generation: u64,
        estimator: Estimator,
        size: &'a mut dyn FnMut(usize) -> u64,
        budget: &'a mut dyn FnMut() -> u64,
    ) -> Self {
        Conversation {
            items,
            initial,
            generation,
            estimator,
            size,
            budget,
        }
    }

    /// All of history, oldest first: the initial context, then the
    /// conversation.
    pub fn items(&self) -> &'a [HistoryItem] {
        self.items
    }

    /// How many items at the start of [`items`](Conversation::items) are
    /// the initial context (instructions, environment). Every view sends
    /// them.
    pub fn initial(&self) -> usize {
        self.initial
    }

    /// Changes whenever history is replaced rather than appended to (a
    /// compaction, a rollback, `/context reset`, a resume, a
    /// reconfiguration): positions a strategy remembers from another
    /// generation no longer refer to the same items.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Estimated tokens of item `index` of [`items`](Conversation::items)
    /// (counted once, then remembered).
    pub fn size(&mut self, index: usize) -> u64 {
        (self.size)(index)
    }

    /// Estimated tokens of `item`, which need not be in history (the
    /// [`note`] a view adds, say).
    pub fn count(&self, item: &HistoryItem) -> u64 {
        self.estimator.count_item(item)
    }

    /// The tokens a request's items may take, in the estimates of
    /// [`size`](Conversation::size) and [`count`](Conversation::count):
    /// the compaction limit, less the instructions and tools, scaled by
    /// how far the provider's counts differed from the estimates so far.
    pub fn budget(&mut self) -> u64 {
        (self.budget)()
    }
}

/// What one request sends of history: the initial context, then, when
/// items are left out, one user-role [`note`] saying how many, then every
/// item from [`start`](View::start) on.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Items of the initial context (always sent).
    pub(crate) initial: usize,
    /// First item sent after the initial context.
    pub(crate) start: usize,
    /// Estimated tokens of the items sent, if the strategy counted them.
    pub(crate) estimate: Option<u64>,
}

impl View {
    /// Every item of `conversation`.
    pub fn all(conversation: &Conversation<'_>) -> View {
        View::starting_at(conversation, 0)
    }

    /// The initial context of `conversation`, then its items from `start`
    /// on (`start` is moved into the conversation's range, past the
    /// initial context). The items left out must not separate a tool call
    /// from its output: a request with an orphaned call or output is one
    /// that providers refuse.
    pub fn starting_at(conversation: &Conversation<'_>, start: usize) -> View {
        let initial = conversation.initial();
        View {
            initial,
            start: start.clamp(initial, conversation.items().len().max(initial)),
            estimate: None,
        }
    }

    /// This view, with the estimated tokens of the items it sends (the
    /// note included, in the estimates of [`Conversation::size`] and
    /// [`Conversation::count`]). Without one, the engine counts them when
    /// it needs to.
    pub fn with_estimate(self, tokens: u64) -> View {
        View {
            estimate: Some(tokens),
            ..self
        }
    }

    /// Items of the initial context (always sent).
    pub fn initial(&self) -> usize {
        self.initial
    }

    /// The first item sent after the initial context.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Estimated tokens of the items sent, if the strategy counted them
    /// ([`View::with_estimate`]).
    pub fn estimate(&self) -> Option<u64> {
        self.estimate
    }

    /// Items left out of the request.
    pub fn dropped(&self) -> usize {
        self.start - self.initial
    }

    /// The request's items: all of `history`, or the initial context, the
    /// note and the items from the start on.
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

/// The note that stands for the `dropped` items a view leaves out.
pub fn note(dropped: usize) -> HistoryItem {
    HistoryItem::text(
        Role::User,
        format!(
            "[{dropped} earlier items of this conversation are left out of this request to fit the model's context window. What they showed of files and commands may be out of date: read or run again what you need.]"
        ),
    )
}

/// The `summarize` strategy: every request sends all of history; past the
/// limit, the engine summarizes older history.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summarize;

impl ContextStrategy for Summarize {
    fn name(&self) -> &str {
        ContextStrategyKind::Summarize.as_str()
    }

    fn view(&mut self, conversation: &mut Conversation<'_>) -> View {
        // Estimated only when needed: for OpenAI models counting would
        // load the tokenizer.
        View::all(conversation)
    }

    fn at_limit(&mut self, _overflow: bool) -> AtLimit {
        AtLimit::Summarize
    }
}

/// The built-in strategy `kind` names, as it starts.
pub fn built_in(kind: ContextStrategyKind) -> Box<dyn ContextStrategy> {
    match kind {
        ContextStrategyKind::SlidingWindow => Box::<SlidingWindow>::default(),
        ContextStrategyKind::Summarize => Box::new(Summarize),
    }
}

/// A session's strategy: the embedding program's, else the configured
/// built-in; and what the last view left out.
#[derive(Default)]
pub(crate) struct Strategies {
    /// Set by the embedding program: it wins over the configured one.
    set: Option<Box<dyn ContextStrategy>>,
    /// The configured built-in, made when first needed and again when the
    /// configured kind changes (the model's window may decide it).
    built_in: Option<(ContextStrategyKind, Box<dyn ContextStrategy>)>,
    /// Items the last view left out.
    dropped: usize,
}

impl Strategies {
    /// Use `strategy` from now on, whatever is configured.
    pub(crate) fn set(&mut self, strategy: Box<dyn ContextStrategy>) {
        self.set = Some(strategy);
        self.dropped = 0;
    }

    /// Keep the strategy the embedding program set on `old` (a
    /// reconfigured session).
    pub(crate) fn keep_set(&mut self, old: &mut Strategies) {
        if let Some(strategy) = old.set.take() {
            self.set(strategy);
        }
    }

    /// The strategy in force when `configured` is the configured kind.
    pub(crate) fn current(&mut self, configured: ContextStrategyKind) -> &mut dyn ContextStrategy {
        if let Some(strategy) = &mut self.set {
            return strategy.as_mut();
        }
        if !matches!(&self.built_in, Some((kind, _)) if *kind == configured) {
            self.built_in = None;
            self.dropped = 0;
        }
        let (_, strategy) = self
            .built_in
            .get_or_insert_with(|| (configured, built_in(configured)));
        strategy.as_mut()
    }

    /// The next request's view by the strategy in force, and the items the
    /// view before it left out.
    pub(crate) fn view(
        &mut self,
        configured: ContextStrategyKind,
        conversation: &mut Conversation<'_>,
    ) -> (View, usize) {
        let view = self.current(configured).view(conversation);
        let before = std::mem::replace(&mut self.dropped, view.dropped());
        (view, before)
    }

    /// Items the last view left out.
    pub(crate) fn dropped(&self) -> usize {
        self.dropped
    }
}
