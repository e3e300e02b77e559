//! Task files for `cogni run --tasks` and `cogni validate`.
//!
//! ```toml
//! [[agents]]
//! id = "default"
//! provider = "openai"
//! model = "gpt-4o-mini"
//!
//! [[tasks]]
//! id = "hello"
//! agent = "default"
//! prompt = "Create out.txt containing hello"
//! budget = { max_tokens = 50000, max_seconds = 120, max_tool_calls = 20 }
//! checks = [
//!   { command = "test \"$(cat out.txt)\" = hello" },
//!   { file_exists = "out.txt" },
//!   { answer_regex = "(?i)done" },
//! ]
//! ```
//!
//! Relative paths (`prompt_file`, `instructions_file`, `card`, `script`, `record`, `source`,
//! a schema file) are relative to the task file's directory; paths in
//! checks are relative to the task's workspace. See `examples/tasks.toml`
//! for every key.
//!
//! mod.rs holds what a task file means (the checked types); validate.rs
//! reads the file as written and checks it, naming every problem.

mod review;
#[cfg(test)]
mod tests;
mod validate;

use super::cards::AgentCard;
use super::effects::EffectSpec;
use super::{parse_toml, Problem, SpecError};
use crate::strategies::AgentFile;
use cogni_protocol::{ApprovalPolicy, ContextStrategyKind, SandboxMode};
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
pub use cogni_tools::review::Scope;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Timeout of a check command or setup command unless the task says otherwise.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The agent tasks use when the file declares none: cogni's own config.
pub const DEFAULT_AGENT: &str = "default";

/// A validated task file.
#[derive(Debug, Clone)]
pub struct TaskFile {
    /// The task file's path.
    pub path: PathBuf,
    /// `[[agents]]`, in file order; a [`DEFAULT_AGENT`] when the file declares
    /// none.
    pub agents: Vec<AgentSpec>,
    /// `[[tasks]]`, in file order.
    pub tasks: Vec<TaskSpec>,
}

/// `[[agents]]`: who does the work. Unset fields come from cogni's config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentSpec {
    /// `id`: what tasks name it by (`agent = "ID"`) and results report it as.
    pub id: String,
    /// `provider`: a provider of cogni's config (`openai`, `scripted`, ...);
    /// `None`: the config's.
    pub provider: Option<String>,
    /// `model`: overrides the config's model (and a card's); `None`: the
    /// card's, then the config's.
    pub model: Option<String>,
    /// `instructions`, or the text of `instructions_file`.
    pub instructions: Option<String>,
    /// An agent card (`card = "path.md"`): its model when the agent names
    /// none, its instructions after the agent's, its tools; its mode gives
    /// the sandbox when the agent sets none (plan: read-only, act and auto:
    /// workspace-write).
    pub card: Option<AgentCard>,
    /// Most model requests with tool calls in one task.
    pub max_steps: Option<u32>,
    /// `temperature`: sampling temperature for its requests; `None`: the
    /// provider's default.
    pub temperature: Option<f32>,
    /// `sandbox`: the sandbox mode its commands run under; `None`: the card's
    /// mode decides, then the config.
    pub sandbox: Option<SandboxMode>,
    /// `approval`: its approval policy (no one can be asked in a run: asking
    /// means no); `None`: the config's.
    pub approval: Option<ApprovalPolicy>,
    /// USD per million tokens, over the model catalog's price.
    pub input_price: Option<f64>,
    /// `output_price`: USD per million output tokens, over the catalog's price.
    pub output_price: Option<f64>,
    /// For `provider = "scripted"`: the script every task replays unless
    /// the task names its own.
    pub script: Option<PathBuf>,
    /// The agent's effects, after the config's (see docs/effects.md).
    pub effects: Vec<EffectSpec>,
    /// How the agent's requests stay within the window (docs/context.md).
    pub context_strategy: Option<ContextStrategyKind>,
    /// The agent's strategies (`enable_plan`, `enable_test_run`,
    /// `test_command`, `enable_reflect`, ...: the keys of `[agent]`).
    pub strategies: AgentFile,
}

/// Where an attempt runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    /// The source directory itself (attempts of such tasks never overlap).
    InPlace,
    /// A fresh copy of the source per attempt (files ignored by git and
    /// `.git` itself are left out).
    #[default]
    Copy,
    /// A detached git worktree of the source's HEAD per attempt.
    Worktree,
}

impl WorkspaceMode {
    /// The accepted names of `workspace`.
    pub const VARIANTS: &'static [&'static str] = &["in_place", "copy", "worktree"];

    /// The mode's name in task files and results (`in_place`, `copy`,
    /// `worktree`).
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceMode::InPlace => "in_place",
            WorkspaceMode::Copy => "copy",
            WorkspaceMode::Worktree => "worktree",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "in_place" => WorkspaceMode::InPlace,
            "copy" => WorkspaceMode::Copy,
            "worktree" => WorkspaceMode::Worktree,
            _ => return None,
        })
    }
}

/// Spending limits of one attempt, enforced while the agent runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Input + output tokens.
    pub max_tokens: Option<u64>,
    /// From the model's price (catalog, `[model_families]`, or the agent's).
    pub max_cost_usd: Option<f64>,
    /// `max_seconds`: wall time of the attempt, in seconds.
    pub max_seconds: Option<f64>,
    /// Model requests.
    pub max_steps: Option<u32>,
    /// `max_tool_calls`: tool calls of the attempt.
    pub max_tool_calls: Option<u32>,
}

/// `[[tasks]]`, validated.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    /// `id`: the task's unique name in the file, used in results and selection.
    pub id: String,
    /// `agent`: the id of the agent that runs it ([`DEFAULT_AGENT`] when the
    /// file declares no agents).
    pub agent: String,
    /// `prompt` (or the text of `prompt_file`): what the agent is asked to
    /// do; for a review, its focus (may be empty).
    pub prompt: String,
    /// `review = { base = "main" }` (or `uncommitted = true`, `commit`,
    /// `files`): the task is a review of that scope, read-only, whose
    /// findings the checks can assert on (docs/review.md).
    pub review: Option<Scope>,
    /// `workspace`: where each attempt runs.
    pub workspace: WorkspaceMode,
    /// The directory a workspace is made from; the working directory when unset.
    pub source: Option<PathBuf>,
    /// Shell commands run in the workspace before the agent starts.
    pub setup: Vec<String>,
    /// `budget`: spending limits of each attempt.
    pub budget: Budget,
    /// `checks`: what must hold afterwards; all must pass.
    pub checks: Vec<Check>,
    /// `repeat`: attempts of the task (at least 1, default 1).
    pub repeat: u32,
    /// `tags`: single words a run selects tasks by (selector `tag:NAME`).
    pub tags: Vec<String>,
    /// For a scripted agent: the script this task replays.
    pub script: Option<PathBuf>,
    /// `record = FILE`: an agent with a real provider records its session
    /// into FILE; a scripted agent replays FILE (unless it has a script).
    pub record: Option<PathBuf>,
    /// Files and directories of the workspace attached to the prompt.
    pub context_paths: Vec<String>,
    /// Images of the workspace attached to the prompt.
    pub images: Vec<String>,
    /// The task's own strategies, over its agent's: `test_command`,
    /// `enable_plan`, `enable_reflect`.
    pub strategies: AgentFile,
}

/// What must hold after the agent finished.
#[derive(Debug, Clone)]
pub enum Check {
    /// A shell command run in the workspace must exit 0.
    Command {
        /// The command, run with the shell.
        command: String,
        /// `timeout_secs`, or [`DEFAULT_COMMAND_TIMEOUT`]; the command is
        /// killed then.
        timeout: Duration,
    },
    /// `file_exists`: the path, relative to the workspace, must exist.
    FileExists {
        /// The path, relative to the workspace.
        path: String,
    },
    /// The file's text must match the regex.
    FileMatches {
        /// The path, relative to the workspace.
        path: String,
        /// The regex the whole file is searched with.
        pattern: Regex,
    },
    /// The final answer must match the regex.
    AnswerRegex(Regex),
    /// The final answer (its `<answer>` block when present), trimmed, must
    /// equal this, trimmed.
    AnswerEquals(String),
    /// The final answer must be JSON valid against this schema.
    AnswerSchema(serde_json::Value),
    /// `finding = PATH`: a review reported a finding on this file (with
    /// `lines = [START, END]`, one overlapping them), at `priority` or more
    /// severe (default P3: any).
    Finding {
        /// The file, relative to the repository's root.
        path: String,
        /// Lines the finding must overlap (new side, or old for deleted
        /// lines).
        lines: Option<(u32, u32)>,
        /// 0 (P0) to 3 (P3): the least severe priority that counts.
        priority: u8,
    },
    /// `min_findings` / `max_findings`: how many findings, at `priority`
    /// or more severe, a review reported.
    FindingCount {
        /// At least this many.
        min: Option<u32>,
        /// At most this many.
        max: Option<u32>,
        /// 0 (P0) to 3 (P3): the least severe priority that counts.
        priority: u8,
    },
    /// `verdict`: the review's verdict (`correct` or `needs_changes`).
    Verdict(String),
}

impl Check {
    /// The check's key in the task file.
    pub fn kind(&self) -> &'static str {
        match self {
            Check::Command { .. } => "command",
            Check::FileExists { .. } => "file_exists",
            Check::FileMatches { .. } => "file_matches",
            Check::AnswerRegex(_) => "answer_regex",
            Check::AnswerEquals(_) => "answer_equals",
            Check::AnswerSchema(_) => "answer_schema",
            Check::Finding { .. } => "finding",
            Check::FindingCount { .. } => "findings",
            Check::Verdict(_) => "verdict",
        }
    }

    /// One line naming what is checked.
    pub fn describe(&self) -> String {
        match self {
            Check::Command { command, .. } => format!("command `{command}`"),
            Check::FileExists { path } => format!("file_exists {path}"),
            Check::FileMatches { path, pattern } => format!("file_matches {path} /{pattern}/"),
            Check::AnswerRegex(pattern) => format!("answer_regex /{pattern}/"),
            Check::AnswerEquals(expected) => format!("answer_equals {expected:?}"),
            Check::AnswerSchema(_) => "answer_schema".to_string(),
            Check::Finding {
                path,
                lines,
                priority,
            } => {
                let lines = lines.map_or(String::new(), |(a, b)| format!(":{a}-{b}"));
                format!("finding {path}{lines} at P{priority} or above")
            }
            Check::FindingCount { min, max, priority } => {
                let range = match (min, max) {
                    (Some(a), Some(b)) => format!("{a} to {b}"),
                    (Some(a), None) => format!("at least {a}"),
                    (None, Some(b)) => format!("at most {b}"),
                    (None, None) => "any number of".to_string(),
                };
                format!("{range} findings at P{priority} or above")
            }
            Check::Verdict(verdict) => format!("verdict {verdict}"),
        }
    }
}

impl TaskFile {
    /// Read and validate a task file.
    pub fn load(path: &Path) -> Result<TaskFile, SpecError> {
        let source = read_text_limited(path, SPEC_FILE_MAX_BYTES).map_err(|e| SpecError {
            file: path.to_path_buf(),
            problems: vec![Problem::new("0:0", e.to_string())],
        })?;
        TaskFile::parse(path, &source)
    }

    /// Validate `source`, the text of the file at `path` (relative paths
    /// in it are resolved against `path`'s directory).
    pub fn parse(path: &Path, source: &str) -> Result<TaskFile, SpecError> {
        let fail = |problems| SpecError {
            file: path.to_path_buf(),
            problems,
        };
        let (raw, unknown): (validate::RawFile, _) =
            parse_toml(source).map_err(|p| fail(vec![p]))?;
        let mut problems: Vec<Problem> = unknown
            .into_iter()
            .map(|key| Problem::new(key, "unknown key"))
            .collect();
        let file = validate::file(path, raw, &mut problems);
        if problems.is_empty() {
            Ok(file)
        } else {
            Err(fail(problems))
        }
    }

    /// The agent with this id, if the file declares one.
    pub fn agent(&self, id: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.id == id)
    }
}
