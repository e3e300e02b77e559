//! History compaction: when the conversation outgrows its token limit, or
//! the model said a request overflowed its context window, a model-written
//! summary replaces what the model no longer needs verbatim.
//!
//! [`compact`] is the whole operation as a function of the history, a model
//! client and limits ([`Compaction`]), so that a plug-in point can call it;
//! [`Session::compact`] wraps it with events, metrics and the history seam.
//!
//! # The summary request
//!
//! It is the session's own request (same instructions, tools and sampling)
//! with the history as it is and [`SUMMARY_REQUEST`] appended as a user
//! message, so the provider's cache of the session's prefix is reused and
//! the request passes the same validation as every other (Anthropic
//! rejects `tool_use` blocks in a request without `tools`). Tool calls in
//! the answer are ignored; the output schema is not sent (a summary is not
//! the final answer). Before it is sent it is made to fit
//! [`CompactionLimits::request_budget`]: the oldest tool outputs are cut to
//! a few lines first, then the oldest items are left out, a call always
//! together with its output. After a context overflow both budgets leave
//! at most half of the history that overflowed, so the summary request
//! does not overflow in turn; if the model still says it is too large, it
//! is sent once more with half the budget. Without a summary, compaction
//! goes on with a note saying so.
//!
//! # The compacted history
//!
//! Kept: developer and user instructions; a fresh environment block (which
//! carries everything the latest block or diff said); the summary; the
//! latest user request; every call that may have changed state (anything
//! but read-only tools and known-safe shell commands) with its arguments
//! and its output cut to head and tail; and the reasoning that opened a
//! kept call since the latest request (with extended thinking, Anthropic
//! requires the last assistant turn of a tool loop to start with its
//! thinking block). Dropped: assistant chatter, read-only calls, earlier
//! summaries (the new one covers them). While the result takes more than
//! half of the room the instructions and tools leave under
//! [`CompactionLimits::hard`], the oldest kept responses (reasoning, calls
//! and outputs) go too. When even what must stay does not fit under `hard`,
//! compaction fails with [`DoesNotFit`], which ends the turn.
//!
//! Sizes are local tokenizer estimates, multiplied by
//! [`CompactionLimits::token_scale`] (what the provider counted over what
//! was estimated, learnt from the request after a compaction).

use super::approval;
use super::history::initial_len;
use super::prompt::build_prompt;
use super::session::Session;
use cogni_metrics::tokens;
use cogni_process::truncate::{head_tail, Limits};
use cogni_protocol::{
    AgentEvent, Content, EventSink, HistoryItem, MessageTag, Role, StopReason, ToolCall, Usage,
};
use cogni_provider::{ModelRequest, Provider, ProviderError};
use cogni_tools::skills::SKILL_TOOL;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::Instant;

/// The user message that asks for the summary, after the history.
pub const SUMMARY_REQUEST: &str = "[cogni] This conversation is about to be compacted: everything above will be replaced by the summary you write now. Write it for the agent that will continue the work: the user's goal, what was done (files changed, commands run and their results), what was learned (relevant file paths, functions, errors), and what remains to do. Answer with the summary as plain text only, no preamble; do not call tools.";

/// What is kept of the output of a state-changing call.
const KEPT_OUTPUT: Limits = Limits {
    max_bytes: 2048,
    max_lines: 40,
};

/// What is left of an old tool output cut to make the summary request fit.
const TRIMMED_OUTPUT: Limits = Limits {
    max_bytes: 512,
    max_lines: 10,
};

/// How large requests around a compaction may be, in tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionLimits {
    /// Most tokens the summary request may carry (instructions and tools
    /// included), leaving room for the summary in the context window.
    pub request_budget: u64,
    /// Most tokens a request with the compacted history may carry.
    pub hard: u64,
    /// The request before compaction overflowed the context window: both
    /// budgets leave at most half of its history.
    pub after_overflow: bool,
    /// Estimates are multiplied by this (at least 1).
    pub token_scale: f64,
}

/// Everything [`compact`] needs besides the history and the model client.
pub struct Compaction<'a> {
    /// The request the session would send now (model, instructions, tools,
    /// sampling, and the history as it is sent): the summary request is
    /// this one with [`SUMMARY_REQUEST`] appended.
    pub request: ModelRequest<'a>,
    /// How large the summary request and the compacted history may be.
    pub limits: CompactionLimits,
    /// Whether a call only reads (it is dropped; the summary describes it).
    pub only_reads: &'a (dyn Fn(&ToolCall) -> bool + Sync),
    /// The environment block the compacted history starts with.
    pub environment: String,
}

/// The outcome of [`compact`].
#[derive(Debug)]
pub struct Compacted {
    /// The history that replaces the old one: instructions, a fresh
    /// environment block, the summary, the latest request and the calls
    /// that may have changed state.
    pub history: Vec<HistoryItem>,
    /// Estimated tokens of a request with the compacted history
    /// (instructions and tools included).
    pub tokens: u64,
    /// Usage of the summary request, when the provider reported it.
    pub usage: Option<Usage>,
    /// Why the history holds no summary, when it holds none.
    pub missing_summary: Option<String>,
}

/// What must stay after compaction does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("compaction cannot bring the history under {limit} tokens: the instructions, tools, environment, summary and latest request alone take about {needed}")]
pub struct DoesNotFit {
    /// Estimated tokens of a request with only what must stay
    /// (instructions and tools included), scaled like every estimate of
    /// the compaction.
    pub needed: u64,
    /// The limit it had to fit under ([`CompactionLimits::hard`]).
    pub limit: u64,
}

/// Compact `history` with `provider` writing the summary.
pub async fn compact(
    history: &[HistoryItem],
    provider: &dyn Provider,
    c: &Compaction<'_>,
) -> Result<Compacted, DoesNotFit> {
    let scale = c.limits.token_scale.max(1.0);
    let fixed = fixed_tokens(&c.request, scale).await;
    let mut limits = c.limits;
    if limits.after_overflow {
        let items = history.to_vec();
        let overflowed = off_runtime(move || scaled_total(&items, scale)).await;
        // Half the history that overflowed (the instructions and tools
        // cannot shrink).
        let cap = fixed + overflowed / 2;
        limits.request_budget = limits.request_budget.min(cap);
        limits.hard = limits.hard.min(cap);
    }
    let (summary, usage, missing_summary) =
        match summarize(provider, &c.request, limits.request_budget, scale).await {
            Ok((text, usage)) if !text.trim().is_empty() => (text, usage, None),
            Ok((_, usage)) => (
                "(the model returned an empty summary; earlier messages were dropped)".into(),
                usage,
                Some("the model returned an empty summary".into()),
            ),
            Err(e) => (
                "(no summary available; earlier messages were dropped)".into(),
                None,
                Some(e.to_string()),
            ),
        };
    let keep = items_to_keep(history, c.only_reads);
    let compacted = compacted_history(history, &keep, c.environment.clone(), &summary);
    let hard = limits.hard;
    let (history, tokens) =
        off_runtime(move || fit_compacted(compacted, &|item| scaled(item, scale), fixed, hard))
            .await?;
    Ok(Compacted {
        history,
        tokens,
        usage,
        missing_summary,
    })
}

/// Ask the model for a summary of the history of `request` (the session's
/// own request), fitted to `budget` tokens, and once more with half of it
/// when the model still says it is too large. Returns the summary and its
/// usage.
pub async fn summarize(
    provider: &dyn Provider,
    request: &ModelRequest<'_>,
    budget: u64,
    token_scale: f64,
) -> Result<(String, Option<Usage>), ProviderError> {
    let scale = token_scale.max(1.0);
    let fixed = fixed_tokens(request, scale).await
        + (tokens::count(SUMMARY_REQUEST) as f64 * scale).ceil() as u64;
    let fit = |budget: u64| {
        let items = request.input.to_vec();
        let room = budget.saturating_sub(fixed);
        off_runtime(move || fit_summary_input(items, room, &|item| scaled(item, scale)))
    };
    let input = fit(budget).await;
    match ask_for_summary(provider, request, input).await {
        Err(ProviderError::ContextOverflow { .. }) => {
            let input = fit(budget / 2).await;
            ask_for_summary(provider, request, input).await
        }
        answer => answer,
    }
}

/// Send `input` with [`SUMMARY_REQUEST`] appended; the answer's text.
async fn ask_for_summary(
    provider: &dyn Provider,
    request: &ModelRequest<'_>,
    input: Vec<HistoryItem>,
) -> Result<(String, Option<Usage>), ProviderError> {
    let (mut text, usage, stop_reason) =
        super::request::ask(provider, request, input, SUMMARY_REQUEST).await?;
    if stop_reason == StopReason::Length {
        text.push_str("\n(summary cut off)");
    }
    Ok((text, usage))
}

/// Estimated tokens of what every request carries besides the history:
/// the instructions and the tool definitions.
async fn fixed_tokens(request: &ModelRequest<'_>, scale: f64) -> u64 {
    let texts = vec![
        request.instructions.to_string(),
        serde_json::to_string(request.tools).unwrap_or_default(),
    ];
    (tokens::estimate(texts).await as f64 * scale).ceil() as u64
}

/// Run `work`, which counts tokens (loading the tokenizer the first time),
/// on the blocking pool; on this thread if the pool cannot run it.
async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Clone + Send + 'static) -> T {
    let fallback = work.clone();
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| fallback())
}

fn scaled(item: &HistoryItem, scale: f64) -> u64 {
    (tokens::count_item(item) as f64 * scale).ceil() as u64
}

fn scaled_total(items: &[HistoryItem], scale: f64) -> u64 {
    items.iter().map(|i| scaled(i, scale)).sum()
}

/// `history` made to take at most `room` tokens (as `count` counts them):
/// the oldest tool outputs are cut to a few lines first, then the oldest
/// items after the initial context are left out, a call always with its
/// outputs.
pub(crate) fn fit_summary_input(
    mut items: Vec<HistoryItem>,
    room: u64,
    count: &dyn Fn(&HistoryItem) -> u64,
) -> Vec<HistoryItem> {
    let mut sizes: Vec<u64> = items.iter().map(count).collect();
    let mut total: u64 = sizes.iter().sum();
    for at in 0..items.len() {
        if total <= room {
            return items;
        }
        if let Content::ToolOutput(output) = &mut items[at].content {
            let cut = head_tail(&output.content, TRIMMED_OUTPUT);
            if cut.len() < output.content.len() {
                output.content = cut;
                let size = count(&items[at]);
                total = total - sizes[at] + size;
                sizes[at] = size;
            }
        }
    }
    let mut dropped = vec![false; items.len()];
    let mut at = initial_len(&items);
    while total > room && at < items.len() {
        if !dropped[at] {
            for unit in unit_at(&items, at) {
                if !dropped[unit] {
                    dropped[unit] = true;
                    total -= sizes[unit];
                }
            }
        }
        at += 1;
    }
    items
        .into_iter()
        .zip(dropped)
        .filter(|(_, gone)| !gone)
        .map(|(item, _)| item)
        .collect()
}

/// The items that go when the item at `at` goes: a call takes its outputs.
fn unit_at(items: &[HistoryItem], at: usize) -> Vec<usize> {
    let mut unit = vec![at];
    if let Content::ToolCall(call) = &items[at].content {
        unit.extend(outputs_of(items, &call.id));
    }
    unit
}

/// Positions of the outputs of call `id`.
fn outputs_of<'a>(items: &'a [HistoryItem], id: &'a str) -> impl Iterator<Item = usize> + 'a {
    items
        .iter()
        .enumerate()
        .filter(move |(_, i)| matches!(&i.content, Content::ToolOutput(o) if o.call_id == id))
        .map(|(at, _)| at)
}

/// The compacted history made to fit: while it takes more than half of the
/// room `fixed` leaves under `hard`, the oldest kept responses (reasoning,
/// calls, outputs) are dropped; what remains must fit under `hard`.
/// Returns the history and its estimated request size.
pub(crate) fn fit_compacted(
    items: Vec<HistoryItem>,
    count: &dyn Fn(&HistoryItem) -> u64,
    fixed: u64,
    hard: u64,
) -> Result<(Vec<HistoryItem>, u64), DoesNotFit> {
    let sizes: Vec<u64> = items.iter().map(count).collect();
    let mut total = fixed + sizes.iter().sum::<u64>();
    let soft = fixed + hard.saturating_sub(fixed) / 2;
    let mut dropped = vec![false; items.len()];
    let mut at = 0;
    while total > soft && at < items.len() {
        if !dropped[at] && matches!(items[at].content, Content::ToolCall(_)) {
            for unit in response_at(&items, at) {
                if !dropped[unit] {
                    dropped[unit] = true;
                    total -= sizes[unit];
                }
            }
        }
        at += 1;
    }
    if total > hard {
        return Err(DoesNotFit {
            needed: total,
            limit: hard,
        });
    }
    let items = items
        .into_iter()
        .zip(dropped)
        .filter(|(_, gone)| !gone)
        .map(|(item, _)| item)
        .collect();
    Ok((items, total))
}

/// The response the call at `at` belongs to: the reasoning and calls
/// around it, up to the next item of another kind, and their outputs.
fn response_at(items: &[HistoryItem], at: usize) -> Vec<usize> {
    let of_response =
        |i: &HistoryItem| matches!(i.content, Content::ToolCall(_) | Content::Reasoning(_));
    let start = items[..at]
        .iter()
        .rposition(|i| !of_response(i))
        .map_or(0, |p| p + 1);
    let end = items[at..]
        .iter()
        .position(|i| !of_response(i))
        .map_or(items.len(), |p| p + at);
    let mut unit: Vec<usize> = (start..end).collect();
    for position in start..end {
        if let Content::ToolCall(call) = &items[position].content {
            unit.extend(outputs_of(items, &call.id));
        }
    }
    unit
}

/// Ids of the `skill` calls that loaded a skill. Compaction keeps their
/// outputs as [`MessageTag::Skill`] items (the calls themselves go), like
/// the skills the user named: a skill's procedure outlives a summary.
pub(crate) fn loaded_skills(history: &[HistoryItem]) -> HashSet<&str> {
    let calls: HashSet<&str> = history
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolCall(c) if c.name == SKILL_TOOL => Some(c.id.as_str()),
            _ => None,
        })
        .collect();
    history
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolOutput(o) if !o.is_error && calls.contains(o.call_id.as_str()) => {
                Some(o.call_id.as_str())
            }
            _ => None,
        })
        .collect()
}

/// Partition of history for compaction: which items are kept verbatim.
/// `only_reads` tells calls whose loss the summary covers.
pub(crate) fn items_to_keep(
    history: &[HistoryItem],
    only_reads: impl Fn(&ToolCall) -> bool,
) -> Vec<bool> {
    let latest_request = history
        .iter()
        .rposition(|i| i.role == Role::User && i.tag().is_none() && i.as_text().is_some());
    // Calls to state-changing tools, by id, so their outputs are kept too.
    let kept_calls: HashSet<&str> = history
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolCall(c) if !only_reads(c) => Some(c.id.as_str()),
            _ => None,
        })
        .collect();
    let skills = loaded_skills(history);
    // Reasoning since the latest request that opens a response with a kept
    // call: the response's reasoning items, then its calls.
    let mut kept_reasoning = vec![false; history.len()];
    let since = latest_request.map_or(0, |p| p + 1);
    let mut run: Vec<usize> = Vec::new();
    for (at, item) in history.iter().enumerate().skip(since) {
        match &item.content {
            Content::Reasoning(_) => run.push(at),
            Content::ToolCall(c) if kept_calls.contains(c.id.as_str()) => {
                for r in run.drain(..) {
                    kept_reasoning[r] = true;
                }
            }
            // The response's own text and searches, between its reasoning
            // and calls.
            Content::ToolCall(_) | Content::Text { .. } | Content::WebSearch(_)
                if item.role == Role::Assistant => {}
            _ => run.clear(),
        }
    }
    history
        .iter()
        .enumerate()
        .map(|(idx, item)| match &item.content {
            Content::Text { tag, .. } => match tag {
                Some(
                    MessageTag::DeveloperInstructions
                    | MessageTag::UserInstructions
                    | MessageTag::Plan
                    | MessageTag::Skill,
                ) => true,
                // Replaced by a fresh block; earlier summaries are re-summarised.
                Some(MessageTag::Environment | MessageTag::Summary) => false,
                // Summarised with the rest of the conversation.
                Some(MessageTag::Reflection | MessageTag::TestReport) | None => {
                    Some(idx) == latest_request
                }
            },
            Content::ToolCall(c) => kept_calls.contains(c.id.as_str()),
            Content::ToolOutput(o) => {
                kept_calls.contains(o.call_id.as_str()) || skills.contains(o.call_id.as_str())
            }
            Content::Reasoning(_) => kept_reasoning[idx],
            // What a search found is summarised with the rest.
            Content::WebSearch(_) => false,
            // The images attached to the latest request stay with it.
            Content::Image(_) => latest_request.is_some_and(|r| {
                idx > r
                    && history[r + 1..idx]
                        .iter()
                        .all(|i| matches!(i.content, Content::Image(_)))
            }),
        })
        .collect()
}

/// Build the compacted history: kept instructions, the environment, the
/// summary, then the other kept items in their original order, outputs cut
/// to head and tail; a kept output of a `skill` call whose call is not
/// kept becomes a [`MessageTag::Skill`] item, whole.
pub(crate) fn compacted_history(
    history: &[HistoryItem],
    keep: &[bool],
    environment: String,
    summary: &str,
) -> Vec<HistoryItem> {
    let skills = loaded_skills(history);
    let kept_calls: HashSet<&str> = history
        .iter()
        .zip(keep)
        .filter_map(|(i, k)| match &i.content {
            Content::ToolCall(c) if *k => Some(c.id.as_str()),
            _ => None,
        })
        .collect();
    let (instructions, rest): (Vec<_>, Vec<_>) = history
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(i, _)| i.clone())
        .partition(|i| {
            matches!(
                i.tag(),
                Some(
                    MessageTag::DeveloperInstructions
                        | MessageTag::UserInstructions
                        | MessageTag::Plan
                )
            )
        });
    let mut out = instructions;
    out.push(HistoryItem::tagged(
        Role::User,
        MessageTag::Environment,
        environment,
    ));
    out.push(HistoryItem::tagged(
        Role::User,
        MessageTag::Summary,
        format!("Summary of the conversation so far (earlier messages were compacted):\n{summary}"),
    ));
    let dropped: Vec<String> = history
        .iter()
        .zip(keep)
        .filter_map(|(i, k)| match &i.content {
            Content::Image(image) if !*k => Some(image.describe()),
            _ => None,
        })
        .collect();
    if !dropped.is_empty() {
        out.push(HistoryItem::text(
            Role::User,
            format!(
                "[images attached earlier, dropped by compaction: {}]",
                dropped.join("; ")
            ),
        ));
    }
    out.extend(rest.into_iter().map(|mut item| {
        if let Content::ToolOutput(output) = &mut item.content {
            for image in std::mem::take(&mut output.images) {
                let _ = write!(
                    output.content,
                    "\n[image {}: dropped by compaction]",
                    image.describe()
                );
            }
            let id = output.call_id.as_str();
            if skills.contains(id) && !kept_calls.contains(id) {
                return HistoryItem::tagged(
                    Role::User,
                    MessageTag::Skill,
                    std::mem::take(&mut output.content),
                );
            }
            output.content = head_tail(&output.content, KEPT_OUTPUT);
        }
        item
    }));
    out
}

/// The most the provider's token counts are taken to exceed the local
/// estimate (tokenizers differ by far less; a larger ratio means the
/// request carried more than the history, e.g. images).
const MAX_TOKEN_SCALE: f64 = 2.0;

/// Room for the answer when the session sets no `max_tokens`.
const DEFAULT_ANSWER_ROOM: u64 = 8192;
/// Extra room for thinking when the session reasons.
const THINKING_ROOM: u64 = 16_384;

impl Session {
    /// Compact history now (`/compact`, the limit, an overflow). A missing
    /// summary is a warning; it fails only when what must stay does not
    /// fit, with a context overflow error that says what to change.
    pub async fn compact(&mut self, sink: &dyn EventSink) -> Result<(), ProviderError> {
        self.before_manual_compact(sink).await;
        self.compact_history(sink, false).await
    }

    /// [`Session::compact`]; `after_overflow` when the last request was
    /// larger than the model's context window.
    pub(super) async fn compact_history(
        &mut self,
        sink: &dyn EventSink,
        after_overflow: bool,
    ) -> Result<(), ProviderError> {
        let tokens_before = self.history.tokens.context;
        let items_before = self.history.len();
        let started = Instant::now();
        let environment = self.ctx.environment();
        let limits = self.compaction_limits(after_overflow);
        let outcome = {
            let prompt = build_prompt(&self.ctx, &self.history);
            let (tools, shell) = (
                &self.toolset.registry,
                self.ctx.sandbox_policy.shell.as_str(),
            );
            let only_reads =
                |call: &ToolCall| approval::only_reads(call, tools.is_read_only(&call.name), shell);
            let compaction = Compaction {
                request: prompt.request(&self.ctx),
                limits,
                only_reads: &only_reads,
                environment: environment.render(),
            };
            compact(&self.history, &*self.provider, &compaction).await
        };
        let compacted = outcome.map_err(|e| self.does_not_fit(e))?;
        if let Some(usage) = &compacted.usage {
            self.meter
                .metrics
                .record_model_request(usage, None, started.elapsed());
        }
        if let Some(why) = &compacted.missing_summary {
            sink.emit(AgentEvent::Warning {
                message: format!(
                    "compaction could not get a summary ({why}); earlier messages were dropped"
                ),
            });
        }
        self.replace_history(compacted.history);
        self.environment = environment;
        self.history.tokens.context = compacted.tokens;
        self.history.tokens.compacted_estimate = Some(compacted.tokens);
        self.history.tokens.stale = false;
        self.meter.metrics.record_compaction();
        tracing::info!(
            tokens_before,
            items_before,
            items_after = self.history.len(),
            tokens_after = self.history.tokens.context,
            "history compacted"
        );
        sink.emit(AgentEvent::Compacted {
            tokens_before,
            items_before,
            items_after: self.history.len(),
        });
        Ok(())
    }

    /// After a request: the provider's count is the conversation's size;
    /// the first request after a compaction also tells how the provider
    /// counts compared with the local estimate, for the next compaction.
    pub(super) fn calibrate_tokens(&mut self, usage: &Usage) {
        if let Some(estimate) = self.history.tokens.compacted_estimate.take() {
            if !usage.estimated && estimate > 0 {
                let ratio = usage.input_tokens as f64 / estimate as f64;
                self.history.tokens.scale =
                    (self.history.tokens.scale * ratio).clamp(1.0, MAX_TOKEN_SCALE);
            }
        }
    }

    /// Ask the model for a summary of the whole history (the context
    /// stack's `summarize`); returns its text and the request's usage.
    pub(super) async fn write_summary(&self) -> Result<(String, Option<Usage>), ProviderError> {
        let limits = self.compaction_limits(false);
        let prompt = build_prompt(&self.ctx, &self.history);
        summarize(
            &*self.provider,
            &prompt.request(&self.ctx),
            limits.request_budget,
            limits.token_scale,
        )
        .await
    }

    /// The summary request leaves room for the answer (`max_tokens`, and
    /// thinking) in the context window, with a tenth to spare for estimate
    /// errors; the compacted history must also stay under the compaction
    /// limit.
    fn compaction_limits(&self, after_overflow: bool) -> CompactionLimits {
        let window = self.ctx.model_family.context_window;
        let sampling = &self.ctx.sampling;
        let thinking = if sampling.reasoning_effort.is_some() {
            THINKING_ROOM
        } else {
            0
        };
        let answer = sampling.max_tokens.map_or(DEFAULT_ANSWER_ROOM, u64::from) + thinking;
        let request_budget = window.saturating_sub(answer.min(window / 4)) / 10 * 9;
        CompactionLimits {
            request_budget,
            hard: self.compaction_limit().min(request_budget),
            after_overflow,
            token_scale: self.history.tokens.scale,
        }
    }

    /// What must stay does not fit: the context overflow error that ends
    /// the turn, saying what to change.
    fn does_not_fit(&self, error: DoesNotFit) -> ProviderError {
        let model = &self.ctx.model;
        ProviderError::ContextOverflow {
            provider: self.provider.id().to_string(),
            model: model.clone(),
            message: format!(
                "{error} (the model's context window is {} tokens). Shorten the request or start a new session; if the model takes more, set context_window in [model_families.\"{model}\"] or [compaction] token_limit",
                self.ctx.model_family.context_window
            ),
        }
    }
}
