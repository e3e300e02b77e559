//! Hooks: a user's command run at a lifecycle event, with Claude Code's
//! event names and JSON so existing scripts port (see docs/hooks.md).
//!
//! | event | effect point | what the hook can do |
//! |---|---|---|
//! | SessionStart | `session_start` | add context |
//! | UserPromptSubmit | `turn_start` | refuse the prompt (it never joins history), add context |
//! | PreToolUse | `before_tool` | block the call, ask the user, change its input, add context |
//! | PostToolUse | `after_tool` | feed a reason back with the output, add context |
//! | PreCompact | `before_compact` | be told (nothing to decide) |
//! | Stop | `turn_end` | keep the turn going with a reason |
//! | SessionEnd | `session_end` | be told |
//! | Notification | (none: [`notify`]) | be told, in the background |
//!
//! Each hook is one effect, registered after every other effect in config
//! order, so when several change a call's input each sees what the one
//! before it did. Exit 0 goes on (its stdout's JSON may decide), exit 2
//! blocks with stderr as the reason, another exit code is a warning and
//! goes on unless `on_failure = "block"`. A hook that gives no answer (it
//! cannot start, times out, dies by a signal, prints JSON that cannot be
//! read or used) blocks wherever its event can block, whatever its
//! `on_failure`: a guard that cannot answer must not let things through.
//! Every run is a `hook` event with its duration.

pub mod contract;
pub mod notify;

use super::command;
use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point, Stop};
use crate::approval;
use cogni_protocol::{
    AgentEvent, ApprovalDecision, ApprovalStatus, HistoryItem, Role, ToolCall, TurnOutcome,
};
use cogni_tools::ToolResult;
use contract::{Asked, EventData, Said, Verdict};
use futures::future::BoxFuture;
use regex::Regex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use cogni_spec::hooks::{HookEvent, HookSpec, OnFailure};

/// The effect phase a hook of `event` runs at.
fn phases(event: HookEvent) -> &'static [Phase] {
    match event {
        HookEvent::SessionStart => &[Phase::SessionStart],
        HookEvent::UserPromptSubmit => &[Phase::TurnStart],
        HookEvent::PreToolUse => &[Phase::BeforeTool],
        HookEvent::PostToolUse => &[Phase::AfterTool],
        HookEvent::PreCompact => &[Phase::BeforeCompact],
        HookEvent::Stop => &[Phase::TurnEnd],
        HookEvent::SessionEnd => &[Phase::SessionEnd],
        HookEvent::SubagentStart => &[Phase::SessionStart],
        HookEvent::SubagentStop => &[Phase::TurnEnd],
        // Not an effect: nothing waits for it (`notify`).
        HookEvent::Notification => &[],
    }
}

/// The hooks of `specs` as effects, in order, named by their place among
/// their event's hooks (`hooks.PreToolUse[1]`); Notification hooks are
/// not effects ([`notify`]). With any hook, the fork server that will
/// start them starts now, in the background.
pub fn build(specs: &[HookSpec]) -> Vec<Box<dyn Effect>> {
    if !specs.is_empty() {
        cogni_sandbox::fork_server::start_in_background();
    }
    let kept_going = Arc::new(AtomicU32::new(0));
    let mut counts = std::collections::HashMap::new();
    specs
        .iter()
        .filter(|spec| spec.event != HookEvent::Notification)
        .map(|spec| {
            let n = counts.entry(spec.event).or_insert(0usize);
            let name = format!("hooks.{}[{n}]", spec.event.name());
            *n += 1;
            Box::new(Hook {
                name,
                matcher: spec.regex(),
                spec: spec.clone(),
                kept_going: kept_going.clone(),
            }) as Box<dyn Effect>
        })
        .collect()
}

/// One hook, as an effect.
pub struct Hook {
    name: String,
    spec: HookSpec,
    matcher: Option<Regex>,
    /// Shared by a session's hooks: 1 + the turn a Stop hook kept going
    /// (0: none), for `stop_hook_active`.
    kept_going: Arc<AtomicU32>,
}

/// What one run of a hook comes to.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    /// For the `hook` event.
    label: &'static str,
    reason: Option<String>,
    decision: Decision,
    /// PreToolUse `ask`: the question's reason; `decision` applies on a yes.
    ask: Option<String>,
    /// For the user.
    warnings: Vec<String>,
}

impl Plan {
    fn new(label: &'static str, decision: Decision) -> Self {
        Plan {
            label,
            reason: None,
            decision,
            ask: None,
            warnings: Vec::new(),
        }
    }

    fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

impl Hook {
    /// The event's data at `point` of `agent`'s session, when this hook
    /// runs there.
    fn data<'a>(&self, point: &Point<'a>, agent: &'a str) -> Option<EventData<'a>> {
        let data = match *point {
            Point::SessionStart { .. } if self.spec.event == HookEvent::SubagentStart => {
                EventData::SubagentStart { agent }
            }
            Point::TurnEnd { .. } if self.spec.event == HookEvent::SubagentStop => {
                EventData::SubagentStop {
                    agent,
                    stop_hook_active: false,
                }
            }
            Point::SessionStart { resumed } => EventData::SessionStart {
                source: if resumed { "resume" } else { "startup" },
            },
            Point::TurnStart { prompt } => EventData::UserPromptSubmit { prompt },
            Point::BeforeTool { call } => EventData::PreToolUse { call },
            Point::AfterTool { call, result } => EventData::PostToolUse { call, result },
            Point::BeforeCompact { manual, .. } => EventData::PreCompact {
                trigger: if manual { "manual" } else { "auto" },
            },
            Point::TurnEnd { .. } => EventData::Stop {
                stop_hook_active: false,
            },
            Point::SessionEnd { reason } => EventData::SessionEnd {
                reason: reason.as_str(),
            },
            _ => return None,
        };
        (data.event() == self.spec.event).then_some(data)
    }

    fn matches(&self, data: &EventData<'_>) -> bool {
        match (&self.matcher, data.subject()) {
            (Some(re), Some(subject)) => re.is_match(subject),
            _ => true,
        }
    }

    /// What the verdict means at this hook's event.
    fn plan(&self, verdict: Verdict, data: &EventData<'_>) -> Plan {
        let event = self.spec.event.name();
        match verdict {
            Verdict::Blocked(reason) => {
                let reason = if reason.is_empty() {
                    format!("the hook `{}` exited with code 2", self.spec.command)
                } else {
                    reason
                };
                self.block(reason, None, data)
            }
            Verdict::NoAnswer { status, stderr } => self.no_answer(status, &stderr, data),
            Verdict::Failed { status, stderr } => {
                let said = said(&stderr);
                let mut plan = match self.spec.on_failure {
                    OnFailure::Allow => Plan::new("failed", Decision::Continue),
                    OnFailure::Block => {
                        // Fixed text: what the command printed stays with the user.
                        let reason = format!(
                            "the {event} hook `{}` failed ({status}) and its on_failure is \"block\"",
                            self.spec.command
                        );
                        Plan {
                            label: "failed",
                            ..self.block(reason, None, data)
                        }
                    }
                };
                let then = match self.spec.on_failure {
                    OnFailure::Allow => "going on",
                    OnFailure::Block => "blocking (on_failure = \"block\")",
                };
                plan.warnings.insert(
                    0,
                    format!(
                        "hook {} (`{}`) failed, {status}{said}; {then}",
                        self.name, self.spec.command
                    ),
                );
                plan.reason = Some(status);
                plan
            }
            Verdict::Done(said) => self.plan_said(said, data),
        }
    }

    /// A hook that gave no answer (`status` says why): the block of its
    /// event, whatever its `on_failure`; at Stop and SubagentStop the turn
    /// ends (`blocked`), since keeping it going would only ask the same
    /// hook again. Events that cannot block go on, with a warning.
    fn no_answer(&self, status: String, stderr: &str, data: &EventData<'_>) -> Plan {
        let event = self.spec.event.name();
        let reason = format!(
            "the {event} hook `{}` gave no answer ({status}); a guard that cannot answer blocks",
            self.spec.command
        );
        let (mut plan, then) = match data {
            EventData::Stop { .. } | EventData::SubagentStop { .. } => (
                Plan::new(
                    "failed",
                    Decision::Stop(Stop::by(&self.name, TurnOutcome::Blocked, reason)),
                ),
                "ending the turn",
            ),
            EventData::SessionStart { .. }
            | EventData::SubagentStart { .. }
            | EventData::PreCompact { .. }
            | EventData::SessionEnd { .. }
            | EventData::Notification { .. } => {
                (Plan::new("failed", Decision::Continue), "going on")
            }
            _ => (
                Plan {
                    label: "failed",
                    ..self.block(reason, None, data)
                },
                "blocking",
            ),
        };
        plan.warnings.insert(
            0,
            format!(
                "hook {} (`{}`) gave no answer, {status}{}; {then}",
                self.name,
                self.spec.command,
                said(stderr)
            ),
        );
        plan.reason = Some(status);
        plan
    }

    /// Exit 0: what its JSON (if any) says.
    fn plan_said(&self, said: Said, data: &EventData<'_>) -> Plan {
        let event = self.spec.event;
        let reason = said
            .reason
            .as_deref()
            .map(|r| contract::cap(r, contract::MAX_REASON_BYTES))
            .filter(|r| !r.is_empty());
        let context = said
            .additional_context
            .as_deref()
            .map(|c| contract::cap(c, contract::MAX_CONTEXT_BYTES));
        let mut warnings = Vec::new();
        if let Some(message) = &said.system_message {
            warnings.push(format!("hook {}: {message}", self.name));
        }
        let mut plan = if let Some(stop) = said.stop {
            let why = if stop.trim().is_empty() {
                format!(
                    "stopped by the {} hook `{}`",
                    event.name(),
                    self.spec.command
                )
            } else {
                contract::cap(&stop, contract::MAX_REASON_BYTES)
            };
            match event {
                HookEvent::UserPromptSubmit
                | HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::Stop
                | HookEvent::SubagentStop => Plan::new(
                    "stop",
                    Decision::Stop(Stop::by(&self.name, TurnOutcome::Blocked, why.clone())),
                )
                .because(why),
                _ => {
                    let mut plan = Plan::new("stop", Decision::Continue).because(why);
                    plan.warnings.push(format!(
                        "hook {}: {} hooks cannot stop anything; `continue: false` ignored",
                        self.name,
                        event.name()
                    ));
                    plan
                }
            }
        } else {
            match said.decision {
                Some(Asked::Deny | Asked::Block) => {
                    let reason = reason.unwrap_or_else(|| {
                        format!("the {} hook `{}` said no", event.name(), self.spec.command)
                    });
                    self.block(reason, context, data)
                }
                Some(Asked::Ask) if event == HookEvent::PreToolUse => {
                    let question = reason.unwrap_or_else(|| {
                        format!("the PreToolUse hook `{}` asks", self.spec.command)
                    });
                    let mut plan = self.go_on(said.updated_input, context, data);
                    plan.label = "ask";
                    plan.ask = Some(question.clone());
                    plan.reason = Some(question);
                    plan
                }
                Some(Asked::Ask) => {
                    let mut plan = self.go_on(said.updated_input, context, data);
                    plan.warnings.push(format!(
                        "hook {}: only PreToolUse hooks may ask; `ask` ignored",
                        self.name
                    ));
                    plan
                }
                Some(Asked::Allow) | None => self.go_on(said.updated_input, context, data),
            }
        };
        warnings.append(&mut plan.warnings);
        plan.warnings = warnings;
        plan
    }

    /// Block at this hook's event: refuse the prompt, block the call, feed
    /// the reason back after a call, keep the turn going; elsewhere show it.
    fn block(&self, reason: String, context: Option<String>, data: &EventData<'_>) -> Plan {
        let event = self.spec.event.name();
        let decision = match *data {
            EventData::UserPromptSubmit { .. } => Decision::Stop(Stop::by(
                &self.name,
                TurnOutcome::Blocked,
                format!("the prompt was blocked by a UserPromptSubmit hook: {reason}"),
            )),
            EventData::PreToolUse { .. } => {
                Decision::Block(format!("Blocked by a PreToolUse hook: {reason}"))
            }
            EventData::PostToolUse { result, .. } => {
                let mut content = format!("{}\n\n[PostToolUse hook] {reason}", result.content);
                if let Some(context) = &context {
                    content.push_str(&format!("\n{context}"));
                }
                Decision::ReplaceOutput(ToolResult {
                    content,
                    ..result.clone()
                })
            }
            EventData::Stop { .. } | EventData::SubagentStop { .. } => {
                Decision::AddItems(vec![HistoryItem::text(
                    Role::User,
                    format!("A {event} hook did not let the turn end yet: {reason}"),
                )])
            }
            EventData::SessionStart { .. }
            | EventData::SubagentStart { .. }
            | EventData::PreCompact { .. }
            | EventData::SessionEnd { .. }
            | EventData::Notification { .. } => {
                let mut plan = Plan::new("block", Decision::Continue).because(reason.clone());
                plan.warnings.push(format!(
                    "hook {} ({event} hooks cannot block anything): {reason}",
                    self.name
                ));
                return plan;
            }
        };
        Plan::new("block", decision).because(reason)
    }

    /// Go on, with a changed input or context for the model.
    fn go_on(
        &self,
        updated_input: Option<serde_json::Value>,
        context: Option<String>,
        data: &EventData<'_>,
    ) -> Plan {
        let mut warnings = Vec::new();
        let dropped = |what: &str| {
            format!(
                "hook {}: {what} does not apply to {} hooks; ignored",
                self.name,
                self.spec.event.name()
            )
        };
        let args = match (updated_input, data) {
            (None, _) => None,
            (Some(input), EventData::PreToolUse { call }) => match updated_args(call, input) {
                Ok(args) => Some(args),
                Err(problem) => {
                    return self.no_answer(
                        format!("its answer cannot be used: {problem}"),
                        "",
                        data,
                    )
                }
            },
            (Some(_), _) => {
                warnings.push(dropped("updated_input"));
                None
            }
        };
        let items = match (context, data) {
            (None, _) => None,
            (
                Some(_),
                EventData::Stop { .. }
                | EventData::PreCompact { .. }
                | EventData::SessionEnd { .. }
                | EventData::Notification { .. },
            ) => {
                warnings.push(dropped("additional_context"));
                None
            }
            (Some(context), _) => Some(vec![HistoryItem::text(
                Role::User,
                format!("Context from a {} hook:\n{context}", self.spec.event.name()),
            )]),
        };
        let mut plan = match (args, items) {
            (Some(args), items) => {
                if items.is_some() {
                    warnings.push(format!(
                        "hook {}: additional_context is dropped when updated_input is given",
                        self.name
                    ));
                }
                Plan::new("update_input", Decision::ReplaceArgs(args))
            }
            (None, Some(items)) => Plan::new("context", Decision::AddItems(items)),
            (None, None) => Plan::new("continue", Decision::Continue),
        };
        plan.warnings = warnings;
        plan
    }

    /// Ask the session's approver about `call` for a PreToolUse `ask`.
    /// Without anyone to ask the answer is a recorded no, at once.
    async fn ask(
        &self,
        cx: &IterationContext<'_>,
        call: &ToolCall,
        question: &str,
    ) -> Result<(), String> {
        let request = approval::request(call, format!("a PreToolUse hook asks: {question}"));
        let report = |status: ApprovalStatus, reason: &str| {
            cx.sink.emit(AgentEvent::Approval {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                summary: request.summary.clone(),
                status,
                reason: reason.to_string(),
            });
        };
        report(ApprovalStatus::Asked, &request.reason);
        let interactive = cx.approver.is_interactive();
        if interactive {
            cx.notify(&notify::Notice::Permission {
                tool: call.name.clone(),
            });
        }
        let decision = cx.approver.ask(&request).await;
        let why = match (&decision, interactive) {
            (_, false) => "no one to ask in a non-interactive run: answered no",
            (ApprovalDecision::Approve | ApprovalDecision::ApproveForSession, _) => {
                "approved by the user"
            }
            _ => "denied by the user",
        };
        report(approval::status_of(&decision), why);
        match decision {
            ApprovalDecision::Approve | ApprovalDecision::ApproveForSession => Ok(()),
            no => Err(approval::denial_output(&no, !interactive)),
        }
    }
}

/// The variables a hook gets besides cogni's own environment.
fn hook_env(cwd: &std::path::Path, session_id: &str) -> [(&'static str, String); 3] {
    let dir = cwd.to_string_lossy().into_owned();
    [
        ("COGNI_PROJECT_DIR", dir.clone()),
        ("CLAUDE_PROJECT_DIR", dir),
        ("COGNI_SESSION_ID", session_id.to_string()),
    ]
}

/// A hook's stderr as the end of a warning: `: STDERR`, or nothing.
fn said(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

/// The arguments a call runs with after a hook's `updated_input`: an
/// object for a call with JSON arguments, a string for a freeform one.
fn updated_args(call: &ToolCall, input: serde_json::Value) -> Result<String, String> {
    match (contract::tool_input(call), input) {
        (serde_json::Value::String(_), serde_json::Value::String(text)) => Ok(text),
        (serde_json::Value::String(_), _) => Err(format!(
            "updated_input for `{}` must be a string (the call's raw input)",
            call.name
        )),
        (_, input @ serde_json::Value::Object(_)) => Ok(input.to_string()),
        _ => Err(format!(
            "updated_input for `{}` must be a JSON object (the call's arguments)",
            call.name
        )),
    }
}

impl Effect for Hook {
    fn name(&self) -> &str {
        &self.name
    }

    fn phases(&self) -> &'static [Phase] {
        phases(self.spec.event)
    }

    fn guards(&self) -> bool {
        true
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        Box::pin(async move {
            let Some(mut data) = self.data(&cx.point, cx.agent) else {
                return Ok(Decision::Continue.into());
            };
            if !self.matches(&data) {
                return Ok(Decision::Continue.into());
            }
            if let EventData::Stop { stop_hook_active }
            | EventData::SubagentStop {
                stop_hook_active, ..
            } = &mut data
            {
                *stop_hook_active = self.kept_going.load(Ordering::Relaxed) == cx.turn + 1;
            }
            let session = contract::Session {
                id: cx.session_id,
                transcript_path: cx.transcript_path,
                cwd: cx.cwd,
            };
            let input = contract::input(session, &data);
            let env = hook_env(cx.cwd, cx.session_id);
            let started = std::time::Instant::now();
            let ran = command::run(
                &self.spec.command,
                &input,
                cx.cwd,
                &env,
                self.spec.timeout,
                &cx.ctx.sandbox_policy.pins,
            )
            .await;
            let (verdict, exit_code, took) = match ran {
                Ok(ran) => (
                    contract::verdict(self.spec.event, &ran, self.spec.timeout),
                    ran.exit_code,
                    ran.duration,
                ),
                Err(e) => (
                    Verdict::NoAnswer {
                        status: format!("could not start: {e}"),
                        stderr: String::new(),
                    },
                    None,
                    started.elapsed(),
                ),
            };
            let plan = self.plan(verdict, &data);
            self.report(cx, &plan, exit_code, took);
            let mut decision = plan.decision;
            if let (Some(question), EventData::PreToolUse { call }) = (&plan.ask, data) {
                if let Err(no) = self.ask(cx, call, question).await {
                    decision = Decision::Block(no);
                }
            }
            if matches!(
                data,
                EventData::Stop { .. } | EventData::SubagentStop { .. }
            ) && matches!(decision, Decision::AddItems(_))
            {
                self.kept_going.store(cx.turn + 1, Ordering::Relaxed);
            }
            Ok(decision.into())
        })
    }
}

impl Hook {
    /// The `hook` event of a run, then its warnings.
    fn report(
        &self,
        cx: &IterationContext<'_>,
        plan: &Plan,
        exit_code: Option<i32>,
        took: Duration,
    ) {
        tracing::info!(
            hook = %self.name,
            command = %self.spec.command,
            decision = plan.label,
            ?exit_code,
            ?took,
            "hook ran"
        );
        cx.sink.emit(AgentEvent::Hook {
            event: self.spec.event.name().to_string(),
            hook: self.name.clone(),
            command: self.spec.command.clone(),
            decision: plan.label.to_string(),
            exit_code,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            reason: plan.reason.clone(),
        });
        for message in &plan.warnings {
            cx.sink.emit(AgentEvent::Warning {
                message: message.clone(),
            });
        }
    }
}
