//! `results.json`: what a run did, per task and attempt, and a summary.
//! The schema is versioned ([`SCHEMA_VERSION`]) and documented in
//! docs/results.md, with a JSON Schema in docs/results.schema.json. Fields
//! are only ever added within a version.

use cogni_metrics::AgentTotals;
use cogni_protocol::{utc_date_time, Limit, Plan, QuestionRecord, TestRun};
use cogni_transcript as transcript;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Bumped when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole of `results.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// `YYYYMMDDThhmmssZ-xxxx`: the start time (UTC) and 4 hex digits.
    pub run_id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC.
    pub finished_at: String,
    /// The version of the cogni binary that ran.
    pub cogni_version: String,
    /// The task file, as resolved.
    pub tasks_file: String,
    /// `null` outside a git repository.
    pub repository: Option<Repository>,
    /// How the run was asked for.
    pub settings: RunSettings,
    /// The agents the run used.
    pub agents: Vec<AgentInfo>,
    /// One entry per selected task and agent, in selection order.
    pub tasks: Vec<TaskResult>,
    /// Counts and totals over every attempt.
    pub summary: Summary,
    /// The shards this file holds: one for a `--shard K/N` run, every
    /// shard for a merged run; absent when the run was not sharded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardInfo>,
    /// With `shards`: every task and agent of the whole run before it was
    /// split, and how many attempts each has, so that a merge can tell
    /// which attempt is missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned: Vec<PlannedTask>,
}

/// One shard of a sharded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// 1-based.
    pub index: u32,
    /// N of `--shard K/N`: how many shards the run was split into.
    pub total: u32,
    /// The shard's own run id and times.
    pub run_id: String,
    /// The shard's start, RFC 3339, UTC.
    pub started_at: String,
    /// The shard's end, RFC 3339, UTC.
    pub finished_at: String,
    /// Attempts the shard ran (or skipped).
    pub attempts: usize,
    /// The shard's wall time, in milliseconds.
    pub wall_ms: u64,
}

/// A task with its agent, as selected for the whole (unsharded) run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedTask {
    /// The task's id.
    pub task: String,
    /// The agent's id.
    pub agent: String,
    /// How many attempts the whole run has of it.
    pub attempts: u32,
}

/// The git repository the run started in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repository {
    /// The name of the repository's top directory.
    pub name: String,
    /// HEAD's full commit hash.
    pub commit: String,
    /// `null` on a detached HEAD.
    pub branch: Option<String>,
    /// Uncommitted changes when the run started.
    pub dirty: bool,
}

/// How the run was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The task selectors, as given.
    pub selectors: Vec<String>,
    /// `--agent`: the agent every task ran with instead of its own.
    pub agent_override: Option<String>,
    /// Attempts run at once (`--jobs`).
    pub jobs: usize,
    /// `--repeat`, over each task's own `repeat`.
    pub repeat: Option<u32>,
    /// `--fail-fast`: attempts after the first failure were skipped.
    pub fail_fast: bool,
}

/// One agent the run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// The agent's id in the task file.
    pub id: String,
    /// The provider's id.
    pub provider: String,
    /// The model it ran.
    pub model: String,
    /// USD per million tokens; `null` when the model's price is unknown.
    pub price: Option<PriceInfo>,
    /// The sandbox mode the agent's commands ran in (added within version
    /// 1: empty when reading a file written before it).
    #[serde(default)]
    pub sandbox: String,
}

/// A model's price, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PriceInfo {
    /// Uncached input tokens.
    pub input: f64,
    /// Input tokens read from the prompt cache.
    pub cached_input: f64,
    /// Output tokens.
    pub output: f64,
}

/// One task with one agent, and its attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task's id.
    pub id: String,
    /// The id of the agent that ran it.
    pub agent: String,
    /// The task's tags.
    pub tags: Vec<String>,
    /// `in_place`, `copy` or `worktree`.
    pub workspace: String,
    /// `passed` when every attempt passed; else the status of the first
    /// attempt that did not.
    pub status: Status,
    /// Its attempts, in order.
    pub attempts: Vec<AttemptResult>,
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The agent finished and every check passed.
    Passed,
    /// A check failed, or the agent did not finish (steps, empty answers...).
    Failed,
    /// A budget of the task ran out.
    BudgetExceeded,
    /// Setup failed, the provider failed, or the run was interrupted.
    Error,
    /// Not run (`--fail-fast` after a failure, or an interrupted run).
    Skipped,
}

impl Status {
    /// The status as results.json and reports write it (`passed`,
    /// `budget_exceeded`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::BudgetExceeded => "budget_exceeded",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }
}

/// Why an attempt did not pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// A check of the task failed.
    CheckFailed,
    /// A budget of the task ran out (see the attempt's `limit`).
    BudgetExceeded,
    /// The provider failed (after its retries).
    ProviderError,
    /// The agent's step limit (`max_steps` of the agent) was reached.
    MaxSteps,
    /// The agent stopped without an answer: empty responses, output cut off
    /// at the token limit, a repeated failing call (see `outcome`).
    AgentFailed,
    /// The run was interrupted (Ctrl-C, SIGTERM, SIGHUP).
    Interrupted,
    /// The workspace, a setup command or the session could not be set up.
    SetupFailed,
}

impl FailureReason {
    /// The reason as results.json writes it (`check_failed`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::CheckFailed => "check_failed",
            FailureReason::BudgetExceeded => "budget_exceeded",
            FailureReason::ProviderError => "provider_error",
            FailureReason::MaxSteps => "max_steps",
            FailureReason::AgentFailed => "agent_failed",
            FailureReason::Interrupted => "interrupted",
            FailureReason::SetupFailed => "setup_failed",
        }
    }

    /// The attempt status the reason gives: `failed` for check, step and
    /// agent failures, `budget_exceeded`, `error` for the rest.
    pub fn status(self) -> Status {
        match self {
            FailureReason::CheckFailed | FailureReason::MaxSteps | FailureReason::AgentFailed => {
                Status::Failed
            }
            FailureReason::BudgetExceeded => Status::BudgetExceeded,
            FailureReason::ProviderError
            | FailureReason::Interrupted
            | FailureReason::SetupFailed => Status::Error,
        }
    }
}

/// Token counts as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input tokens, cached ones included.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Part of `input` served from the provider's cache.
    pub cached_input: u64,
}

impl Tokens {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input + self.output
    }

    fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cached_input += other.cached_input;
    }
}

/// One attempt of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptResult {
    /// 1-based.
    pub attempt: u32,
    /// How it ended.
    pub status: Status,
    /// Why it did not pass; `None` when it passed or was skipped.
    pub failure_reason: Option<FailureReason>,
    /// The budget that ran out, with `budget_exceeded`.
    pub limit: Option<Limit>,
    /// The engine's turn outcome (`done`, `max_steps`, ...); `null`
    /// when the agent did not run or failed with an error.
    pub outcome: Option<String>,
    /// What went wrong, in words, when the status is not `passed`.
    pub error: Option<String>,
    /// The task's checks, in order; empty when the agent did not finish.
    pub checks: Vec<CheckResult>,
    /// The tokens the agent used, delegated agents' included.
    pub tokens: Tokens,
    /// `null` when the model's price is unknown.
    pub cost_usd: Option<f64>,
    /// The whole attempt: workspace, setup, agent, checks, clean-up.
    pub wall_ms: u64,
    /// The agent's turn alone.
    pub agent_ms: u64,
    /// Model requests made in all, as the metrics count them.
    pub model_requests: u32,
    /// Model requests of the turn itself (its iterations).
    pub steps: u32,
    /// Calls per tool name.
    pub tool_calls: BTreeMap<String, u32>,
    /// Paths the file tools read and changed (shell commands are not traced).
    pub files_read: Vec<String>,
    /// Paths the file tools changed.
    pub files_written: Vec<String>,
    /// History compactions.
    pub compactions: u32,
    /// The agent's last message.
    pub final_answer: String,
    /// The model's last plan (`update_plan`, with `[agent] enable_plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Each run of the test command (`test_command`, with the test loop).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestRun>,
    /// The questions the agent asked (`ask_user`), each with the answer it
    /// got: no one is asked in a run, so its default or none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<QuestionRecord>,
    /// A review task's report: verdict, explanation and findings
    /// (docs/review.schema.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<crate::review::Review>,
    /// With delegated agents: tokens and cost by agent path (the attempt's
    /// agent and each it started); `tokens` and `cost_usd` include them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, AgentTotals>,
    /// What the agent did, step by step; kept in transcripts.jsonl beside
    /// results.json, not in it.
    #[serde(skip)]
    pub transcript: Option<transcript::Json>,
}

impl AttemptResult {
    /// An attempt that has not run yet (and so far passed).
    pub fn new(attempt: u32) -> Self {
        AttemptResult {
            attempt,
            status: Status::Passed,
            failure_reason: None,
            limit: None,
            outcome: None,
            error: None,
            checks: Vec::new(),
            tokens: Tokens::default(),
            cost_usd: None,
            wall_ms: 0,
            agent_ms: 0,
            model_requests: 0,
            steps: 0,
            tool_calls: BTreeMap::new(),
            agents: BTreeMap::new(),
            files_read: Vec::new(),
            files_written: Vec::new(),
            compactions: 0,
            final_answer: String::new(),
            plan: None,
            tests: Vec::new(),
            questions: Vec::new(),
            review: None,
            transcript: None,
        }
    }

    /// An attempt that never ran.
    pub(crate) fn not_run(attempt: u32, status: Status, error: String) -> Self {
        AttemptResult {
            status,
            error: Some(error),
            ..AttemptResult::new(attempt)
        }
    }

    pub(crate) fn fail(&mut self, reason: FailureReason, error: String) {
        self.status = reason.status();
        self.failure_reason = Some(reason);
        self.error = Some(error);
    }

    /// Tool calls over every tool.
    pub fn tool_call_count(&self) -> u32 {
        self.tool_calls.values().sum()
    }
}

/// One check of an attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// `command`, `file_exists`, `file_matches`, `answer_regex`,
    /// `answer_equals` or `answer_schema`.
    pub kind: String,
    /// One line naming what is checked.
    pub description: String,
    /// True when it held.
    pub passed: bool,
    /// The end of the command's output, or why the check failed.
    pub output_tail: String,
    /// How long the check took, in milliseconds.
    pub duration_ms: u64,
}

/// Counts of attempts by status, and totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Task entries (task and agent pairs).
    pub tasks: usize,
    /// Attempts, skipped ones included.
    pub attempts: usize,
    /// Attempts with status `passed`.
    pub passed: usize,
    /// Attempts with status `failed`.
    pub failed: usize,
    /// Attempts with status `budget_exceeded`.
    pub budget_exceeded: usize,
    /// Attempts with status `error`.
    pub errors: usize,
    /// Attempts with status `skipped`.
    pub skipped: usize,
    /// passed / attempts that ran (0 when none ran).
    pub pass_rate: f64,
    /// Sums over every attempt.
    pub totals: Totals,
}

/// Sums over the attempts of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Tokens of every attempt.
    pub tokens: Tokens,
    /// Sum over attempts with a known price; `null` when none had one.
    pub cost_usd: Option<f64>,
    /// Start to finish of the run.
    pub wall_ms: u64,
    /// The agents' turns, summed, in milliseconds.
    pub agent_ms: u64,
    /// Model requests, summed.
    pub model_requests: u32,
    /// Model steps, summed.
    pub steps: u32,
    /// Tool calls, summed.
    pub tool_calls: u32,
}

impl Summary {
    /// The summary of `tasks`' attempts, with `wall` as the run's wall
    /// time.
    pub fn of(tasks: &[TaskResult], wall: Duration) -> Summary {
        let attempts = || tasks.iter().flat_map(|t| &t.attempts);
        let count = |s: Status| attempts().filter(|a| a.status == s).count();
        let mut tokens = Tokens::default();
        let mut cost: Option<f64> = None;
        let (mut agent_ms, mut model_requests, mut steps, mut tool_calls) = (0, 0, 0, 0);
        for a in attempts() {
            tokens.add(&a.tokens);
            if let Some(c) = a.cost_usd {
                *cost.get_or_insert(0.0) += c;
            }
            agent_ms += a.agent_ms;
            model_requests += a.model_requests;
            steps += a.steps;
            tool_calls += a.tool_call_count();
        }
        let total = attempts().count();
        let skipped = count(Status::Skipped);
        let passed = count(Status::Passed);
        let ran = total - skipped;
        Summary {
            tasks: tasks.len(),
            attempts: total,
            passed,
            failed: count(Status::Failed),
            budget_exceeded: count(Status::BudgetExceeded),
            errors: count(Status::Error),
            skipped,
            pass_rate: if ran == 0 {
                0.0
            } else {
                passed as f64 / ran as f64
            },
            totals: Totals {
                tokens,
                cost_usd: cost,
                wall_ms: millis(wall),
                agent_ms,
                model_requests,
                steps,
                tool_calls,
            },
        }
    }
}

impl TaskResult {
    pub(crate) fn status_of(attempts: &[AttemptResult]) -> Status {
        attempts
            .iter()
            .map(|a| a.status)
            .find(|s| *s != Status::Passed)
            .unwrap_or(Status::Passed)
    }

    /// Attempts that passed.
    pub fn passed(&self) -> usize {
        self.attempts
            .iter()
            .filter(|a| a.status == Status::Passed)
            .count()
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `2026-11-22T10:15:00Z` (whole seconds, UTC).
pub fn rfc3339(t: SystemTime) -> String {
    let (date, (h, m, s)) = civil(t);
    format!("{date}T{h:02}:{m:02}:{s:02}Z")
}

/// `20261122T101500Z`, for run ids and directory names.
pub fn compact_stamp(t: SystemTime) -> String {
    let (date, (h, m, s)) = civil(t);
    format!("{}T{h:02}{m:02}{s:02}Z", date.replace('-', ""))
}

/// The UTC date (`YYYY-MM-DD`) and time of day of `t`.
fn civil(t: SystemTime) -> (String, (u64, u64, u64)) {
    utc_date_time(t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_rfc3339() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_342_500);
        assert_eq!(rfc3339(t), "2026-11-22T10:15:00Z");
        assert_eq!(compact_stamp(t), "20261122T101500Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // A leap day.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    fn attempt(status: Status, cost: Option<f64>) -> AttemptResult {
        let mut a = AttemptResult::not_run(1, status, String::new());
        a.cost_usd = cost;
        a.tokens = Tokens {
            input: 10,
            output: 5,
            cached_input: 2,
        };
        a.tool_calls.insert("shell".into(), 2);
        a
    }

    #[test]
    fn the_summary_counts_statuses_and_sums_what_ran() {
        let task = |attempts: Vec<AttemptResult>| TaskResult {
            id: "t".into(),
            agent: "a".into(),
            tags: vec![],
            workspace: "copy".into(),
            status: TaskResult::status_of(&attempts),
            attempts,
        };
        let tasks = vec![
            task(vec![
                attempt(Status::Passed, Some(0.5)),
                attempt(Status::Failed, None),
            ]),
            task(vec![
                attempt(Status::BudgetExceeded, Some(0.25)),
                attempt(Status::Skipped, None),
            ]),
        ];
        assert_eq!(tasks[0].status, Status::Failed);
        assert_eq!(tasks[0].passed(), 1);
        let s = Summary::of(&tasks, Duration::from_millis(1500));
        assert_eq!(
            (
                s.tasks,
                s.attempts,
                s.passed,
                s.failed,
                s.budget_exceeded,
                s.skipped
            ),
            (2, 4, 1, 1, 1, 1)
        );
        assert!((s.pass_rate - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.totals.cost_usd, Some(0.75));
        assert_eq!(s.totals.tokens.total(), 60);
        assert_eq!(s.totals.tool_calls, 8);
        assert_eq!(s.totals.wall_ms, 1500);
        assert_eq!(FailureReason::SetupFailed.status(), Status::Error);
    }
}
