//! One model request: which items of history it sends (the session's
//! context strategy, [`super::context_strategy`]), the stream collected into a
//! response, usage recorded, and the local token estimate calibrated
//! against what the provider counted.

use super::context_strategy::{note, AtLimit, Conversation, View};
use super::early::EarlyCalls;
use super::effects::reflect::place_front;
use super::effects::Reply;
use super::prompt::build_prompt;
use super::session::Session;
use super::turn::TurnRun;
use super::turn_context::TurnContext;
use cogni_metrics::tokens::Estimator;
use cogni_protocol::{AgentEvent, Content, EventSink, HistoryItem, Item, Role, StopReason, Usage};
use cogni_provider::{ModelRequest, Provider, ProviderError, ResponseEvent};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// Calibration stays within these factors of the raw estimate.
const CALIBRATION_RANGE: (f64, f64) = (0.25, 8.0);

/// After a request that did not fit, estimates grow by this factor.
const OVERFLOW_CALIBRATION: f64 = 1.25;

/// One streamed model response, collected.
#[derive(Debug, Default)]
pub(crate) struct ModelResponse {
    pub(crate) reply: Reply,
    /// Reasoning and the provider's own web searches, in stream order
    /// (history keeps them before the text and calls).
    pub(crate) items: Vec<Content>,
    pub(crate) incomplete_tool_call: Option<String>,
    /// The provider reported usage (not an estimate).
    reported: bool,
}

/// The text of one response as message items: one item, or, when a call
/// starts while the response still streams, one for the text before it
/// and another for text after it.
struct Message {
    /// The first item's id; later ones add a number.
    base: String,
    /// Items started so far.
    items: u32,
    /// The open item's text.
    text: String,
    open: bool,
}

impl Message {
    fn new(base: String) -> Self {
        Message {
            base,
            items: 0,
            text: String::new(),
            open: false,
        }
    }

    /// The current item's id.
    fn id(&self) -> String {
        match self.items {
            0 | 1 => self.base.clone(),
            n => format!("{}_{n}", self.base),
        }
    }

    fn push(&mut self, delta: String, sink: &dyn EventSink) {
        if !self.open {
            self.open = true;
            self.items += 1;
            sink.emit(AgentEvent::ItemStarted {
                item: Item::AgentMessage {
                    id: self.id(),
                    text: String::new(),
                },
            });
        }
        self.text.push_str(&delta);
        sink.emit(AgentEvent::ItemUpdated {
            id: self.id(),
            delta,
        });
    }

    /// Complete the open item.
    fn close(&mut self, sink: &dyn EventSink) {
        if std::mem::take(&mut self.open) {
            sink.emit(AgentEvent::ItemCompleted {
                item: Item::AgentMessage {
                    id: self.id(),
                    text: std::mem::take(&mut self.text),
                },
            });
        }
    }

    /// The response starts over (a retry) with items under `base`: what
    /// was shown is discarded.
    fn restart(&mut self, base: String, reason: &str, sink: &dyn EventSink) {
        for n in 1..=self.items {
            self.items = n;
            sink.emit(AgentEvent::ItemDiscarded {
                id: self.id(),
                reason: reason.to_string(),
            });
        }
        *self = Message::new(base);
    }
}

/// Why `model` cannot be sent images, and what to do.
pub(crate) fn no_images(model: &str) -> String {
    format!(
        "model `{model}` does not take images (the model catalog says so): switch to one that \
         does (/model, --model), or if it does, set `supports_images = true` in \
         [model_families.\"{model}\"]"
    )
}

impl Session {
    /// One model request, streamed: text deltas become item events, the
    /// response is collected, usage and timings recorded. Calls that
    /// qualify start as soon as they are complete in the stream
    /// ([`super::early`]); `early` holds them for dispatch.
    pub(crate) async fn sample(
        &mut self,
        run: &mut TurnRun,
        early: &mut EarlyCalls,
        sink: &dyn EventSink,
    ) -> Result<ModelResponse, ProviderError> {
        let (turn, iteration) = (run.turn, run.iterations);
        let started = Instant::now();
        let view = self.request_view(sink);
        let mut stream = {
            let mut items = view.items(&self.history);
            if self.ctx.reflection_front {
                if let Some(moved) = place_front(&self.history, &items, view.initial()) {
                    items = moved.into();
                }
            }
            if !self.ctx.model_family.supports_images && cogni_provider::has_images(&items) {
                return Err(ProviderError::Other {
                    provider: self.provider.id().to_string(),
                    message: no_images(&self.ctx.model),
                });
            }
            let prompt = build_prompt(&self.ctx, &items);
            sink.emit(AgentEvent::ModelRequest {
                iteration,
                prompt: self
                    .ctx
                    .verbose
                    .then(|| prompt.to_json(self.ctx.model_family.tool_call_mode)),
            });
            self.provider.stream(&prompt.request(&self.ctx))
        };
        let mut message = Message::new(format!("msg_{turn}_{iteration}"));
        let mut response = ModelResponse::default();
        let mut first_token: Option<Duration> = None;
        let mut completed = false;
        while let Some(event) = stream.next().await {
            match event? {
                ResponseEvent::TextDelta(delta) => {
                    first_token.get_or_insert_with(|| started.elapsed());
                    response.reply.text.push_str(&delta);
                    message.push(delta, sink);
                }
                ResponseEvent::ToolCallStarted { .. } => {
                    first_token.get_or_insert_with(|| started.elapsed());
                }
                ResponseEvent::ToolCall(call) => {
                    self.offer_early(early, &call, run, sink, &mut || message.close(sink))
                        .await;
                    response.reply.tool_calls.push(call);
                }
                ResponseEvent::Reasoning(r) => {
                    if !r.text.is_empty() {
                        sink.emit(AgentEvent::Reasoning {
                            text: r.text.clone(),
                        });
                    }
                    response.items.push(Content::Reasoning(r));
                }
                ResponseEvent::WebSearch(search) => {
                    first_token.get_or_insert_with(|| started.elapsed());
                    sink.emit(AgentEvent::WebSearch {
                        id: search.id.clone(),
                        query: search.query.clone(),
                        results: search.results.clone(),
                        error: search.error.clone(),
                    });
                    response.items.push(Content::WebSearch(search));
                }
                ResponseEvent::Citation(citation) => {
                    sink.emit(AgentEvent::Citation { citation });
                }
                ResponseEvent::ModelInfo { context_window } => {
                    // The server says how large the window is: compaction
                    // limits follow it.
                    self.ctx.model_family.context_window = context_window;
                }
                ResponseEvent::Retrying {
                    attempt,
                    delay,
                    reason,
                } => {
                    self.meter.metrics.record_retry();
                    tracing::warn!(attempt, ?delay, %reason, "model request will be retried");
                    // The failed attempt's output is void: the retry starts
                    // the response over, so nothing is kept twice (calls
                    // that started wait for the new attempt to adopt them).
                    message.restart(
                        format!("msg_{turn}_{iteration}_retry{attempt}"),
                        &reason,
                        sink,
                    );
                    early.restart(&reason, sink);
                    response = ModelResponse::default();
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
                    if let Some(usage) = usage {
                        response.reply.usage = usage;
                        response.reported = true;
                    }
                    response.reply.stop_reason = Some(stop_reason);
                    response.incomplete_tool_call = incomplete_tool_call;
                    early.drop_parked(run);
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
        message.close(sink);
        // A view its strategy did not estimate (summarize's) is counted
        // only when the provider counted nothing: for OpenAI models that
        // would load the tokenizer.
        let sent = if view.estimate().is_some() || !response.reported {
            self.fixed_tokens() + self.estimate_view(&view)
        } else {
            0
        };
        if !response.reported {
            response.reply.usage = self.estimate_usage(&response, sent);
        }
        let usage = response.reply.usage;
        self.history.tokens.context = usage.input_tokens + usage.output_tokens;
        self.calibrate_tokens(&usage);
        if !usage.estimated && sent > 0 {
            let ratio = usage.input_tokens as f64 / sent as f64;
            self.history.tokens.calibration = ratio.clamp(CALIBRATION_RANGE.0, CALIBRATION_RANGE.1);
        }
        let took = started.elapsed();
        tracing::debug!(
            iteration,
            ?took,
            ?first_token,
            tool_calls = response.reply.tool_calls.len(),
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            estimated = usage.estimated,
            "model response"
        );
        self.meter
            .metrics
            .record_model_request(&usage, first_token, took);
        sink.emit(AgentEvent::ModelResponse {
            iteration,
            usage: Some(usage),
            stop_reason: response
                .reply
                .stop_reason
                .clone()
                .unwrap_or(StopReason::Stop),
            time_to_first_token_ms: first_token.map(|d| d.as_millis() as u64),
            duration_ms: took.as_millis() as u64,
        });
        Ok(response)
    }

    /// Usage for a provider that reported none: the request as estimated
    /// (`sent`) and the response counted with the model's estimator.
    fn estimate_usage(&self, response: &ModelResponse, sent: u64) -> Usage {
        let estimator = self.ctx.estimator();
        let output = estimator.count(&response.reply.text)
            + response
                .reply
                .tool_calls
                .iter()
                .map(|c| estimator.count(&c.name) + estimator.count(&c.arguments))
                .sum::<u64>();
        Usage {
            input_tokens: sent,
            output_tokens: output,
            estimated: true,
            ..Usage::default()
        }
    }

    /// Which items of history the next request sends, by the session's
    /// context strategy. A view that leaves out other items than the one
    /// before (the window moved) is reported as a `context_window` event.
    pub(crate) fn request_view(&mut self, sink: &dyn EventSink) -> View {
        self.history.set_estimator(self.ctx.estimator());
        let configured = self.ctx.strategy();
        let limit = (self.compaction_limit() as f64 / self.history.tokens.calibration) as u64;
        let (view, before) = {
            let (ctx, fixed) = (&self.ctx, &mut self.extensions.fixed_tokens);
            // Counted only when the strategy asks: summarize never does.
            let mut budget = || limit.saturating_sub(fixed_tokens(ctx, fixed));
            let (initial, generation) = (self.history.initial_len(), self.history.generation());
            let estimator = self.history.estimator();
            let (items, mut size) = self.history.sized();
            let mut conversation = Conversation::new(
                items,
                initial,
                generation,
                estimator,
                &mut size,
                &mut budget,
            );
            self.extensions.context.view(configured, &mut conversation)
        };
        if view.dropped() != before && view.dropped() > 0 {
            let estimate = self.estimate_view(&view);
            sink.emit(AgentEvent::ContextWindow {
                dropped_items: view.dropped(),
                kept_items: self.history.len() - view.dropped(),
                estimated_tokens: (estimate as f64 * self.history.tokens.calibration) as u64,
            });
        }
        view
    }

    /// Estimated tokens of the items `view` sends: its strategy's
    /// estimate, else each item's (counted once) and the note's.
    fn estimate_view(&mut self, view: &View) -> u64 {
        if let Some(estimate) = view.estimate() {
            return estimate;
        }
        let note = match view.dropped() {
            0 => 0,
            dropped => self.history.estimator().count_item(&note(dropped)),
        };
        let (items, mut size) = self.history.sized();
        let sent = (0..view.initial()).chain(view.start()..items.len());
        note + sent.map(&mut size).sum::<u64>()
    }

    /// Estimated tokens of what every request sends besides history: the
    /// instructions and the tools (counted again only when they change).
    pub(crate) fn fixed_tokens(&mut self) -> u64 {
        fixed_tokens(&self.ctx, &mut self.extensions.fixed_tokens)
    }

    /// The conversation passed the compaction limit, or (`overflow`) the
    /// last request did not fit: the context strategy makes room (and
    /// estimates are raised after an overflow), or history is to be
    /// summarized.
    pub(crate) fn at_context_limit(&mut self, overflow: bool) -> AtLimit {
        let at = self
            .extensions
            .context
            .current(self.ctx.strategy())
            .at_limit(overflow);
        if overflow && at == AtLimit::Handled {
            let c = &mut self.history.tokens.calibration;
            *c = (*c * OVERFLOW_CALIBRATION).min(CALIBRATION_RANGE.1);
        }
        at
    }

    /// The conversation's size as the next request would send it, estimated
    /// and calibrated (history changed without a request).
    pub(crate) fn estimate_context(&mut self, sink: &dyn EventSink) -> u64 {
        let view = self.request_view(sink);
        let items = self.estimate_view(&view);
        ((self.fixed_tokens() + items) as f64 * self.history.tokens.calibration) as u64
    }

    /// How the context window is used, for `/context` and `/status`.
    pub fn context_usage(&mut self) -> ContextUsage {
        let (used, estimated) = if self.history.tokens.context > 0 && !self.history.tokens.stale {
            (self.history.tokens.context, false)
        } else {
            (self.estimate_context(&|_: AgentEvent| {}), true)
        };
        ContextUsage {
            strategy: self
                .extensions
                .context
                .current(self.ctx.strategy())
                .name()
                .to_string(),
            window: self.ctx.model_family.context_window,
            limit: self.compaction_limit(),
            used,
            estimated,
            dropped: self.extensions.context.dropped(),
        }
    }
}

/// Estimated tokens of `ctx`'s instructions and tools, counted again only
/// when they change (`cache` holds the last count and what it counted).
fn fixed_tokens(ctx: &TurnContext, cache: &mut Option<((usize, usize, Estimator), u64)>) -> u64 {
    let estimator = ctx.estimator();
    let key = (ctx.system_prompt.text().len(), ctx.tools.len(), estimator);
    match cache {
        Some((k, n)) if *k == key => *n,
        _ => {
            let tools = serde_json::to_string(&ctx.tools).unwrap_or_default();
            let n = estimator.count(ctx.system_prompt.text()) + estimator.count(&tools);
            *cache = Some((key, n));
            n
        }
    }
}

/// How a session uses the model's context window.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextUsage {
    /// The name of the context strategy in force.
    pub strategy: String,
    /// The model's window in tokens.
    pub window: u64,
    /// Where the strategy acts (the compaction limit).
    pub limit: u64,
    /// Tokens of the last request and its answer as the provider counted
    /// them, or the next request's calibrated estimate (`estimated`).
    pub used: u64,
    /// `used` is the local estimate (calibrated against what the provider
    /// counted), not the provider's count: no request yet, or history
    /// changed since the last one.
    pub estimated: bool,
    /// Items the last request's view left out.
    pub dropped: usize,
}

impl std::fmt::Display for ContextUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} tokens ({:.0}%{}) · strategy {} (acts at {} tokens)",
            self.used,
            self.window,
            self.used as f64 * 100.0 / self.window.max(1) as f64,
            if self.estimated { ", estimated" } else { "" },
            self.strategy,
            self.limit,
        )?;
        if self.dropped > 0 {
            write!(f, " · {} earlier items left out of requests", self.dropped)?;
        }
        Ok(())
    }
}
/// Send `input` with `question` appended as a user message, with the
/// request's instructions and tools (so the cached prefix is reused); the
/// answer's text, usage and stop reason. Tool calls in the answer are
/// ignored.
pub(crate) async fn ask(
    provider: &dyn Provider,
    request: &ModelRequest<'_>,
    input: Vec<HistoryItem>,
    question: &str,
) -> Result<(String, Option<Usage>, StopReason), ProviderError> {
    ask_streaming(provider, request, input, question, &mut |_| {}).await
}

/// [`ask`], with each piece of the answer's text passed to `on_delta` as
/// it arrives (a retried attempt's pieces are passed again).
pub(crate) async fn ask_streaming(
    provider: &dyn Provider,
    request: &ModelRequest<'_>,
    mut input: Vec<HistoryItem>,
    question: &str,
    on_delta: &mut (dyn FnMut(&str) + Send),
) -> Result<(String, Option<Usage>, StopReason), ProviderError> {
    input.push(HistoryItem::text(Role::User, question));
    let request = ModelRequest {
        input: &input,
        output_schema: None,
        ..request.clone()
    };
    let mut stream = provider.stream(&request);
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event? {
            ResponseEvent::TextDelta(d) => {
                on_delta(&d);
                text.push_str(&d);
            }
            // The retried attempt starts the answer over.
            ResponseEvent::Retrying { .. } => text.clear(),
            ResponseEvent::Completed {
                stop_reason, usage, ..
            } => return Ok((text, usage, stop_reason)),
            // Tool calls, reasoning and model info are not the answer.
            _ => {}
        }
    }
    Err(ProviderError::Stream {
        provider: provider.id().to_string(),
        model: request.model.to_string(),
        message: "the answer's stream ended before completion".into(),
    })
}
