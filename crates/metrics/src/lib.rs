//! Tokens, timings and counts, per turn and per session.
//!
//! Provider usage is the truth; local estimates (see [`tokens`]) are used
//! only when a provider reports none, and are marked as estimated.

#![deny(missing_docs)]

pub mod ledger;
pub mod tokens;

use cogni_protocol::{Price, Usage, DEFAULT_AGENT};
pub use ledger::{AgentTotals, Ledger};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Counts for one tool name.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolStats {
    /// Calls made to the tool.
    pub calls: u32,
    /// Calls that ended in an error.
    pub failures: u32,
    /// Time spent in its calls, in milliseconds.
    pub total_ms: u64,
    /// The longest single call, in milliseconds.
    pub max_ms: u64,
}

/// Totals over a span (a turn or the whole session).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Tokens of the span's model requests (the provider's counts, or estimates
    /// marked as such).
    pub usage: Usage,
    /// Model requests sent.
    pub model_requests: u32,
    /// Time to first token of each model request, in order.
    pub time_to_first_token_ms: Vec<u64>,
    /// Time spent streaming model responses.
    pub model_ms: u64,
    /// Counts per tool name.
    pub tools: BTreeMap<String, ToolStats>,
    /// Approval decisions by status (`asked`, `approved`, `denied`,
    /// `auto_approved`).
    pub approvals: BTreeMap<String, u32>,
    /// Times history was compacted.
    pub compactions: u32,
    /// Requests the provider retried.
    pub retries: u32,
    /// Wall time of the span so far, in milliseconds (set when a snapshot is
    /// taken).
    pub wall_ms: u64,
    /// USD, when the model's price is known.
    pub cost_usd: Option<f64>,
}

impl Totals {
    /// Tool calls made, over every tool.
    pub fn tool_calls(&self) -> u32 {
        self.tools.values().map(|t| t.calls).sum()
    }
}

/// A serialisable view of the metrics at one moment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// This turn's totals; delegated agents' tokens and cost included.
    pub turn: Totals,
    /// The session's totals; delegated agents' tokens and cost included.
    pub session: Totals,
    /// With delegated agents: the session's spend by agent path (this
    /// agent's own and each descendant's); `turn` and `session` include
    /// theirs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, AgentTotals>,
}

/// Accumulates metrics; the engine owns one per session.
#[derive(Debug)]
pub struct Metrics {
    session_start: Instant,
    turn_start: Instant,
    session: Totals,
    turn: Totals,
    price: Option<Price>,
    /// The agent's path (`main`, `main/reviewer#1`), its key in `agents`.
    agent: String,
    /// What its delegated agents spent; its parent's node when it is one.
    ledger: Ledger,
    /// `ledger`'s totals when the turn started.
    turn_base: AgentTotals,
}

impl Default for Metrics {
    fn default() -> Self {
        let now = Instant::now();
        Metrics {
            session_start: now,
            turn_start: now,
            session: Totals::default(),
            turn: Totals::default(),
            price: None,
            agent: DEFAULT_AGENT.to_string(),
            ledger: Ledger::default(),
            turn_base: AgentTotals::default(),
        }
    }
}

impl Metrics {
    /// Metrics that price tokens with `price` (cost stays unknown without).
    pub fn with_price(price: Option<Price>) -> Self {
        let mut m = Metrics {
            price,
            ..Metrics::default()
        };
        if price.is_some() {
            m.session.cost_usd = Some(0.0);
            m.turn.cost_usd = Some(0.0);
        }
        m
    }

    /// Price the following model requests with `price` (the model
    /// changed). Cost so far stays as counted; once tokens were spent at an
    /// unknown price the total is unknown.
    pub fn set_price(&mut self, price: Option<Price>) {
        for totals in [&mut self.turn, &mut self.session] {
            if price.is_some() && totals.cost_usd.is_none() && totals.usage.total() == 0 {
                // Nothing was spent yet at an unknown price.
                totals.cost_usd = Some(0.0);
            }
        }
        self.price = price;
    }

    /// Count as agent `path` whose delegated agents report to `ledger`
    /// (a child of its parent's node, for a delegated agent).
    pub fn attach(&mut self, path: String, ledger: Ledger) {
        self.agent = path;
        self.turn_base = ledger.total();
        self.ledger = ledger;
    }

    /// Count as agent `path` from now on (the session runs another agent).
    pub fn rename(&mut self, path: &str) {
        path.clone_into(&mut self.agent);
    }

    /// The node this session's delegated agents report to.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The agent's path.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Starts a new turn: the turn's totals and clock start over.
    pub fn start_turn(&mut self) {
        self.turn = Totals {
            cost_usd: self.price.map(|_| 0.0),
            ..Totals::default()
        };
        self.turn_start = Instant::now();
        self.turn_base = self.ledger.total();
    }

    fn both(&mut self, f: impl Fn(&mut Totals)) {
        f(&mut self.turn);
        f(&mut self.session);
    }

    /// Counts one model request of this agent: its `usage`, time to first token
    /// (`None`: nothing streamed) and duration; priced when the price is known,
    /// and passed on to the parent's ledger for a delegated agent.
    pub fn record_model_request(&mut self, usage: &Usage, ttft: Option<Duration>, took: Duration) {
        let cost = self.price.map(|p| p.cost(usage));
        self.both(|t| {
            match (t.cost_usd.as_mut(), cost) {
                (Some(total), Some(cost)) => *total += cost,
                // Tokens at an unknown price: the total is unknown.
                (Some(_), None) if usage.total() > 0 => t.cost_usd = None,
                _ => {}
            }
            t.model_requests += 1;
            t.usage.add(usage);
            if let Some(ttft) = ttft {
                t.time_to_first_token_ms.push(ms(ttft));
            }
            t.model_ms += ms(took);
        });
        if let Some(parent) = self.ledger.parent() {
            parent.record(&self.agent, usage, cost);
        }
    }

    /// Counts one call of tool `name` that took `took`, failed or not.
    pub fn record_tool(&mut self, name: &str, took: Duration, failed: bool) {
        self.both(|t| {
            let s = t.tools.entry(name.to_string()).or_default();
            s.calls += 1;
            s.failures += u32::from(failed);
            s.total_ms += ms(took);
            s.max_ms = s.max_ms.max(ms(took));
        });
    }

    /// Count an approval decision (`asked`, `approved`, `denied`, `auto_approved`).
    pub fn record_approval(&mut self, decision: &str) {
        self.both(|t| *t.approvals.entry(decision.to_string()).or_default() += 1);
    }

    /// Counts one compaction of history.
    pub fn record_compaction(&mut self) {
        self.both(|t| t.compactions += 1);
    }

    /// Counts one provider retry.
    pub fn record_retry(&mut self) {
        self.both(|t| t.retries += 1);
    }

    /// This turn's tokens, its delegated agents' included.
    pub fn turn_usage(&self) -> Usage {
        let mut usage = self.turn.usage;
        usage.add(&self.ledger.total().since(&self.turn_base).usage);
        usage
    }

    /// This turn's cost, its delegated agents' included.
    pub fn turn_cost(&self) -> Option<f64> {
        let delegated = self.ledger.total().since(&self.turn_base);
        with_delegated(self.turn.cost_usd, &delegated)
    }

    /// The turn and session totals as they stand now, with wall times and, with
    /// delegated agents, the spend by agent path.
    pub fn snapshot(&self) -> Snapshot {
        let delegated = self.ledger.total();
        let mut turn = self.turn.clone();
        turn.wall_ms = ms(self.turn_start.elapsed());
        let mut session = self.session.clone();
        session.wall_ms = ms(self.session_start.elapsed());
        let mut agents = BTreeMap::new();
        if delegated.model_requests > 0 {
            let in_turn = delegated.since(&self.turn_base);
            turn.usage.add(&in_turn.usage);
            turn.cost_usd = with_delegated(turn.cost_usd, &in_turn);
            agents.insert(
                self.agent.clone(),
                AgentTotals {
                    usage: session.usage,
                    model_requests: session.model_requests,
                    cost_usd: session.cost_usd,
                },
            );
            session.usage.add(&delegated.usage);
            session.cost_usd = with_delegated(session.cost_usd, &delegated);
            agents.extend(self.ledger.by_agent());
        }
        Snapshot {
            turn,
            session,
            agents,
        }
    }
}

/// `own` cost plus the delegated agents' (unknown when either is).
fn with_delegated(own: Option<f64>, delegated: &AgentTotals) -> Option<f64> {
    match (own, delegated.cost_usd) {
        (Some(own), Some(theirs)) => Some(own + theirs),
        (own, _) if delegated.usage.total() == 0 => own,
        _ => None,
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_price_applies_to_what_follows() {
        let price = |usd: f64| Price::new(usd, usd, usd, usd);
        let million = Usage {
            input_tokens: 1_000_000,
            ..Usage::default()
        };
        let mut m = Metrics::with_price(Some(price(1.0)));
        m.record_model_request(&million, None, Duration::ZERO);
        m.set_price(Some(price(5.0)));
        m.record_model_request(&million, None, Duration::ZERO);
        assert_eq!(m.snapshot().session.cost_usd, Some(6.0));
        // A switch to a model without a price and back costs nothing...
        m.set_price(None);
        m.set_price(Some(price(1.0)));
        assert_eq!(m.snapshot().session.cost_usd, Some(6.0));
        // ...but tokens at an unknown price make the total unknown.
        m.set_price(None);
        m.record_model_request(&million, None, Duration::ZERO);
        assert_eq!(m.snapshot().session.cost_usd, None);
        m.set_price(Some(price(1.0)));
        assert_eq!(m.snapshot().session.cost_usd, None);
        m.start_turn();
        assert_eq!(m.snapshot().turn.cost_usd, Some(0.0));
        // Nothing spent before the first priced model: the cost is known.
        let mut m = Metrics::default();
        m.set_price(Some(price(2.0)));
        m.record_model_request(&million, None, Duration::ZERO);
        assert_eq!(m.snapshot().session.cost_usd, Some(2.0));
        // A web search costs its own price, whatever the tokens.
        let mut m = Metrics::with_price(Some(price(0.0)));
        let searched = Usage {
            web_searches: 3,
            ..Usage::default()
        };
        m.record_model_request(&searched, None, Duration::ZERO);
        let cost = m.snapshot().session.cost_usd.unwrap();
        assert!((cost - 0.03).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn turn_and_session_accumulate_separately() {
        let mut m = Metrics::default();
        m.start_turn();
        let u = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cached_input_tokens: 2,
            estimated: false,
            cache_write_tokens: 0,
            web_searches: 0,
        };
        m.record_model_request(
            &u,
            Some(Duration::from_millis(7)),
            Duration::from_millis(20),
        );
        m.record_tool("shell", Duration::from_millis(3), false);
        m.record_tool("shell", Duration::from_millis(9), true);
        m.record_approval("denied");
        m.start_turn();
        m.record_model_request(&u, None, Duration::from_millis(1));
        let s = m.snapshot();
        assert_eq!(s.turn.model_requests, 1);
        assert_eq!(s.turn.tool_calls(), 0);
        assert_eq!(s.session.model_requests, 2);
        assert_eq!(s.session.usage.input_tokens, 20);
        assert_eq!(s.session.usage.cached_input_tokens, 4);
        assert_eq!(s.session.time_to_first_token_ms, vec![7]);
        let shell = &s.session.tools["shell"];
        assert_eq!(
            (shell.calls, shell.failures, shell.total_ms, shell.max_ms),
            (2, 1, 12, 9)
        );
        assert_eq!(s.session.approvals["denied"], 1);
    }
}
