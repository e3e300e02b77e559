//! What a turn returns: its result, each tool call's record, its errors.

use cogni_protocol::{Limit, TurnOutcome, Usage};
use cogni_provider::ProviderError;
use std::time::Duration;

/// One tool call of a turn, as reported back to the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    pub input: String,
    pub result: String,
    pub is_error: bool,
    /// How the command ended, for a command-running tool.
    pub command: Option<cogni_protocol::CommandEnd>,
    pub duration: Duration,
}

impl ToolCallRecord {
    /// The command's exit code, when it ran one that exited.
    pub fn exit_code(&self) -> Option<i32> {
        self.command.and_then(|c| c.exit_code)
    }
}

/// What a turn returns.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub outcome: TurnOutcome,
    /// The last assistant text of the turn (may be empty).
    pub final_text: String,
    pub tool_calls: Vec<ToolCallRecord>,
    /// Model requests made in this turn.
    pub iterations: u32,
    pub usage: Usage,
    /// The budget that stopped the turn, for `BudgetExceeded`.
    pub limit: Option<Limit>,
    /// Why an effect (a guardrail, a hook, a budget) stopped the turn.
    pub reason: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A panic in a tool, an effect or a hook, caught by the recovery
    /// middleware.
    #[error("internal error: {0}")]
    Panic(String),
}
