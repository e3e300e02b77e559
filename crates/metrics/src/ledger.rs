//! What delegated agents spend, as it happens. Each session has a node
//! for its descendants; a child records each of its model requests into
//! its parent's node, which passes it on to every ancestor's, so a
//! parent's budgets and totals see its children's tokens and cost at once,
//! even for a child that is cancelled half-way.

use cogni_protocol::Usage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One agent's spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentTotals {
    /// Tokens of its model requests.
    pub usage: Usage,
    /// Model requests it made.
    pub model_requests: u32,
    /// USD; `None` once tokens were spent at an unknown price.
    pub cost_usd: Option<f64>,
}

impl Default for AgentTotals {
    fn default() -> Self {
        AgentTotals {
            usage: Usage::default(),
            model_requests: 0,
            cost_usd: Some(0.0),
        }
    }
}

impl AgentTotals {
    /// Add one request's usage and cost (`None`: at an unknown price).
    pub fn add(&mut self, usage: &Usage, cost: Option<f64>, requests: u32) {
        self.usage.add(usage);
        self.model_requests += requests;
        self.cost_usd = match (self.cost_usd, cost) {
            (Some(total), Some(cost)) => Some(total + cost),
            (total, None) if usage.total() == 0 => total,
            _ => None,
        };
    }

    /// What was added since `base` (an earlier copy of these totals).
    pub fn since(&self, base: &AgentTotals) -> AgentTotals {
        let u = &self.usage;
        let b = &base.usage;
        AgentTotals {
            usage: Usage {
                input_tokens: u.input_tokens - b.input_tokens,
                output_tokens: u.output_tokens - b.output_tokens,
                cached_input_tokens: u.cached_input_tokens - b.cached_input_tokens,
                cache_write_tokens: u.cache_write_tokens - b.cache_write_tokens,
                web_searches: u.web_searches - b.web_searches,
                estimated: u.estimated,
            },
            model_requests: self.model_requests - base.model_requests,
            cost_usd: match (self.cost_usd, base.cost_usd) {
                (Some(now), Some(then)) => Some(now - then),
                (now, _) => now,
            },
        }
    }
}

#[derive(Debug, Default)]
struct Books {
    /// Every descendant together.
    all: AgentTotals,
    /// By agent path (`main/reviewer#1`).
    by_agent: BTreeMap<String, AgentTotals>,
}

#[derive(Debug, Default)]
struct Node {
    books: Mutex<Books>,
    parent: Option<Ledger>,
}

/// A session's node: what its descendants spent.
#[derive(Debug, Clone, Default)]
pub struct Ledger(Arc<Node>);

impl Ledger {
    /// The node of a child session (whose own requests are recorded here).
    pub fn child(&self) -> Ledger {
        Ledger(Arc::new(Node {
            books: Mutex::default(),
            parent: Some(self.clone()),
        }))
    }

    /// The node this session reports its own requests to.
    pub fn parent(&self) -> Option<&Ledger> {
        self.0.parent.as_ref()
    }

    /// Record a request of `agent` here and in every ancestor.
    pub fn record(&self, agent: &str, usage: &Usage, cost: Option<f64>) {
        let mut node = Some(self);
        while let Some(ledger) = node {
            if let Ok(mut books) = ledger.0.books.lock() {
                books.all.add(usage, cost, 1);
                books
                    .by_agent
                    .entry(agent.to_string())
                    .or_default()
                    .add(usage, cost, 1);
            }
            node = ledger.0.parent.as_ref();
        }
    }

    /// Every descendant together.
    pub fn total(&self) -> AgentTotals {
        self.0
            .books
            .lock()
            .map(|b| b.all.clone())
            .unwrap_or_default()
    }

    /// By agent path.
    pub fn by_agent(&self) -> BTreeMap<String, AgentTotals> {
        self.0
            .books
            .lock()
            .map(|b| b.by_agent.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            ..Usage::default()
        }
    }

    #[test]
    fn a_grandchild_is_counted_by_every_ancestor() {
        let root = Ledger::default();
        let child = root.child();
        let grandchild = child.child();
        child
            .parent()
            .unwrap()
            .record("main/a#1", &tokens(10), Some(0.1));
        grandchild
            .parent()
            .unwrap()
            .record("main/a#1/b#2", &tokens(5), Some(0.05));
        assert_eq!(root.total().usage.input_tokens, 15);
        assert_eq!(root.total().model_requests, 2);
        assert_eq!(child.total().usage.input_tokens, 5);
        let by = root.by_agent();
        assert_eq!(by["main/a#1"].usage.input_tokens, 10);
        assert_eq!(by["main/a#1/b#2"].cost_usd, Some(0.05));
        let base = root.total();
        child.parent().unwrap().record("main/a#1", &tokens(1), None);
        let since = root.total().since(&base);
        assert_eq!(since.usage.input_tokens, 1);
        assert_eq!(since.cost_usd, None, "an unknown price makes it unknown");
    }
}
