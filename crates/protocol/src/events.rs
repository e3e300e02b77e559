//! What the engine reports: turn outcomes, events, approvals, and where
//! events and history changes go.

use super::{
    ApprovalPolicy, ContextFile, HistoryItem, Plan, Reflection, SandboxMode, StopReason, TestRun,
    Usage,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The name of the agent a session runs when none is named (the root of
/// every agent path in events and metrics).
pub const DEFAULT_AGENT: &str = "main";

/// Why a turn ended without an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model answered without asking for tools.
    Done,
    /// The step limit (`[agent] max_steps`, `max_iterations`) was reached:
    /// the model still asked for tools, or tests still failed.
    #[serde(alias = "limit_reached")]
    MaxSteps,
    /// The model returned nothing, twice.
    EmptyResponse,
    /// The model's output was cut off (max tokens) in the middle of a tool call.
    Truncated,
    /// The model repeated the same failing call after being told to change approach.
    RepeatedFailure,
    /// The final answer does not match `--output-schema`.
    InvalidOutput,
    /// The turn was stopped from outside (Ctrl-C).
    Interrupted,
    /// A budget (tokens, cost, seconds, steps, tool calls) ran out.
    BudgetExceeded,
    /// A guardrail or a hook stopped the turn (the reason says which).
    Blocked,
    /// A reflection set `block_apply` under the `block_on_critical` policy.
    BlockedByReflect,
    /// An effect that is not advisory failed (the reason names it).
    EffectFailed,
}

impl TurnOutcome {
    pub fn is_success(&self) -> bool {
        matches!(self, TurnOutcome::Done)
    }
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Tokens,
    Cost,
    Seconds,
    Steps,
    ToolCalls,
}

impl Limit {
    pub fn describe(self) -> &'static str {
        match self {
            Limit::Tokens => "token budget",
            Limit::Cost => "cost budget",
            Limit::Seconds => "time budget",
            Limit::Steps => "step budget",
            Limit::ToolCalls => "tool-call budget",
        }
    }
}

/// Status of a tool call as shown to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    InProgress,
    Completed,
    Failed,
}

/// Everything the engine reports. Serialised as one JSON object per line by
/// `cogni run --json`; the `type` field names the event (see docs/events.md).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type")]
pub enum AgentEvent {
    #[serde(rename = "session.started")]
    SessionStarted {
        session_id: String,
        model: String,
        provider: String,
        cwd: PathBuf,
        sandbox: SandboxMode,
        approval: ApprovalPolicy,
    },
    #[serde(rename = "turn.started")]
    TurnStarted { turn: u32 },
    /// A model request is about to be sent (iteration counts from 1).
    #[serde(rename = "model.request")]
    ModelRequest {
        iteration: u32,
        /// The prompt as sent, only when verbose logging is on. Never
        /// serialised: verbose output is for the verbose log (stderr) and
        /// must not change what `--json` prints.
        #[serde(skip)]
        prompt: Option<serde_json::Value>,
    },
    /// A model response finished streaming.
    #[serde(rename = "model.response")]
    ModelResponse {
        iteration: u32,
        usage: Option<Usage>,
        stop_reason: StopReason,
        time_to_first_token_ms: Option<u64>,
        duration_ms: u64,
    },
    #[serde(rename = "item.started")]
    ItemStarted { item: Item },
    #[serde(rename = "item.updated")]
    ItemUpdated { id: String, delta: String },
    #[serde(rename = "item.completed")]
    ItemCompleted { item: Item },
    /// A streamed message was abandoned (its stream broke and the request
    /// is retried from the start): drop what was shown of it.
    #[serde(rename = "item.discarded")]
    ItemDiscarded { id: String, reason: String },
    /// The model's reasoning as readable text (a reasoning summary,
    /// thinking), when the provider returns it.
    #[serde(rename = "reasoning")]
    Reasoning { text: String },
    /// The provider is retrying a failed request.
    #[serde(rename = "retry")]
    Retry {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The plan changed (`update_plan`).
    #[serde(rename = "plan")]
    Plan { plan: Plan },
    /// A delegated agent started on a task (`delegate_to_agent`,
    /// `spawn_agents`). `agent` is its path from the root agent
    /// (`["main", "reviewer#2"]`); `call_id` the parent's call.
    #[serde(rename = "subagent.started")]
    SubagentStarted {
        agent: Vec<String>,
        call_id: String,
        task: String,
    },
    /// A delegated agent finished: its outcome (`error` when it could not
    /// run), what it spent (its own delegations included), its time.
    #[serde(rename = "subagent.finished")]
    SubagentFinished {
        agent: Vec<String>,
        call_id: String,
        outcome: String,
        usage: Usage,
        cost_usd: Option<f64>,
        duration_ms: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// An event of a delegated agent, nested under the parent's call that
    /// started it.
    #[serde(rename = "subagent")]
    Subagent {
        agent: Vec<String>,
        call_id: String,
        event: Box<AgentEvent>,
    },
    /// The test command ran (`enable_test_run`): one event per attempt.
    #[serde(rename = "test")]
    Test {
        #[serde(flatten)]
        run: TestRun,
    },
    /// A piece of a reflection's text as it streams (`enable_reflect`).
    #[serde(rename = "reflect.delta")]
    ReflectDelta { delta: String },
    /// A reflection is complete: its raw text, the parsed critique (or
    /// why it could not be parsed), and whether it ended the run.
    #[serde(rename = "reflect")]
    Reflect {
        /// The step it critiques (the model request of the turn).
        step: u32,
        text: String,
        reflection: Option<Reflection>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        blocked: bool,
    },
    /// Context files were attached to the prompt (`--context`, a task's
    /// `context_paths`, `auto_context`).
    #[serde(rename = "context")]
    Context { files: Vec<ContextFile> },
    /// The sliding window moved: requests now leave out the conversation's
    /// first `dropped_items` items (after the initial context).
    #[serde(rename = "context_window")]
    ContextWindow {
        dropped_items: usize,
        kept_items: usize,
        estimated_tokens: u64,
    },
    #[serde(rename = "compaction")]
    Compacted {
        tokens_before: u64,
        items_before: usize,
        items_after: usize,
    },
    /// An approval decision about a tool call.
    #[serde(rename = "approval")]
    Approval {
        call_id: String,
        tool: String,
        /// The command or arguments in question.
        summary: String,
        status: ApprovalStatus,
        reason: String,
    },
    #[serde(rename = "warning")]
    Warning { message: String },
    /// The user named a skill (`$name`): its procedure joined the
    /// conversation after their message (docs/skills.md).
    #[serde(rename = "skill")]
    Skill { name: String, path: PathBuf },
    #[serde(rename = "metrics")]
    Metrics { snapshot: serde_json::Value },
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        turn: u32,
        outcome: TurnOutcome,
        final_text: String,
        iterations: u32,
        usage: Usage,
        /// The budget that ran out, with outcome `budget_exceeded`.
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<Limit>,
        /// Why an effect (a budget, a guardrail, a hook) stopped the turn.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An effect decided something other than "go on" (one event per
    /// such decision, with the time it took).
    #[serde(rename = "effect")]
    Effect {
        name: String,
        phase: String,
        decision: String,
        duration_ms: u64,
    },
    #[serde(rename = "turn.failed")]
    TurnFailed { turn: u32, error: String },
    /// One run of a user's hook command (see docs/hooks.md).
    #[serde(rename = "hook")]
    Hook {
        /// `PreToolUse`, `Stop`, ...
        event: String,
        /// The hook by its place in config: `hooks.PreToolUse[0]`.
        hook: String,
        command: String,
        /// `continue`, `context`, `update_input`, `block`, `ask`, `stop`
        /// or `failed`.
        decision: String,
        /// `None` when it timed out, was killed or did not start.
        exit_code: Option<i32>,
        duration_ms: u64,
        /// Why it blocked, asked or stopped, or how it failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// A user-visible unit of a turn: a message or a tool call.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    AgentMessage {
        id: String,
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: String,
        status: ToolStatus,
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
}

/// The stages of an approval, each reported as an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// The user is being asked.
    Asked,
    Approved,
    Denied,
    /// The policy allowed it without asking (e.g. a known-safe command).
    AutoApproved,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Asked => "asked",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::AutoApproved => "auto_approved",
        }
    }
}

/// A question to the user about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub tool: String,
    /// The command or arguments, on one line.
    pub summary: String,
    /// Why the user is asked.
    pub reason: String,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Yes, this once.
    Approve,
    /// Yes, and for the same call again in this session.
    ApproveForSession,
    Deny,
    /// No, and tell the model this.
    DenyWithMessage(String),
}

/// Who answers approval questions. Front doors provide one: a terminal
/// prompt, or a non-interactive answerer that says no at once.
pub trait Approver: Send + Sync {
    fn ask<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, ApprovalDecision>;

    /// True when no one can be asked (the answer is always no).
    fn is_interactive(&self) -> bool;
}

/// The approver of non-interactive runs: every question is answered "no"
/// at once, and the engine records it.
#[derive(Debug, Clone, Copy, Default)]
pub struct NonInteractive;

impl Approver for NonInteractive {
    fn ask<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, ApprovalDecision> {
        Box::pin(async { ApprovalDecision::Deny })
    }

    fn is_interactive(&self) -> bool {
        false
    }
}

/// Where the engine sends its events. Implementations must not block for long.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: AgentEvent);
}

impl<F: Fn(AgentEvent) + Send + Sync> EventSink for F {
    fn emit(&self, event: AgentEvent) {
        self(event)
    }
}

/// Told about every change to a session's history, in order, so a front
/// door can keep a copy (the session file). Called on the engine's task:
/// implementations must be quick and must not block for long.
pub trait HistoryObserver: Send + Sync {
    /// `items` were appended to the end of history.
    fn appended(&self, items: &[HistoryItem]);
    /// History was replaced as a whole (compaction, the context stack).
    fn replaced(&self, history: &[HistoryItem]);
    /// The file the history is kept in, if any (hooks get its path).
    fn transcript_path(&self) -> Option<&Path> {
        None
    }
}
