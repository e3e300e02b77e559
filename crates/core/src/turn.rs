//! The turn loop: user input in, model and tools until the model answers
//! without asking for tools (or something stops it), events out.
//!
//! ```text
//! run_turn ─ turn_start effects ─ user message
//!   loop:
//!     pending input ─ before_model effects (budgets, compaction) ─ request
//!     request failed ─ after_model effects (overflow: compact, retry once)
//!     reply ─ after_model effects (guardrails)
//!     no calls: turn_end effects (output schema; items keep it going) ─ done
//!     calls: for each: before_tool effects (budgets, repetition, guardrails,
//!            hooks) ─ run ─ after_tool effects ─ reply + outputs into history
//! ```
//!
//! Everything that is not the loop itself is an effect
//! ([`super::effects`]); the loop applies their decisions in registration
//! order and keeps history valid: a reply and its calls' outputs enter
//! history together, and every call gets exactly one output, also when it
//! was blocked, stopped or interrupted.

use super::context_strategy::AtLimit;
use super::effects::{Decision, HistoryEdit, IterationContext, Phase, Point, Spent, Stop};
use super::limits::{Halt, Watch};
use super::outcome::{AgentError, ToolCallRecord, TurnResult};
use super::request::ModelResponse;
use super::session::Session;
use cogni_protocol::{
    AgentEvent, EventSink, HistoryItem, MessageTag, Role, StopReason, ToolCall, TurnOutcome,
};
use cogni_tools::ToolResult;
use std::time::Instant;

/// The state of one turn.
pub(crate) struct TurnRun {
    pub(crate) turn: u32,
    pub(crate) records: Vec<ToolCallRecord>,
    pub(crate) iterations: u32,
    pub(crate) started: Instant,
    /// Calls run (past the `before_tool` effects) this turn.
    pub(crate) tool_calls: u32,
    /// Items effects added for the next request.
    pub(crate) queued: Vec<HistoryItem>,
    /// A stop that waits for the reply's remaining calls.
    pub(crate) stop_after_calls: Option<Stop>,
}

impl TurnRun {
    pub(crate) fn new(turn: u32) -> Self {
        TurnRun {
            turn,
            records: Vec::new(),
            iterations: 0,
            started: Instant::now(),
            tool_calls: 0,
            queued: Vec::new(),
            stop_after_calls: None,
        }
    }

    fn result(&self, session: &Session, outcome: TurnOutcome, final_text: String) -> TurnResult {
        TurnResult {
            outcome,
            final_text,
            tool_calls: self.records.clone(),
            iterations: self.iterations,
            usage: session.meter.metrics.turn_usage(),
            limit: None,
            reason: None,
        }
    }
}

/// What the effects at one point decided, once applied.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub(crate) stop: Option<Stop>,
    /// Items for the next request (or, at `turn_start`, after the prompt).
    pub(crate) items: Vec<HistoryItem>,
    /// `turn_end`: items for history that do not keep the turn going
    /// (elsewhere notes join `items`).
    pub(crate) notes: Vec<HistoryItem>,
    /// `before_tool`: the arguments to run the call with.
    pub(crate) args: Option<String>,
    /// `before_tool`: the call is not run; this is its output.
    pub(crate) block: Option<String>,
    /// `after_tool`: what the model sees instead of the result.
    pub(crate) output: Option<ToolResult>,
    /// History was edited (a request that failed is made again).
    pub(crate) edited: bool,
}

impl Session {
    /// One turn without middleware: events, effects, the loop.
    pub(crate) async fn turn(
        &mut self,
        user_text: &str,
        sink: &dyn EventSink,
    ) -> Result<TurnResult, AgentError> {
        self.turns += 1;
        let turn = self.turns;
        if turn == 1 {
            // Before the session's first request: no cached prefix to lose.
            self.ctx.focus_memory(user_text);
        }
        self.ctx.refresh_system_prompt_date();
        self.meter.metrics.start_turn();
        sink.emit(AgentEvent::TurnStarted { turn });
        let mut run = TurnRun::new(turn);
        let result = self.turn_loop(user_text, &mut run, sink).await;
        sink.emit(AgentEvent::Metrics {
            snapshot: serde_json::to_value(self.meter.metrics.snapshot()).unwrap_or_default(),
        });
        match &result {
            Ok(result) => sink.emit(AgentEvent::TurnCompleted {
                turn,
                outcome: result.outcome.clone(),
                final_text: result.final_text.clone(),
                iterations: result.iterations,
                usage: result.usage,
                limit: result.limit,
                reason: result.reason.clone(),
            }),
            Err(err) => sink.emit(AgentEvent::TurnFailed {
                turn,
                error: err.to_string(),
            }),
        }
        result
    }

    /// Attach `images` to the next message the user sends; refused (with
    /// what to do) when the model does not take images.
    pub fn attach_images(&mut self, images: Vec<cogni_protocol::Image>) -> Result<(), String> {
        if !images.is_empty() && !self.ctx.model_family.supports_images {
            return Err(crate::request::no_images(&self.ctx.model));
        }
        self.conversation.attached.extend(images);
        Ok(())
    }

    /// A message of the user's, with the images attached to it, followed
    /// by the procedure of each skill it
    /// names as `$name` (the spec's "skill injections from the user
    /// text"; with skills on), each announced by a `skill` event.
    fn user_message(&mut self, text: &str, sink: &dyn EventSink) -> Vec<HistoryItem> {
        let mut items = vec![HistoryItem::text(Role::User, text)];
        items.extend(
            std::mem::take(&mut self.conversation.attached)
                .into_iter()
                .map(|image| HistoryItem {
                    role: Role::User,
                    content: cogni_protocol::Content::Image(image),
                }),
        );
        if let Some(skills) = &self.toolset.shared.config.skills {
            for skill in skills.mentioned(text) {
                sink.emit(AgentEvent::Skill {
                    name: skill.name.clone(),
                    path: skill.dir.join("SKILL.md"),
                });
                items.push(HistoryItem::tagged(
                    Role::User,
                    MessageTag::Skill,
                    skill.render(&self.ctx.cwd),
                ));
            }
        }
        items
    }

    async fn turn_loop(
        &mut self,
        user_text: &str,
        run: &mut TurnRun,
        sink: &dyn EventSink,
    ) -> Result<TurnResult, AgentError> {
        let watch = Watch::new(self.meter.stop.fresh(), self.extensions.effects.deadline());
        match watch.run(self.start_once(run, sink)).await {
            Ok(started) => started?,
            Err(halt) => return Ok(self.halted(halt, String::new(), run, sink)),
        }
        if run.turn == 1 && self.extensions.first_plan {
            if let Err(halt) = watch.run(self.write_first_plan(user_text, sink)).await {
                return Ok(self.halted(halt, String::new(), run, sink));
            }
        }
        let started = match watch
            .run(self.at_point(Point::TurnStart { prompt: user_text }, run, sink))
            .await
        {
            Ok(applied) => applied?,
            Err(halt) => return Ok(self.halted(halt, String::new(), run, sink)),
        };
        if let Some(stop) = started.stop {
            // The prompt never joins the history (a hook refused it).
            return Ok(self.stopped(stop, String::new(), run, sink));
        }
        let mut first = self.user_message(user_text, sink);
        first.extend(started.items);
        self.append(first);
        let mut empty_retried = false;
        loop {
            let mut pending: Vec<HistoryItem> = Vec::new();
            for text in self.pending.drain() {
                pending.extend(self.user_message(&text, sink));
            }
            self.append(pending);
            self.append(std::mem::take(&mut run.queued));
            self.offer_found_tools();
            if std::mem::take(&mut self.history.tokens.stale) {
                self.history.tokens.context = self.estimate_context(sink);
            }
            let before = match watch
                .run(self.at_point(Point::BeforeModel, run, sink))
                .await
            {
                Ok(applied) => applied?,
                Err(halt) => return Ok(self.halted(halt, String::new(), run, sink)),
            };
            if let Some(stop) = before.stop {
                return Ok(self.stopped(stop, String::new(), run, sink));
            }
            self.append(before.items);
            run.iterations += 1;
            let parallel = self.ctx.model_family.supports_parallel_tool_calls
                && self.ctx.features.parallel_tools;
            // Calls that start while the response streams.
            let mut early = self.early_calls(parallel);
            let sampled = match watch.run(self.sample(run, &mut early, sink)).await {
                Ok(sampled) => sampled,
                Err(halt) => {
                    self.cancel_early(early, &halt.call_output(), run, sink);
                    return Ok(self.halted(halt, String::new(), run, sink));
                }
            };
            let response = match sampled {
                Ok(response) => response,
                Err(error) => {
                    self.cancel_early(early, RESPONSE_FAILED, run, sink);
                    let failed = match watch
                        .run(self.at_point(Point::ModelFailed { error: &error }, run, sink))
                        .await
                    {
                        Ok(applied) => applied?,
                        Err(halt) => return Ok(self.halted(halt, String::new(), run, sink)),
                    };
                    if let Some(stop) = failed.stop {
                        return Ok(self.stopped(stop, String::new(), run, sink));
                    }
                    if failed.edited {
                        // History changed for it (compaction): ask again.
                        run.iterations -= 1;
                        run.queued.extend(failed.items);
                        continue;
                    }
                    return Err(error.into());
                }
            };

            if let Some(name) = &response.incomplete_tool_call {
                // A call cut off mid-arguments is never run, and never enters
                // history, so every call in history keeps its output.
                self.cancel_early(early, RESPONSE_CUT_OFF, run, sink);
                self.append(response_items(&response));
                sink.emit(AgentEvent::Warning {
                    message: format!(
                        "the model's output hit its token limit in the middle of a call to `{name}`; the partial call was not run (raise max_tokens)"
                    ),
                });
                let text = response.reply.text.clone();
                return Ok(run.result(self, TurnOutcome::Truncated, text));
            }

            if response.reply.stop_reason == Some(StopReason::Paused)
                && response.reply.tool_calls.is_empty()
            {
                // The provider paused its own long turn (web searches):
                // the conversation as it now stands lets it go on.
                self.append(response_items(&response));
                continue;
            }
            let reply = &response.reply;
            if reply.tool_calls.is_empty() && reply.text.trim().is_empty() {
                // The retry is a request like any other: not past the limit.
                if !empty_retried && run.iterations < self.ctx.max_iterations {
                    empty_retried = true;
                    sink.emit(AgentEvent::Warning {
                        message: "the model returned an empty response; retrying once".into(),
                    });
                    continue;
                }
                return Ok(run.result(self, TurnOutcome::EmptyResponse, String::new()));
            }

            let after = match watch
                .run(self.at_point(Point::AfterModel { reply }, run, sink))
                .await
            {
                Ok(applied) => applied?,
                Err(halt) => {
                    let halt_text = reply.text.clone();
                    self.cancel_early(early, &halt.call_output(), run, sink);
                    self.append_answered(&response, &halt.call_output());
                    return Ok(self.halted(halt, halt_text, run, sink));
                }
            };
            run.queued.extend(after.items);
            if let Some(stop) = after.stop {
                self.cancel_early(early, &stop.call_output, run, sink);
                self.append_answered(&response, &stop.call_output);
                let text = response.reply.text.clone();
                return Ok(self.stopped(stop, text, run, sink));
            }

            // The model says it is done with the configured token: the
            // reply's calls still run, then the turn ends as if it had
            // answered without them.
            let done_said = self
                .ctx
                .done_token
                .as_deref()
                .is_some_and(|token| response.reply.text.contains(token));
            if response.reply.tool_calls.is_empty() {
                self.append(response_items(&response));
                let text = self.final_text(&response.reply.text);
                if response.reply.stop_reason == Some(StopReason::Length) {
                    sink.emit(AgentEvent::Warning {
                        message:
                            "the model's answer was cut off at its token limit (raise max_tokens)"
                                .into(),
                    });
                    return Ok(run.result(self, TurnOutcome::Truncated, text));
                }
                match self.finish(text, run, &watch, sink).await? {
                    Some(result) => return Ok(result),
                    None => continue,
                }
            }

            let (results, halt) = self
                .run_tools(
                    &response.reply.tool_calls,
                    parallel,
                    early,
                    run,
                    &watch,
                    sink,
                )
                .await?;
            // The reply and its outputs enter history together, so an
            // interrupted turn never leaves a call without its output.
            let mut items = response_items(&response);
            // Each call as it ran (an effect may have replaced its arguments).
            items.extend(
                response
                    .reply
                    .tool_calls
                    .iter()
                    .zip(&results)
                    .map(|(call, record)| {
                        HistoryItem::tool_call(ToolCall {
                            arguments: record.input.clone(),
                            ..call.clone()
                        })
                    }),
            );
            let takes_images = self.ctx.model_family.supports_images;
            items.extend(results.iter().map(|record| {
                let mut content = record.result.clone();
                let images = if takes_images {
                    record.images.clone()
                } else {
                    // An MCP tool's images, for a model that takes none.
                    for image in &record.images {
                        content.push_str(&format!(
                            "\n[image {} not shown: this model does not take images]",
                            image.describe()
                        ));
                    }
                    Vec::new()
                };
                HistoryItem::tool_output(cogni_protocol::ToolOutput {
                    call_id: record.id.clone(),
                    content,
                    is_error: record.is_error,
                    command: record.command,
                    images,
                })
            }));
            self.append(items);
            let text = self.final_text(&response.reply.text);
            match halt {
                Some(Ended::Halt(halt)) => {
                    run.records.extend(results);
                    return Ok(self.halted(halt, text, run, sink));
                }
                Some(Ended::Stop(stop)) => {
                    run.records.extend(results);
                    return Ok(self.stopped(stop, text, run, sink));
                }
                None => {}
            }
            if let Some(stop) = run.stop_after_calls.take() {
                run.records.extend(results);
                return Ok(self.stopped(stop, text, run, sink));
            }
            if self.extensions.effects.wants(Phase::StepEnd) {
                let step = Point::StepEnd {
                    reply: &response.reply,
                    calls: &results,
                };
                let ended = match watch.run(self.at_point(step, run, sink)).await {
                    Ok(applied) => applied?,
                    Err(halt) => {
                        run.records.extend(results);
                        return Ok(self.halted(halt, text, run, sink));
                    }
                };
                run.queued.extend(ended.items);
                if let Some(stop) = ended.stop {
                    run.records.extend(results);
                    return Ok(self.stopped(stop, text, run, sink));
                }
            }
            run.records.extend(results);
            if done_said {
                match self.finish(text, run, &watch, sink).await? {
                    Some(result) => return Ok(result),
                    None => continue,
                }
            }
            if run.iterations >= self.ctx.max_iterations {
                return Ok(self.limit_reached(text, run, sink));
            }
        }
    }

    /// The model is done for now: the `turn_end` effects decide whether
    /// the turn ends (`Some`) or goes on with what they added (`None`).
    async fn finish(
        &mut self,
        text: String,
        run: &mut TurnRun,
        watch: &Watch,
        sink: &dyn EventSink,
    ) -> Result<Option<TurnResult>, AgentError> {
        let end = match watch
            .run(self.at_point(Point::TurnEnd { text: &text }, run, sink))
            .await
        {
            Ok(applied) => applied?,
            Err(halt) => return Ok(Some(self.halted(halt, text, run, sink))),
        };
        self.append(end.notes);
        if let Some(stop) = end.stop {
            return Ok(Some(self.stopped(stop, text, run, sink)));
        }
        if end.items.is_empty() && run.queued.is_empty() {
            return Ok(Some(run.result(self, TurnOutcome::Done, text)));
        }
        // An effect keeps the turn going with something for the model.
        run.queued.extend(end.items);
        if run.iterations >= self.ctx.max_iterations {
            return Ok(Some(self.limit_reached(text, run, sink)));
        }
        Ok(None)
    }

    /// The answer as the user gets it: without the done token.
    fn final_text(&self, text: &str) -> String {
        match self.ctx.done_token.as_deref() {
            Some(token) if text.contains(token) => text.replace(token, "").trim().to_string(),
            _ => text.to_string(),
        }
    }

    fn limit_reached(&self, text: String, run: &TurnRun, sink: &dyn EventSink) -> TurnResult {
        sink.emit(AgentEvent::Warning {
            message: format!(
                "stopped: reached the limit of {} steps (raise --max-iterations or [agent] max_steps)",
                self.ctx.max_iterations
            ),
        });
        run.result(self, TurnOutcome::MaxSteps, text)
    }

    /// The reply enters history with every call answered by `output` (a
    /// stop or interrupt came before they ran).
    fn append_answered(&mut self, response: &ModelResponse, output: &str) {
        let mut items = response_items(response);
        for call in &response.reply.tool_calls {
            items.push(HistoryItem::tool_call(call.clone()));
        }
        for call in &response.reply.tool_calls {
            items.push(HistoryItem::tool_output(cogni_protocol::ToolOutput {
                call_id: call.id.clone(),
                content: output.to_string(),
                is_error: true,
                command: None,
                images: Vec::new(),
            }));
        }
        self.append(items);
    }

    /// Run the effects at `point` in registration order and apply what
    /// they decide: later effects see what earlier ones did.
    pub(crate) async fn at_point(
        &mut self,
        point: Point<'_>,
        run: &TurnRun,
        sink: &dyn EventSink,
    ) -> Result<Applied, AgentError> {
        let phase = point.phase();
        let mut applied = Applied::default();
        // The point's data as effects see it: arguments and results change
        // as effects replace them.
        let mut call_now: Option<ToolCall> = None;
        let mut result_now: Option<ToolResult> = None;
        for i in self.extensions.effects.at(phase) {
            let point = match point {
                Point::BeforeTool { call } => match &call_now {
                    Some(replaced) => Point::BeforeTool { call: replaced },
                    None => Point::BeforeTool { call },
                },
                Point::AfterTool { call, result } => Point::AfterTool {
                    call,
                    result: result_now.as_ref().unwrap_or(result),
                },
                other => other,
            };
            let started = Instant::now();
            let evaluated = {
                let spent = self.spent(run);
                let (effects, cx) = self.effect_context(point, run, spent, sink);
                effects.eval(i, &cx).await
            };
            let name = self.extensions.effects.name(i).to_string();
            let outcome = match evaluated {
                Ok(outcome) => outcome,
                Err(message) => {
                    tracing::warn!(%message, "effect failed");
                    let blocked = self.extensions.effects.failed(i, phase, &message);
                    sink.emit(AgentEvent::Warning { message });
                    match blocked {
                        Some(decision) => decision.into(),
                        None => continue,
                    }
                }
            };
            for usage in &outcome.usage {
                self.meter
                    .metrics
                    .record_model_request(usage, None, started.elapsed());
            }
            let decision = outcome.decision;
            if decision != Decision::Continue {
                sink.emit(AgentEvent::Effect {
                    name: name.clone(),
                    phase: phase.as_str().to_string(),
                    decision: describe(&decision),
                    duration_ms: started.elapsed().as_millis() as u64,
                });
            }
            let misplaced = |what: &str| {
                sink.emit(AgentEvent::Warning {
                    message: format!(
                        "effect `{name}` asked to {what} at {}, where that does not apply; ignored",
                        phase.as_str()
                    ),
                });
            };
            match decision {
                Decision::Continue => {}
                Decision::AddItems(items) => match phase {
                    Phase::BeforeCompact | Phase::SessionEnd => misplaced("add items"),
                    _ => applied.items.extend(items),
                },
                Decision::Note(items) => match phase {
                    Phase::BeforeCompact | Phase::SessionEnd => misplaced("add items"),
                    Phase::TurnEnd => applied.notes.extend(items),
                    _ => applied.items.extend(items),
                },
                Decision::ReplaceArgs(args) => match point {
                    Point::BeforeTool { call } => {
                        call_now = Some(ToolCall {
                            arguments: args.clone(),
                            ..call.clone()
                        });
                        applied.args = Some(args);
                    }
                    _ => misplaced("replace a call's arguments"),
                },
                Decision::Block(reason) => match phase {
                    Phase::BeforeTool => {
                        applied.block = Some(reason);
                        break;
                    }
                    _ => misplaced("block a call"),
                },
                Decision::ReplaceOutput(result) => match phase {
                    Phase::AfterTool => {
                        result_now = Some(result.clone());
                        applied.output = Some(result);
                    }
                    _ => misplaced("replace a call's output"),
                },
                Decision::Edit(edit) => match phase {
                    Phase::BeforeModel | Phase::AfterModel | Phase::TurnEnd => {
                        Box::pin(self.apply_edit(edit, run, sink)).await?;
                        applied.edited = true;
                    }
                    _ => misplaced("edit history"),
                },
                Decision::Stop(stop) => match phase {
                    Phase::BeforeCompact | Phase::SessionEnd | Phase::SessionStart => {
                        misplaced("stop the turn")
                    }
                    _ => {
                        applied.stop = Some(stop);
                        break;
                    }
                },
            }
        }
        Ok(applied)
    }

    /// Apply a context-stack operation an effect asked for.
    async fn apply_edit(
        &mut self,
        edit: HistoryEdit,
        run: &TurnRun,
        sink: &dyn EventSink,
    ) -> Result<(), AgentError> {
        match edit {
            HistoryEdit::Compact { overflow } => {
                if self.at_context_limit(overflow) == AtLimit::Handled {
                    // The strategy made room: history stays whole.
                    return Ok(());
                }
                if self.extensions.effects.wants(Phase::BeforeCompact) {
                    self.at_point(
                        Point::BeforeCompact {
                            overflow,
                            manual: false,
                        },
                        run,
                        sink,
                    )
                    .await?;
                }
                self.compact_history(sink, overflow).await?;
            }
            HistoryEdit::Pop(n) => {
                self.pop(n);
            }
        }
        Ok(())
    }

    /// What was spent so far this turn.
    fn spent(&self, run: &TurnRun) -> Spent {
        Spent {
            turn_usage: self.meter.metrics.turn_usage(),
            turn_cost: self.meter.metrics.turn_cost(),
            tool_calls: run.tool_calls,
            elapsed: run.started.elapsed(),
        }
    }

    /// The effects, and the context they see at `point` (disjoint borrows
    /// of the session).
    fn effect_context<'a>(
        &'a mut self,
        point: Point<'a>,
        run: &TurnRun,
        spent: Spent,
        sink: &'a dyn EventSink,
    ) -> (&'a mut super::effects::Effects, IterationContext<'a>) {
        let cx = IterationContext {
            point,
            turn: run.turn,
            iteration: run.iterations,
            agent: &self.agent,
            session_id: &self.id,
            cwd: &self.ctx.cwd,
            workspace: &self.toolset.shared.workspace,
            ctx: &self.ctx,
            history: &self.history,
            provider: &self.provider,
            spent,
            tokens: super::effects::Tokens {
                context: self.history.tokens.context,
                scale: self.history.tokens.scale,
            },
            sink,
            approver: &*self.conversation.approver,
            transcript_path: self.history.transcript_path(),
            notifications: &self.extensions.notifications,
        };
        (&mut self.extensions.effects, cx)
    }

    /// End the turn because it was stopped from outside: interrupted, or
    /// the time budget passed while something ran.
    pub(crate) fn halted(
        &self,
        halt: Halt,
        final_text: String,
        run: &TurnRun,
        sink: &dyn EventSink,
    ) -> TurnResult {
        match halt {
            Halt::Interrupted => {
                sink.emit(AgentEvent::Warning {
                    message: "interrupted: the turn was stopped".into(),
                });
                run.result(self, TurnOutcome::Interrupted, final_text)
            }
            Halt::Budget(limit) => self.stopped(Stop::budget(limit), final_text, run, sink),
        }
    }

    /// End the turn because an effect stopped it.
    pub(crate) fn stopped(
        &self,
        stop: Stop,
        final_text: String,
        run: &TurnRun,
        sink: &dyn EventSink,
    ) -> TurnResult {
        sink.emit(AgentEvent::Warning {
            message: stop.reason.clone(),
        });
        TurnResult {
            limit: stop.limit,
            reason: Some(stop.reason),
            ..run.result(self, stop.outcome, final_text)
        }
    }
}

/// What a call that started while its response streamed is answered with
/// when the response then fails.
const RESPONSE_FAILED: &str =
    "Cancelled: the model's response broke off before it was complete, so this call's result was dropped.";

/// The same, when the response was cut off at the model's token limit.
const RESPONSE_CUT_OFF: &str =
    "Cancelled: the model's response was cut off at its token limit, so its calls were not used.";

/// How a reply's tool calls ended early.
pub(crate) enum Ended {
    Halt(Halt),
    Stop(Stop),
}

/// A decision, for the `effect` event.
fn describe(decision: &Decision) -> String {
    match decision {
        Decision::Continue => "continue".into(),
        Decision::AddItems(items) => format!("add_items ({})", items.len()),
        Decision::Note(items) => format!("note ({})", items.len()),
        Decision::ReplaceArgs(_) => "replace_args".into(),
        Decision::Block(reason) => format!("block: {reason}"),
        Decision::ReplaceOutput(_) => "replace_output".into(),
        Decision::Edit(HistoryEdit::Compact { .. }) => "compact".into(),
        Decision::Edit(HistoryEdit::Pop(n)) => format!("pop {n}"),
        Decision::Stop(stop) => format!("stop: {}", stop.reason),
    }
}

/// A response's reasoning, web searches and text as history items (before
/// its calls).
fn response_items(response: &ModelResponse) -> Vec<HistoryItem> {
    let mut items: Vec<HistoryItem> = response
        .items
        .iter()
        .map(|content| HistoryItem {
            role: Role::Assistant,
            content: content.clone(),
        })
        .collect();
    if !response.reply.text.is_empty() {
        items.push(HistoryItem::text(Role::Assistant, &response.reply.text));
    }
    items
}
