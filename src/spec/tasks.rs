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

use super::cards::{self, AgentCard};
use super::effects::EffectSpec;
use super::{parse_toml, resolve, Problem, SpecError};
use crate::agent::effects::reflect::{ReflectionPlacement, ReflectionPolicy};
use crate::config::AgentFile;
use crate::protocol::{ApprovalPolicy, ContextStrategyKind, SandboxMode};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Timeout of a check command or setup command unless the task says otherwise.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The agent tasks use when the file declares none: cogni's own config.
pub const DEFAULT_AGENT: &str = "default";

/// A validated task file.
#[derive(Debug, Clone)]
pub struct TaskFile {
    pub path: PathBuf,
    pub agents: Vec<AgentSpec>,
    pub tasks: Vec<TaskSpec>,
}

/// `[[agents]]`: who does the work. Unset fields come from cogni's config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentSpec {
    pub id: String,
    pub provider: Option<String>,
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
    pub temperature: Option<f32>,
    pub sandbox: Option<SandboxMode>,
    pub approval: Option<ApprovalPolicy>,
    /// USD per million tokens, over the model catalog's price.
    pub input_price: Option<f64>,
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
    pub const VARIANTS: &'static [&'static str] = &["in_place", "copy", "worktree"];

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
    pub max_seconds: Option<f64>,
    /// Model requests.
    pub max_steps: Option<u32>,
    pub max_tool_calls: Option<u32>,
}

/// `[[tasks]]`, validated.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    pub id: String,
    pub agent: String,
    pub prompt: String,
    pub workspace: WorkspaceMode,
    /// The directory a workspace is made from; the working directory when unset.
    pub source: Option<PathBuf>,
    /// Shell commands run in the workspace before the agent starts.
    pub setup: Vec<String>,
    pub budget: Budget,
    pub checks: Vec<Check>,
    pub repeat: u32,
    pub tags: Vec<String>,
    /// For a scripted agent: the script this task replays.
    pub script: Option<PathBuf>,
    /// `record = FILE`: an agent with a real provider records its session
    /// into FILE; a scripted agent replays FILE (unless it has a script).
    pub record: Option<PathBuf>,
    /// Files and directories of the workspace attached to the prompt.
    pub context_paths: Vec<String>,
    /// The task's own strategies, over its agent's: `test_command`,
    /// `enable_plan`, `enable_reflect`.
    pub strategies: AgentFile,
}

/// What must hold after the agent finished.
#[derive(Debug, Clone)]
pub enum Check {
    /// A shell command run in the workspace must exit 0.
    Command {
        command: String,
        timeout: Duration,
    },
    FileExists {
        path: String,
    },
    /// The file's text must match the regex.
    FileMatches {
        path: String,
        pattern: Regex,
    },
    /// The final answer must match the regex.
    AnswerRegex(Regex),
    /// The final answer (its `<answer>` block when present), trimmed, must
    /// equal this, trimmed.
    AnswerEquals(String),
    /// The final answer must be JSON valid against this schema.
    AnswerSchema(serde_json::Value),
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
        }
    }
}

impl TaskFile {
    /// Read and validate a task file.
    pub fn load(path: &Path) -> Result<TaskFile, SpecError> {
        let source = std::fs::read_to_string(path).map_err(|e| SpecError {
            file: path.to_path_buf(),
            problems: vec![Problem::new(
                "0:0",
                format!("cannot read the task file: {e}"),
            )],
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
        let (raw, unknown): (RawFile, _) = parse_toml(source).map_err(|p| fail(vec![p]))?;
        let mut problems: Vec<Problem> = unknown
            .into_iter()
            .map(|key| Problem::new(key, "unknown key"))
            .collect();
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut v = Validator {
            dir,
            problems: &mut problems,
        };
        let file = v.file(path, raw);
        if problems.is_empty() {
            Ok(file)
        } else {
            Err(fail(problems))
        }
    }

    pub fn agent(&self, id: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.id == id)
    }
}

// ---------------------------------------------------------------------------
// The file as written
// ---------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
struct RawFile {
    #[serde(default)]
    agents: Vec<RawAgent>,
    #[serde(default)]
    tasks: Vec<RawTask>,
}

#[derive(Debug, Default, Deserialize)]
struct RawAgent {
    #[serde(default)]
    id: String,
    provider: Option<String>,
    model: Option<String>,
    instructions: Option<String>,
    instructions_file: Option<PathBuf>,
    card: Option<PathBuf>,
    max_steps: Option<u32>,
    temperature: Option<f32>,
    sandbox: Option<String>,
    approval: Option<String>,
    input_price: Option<f64>,
    output_price: Option<f64>,
    script: Option<PathBuf>,
    effects: Option<Vec<toml::Value>>,
    context_strategy: Option<ContextStrategyKind>,
    enable_plan: Option<bool>,
    enable_test_run: Option<bool>,
    test_command: Option<String>,
    test_retries: Option<u32>,
    test_timeout_seconds: Option<u64>,
    enable_reflect: Option<bool>,
    enable_self_diff: Option<bool>,
    reflection_policy: Option<ReflectionPolicy>,
    reflection_placement: Option<ReflectionPlacement>,
    done_token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct RawTask {
    #[serde(default)]
    id: String,
    agent: Option<String>,
    prompt: Option<String>,
    prompt_file: Option<PathBuf>,
    workspace: Option<String>,
    source: Option<PathBuf>,
    #[serde(default)]
    setup: Vec<String>,
    budget: Option<Budget>,
    #[serde(default)]
    checks: Vec<RawCheck>,
    repeat: Option<u32>,
    #[serde(default)]
    tags: Vec<String>,
    script: Option<PathBuf>,
    record: Option<PathBuf>,
    #[serde(default)]
    context_paths: Vec<String>,
    test_command: Option<String>,
    enable_plan: Option<bool>,
    enable_reflect: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
struct RawCheck {
    command: Option<String>,
    /// For `command`.
    timeout_secs: Option<f64>,
    file_exists: Option<String>,
    file_matches: Option<String>,
    /// For `file_matches`.
    pattern: Option<String>,
    answer_regex: Option<String>,
    answer_equals: Option<String>,
    /// A schema inline, or the path of a JSON file holding one.
    answer_schema: Option<toml::Value>,
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

struct Validator<'a> {
    dir: &'a Path,
    problems: &'a mut Vec<Problem>,
}

impl Validator<'_> {
    fn problem(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::new(at, message));
    }

    fn file(&mut self, path: &Path, raw: RawFile) -> TaskFile {
        let mut agents: Vec<AgentSpec> = raw
            .agents
            .into_iter()
            .enumerate()
            .map(|(i, a)| self.agent(&format!("agents[{i}]"), a))
            .collect();
        self.unique("agents", agents.iter().map(|a| a.id.as_str()));
        if agents.is_empty() {
            agents.push(AgentSpec {
                id: DEFAULT_AGENT.into(),
                ..AgentSpec::default()
            });
        }
        if raw.tasks.is_empty() {
            self.problem("tasks", "the file declares no [[tasks]]");
        }
        let tasks: Vec<TaskSpec> = raw
            .tasks
            .into_iter()
            .enumerate()
            .map(|(i, t)| self.task(&format!("tasks[{i}]"), t, &agents))
            .collect();
        self.unique("tasks", tasks.iter().map(|t| t.id.as_str()));
        TaskFile {
            path: path.to_path_buf(),
            agents,
            tasks,
        }
    }

    fn unique<'s>(&mut self, list: &str, ids: impl Iterator<Item = &'s str>) {
        let mut seen = BTreeSet::new();
        for (i, id) in ids.enumerate() {
            if !id.is_empty() && !seen.insert(id) {
                self.problem(format!("{list}[{i}].id"), format!("duplicate id `{id}`"));
            }
        }
    }

    fn id(&mut self, at: &str, id: &str) {
        let valid = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if id.is_empty() {
            self.problem(format!("{at}.id"), "missing id");
        } else if !valid {
            self.problem(
                format!("{at}.id"),
                format!("`{id}`: ids start with a letter or digit and hold only letters, digits, `_`, `.` and `-`"),
            );
        }
    }

    /// The text of a file the task file names, or a problem.
    fn read(&mut self, at: &str, path: &Path) -> Option<String> {
        let full = resolve(self.dir, path);
        match std::fs::read_to_string(&full) {
            Ok(text) => Some(text),
            Err(e) => {
                self.problem(at, format!("cannot read {}: {e}", full.display()));
                None
            }
        }
    }

    fn existing_file(&mut self, at: &str, path: Option<PathBuf>) -> Option<PathBuf> {
        let full = resolve(self.dir, &path?);
        if !full.is_file() {
            self.problem(at, format!("{} is not a file", full.display()));
        }
        Some(full)
    }

    fn agent(&mut self, at: &str, a: RawAgent) -> AgentSpec {
        self.id(at, &a.id);
        let effects = match EffectSpec::parse_all(
            a.effects.as_deref().unwrap_or_default(),
            &format!("{at}.effects"),
        ) {
            Ok(effects) => effects,
            Err(e) => {
                // The message starts with the key path.
                let (path, message) = e.split_once(": ").unwrap_or((at, e.as_str()));
                self.problem(path.to_string(), message.to_string());
                Vec::new()
            }
        };
        let instructions = match (a.instructions, a.instructions_file) {
            (Some(_), Some(_)) => {
                self.problem(at, "set either instructions or instructions_file, not both");
                None
            }
            (Some(text), None) => Some(text),
            (None, Some(file)) => self.read(&format!("{at}.instructions_file"), &file),
            (None, None) => None,
        };
        if let Some(t) = a.temperature {
            if !(0.0..=2.0).contains(&t) {
                self.problem(
                    format!("{at}.temperature"),
                    format!("must be between 0 and 2, got {t}"),
                );
            }
        }
        if a.max_steps == Some(0) {
            self.problem(format!("{at}.max_steps"), "must be at least 1");
        }
        for (key, price) in [
            ("input_price", a.input_price),
            ("output_price", a.output_price),
        ] {
            if price.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
                self.problem(
                    format!("{at}.{key}"),
                    "must be a non-negative number (USD per million tokens)",
                );
            }
        }
        let sandbox = a.sandbox.and_then(|s| {
            let mode = SandboxMode::parse(&s);
            if mode.is_none() {
                self.problem(
                    format!("{at}.sandbox"),
                    format!(
                        "unknown sandbox mode `{s}`; use one of: {}",
                        SandboxMode::VARIANTS.join(", ")
                    ),
                );
            }
            mode
        });
        let approval = a.approval.and_then(|s| {
            let policy = ApprovalPolicy::parse(&s);
            if policy.is_none() {
                self.problem(
                    format!("{at}.approval"),
                    format!(
                        "unknown approval policy `{s}`; use one of: {}",
                        ApprovalPolicy::VARIANTS.join(", ")
                    ),
                );
            }
            policy
        });
        let scripted = a.provider.as_deref() == Some("scripted");
        if a.script.is_some() && !scripted {
            self.problem(
                format!("{at}.script"),
                "a script needs provider = \"scripted\"",
            );
        }
        let script = self.existing_file(&format!("{at}.script"), a.script);
        let card = a.card.and_then(|path| {
            let key = format!("{at}.card");
            let text = self.read(&key, &path)?;
            match cards::parse(&resolve(self.dir, &path), &text) {
                Ok(card) => Some(card),
                Err(e) => {
                    self.problem(key, e);
                    None
                }
            }
        });
        let sandbox = sandbox.or_else(|| match card.as_ref()?.mode.as_deref()? {
            "plan" => Some(SandboxMode::ReadOnly),
            _ => Some(SandboxMode::WorkspaceWrite),
        });
        AgentSpec {
            id: a.id,
            provider: a.provider,
            model: a.model,
            instructions,
            card,
            max_steps: a.max_steps,
            temperature: a.temperature,
            sandbox,
            approval,
            input_price: a.input_price,
            output_price: a.output_price,
            script,
            effects,
            context_strategy: a.context_strategy,
            strategies: AgentFile {
                enable_plan: a.enable_plan,
                enable_test_run: a.enable_test_run,
                test_command: a.test_command,
                test_retries: a.test_retries,
                test_timeout_seconds: a.test_timeout_seconds,
                enable_reflect: a.enable_reflect,
                enable_self_diff: a.enable_self_diff,
                reflection_policy: a.reflection_policy,
                reflection_placement: a.reflection_placement,
                done_token: a.done_token,
                ..AgentFile::default()
            },
        }
    }

    fn task(&mut self, at: &str, t: RawTask, agents: &[AgentSpec]) -> TaskSpec {
        self.id(at, &t.id);
        let prompt = match (t.prompt, &t.prompt_file) {
            (Some(_), Some(_)) => {
                self.problem(at, "set either prompt or prompt_file, not both");
                None
            }
            (Some(text), None) => Some((text, "prompt")),
            (None, Some(file)) => self
                .read(&format!("{at}.prompt_file"), file)
                .map(|text| (text, "prompt_file")),
            (None, None) => {
                self.problem(at, "missing prompt (set prompt or prompt_file)");
                None
            }
        };
        let prompt = match prompt {
            Some((text, key)) if text.trim().is_empty() => {
                self.problem(format!("{at}.{key}"), "the prompt is empty");
                text
            }
            Some((text, _)) => text,
            None => String::new(),
        };
        let agent = match t.agent {
            Some(id) => {
                if !agents.iter().any(|a| a.id == id) {
                    self.problem(
                        format!("{at}.agent"),
                        format!("unknown agent `{id}`; declared: {}", ids(agents)),
                    );
                }
                id
            }
            None => match agents {
                [only] => only.id.clone(),
                _ if agents.iter().any(|a| a.id == DEFAULT_AGENT) => DEFAULT_AGENT.into(),
                _ => {
                    self.problem(
                        format!("{at}.agent"),
                        format!("several agents are declared; name one of: {}", ids(agents)),
                    );
                    String::new()
                }
            },
        };
        let workspace = match t.workspace.as_deref() {
            None => WorkspaceMode::default(),
            Some(s) => WorkspaceMode::parse(s).unwrap_or_else(|| {
                self.problem(
                    format!("{at}.workspace"),
                    format!(
                        "unknown workspace `{s}`; use one of: {}",
                        WorkspaceMode::VARIANTS.join(", ")
                    ),
                );
                WorkspaceMode::default()
            }),
        };
        let source = t.source.map(|s| {
            let full = resolve(self.dir, &s);
            if !full.is_dir() {
                self.problem(
                    format!("{at}.source"),
                    format!("{} is not a directory", full.display()),
                );
            }
            full
        });
        for (i, command) in t.setup.iter().enumerate() {
            if command.trim().is_empty() {
                self.problem(format!("{at}.setup[{i}]"), "empty command");
            }
        }
        let budget = t.budget.unwrap_or_default();
        self.budget(&format!("{at}.budget"), &budget);
        let checks = t
            .checks
            .into_iter()
            .enumerate()
            .filter_map(|(i, c)| self.check(&format!("{at}.checks[{i}]"), c))
            .collect();
        if t.repeat == Some(0) {
            self.problem(format!("{at}.repeat"), "must be at least 1");
        }
        for (i, path) in t.context_paths.iter().enumerate() {
            let p = Path::new(path);
            if path.trim().is_empty()
                || p.is_absolute()
                || p.components().any(|c| c.as_os_str() == "..")
            {
                self.problem(
                    format!("{at}.context_paths[{i}]"),
                    format!("`{path}`: a path inside the workspace, relative to its root"),
                );
            }
        }
        for (i, tag) in t.tags.iter().enumerate() {
            if tag.trim().is_empty() || tag.contains(char::is_whitespace) {
                self.problem(
                    format!("{at}.tags[{i}]"),
                    format!("`{tag}`: tags are single words"),
                );
            }
        }
        let scripted = agents.iter().find(|a| a.id == agent).map(|a| {
            (
                a.provider.as_deref() == Some("scripted"),
                a.script.is_some(),
            )
        });
        match scripted {
            Some((false, _)) if t.script.is_some() => self.problem(
                format!("{at}.script"),
                format!("a script needs an agent with provider = \"scripted\"; `{agent}` is not"),
            ),
            Some((true, false)) if t.script.is_none() && t.record.is_none() => self.problem(
                format!("{at}.script"),
                format!(
                    "agent `{agent}` uses the scripted provider: set script (or record) here, or script on the agent"
                ),
            ),
            _ => {}
        }
        let script = self.existing_file(&format!("{at}.script"), t.script);
        let record = t.record.map(|path| resolve(self.dir, &path));
        TaskSpec {
            id: t.id,
            agent,
            prompt,
            workspace,
            source,
            setup: t.setup,
            budget,
            checks,
            repeat: t.repeat.unwrap_or(1),
            tags: t.tags,
            script,
            record,
            context_paths: t.context_paths,
            strategies: AgentFile {
                test_command: t.test_command,
                enable_plan: t.enable_plan,
                enable_reflect: t.enable_reflect,
                ..AgentFile::default()
            },
        }
    }

    fn budget(&mut self, at: &str, b: &Budget) {
        let mut positive = |key: &str, ok: bool| {
            if !ok {
                self.problems.push(Problem::new(
                    format!("{at}.{key}"),
                    "must be greater than 0",
                ));
            }
        };
        positive("max_tokens", b.max_tokens != Some(0));
        positive("max_steps", b.max_steps != Some(0));
        positive("max_tool_calls", b.max_tool_calls != Some(0));
        let finite = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v > 0.0);
        positive("max_cost_usd", finite(b.max_cost_usd));
        if let Some(Err(problem)) = b.max_seconds.map(seconds) {
            self.problem(format!("{at}.max_seconds"), problem);
        }
    }

    fn check(&mut self, at: &str, c: RawCheck) -> Option<Check> {
        let set: Vec<&str> = [
            ("command", c.command.is_some()),
            ("file_exists", c.file_exists.is_some()),
            ("file_matches", c.file_matches.is_some()),
            ("answer_regex", c.answer_regex.is_some()),
            ("answer_equals", c.answer_equals.is_some()),
            ("answer_schema", c.answer_schema.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, on)| on.then_some(k))
        .collect();
        if set.len() != 1 {
            self.problem(
                at,
                format!(
                    "a check needs exactly one of command, file_exists, file_matches, answer_regex, answer_equals, answer_schema{}",
                    if set.is_empty() { String::new() } else { format!(" (found {})", set.join(", ")) }
                ),
            );
            return None;
        }
        if c.timeout_secs.is_some() && c.command.is_none() {
            self.problem(
                format!("{at}.timeout_secs"),
                "only a command check has a timeout",
            );
        }
        if c.pattern.is_some() && c.file_matches.is_none() {
            self.problem(format!("{at}.pattern"), "only file_matches takes a pattern");
        }
        if let Some(command) = c.command {
            if command.trim().is_empty() {
                self.problem(format!("{at}.command"), "empty command");
            }
            let timeout = match c.timeout_secs.map(seconds) {
                None => DEFAULT_COMMAND_TIMEOUT,
                Some(Ok(timeout)) => timeout,
                Some(Err(problem)) => {
                    self.problem(format!("{at}.timeout_secs"), problem);
                    DEFAULT_COMMAND_TIMEOUT
                }
            };
            return Some(Check::Command { command, timeout });
        }
        if let Some(path) = c.file_exists {
            self.workspace_path(&format!("{at}.file_exists"), &path);
            return Some(Check::FileExists { path });
        }
        if let Some(path) = c.file_matches {
            self.workspace_path(&format!("{at}.file_matches"), &path);
            let Some(pattern) = c.pattern else {
                self.problem(at, "file_matches needs a pattern (a regex)");
                return None;
            };
            let pattern = self.regex(&format!("{at}.pattern"), &pattern)?;
            return Some(Check::FileMatches { path, pattern });
        }
        if let Some(pattern) = c.answer_regex {
            return self
                .regex(&format!("{at}.answer_regex"), &pattern)
                .map(Check::AnswerRegex);
        }
        if let Some(expected) = c.answer_equals {
            return Some(Check::AnswerEquals(expected));
        }
        let schema = c.answer_schema?;
        self.schema(&format!("{at}.answer_schema"), schema)
            .map(Check::AnswerSchema)
    }

    fn regex(&mut self, at: &str, pattern: &str) -> Option<Regex> {
        match Regex::new(pattern) {
            Ok(re) => Some(re),
            Err(e) => {
                let detail = e.to_string();
                // The regex error draws the pattern with a caret over
                // several lines; keep its last line, the reason.
                let reason = detail.lines().last().unwrap_or("").trim();
                self.problem(at, format!("invalid regex `{pattern}`: {reason}"));
                None
            }
        }
    }

    fn schema(&mut self, at: &str, value: toml::Value) -> Option<serde_json::Value> {
        let schema = match value {
            toml::Value::String(file) => {
                let text = self.read(at, Path::new(&file))?;
                match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(e) => {
                        self.problem(at, format!("{file}: invalid JSON: {e}"));
                        return None;
                    }
                }
            }
            table @ toml::Value::Table(_) => serde_json::to_value(table).ok()?,
            _ => {
                self.problem(at, "a JSON Schema as a table, or the path of a JSON file");
                return None;
            }
        };
        if let Err(e) = jsonschema::validator_for(&schema) {
            self.problem(at, format!("not a valid JSON Schema: {e}"));
            return None;
        }
        Some(schema)
    }

    /// Paths in checks stay inside the workspace.
    fn workspace_path(&mut self, at: &str, path: &str) {
        let p = Path::new(path);
        let escapes = p
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
        if path.is_empty() || escapes {
            self.problem(
                at,
                format!("`{path}`: a path relative to the workspace, without `..`"),
            );
        }
    }
}

/// `s` seconds as a duration: greater than 0 and not too large for one
/// (`Duration::from_secs_f64` panics on those; the runner uses it for
/// `max_seconds`).
fn seconds(s: f64) -> Result<Duration, &'static str> {
    if s.is_nan() || s <= 0.0 {
        return Err("must be greater than 0");
    }
    Duration::try_from_secs_f64(s).map_err(|_| "is too large")
}

fn ids(agents: &[AgentSpec]) -> String {
    agents
        .iter()
        .map(|a| format!("`{}`", a.id))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(source: &str) -> Result<TaskFile, SpecError> {
        TaskFile::parse(Path::new("/nonexistent/tasks.toml"), source)
    }

    fn problems(source: &str) -> Vec<String> {
        parse(source)
            .unwrap_err()
            .problems
            .into_iter()
            .map(|p| format!("{}: {}", p.at, p.message))
            .collect()
    }

    const ISSUE_EXAMPLE: &str = r#"
[[agents]]
id = "default"
provider = "openai"
model = "gpt-4o-mini"

[[tasks]]
id = "hello"
agent = "default"
prompt = "Create out.txt containing hello"
budget = { max_tokens = 50000, max_seconds = 120, max_tool_calls = 20 }
checks = [
  { command = "test \"$(cat out.txt)\" = hello" },
  { file_exists = "out.txt" },
  { answer_regex = "(?i)done" },
]
"#;

    #[test]
    fn the_issue_example_parses() {
        let file = parse(ISSUE_EXAMPLE).unwrap();
        assert_eq!(file.agents.len(), 1);
        let task = &file.tasks[0];
        assert_eq!(task.agent, "default");
        assert_eq!(task.workspace, WorkspaceMode::Copy);
        assert_eq!(task.repeat, 1);
        assert_eq!(task.budget.max_tokens, Some(50000));
        assert_eq!(task.budget.max_seconds, Some(120.0));
        let kinds: Vec<&str> = task.checks.iter().map(Check::kind).collect();
        assert_eq!(kinds, ["command", "file_exists", "answer_regex"]);
        assert!(matches!(
            &task.checks[0],
            Check::Command { timeout, .. } if *timeout == DEFAULT_COMMAND_TIMEOUT
        ));
    }

    #[test]
    fn without_agents_tasks_use_the_default_agent() {
        let file = parse("[[tasks]]\nid = \"a\"\nprompt = \"p\"\ntags = [\"smoke\"]\n").unwrap();
        assert_eq!(file.agents[0].id, DEFAULT_AGENT);
        assert_eq!(file.tasks[0].agent, DEFAULT_AGENT);
        assert_eq!(file.tasks[0].tags, ["smoke"]);
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let got = problems(
            r#"
[[agents]]
id = "a"
temperature = 3.0
sandbox = "yolo"
mdoel = "x"

[[agents]]
id = "b"

[[tasks]]
id = "one"
agent = "nobody"
prompt = "x"
budget = { max_tokens = 0, max_secondz = 1 }
checks = [
  { answer_regex = "(unclosed" },
  { file_matches = "out.txt", pattern = "[z-a]" },
  { answer_schema = { type = 7 } },
  { file_exists = "../etc/passwd" },
  { command = "true", file_exists = "x" },
  { },
]

[[tasks]]
id = "one"
prompt_file = "missing.md"

[[tasks]]
id = "bad id!"
prompt = "x"
agent = "a"
repeat = 0
"#,
        );
        let expected = [
            "agents[0].mdoel: unknown key",
            "tasks[0].budget.max_secondz: unknown key",
            "agents[0].temperature: must be between 0 and 2",
            "agents[0].sandbox: unknown sandbox mode `yolo`",
            "tasks[0].agent: unknown agent `nobody`; declared: `a`, `b`",
            "tasks[0].budget.max_tokens: must be greater than 0",
            "tasks[0].checks[0].answer_regex: invalid regex `(unclosed`",
            "tasks[0].checks[1].pattern: invalid regex `[z-a]`",
            "tasks[0].checks[2].answer_schema: not a valid JSON Schema",
            "tasks[0].checks[3].file_exists: `../etc/passwd`: a path relative to the workspace",
            "tasks[0].checks[4]: a check needs exactly one of",
            "tasks[0].checks[5]: a check needs exactly one of",
            "tasks[1].prompt_file: cannot read /nonexistent/missing.md",
            "tasks[1].agent: several agents are declared; name one of: `a`, `b`",
            "tasks[2].id: `bad id!`: ids start with",
            "tasks[2].repeat: must be at least 1",
            "tasks[1].id: duplicate id `one`",
        ];
        for needle in expected {
            assert!(
                got.iter().any(|p| p.starts_with(needle)),
                "{needle:?} missing from:\n{}",
                got.join("\n")
            );
        }
        assert_eq!(got.len(), expected.len(), "{}", got.join("\n"));
    }

    #[test]
    fn context_paths_stay_inside_the_workspace() {
        let got = problems(
            r#"
[[tasks]]
id = "t"
prompt = "x"
context_paths = ["src", "docs/a.md", "/etc/passwd", "../up", " "]
"#,
        );
        assert_eq!(
            got,
            [
                "tasks[0].context_paths[2]: `/etc/passwd`: a path inside the workspace, relative to its root",
                "tasks[0].context_paths[3]: `../up`: a path inside the workspace, relative to its root",
                "tasks[0].context_paths[4]: ` `: a path inside the workspace, relative to its root",
            ]
        );
    }

    #[test]
    fn seconds_too_large_for_a_duration_are_a_problem_not_a_panic() {
        // Found by the task_file fuzz target: a timeout_secs of 1.4e73
        // made validation panic in Duration::from_secs_f64; a max_seconds
        // that large passed validation and would have made the runner
        // panic the same way.
        let got = problems(
            r#"
[[tasks]]
id = "t"
prompt = "x"
budget = { max_seconds = 1e30 }
checks = [
  { command = "true", timeout_secs = 1.4e73 },
  { command = "true", timeout_secs = inf },
  { command = "true", timeout_secs = nan },
  { command = "true", timeout_secs = 0.5 },
]
"#,
        );
        assert_eq!(
            got,
            [
                "tasks[0].budget.max_seconds: is too large",
                "tasks[0].checks[0].timeout_secs: is too large",
                "tasks[0].checks[1].timeout_secs: is too large",
                "tasks[0].checks[2].timeout_secs: must be greater than 0",
            ]
        );
    }

    #[test]
    fn syntax_errors_point_at_the_line() {
        let err = parse("[[tasks]]\nid = \"a\"\nprompt = \n").unwrap_err();
        assert_eq!(err.problems.len(), 1);
        assert!(err.problems[0].at.starts_with("3:"), "{err}");
        assert!(err.to_string().starts_with("/nonexistent/tasks.toml:3:"));
    }

    #[test]
    fn an_empty_file_has_no_tasks() {
        assert_eq!(problems(""), ["tasks: the file declares no [[tasks]]"]);
    }

    #[test]
    fn agent_cards_are_parsed_and_their_mode_gives_the_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("agents")).unwrap();
        std::fs::write(
            dir.path().join("agents/reviewer.md"),
            "+++\nmodel = \"gpt-4o-mini\"\ntools = [\"read_file\"]\nmode = \"plan\"\n+++\nReview only.\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("agents/bad.md"), "+++\nmodle = 1\n+++\n").unwrap();
        let path = dir.path().join("tasks.toml");
        let body = |card: &str, sandbox: &str| {
            format!("[[agents]]\nid = \"a\"\ncard = \"{card}\"\n{sandbox}\n[[tasks]]\nid = \"t\"\nagent = \"a\"\nprompt = \"x\"\n")
        };
        std::fs::write(&path, body("agents/reviewer.md", "")).unwrap();
        let file = TaskFile::load(&path).unwrap();
        let card = file.agents[0].card.as_ref().unwrap();
        assert_eq!(card.model.as_deref(), Some("gpt-4o-mini"));
        assert_eq!(card.instructions, "Review only.");
        assert_eq!(file.agents[0].sandbox, Some(SandboxMode::ReadOnly));
        // The agent's own sandbox wins over the card's mode.
        std::fs::write(
            &path,
            body("agents/reviewer.md", "sandbox = \"workspace-write\""),
        )
        .unwrap();
        let file = TaskFile::load(&path).unwrap();
        assert_eq!(file.agents[0].sandbox, Some(SandboxMode::WorkspaceWrite));
        for (card, says) in [
            ("agents/bad.md", "modle"),
            ("agents/none.md", "cannot read"),
        ] {
            std::fs::write(&path, body(card, "")).unwrap();
            let e = TaskFile::load(&path).unwrap_err().to_string();
            assert!(e.contains("agents[0].card") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn files_named_by_the_task_file_are_read_relative_to_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("prompt.md"), "Do the thing").unwrap();
        std::fs::write(dir.path().join("card.md"), "You are careful.").unwrap();
        std::fs::write(dir.path().join("s.toml"), "[[turns]]\ntext = \"ok\"\n").unwrap();
        std::fs::write(
            dir.path().join("schema.json"),
            r#"{"type":"object","required":["ok"]}"#,
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("fixture")).unwrap();
        let path = dir.path().join("tasks.toml");
        std::fs::write(
            &path,
            r#"
[[agents]]
id = "offline"
provider = "scripted"
instructions_file = "card.md"
input_price = 1.5

[[tasks]]
id = "t"
prompt_file = "prompt.md"
script = "s.toml"
source = "fixture"
workspace = "worktree"
checks = [{ answer_schema = "schema.json" }, { command = "make", timeout_secs = 2.5 }]
"#,
        )
        .unwrap();
        let file = TaskFile::load(&path).unwrap();
        let agent = &file.agents[0];
        assert_eq!(agent.instructions.as_deref(), Some("You are careful."));
        assert_eq!(agent.input_price, Some(1.5));
        let task = &file.tasks[0];
        assert_eq!(task.prompt, "Do the thing");
        assert_eq!(
            task.script.as_deref(),
            Some(dir.path().join("s.toml").as_path())
        );
        assert_eq!(
            task.source.as_deref(),
            Some(dir.path().join("fixture").as_path())
        );
        assert_eq!(task.workspace, WorkspaceMode::Worktree);
        assert!(matches!(&task.checks[0], Check::AnswerSchema(s) if s["required"][0] == "ok"));
        assert!(matches!(
            &task.checks[1],
            Check::Command { timeout, .. } if *timeout == Duration::from_millis(2500)
        ));
    }

    #[test]
    fn scripted_agents_need_a_script_and_scripts_need_a_scripted_agent() {
        let got = problems(
            r#"
[[agents]]
id = "offline"
provider = "scripted"
[[agents]]
id = "real"
script = "s.toml"
[[tasks]]
id = "a"
agent = "offline"
prompt = "x"
[[tasks]]
id = "b"
agent = "real"
prompt = "x"
script = "s.toml"
"#,
        );
        let joined = got.join("\n");
        assert!(
            joined.contains("agents[1].script: a script needs provider = \"scripted\""),
            "{joined}"
        );
        assert!(
            joined.contains("tasks[0].script: agent `offline` uses the scripted provider"),
            "{joined}"
        );
        assert!(
            joined
                .contains("tasks[1].script: a script needs an agent with provider = \"scripted\""),
            "{joined}"
        );
    }
}
