//! A task file as written, and its checks: every problem is named with
//! where it is (a key path) and what would fix it.

use super::review::{self, RawFindingCheck, RawReview};
use super::{
    AgentSpec, Budget, Check, TaskFile, TaskSpec, WorkspaceMode, DEFAULT_AGENT,
    DEFAULT_COMMAND_TIMEOUT,
};
use crate::cards;
use crate::effects::EffectSpec;
use crate::strategies::AgentFile;
use crate::strategies::{ReflectionPlacement, ReflectionPolicy};
use crate::{resolve, Problem};
use cogni_protocol::{ApprovalPolicy, ContextStrategyKind, SandboxMode};
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use regex::Regex;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

// ---------------------------------------------------------------------------
// The file as written
// ---------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
pub(super) struct RawFile {
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
    auto_context: Option<bool>,
    max_context_bytes: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
struct RawTask {
    #[serde(default)]
    id: String,
    agent: Option<String>,
    prompt: Option<String>,
    prompt_file: Option<PathBuf>,
    review: Option<RawReview>,
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
    #[serde(default)]
    images: Vec<String>,
    test_command: Option<String>,
    enable_plan: Option<bool>,
    enable_reflect: Option<bool>,
    auto_context: Option<bool>,
    max_context_bytes: Option<usize>,
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
    /// A review's finding on this file.
    finding: Option<String>,
    /// For `finding`: `[START, END]`.
    lines: Option<Vec<i64>>,
    /// For `finding`, `min_findings`, `max_findings`: `P0`..`P3`.
    priority: Option<String>,
    min_findings: Option<u32>,
    max_findings: Option<u32>,
    /// A review's verdict.
    verdict: Option<String>,
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

/// Check `raw`, the file at `path` as written, adding what is wrong to
/// `problems` (relative paths in it are resolved against `path`'s
/// directory).
pub(super) fn file(path: &Path, raw: RawFile, problems: &mut Vec<Problem>) -> TaskFile {
    let dir = path.parent().unwrap_or(Path::new("."));
    Validator { dir, problems }.file(path, raw)
}

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
        match read_text_limited(&full, SPEC_FILE_MAX_BYTES) {
            Ok(text) => Some(text),
            Err(e) => {
                self.problem(at, e.to_string());
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
                auto_context: a.auto_context,
                max_context_bytes: a.max_context_bytes,
                ..AgentFile::default()
            },
        }
    }

    fn task(&mut self, at: &str, t: RawTask, agents: &[AgentSpec]) -> TaskSpec {
        self.id(at, &t.id);
        let review = t
            .review
            .and_then(|raw| review::scope(&format!("{at}.review"), raw, self.problems));
        let is_review = review.is_some();
        let prompt = match (t.prompt, &t.prompt_file) {
            (Some(_), Some(_)) => {
                self.problem(at, "set either prompt or prompt_file, not both");
                None
            }
            (Some(text), None) => Some((text, "prompt")),
            (None, Some(file)) => self
                .read(&format!("{at}.prompt_file"), file)
                .map(|text| (text, "prompt_file")),
            // A review's prompt is its focus, if any.
            (None, None) if is_review => None,
            (None, None) => {
                self.problem(at, "missing prompt (set prompt or prompt_file)");
                None
            }
        };
        let prompt = match prompt {
            Some((text, key)) if text.trim().is_empty() && !is_review => {
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
            // A review reads git's history: a worktree has it, a copy not.
            None if is_review => WorkspaceMode::Worktree,
            Some("copy") if is_review => {
                self.problem(
                    format!("{at}.workspace"),
                    "a review reads the repository's history, which a copy leaves out: use workspace = \"worktree\" (the default for a review) or \"in_place\"",
                );
                WorkspaceMode::Worktree
            }
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
            .filter_map(|(i, c)| self.check(&format!("{at}.checks[{i}]"), c, is_review))
            .collect();
        if t.repeat == Some(0) {
            self.problem(format!("{at}.repeat"), "must be at least 1");
        }
        let paths = (t.context_paths.iter().map(|p| ("context_paths", p)))
            .chain(t.images.iter().map(|p| ("images", p)));
        let mut index = std::collections::HashMap::new();
        for (key, path) in paths {
            let i = index.entry(key).or_insert(0usize);
            let p = Path::new(path);
            // Only plain names: no root (`/x`, and on Windows `\\x`, which
            // `is_absolute` lets through), no drive (`C:x`), no `..`.
            let plain = p
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            if path.trim().is_empty() || !plain {
                self.problem(
                    format!("{at}.{key}[{i}]"),
                    format!("`{path}`: a path inside the workspace, relative to its root"),
                );
            }
            *i += 1;
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
            review,
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
            images: t.images,
            strategies: AgentFile {
                test_command: t.test_command,
                enable_plan: t.enable_plan,
                enable_reflect: t.enable_reflect,
                auto_context: t.auto_context,
                max_context_bytes: t.max_context_bytes,
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

    fn check(&mut self, at: &str, c: RawCheck, is_review: bool) -> Option<Check> {
        let findings = RawFindingCheck {
            finding: c.finding,
            lines: c.lines,
            priority: c.priority,
            min_findings: c.min_findings,
            max_findings: c.max_findings,
            verdict: c.verdict,
        };
        let mut set: Vec<&str> = [
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
        set.extend(findings.kinds());
        if set.len() != 1 {
            self.problem(
                at,
                format!(
                    "a check needs exactly one of command, file_exists, file_matches, answer_regex, answer_equals, answer_schema, finding, min_findings/max_findings, verdict{}",
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
        if !findings.kinds().is_empty() {
            return review::check(at, findings, is_review, self.problems);
        }
        if findings.lines.is_some() || findings.priority.is_some() {
            self.problem(
                at,
                "lines and priority go with finding, min_findings or max_findings",
            );
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
