//! Agents as parts (docs/agents.md): a registry of agent factories shared
//! by a session tree, and the three tools a session with one offers:
//! `list_agents`, `delegate_to_agent` and `spawn_agents`. The session runs
//! them itself (`run.rs`), since a child needs what no ordinary tool sees:
//! the parent's event stream, budgets, approver and tools.
//!
//! Guards: no self-delegation; `max_delegation_depth` counted from the
//! root (a child gets its depth from its parent, never from config);
//! `max_agents_per_session` for the whole tree; `max_concurrent_agents`
//! per `spawn_agents` call; a child's budgets carved from what its parent
//! has left.

mod registry;
mod run;
mod sink;
mod worktree;

pub use registry::{AgentEntry, AgentOptions, AgentRegistry, Factory, Inherit, Isolation, Spawned};

use cogni_protocol::{ToolFormat, ToolSpec};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// The tool that lists the agents the model may delegate to.
pub(crate) const LIST_AGENTS: &str = "list_agents";
/// The tool that runs one agent as a child session and returns its answer.
pub(crate) const DELEGATE: &str = "delegate_to_agent";
/// The tool that runs several agents at once (at most
/// `max_concurrent_agents`) and returns each one's answer.
pub(crate) const SPAWN: &str = "spawn_agents";

/// `[delegation]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelegationLimits {
    /// Levels of agents below the root (the root is 0).
    pub max_depth: u32,
    /// Children one `spawn_agents` call runs at once.
    pub max_concurrent: u32,
    /// Agents started in the whole session tree.
    pub max_agents: u32,
}

impl Default for DelegationLimits {
    fn default() -> Self {
        DelegationLimits {
            max_depth: 2,
            max_concurrent: 4,
            max_agents: 32,
        }
    }
}

/// What a session tree shares.
pub(crate) struct Tree {
    registry: Arc<AgentRegistry>,
    limits: DelegationLimits,
    /// Agents started so far.
    spawned: AtomicU32,
}

/// A session's place in its tree.
#[derive(Clone)]
pub(crate) struct Delegation {
    tree: Arc<Tree>,
    /// 0 for the root.
    depth: u32,
    /// From the root: `["main", "reviewer#2"]`.
    path: Vec<String>,
    /// The limits for delegations this agent makes: the tree's, lowered by
    /// its own card and every ancestor's.
    max_depth: u32,
    max_concurrent: u32,
}

impl Delegation {
    /// The root of a tree.
    pub(crate) fn root(
        registry: Arc<AgentRegistry>,
        limits: DelegationLimits,
        agent: &str,
    ) -> Self {
        Delegation {
            tree: Arc::new(Tree {
                registry,
                limits,
                spawned: AtomicU32::new(0),
            }),
            depth: 0,
            path: vec![agent.to_string()],
            max_depth: limits.max_depth,
            max_concurrent: limits.max_concurrent.max(1),
        }
    }

    /// This session now runs agent `name` (`/agent`).
    pub(crate) fn rename(&mut self, name: &str) {
        if let Some(last) = self.path.last_mut() {
            *last = name.to_string();
        }
    }

    /// The tools are offered when this agent may delegate and there is
    /// someone to delegate to.
    pub(crate) fn offers_tools(&self, caller: &str) -> bool {
        self.depth < self.max_depth && !self.tree.registry.list(caller).is_empty()
    }
}

/// Whether `name` is one of the delegation tools.
pub fn is_delegation_tool(name: &str) -> bool {
    [LIST_AGENTS, DELEGATE, SPAWN].contains(&name)
}

/// The three tools' specs.
pub(crate) fn specs() -> Vec<ToolSpec> {
    let task = serde_json::json!({
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The agent's name, as list_agents gives it."},
            "task": {"type": "string", "description": "Everything the agent needs to know: it sees nothing of this conversation."}
        },
        "required": ["agent", "task"],
        "additionalProperties": false
    });
    let spec = |name: &str, description: &str, parameters: serde_json::Value| ToolSpec {
        name: name.into(),
        description: description.into(),
        format: ToolFormat::Function { parameters },
        read_only: false,
    };
    vec![
        spec(
            LIST_AGENTS,
            "List the agents you can delegate to, with what each is for.",
            serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        spec(
            DELEGATE,
            "Give a task to another agent and wait for its final answer. It starts fresh: put \
             everything it needs in the task. Returns its answer, outcome, tokens and cost.",
            task.clone(),
        ),
        spec(
            SPAWN,
            "Run several agents at once, each on its own task; returns their results in order. \
             If one fails, the others are stopped.",
            serde_json::json!({
                "type": "object",
                "properties": {"runs": {"type": "array", "items": task, "minItems": 1}},
                "required": ["runs"],
                "additionalProperties": false
            }),
        ),
    ]
}
