//! The CI front door: `cogni run --tasks FILE [SELECTOR...]`,
//! `cogni validate FILE` and `cogni compare A B`.
//!
//! Builds one `SessionConfig` per agent from the config layers (the task
//! file's agent fields sit just below the command-line flags), hands the
//! plan to the runner, renders its progress on stderr, writes the results
//! and maps them to an exit code: 0 all passed, 1 a task failed or errored,
//! 4 a budget ran out (and nothing failed otherwise), 2 an invalid task
//! file, selector or config.

use super::builder::{Card, SessionBuilder};
use super::render::plural;
use super::{exit, persist, setup, signals, ConfigArgs, RunArgs};
use crate::agent::{check_session_config, SessionConfig, TurnLimits};
use crate::config::ConfigFile;
use crate::provider::model_family::FamilyOverride;
use crate::runner::report::{self, format_cost, format_count, format_ms};
use crate::runner::results::{AttemptResult, RunResults, Status};
use crate::runner::shard::ShardArg;
use crate::runner::{
    self, compare, AttemptId, Phase, Plan, Progress, ProgressEvent, RunControl, RunOptions, Verdict,
};
use crate::spec::tasks::{AgentSpec, TaskFile};
use crate::store::Redactor;
use clap::Args;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `cogni run` options for task files.
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// Run the tasks of a task file (CI mode). Positional arguments then
    /// select tasks: ID, ID@AGENT or tag:NAME (default: all).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "output_last_message", "output_schema"])]
    pub tasks: Option<PathBuf>,

    /// More selectors, with --tasks.
    #[arg(value_name = "SELECTOR", requires = "tasks")]
    pub selectors: Vec<String>,

    /// Run as this agent (a card or `[agents.NAME]`: `cogni agents` lists
    /// them). With --tasks: run every selected task with this task-file
    /// agent (ID@AGENT still wins).
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,

    /// With --tasks: attempts running at once.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 1, requires = "tasks",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: u32,

    /// With --tasks: attempts per task (over each task's `repeat`).
    #[arg(long, value_name = "N", requires = "tasks", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,

    /// With --tasks: where results go (default .cogni/results/<commit>/<run-id>/).
    #[arg(long, value_name = "DIR", requires = "tasks")]
    pub output_dir: Option<PathBuf>,

    /// With --tasks: start no attempt after one did not pass.
    #[arg(long, requires = "tasks")]
    pub fail_fast: bool,

    /// With --tasks: run one shard of the attempts: K/N (the K-th of N),
    /// auto (from GitLab's, Buildkite's CI variables) or auto/N (a
    /// Kubernetes indexed Job's JOB_COMPLETION_INDEX of N); `cogni merge`
    /// joins the shards' results.
    #[arg(long, value_name = "K/N", requires = "tasks")]
    pub shard: Option<ShardArg>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The task file.
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The earlier run: a results.json or a run directory.
    pub a: PathBuf,
    /// The later run.
    pub b: PathBuf,
}

/// `cogni validate FILE`: 0 when valid, 2 with every problem listed.
pub fn validate(args: ValidateArgs) -> u8 {
    match TaskFile::load(&args.file) {
        Ok(file) => {
            let attempts: u32 = file.tasks.iter().map(|t| t.repeat).sum();
            let (agents, tasks) = (file.agents.len(), file.tasks.len());
            println!(
                "{}: ok ({agents} agent{}, {tasks} task{}, {attempts} attempt{})",
                args.file.display(),
                plural(agents),
                plural(tasks),
                plural(attempts as usize)
            );
            exit::DONE
        }
        Err(e) => {
            eprintln!("{e}");
            eprintln!(
                "cogni: {} problem{} in {}",
                e.problems.len(),
                if e.problems.len() == 1 { "" } else { "s" },
                args.file.display()
            );
            exit::USAGE
        }
    }
}

/// `cogni compare A B`: the table on stdout; 1 when a task that passed in
/// A fails in B, 2 when a file cannot be read.
pub fn compare(args: CompareArgs) -> u8 {
    let loaded = compare::load(&args.a).and_then(|a| Ok((a, compare::load(&args.b)?)));
    let (a, b) = match loaded {
        Ok(pair) => pair,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    let comparison = compare::compare(&a, &b);
    print!("{}", comparison.render());
    if comparison.regressions() > 0 {
        exit::TASK_FAILED
    } else {
        exit::DONE
    }
}

/// `cogni run --tasks FILE ...`.
pub fn run(args: RunArgs) -> u8 {
    match prepare(&args) {
        Ok(prepared) => execute(prepared),
        Err(message) => {
            eprintln!("cogni: {message}");
            exit::USAGE
        }
    }
}

struct Prepared {
    plan: Plan,
    cwd: PathBuf,
    home: PathBuf,
    /// Secrets out of the log: key shapes and every agent's provider key.
    redact: Redactor,
    output_dir: Option<PathBuf>,
    color: bool,
}

fn prepare(args: &RunArgs) -> Result<Prepared, String> {
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    let batch = &args.batch;
    let tasks_file = batch.tasks.as_ref().ok_or("--tasks FILE is missing")?;
    let file = TaskFile::load(&launch_dir.join(tasks_file))
        .map_err(|e| format!("invalid task file:\n{e}"))?;
    let selectors: Vec<String> = args.task.iter().chain(&batch.selectors).cloned().collect();
    let selection = runner::select(&file, &selectors, batch.agent.as_deref())?;
    let mut configs = BTreeMap::new();
    let mut home = PathBuf::new();
    for selected in &selection {
        if configs.contains_key(&selected.agent) {
            continue;
        }
        let Some(agent) = file.agent(&selected.agent) else {
            return Err(format!("unknown agent `{}`", selected.agent));
        };
        let (config, agent_home) = agent_config(args, &launch_dir, &cwd, agent)?;
        home = agent_home;
        configs.insert(selected.agent.clone(), config);
    }
    let output_dir = batch.output_dir.as_ref().map(|d| launch_dir.join(d));
    let mut options = RunOptions::new(cwd.clone());
    options.selectors = selectors;
    options.agent_override = batch.agent.clone();
    options.jobs = batch.jobs as usize;
    options.repeat = batch.repeat;
    options.fail_fast = batch.fail_fast;
    let mut shard_source = None;
    if let Some(arg) = batch.shard {
        let (shard, source) = arg.resolve(&|name| std::env::var(name).ok())?;
        options.shard = Some(shard);
        shard_source = Some(source);
    }
    options.exclude = vec![cwd.join(DEFAULT_RESULTS)];
    options.exclude.extend(output_dir.clone());
    let redact = persist::redactor(configs.values());
    options.redact = redact.clone();
    options.record_outputs = args.record_outputs;
    let plan = Plan::new(file, selection, configs, options)?;
    if let (Some(shard), Some(source)) = (plan.options().shard, shard_source) {
        eprintln!(
            "cogni: shard {shard} ({source}): {} of {} attempts",
            plan.attempt_count(),
            plan.planned_attempts()
        );
    }
    Ok(Prepared {
        plan,
        cwd,
        home,
        redact,
        output_dir,
        color: !args.no_color
            && std::env::var_os("NO_COLOR").is_none()
            && std::io::stderr().is_terminal(),
    })
}

/// Where results go by default, under the working directory.
const DEFAULT_RESULTS: &str = ".cogni/results";

/// The session config of one agent: the config layers with the agent's
/// fields just below the command-line flags, and its prices over the
/// model's.
fn agent_config(
    args: &RunArgs,
    launch_dir: &Path,
    cwd: &Path,
    agent: &AgentSpec,
) -> Result<(SessionConfig, PathBuf), String> {
    let common = ConfigArgs {
        model: args.common.model.clone().or_else(|| agent.model.clone()),
        provider: args
            .common
            .provider
            .clone()
            .or_else(|| agent.provider.clone()),
        script: args.common.script.clone(),
        config: args.common.config.clone(),
        cd: args.common.cd.clone(),
        profile: args.common.profile.clone(),
    };
    let flags = ConfigFile {
        sandbox_mode: agent.sandbox,
        approval_policy: agent.approval,
        max_iterations: args.max_iterations.or(agent.max_steps),
        temperature: agent.temperature,
        developer_instructions: agent.instructions.clone(),
        ..Default::default()
    };
    let at = |e: String| format!("agent `{}`: {e}", agent.id);
    // The log opens once, with every agent's secrets to redact.
    let configured = SessionBuilder::new(
        common,
        args.policy.clone(),
        launch_dir.to_path_buf(),
        cwd.to_path_buf(),
    )
    .flags(flags)
    .card(agent.card.clone().map(|c| Card::Given(Box::new(c))))
    .without_logging()
    .configure()
    .map_err(at)?;
    configured.warn_problems();
    let home = configured.home;
    let mut config = configured.config;
    // The task file's agent: its name and effects (after its card's).
    config.agent = agent.id.clone();
    config.effects.extend(agent.effects.iter().cloned());
    if agent.context_strategy.is_some() {
        config.context_strategy = agent.context_strategy;
    }
    crate::agent::apply_strategies(
        &agent.strategies,
        &mut config,
        &format!("agents.{}", agent.id),
    )
    .map_err(&at)?;
    if agent.input_price.is_some() || agent.output_price.is_some() {
        let (model, family) =
            check_session_config(&config, &TurnLimits::default()).map_err(|e| at(e.to_string()))?;
        let entry = config
            .model_families
            .entry(model)
            .or_insert_with(|| FamilyOverride {
                // Keep the family the model has now; only the price changes.
                inherit: Some(family.family.clone()),
                ..FamilyOverride::default()
            });
        entry.input_price = agent.input_price.or(entry.input_price);
        entry.output_price = agent.output_price.or(entry.output_price);
    }
    Ok((config, home))
}

fn execute(prepared: Prepared) -> u8 {
    let Prepared {
        plan,
        cwd,
        home,
        redact,
        output_dir,
        color,
    } = prepared;
    setup::init_logging(&home, redact);
    let runtime = match setup::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::TASK_FAILED;
        }
    };
    let control = RunControl::default();
    let live = std::io::stderr().is_terminal();
    let renderer = Renderer::new(plan.attempt_count(), live, color);
    let plan = std::sync::Arc::new(plan);
    let run = runtime.block_on(async {
        // Ctrl-C, SIGTERM (a CI system cancelling the job) or SIGHUP stops
        // the running attempts cleanly and starts no more; the results are
        // still written. A second signal leaves at once.
        let stop = control.clone();
        let received = signals::stop_on_interrupt(move |signal| {
            eprintln!(
                "\ncogni: {}: stopping the running tasks (send it again to quit at once)",
                signal.describe()
            );
            stop.interrupt();
        })?;
        let repository = runner::repository(&cwd).await;
        let dir = output_dir.unwrap_or_else(|| {
            let commit = repository
                .as_ref()
                .and_then(|r| r.commit.get(..12))
                .unwrap_or("no-commit");
            cwd.join(DEFAULT_RESULTS).join(commit).join(plan.run_id())
        });
        eprintln!(
            "cogni: {} attempt{} of {} task{}, {} at a time; results in {}",
            plan.attempt_count(),
            plural(plan.attempt_count()),
            plan.task_count(),
            plural(plan.task_count()),
            plan.options().jobs,
            dir.display()
        );
        let ticker = live.then(|| {
            let renderer = renderer.clone_handle();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(120));
                loop {
                    tick.tick().await;
                    renderer.redraw();
                }
            })
        });
        let results = runner::run(
            plan.clone(),
            repository,
            std::sync::Arc::new(renderer.clone_handle()),
            &control,
        )
        .await;
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        renderer.clear();
        Ok::<_, String>((results, dir, received))
    });
    let (results, dir, received) = match run {
        Ok(run) => run,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::TASK_FAILED;
        }
    };
    let written = report::write_all(&dir, &results);
    summarize(&results);
    match written {
        Ok(_) => {
            eprintln!(
                "cogni: wrote {}, {}, {}, {}",
                report::RESULTS_FILE,
                report::JUNIT_FILE,
                report::TRANSCRIPTS_FILE,
                report::HTML_FILE
            );
            println!("{}", dir.join(report::RESULTS_FILE).display());
        }
        Err(e) => {
            eprintln!("cogni: cannot write the results to {}: {e}", dir.display());
            return exit::TASK_FAILED;
        }
    }
    if control.is_interrupted() {
        return received.exit_code();
    }
    match results.verdict() {
        Verdict::Passed => exit::DONE,
        Verdict::Failed => exit::TASK_FAILED,
        Verdict::BudgetExceeded => exit::BUDGET_EXCEEDED,
    }
}

pub(super) fn summarize(results: &RunResults) {
    let s = &results.summary;
    let mut parts = vec![format!("{} passed", s.passed)];
    for (n, what) in [
        (s.failed, "failed"),
        (s.budget_exceeded, "over budget"),
        (s.errors, "errors"),
        (s.skipped, "skipped"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    eprintln!(
        "cogni: {} of {} attempt{} (pass rate {:.1}%) · {} · {} tokens · {}",
        parts.join(", "),
        s.attempts,
        plural(s.attempts),
        s.pass_rate * 100.0,
        format_ms(s.totals.wall_ms),
        format_count(s.totals.tokens.total()),
        format_cost(s.totals.cost_usd)
    );
}

// ---------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------

/// Renders runner progress on stderr: one plain line per event of note, or
/// on a terminal, finished attempts as lines above a live block with one
/// line per running attempt (spinner, phase, elapsed, tokens, steps).
struct Renderer {
    state: std::sync::Arc<Mutex<Live>>,
}

struct Live {
    total: usize,
    done: usize,
    live: bool,
    color: bool,
    running: Vec<Running>,
    /// Lines of the live block on screen now.
    drawn: usize,
}

struct Running {
    id: AttemptId,
    started: Instant,
    phase: Phase,
    tokens: u64,
    steps: u32,
    tool_calls: u32,
}

impl Renderer {
    fn new(total: usize, live: bool, color: bool) -> Self {
        Renderer {
            state: std::sync::Arc::new(Mutex::new(Live {
                total,
                done: 0,
                live,
                color,
                running: Vec::new(),
                drawn: 0,
            })),
        }
    }

    fn clone_handle(&self) -> Renderer {
        Renderer {
            state: self.state.clone(),
        }
    }

    fn redraw(&self) {
        if let Ok(mut live) = self.state.lock() {
            let text = live.block();
            print_err(&text);
        }
    }

    /// Remove the live block (the run is over).
    fn clear(&self) {
        if let Ok(mut live) = self.state.lock() {
            let text = live.erase();
            print_err(&text);
        }
    }
}

fn print_err(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

impl Live {
    fn erase(&mut self) -> String {
        let text = if self.drawn > 0 {
            format!("\x1b[{}A\r\x1b[J", self.drawn)
        } else {
            String::new()
        };
        self.drawn = 0;
        text
    }

    /// The live block, redrawn in place.
    fn block(&mut self) -> String {
        if !self.live {
            return String::new();
        }
        const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        let width = terminal_width().saturating_sub(1).max(20);
        let mut text = self.erase();
        for r in &self.running {
            let elapsed = r.started.elapsed();
            let frame = SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()];
            let line = format!(
                "{frame} {}  {}  {:.1}s  {} tokens  {} steps  {} tool calls",
                r.id,
                r.phase.as_str(),
                elapsed.as_secs_f64(),
                format_count(r.tokens),
                r.steps,
                r.tool_calls
            );
            text.extend(line.chars().take(width));
            text.push('\n');
        }
        self.drawn = self.running.len();
        text
    }

    fn status_word(&self, status: Status) -> String {
        let (word, code) = match status {
            Status::Passed => ("PASS", "32"),
            Status::Failed => ("FAIL", "31"),
            Status::BudgetExceeded => ("BUDGET", "33"),
            Status::Error => ("ERROR", "31"),
            Status::Skipped => ("SKIP", "2"),
        };
        if self.color {
            format!("\x1b[{code}m{word}\x1b[0m")
        } else {
            word.to_string()
        }
    }

    fn finished_line(&self, id: &AttemptId, r: &AttemptResult) -> String {
        let mut line = format!(
            "cogni: [{}/{}] {} {id} · {} · {} tokens · {} · {} steps",
            self.done,
            self.total,
            self.status_word(r.status),
            format_ms(r.wall_ms),
            format_count(r.tokens.total()),
            format_cost(r.cost_usd),
            r.steps
        );
        if let Some(reason) = r.failure_reason {
            let error = r.error.as_deref().unwrap_or("");
            let first = error.lines().next().unwrap_or("");
            line.push_str(&format!(" · {}: {first}", reason.as_str()));
        }
        line
    }
}

impl Progress for Renderer {
    fn report(&self, event: ProgressEvent<'_>) {
        let Ok(mut live) = self.state.lock() else {
            return;
        };
        let mut lines: Vec<String> = Vec::new();
        match event {
            ProgressEvent::AttemptStarted(id) => {
                live.running.push(Running {
                    id: id.clone(),
                    started: Instant::now(),
                    phase: Phase::Workspace,
                    tokens: 0,
                    steps: 0,
                    tool_calls: 0,
                });
                if !live.live {
                    lines.push(format!("cogni: start {id}"));
                }
            }
            ProgressEvent::Phase(id, phase) => {
                if let Some(r) = live.running.iter_mut().find(|r| &r.id == id) {
                    r.phase = phase;
                }
            }
            ProgressEvent::Activity {
                id,
                tokens,
                steps,
                tool_calls,
            } => {
                if let Some(r) = live.running.iter_mut().find(|r| &r.id == id) {
                    (r.tokens, r.steps, r.tool_calls) = (tokens, steps, tool_calls);
                }
            }
            ProgressEvent::Warning { id, message } => {
                lines.push(format!("cogni: {id}: {message}"));
            }
            ProgressEvent::AttemptFinished { id, result } => {
                live.running.retain(|r| &r.id != id);
                live.done += 1;
                lines.push(live.finished_line(id, result));
            }
        }
        if lines.is_empty() {
            return;
        }
        let mut text = if live.live {
            live.erase()
        } else {
            String::new()
        };
        for line in lines {
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str(&live.block());
        print_err(&text);
    }
}

/// Columns of the terminal on stderr (80 when unknown).
fn terminal_width() -> usize {
    super::repl::tty::columns(true).unwrap_or(80)
}
