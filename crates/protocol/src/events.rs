//! What the engine reports: turn outcomes, events, approvals, and where
//! events and history changes go.

use super::{
    ApprovalPolicy, Citation, ContextFile, HistoryItem, Plan, Question, QuestionRecord, Reflection,
    SandboxMode, StopReason, TestRun, TurnCheckpoint, Usage, UserAnswer, WebSource,
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
    /// True only for [`TurnOutcome::Done`]: every other outcome exits
    /// non-zero.
    pub fn is_success(&self) -> bool {
        matches!(self, TurnOutcome::Done)
    }
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The token budget (input plus output tokens).
    Tokens,
    /// The cost budget, in USD.
    Cost,
    /// The wall-time budget, in seconds.
    Seconds,
    /// The budget of model requests (steps).
    Steps,
    /// The budget of tool calls.
    ToolCalls,
}

impl Limit {
    /// The budget's name for messages: `token budget`, `time budget`, ...
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
    /// The call is running.
    InProgress,
    /// The call finished and the tool reported success.
    Completed,
    /// The tool reported an error: non-zero exit, timeout, unknown tool,
    /// invalid arguments, denial.
    Failed,
}

/// Everything the engine reports. Serialised as one JSON object per line by
/// `cogni run --json`; the `type` field names the event (see docs/events.md).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type")]
pub enum AgentEvent {
    /// A session started (`session.started`): the first event of a run.
    #[serde(rename = "session.started")]
    SessionStarted {
        /// The session's id (also the name of its session file).
        session_id: String,
        /// The model the session talks to, as the provider names it.
        model: String,
        /// The provider's name in config (`openai`, `anthropic`, ...).
        provider: String,
        /// The working directory tools run in.
        cwd: PathBuf,
        /// The sandbox mode commands run under.
        sandbox: SandboxMode,
        /// When the user is asked before a tool call runs.
        approval: ApprovalPolicy,
    },
    /// A turn (one user prompt and the work it causes) started.
    #[serde(rename = "turn.started")]
    TurnStarted {
        /// The turn's number in the session, from 1.
        turn: u32,
    },
    /// A model request is about to be sent (iteration counts from 1).
    #[serde(rename = "model.request")]
    ModelRequest {
        /// The request's number within the turn, from 1.
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
        /// The request's number within the turn, from 1.
        iteration: u32,
        /// What the response cost in tokens; `None` when there is nothing
        /// to report.
        usage: Option<Usage>,
        /// Why the model stopped.
        stop_reason: StopReason,
        /// Milliseconds from sending the request to the first streamed
        /// text or reasoning; `None` when none streamed.
        time_to_first_token_ms: Option<u64>,
        /// Milliseconds from sending the request to the end of the stream.
        duration_ms: u64,
    },
    /// A message or tool call started (a call: when it begins running).
    #[serde(rename = "item.started")]
    ItemStarted {
        /// The item as it stands at its start (a message's text is empty).
        item: Item,
    },
    /// More text streamed for a message item.
    #[serde(rename = "item.updated")]
    ItemUpdated {
        /// The id of the [`Item::AgentMessage`] the text belongs to.
        id: String,
        /// The text to append.
        delta: String,
    },
    /// A message or tool call is complete.
    #[serde(rename = "item.completed")]
    ItemCompleted {
        /// The item in full (a call with its status and output).
        item: Item,
    },
    /// A streamed message was abandoned (its stream broke and the request
    /// is retried from the start): drop what was shown of it.
    #[serde(rename = "item.discarded")]
    ItemDiscarded {
        /// The id of the abandoned message item.
        id: String,
        /// Why the stream broke (the provider error).
        reason: String,
    },
    /// The model's reasoning as readable text (a reasoning summary,
    /// thinking), when the provider returns it.
    #[serde(rename = "reasoning")]
    Reasoning {
        /// The readable reasoning text.
        text: String,
    },
    /// The provider ran a web search of its own (`[tools] web_search`).
    #[serde(rename = "web_search")]
    WebSearch {
        /// The provider's id of the search.
        id: String,
        /// What was searched for (empty when the provider did not say).
        query: String,
        /// The pages found (empty when the provider did not list them).
        results: Vec<WebSource>,
        /// The provider's error code when the search failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The model's answer cites a page.
    #[serde(rename = "citation")]
    Citation {
        /// The page and the passage cited.
        #[serde(flatten)]
        citation: Citation,
    },
    /// The provider is retrying a failed request.
    #[serde(rename = "retry")]
    Retry {
        /// The retry's number, from 1.
        attempt: u32,
        /// Milliseconds waited before the retry.
        delay_ms: u64,
        /// The error that caused it.
        reason: String,
    },
    /// The plan changed (`update_plan`).
    #[serde(rename = "plan")]
    Plan {
        /// The plan as it now stands, in full.
        plan: Plan,
    },
    /// A delegated agent started on a task (`delegate_to_agent`,
    /// `spawn_agents`). `agent` is its path from the root agent
    /// (`["main", "reviewer#2"]`); `call_id` the parent's call.
    #[serde(rename = "subagent.started")]
    SubagentStarted {
        /// The delegated agent's path from the root agent.
        agent: Vec<String>,
        /// The parent's tool call that started it.
        call_id: String,
        /// The task it was given.
        task: String,
    },
    /// A delegated agent finished: its outcome (`error` when it could not
    /// run), what it spent (its own delegations included), its time.
    #[serde(rename = "subagent.finished")]
    SubagentFinished {
        /// The delegated agent's path from the root agent.
        agent: Vec<String>,
        /// The parent's tool call that started it.
        call_id: String,
        /// Its turn outcome (`done`, `max_steps`, ...) or `error`.
        outcome: String,
        /// The tokens it used, its own delegations included.
        usage: Usage,
        /// What that cost in USD; `None` when a model's price is unknown.
        cost_usd: Option<f64>,
        /// Its wall time in milliseconds.
        duration_ms: u64,
        /// Why it could not run, with outcome `error`.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// An event of a delegated agent, nested under the parent's call that
    /// started it.
    #[serde(rename = "subagent")]
    Subagent {
        /// The delegated agent's path from the root agent.
        agent: Vec<String>,
        /// The parent's tool call that started it.
        call_id: String,
        /// The delegated agent's own event, any type.
        event: Box<AgentEvent>,
    },
    /// The test command ran (`enable_test_run`): one event per attempt.
    #[serde(rename = "test")]
    Test {
        /// The run, its fields flattened into the event.
        #[serde(flatten)]
        run: TestRun,
    },
    /// A piece of a reflection's text as it streams (`enable_reflect`).
    #[serde(rename = "reflect.delta")]
    ReflectDelta {
        /// The text to append.
        delta: String,
    },
    /// A reflection is complete: its raw text, the parsed critique (or
    /// why it could not be parsed), and whether it ended the run.
    #[serde(rename = "reflect")]
    Reflect {
        /// The step it critiques (the model request of the turn).
        step: u32,
        /// The reflection's raw text as the model wrote it.
        text: String,
        /// The parsed critique; `None` when the text was not the JSON
        /// asked for.
        reflection: Option<Reflection>,
        /// Why the text could not be parsed, when it could not.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// True when this reflection ended the run (`block_apply` under
        /// `block_on_critical`).
        blocked: bool,
    },
    /// Context files were attached to the prompt (`--context`, a task's
    /// `context_paths`, `auto_context`).
    #[serde(rename = "context")]
    Context {
        /// The files and directories attached, with their sizes.
        files: Vec<ContextFile>,
    },
    /// The sliding window moved: requests now leave out the conversation's
    /// first `dropped_items` items (after the initial context).
    #[serde(rename = "context_window")]
    ContextWindow {
        /// Items after the initial context that requests leave out.
        dropped_items: usize,
        /// Items requests send, the initial context included.
        kept_items: usize,
        /// The estimated size of what is sent, in tokens.
        estimated_tokens: u64,
    },
    /// History was compacted: older items were replaced by a summary
    /// (JSON type `compaction`).
    #[serde(rename = "compaction")]
    Compacted {
        /// The context's size in tokens before compaction.
        tokens_before: u64,
        /// History items before compaction.
        items_before: usize,
        /// History items after it.
        items_after: usize,
    },
    /// An approval decision about a tool call.
    #[serde(rename = "approval")]
    Approval {
        /// The tool call in question.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The command or arguments in question.
        summary: String,
        /// The stage the approval reached.
        status: ApprovalStatus,
        /// Why it was asked, or why it was decided the way it was.
        reason: String,
    },
    /// The model asked the user a question (`ask_user`): once as it is
    /// asked, once more with its answer.
    #[serde(rename = "question")]
    Question {
        /// The `ask_user` call.
        call_id: String,
        /// The question and where it stands, its fields flattened into the
        /// event.
        #[serde(flatten)]
        record: QuestionRecord,
    },
    /// The workspace was snapshot after a turn (checkpoints on): the
    /// turn can be undone.
    #[serde(rename = "checkpoint")]
    Checkpoint {
        /// The turn's number in the session, from 1.
        turn: u32,
        /// The snapshot before the turn (a git commit id).
        before: String,
        /// The snapshot after it.
        after: String,
        /// The paths (relative to the workspace) the turn changed.
        files: Vec<String>,
    },
    /// Something the user should know that does not stop the turn.
    #[serde(rename = "warning")]
    Warning {
        /// The warning, one readable sentence.
        message: String,
    },
    /// The user named a skill (`$name`): its procedure joined the
    /// conversation after their message (docs/skills.md).
    #[serde(rename = "skill")]
    Skill {
        /// The skill's name.
        name: String,
        /// Its SKILL.md.
        path: PathBuf,
    },
    /// The metrics of the turn and the session, before the turn's end.
    #[serde(rename = "metrics")]
    Metrics {
        /// `{"turn": {...}, "session": {...}}` (docs/events.md lists the
        /// fields).
        snapshot: serde_json::Value,
    },
    /// A turn ended without an error (see [`TurnOutcome`] for how).
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        /// The turn's number in the session, from 1.
        turn: u32,
        /// Why it ended.
        outcome: TurnOutcome,
        /// The model's last message text.
        final_text: String,
        /// The model requests the turn made.
        iterations: u32,
        /// The tokens the turn used.
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
        /// The effect's name (`guardrail`, `budget`, a hook, ...).
        name: String,
        /// Where in the turn it ran (`before_tool`, ...).
        phase: String,
        /// What it decided: `block: REASON`, `add_items (N)`, `compact`,
        /// `stop: REASON`, ...
        decision: String,
        /// How long it took, in milliseconds.
        duration_ms: u64,
    },
    /// A turn ended with an error (a provider failure, for example).
    #[serde(rename = "turn.failed")]
    TurnFailed {
        /// The turn's number in the session, from 1.
        turn: u32,
        /// The error, readable.
        error: String,
    },
    /// One run of a user's hook command (see docs/hooks.md).
    #[serde(rename = "hook")]
    Hook {
        /// `PreToolUse`, `Stop`, ...
        event: String,
        /// The hook by its place in config: `hooks.PreToolUse[0]`.
        hook: String,
        /// The command that ran.
        command: String,
        /// `continue`, `context`, `update_input`, `block`, `ask`, `stop`
        /// or `failed`.
        decision: String,
        /// `None` when it timed out, was killed or did not start.
        exit_code: Option<i32>,
        /// How long it ran, in milliseconds.
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
    /// Text the model wrote (`agent_message`).
    AgentMessage {
        /// The item's id (`msg_1_1`, ...), which `item.updated` events name.
        id: String,
        /// The text so far (empty at its start).
        text: String,
    },
    /// A tool call (`tool_call`).
    ToolCall {
        /// The provider's call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model sent them.
        arguments: String,
        /// Running, completed or failed.
        status: ToolStatus,
        /// The output as shown to the model, once the call completed.
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// A command's exit code, once it completed.
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// How long the call ran, in milliseconds, once it completed.
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// For a call that changed files (`apply_patch`, `edit_file`,
        /// `write_file`), once it completed: the unified diff of the change,
        /// for people (the model is not sent it).
        #[serde(skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
}

/// The stages of an approval, each reported as an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// The user is being asked.
    Asked,
    /// The user said yes (once or for the session).
    Approved,
    /// The user, or the absence of one to ask, said no.
    Denied,
    /// The policy allowed it without asking (e.g. a known-safe command).
    AutoApproved,
}

impl ApprovalStatus {
    /// The status as events and metrics name it (`asked`, `auto_approved`,
    /// ...).
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
    /// The tool call waiting for the answer.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The command or arguments, on one line.
    pub summary: String,
    /// The call's arguments as the model sent them (JSON, or a freeform
    /// tool's text), for a front door that shows more than the summary.
    pub arguments: String,
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
    /// No: the call does not run and the model is told it was denied.
    Deny,
    /// No, and tell the model this.
    DenyWithMessage(String),
}

/// Who answers approval questions and the model's questions to the user.
/// Front doors provide one: a terminal prompt, or a non-interactive
/// answerer that says no at once (and asks the model's questions of no
/// one).
pub trait Approver: Send + Sync {
    /// Asks about one call and resolves to the answer; may wait for the
    /// user as long as they take.
    fn ask<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, ApprovalDecision>;

    /// False when no one can be asked (the answer is always no), as for
    /// [`NonInteractive`].
    fn is_interactive(&self) -> bool;

    /// Asks the user the model's `question` (the `ask_user` call
    /// `call_id`) and resolves to the answer; may wait as long as they
    /// take. By default no one is asked ([`UserAnswer::Unattended`]): so
    /// it is in `cogni run`, CI and every other front door without a
    /// person to choose.
    fn question<'a>(
        &'a self,
        _call_id: &'a str,
        _question: &'a Question,
    ) -> futures::future::BoxFuture<'a, UserAnswer> {
        Box::pin(async { UserAnswer::Unattended })
    }
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
    /// Takes one event, in the order the engine produced them.
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
    /// A turn's checkpoint was taken (or completed with the snapshot after
    /// the turn: the same turn again, which replaces it).
    fn checkpoint(&self, _checkpoint: &TurnCheckpoint) {}
    /// The checkpoints of turns `turn` and later were dropped (the turns
    /// were taken back).
    fn rewound(&self, _turn: u32) {}
}
