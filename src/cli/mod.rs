//! Front doors: argument parsing, `cogni run`, renderers.

mod acp;
mod acp_client;
mod agents;
mod approve;
mod builder;
mod config_cmd;
mod export;
mod import;
mod interactive;
mod launch;
mod manual;
mod mcp;
mod mcp_server;
mod merge;
mod mode;
mod models;
mod persist;
mod render;
mod repl;
mod review;
mod run;
mod sandbox;
mod setup;
mod signals;
mod skills;
mod slash;
mod tasks;
mod trust;
mod undo;
mod view;

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

/// `cogni --version`: the version, and the target, profile and commit the
/// binary was built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("COGNI_BUILD_TARGET"),
    ", ",
    env!("COGNI_BUILD_PROFILE"),
    " profile, commit ",
    env!("COGNI_BUILD_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "cogni",
    version = VERSION,
    about = "A coding agent: talks to a model, runs tools in a sandbox, stops when the work is done.",
    propagate_version = true,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Without a command: the REPL, with PROMPT as its first message
    /// (`cogni "fix the failing test"`).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Without a command on a terminal: the interactive REPL.
    #[command(flatten)]
    pub repl: ReplArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task non-interactively and exit with a code that says how it went (also: `cogni exec`, `cogni -p "TASK"`).
    #[command(alias = "exec")]
    Run(Box<RunArgs>),
    /// The interactive REPL (also: `cogni` with no command on a terminal).
    Repl(ReplArgs),
    /// Continue a saved session in the REPL.
    Resume(ResumeArgs),
    /// Take a session's changes to the files back, from its checkpoints
    /// (`cogni run --checkpoint`, the REPL).
    Undo(UndoArgs),
    /// List saved sessions: id, start time, tokens, cwd, first prompt.
    Sessions(SessionsArgs),
    /// List the models the provider serves and the built-in model catalog.
    Models(ModelsArgs),
    /// List the agents a session can delegate to, and where each comes from.
    Agents(AgentsArgs),
    /// Check the sandbox (`cogni sandbox check`) or run one command in it (`cogni sandbox -- CMD`).
    Sandbox(sandbox::SandboxArgs),
    /// List the skills found (project and user), where each comes from, their problems and what the system prompt's listing leaves out.
    Skills(SkillsArgs),
    /// MCP servers: list them with their tools, add or remove one.
    Mcp(mcp::McpArgs),
    /// Serve cogni as an MCP server over stdio: tools `cogni` (run a task) and `cogni_reply` (continue its session).
    McpServer(mcp_server::McpServerArgs),
    /// Serve an editor over the Agent Client Protocol on stdin and stdout (Zed and other ACP clients).
    Acp(acp::AcpArgs),
    /// Trust a directory's own cogni.toml, hooks, MCP servers, skills, agent cards and commands; list or revoke trust; show what an untrusted one may set.
    Trust(trust::TrustArgs),
    /// The configuration: `cogni config example` prints every key of cogni.toml with what it does.
    Config(config_cmd::ConfigArgs),
    /// Bring settings from another agent: Codex CLI's config.toml or Claude Code's settings, as cogni.toml.
    Import(import::ImportArgs),
    /// Review a change read-only: the uncommitted changes (default), a branch (--base), a commit or files; findings as text, JSON, SARIF, Markdown, a GitHub review or a GitLab code quality report.
    Review(Box<review::ReviewArgs>),
    /// Check a task file without running anything.
    Validate(tasks::ValidateArgs),
    /// Compare two task runs (results.json files or run directories).
    Compare(tasks::CompareArgs),
    /// Merge the results of a run's shards (`run --tasks --shard K/N`) into one run.
    Merge(merge::MergeArgs),
    /// Print a shell completion script: bash, zsh, fish, powershell.
    Completions(manual::CompletionsArgs),
    /// Print the manual page (roff) of cogni or of one of its commands.
    Man(manual::ManArgs),
}

#[derive(Debug, Args)]
pub struct ReplArgs {
    #[command(flatten)]
    pub common: ConfigArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Start in this mode: plan, act or auto.
    #[arg(long, value_name = "MODE", value_parser = ["plan", "act", "auto"])]
    pub mode: Option<String>,

    /// No colors (also: NO_COLOR, TERM=dumb).
    #[arg(long)]
    pub no_color: bool,

    /// Do not save the session under $COGNI_HOME/sessions.
    #[arg(long)]
    pub no_persist: bool,

    /// Front an ACP agent: start CMD (a command line, e.g. "cogni acp" or
    /// "node agent.js") and talk to it over the Agent Client Protocol
    /// instead of running cogni's own agent (see docs/acp.md).
    #[arg(long, value_name = "CMD", conflicts_with_all = ["model", "provider", "script", "approval", "mode", "no_persist"])]
    pub acp: Option<String>,

    /// With --acp: how long the agent may take to start (to answer
    /// `initialize` and open its session), in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60, requires = "acp", value_parser = clap::value_parser!(u64).range(1..))]
    pub acp_timeout: u64,

    /// Attach an image (PNG, JPEG, GIF or WebP) to the first message
    /// (repeatable; larger ones are scaled down).
    #[arg(long = "image", value_name = "FILE", conflicts_with = "acp")]
    pub images: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session id (or a unique prefix of it); see `cogni sessions`.
    /// Without one (and without --last): pick one of this directory's
    /// sessions on the terminal.
    #[arg(conflicts_with = "last")]
    pub id: Option<String>,

    /// The session saved most recently.
    #[arg(long)]
    pub last: bool,

    /// Continue in a copy (a new session), e.g. when the session is in use.
    #[arg(long)]
    pub fork: bool,

    #[command(flatten)]
    pub repl: ReplArgs,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The session (an id or its start; default: the last one that ran
    /// in this directory).
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,

    /// Take back from this turn on (default: every turn of the session).
    #[arg(long, value_name = "N")]
    pub turn: Option<u32>,

    /// Show what would be restored, and change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Restore also the paths changed by hand since the turns.
    #[arg(long, conflicts_with = "keep_mine")]
    pub force: bool,

    /// Restore the rest, and leave the paths changed by hand since.
    #[arg(long)]
    pub keep_mine: bool,

    #[command(flatten)]
    pub common: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub action: Option<SessionsCommand>,

    #[command(flatten)]
    pub common: ConfigArgs,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Write a saved session as a readable transcript (md, html or json).
    Export(export::ExportArgs),
}

#[derive(Debug, Args)]
pub struct SkillsArgs {
    #[command(flatten)]
    pub common: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    #[command(flatten)]
    pub common: ConfigArgs,

    /// Only the built-in catalog; do not ask the provider.
    #[arg(long)]
    pub offline: bool,
}

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(flatten)]
    pub common: ConfigArgs,
}

/// Where the configuration comes from; shared by every command.
#[derive(Debug, Clone, Args)]
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

    /// Use the keys of `[profiles.NAME]` of config over the files' own.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
}

/// The policy flags of every front door that runs the agent (`run`, the
/// REPL, `acp`, `mcp-server`): one definition, one meaning, as codex's
/// `ConfigOverrides` serves its front doors.
#[derive(Debug, Clone, Default, Args)]
pub struct PolicyArgs {
    /// Sandbox mode: read-only, workspace-write, danger-full-access.
    #[arg(short, long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<crate::protocol::SandboxMode>,

    /// Approval policy: untrusted, on-failure, on-request, never.
    #[arg(short, long, value_name = "POLICY", value_parser = parse_approval)]
    pub approval: Option<crate::protocol::ApprovalPolicy>,

    /// Run commands without the kernel sandbox (the same as --sandbox
    /// danger-full-access; a read-only mode such as plan stays read-only).
    #[arg(long, conflicts_with = "sandbox")]
    pub no_sandbox: bool,
}

impl PolicyArgs {
    /// The sandbox mode the flags ask for: `--no-sandbox` is
    /// danger-full-access; `None` leaves it to config.
    pub fn sandbox_mode(&self) -> Option<crate::protocol::SandboxMode> {
        if self.no_sandbox {
            Some(crate::protocol::SandboxMode::DangerFullAccess)
        } else {
            self.sandbox
        }
    }
}

/// The budgets of a turn on the command line (`cogni run`, `cogni
/// review`): each is one effect over the configured ones (`cost_limit`,
/// `token_limit`, `time_limit`; a limit set twice keeps the tightest), and
/// stops the turn with exit code 4.
#[derive(Debug, Clone, Default, Args)]
pub struct BudgetArgs {
    /// Stop the turn once it has cost this many USD (the model's price
    /// must be known: the catalog's, or `[model_families]`).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,

    /// Stop the turn once it has used this many tokens, input and output
    /// together.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,

    /// Stop the turn after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub max_seconds: Option<f64>,
}

impl BudgetArgs {
    /// True when a budget is given.
    pub fn any(&self) -> bool {
        self.max_cost.is_some() || self.max_tokens.is_some() || self.max_seconds.is_some()
    }

    /// The budgets as `effects = [...]` entries of the flags' layer.
    pub fn effects(&self) -> Result<Option<crate::protocol::layer::AddUp<toml::Value>>, String> {
        let positive = |flag: &str, v: Option<f64>| match v {
            Some(v) if !(v.is_finite() && v > 0.0) => {
                Err(format!("{flag} {v}: give a number greater than 0"))
            }
            _ => Ok(()),
        };
        positive("--max-cost", self.max_cost)?;
        positive("--max-seconds", self.max_seconds)?;
        let mut effects = Vec::new();
        let entry = |kind: &str, key: &str, value: toml::Value| {
            let mut table = toml::Table::new();
            table.insert("kind".into(), kind.into());
            table.insert(key.into(), value);
            toml::Value::Table(table)
        };
        if let Some(usd) = self.max_cost {
            effects.push(entry("cost_limit", "usd", usd.into()));
        }
        if let Some(tokens) = self.max_tokens {
            let tokens =
                i64::try_from(tokens).map_err(|_| "--max-tokens: too large".to_string())?;
            effects.push(entry("token_limit", "tokens", tokens.into()));
        }
        if let Some(seconds) = self.max_seconds {
            effects.push(entry("time_limit", "seconds", seconds.into()));
        }
        Ok((!effects.is_empty()).then_some(crate::protocol::layer::AddUp(effects)))
    }
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

    #[command(flatten)]
    pub policy: PolicyArgs,

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

    #[command(flatten)]
    pub budget: BudgetArgs,

    /// Attach a file, or a directory's summary, to the task (repeatable;
    /// all together within max_context_bytes).
    #[arg(long = "context", value_name = "PATH")]
    pub context: Vec<String>,

    /// Attach an image (PNG, JPEG, GIF or WebP) to the task (repeatable;
    /// larger ones are scaled down to what the APIs take).
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<String>,

    /// Log model requests and responses, tool calls and metrics on stderr.
    #[arg(short, long)]
    pub verbose: bool,

    /// No colors on stderr (also: NO_COLOR).
    #[arg(long)]
    pub no_color: bool,

    /// Continue the saved session ID (see `cogni sessions`) with this task.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,

    /// With --resume: continue in a copy (a new session).
    #[arg(long, requires = "resume")]
    pub fork: bool,

    /// Do not save the session under $COGNI_HOME/sessions.
    #[arg(long)]
    pub no_persist: bool,

    /// Snapshot the workspace before and after each turn, so `cogni undo
    /// SESSION` can take the run's changes back (also: `[checkpoints] run`).
    #[arg(long, conflicts_with = "no_persist")]
    pub checkpoint: bool,

    /// Record the model's side of the session (texts, tool calls, usage)
    /// as a script that `--script FILE` replays offline.
    #[arg(long, value_name = "FILE", conflicts_with = "tasks")]
    pub record: Option<PathBuf>,

    /// With --record (or a task's `record`): a replay must also see each
    /// call's exact output, not only its exit code.
    #[arg(long)]
    pub record_outputs: bool,

    /// Front an ACP agent: start CMD (a command line, e.g. "cogni acp" or
    /// "node agent.js") and send it the task over the Agent Client
    /// Protocol instead of running cogni's own agent (see docs/acp.md).
    #[arg(long, value_name = "CMD", conflicts_with_all = ["tasks", "agent", "model", "provider", "script", "approval", "output_schema", "max_iterations", "context", "resume", "record", "no_persist"])]
    pub acp: Option<String>,

    /// With --acp: how long the agent may take to start (to answer
    /// `initialize` and open its session), in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60, requires = "acp", value_parser = clap::value_parser!(u64).range(1..))]
    pub acp_timeout: u64,
}

fn parse_sandbox(s: &str) -> Result<crate::protocol::SandboxMode, String> {
    crate::config::parse_sandbox(s)
}

fn parse_approval(s: &str) -> Result<crate::protocol::ApprovalPolicy, String> {
    crate::config::parse_approval(s)
}

/// `cogni -p TASK ...` (`--print`, Claude Code's habit) is `cogni run TASK
/// ...`: the flag goes and `run` comes first, the rest as given. Only
/// before a command name: `cogni run -p` is run's own business.
fn print_is_run(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let cli = Cli::command();
    let is_command = |a: &std::ffi::OsString| {
        a.to_str()
            .is_some_and(|a| cli.find_subcommand(a).is_some() || a == "--")
    };
    let Some(at) = args
        .iter()
        .skip(1)
        .take_while(|a| !is_command(a))
        .position(|a| a == "-p" || a == "--print")
    else {
        return args;
    };
    args.remove(at + 1);
    args.insert(1, "run".into());
    args
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse_from(print_is_run(std::env::args_os().collect()));
    if matches!(
        cli.command,
        None | Some(
            Command::Run(_)
                | Command::Review(_)
                | Command::Repl(_)
                | Command::Resume(_)
                | Command::McpServer(_)
                | Command::Acp(_)
        )
    ) {
        // These check the sandbox before their first request.
        crate::sandbox::probe_in_background();
    }
    match cli.command {
        Some(Command::Run(args)) => ExitCode::from(run::run(*args)),
        Some(Command::Repl(args)) => ExitCode::from(repl::run(args, None, false, None)),
        Some(Command::Resume(args)) => {
            let resume = match (args.id, args.last) {
                (Some(id), _) => persist::Resume::Id(id),
                (None, true) => persist::Resume::Last,
                (None, false) => match repl::pick_session(&args.repl) {
                    Ok(Some(id)) => persist::Resume::Id(id),
                    Ok(None) => {
                        eprintln!("cogni: no session chosen");
                        return ExitCode::from(exit::DONE);
                    }
                    Err(e) => {
                        eprintln!("cogni: {e}");
                        return ExitCode::from(exit::USAGE);
                    }
                },
            };
            ExitCode::from(repl::run(args.repl, Some(resume), args.fork, None))
        }
        Some(Command::Sessions(SessionsArgs {
            action: Some(SessionsCommand::Export(args)),
            ..
        })) => ExitCode::from(export::run(args)),
        Some(Command::Sessions(args)) => ExitCode::from(persist::list(args)),
        Some(Command::Undo(args)) => ExitCode::from(undo::run(args)),
        Some(Command::Models(args)) => ExitCode::from(models::run(args)),
        Some(Command::Agents(args)) => ExitCode::from(agents::run(args)),
        Some(Command::Sandbox(args)) => ExitCode::from(sandbox::run(args)),
        Some(Command::Skills(args)) => ExitCode::from(skills::run(args)),
        Some(Command::Trust(args)) => ExitCode::from(trust::run(args)),
        Some(Command::Config(args)) => ExitCode::from(config_cmd::run(args)),
        Some(Command::Import(args)) => ExitCode::from(import::run(args)),
        Some(Command::Mcp(args)) => ExitCode::from(mcp::run(args)),
        Some(Command::McpServer(args)) => ExitCode::from(mcp_server::run(args)),
        Some(Command::Acp(args)) => ExitCode::from(acp::run(args)),
        Some(Command::Review(args)) => ExitCode::from(review::run(*args)),
        Some(Command::Validate(args)) => ExitCode::from(tasks::validate(args)),
        Some(Command::Compare(args)) => ExitCode::from(tasks::compare(args)),
        Some(Command::Merge(args)) => ExitCode::from(merge::run(args)),
        Some(Command::Completions(args)) => ExitCode::from(manual::completions(args)),
        Some(Command::Man(args)) => ExitCode::from(manual::man(args)),
        None => {
            use std::io::IsTerminal;
            if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
                ExitCode::from(repl::run(cli.repl, None, false, cli.prompt))
            } else {
                eprintln!("cogni: no command given and no terminal for the REPL: use `cogni run \"<task>\"` (see `cogni --help`), or `cogni repl` to read input from a pipe");
                ExitCode::from(exit::USAGE)
            }
        }
    }
}
