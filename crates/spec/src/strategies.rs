//! `[agent]`: the built-in agent's strategies (plans, a test-driven loop,
//! reflection, finish criteria, context files), as cogni.toml, task files
//! (per agent and per task) and agent cards write them. The engine applies
//! them to a session (`apply_strategies` in cogni-core).

use serde::Deserialize;

/// `[agent] reflection_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionPolicy {
    /// `block_apply` ends the run with `blocked_by_reflect`.
    #[default]
    BlockOnCritical,
    /// `block_apply` is a warning; the run goes on.
    WarnOnly,
    /// `block_apply` is ignored.
    NeverBlock,
}

/// `[agent] reflection_placement`: where the latest critique sits in the
/// next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionPlacement {
    /// The seed's order: system prompt, plan, previous reflection,
    /// history, new input. Each new critique rewrites the request after
    /// the plan, so the provider's prompt cache covers less.
    #[default]
    Front,
    /// Where it happened in history: requests stay append-only and fully
    /// cacheable.
    History,
}

cogni_protocol::layered! {
    /// `[agent]`; every key optional so layers merge.
    #[derive(Debug, Clone, Default, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct AgentFile {
        /// Attach the files a prompt names, the README and the build manifest
        /// when no context is given (docs/context.md#context-files).
        pub auto_context: Option<bool>,
        /// The cap on what context files attach to one message, in bytes.
        pub max_context_bytes: Option<usize>,
        /// The `update_plan` tool and `plan` events (docs/plan.md).
        pub enable_plan: Option<bool>,
        /// Run `test_command` when the model is done (docs/test-loop.md).
        pub enable_test_run: Option<bool>,
        /// The command the test-driven loop runs in the sandbox (setting it
        /// switches the loop on).
        pub test_command: Option<String>,
        /// Extra attempts when the test command fails.
        pub test_retries: Option<u32>,
        /// Per attempt.
        pub test_timeout_seconds: Option<u64>,
        /// A critique after each step (docs/reflection.md).
        pub enable_reflect: Option<bool>,
        /// Show the reflection a diff between the previous response it
        /// critiqued and this one.
        pub enable_self_diff: Option<bool>,
        /// What a critique's `block_apply` does.
        pub reflection_policy: Option<ReflectionPolicy>,
        /// Where the latest critique sits in the next request.
        pub reflection_placement: Option<ReflectionPlacement>,
        /// The step limit (model requests per turn); the same limit as
        /// `max_iterations`, which it overrides.
        pub max_steps: Option<u32>,
        /// Writing it in a reply ends the turn (stripped from the answer).
        pub done_token: Option<String>,
    }
}

cogni_protocol::replaced_whole!(ReflectionPolicy, ReflectionPlacement);
