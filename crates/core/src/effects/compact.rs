//! When to compact: before a request once the conversation passes its
//! limit (a fraction of the model's context window, or a token limit), and
//! once after a request that did not fit (the context-overflow retry). The
//! compaction itself is a context-stack operation the loop performs
//! ([`HistoryEdit::Compact`]), with the session's context strategy.

use super::{Decision, Effect, EffectError, HistoryEdit, IterationContext, Outcome, Phase, Point};
use cogni_protocol::AgentEvent;
use cogni_provider::ProviderError;
use futures::future::BoxFuture;

pub const KIND: &str = "compact";

/// Compact at this fraction of the context window unless told otherwise.
pub const DEFAULT_COMPACT_FRACTION: f64 = 0.8;

/// Where the limit comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A fraction of the model's context window (as reported by the
    /// server when it does).
    Window(f64),
    /// A fixed number of tokens.
    Tokens(u64),
}

#[derive(Debug)]
pub struct CompactEffect {
    pub threshold: Threshold,
    /// The last request overflowed and history was compacted for it: a
    /// second overflow in a row is the turn's error.
    retried: bool,
}

impl CompactEffect {
    pub fn new(threshold: Threshold) -> Self {
        CompactEffect {
            threshold,
            retried: false,
        }
    }

    /// The limit in tokens for a model with `context_window`.
    pub fn limit(&self, context_window: u64) -> u64 {
        match self.threshold {
            // Truncation to whole tokens is intended.
            Threshold::Window(fraction) => (context_window as f64 * fraction) as u64,
            Threshold::Tokens(n) => n,
        }
    }
}

impl Effect for CompactEffect {
    fn name(&self) -> &str {
        KIND
    }

    /// Compaction that failed leaves history whole; a request that then overflows fails on its own.
    fn advisory(&self) -> bool {
        true
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::BeforeModel, Phase::AfterModel]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let decision = match cx.point {
            Point::BeforeModel
                if cx.tokens.context > self.limit(cx.ctx.model_family.context_window) =>
            {
                Decision::Edit(HistoryEdit::Compact { overflow: false })
            }
            Point::AfterModel { .. } => {
                self.retried = false;
                Decision::Continue
            }
            Point::ModelFailed {
                error: ProviderError::ContextOverflow { .. },
            } if !self.retried => {
                self.retried = true;
                cx.sink.emit(AgentEvent::Warning {
                    message: "the request did not fit the model's context window; compacting history and retrying once".into(),
                });
                Decision::Edit(HistoryEdit::Compact { overflow: true })
            }
            _ => Decision::Continue,
        };
        Box::pin(async move { Ok(decision.into()) })
    }
}
