//! `cogni review`, and the review job the REPL's and `cogni acp`'s
//! `/review` run too: the scope's change read with git, a read-only
//! session of its own (the runner's [`crate::runner::review`]: plan
//! mode's sandbox, reading tools, `report_finding`, the verdict as the
//! output schema), its turn, and the report in the format asked for.
//! An empty change sends no request: the report says there is nothing to
//! review, and the exit code is 0.

mod terminal;

use super::builder::SessionBuilder;
use super::mode::Mode;
use super::render::{Human, RenderOptions};
use super::{exit, launch, setup, signals, BudgetArgs, ConfigArgs, PolicyArgs};
use crate::config::ConfigFile;
use crate::protocol::{EventSink, TurnOutcome};
use crate::runner::review::{self as job, gitlab, markdown, sarif, Review};
use crate::tools::review::Scope;

pub(super) use crate::runner::review::Job;
use clap::{Args, Parser, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

pub(super) use terminal::render as terminal_report;

/// What a review covers: at most one of these (default: --uncommitted).
#[derive(Debug, Clone, Default, Args)]
#[group(id = "scope", multiple = false)]
pub struct ScopeArgs {
    /// The uncommitted changes: staged, unstaged and untracked (the default).
    #[arg(long)]
    pub uncommitted: bool,

    /// The changes from the merge base with BRANCH to HEAD (a pull
    /// request's changes).
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,

    /// One commit, against its first parent.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,

    /// These files as they are, whole (a directory: the files git lists
    /// under it).
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub files: Vec<String>,
}

impl ScopeArgs {
    /// The scope the flags ask for.
    pub fn scope(&self) -> Scope {
        match (&self.base, &self.commit) {
            (Some(branch), _) => Scope::Base(branch.clone()),
            (None, Some(rev)) => Scope::Commit(rev.clone()),
            (None, None) if !self.files.is_empty() => Scope::Files(self.files.clone()),
            (None, None) => Scope::Uncommitted,
        }
    }
}

/// How the report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people: by file, most severe first, with the code.
    Terminal,
    /// The report as JSON (docs/review.schema.json).
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// Markdown, for a pull request's comment.
    Markdown,
    /// The JSON body of a GitHub pull-request review, for `gh api`.
    Github,
    /// GitLab's code quality report (`artifacts: reports: codequality`).
    Gitlab,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// What to look at especially ("security", "the migration").
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    #[command(flatten)]
    pub scope: ScopeArgs,

    /// Write a report saved before (`--format json`) in another format:
    /// no git, no model, nothing reviewed again.
    #[arg(long, value_name = "REPORT", conflicts_with_all = ["prompt", "scope", "no_sandbox", "max_iterations", "max_cost", "max_tokens", "max_seconds", "script", "model", "provider"])]
    pub from: Option<PathBuf>,

    #[command(flatten)]
    pub common: ConfigArgs,

    /// Without the kernel sandbox (a machine without one): the review
    /// then offers no shell, only its reading tools, so nothing runs
    /// unconfined.
    #[arg(long)]
    pub no_sandbox: bool,

    #[command(flatten)]
    pub budget: BudgetArgs,

    /// Most model requests with tool calls (default 25).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,

    /// The report's format.
    #[arg(long, value_enum, default_value = "terminal")]
    pub format: Format,

    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Exit 1 when a finding at this priority or a more severe one is
    /// reported: P0, P1, P2 or P3.
    #[arg(long, value_name = "PRIORITY", value_parser = parse_priority)]
    pub fail_on: Option<u8>,

    /// Log model requests and responses, tool calls and metrics on stderr.
    #[arg(short, long)]
    pub verbose: bool,

    /// No colors (also: NO_COLOR).
    #[arg(long)]
    pub no_color: bool,

    /// Do not save the session under $COGNI_HOME/sessions.
    #[arg(long)]
    pub no_persist: bool,
}

fn parse_priority(s: &str) -> Result<u8, String> {
    match s.to_ascii_uppercase().as_str() {
        "P0" | "0" => Ok(0),
        "P1" | "1" => Ok(1),
        "P2" | "2" => Ok(2),
        "P3" | "3" => Ok(3),
        _ => Err(format!("`{s}`: use P0, P1, P2 or P3")),
    }
}

/// `/review ARGS` in the REPL and `cogni acp`: the scope flags of `cogni
/// review` and the focus as words.
#[derive(Debug, Parser)]
#[command(name = "/review", no_binary_name = true, disable_help_flag = true)]
struct Slash {
    #[command(flatten)]
    scope: ScopeArgs,
    /// The focus.
    words: Vec<String>,
}

/// The usage of `/review`.
pub(super) const SLASH_USAGE: &str = "[--base BRANCH | --commit SHA | --files PATH...] [FOCUS]";

/// `/review`'s arguments: the scope and the focus, or the usage error.
pub(super) fn parse_slash(args: &str) -> Result<(Scope, Option<String>), String> {
    let slash = Slash::try_parse_from(args.split_whitespace()).map_err(|e| {
        format!(
            "usage: /review {SLASH_USAGE} ({})",
            first_line(&e.to_string())
        )
    })?;
    let focus = slash.words.join(" ");
    Ok((slash.scope.scope(), (!focus.is_empty()).then_some(focus)))
}

fn first_line(text: &str) -> &str {
    text.lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
}

/// `cogni review`: its exit code.
pub fn run(args: ReviewArgs) -> u8 {
    match review(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("cogni: {message}");
            exit::USAGE
        }
    }
}

/// Everything up to the exit code; `Err` is a usage or config error.
fn review(args: &ReviewArgs) -> Result<u8, String> {
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    super::run::check_output(args.output.as_deref(), &launch_dir)?;
    if let Some(path) = &args.from {
        let review = saved(path)?;
        return Ok(match deliver(args, &review) {
            Err(code) => code,
            Ok(()) => fail_on(args, &review),
        });
    }
    let runtime = setup::runtime()?;
    let focus = args.prompt.clone().filter(|p| !p.trim().is_empty());
    let job = runtime.block_on(Job::read(&cwd, args.scope.scope(), focus))?;
    if let Some(review) = job.nothing() {
        eprintln!("cogni: {}", review.explanation);
        return Ok(match deliver(args, &review) {
            Ok(()) => exit::DONE,
            Err(code) => code,
        });
    }
    let confined = !args.no_sandbox;
    let mut builder =
        SessionBuilder::new(args.common.clone(), PolicyArgs::default(), launch_dir, cwd)
            .flags(ConfigFile {
                max_iterations: args.max_iterations,
                effects: args.budget.effects()?,
                ..Default::default()
            })
            .mode(Some(Mode::Plan))
            .output(args.verbose, Some(job::verdict_schema()))
            .persist(!args.no_persist, None, false);
    if !confined {
        // No command runs: only the workspace is checked, not the kernel.
        builder = builder.workspace_check_only();
    }
    let mut configured = builder.configure()?;
    job::configure(&mut configured.config, confined);
    let (mut session, file) = configured.start(None)?;
    let (findings, prompt) = job.attach(&mut session);
    let options = RenderOptions {
        color: color(args.no_color, std::io::stderr().is_terminal()),
        stream_live: std::io::stderr().is_terminal(),
        // The final answer (the verdict's JSON) is not the report: it is
        // never taken for what stdout shows.
        stdout_is_terminal: false,
        verbose: args.verbose,
        verbose_max_bytes: configured.verbose_max_bytes,
    };
    let sink = Human::new(options);
    sink.emit(launch::started(&session));
    let stop = session.stop_handle();
    let (turn, received) = runtime.block_on(async {
        let received = signals::stop_on_interrupt(move |_| stop.stop())?;
        let turn = launch::run_task(&mut session, None, file.as_deref(), &prompt, &sink).await;
        Ok::<_, String>((turn, received))
    })?;
    if matches!(&turn, Ok(t) if t.outcome == TurnOutcome::Interrupted) {
        eprintln!("cogni: interrupted");
        return Ok(received.exit_code());
    }
    let review = job.report(&findings, &turn);
    let delivered = deliver(args, &review);
    let finished = matches!(&turn, Ok(t) if job::reported(t));
    if !finished {
        let (code, why) = launch::verdict(&turn, session.context().max_iterations);
        if let Some(why) = why {
            eprintln!("cogni: {why}");
        }
        // A turn that finished with an answer the output schema refused
        // is a report; anything else keeps the turn's own code.
        return Ok(code);
    }
    Ok(match delivered {
        Err(code) => code,
        Ok(()) => fail_on(args, &review),
    })
}

/// The exit code `--fail-on` gives a finished review.
fn fail_on(args: &ReviewArgs, review: &Review) -> u8 {
    match args.fail_on {
        Some(p) if review.at_or_above(p) > 0 => {
            eprintln!(
                "cogni: {} finding{} at P{p} or above (--fail-on P{p})",
                review.at_or_above(p),
                if review.at_or_above(p) == 1 { "" } else { "s" }
            );
            exit::TASK_FAILED
        }
        _ => exit::DONE,
    }
}

/// `--from REPORT`: a JSON report of this schema version.
fn saved(path: &std::path::Path) -> Result<Review, String> {
    let text = crate::tools::fs::read_text_limited(path, crate::tools::fs::SPEC_FILE_MAX_BYTES)
        .map_err(|e| format!("--from: {e}"))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("--from {}: not JSON: {e}", path.display()))?;
    if value["schema_version"] != job::SCHEMA_VERSION {
        return Err(format!(
            "--from {}: not a review report of schema version {} (write one with `cogni review --format json`)",
            path.display(),
            job::SCHEMA_VERSION
        ));
    }
    serde_json::from_value(value).map_err(|e| {
        format!(
            "--from {}: not a review report (write one with `cogni review --format json`): {e}",
            path.display()
        )
    })
}

fn color(no_color: bool, terminal: bool) -> bool {
    !no_color && std::env::var_os("NO_COLOR").is_none() && terminal
}

/// The report in `args.format`, on stdout or written to `-o FILE`; a
/// summary line on stderr. `Err` is the exit code of a failed write.
fn deliver(args: &ReviewArgs, review: &Review) -> Result<(), u8> {
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let text = match args.format {
        Format::Terminal => terminal::render(review, color(args.no_color, to_terminal), None),
        Format::Json => review.json(),
        Format::Sarif => sarif::sarif(review),
        Format::Markdown => markdown::markdown(review),
        Format::Github => markdown::github(review),
        Format::Gitlab => gitlab::code_quality(review),
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = crate::tools::fs::write_atomic(path, text.as_bytes()) {
                eprintln!("cogni: -o {}: {e}", path.display());
                return Err(exit::TASK_FAILED);
            }
            eprintln!(
                "cogni: review: {} ({}); wrote {}",
                review.verdict.as_str(),
                markdown::tally(review),
                path.display()
            );
        }
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }
    Ok(())
}
