//! Stopping a turn from outside the model's control: an interrupt (Ctrl-C
//! in the REPL) or a budget (tokens, cost, seconds, steps, tool calls).
//!
//! A stop takes effect at once: the model stream is dropped, running tools
//! get their process groups killed, and every call of the response being
//! handled still gets an output ("interrupted" / "not run"), so history
//! stays valid for the next request.

pub use cogni_protocol::Limit;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a session has spent and may spend, and how it is stopped.
pub(crate) struct Meter {
    pub(crate) metrics: cogni_metrics::Metrics,
    /// Budgets for each turn (also registered as effects).
    pub(crate) limits: TurnLimits,
    /// Stops the running turn.
    pub(crate) stop: StopHandle,
}

/// Budgets for one turn; `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnLimits {
    /// Input + output tokens.
    pub max_tokens: Option<u64>,
    /// US dollars at the model's price; a session refuses it for a model
    /// without a price.
    pub max_cost_usd: Option<f64>,
    /// Wall-clock time from the turn's start; whatever runs when it passes
    /// is stopped.
    pub max_duration: Option<Duration>,
    /// Model requests.
    pub max_steps: Option<u32>,
    /// Tool calls run (or answered) in the turn.
    pub max_tool_calls: Option<u32>,
}

/// Why a turn stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halt {
    Interrupted,
    Budget(Limit),
}

impl Halt {
    /// The output a call that could not run or finish gets.
    pub(crate) fn call_output(self) -> String {
        match self {
            Halt::Interrupted => "Interrupted by the user; the call did not finish.".into(),
            Halt::Budget(limit) => format!(
                "Stopped: the turn's {} ran out before this call ran or finished.",
                limit.describe()
            ),
        }
    }
}

/// Stops the running turn. Clones refer to the same session; a stop
/// requested between turns applies to nothing.
#[derive(Debug, Clone, Default)]
pub struct StopHandle {
    current: Arc<Mutex<(CancellationToken, bool)>>,
}

impl StopHandle {
    /// Stop the running turn (Ctrl-C): it ends as interrupted, every call
    /// of the response being handled answered. Does nothing between turns.
    pub fn stop(&self) {
        if let Ok(current) = self.current.lock() {
            current.0.cancel();
        }
    }

    /// Stop the running turn and every later one (a delegated agent whose
    /// sibling failed: a turn that has not started yet must not run).
    pub fn close(&self) {
        if let Ok(mut current) = self.current.lock() {
            current.1 = true;
            current.0.cancel();
        }
    }

    /// A new token for a turn that starts now (already stopped once
    /// closed).
    pub(crate) fn fresh(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut current) = self.current.lock() {
            if current.1 {
                token.cancel();
            }
            current.0 = token.clone();
        }
        token
    }
}

/// The watch over one turn: the stop token and the time budget.
pub(crate) struct Watch {
    token: CancellationToken,
    deadline: Option<tokio::time::Instant>,
}

impl Watch {
    pub(crate) fn new(token: CancellationToken, max_duration: Option<Duration>) -> Self {
        Watch {
            token,
            deadline: max_duration.map(|d| tokio::time::Instant::now() + d),
        }
    }

    /// Run `work` unless the turn is stopped first (the work is dropped).
    pub(crate) async fn run<F: Future>(&self, work: F) -> Result<F::Output, Halt> {
        let deadline = async {
            match self.deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = self.token.cancelled() => Err(Halt::Interrupted),
            _ = deadline => Err(Halt::Budget(Limit::Seconds)),
            out = work => Ok(out),
        }
    }
}
