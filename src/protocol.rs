//! Neutral data shared by every layer: history items, tool calls and outputs,
//! usage, policies and the events the engine emits.
//!
//! Nothing here does I/O. Providers translate wire formats to and from these
//! types; tools consume and produce them; front doors render [`AgentEvent`]s.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Who a history item speaks for (the spec's `HistoryItem.role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Developer,
    Assistant,
    Tool,
}

/// What a text message is for, so compaction and environment diffs can find
/// the items they must keep without parsing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageTag {
    DeveloperInstructions,
    UserInstructions,
    Environment,
    Summary,
    /// The plan written before the first step (`enable_plan`): kept after
    /// the initial context in every request.
    Plan,
    /// A critique of a step (`enable_reflect`), for the next request.
    Reflection,
    /// A failed run of the test command (`enable_test_run`), for the
    /// next request.
    TestReport,
    /// A skill's procedure the user named (`$name`), after their message;
    /// kept through compaction.
    Skill,
}

/// One entry of the conversation (the spec's `HistoryItem`): a role and a
/// content that is either text or a structured tool payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryItem {
    pub role: Role,
    pub content: Content,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tag: Option<MessageTag>,
    },
    ToolCall(ToolCall),
    ToolOutput(ToolOutput),
    /// The model's reasoning, kept so providers that need it back get it.
    Reasoning(Reasoning),
}

/// Reasoning a provider returned with a response (OpenAI Responses
/// reasoning items, Anthropic thinking blocks). Wire APIs other than
/// `source` leave it out of requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The provider's id for the item, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Readable summary or thinking text (may be empty).
    #[serde(default)]
    pub text: String,
    /// Opaque data the provider needs back: Responses `encrypted_content`,
    /// an Anthropic thinking `signature` or `redacted_thinking` data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
    /// The wire API that produced it: `responses`, `anthropic`.
    pub source: String,
}

impl HistoryItem {
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        HistoryItem {
            role,
            content: Content::Text {
                text: text.into(),
                tag: None,
            },
        }
    }

    pub fn tagged(role: Role, tag: MessageTag, text: impl Into<String>) -> Self {
        HistoryItem {
            role,
            content: Content::Text {
                text: text.into(),
                tag: Some(tag),
            },
        }
    }

    pub fn tool_call(call: ToolCall) -> Self {
        HistoryItem {
            role: Role::Assistant,
            content: Content::ToolCall(call),
        }
    }

    pub fn tool_output(output: ToolOutput) -> Self {
        HistoryItem {
            role: Role::Tool,
            content: Content::ToolOutput(output),
        }
    }

    /// The text of a message, `None` for tool payloads.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            Content::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn tag(&self) -> Option<MessageTag> {
        match &self.content {
            Content::Text { tag, .. } => *tag,
            _ => None,
        }
    }

    /// A copy with `f` applied to every free text the item holds (message
    /// text, call arguments, outputs, reasoning), e.g. to redact secrets
    /// before the item is encoded. Ids, names and tags stay as they are.
    pub fn map_text(&self, f: &dyn Fn(&str) -> String) -> HistoryItem {
        // Every field is named, so a new one cannot be missed here.
        let content = match &self.content {
            Content::Text { text, tag } => Content::Text {
                text: f(text),
                tag: *tag,
            },
            Content::ToolCall(ToolCall {
                id,
                name,
                arguments,
                kind,
            }) => Content::ToolCall(ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: f(arguments),
                kind: *kind,
            }),
            Content::ToolOutput(ToolOutput {
                call_id,
                content,
                is_error,
            }) => Content::ToolOutput(ToolOutput {
                call_id: call_id.clone(),
                content: f(content),
                is_error: *is_error,
            }),
            Content::Reasoning(Reasoning {
                id,
                text,
                encrypted,
                source,
            }) => Content::Reasoning(Reasoning {
                id: id.clone(),
                text: f(text),
                encrypted: encrypted.clone(),
                source: source.clone(),
            }),
        };
        HistoryItem {
            role: self.role,
            content,
        }
    }
}

/// How the model expressed a tool call: JSON arguments to a function, or raw
/// text for a freeform (custom) tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallKind {
    #[default]
    Function,
    Freeform,
}

/// A tool call as the model sent it. `arguments` is kept verbatim (a JSON
/// string for function tools) so it can be sent back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
    #[serde(default)]
    pub kind: ToolCallKind,
}

/// The one output every tool call gets, also on error, denial and timeout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub call_id: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

/// Which file-editing tool a model gets; the model family decides unless
/// the config says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditTool {
    /// `apply_patch` as a JSON function (`{"input": "<patch>"}`).
    ApplyPatch,
    /// `apply_patch` as a freeform tool constrained by a grammar.
    ApplyPatchFreeform,
    /// `edit_file` (old_string / new_string).
    EditFile,
    /// No edit tool (write_file and the shell remain).
    None,
}

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    pub step: String,
    pub status: StepStatus,
}

/// The model's plan, in the shape of `update_plan`'s arguments (the one
/// Codex-trained models know): `{explanation?, plan: [{step, status}]}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    pub plan: Vec<PlanStep>,
}

/// One run of the test command (`enable_test_run`; docs/test-loop.md), as
/// the `test` event and results.json report it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TestRun {
    /// The session's test runs, counted from 1 (a retry is the same run).
    pub run: u32,
    /// 1 for the first try; up to 1 + `test_retries`.
    pub attempt: u32,
    pub command: String,
    /// `None` when it timed out or was killed by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Exit code 0.
    pub passed: bool,
    pub duration_ms: u64,
    /// The test tool recognised in the output (`cargo`, `nextest`,
    /// `pytest`, `go`, `jest`, `vitest`, `generic`); `None`: unknown.
    pub framework: Option<String>,
    /// Counts the output states, when it states them.
    pub tests_passed: Option<u64>,
    pub tests_failed: Option<u64>,
    pub tests_skipped: Option<u64>,
    pub failing_tests: Vec<String>,
    /// One line, e.g. `cargo test: 41 passed, 2 failed`; empty when the
    /// output was not recognised.
    pub test_summary: String,
    /// The end of the output (stdout and stderr as they came).
    pub output_tail: String,
}

/// A critique of one step (`enable_reflect`; docs/reflection.md), parsed
/// from the model's JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reflection {
    /// The model's own grade of the step (`good`, `poor`, a score ...).
    pub quality: String,
    pub issues: Vec<String>,
    pub recommendations: Vec<String>,
    /// The step should not stand: with `block_on_critical` the run ends.
    pub block_apply: bool,
    pub notes: String,
}

/// A file or directory attached to a prompt as context (docs/context.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextFile {
    /// The path as given.
    pub path: String,
    /// `file` or `directory`.
    pub kind: String,
    /// Bytes attached (after the cap).
    pub bytes: usize,
    pub truncated: bool,
}

/// How a session keeps its requests within the model's context window
/// (docs/context.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextStrategyKind {
    /// Send the initial context and the newest items that fit, with a note
    /// saying what was left out; history itself is kept whole.
    SlidingWindow,
    /// Summarise older history when it grows past the compaction limit.
    Summarize,
}

impl ContextStrategyKind {
    pub const NAMES: &'static str = "sliding_window, summarize";

    pub fn as_str(self) -> &'static str {
        match self {
            ContextStrategyKind::SlidingWindow => "sliding_window",
            ContextStrategyKind::Summarize => "summarize",
        }
    }

    /// The default for a model with `context_window` tokens: windows under
    /// 32k (small local models) slide, larger ones are summarised.
    pub fn default_for(context_window: u64) -> Self {
        if context_window < 32_000 {
            ContextStrategyKind::SlidingWindow
        } else {
            ContextStrategyKind::Summarize
        }
    }
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    #[serde(flatten)]
    pub format: ToolFormat,
    /// True when the tool cannot change the workspace; such calls may run
    /// concurrently and compaction may drop them.
    #[serde(skip)]
    pub read_only: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum ToolFormat {
    /// Arguments are a JSON object described by this schema.
    Function { parameters: serde_json::Value },
    /// Arguments are free text (for example a patch), optionally described by
    /// a grammar the provider understands.
    Freeform { syntax: String, definition: String },
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
    /// Writing to the prompt cache (Anthropic); other APIs charge none.
    pub cache_write: f64,
}

impl Price {
    pub const fn new(input: f64, cached_input: f64, output: f64, cache_write: f64) -> Self {
        Price {
            input,
            cached_input,
            output,
            cache_write,
        }
    }

    /// The cost of `usage` in USD. `input_tokens` includes cached and
    /// cache-written tokens, which are priced at their own rates.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let special = usage.cached_input_tokens + usage.cache_write_tokens;
        let plain = usage.input_tokens.saturating_sub(special);
        (plain as f64 * self.input
            + usage.cached_input_tokens as f64 * self.cached_input
            + usage.cache_write_tokens as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Token counts for one model request or an accumulation of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// True when the counts were estimated locally because the provider sent none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.estimated |= other.estimated;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why the model stopped producing a response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Natural end of the message.
    Stop,
    /// The model asked for tools.
    ToolCalls,
    /// Output hit the max token limit.
    Length,
    /// The provider filtered the output.
    ContentFilter,
    Other(String),
}

impl StopReason {
    pub fn from_wire(s: &str) -> Self {
        match s {
            "stop" | "end_turn" | "stop_sequence" => StopReason::Stop,
            "tool_calls" | "tool_use" | "function_call" => StopReason::ToolCalls,
            "length" | "max_tokens" | "max_output_tokens" => StopReason::Length,
            "content_filter" => StopReason::ContentFilter,
            other => StopReason::Other(other.to_string()),
        }
    }
}

// ---------------------------------------------------------------------------
// Policies
// ---------------------------------------------------------------------------

/// When the user is asked before a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    Untrusted,
    OnFailure,
    #[default]
    OnRequest,
    Never,
}

impl ApprovalPolicy {
    pub const VARIANTS: &'static [&'static str] =
        &["untrusted", "on-failure", "on-request", "never"];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Untrusted => "untrusted",
            ApprovalPolicy::OnFailure => "on-failure",
            ApprovalPolicy::OnRequest => "on-request",
            ApprovalPolicy::Never => "never",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "untrusted" => ApprovalPolicy::Untrusted,
            "on-failure" => ApprovalPolicy::OnFailure,
            "on-request" => ApprovalPolicy::OnRequest,
            "never" => ApprovalPolicy::Never,
            _ => return None,
        })
    }
}

/// What tools may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    #[default]
    WorkspaceWrite,
    DangerFullAccess,
}

impl SandboxMode {
    pub const VARIANTS: &'static [&'static str] =
        &["read-only", "workspace-write", "danger-full-access"];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "read-only" => SandboxMode::ReadOnly,
            "workspace-write" => SandboxMode::WorkspaceWrite,
            "danger-full-access" => SandboxMode::DangerFullAccess,
            _ => return None,
        })
    }
}

/// The spec's `sandbox_policy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    pub network_access: bool,
    /// Extra writable roots besides cwd (workspace-write only).
    pub writable_roots: Vec<PathBuf>,
    /// The shell used for command strings, e.g. `/bin/bash`.
    pub shell: String,
    /// Limits for commands run in the sandbox.
    #[serde(default)]
    pub limits: ResourceLimits,
}

/// Resource limits of sandboxed commands; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// Processes (and threads) at once, the command's own included.
    pub max_processes: Option<u64>,
    /// Largest file a command may write.
    pub max_file_size_bytes: Option<u64>,
    /// CPU seconds per process.
    pub cpu_time_secs: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            max_processes: Some(1024),
            max_file_size_bytes: None,
            cpu_time_secs: None,
        }
    }
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            mode: SandboxMode::default(),
            network_access: false,
            writable_roots: Vec::new(),
            shell: "/bin/bash".to_string(),
            limits: ResourceLimits::default(),
        }
    }
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

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

/// The UTC date (`YYYY-MM-DD`) and time of day (hours, minutes, seconds)
/// of `secs` seconds after 1970-01-01 (session listings, run ids and
/// result timestamps).
pub fn utc_date_time(secs: u64) -> (String, (u64, u64, u64)) {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil, for days since 1970-01-01 (>= 0).
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        (rem / 3600, rem % 3600 / 60, rem % 60),
    )
}
