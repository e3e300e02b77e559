//! One task in a session of its own, for the front doors that run tasks
//! with nobody at the keyboard (`cogni run`, `cogni mcp-server`): the
//! turn with the session's MCP servers, and what the outcome means as an
//! exit code. The session opens through [`super::builder`].

use super::exit;
use super::persist;
use crate::agent::{AgentError, EndReason, Session, TurnResult};
use crate::mcp::Servers;
use crate::protocol::{AgentEvent, EventSink, TurnOutcome};
use crate::store::SessionFile;

/// The `session.started` event of `session`, which front doors emit first.
pub(super) fn started(session: &Session) -> AgentEvent {
    let ctx = session.context();
    AgentEvent::SessionStarted {
        session_id: session.id.clone(),
        model: ctx.model.clone(),
        provider: session.provider_id().to_string(),
        cwd: ctx.cwd.clone(),
        sandbox: ctx.sandbox_policy.mode,
        approval: ctx.approval_policy,
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
