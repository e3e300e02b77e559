//! Front doors: argument parsing, `cogni run`, renderers.

mod approve;
mod models;
mod render;
mod run;
mod setup;
mod tasks;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit codes, documented in the README.
pub mod exit {
    pub const DONE: u8 = 0;
    pub const TASK_FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const PROVIDER: u8 = 3;
    /// `run --tasks`: a task ran out of budget (and none failed otherwise).
    pub const BUDGET_EXCEEDED: u8 = 4;
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Debug, Parser)]
#[command(
    name = "cogni",
    version,
    about = "A coding agent: talks to a model, runs tools in a sandbox, stops when the work is done.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task non-interactively and exit with a code that says how it went.
    Run(RunArgs),
    /// List the models the provider serves and the built-in model catalog.
    Models(ModelsArgs),
    /// Check a task file without running anything.
    Validate(tasks::ValidateArgs),
    /// Compare two task runs (results.json files or run directories).
    Compare(tasks::CompareArgs),
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    #[command(flatten)]
    pub common: ConfigArgs,

    /// Only the built-in catalog; do not ask the provider.
    #[arg(long)]
    pub offline: bool,
}

/// Where the configuration comes from; shared by every command.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Model to use (overrides config).
    #[arg(short, long)]
    pub model: Option<String>,

    /// Provider id: openai, anthropic, openrouter, azure, ollama, scripted, or one declared in config.
    #[arg(long)]
    pub provider: Option<String>,

    /// Script for the scripted provider (implies --provider scripted).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,

    /// Extra config file, applied over ./cogni.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Work in this directory.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task; `-` reads it from stdin. With --tasks: a task selector.
    #[arg(required_unless_present = "tasks")]
    pub task: Option<String>,

    #[command(flatten)]
    pub batch: tasks::TaskArgs,

    #[command(flatten)]
    pub common: ConfigArgs,

    /// Sandbox mode: read-only, workspace-write, danger-full-access.
    #[arg(short, long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<crate::protocol::SandboxMode>,

    /// Approval policy: untrusted, on-failure, on-request, never.
    #[arg(short, long, value_name = "POLICY", value_parser = parse_approval)]
    pub approval: Option<crate::protocol::ApprovalPolicy>,

    /// Print one JSON event per line on stdout instead of the final message.
    #[arg(long)]
    pub json: bool,

    /// Also write the final message to FILE.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,

    /// JSON Schema the final message must follow.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,

    /// Most model requests with tool calls in this turn (default 25).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,

    /// Log model requests and responses, tool calls and metrics on stderr.
    #[arg(short, long)]
    pub verbose: bool,

    /// No colors on stderr (also: NO_COLOR).
    #[arg(long)]
    pub no_color: bool,
}

fn parse_sandbox(s: &str) -> Result<crate::protocol::SandboxMode, String> {
    crate::config::parse_sandbox(s)
}

fn parse_approval(s: &str) -> Result<crate::protocol::ApprovalPolicy, String> {
    crate::config::parse_approval(s)
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => ExitCode::from(run::run(args)),
        Command::Models(args) => ExitCode::from(models::run(args)),
        Command::Validate(args) => ExitCode::from(tasks::validate(args)),
        Command::Compare(args) => ExitCode::from(tasks::compare(args)),
    }
}
