//! cogni: a single-binary coding agent.
//!
//! The engine (`cogni-core`, re-exported as [`agent`]) talks to a model
//! through a `provider`, runs `tools` and reports `protocol::AgentEvent`s;
//! the front doors in [`cli`] render them. Each layer is a crate of the
//! workspace (see docs/architecture.md for the crates and the rule of who
//! may depend on whom); this package holds the front doors and the binary,
//! and re-exports the layers under their module names.

pub mod cli;
#[doc(hidden)]
pub mod fuzzing;

pub use cogni_config as config;
pub use cogni_core as agent;
pub use cogni_mcp as mcp;
pub use cogni_metrics as metrics;
pub use cogni_process as process;
pub use cogni_protocol as protocol;
pub use cogni_provider as provider;
pub use cogni_runner as runner;
pub use cogni_sandbox as sandbox;
pub use cogni_spec as spec;
pub use cogni_store as store;
pub use cogni_tools as tools;
pub use cogni_transcript as transcript;
