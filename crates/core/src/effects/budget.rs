//! Budgets as effects: tokens, cost, seconds, steps (model requests) and
//! tool calls per turn. A spent budget stops the turn before the next
//! model request or the next tool call; the calls of the reply being
//! handled are answered as stopped, so history stays valid. The time
//! budget also stops whatever is running when it passes (a tool, a model
//! stream), through [`Effect::deadline`].

use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point, Stop};
use cogni_protocol::Limit;
use futures::future::BoxFuture;
use std::time::Duration;

/// One budget of a turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// Input + output tokens.
    Tokens(u64),
    /// US dollars, from the model's price (a model without one cannot
    /// have this budget).
    CostUsd(f64),
    /// Wall-clock time from the turn's start; also a deadline that stops
    /// whatever runs when it passes.
    Time(Duration),
    /// Model requests.
    Steps(u32),
    /// Tool calls run (or answered) in the turn.
    ToolCalls(u32),
}

impl Budget {
    /// Which limit it is, as a stopped turn reports it
    /// ([`TurnResult::limit`](crate::TurnResult::limit)).
    pub fn limit(self) -> Limit {
        match self {
            Budget::Tokens(_) => Limit::Tokens,
            Budget::CostUsd(_) => Limit::Cost,
            Budget::Time(_) => Limit::Seconds,
            Budget::Steps(_) => Limit::Steps,
            Budget::ToolCalls(_) => Limit::ToolCalls,
        }
    }

    /// The effect kind in config.
    pub fn kind(self) -> &'static str {
        match self {
            Budget::Tokens(_) => "token_limit",
            Budget::CostUsd(_) => "cost_limit",
            Budget::Time(_) => "time_limit",
            Budget::Steps(_) => "step_limit",
            Budget::ToolCalls(_) => "tool_call_limit",
        }
    }

    /// True when the budget is used up at this point.
    fn spent(self, cx: &IterationContext<'_>) -> bool {
        let s = &cx.spent;
        match self {
            Budget::Tokens(max) => s.turn_usage.total() >= max,
            Budget::CostUsd(max) => s.turn_cost.is_some_and(|cost| cost >= max),
            Budget::Time(max) => s.elapsed >= max,
            Budget::Steps(max) => matches!(cx.point, Point::BeforeModel) && cx.iteration >= max,
            Budget::ToolCalls(max) => {
                matches!(cx.point, Point::BeforeTool { .. }) && s.tool_calls >= max
            }
        }
    }
}

/// A budget as an effect.
#[derive(Debug, Clone, Copy)]
pub struct BudgetEffect(pub Budget);

impl Effect for BudgetEffect {
    fn name(&self) -> &str {
        self.0.kind()
    }

    fn budget(&self) -> Option<Budget> {
        Some(self.0)
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::BeforeModel, Phase::BeforeTool]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let decision = if self.0.spent(cx) {
            Decision::Stop(Stop::budget(self.0.limit()))
        } else {
            Decision::Continue
        };
        Box::pin(async move { Ok(decision.into()) })
    }

    fn deadline(&self) -> Option<Duration> {
        match self.0 {
            Budget::Time(d) => Some(d),
            _ => None,
        }
    }
}
