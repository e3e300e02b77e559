//! One task in a session of its own, for the front doors that run tasks
//! with nobody at the keyboard (`cogni run`, `cogni mcp-server`): the
//! configuration with the command's options, the agent card, the sandbox
//! check, saving or resuming, the provider; the turn with the session's
//! MCP servers; and what the outcome means as an exit code.

use super::persist::{self, Persist, Resume};
use super::PolicyArgs;
use super::{exit, setup, ConfigArgs};
use crate::agent::{
    start_session_with_provider, AgentError, Delegating, EndReason, Session, SessionConfig,
    TurnResult,
};
use crate::config::ConfigFile;
use crate::mcp::{McpConfig, Servers};
use crate::protocol::{EventSink, TurnOutcome};
use crate::provider::{record, record::Recording};
use crate::store::{Redactor, SessionFile, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the command asks of the session, over the config files.
pub(super) struct Options<'a> {
    pub common: &'a ConfigArgs,
    /// `--sandbox`, `--approval`, `--no-sandbox` (the warning says so).
    pub policy: PolicyArgs,
    pub max_iterations: Option<u32>,
    /// Run as this agent (a card `cogni agents` lists).
    pub agent: Option<&'a str>,
    pub verbose: bool,
    pub output_schema: Option<serde_json::Value>,
    /// Save the session under $COGNI_HOME/sessions.
    pub persist: bool,
    /// Continue this saved session (an id or a unique prefix).
    pub resume: Option<String>,
    /// With `resume`: continue in a copy.
    pub fork: bool,
}

/// A session's configuration, checked, and what starting it needs.
pub(super) struct Launch {
    persist: Persist,
    pub redact: Redactor,
    /// The MCP servers the session starts.
    pub mcp: McpConfig,
    pub verbose_max_bytes: usize,
}

/// Load the configuration for a session working in `cwd` (`launch_dir`
/// is where relative paths of the options start) and check it: the
/// agent card, the sandbox, the session to resume. Warnings go to stderr.
pub(super) fn configure(
    options: Options,
    launch_dir: &Path,
    cwd: PathBuf,
) -> Result<(SessionConfig, Launch), String> {
    let flags = ConfigFile {
        sandbox_mode: options.policy.sandbox_mode(),
        approval_policy: options.policy.approval,
        max_iterations: options.max_iterations,
        ..Default::default()
    };
    let loaded = setup::load(options.common, launch_dir, cwd, flags)?;
    let home = loaded.home;
    let loaded = loaded.config;
    let catalog = super::agents::catalog(&loaded, &home);
    for problem in &catalog.problems {
        eprintln!("cogni: warning: {problem}");
    }
    let base = loaded.session.clone();
    let mut config = loaded.session;
    if let Some(name) = options.agent {
        let card = catalog
            .cards
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| format!("no agent is named `{name}`; `cogni agents` lists them"))?;
        super::agents::apply(&mut config, card, options.common.model.is_some());
    }
    config.verbose = options.verbose;
    config.output_schema = options.output_schema;
    let redact = persist::redactor([&config]);
    setup::init_logging(&home, redact.clone());
    setup::check_sandbox(
        config.sandbox_policy.mode,
        options.policy.no_sandbox,
        &config.cwd,
    )?;
    let persist = Persist {
        store: Store::new(&home),
        enabled: options.persist,
        resume: options.resume.map(Resume::Id),
        fork: options.fork,
    };
    persist.prepare(&mut config)?;
    config.delegation = Some(Delegating {
        registry: super::agents::registry(&base, &catalog.cards),
        limits: loaded.delegation,
    });
    let launch = Launch {
        persist,
        redact,
        mcp: loaded.mcp,
        verbose_max_bytes: loaded.verbose_max_bytes,
    };
    Ok((config, launch))
}

impl Launch {
    /// Start the session of `config` (its requests recorded into
    /// `recording`, if any): a resumed one with its history, and its
    /// session file unless it is not saved.
    pub(super) fn start(
        &self,
        config: SessionConfig,
        recording: Option<&Arc<Recording>>,
    ) -> Result<(Session, Option<Arc<SessionFile>>), String> {
        let provider = crate::agent::create_provider(&config).map_err(|e| e.to_string())?;
        let provider = record::wrap(provider, recording);
        let mut session =
            start_session_with_provider(config, provider).map_err(|e| e.to_string())?;
        let file = self.persist.attach(&mut session, self.redact.clone())?;
        Ok((session, file))
    }
}

/// Run `task` as the session's turn and end the session; then stop its
/// MCP servers, count the turn's tokens in the session file and report a
/// failure to save it (on stderr).
pub(super) async fn run_task(
    session: &mut Session,
    servers: Option<Servers>,
    file: Option<&SessionFile>,
    task: &str,
    sink: &dyn EventSink,
) -> Result<TurnResult, AgentError> {
    let turn = session.run_turn(task, sink).await;
    session.end(EndReason::after(&turn), sink).await;
    if let Some(servers) = &servers {
        servers.shut_down().await;
    }
    if let (Some(file), Ok(turn)) = (file, &turn) {
        file.record_usage(&turn.usage);
    }
    persist::report_failure(file, &mut false);
    turn
}

/// What a turn's end means: `cogni run`'s exit code for it and, unless the
/// task is done, why not. An interrupted turn gets 130, whatever stopped it.
pub(super) fn verdict(
    turn: &Result<TurnResult, AgentError>,
    max_iterations: u32,
) -> (u8, Option<String>) {
    let turn = match turn {
        Err(e @ AgentError::Provider(_)) => return (exit::PROVIDER, Some(e.to_string())),
        Err(e @ AgentError::Panic(_)) => return (exit::TASK_FAILED, Some(e.to_string())),
        Ok(turn) => turn,
    };
    let code = match turn.outcome {
        TurnOutcome::Done => return (exit::DONE, None),
        TurnOutcome::Interrupted => return (exit::INTERRUPTED, Some("interrupted".into())),
        TurnOutcome::BudgetExceeded => exit::BUDGET_EXCEEDED,
        _ => exit::TASK_FAILED,
    };
    let why = match &turn.reason {
        Some(reason) => reason.clone(),
        None => describe(&turn.outcome, max_iterations),
    };
    (code, Some(format!("the task did not finish: {why}")))
}

pub(super) fn describe(outcome: &TurnOutcome, max_iterations: u32) -> String {
    match outcome {
        TurnOutcome::Done => "done".into(),
        TurnOutcome::MaxSteps => format!(
            "reached the limit of {max_iterations} steps (raise --max-iterations or [agent] max_steps)"
        ),
        TurnOutcome::EmptyResponse => "the model returned empty responses".into(),
        TurnOutcome::Truncated => "the model's output was cut off at its token limit".into(),
        TurnOutcome::RepeatedFailure => "the model kept repeating a failing tool call".into(),
        TurnOutcome::InvalidOutput => "the final answer does not match --output-schema".into(),
        TurnOutcome::Interrupted => "interrupted".into(),
        TurnOutcome::BudgetExceeded => "a budget ran out".into(),
        TurnOutcome::Blocked => "blocked by a guardrail or a hook".into(),
        TurnOutcome::BlockedByReflect => "a reflection blocked the step".into(),
        TurnOutcome::EffectFailed => "an effect failed".into(),
    }
}
