//! cogni: a single-binary coding agent.
//!
//! The engine (`agent`) talks to a model through a `provider`, runs `tools`
//! and reports `protocol::AgentEvent`s; front doors in `cli` render them.
//! See docs/architecture.md for the module map and dependency direction.

pub mod agent;
pub mod cli;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod mcp;
pub mod metrics;
pub mod protocol;
pub mod provider;
pub mod runner;
pub mod sandbox;
pub mod spec;
pub mod store;
pub mod tools;
pub mod transcript;
