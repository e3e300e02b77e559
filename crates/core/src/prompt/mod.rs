//! `build_prompt`: what is sent to the model on each request; the system
//! prompt it sends as the instructions (`builder`: its sections; `system`:
//! when it is built; `clock`: today's date).

pub mod builder;
pub mod clock;
pub mod system;
#[cfg(test)]
mod tests;

use super::turn_context::TurnContext;
use cogni_protocol::{Content, HistoryItem, ToolFormat, ToolOutput, ToolSpec};
use cogni_provider::model_family::ToolCallMode;
use cogni_provider::{text_tools, ModelRequest};
use cogni_tools::shell;
use std::borrow::Cow;
use std::collections::HashSet;

/// The payload for one model request (the spec's `Prompt`). Borrows from
/// the session so building it costs nothing per history item.
#[derive(Debug, Clone)]
pub struct Prompt<'a> {
    /// The system prompt, sent as the request's instructions.
    pub instructions: Cow<'a, str>,
    /// The history items sent (borrowed, or a copy with shell outputs
    /// rewritten for a freeform `apply_patch`).
    pub input_items: Cow<'a, [HistoryItem]>,
    /// The tools offered to the model.
    pub tools: &'a [ToolSpec],
    /// The model may ask for several calls in one reply: the family
    /// supports it and `features.parallel_tools` is on.
    pub parallel_tool_calls: bool,
    /// `--output-schema`, for providers that can enforce it.
    pub output_schema: Option<&'a serde_json::Value>,
}

/// Build the prompt from the context and history:
/// 1. instructions: the session's system prompt as built (see
///    [`system`]; identity first: `base_instructions_override`, SOUL.md or
///    the family template, plus the apply_patch instructions when the
///    family needs them and no `apply_patch` tool is offered);
/// 2. history as input items (shell outputs normalised when `apply_patch`
///    is a freeform tool);
/// 3. `parallel_tool_calls` only when the family supports it and
///    `features.parallel_tools` is on.
pub fn build_prompt<'a>(ctx: &'a TurnContext, history: &'a [HistoryItem]) -> Prompt<'a> {
    Prompt {
        instructions: Cow::Borrowed(ctx.system_prompt.text()),
        input_items: format_history(ctx, history),
        tools: &ctx.tools,
        parallel_tool_calls: ctx.model_family.supports_parallel_tool_calls
            && ctx.features.parallel_tools,
        output_schema: ctx.output_schema.as_ref(),
    }
}

/// History as input items. With a freeform `apply_patch` tool, shell
/// outputs are rewritten to the plain layout such models were trained on;
/// otherwise history is borrowed as is.
fn format_history<'a>(ctx: &TurnContext, history: &'a [HistoryItem]) -> Cow<'a, [HistoryItem]> {
    let freeform_patch = ctx
        .tools
        .iter()
        .any(|t| t.name == "apply_patch" && matches!(t.format, ToolFormat::Freeform { .. }));
    if !freeform_patch {
        return Cow::Borrowed(history);
    }
    let shell_calls: HashSet<&str> = history
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolCall(c) if c.name == "shell" => Some(c.id.as_str()),
            _ => None,
        })
        .collect();
    Cow::Owned(
        history
            .iter()
            .map(|item| match &item.content {
                Content::ToolOutput(o) if shell_calls.contains(o.call_id.as_str()) => {
                    let content = shell::normalize_output(&o.content);
                    // The command's own output ends both texts.
                    let command = o.command.map(|c| cogni_protocol::CommandEnd {
                        output_start: content
                            .len()
                            .saturating_sub(o.content.len().saturating_sub(c.output_start)),
                        ..c
                    });
                    HistoryItem::tool_output(ToolOutput {
                        content,
                        command,
                        ..o.clone()
                    })
                }
                _ => item.clone(),
            })
            .collect(),
    )
}

impl Prompt<'_> {
    /// The provider request for this prompt.
    pub fn request<'b>(&'b self, ctx: &'b TurnContext) -> ModelRequest<'b> {
        ModelRequest {
            model: &ctx.model,
            instructions: &self.instructions,
            input: &self.input_items,
            tools: self.tools,
            parallel_tool_calls: self.parallel_tool_calls,
            output_schema: self.output_schema,
            temperature: ctx.sampling.temperature,
            max_tokens: ctx.sampling.max_tokens,
            reasoning_effort: ctx.sampling.reasoning_effort,
            context_window: ctx.model_family.context_window,
            context_window_is_default: ctx.model_family.context_window_is_default,
            max_tokens_param: ctx.model_family.max_tokens_param,
            web_search: ctx.features.web_search,
        }
    }

    /// The prompt as JSON, for verbose logs: as the provider sends it,
    /// with the tool section of `tool_call_mode = "text"` in place.
    pub fn to_json(&self, mode: ToolCallMode) -> serde_json::Value {
        match mode {
            // The input first: the verbose log clips the end.
            ToolCallMode::Native => serde_json::json!({
                "input_items": self.input_items,
                "instructions": self.instructions,
                "tools": self.tools,
                "parallel_tool_calls": self.parallel_tool_calls,
                "output_schema": self.output_schema,
            }),
            // What `TextTools` sends in its place.
            ToolCallMode::Text => serde_json::json!({
                "input_items": text_tools::history_as_text(&self.input_items),
                "instructions": text_tools::instructions(&self.instructions, self.tools, self.output_schema),
                "tools": [],
                "parallel_tool_calls": false,
                "output_schema": null,
            }),
        }
    }
}
