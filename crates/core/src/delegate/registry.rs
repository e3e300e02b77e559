//! The registry of agents a session can delegate to: factories by name,
//! shared by every agent of a session tree (docs/agents.md).

use crate::session::SessionConfig;
pub use cogni_spec::cards::{AgentOptions, Inherit, Isolation};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Makes a fresh agent: its session config (model, instructions, tools),
/// before the parent's policies are applied to it.
pub type Factory = Arc<dyn Fn() -> Result<SessionConfig, String> + Send + Sync>;

/// One registered agent.
#[derive(Clone)]
pub struct AgentEntry {
    /// What the model calls it (`agent` in `delegate_to_agent`).
    pub name: String,
    /// What `list_agents` tells the model it is for.
    pub description: String,
    /// Where it came from: a card's path, or `config [agents.NAME]`.
    pub source: String,
    /// Its card's options: what it inherits from the parent, its
    /// isolation, its own budgets and delegation limits.
    pub options: AgentOptions,
    factory: Factory,
}

impl std::fmt::Debug for AgentEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentEntry")
            .field("name", &self.name)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// A fresh agent from [`AgentRegistry::spawn`].
pub struct Spawned {
    /// The config its factory made, before the parent's policies are
    /// applied to it.
    pub config: SessionConfig,
    /// The registered agent's options (see [`AgentEntry::options`]).
    pub options: AgentOptions,
    /// Its depth in the tree (the root is 0).
    pub depth: u32,
}

/// Agents by name; thread-safe, shared by a session tree.
#[derive(Default, Debug)]
pub struct AgentRegistry {
    entries: RwLock<BTreeMap<String, AgentEntry>>,
}

impl AgentRegistry {
    /// Register (or replace) `name`.
    pub fn register(
        &self,
        name: &str,
        description: &str,
        source: &str,
        options: AgentOptions,
        factory: Factory,
    ) {
        if let Ok(mut entries) = self.entries.write() {
            entries.insert(
                name.to_string(),
                AgentEntry {
                    name: name.to_string(),
                    description: description.to_string(),
                    source: source.to_string(),
                    options,
                    factory,
                },
            );
        }
    }

    /// Every agent but `caller`, sorted by name.
    pub fn list(&self, caller: &str) -> Vec<AgentEntry> {
        self.entries
            .read()
            .map(|e| e.values().filter(|a| a.name != caller).cloned().collect())
            .unwrap_or_default()
    }

    /// The agent registered as `name`, if any.
    pub fn get(&self, name: &str) -> Option<AgentEntry> {
        self.entries.read().ok()?.get(name).cloned()
    }

    /// A fresh instance of `name` at `depth`.
    pub fn spawn(&self, name: &str, depth: u32) -> Result<Spawned, String> {
        let entry = self.get(name).ok_or_else(|| {
            let known: Vec<String> = self.list("").into_iter().map(|a| a.name).collect();
            format!(
                "no agent named `{name}`; agents: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?;
        let config = (entry.factory)().map_err(|e| format!("agent `{name}`: {e}"))?;
        Ok(Spawned {
            config,
            options: entry.options,
            depth,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_provider::{ProviderInfo, WireApi};

    fn factory(name: &'static str) -> Factory {
        Arc::new(move || {
            let mut c = SessionConfig::new(
                ProviderInfo::new("scripted", "", WireApi::Scripted),
                "/tmp".into(),
            );
            c.agent = name.into();
            Ok(c)
        })
    }

    #[test]
    fn lists_sorted_without_the_caller_and_spawns_fresh_configs() {
        let r = AgentRegistry::default();
        for name in ["writer", "reviewer", "main"] {
            r.register(name, "d", "test", AgentOptions::default(), factory(name));
        }
        let names: Vec<String> = r.list("main").into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["reviewer", "writer"]);
        let a = r.spawn("reviewer", 1).unwrap();
        assert_eq!((a.config.agent.as_str(), a.depth), ("reviewer", 1));
        let e = r.spawn("nobody", 1).err().unwrap();
        assert!(e.contains("main, reviewer, writer"), "{e}");
        // Shared across threads.
        let r = Arc::new(r);
        let t = {
            let r = r.clone();
            std::thread::spawn(move || r.spawn("writer", 2).is_ok())
        };
        assert!(t.join().unwrap());
    }
}
