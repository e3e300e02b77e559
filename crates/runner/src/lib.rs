//! The CI task runner behind `cogni run --tasks FILE`: selection, a
//! workspace per attempt, setup commands, the engine with the task's
//! budgets, checks, and results (`results.json`, JUnit XML, an HTML
//! report), plus `cogni compare`.
//!
//! The front door builds one [`SessionConfig`] per agent, makes a [`Plan`]
//! (which checks everything before anything runs) and calls [`run`]. The
//! runner never prints: it reports through [`Progress`].

#![deny(missing_docs)]

mod attempt;
mod checks;
mod command;
pub mod compare;
pub mod merge;
mod pool;
pub mod report;
pub mod results;
pub mod review;
mod select;
pub mod shard;
pub mod workspace;

pub use results::RunResults;
pub use select::{select, Selected};

use cogni_core::{check_session_config, SessionConfig, StopHandle, TurnLimits};
use cogni_provider::record::Redact;
use cogni_provider::WireApi;
use cogni_spec::tasks::{Budget, TaskFile, WorkspaceMode};
use command::{git, Shell};
use results::{
    compact_stamp, millis, rfc3339, AgentInfo, AttemptResult, PlannedTask, PriceInfo, Repository,
    RunSettings, ShardInfo, Summary, TaskResult, SCHEMA_VERSION,
};
use shard::Shard;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How to run the selected tasks.
#[derive(Clone)]
pub struct RunOptions {
    /// As given on the command line (recorded in the results).
    pub selectors: Vec<String>,
    /// `--agent`: run every selected task with this agent instead of its
    /// own.
    pub agent_override: Option<String>,
    /// Attempts running at once.
    pub jobs: usize,
    /// Attempts per task, over each task's `repeat`.
    pub repeat: Option<u32>,
    /// Start no attempt after one did not pass.
    pub fail_fast: bool,
    /// The source of tasks without their own `source`.
    pub workdir: PathBuf,
    /// Where copies and worktrees are made (a directory per run inside);
    /// `None` chooses (see [`workspace::scratch_root`]).
    pub scratch: Option<PathBuf>,
    /// Directories copies leave out (e.g. the output directory).
    pub exclude: Vec<PathBuf>,
    /// The wall clock, for timestamps and the run id.
    pub clock: fn() -> SystemTime,
    /// Run only this shard's attempts (`--shard K/N`).
    pub shard: Option<Shard>,
    /// What recordings (a task's `record`) pass through: secrets out.
    pub redact: Redact,
    /// Recordings expect each call's exact output on replay, too.
    pub record_outputs: bool,
}

impl RunOptions {
    /// Options for running every task from `workdir`: one job, no
    /// selectors, repeats or shard, nothing redacted.
    pub fn new(workdir: PathBuf) -> Self {
        RunOptions {
            selectors: Vec::new(),
            agent_override: None,
            jobs: 1,
            repeat: None,
            fail_fast: false,
            workdir,
            scratch: None,
            exclude: Vec::new(),
            clock: SystemTime::now,
            shard: None,
            redact: Arc::new(str::to_string),
            record_outputs: false,
        }
    }
}

/// One attempt of one task, as reported to [`Progress`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptId {
    /// The task's id.
    pub task: String,
    /// The agent's id.
    pub agent: String,
    /// 1-based.
    pub attempt: u32,
    /// How many attempts the task has.
    pub of: u32,
}

impl fmt::Display for AttemptId {
    /// `task@agent`, and `#2/3` when the task repeats.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.task, self.agent)?;
        if self.of > 1 {
            write!(f, " #{}/{}", self.attempt, self.of)?;
        }
        Ok(())
    }
}

/// What an attempt is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Making the workspace (a copy, a worktree, or the source itself).
    Workspace,
    /// Running the task's setup commands.
    Setup,
    /// The agent's turn.
    Agent,
    /// Running the task's checks.
    Checks,
}

impl Phase {
    /// The phase's name for people (`workspace`, `setup`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Workspace => "workspace",
            Phase::Setup => "setup",
            Phase::Agent => "agent",
            Phase::Checks => "checks",
        }
    }
}

/// What the runner reports while it works.
#[derive(Debug, Clone, Copy)]
pub enum ProgressEvent<'a> {
    /// An attempt started.
    AttemptStarted(&'a AttemptId),
    /// An attempt entered a phase.
    Phase(&'a AttemptId, Phase),
    /// After each model response and tool call: the attempt's totals.
    Activity {
        /// The attempt.
        id: &'a AttemptId,
        /// Input plus output tokens so far.
        tokens: u64,
        /// Model steps so far.
        steps: u32,
        /// Tool calls so far.
        tool_calls: u32,
    },
    /// A warning from the engine (a budget stop, a retry) or the runner.
    Warning {
        /// The attempt.
        id: &'a AttemptId,
        /// The warning.
        message: &'a str,
    },
    /// An attempt ended (or was skipped).
    AttemptFinished {
        /// The attempt.
        id: &'a AttemptId,
        /// What it did, as results.json reports it.
        result: &'a AttemptResult,
    },
}

/// Receives progress; front doors render it. Must not block for long.
pub trait Progress: Send + Sync {
    /// Takes one event; attempts running at once report from their own
    /// tasks.
    fn report(&self, event: ProgressEvent<'_>);
}

impl<F: Fn(ProgressEvent<'_>) + Send + Sync> Progress for F {
    fn report(&self, event: ProgressEvent<'_>) {
        self(event)
    }
}

/// Stops a run from outside (Ctrl-C, SIGTERM, SIGHUP): running turns,
/// setup and check commands stop at once, and no further attempt starts.
/// Clones share the state.
#[derive(Debug, Clone, Default)]
pub struct RunControl(Arc<ControlState>);

#[derive(Debug, Default)]
struct ControlState {
    interrupted: AtomicBool,
    /// Cancelled on interrupt, for what waits on commands.
    stopped: tokio_util::sync::CancellationToken,
    next: AtomicU64,
    running: Mutex<HashMap<u64, StopHandle>>,
}

impl RunControl {
    /// Interrupt the run: stop what runs now and start nothing more.
    pub fn interrupt(&self) {
        self.0.interrupted.store(true, Ordering::SeqCst);
        self.0.stopped.cancel();
        if let Ok(running) = self.0.running.lock() {
            running.values().for_each(StopHandle::stop);
        }
    }

    /// True once [`RunControl::interrupt`] was called.
    pub fn is_interrupted(&self) -> bool {
        self.0.interrupted.load(Ordering::SeqCst)
    }

    /// Until the run is interrupted.
    async fn interrupted(&self) {
        self.0.stopped.cancelled().await
    }

    /// `work`, unless the run is interrupted first: then `None`, and the
    /// work is dropped (a command's process group is killed).
    async fn unless_interrupted<F: std::future::Future>(&self, work: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            () = self.0.stopped.cancelled() => None,
            out = work => Some(out),
        }
    }

    /// Stop `handle` on interrupt until the returned guard is dropped.
    fn register(&self, handle: StopHandle) -> Registration<'_> {
        let key = self.0.next.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut running) = self.0.running.lock() {
            running.insert(key, handle);
        }
        Registration { control: self, key }
    }
}

struct Registration<'a> {
    control: &'a RunControl,
    key: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.control.0.running.lock() {
            running.remove(&self.key);
        }
    }
}

/// An agent ready to run tasks.
struct PreparedAgent {
    config: SessionConfig,
    info: AgentInfo,
    shell: Shell,
}

/// One attempt to make.
struct Planned {
    /// Index into the selection.
    slot: usize,
    task: usize,
    agent: String,
    attempt: u32,
    of: u32,
    limits: TurnLimits,
    script: Option<PathBuf>,
    /// Record the session into this file (a task's `record`, live agents).
    record: Option<PathBuf>,
    source: PathBuf,
}

/// A checked run, ready to start.
pub struct Plan {
    file: TaskFile,
    selection: Vec<Selected>,
    agents: BTreeMap<String, PreparedAgent>,
    attempts: Vec<Planned>,
    /// With a shard: every task of the whole run and its attempt count.
    planned: Vec<PlannedTask>,
    options: RunOptions,
    run_id: String,
}

impl Plan {
    /// Check the selection against the agents' configs (`configs` has one
    /// per agent the selection names): models, prices for cost budgets,
    /// scripts for the scripted provider. Nothing runs yet.
    pub fn new(
        file: TaskFile,
        selection: Vec<Selected>,
        configs: BTreeMap<String, SessionConfig>,
        options: RunOptions,
    ) -> Result<Plan, String> {
        if options.jobs == 0 {
            return Err("--jobs must be at least 1".into());
        }
        if options.repeat == Some(0) {
            return Err("--repeat must be at least 1".into());
        }
        let mut agents: BTreeMap<String, PreparedAgent> = BTreeMap::new();
        let mut attempts = Vec::new();
        for (slot, selected) in selection.iter().enumerate() {
            let task = &file.tasks[selected.task];
            let spec = file
                .agent(&selected.agent)
                .ok_or_else(|| format!("unknown agent `{}`", selected.agent))?;
            let config = configs
                .get(&selected.agent)
                .ok_or_else(|| format!("no configuration for agent `{}`", selected.agent))?;
            let at = format!("task `{}` with agent `{}`", task.id, selected.agent);
            let scripted = config.provider.wire_api == WireApi::Scripted;
            let mut script = task.script.clone().or_else(|| spec.script.clone());
            if script.is_some() && !scripted {
                return Err(format!(
                    "{at}: the task has a script, but provider `{}` is not scripted",
                    config.provider.id
                ));
            }
            let mut record = None;
            if let Some(path) = &task.record {
                if !scripted {
                    record = Some(path.clone());
                } else if script.is_none() {
                    // A scripted agent replays the recording.
                    if !path.is_file() {
                        return Err(format!(
                            "{at}: record = {} does not exist yet: record it first with an agent that has a real provider (--agent ID)",
                            path.display()
                        ));
                    }
                    script = Some(path.clone());
                }
            }
            let mut checked = config.clone();
            if let Some(script) = &script {
                checked.provider.script = Some(script.clone());
            }
            if scripted && checked.provider.script.is_none() {
                return Err(format!(
                    "{at}: the scripted provider needs a script (set script on the task or the agent)"
                ));
            }
            let limits = turn_limits(&task.budget);
            let (model, family) =
                check_session_config(&checked, &limits).map_err(|e| format!("{at}: {e}"))?;
            if !agents.contains_key(&selected.agent) {
                let env = config
                    .tool_config
                    .shell_env
                    .child_env()
                    .map_err(|e| format!("agent `{}`: {e}", selected.agent))?;
                agents.insert(
                    selected.agent.clone(),
                    PreparedAgent {
                        config: config.clone(),
                        info: AgentInfo {
                            id: selected.agent.clone(),
                            provider: config.provider.id.clone(),
                            model,
                            price: family.price.map(|p| PriceInfo {
                                input: p.input,
                                cached_input: p.cached_input,
                                output: p.output,
                            }),
                            sandbox: config.sandbox_policy.mode.as_str().to_string(),
                        },
                        shell: Shell {
                            program: config.sandbox_policy.shell.clone(),
                            env,
                        },
                    },
                );
            }
            let source = task
                .source
                .clone()
                .unwrap_or_else(|| options.workdir.clone());
            let of = options.repeat.unwrap_or(task.repeat);
            for attempt in 1..=of {
                attempts.push(Planned {
                    slot,
                    task: selected.task,
                    agent: selected.agent.clone(),
                    attempt,
                    of,
                    limits: limits.clone(),
                    script: script.clone(),
                    record: record.clone(),
                    source: source.clone(),
                });
            }
        }
        let mut recorders: BTreeMap<&Path, Vec<String>> = BTreeMap::new();
        for p in &attempts {
            if let Some(path) = &p.record {
                let id = &file.tasks[p.task].id;
                recorders
                    .entry(path.as_path())
                    .or_default()
                    .push(format!("{id}@{} #{}", p.agent, p.attempt));
            }
        }
        if let Some((path, writers)) = recorders.iter().find(|(_, w)| w.len() > 1) {
            return Err(format!(
                "record = {} would be written by {} attempts ({}): a recording holds one session; run the task once (--repeat 1) with one agent that records",
                path.display(),
                writers.len(),
                writers.join(", ")
            ));
        }
        let mut planned = Vec::new();
        if let Some(shard) = options.shard {
            planned = selection
                .iter()
                .map(|s| PlannedTask {
                    task: file.tasks[s.task].id.clone(),
                    agent: s.agent.clone(),
                    attempts: options.repeat.unwrap_or(file.tasks[s.task].repeat),
                })
                .collect();
            let keys: Vec<(&str, &str, u32)> = attempts
                .iter()
                .map(|p| (file.tasks[p.task].id.as_str(), p.agent.as_str(), p.attempt))
                .collect();
            let shards = shard::partition(&keys, shard.total);
            let mut shards = shards.into_iter();
            attempts.retain(|_| shards.next() == Some(shard.index));
        }
        let now = (options.clock)();
        let run_id = format!(
            "{}-{:04x}",
            compact_stamp(now),
            (std::process::id()
                ^ now
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos()))
                & 0xffff
        );
        Ok(Plan {
            file,
            selection,
            agents,
            attempts,
            planned,
            options,
            run_id,
        })
    }

    /// The run's id (`YYYYMMDDThhmmssZ-xxxx`), fixed when the plan is made.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Attempts the run makes (tasks × repeats).
    pub fn attempt_count(&self) -> usize {
        self.attempts.len()
    }

    /// Tasks (with their agents) that have an attempt in this run.
    pub fn task_count(&self) -> usize {
        self.attempts
            .iter()
            .map(|p| p.slot)
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// Attempts of the whole run when this is one shard of it.
    pub fn planned_attempts(&self) -> usize {
        self.planned.iter().map(|p| p.attempts as usize).sum()
    }

    /// The options the plan was made with.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }
}

/// A task's budget as the engine's turn limits.
pub fn turn_limits(budget: &Budget) -> TurnLimits {
    TurnLimits {
        max_tokens: budget.max_tokens,
        max_cost_usd: budget.max_cost_usd,
        max_duration: budget.max_seconds.map(Duration::from_secs_f64),
        max_steps: budget.max_steps,
        max_tool_calls: budget.max_tool_calls,
    }
}

/// The git repository around `dir`: name, commit, branch, dirty; `None`
/// outside one (or without git).
pub async fn repository(dir: &Path) -> Option<Repository> {
    let top = git(dir, &["rev-parse", "--show-toplevel"]).await.ok()?;
    let commit = git(dir, &["rev-parse", "HEAD"]).await.ok()?;
    let branch = git(dir, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .await
        .ok();
    let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"])
        .await
        .map(|s| !s.is_empty())
        .unwrap_or(false);
    Some(Repository {
        name: Path::new(&top)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        commit,
        branch,
        dirty,
    })
}

/// Where the run's copies and worktrees go (see
/// [`workspace::scratch_root`]); a worktree counts like a copy, since a
/// checkout is about as big.
async fn scratch_root(plan: &Plan) -> PathBuf {
    let configured = plan.options.scratch.clone();
    let sources: Vec<PathBuf> = plan
        .attempts
        .iter()
        .filter(|p| plan.file.tasks[p.task].workspace != WorkspaceMode::InPlace)
        .map(|p| p.source.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let (exclude, jobs) = (plan.options.exclude.clone(), plan.options.jobs);
    tokio::task::spawn_blocking(move || {
        workspace::scratch_root(configured.as_deref(), &sources, &exclude, jobs)
    })
    .await
    .unwrap_or_else(|_| std::env::temp_dir())
}

/// Run the plan: up to `jobs` attempts at once, each in its own workspace.
/// Results come back in selection order, attempts in order.
pub async fn run(
    plan: Arc<Plan>,
    repository: Option<Repository>,
    progress: Arc<dyn Progress>,
    control: &RunControl,
) -> RunResults {
    let started_at = (plan.options.clock)();
    let started = Instant::now();
    let scratch = scratch_root(&plan)
        .await
        .join(format!("cogni-{}", plan.run_id));
    let runs = pool::run_all(plan.clone(), progress, control, scratch.clone()).await;
    // Copies are removed in the background as attempts finish, and each
    // thread waited for its own; catch what a failed removal left behind.
    let _ = workspace::remove_dir(scratch).await;

    let mut by_slot: Vec<Vec<(u32, AttemptResult)>> = vec![Vec::new(); plan.selection.len()];
    for (index, result) in runs {
        let planned = &plan.attempts[index];
        by_slot[planned.slot].push((planned.attempt, result));
    }
    let tasks: Vec<TaskResult> = plan
        .selection
        .iter()
        .zip(by_slot)
        // A shard leaves out the tasks none of whose attempts it runs.
        .filter(|(_, attempts)| !attempts.is_empty())
        .map(|(selected, mut attempts)| {
            attempts.sort_by_key(|(n, _)| *n);
            let attempts: Vec<AttemptResult> = attempts.into_iter().map(|(_, r)| r).collect();
            let task = &plan.file.tasks[selected.task];
            TaskResult {
                id: task.id.clone(),
                agent: selected.agent.clone(),
                tags: task.tags.clone(),
                workspace: task.workspace.as_str().to_string(),
                status: TaskResult::status_of(&attempts),
                attempts,
            }
        })
        .collect();
    let summary = Summary::of(&tasks, started.elapsed());
    let finished_at = rfc3339((plan.options.clock)());
    let started_at = rfc3339(started_at);
    let shards = plan
        .options
        .shard
        .map(|shard| ShardInfo {
            index: shard.index,
            total: shard.total,
            run_id: plan.run_id.clone(),
            started_at: started_at.clone(),
            finished_at: finished_at.clone(),
            attempts: plan.attempts.len(),
            wall_ms: millis(started.elapsed()),
        })
        .into_iter()
        .collect();
    RunResults {
        schema_version: SCHEMA_VERSION,
        run_id: plan.run_id.clone(),
        started_at,
        finished_at,
        cogni_version: env!("CARGO_PKG_VERSION").to_string(),
        tasks_file: plan.file.path.display().to_string(),
        repository,
        settings: RunSettings {
            selectors: plan.options.selectors.clone(),
            agent_override: plan.options.agent_override.clone(),
            jobs: plan.options.jobs,
            repeat: plan.options.repeat,
            fail_fast: plan.options.fail_fast,
        },
        agents: plan.agents.values().map(|a| a.info.clone()).collect(),
        tasks,
        summary,
        shards,
        planned: plan.planned.clone(),
    }
}

/// How a run went, for the exit code: any failure or error wins over a
/// budget running out, which wins over success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every attempt passed (exit 0).
    Passed,
    /// An attempt failed or errored (exit 1).
    Failed,
    /// An attempt ran out of budget and none failed otherwise (exit 4).
    BudgetExceeded,
}

impl RunResults {
    /// The run's verdict from its summary.
    pub fn verdict(&self) -> Verdict {
        let s = &self.summary;
        if s.failed > 0 || s.errors > 0 {
            Verdict::Failed
        } else if s.budget_exceeded > 0 {
            Verdict::BudgetExceeded
        } else {
            Verdict::Passed
        }
    }
}
