//! The turn loop: user input in, model and tools until the model answers
//! without asking for tools (or a limit is hit), events out.
//!
//! Each iteration has three phases with clear seams for later features
//! (plans, reflection, middleware, cost limits):
//! [`Session::prepare_iteration`] (pending input, compaction),
//! [`Session::sample`] (one model request, streamed) and
//! [`Session::run_tools`] (every call gets exactly one output).

use super::approval;
use super::limits::{Halt, Limit, Watch};
use super::prompt::build_prompt;
use super::session::Session;
use crate::metrics::tokens;
use crate::protocol::{
    AgentEvent, Content, EventSink, HistoryItem, Item, Reasoning, Role, StopReason, ToolCall,
    ToolOutput, TurnOutcome, Usage,
};
use crate::provider::{ProviderError, ResponseEvent};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// The most the provider's token counts are taken to exceed the local
/// estimate (tokenizers differ by far less; a larger ratio means the
/// request carried more than the history, e.g. images).
const MAX_TOKEN_SCALE: f64 = 2.0;

/// Identical failing calls in a row before the model is told to change approach.
const REPEAT_LIMIT: u32 = 3;

const CHANGE_APPROACH: &str = "\n\n[cogni] This exact call has now failed 3 times in a row. Do not send it again: change the command or its arguments, or take a different approach. Repeating it ends the turn.";

/// One tool call of a turn, as reported back to the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    pub input: String,
    pub result: String,
    pub is_error: bool,
    pub exit_code: Option<i32>,
    pub duration: Duration,
}

/// What a turn returns.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub outcome: TurnOutcome,
    /// The last assistant text of the turn (may be empty).
    pub final_text: String,
    pub tool_calls: Vec<ToolCallRecord>,
    /// Model requests made in this turn.
    pub iterations: u32,
    pub usage: Usage,
    /// The budget that stopped the turn, for `BudgetExceeded`.
    pub limit: Option<Limit>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// One streamed model response, collected.
#[derive(Debug, Default)]
struct ModelResponse {
    text: String,
    reasoning: Vec<Reasoning>,
    tool_calls: Vec<ToolCall>,
    usage: Option<Usage>,
    stop_reason: Option<StopReason>,
    incomplete_tool_call: Option<String>,
}

impl Session {
    /// Run one turn for `user_text`. Provider failures end the turn with an
    /// error (after a `turn.failed` event); everything else ends with a
    /// [`TurnOutcome`].
    pub async fn run_turn(
        &mut self,
        user_text: &str,
        sink: &dyn EventSink,
    ) -> Result<TurnResult, AgentError> {
        self.turns += 1;
        let turn = self.turns;
        self.ctx.refresh_system_prompt_date();
        tracing::info!(session = %self.id, turn, model = %self.ctx.model, "turn started");
        self.metrics.start_turn();
        sink.emit(AgentEvent::TurnStarted { turn });
        self.append(vec![HistoryItem::text(Role::User, user_text)]);
        match self.turn_loop(turn, sink).await {
            Ok(result) => {
                tracing::info!(
                    session = %self.id,
                    turn,
                    outcome = ?result.outcome,
                    iterations = result.iterations,
                    input_tokens = result.usage.input_tokens,
                    output_tokens = result.usage.output_tokens,
                    "turn completed"
                );
                sink.emit(AgentEvent::Metrics {
                    snapshot: serde_json::to_value(self.metrics.snapshot()).unwrap_or_default(),
                });
                sink.emit(AgentEvent::TurnCompleted {
                    turn,
                    outcome: result.outcome.clone(),
                    final_text: result.final_text.clone(),
                    iterations: result.iterations,
                    usage: result.usage,
                    limit: result.limit,
                });
                Ok(result)
            }
            Err(err) => {
                tracing::warn!(session = %self.id, turn, error = %err, "turn failed");
                sink.emit(AgentEvent::Metrics {
                    snapshot: serde_json::to_value(self.metrics.snapshot()).unwrap_or_default(),
                });
                sink.emit(AgentEvent::TurnFailed {
                    turn,
                    error: err.to_string(),
                });
                Err(err)
            }
        }
    }

    async fn turn_loop(
        &mut self,
        turn: u32,
        sink: &dyn EventSink,
    ) -> Result<TurnResult, AgentError> {
        let mut records = Vec::new();
        let mut iterations = 0;
        let mut empty_retried = false;
        // The key of the last failing call and how many times in a row it failed.
        let mut failures: Option<(String, u32)> = None;
        let finish = |outcome, final_text: String, records, iterations, usage| TurnResult {
            outcome,
            final_text,
            tool_calls: records,
            iterations,
            usage,
            limit: None,
        };
        let watch = Watch::new(self.stop.fresh(), self.limits.max_duration);
        // Whether the last request overflowed the context window and history
        // was compacted for it: a second overflow in a row is an error.
        let mut overflow_compacted = false;
        loop {
            match watch.run(self.prepare_iteration(sink)).await {
                Ok(prepared) => prepared?,
                Err(halt) => {
                    return Ok(self.halted(halt, String::new(), records, iterations, sink))
                }
            }
            if let Some(limit) = self.budget_spent(iterations) {
                return Ok(self.halted(
                    Halt::Budget(limit),
                    String::new(),
                    records,
                    iterations,
                    sink,
                ));
            }
            iterations += 1;
            let sampled = match watch.run(self.sample(turn, iterations, sink)).await {
                Ok(sampled) => sampled,
                Err(halt) => {
                    return Ok(self.halted(halt, String::new(), records, iterations, sink))
                }
            };
            let response = match sampled {
                Ok(response) => {
                    overflow_compacted = false;
                    response
                }
                Err(ProviderError::ContextOverflow { .. }) if !overflow_compacted => {
                    overflow_compacted = true;
                    sink.emit(AgentEvent::Warning {
                        message: "the request did not fit the model's context window; compacting history and retrying once".into(),
                    });
                    self.compact_history(sink, true).await?;
                    iterations -= 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let usage = self.metrics.turn_usage();

            if let Some(name) = &response.incomplete_tool_call {
                // A call cut off mid-arguments is never run, and never enters
                // history, so every call in history keeps its output.
                self.push_response(&response);
                sink.emit(AgentEvent::Warning {
                    message: format!(
                        "the model's output hit its token limit in the middle of a call to `{name}`; the partial call was not run (raise max_tokens)"
                    ),
                });
                return Ok(finish(
                    TurnOutcome::Truncated,
                    response.text,
                    records,
                    iterations,
                    usage,
                ));
            }

            if response.tool_calls.is_empty() {
                if response.text.trim().is_empty() {
                    if !empty_retried {
                        empty_retried = true;
                        sink.emit(AgentEvent::Warning {
                            message: "the model returned an empty response; retrying once".into(),
                        });
                        continue;
                    }
                    return Ok(finish(
                        TurnOutcome::EmptyResponse,
                        String::new(),
                        records,
                        iterations,
                        usage,
                    ));
                }
                self.push_response(&response);
                let outcome = if response.stop_reason == Some(StopReason::Length) {
                    sink.emit(AgentEvent::Warning {
                        message:
                            "the model's answer was cut off at its token limit (raise max_tokens)"
                                .into(),
                    });
                    TurnOutcome::Truncated
                } else if let Err(problem) = self.check_output(&response.text) {
                    sink.emit(AgentEvent::Warning { message: problem });
                    TurnOutcome::InvalidOutput
                } else {
                    TurnOutcome::Done
                };
                return Ok(finish(outcome, response.text, records, iterations, usage));
            }

            let parallel = self.ctx.model_family.supports_parallel_tool_calls
                && self.ctx.features.parallel_tools;
            let blocked = failures
                .as_ref()
                .filter(|(_, n)| *n >= REPEAT_LIMIT)
                .map(|(key, _)| key.clone());
            // A response that used up the token or cost budget asks for
            // tools that must not run.
            let cap = match self.budget_spent(0) {
                Some(limit) => Some((0, limit)),
                None => self.limits.max_tool_calls.map(|max| {
                    (
                        (max as usize).saturating_sub(records.len()),
                        Limit::ToolCalls,
                    )
                }),
            };
            let (mut results, halt) = self
                .run_tools(
                    &response.tool_calls,
                    parallel,
                    blocked.as_deref(),
                    cap,
                    &watch,
                    sink,
                )
                .await;
            let repeated = self.track_failures(
                &response.tool_calls,
                &mut results,
                &mut failures,
                blocked.as_deref(),
                sink,
            );
            // The response and its outputs enter history together, so an
            // interrupted turn never leaves a call without its output.
            let mut items = response_items(&response);
            items.extend(
                response
                    .tool_calls
                    .iter()
                    .map(|call| HistoryItem::tool_call(call.clone())),
            );
            items.extend(results.iter().map(|record| {
                HistoryItem::tool_output(ToolOutput {
                    call_id: record.id.clone(),
                    content: record.result.clone(),
                    is_error: record.is_error,
                })
            }));
            self.append(items);
            records.extend(results);

            if let Some(halt) = halt {
                return Ok(self.halted(halt, response.text, records, iterations, sink));
            }

            if repeated {
                let usage = self.metrics.turn_usage();
                sink.emit(AgentEvent::Warning {
                    message: format!(
                        "stopped: the model repeated a call that had failed {REPEAT_LIMIT} times in a row"
                    ),
                });
                return Ok(finish(
                    TurnOutcome::RepeatedFailure,
                    response.text,
                    records,
                    iterations,
                    usage,
                ));
            }

            if iterations >= self.ctx.max_iterations {
                let usage = self.metrics.turn_usage();
                sink.emit(AgentEvent::Warning {
                    message: format!(
                        "stopped: reached the limit of {} tool iterations (raise --max-iterations)",
                        self.ctx.max_iterations
                    ),
                });
                return Ok(finish(
                    TurnOutcome::LimitReached,
                    response.text,
                    records,
                    iterations,
                    usage,
                ));
            }
        }
    }

    /// The repeated-failure rule: after [`REPEAT_LIMIT`] identical failing
    /// calls in a row the model is told to change approach (in that call's
    /// output); if it sends the same call again, that call is not run and
    /// the turn ends. Returns true when a blocked call was refused.
    fn track_failures(
        &self,
        calls: &[ToolCall],
        results: &mut [ToolCallRecord],
        failures: &mut Option<(String, u32)>,
        blocked: Option<&str>,
        sink: &dyn EventSink,
    ) -> bool {
        let mut refused = false;
        for (call, record) in calls.iter().zip(results.iter_mut()) {
            let key = approval::call_key(call);
            if blocked == Some(key.as_str()) {
                refused = true;
                continue;
            }
            if !record.is_error {
                *failures = None;
                continue;
            }
            let count = match failures {
                Some((last, n)) if *last == key => *n + 1,
                _ => 1,
            };
            *failures = Some((key, count));
            if count == REPEAT_LIMIT {
                record.result.push_str(CHANGE_APPROACH);
                sink.emit(AgentEvent::Warning {
                    message: format!(
                        "`{}` failed {REPEAT_LIMIT} times in a row with the same arguments; the model was told to change approach",
                        call.name
                    ),
                });
            }
        }
        refused
    }

    /// The budget already used up, if any: steps (model requests so far,
    /// when `iterations` is given), tokens and cost of this turn.
    fn budget_spent(&self, iterations: u32) -> Option<Limit> {
        let limits = &self.limits;
        let usage = self.metrics.turn_usage();
        if limits.max_steps.is_some_and(|max| iterations >= max) {
            Some(Limit::Steps)
        } else if limits.max_tokens.is_some_and(|max| usage.total() >= max) {
            Some(Limit::Tokens)
        } else if let (Some(max), Some(cost)) = (limits.max_cost_usd, self.metrics.turn_cost()) {
            (cost >= max).then_some(Limit::Cost)
        } else {
            None
        }
    }

    /// End the turn because it was stopped: interrupted, or a budget ran out.
    fn halted(
        &self,
        halt: Halt,
        final_text: String,
        records: Vec<ToolCallRecord>,
        iterations: u32,
        sink: &dyn EventSink,
    ) -> TurnResult {
        let (outcome, limit, message) = match halt {
            Halt::Interrupted => (
                TurnOutcome::Interrupted,
                None,
                "interrupted: the turn was stopped".to_string(),
            ),
            Halt::Budget(limit) => (
                TurnOutcome::BudgetExceeded,
                Some(limit),
                format!("stopped: the turn's {} is used up", limit.describe()),
            ),
        };
        sink.emit(AgentEvent::Warning { message });
        TurnResult {
            outcome,
            final_text,
            tool_calls: records,
            iterations,
            usage: self.metrics.turn_usage(),
            limit,
        }
    }

    /// The final answer against `--output-schema`, when one is set.
    fn check_output(&self, text: &str) -> Result<(), String> {
        match &self.output_schema {
            Some(schema) => schema.check(text),
            None => Ok(()),
        }
    }

    /// The server reported the model's context window: use it for the
    /// compaction limit unless the config set an explicit one.
    fn learn_context_window(&mut self, context_window: u64) {
        self.ctx.model_family.context_window = context_window;
        if let Some(fraction) = self.compaction_fraction {
            self.ctx.compaction_limit = (context_window as f64 * fraction) as u64;
        }
    }

    /// The response's reasoning and text enter history (before its calls).
    fn push_response(&mut self, response: &ModelResponse) {
        self.append(response_items(response));
    }

    /// Before each model request: queued user input joins the history, and
    /// history is compacted when over the limit. Compaction brings it under
    /// the limit or fails (what must stay does not fit), which ends the
    /// turn.
    async fn prepare_iteration(&mut self, sink: &dyn EventSink) -> Result<(), ProviderError> {
        let pending = self.pending.drain();
        self.append(
            pending
                .into_iter()
                .map(|text| HistoryItem::text(Role::User, text))
                .collect(),
        );
        if std::mem::take(&mut self.tokens_stale) {
            self.context_tokens = tokens::estimate_items(self.history.clone()).await;
        }
        if self.context_tokens > self.ctx.compaction_limit {
            self.compact_history(sink, false).await?;
        }
        Ok(())
    }

    /// One model request, streamed: text deltas become item events, the
    /// response is collected, usage and timings recorded.
    async fn sample(
        &mut self,
        turn: u32,
        iteration: u32,
        sink: &dyn EventSink,
    ) -> Result<ModelResponse, ProviderError> {
        let started = Instant::now();
        let mut stream = {
            let prompt = build_prompt(&self.ctx, &self.history);
            sink.emit(AgentEvent::ModelRequest {
                iteration,
                prompt: self.ctx.verbose.then(|| prompt.to_json()),
            });
            self.provider.stream(&prompt.request(&self.ctx))
        };
        let mut message_id = format!("msg_{turn}_{iteration}");
        let mut response = ModelResponse::default();
        let mut first_token: Option<Duration> = None;
        let mut completed = false;
        while let Some(event) = stream.next().await {
            match event? {
                ResponseEvent::TextDelta(delta) => {
                    first_token.get_or_insert_with(|| started.elapsed());
                    if response.text.is_empty() {
                        sink.emit(AgentEvent::ItemStarted {
                            item: Item::AgentMessage {
                                id: message_id.clone(),
                                text: String::new(),
                            },
                        });
                    }
                    response.text.push_str(&delta);
                    sink.emit(AgentEvent::ItemUpdated {
                        id: message_id.clone(),
                        delta,
                    });
                }
                ResponseEvent::ToolCallStarted { .. } => {
                    first_token.get_or_insert_with(|| started.elapsed());
                }
                ResponseEvent::ToolCall(call) => response.tool_calls.push(call),
                ResponseEvent::Reasoning(r) => response.reasoning.push(r),
                ResponseEvent::ModelInfo { context_window } => {
                    self.learn_context_window(context_window);
                }
                ResponseEvent::Retrying {
                    attempt,
                    delay,
                    reason,
                } => {
                    self.metrics.record_retry();
                    tracing::warn!(attempt, ?delay, %reason, "model request will be retried");
                    // The failed attempt's output is void: the retry starts
                    // the response over, so nothing is kept twice.
                    if !response.text.is_empty() {
                        sink.emit(AgentEvent::ItemDiscarded {
                            id: message_id.clone(),
                            reason: reason.clone(),
                        });
                    }
                    response = ModelResponse::default();
                    message_id = format!("msg_{turn}_{iteration}_retry{attempt}");
                    sink.emit(AgentEvent::Retry {
                        attempt,
                        delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        reason,
                    });
                }
                ResponseEvent::Completed {
                    usage,
                    stop_reason,
                    incomplete_tool_call,
                } => {
                    response.usage = usage;
                    response.stop_reason = Some(stop_reason);
                    response.incomplete_tool_call = incomplete_tool_call;
                    completed = true;
                    break;
                }
            }
        }
        drop(stream);
        if !completed {
            return Err(ProviderError::Stream {
                provider: self.provider.id().to_string(),
                model: self.ctx.model.clone(),
                message: "the response stream ended before the response was complete".into(),
            });
        }
        if !response.text.is_empty() {
            sink.emit(AgentEvent::ItemCompleted {
                item: Item::AgentMessage {
                    id: message_id,
                    text: response.text.clone(),
                },
            });
        }
        let usage = match response.usage {
            Some(u) => u,
            None => self.estimate_usage(&response).await,
        };
        self.context_tokens = usage.input_tokens + usage.output_tokens;
        if let Some(estimate) = self.compacted_estimate.take() {
            // The first request after a compaction: how the provider counts
            // compared with the local estimate, for the next compaction.
            if !usage.estimated && estimate > 0 {
                let ratio = usage.input_tokens as f64 / estimate as f64;
                self.token_scale = (self.token_scale * ratio).clamp(1.0, MAX_TOKEN_SCALE);
            }
        }
        let took = started.elapsed();
        tracing::debug!(
            iteration,
            ?took,
            ?first_token,
            tool_calls = response.tool_calls.len(),
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            estimated = usage.estimated,
            "model response"
        );
        self.metrics.record_model_request(&usage, first_token, took);
        sink.emit(AgentEvent::ModelResponse {
            iteration,
            usage: Some(usage),
            stop_reason: response.stop_reason.clone().unwrap_or(StopReason::Stop),
            time_to_first_token_ms: first_token.map(|d| d.as_millis() as u64),
            duration_ms: took.as_millis() as u64,
        });
        Ok(response)
    }

    /// Usage for a provider that reported none: the request and the
    /// response counted locally with the tokenizer.
    async fn estimate_usage(&self, response: &ModelResponse) -> Usage {
        let prompt = build_prompt(&self.ctx, &self.history);
        let mut input = vec![prompt.instructions.to_string()];
        input.push(serde_json::to_string(prompt.tools).unwrap_or_default());
        let items = self.history.clone();
        let mut output = vec![response.text.clone()];
        output.extend(
            response
                .tool_calls
                .iter()
                .map(|c| format!("{}{}", c.name, c.arguments)),
        );
        let input_tokens = tokens::estimate(input).await + tokens::estimate_items(items).await;
        Usage {
            input_tokens,
            output_tokens: tokens::estimate(output).await,
            estimated: true,
            ..Usage::default()
        }
    }
}

/// A response's reasoning and text as history items (before its calls).
fn response_items(response: &ModelResponse) -> Vec<HistoryItem> {
    let mut items: Vec<HistoryItem> = response
        .reasoning
        .iter()
        .map(|r| HistoryItem {
            role: Role::Assistant,
            content: Content::Reasoning(r.clone()),
        })
        .collect();
    if !response.text.is_empty() {
        items.push(HistoryItem::text(Role::Assistant, &response.text));
    }
    items
}
