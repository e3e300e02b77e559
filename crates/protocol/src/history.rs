//! What a conversation is made of: history items, tool calls and outputs,
//! plans, test runs, reflections, tool specs, usage and prices.

use crate::{Image, WebSearch, WEB_SEARCH_USD};
use serde::{Deserialize, Serialize};

/// Who a history item speaks for (the spec's `HistoryItem.role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A message from the person driving the session (prompts, user
    /// instructions such as AGENTS.md, the environment context).
    User,
    /// Instructions from the harness and the config's
    /// `developer_instructions`; wire APIs without a developer role send
    /// them as `system`.
    Developer,
    /// The model's own messages and tool calls.
    Assistant,
    /// A tool's output, answering one of the assistant's calls.
    Tool,
}

/// What a text message is for, so compaction and environment diffs can find
/// the items they must keep without parsing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageTag {
    /// The developer instructions that open every session's initial context.
    DeveloperInstructions,
    /// The user instructions (AGENTS.md and similar) of the initial context.
    UserInstructions,
    /// The environment context (cwd, shell, sandbox and approval policy) of the
    /// initial context; replaced when it changes.
    Environment,
    /// The summary compaction writes in place of older history.
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
    /// Who speaks: decides how providers place the item on the wire.
    pub role: Role,
    /// What the item says: text, a tool call, its output or reasoning.
    pub content: Content,
}

/// The payload of a [`HistoryItem`], serialised with a `type` tag (`text`,
/// `tool_call`, `tool_output`, `reasoning`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// A text message.
    Text {
        /// The message text.
        text: String,
        /// What the message is for, if it is one the harness must find again;
        /// `None` for ordinary messages.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tag: Option<MessageTag>,
    },
    /// A tool call the model made.
    ToolCall(ToolCall),
    /// The output answering a tool call.
    ToolOutput(ToolOutput),
    /// The model's reasoning, kept so providers that need it back get it.
    Reasoning(Reasoning),
    /// An image the user attached (after the text of their message).
    Image(Image),
    /// A web search the provider ran itself (`[tools] web_search`).
    WebSearch(WebSearch),
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
    /// A plain (untagged) text message from `role`.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        HistoryItem {
            role,
            content: Content::Text {
                text: text.into(),
                tag: None,
            },
        }
    }

    /// A text message from `role` marked with `tag`, so compaction and the
    /// environment diff can find it.
    pub fn tagged(role: Role, tag: MessageTag, text: impl Into<String>) -> Self {
        HistoryItem {
            role,
            content: Content::Text {
                text: text.into(),
                tag: Some(tag),
            },
        }
    }

    /// An assistant item holding `call`.
    pub fn tool_call(call: ToolCall) -> Self {
        HistoryItem {
            role: Role::Assistant,
            content: Content::ToolCall(call),
        }
    }

    /// A tool item holding `output`.
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

    /// The tag of a text message; `None` for untagged messages and tool
    /// payloads.
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
            Content::ToolOutput(output) => {
                let content = f(&output.content);
                // Rewritten text: where the command's output starts is
                // known only when the text before it is unchanged.
                let command = output.command.map(|c| CommandEnd {
                    output_start: if content.get(..c.output_start)
                        == output.content.get(..c.output_start)
                    {
                        c.output_start
                    } else {
                        0
                    },
                    ..c
                });
                Content::ToolOutput(ToolOutput {
                    call_id: output.call_id.clone(),
                    content,
                    is_error: output.is_error,
                    command,
                    images: output.images.clone(),
                })
            }
            // An image's name is the user's or a tool's: kept.
            Content::Image(image) => Content::Image(image.clone()),
            // The blocks go back to the API verbatim (it checks them).
            Content::WebSearch(search) => Content::WebSearch(search.clone()),
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
    /// Arguments are a JSON string matching the tool's parameter schema.
    #[default]
    Function,
    /// Arguments are free text (a custom tool, e.g. a freeform `apply_patch`).
    Freeform,
}

/// A tool call as the model sent it. `arguments` is kept verbatim (a JSON
/// string for function tools) so it can be sent back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id; the output that answers the call carries it as
    /// [`ToolOutput::call_id`].
    pub id: String,
    /// The tool's name as the model called it (an MCP tool is
    /// `mcp__SERVER__TOOL`).
    pub name: String,
    /// The arguments verbatim: a JSON object as a string for function tools,
    /// raw text for freeform ones.
    pub arguments: String,
    /// Whether the call was a function or a freeform call; JSON defaults to
    /// `function`.
    #[serde(default)]
    pub kind: ToolCallKind,
}

/// The one output every tool call gets, also on error, denial and timeout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The [`ToolCall::id`] this output answers.
    pub call_id: String,
    /// The text the model sees as the tool's result.
    pub content: String,
    /// True when the call failed (bad arguments, denied, timed out, the tool's
    /// own error); providers that have an error flag send it.
    #[serde(default)]
    pub is_error: bool,
    /// For a command (`shell`, a background job that ended): how it ended,
    /// as data beside the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandEnd>,
    /// Images the tool returned (`view_image`, an MCP tool), for the
    /// model to look at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// How a command a tool ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandEnd {
    /// Its exit code (128 + N when signal N killed it); `None` when it
    /// was stopped at its timeout.
    pub exit_code: Option<i32>,
    /// Where the command's own output (what it printed) starts in the
    /// output's text, after the status line.
    pub output_start: usize,
}

impl ToolOutput {
    /// What the command printed, without its status and timing: the text
    /// from [`CommandEnd::output_start`]; the whole text for other tools.
    pub fn command_output(&self) -> &str {
        self.command
            .and_then(|c| self.content.get(c.output_start..))
            .unwrap_or(&self.content)
    }
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
    /// Not started yet.
    Pending,
    /// Being worked on (at most one step at a time, by convention of
    /// `update_plan`).
    InProgress,
    /// Done.
    Completed,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step is, in the model's words.
    pub step: String,
    /// Where the step stands.
    pub status: StepStatus,
}

/// The model's plan, in the shape of `update_plan`'s arguments (the one
/// Codex-trained models know): `{explanation?, plan: [{step, status}]}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Why the plan changed, if the model said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps, in order.
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
    /// The command that was run (the configured test command).
    pub command: String,
    /// `None` when it timed out or was killed by a signal.
    pub exit_code: Option<i32>,
    /// True when the command was stopped at its timeout.
    pub timed_out: bool,
    /// Exit code 0.
    pub passed: bool,
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
    /// The test tool recognised in the output (`cargo`, `nextest`,
    /// `pytest`, `go`, `jest`, `vitest`, `generic`); `None`: unknown.
    pub framework: Option<String>,
    /// Counts the output states, when it states them.
    pub tests_passed: Option<u64>,
    /// Tests that failed, when the output states it.
    pub tests_failed: Option<u64>,
    /// Tests skipped, when the output states it.
    pub tests_skipped: Option<u64>,
    /// Names of the failing tests the output lists (may be empty even when
    /// tests failed).
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
    /// Problems the model found in the step.
    pub issues: Vec<String>,
    /// What the model recommends doing next.
    pub recommendations: Vec<String>,
    /// The step should not stand: with `block_on_critical` the run ends.
    pub block_apply: bool,
    /// Free text the model added.
    pub notes: String,
}

/// A file or directory attached to a prompt as context (docs/context.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextFile {
    /// The path as given.
    pub path: String,
    /// `file`, `directory` or `image`.
    pub kind: String,
    /// Bytes attached (after the cap; an image's as sent).
    pub bytes: usize,
    /// True when the cap cut the attachment short.
    pub truncated: bool,
    /// For an image: its type and size as sent, and what it was scaled
    /// down from (`image/png, 1568×882, downscaled from 3200×1800, 4.1 MB`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
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
    /// The accepted names, comma-separated, for error messages
    /// (`context_strategy`).
    pub const NAMES: &'static str = "sliding_window, summarize";

    /// The name in config files and reports (`sliding_window`, `summarize`).
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
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// How the model passes arguments: a JSON schema or a freeform grammar
    /// (serialised flattened, tagged `format`).
    #[serde(flatten)]
    pub format: ToolFormat,
    /// True when the tool cannot change the workspace; such calls may run
    /// concurrently and compaction may drop them.
    #[serde(skip)]
    pub read_only: bool,
}

/// How a tool takes its arguments (serialised with a `format` tag: `function`
/// or `freeform`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum ToolFormat {
    /// Arguments are a JSON object described by this schema.
    Function {
        /// The JSON schema of the arguments object.
        parameters: serde_json::Value,
    },
    /// Arguments are free text (for example a patch), optionally described by
    /// a grammar the provider understands.
    Freeform {
        /// The grammar's language as the provider names it (e.g. `lark`).
        syntax: String,
        /// The grammar itself, in that language.
        definition: String,
    },
}

/// Prices in USD per million tokens (and per web search).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Uncached input tokens, USD per million.
    pub input: f64,
    /// Input tokens read from the prompt cache, USD per million.
    pub cached_input: f64,
    /// Output tokens (reasoning included), USD per million.
    pub output: f64,
    /// Writing to the prompt cache (Anthropic); other APIs charge none.
    pub cache_write: f64,
    /// One web search the provider ran (`[tools] web_search`), USD.
    pub web_search: f64,
}

impl Price {
    /// A price from its four token rates, each in USD per million tokens;
    /// a web search costs [`WEB_SEARCH_USD`].
    pub const fn new(input: f64, cached_input: f64, output: f64, cache_write: f64) -> Self {
        Price {
            input,
            cached_input,
            output,
            cache_write,
            web_search: WEB_SEARCH_USD,
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
            + usage.web_searches as f64 * self.web_search
    }
}

/// Token counts for one model request or an accumulation of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens of the request(s), cached and cache-written tokens
    /// included.
    pub input_tokens: u64,
    /// Output tokens generated (reasoning tokens included where the provider
    /// counts them there).
    pub output_tokens: u64,
    /// The part of `input_tokens` read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Web searches the provider ran and charges for (`[tools]
    /// web_search`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_searches: u64,
    /// True when the counts were estimated locally because the provider sent none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds `other`'s counts to these; the sum is estimated if either part was.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.web_searches += other.web_searches;
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
    /// The provider paused a long turn of its own server tools (Anthropic's
    /// `pause_turn`): sending the conversation again lets it go on.
    Paused,
    /// Any other reason the provider gave, verbatim.
    Other(String),
}

impl StopReason {
    /// Maps a wire API's stop or finish reason (`stop`, `end_turn`, `tool_use`,
    /// `max_tokens`, ...) to a [`StopReason`]; unknown ones become
    /// [`StopReason::Other`].
    pub fn from_wire(s: &str) -> Self {
        match s {
            "stop" | "end_turn" | "stop_sequence" => StopReason::Stop,
            "tool_calls" | "tool_use" | "function_call" => StopReason::ToolCalls,
            "length" | "max_tokens" | "max_output_tokens" => StopReason::Length,
            "content_filter" => StopReason::ContentFilter,
            "pause_turn" => StopReason::Paused,
            other => StopReason::Other(other.to_string()),
        }
    }
}
