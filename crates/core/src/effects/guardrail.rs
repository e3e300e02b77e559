//! Guardrails: check a tool call before it runs, or a model reply, against
//! a regex or a command, and block with a reason.
//!
//! ```toml
//! effects = [
//!   { kind = "guardrail", on = "tool_call", tools = "shell", pattern = "rm\\s+-rf\\s+/", reason = "no recursive deletes of /" },
//!   { kind = "guardrail", on = "reply", command = "./scripts/check-reply" },
//! ]
//! ```
//!
//! A blocked tool call is not run; the model sees the reason as its output
//! and may try something else. A blocked reply ends the turn with outcome
//! `blocked`. A command gets the call or reply as JSON on stdin; exit 0
//! allows, any other exit blocks with its stderr (capped) as the reason,
//! and so does a command that times out, dies by a signal or cannot start
//! (a guardrail is a guard: see `super::Effects::failed`).

use super::command;
use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point, Stop};
use cogni_protocol::TurnOutcome;
use futures::future::BoxFuture;
use regex::Regex;
use std::time::Duration;

pub const KIND: &str = "guardrail";

/// Most of a command's stderr shown as the reason.
const MAX_REASON: usize = 2000;

/// What a guardrail checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    ToolCall,
    Reply,
}

#[derive(Debug, Clone)]
pub struct Guardrail {
    pub on: On,
    /// Tool names it applies to (a regex over the whole name); all when unset.
    pub tools: Option<Regex>,
    /// Blocks when it matches the call's arguments or the reply's text.
    pub pattern: Option<Regex>,
    /// Blocks when it exits with anything but 0.
    pub command: Option<String>,
    pub timeout: Duration,
    /// The reason given when blocked (default: says what matched).
    pub reason: Option<String>,
}

impl Guardrail {
    /// Why `subject` is blocked, if it is.
    async fn check(
        &self,
        cx: &IterationContext<'_>,
        subject: &str,
        input: serde_json::Value,
    ) -> Result<Option<String>, EffectError> {
        if let Some(pattern) = &self.pattern {
            if pattern.is_match(subject) {
                return Ok(Some(self.reason.clone().unwrap_or_else(|| {
                    format!("blocked by a guardrail: it matches /{pattern}/")
                })));
            }
        }
        if let Some(command) = &self.command {
            let pins = &cx.ctx.sandbox_policy.pins;
            let ran = command::run(command, &input, cx.cwd, &[], self.timeout, pins)
                .await
                .map_err(|e| {
                    EffectError(format!(
                        "the guardrail command `{command}` could not start: {e}"
                    ))
                })?;
            if ran.exit_code != Some(0) {
                let said = cogni_sandbox::redact::redact(&ran.stderr);
                let said: String = said.chars().take(MAX_REASON).collect();
                return Ok(Some(self.reason.clone().unwrap_or_else(|| {
                    if said.trim().is_empty() {
                        format!(
                            "blocked by the guardrail command `{command}` ({})",
                            ran.status(self.timeout)
                        )
                    } else {
                        format!("blocked by a guardrail: {said}")
                    }
                })));
            }
        }
        Ok(None)
    }
}

impl Effect for Guardrail {
    fn name(&self) -> &str {
        KIND
    }

    fn guards(&self) -> bool {
        true
    }

    fn phases(&self) -> &'static [Phase] {
        match self.on {
            On::ToolCall => &[Phase::BeforeTool],
            On::Reply => &[Phase::AfterModel],
        }
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        Box::pin(async move {
            let decision = match cx.point {
                Point::BeforeTool { call } if self.on == On::ToolCall => {
                    if self.tools.as_ref().is_some_and(|t| !t.is_match(&call.name)) {
                        return Ok(Decision::Continue.into());
                    }
                    let arguments: serde_json::Value = serde_json::from_str(&call.arguments)
                        .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
                    let input = serde_json::json!({
                        "on": "tool_call",
                        "cwd": cx.cwd,
                        "tool_name": call.name,
                        "tool_input": arguments,
                    });
                    match self.check(cx, &call.arguments, input).await? {
                        Some(reason) => Decision::Block(reason),
                        None => Decision::Continue,
                    }
                }
                Point::AfterModel { reply } if self.on == On::Reply => {
                    let input = serde_json::json!({
                        "on": "reply",
                        "cwd": cx.cwd,
                        "text": reply.text,
                    });
                    match self.check(cx, &reply.text, input).await? {
                        Some(reason) => {
                            Decision::Stop(Stop::by(KIND, TurnOutcome::Blocked, reason))
                        }
                        None => Decision::Continue,
                    }
                }
                _ => Decision::Continue,
            };
            Ok(decision.into())
        })
    }
}
