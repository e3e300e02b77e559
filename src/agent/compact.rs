//! History compaction: when the conversation outgrows its token limit, the
//! items the model must not lose are kept verbatim and the rest becomes a
//! model-written summary.
//!
//! Kept: developer instructions, user instructions, the environment (as a
//! fresh full block of the current environment, which carries everything
//! the latest block or diff said), the latest user request, and every call
//! to a tool that can change state, with its output. Dropped: assistant
//! chatter and read-only calls, which the summary describes.

use super::session::Session;
use crate::metrics::tokens;
use crate::protocol::{
    AgentEvent, Content, EventSink, HistoryItem, MessageTag, Role, StopReason, Usage,
};
use crate::provider::{ModelRequest, ResponseEvent};
use futures::StreamExt;
use std::collections::HashSet;
use std::time::Instant;

const SUMMARY_INSTRUCTIONS: &str = "You are summarizing a coding session so it can continue with a shorter history. Write a concise summary for the agent that will continue the work: the user's goal, what was done (files changed, commands run and their results), what was learned (relevant file paths, functions, errors), and what remains to do. Plain text, no preamble.";

const SUMMARY_REQUEST: &str = "Summarize the conversation above as instructed. Do not call tools.";

/// Partition of history for compaction: which items are kept verbatim.
pub(crate) fn items_to_keep(
    history: &[HistoryItem],
    is_read_only: impl Fn(&str) -> bool,
) -> Vec<bool> {
    let latest_request = history
        .iter()
        .rposition(|i| i.role == Role::User && i.tag().is_none() && i.as_text().is_some());
    // Calls to state-changing tools, by id, so their outputs are kept too.
    let kept_calls: HashSet<&str> = history
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolCall(c) if !is_read_only(&c.name) => Some(c.id.as_str()),
            _ => None,
        })
        .collect();
    history
        .iter()
        .enumerate()
        .map(|(idx, item)| match &item.content {
            Content::Text { tag, .. } => match tag {
                Some(MessageTag::DeveloperInstructions | MessageTag::UserInstructions) => true,
                // Replaced by a fresh block; earlier summaries are re-summarised.
                Some(MessageTag::Environment | MessageTag::Summary) => false,
                None => Some(idx) == latest_request,
            },
            Content::ToolCall(c) => kept_calls.contains(c.id.as_str()),
            Content::ToolOutput(o) => kept_calls.contains(o.call_id.as_str()),
            // Summarised away with the messages it explained.
            Content::Reasoning(_) => false,
        })
        .collect()
}

/// Build the compacted history: kept instructions, the environment, the
/// summary, then the other kept items in their original order.
pub(crate) fn compacted_history(
    history: &[HistoryItem],
    keep: &[bool],
    environment: String,
    summary: &str,
) -> Vec<HistoryItem> {
    let (instructions, rest): (Vec<_>, Vec<_>) = history
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(i, _)| i.clone())
        .partition(|i| {
            matches!(
                i.tag(),
                Some(MessageTag::DeveloperInstructions | MessageTag::UserInstructions)
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
    out.extend(rest);
    out
}

impl Session {
    /// Compact history now. Never fails: if the model cannot write a
    /// summary, the dropped items are replaced by a note saying so.
    pub async fn compact(&mut self, sink: &dyn EventSink) {
        let tokens_before = self.context_tokens;
        let items_before = self.history.len();
        let started = Instant::now();
        let summary = self.write_summary().await.map(|(text, usage)| {
            if let Some(usage) = usage {
                self.metrics
                    .record_model_request(&usage, None, started.elapsed());
            }
            text
        });
        let summary = match summary {
            Ok(s) if !s.trim().is_empty() => s,
            Ok(_) => "(the model returned an empty summary; earlier messages were dropped)".into(),
            Err(e) => {
                sink.emit(AgentEvent::Warning {
                    message: format!(
                        "compaction could not get a summary ({e}); earlier messages were dropped"
                    ),
                });
                "(no summary available; earlier messages were dropped)".into()
            }
        };
        let keep = items_to_keep(&self.history, |name| self.tools.is_read_only(name));
        let environment = self.ctx.environment();
        let compacted = compacted_history(&self.history, &keep, environment.render(), &summary);
        self.replace_history(compacted);
        self.environment = environment;
        self.context_tokens = tokens::estimate_items(self.history.clone()).await;
        self.metrics.record_compaction();
        tracing::info!(
            tokens_before,
            items_before,
            items_after = self.history.len(),
            tokens_after = self.context_tokens,
            "history compacted"
        );
        sink.emit(AgentEvent::Compacted {
            tokens_before,
            items_before,
            items_after: self.history.len(),
        });
        if self.context_tokens > self.ctx.compaction_limit {
            sink.emit(AgentEvent::Warning {
                message: format!(
                    "history is still over the compaction limit after compacting ({} > {} tokens)",
                    self.context_tokens, self.ctx.compaction_limit
                ),
            });
        }
    }

    /// Ask the model for a summary of the history; returns its text and the
    /// request's usage.
    pub(super) async fn write_summary(
        &self,
    ) -> Result<(String, Option<Usage>), crate::provider::ProviderError> {
        let mut input = self.history.clone();
        input.push(HistoryItem::text(Role::User, SUMMARY_REQUEST));
        let request = ModelRequest {
            model: &self.ctx.model,
            instructions: SUMMARY_INSTRUCTIONS,
            input: &input,
            tools: &[],
            parallel_tool_calls: false,
            output_schema: None,
            temperature: self.ctx.sampling.temperature,
            max_tokens: self.ctx.sampling.max_tokens,
            reasoning_effort: self.ctx.sampling.reasoning_effort,
            context_window: self.ctx.model_family.context_window,
            context_window_is_default: self.ctx.model_family.context_window_is_default,
            max_tokens_param: self.ctx.model_family.max_tokens_param,
        };
        let mut stream = self.provider.stream(&request);
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            match event? {
                ResponseEvent::TextDelta(d) => text.push_str(&d),
                // The retried attempt starts the summary over.
                ResponseEvent::Retrying { .. } => text.clear(),
                ResponseEvent::Completed {
                    stop_reason, usage, ..
                } => {
                    if stop_reason == StopReason::Length {
                        text.push_str("\n(summary cut off)");
                    }
                    return Ok((text, usage));
                }
                _ => {}
            }
        }
        Err(crate::provider::ProviderError::Stream {
            provider: self.provider.id().to_string(),
            model: self.ctx.model.clone(),
            message: "summary stream ended before completion".into(),
        })
    }
}
