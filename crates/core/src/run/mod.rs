//! Middleware: behaviour around a whole run (one `run_turn`), composed as
//! a chain in tower's shape: each gets the run and the rest of the chain
//! (`next`), outermost first.
//!
//! The built-in chain, outermost first:
//!
//! 0. **checkpoints** (`[run] checkpoints`, on in the REPL and `cogni
//!    acp`, with `--checkpoint` in `cogni run`): the workspace is snapshot
//!    before and after the run, so it can be taken back
//!    (`crate::checkpoints`); outermost, so a run that panicked is
//!    snapshot after as well.
//! 1. **recovery**: a panic anywhere inside (a tool, an effect, a hook,
//!    another middleware) becomes an error with the panic's message and a
//!    `turn.failed` event; the session (and its file) stays valid, since
//!    history only ever gains whole exchanges.
//! 2. **logger**: start, finish (outcome, iterations, tokens) and errors in
//!    the log, with the agent's name.
//! 3. **timeout** (`[run] timeout_secs`): a deadline for the whole run,
//!    the output guardrail's second try included. It works through the
//!    loop's watch (as a deadline effect for the run's length), so when it
//!    passes whatever runs is stopped, every call is answered and the run
//!    ends with `budget_exceeded` (seconds).
//! 4. **output guardrail** (`[run.output_guardrail]`, one per config layer,
//!    all of them checked): the final answer must match a JSON Schema, a
//!    regex, or a command (exit 0). It checks
//!    at the loop's `turn_end` (as an effect for the run's length), so the
//!    first rejection goes back to the model within the same turn and the
//!    second ends it with `invalid_output`.

pub mod config;

pub use config::{OutputGuardrail, RunConfig};

use super::checkpoints::Checkpointing;
use super::effects::{
    panic_message, Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point, Stop,
};
use super::outcome::{AgentError, TurnResult};
use super::session::Session;
use cogni_protocol::{AgentEvent, EventSink, HistoryItem, Role, TurnOutcome};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::sync::Arc;
use std::time::Duration;

/// One middleware.
pub trait Middleware: Send + Sync {
    /// What logs and errors call it.
    fn name(&self) -> &str;

    /// Run `input` on `session` through `next` (the rest of the chain),
    /// before and after which the middleware does its part.
    fn call<'a>(
        &'a self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>>;
}

/// The rest of the chain.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    chain: &'a [Arc<dyn Middleware>],
}

impl<'a> Next<'a> {
    pub(crate) fn new(chain: &'a [Arc<dyn Middleware>]) -> Self {
        Next { chain }
    }

    /// Run the rest of the chain, then the turn itself.
    pub fn run(
        self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>> {
        match self.chain.split_first() {
            Some((first, rest)) => first.call(session, input, sink, Next { chain: rest }),
            None => Box::pin(async move { session.turn(&input, sink).await }),
        }
    }
}

impl Session {
    /// Run one turn for `user_text` through the middleware chain. Provider
    /// failures end the turn with an error (after a `turn.failed` event);
    /// everything else ends with a [`TurnOutcome`].
    pub async fn run_turn(
        &mut self,
        user_text: &str,
        sink: &dyn EventSink,
    ) -> Result<TurnResult, AgentError> {
        let mut chain = builtin(&self.extensions.run);
        chain.extend(self.conversation.middleware.iter().cloned());
        Next::new(&chain)
            .run(self, user_text.to_string(), sink)
            .await
    }
}

/// The chain for a run with `config`.
pub(crate) fn builtin(config: &RunConfig) -> Vec<Arc<dyn Middleware>> {
    let mut chain: Vec<Arc<dyn Middleware>> = Vec::new();
    if config.checkpoints.is_some() {
        chain.push(Arc::new(Checkpointing));
    }
    chain.extend([Arc::new(Recovery) as Arc<dyn Middleware>, Arc::new(Logger)]);
    if let Some(limit) = config.timeout {
        chain.push(Arc::new(Timeout(limit)));
    }
    if !config.output_guardrails.is_empty() {
        chain.push(Arc::new(OutputGuardrails(config.output_guardrails.clone())));
    }
    chain
}

/// Panics become errors.
struct Recovery;

impl Middleware for Recovery {
    fn name(&self) -> &str {
        "recovery"
    }

    fn call<'a>(
        &'a self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>> {
        Box::pin(async move {
            let turn = session.turns + 1;
            let ran = std::panic::AssertUnwindSafe(next.run(session, input, sink))
                .catch_unwind()
                .await;
            match ran {
                Ok(result) => result,
                Err(panic) => {
                    let message = panic_message(&*panic);
                    tracing::error!(%message, "a panic ended the turn");
                    let error = AgentError::Panic(message);
                    sink.emit(AgentEvent::TurnFailed {
                        turn,
                        error: error.to_string(),
                    });
                    Err(error)
                }
            }
        })
    }
}

/// Start, finish and errors in the log.
struct Logger;

impl Middleware for Logger {
    fn name(&self) -> &str {
        "logger"
    }

    fn call<'a>(
        &'a self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>> {
        Box::pin(async move {
            let (id, agent, model) = (
                session.id.clone(),
                session.agent.clone(),
                session.ctx.model.clone(),
            );
            let turn = session.turns + 1;
            tracing::info!(session = %id, %agent, turn, %model, "turn started");
            let result = next.run(session, input, sink).await;
            match &result {
                Ok(r) => tracing::info!(
                    session = %id,
                    %agent,
                    turn,
                    outcome = ?r.outcome,
                    reason = r.reason.as_deref().unwrap_or(""),
                    iterations = r.iterations,
                    input_tokens = r.usage.input_tokens,
                    output_tokens = r.usage.output_tokens,
                    "turn completed"
                ),
                Err(e) => tracing::warn!(session = %id, %agent, turn, error = %e, "turn failed"),
            }
            result
        })
    }
}

/// A deadline for the whole run.
struct Timeout(Duration);

/// The effect [`Timeout`] installs: only a deadline.
struct RunDeadline(Duration);

const RUN_TIMEOUT: &str = "run_timeout";

impl Effect for RunDeadline {
    fn name(&self) -> &str {
        RUN_TIMEOUT
    }

    fn phases(&self) -> &'static [Phase] {
        &[]
    }

    fn eval<'a>(
        &'a mut self,
        _: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        Box::pin(async { Ok(Decision::Continue.into()) })
    }

    fn deadline(&self) -> Option<Duration> {
        Some(self.0)
    }
}

impl Middleware for Timeout {
    fn name(&self) -> &str {
        "timeout"
    }

    fn call<'a>(
        &'a self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>> {
        Box::pin(async move {
            session
                .extensions
                .effects
                .replace(Box::new(RunDeadline(self.0)));
            let result = next.run(&mut *session, input, sink).await;
            session.extensions.effects.remove(RUN_TIMEOUT);
            result
        })
    }
}

const OUTPUT_CHECK: &str = "output_guardrail";

/// Every layer's output guardrail: the answer must satisfy all of them.
struct OutputGuardrails(Vec<OutputGuardrail>);

/// The effect [`OutputGuardrails`] installs for a run.
struct OutputCheck {
    guards: Vec<OutputGuardrail>,
    rejected: bool,
}

impl OutputCheck {
    /// The first guardrail's objection to `answer`, if any.
    async fn problem(&self, answer: &str, cx: &IterationContext<'_>) -> Option<String> {
        for guard in &self.guards {
            if let Some(problem) = guard
                .check(answer, cx.cwd, &cx.ctx.sandbox_policy.pins)
                .await
            {
                return Some(problem);
            }
        }
        None
    }
}

impl Effect for OutputCheck {
    fn name(&self) -> &str {
        OUTPUT_CHECK
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::TurnEnd]
    }

    fn guards(&self) -> bool {
        true
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        Box::pin(async move {
            let Point::TurnEnd { text } = cx.point else {
                return Ok(Decision::Continue.into());
            };
            let Some(problem) = self.problem(text, cx).await else {
                return Ok(Decision::Continue.into());
            };
            if std::mem::replace(&mut self.rejected, true) {
                return Ok(Decision::Stop(Stop::by(
                    OUTPUT_CHECK,
                    TurnOutcome::InvalidOutput,
                    format!("the final answer was rejected twice: {problem}"),
                ))
                .into());
            }
            cx.sink.emit(AgentEvent::Warning {
                message: format!(
                    "the final answer was rejected ({problem}); asking the model once more"
                ),
            });
            Ok(Decision::AddItems(vec![HistoryItem::text(
                Role::User,
                format!(
                    "[cogni] Your final answer was rejected: {problem}. Answer again, fixing that; the answer must satisfy the check."
                ),
            )])
            .into())
        })
    }
}

impl Middleware for OutputGuardrails {
    fn name(&self) -> &str {
        "output_guardrail"
    }

    fn call<'a>(
        &'a self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>> {
        Box::pin(async move {
            session.extensions.effects.replace(Box::new(OutputCheck {
                guards: self.0.clone(),
                rejected: false,
            }));
            let result = next.run(&mut *session, input, sink).await;
            session.extensions.effects.remove(OUTPUT_CHECK);
            result
        })
    }
}
