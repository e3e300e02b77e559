//! The engine: sessions, the initial context, prompts, the turn loop and
//! compaction. It reports through [`cogni_protocol::EventSink`] and never
//! prints.

#![deny(missing_docs)]

pub(crate) mod approval;
pub mod checkpoints;
pub mod compact;
pub mod context;
pub mod context_strategy;
pub mod delegate;
mod dispatch;
mod early;
pub mod effects;
mod history;
mod lifecycle;
pub mod limits;
pub mod outcome;
pub mod output;
pub mod planning;
pub mod prompt;
mod questions;
mod request;
pub mod run;
pub mod session;
pub mod stack;
mod strategies;
pub mod testlog;
mod toolset;
pub mod turn;
pub mod turn_context;
pub mod window;

/// The layers an embedding program uses with the engine, so that it
/// depends on this crate alone.
pub use cogni_protocol as protocol;
pub use cogni_provider as provider;
pub use cogni_tools as tools;

pub use checkpoints::{CheckpointError, Rewind, RewindPlan, RewindReport};
pub use context::EnvironmentContext;
pub use context_strategy::{AtLimit, ContextStrategy, Conversation, View};
pub use effects::hooks::notify::Notice;
pub use effects::{effect_fn, Decision, Effect, EffectFn, EndReason, IterationContext, Phase};
pub use limits::{Limit, StopHandle, TurnLimits};
pub use outcome::{AgentError, ToolCallRecord, TurnResult};
pub use prompt::builder::{ProjectSoul, SystemPromptBuilder};
pub use prompt::clock::{Clock, FixedClock, SystemClock, Today};
pub use prompt::system::{PromptConfig, SystemPrompt};
pub use prompt::{build_prompt, Prompt};
pub use request::ContextUsage;
pub use run::Middleware;
pub use session::{
    check_session_config, create_provider, select_model, start_session,
    start_session_with_provider, AuthMode, CompactionConfig, Delegating, PendingInputs, Session,
    SessionConfig, SessionError,
};
pub use stack::StackError;
pub use strategies::apply_strategies;
pub use turn_context::{Features, Sampling, TurnContext};

#[cfg(test)]
mod tests;

/// The working directory of the engine's tests: an absolute path that
/// need not exist, in the platform's form.
#[cfg(test)]
pub(crate) fn tests_cwd() -> &'static str {
    if cfg!(windows) {
        r"C:\work\repo"
    } else {
        "/work/repo"
    }
}
