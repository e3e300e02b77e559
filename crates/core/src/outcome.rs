//! What a turn returns: its result, each tool call's record, its errors.

use cogni_protocol::{Limit, TurnOutcome, Usage};
use cogni_provider::ProviderError;
use std::time::Duration;

/// One tool call of a turn, as reported back to the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRecord {
    /// The call's id as the model gave it (pairs the call with its
    /// output in history).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as sent to the tool: the model's JSON text, or the
    /// raw text of a freeform call (a patch).
    pub input: String,
    /// The output the model was given for it (a refusal, a block's reason
    /// or "not run" for a call that did not run).
    pub result: String,
    /// The output is an error: the tool failed, or the call was refused,
    /// blocked, interrupted or not run.
    pub is_error: bool,
    /// How the command ended, for a command-running tool.
    pub command: Option<cogni_protocol::CommandEnd>,
    /// Images the tool returned for the model.
    pub images: Vec<cogni_protocol::Image>,
    /// How long the tool ran; zero for a call that did not run.
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
    /// How the turn ended: the model's answer, a budget, a block, an
    /// interrupt, ...
    pub outcome: TurnOutcome,
    /// The last assistant text of the turn (may be empty).
    pub final_text: String,
    /// Every tool call of the turn, in the order they were answered.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Model requests made in this turn.
    pub iterations: u32,
    /// Tokens of the turn's model requests, those of its delegated agents
    /// included.
    pub usage: Usage,
    /// The budget that stopped the turn, for `BudgetExceeded`.
    pub limit: Option<Limit>,
    /// Why an effect (a guardrail, a hook, a budget) stopped the turn.
    pub reason: Option<String>,
}

/// Why a turn failed instead of ending with an outcome: the history stays
/// valid and the session can take another turn.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model provider failed the request (network, HTTP status, a
    /// stream that broke off, a context overflow that compaction could
    /// not resolve).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A panic in a tool, an effect or a hook, caught by the recovery
    /// middleware.
    #[error("internal error: {0}")]
    Panic(String),
}
