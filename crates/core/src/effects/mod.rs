//! Effects: behaviour that plugs into the turn loop at named points
//! without the loop knowing about it. Compaction, every budget, the
//! repeated-failure rule, output-schema validation, guardrails and hooks
//! are effects; so are the strategies of later issues (plans, reflection,
//! test runs).
//!
//! An effect sees one [`IterationContext`] per point (never the
//! `Session`): the phase and what happened there, the history (read only),
//! the model client, usage and budgets. It answers with a [`Decision`]:
//! go on, add items for the next request, replace a tool call's arguments
//! or output, block a call, edit history through a context-stack
//! operation, or stop the turn with a reason that becomes its outcome.
//! Only the loop changes history, applying decisions in registration
//! order, so each effect sees what the ones before it did. An effect that
//! fails or panics is reported, and then (`Effects::failed`): a guard
//! ([`Effect::guards`]) that cannot give its answer blocks; an advisory
//! effect ([`Effect::advisory`]) is only a warning; any other ends the
//! turn with `effect_failed`, naming it.

pub mod budget;
pub mod command;
pub(crate) mod compact;
pub(crate) mod config;
pub(crate) mod guardrail;
pub(crate) mod hooks;
pub(crate) mod output;
pub(crate) mod plan;
pub mod reflect;
pub(crate) mod repeat;
pub mod test_run;

use super::outcome::ToolCallRecord;
use super::turn_context::TurnContext;
use cogni_protocol::{
    Approver, EventSink, HistoryItem, Limit, StopReason, ToolCall, TurnOutcome, Usage,
};
use cogni_provider::{Provider, ProviderError};
use cogni_sandbox::Workspace;
use cogni_tools::ToolResult;
use futures::future::BoxFuture;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Where in a session an effect runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Once, before the session's first turn.
    SessionStart,
    /// A user prompt arrived, before it joins the history.
    TurnStart,
    /// Before each model request.
    BeforeModel,
    /// After each model reply (or a failed request).
    AfterModel,
    /// Before each tool call runs.
    BeforeTool,
    /// After each tool call ran.
    AfterTool,
    /// A step ended: a reply's tool calls all ran and entered history
    /// (reflection critiques the step here).
    StepEnd,
    /// Before history is compacted.
    BeforeCompact,
    /// The model answered without asking for tools: the turn is about to
    /// end (an effect may keep it going).
    TurnEnd,
    /// The session is over.
    SessionEnd,
}

impl Phase {
    /// The phase's name in `snake_case` (`before_tool`, `turn_end`, ...),
    /// as configuration, events and error messages spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::SessionStart => "session_start",
            Phase::TurnStart => "turn_start",
            Phase::BeforeModel => "before_model",
            Phase::AfterModel => "after_model",
            Phase::BeforeTool => "before_tool",
            Phase::AfterTool => "after_tool",
            Phase::StepEnd => "step_end",
            Phase::BeforeCompact => "before_compact",
            Phase::TurnEnd => "turn_end",
            Phase::SessionEnd => "session_end",
        }
    }
}

/// What happened at the point an effect is called, with its data.
#[derive(Debug, Clone, Copy)]
pub enum Point<'a> {
    /// The session's first turn is about to start ([`Phase::SessionStart`]).
    SessionStart {
        /// The session continues a saved one (`--resume`, `/resume`)
        /// rather than starting empty.
        resumed: bool,
    },
    /// A user prompt arrived ([`Phase::TurnStart`]).
    TurnStart {
        /// The prompt as the user wrote it, before it joins history.
        prompt: &'a str,
    },
    /// A model request is about to be made ([`Phase::BeforeModel`]); the
    /// request is built from [`IterationContext::history`] after the
    /// decisions of this point are applied.
    BeforeModel,
    /// The model's reply arrived ([`Phase::AfterModel`]).
    AfterModel {
        /// The whole reply: its text, tool calls, usage and stop reason.
        reply: &'a Reply,
    },
    /// The request failed (a context overflow, say). An effect that edits
    /// history here has the request made again. Runs with the effects of
    /// [`Phase::AfterModel`].
    ModelFailed {
        /// Why the provider failed the request.
        error: &'a ProviderError,
    },
    /// A tool call of the reply is about to run ([`Phase::BeforeTool`]);
    /// a [`Decision::Block`] or [`Decision::ReplaceArgs`] applies to it.
    BeforeTool {
        /// The call as the model sent it (or as an earlier effect's
        /// [`Decision::ReplaceArgs`] left it).
        call: &'a ToolCall,
    },
    /// A tool call ran ([`Phase::AfterTool`]); a
    /// [`Decision::ReplaceOutput`] changes what the model sees of it.
    AfterTool {
        /// The call that ran.
        call: &'a ToolCall,
        /// Its result, before it enters history.
        result: &'a ToolResult,
    },
    /// A step ended: the reply, and its calls as they ran.
    StepEnd {
        /// The reply that opened the step.
        reply: &'a Reply,
        /// Each of its calls as it ran (or was blocked), in order.
        calls: &'a [ToolCallRecord],
    },
    /// Compaction is about to run ([`Phase::BeforeCompact`]).
    BeforeCompact {
        /// The last request did not fit the context window (the
        /// provider's context overflow), rather than history passing the
        /// compaction limit.
        overflow: bool,
        /// The user asked for it (`/compact`); `PreCompact` hooks see the
        /// trigger `manual` rather than `auto`.
        manual: bool,
    },
    /// The model answered without asking for tools ([`Phase::TurnEnd`]).
    TurnEnd {
        /// The model's final answer for now (the turn may still go on if
        /// an effect adds items).
        text: &'a str,
    },
    /// The session is over ([`Phase::SessionEnd`]).
    SessionEnd {
        /// Why it ended.
        reason: EndReason,
    },
}

/// Why a session ends (the `SessionEnd` point; `reason` of SessionEnd hooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// `cogni run` or a task attempt finished its turn.
    Done,
    /// The turn failed (a provider error, an internal error).
    Error,
    /// The turn was interrupted (Ctrl-C, a signal to `cogni run`).
    Interrupted,
    /// The user left the REPL (`/exit`, Ctrl-D).
    Exit,
    /// SIGTERM or SIGHUP ended the REPL.
    Signal,
    /// The REPL switched to another session (`/resume`).
    Switched,
}

impl EndReason {
    /// The reason as `SessionEnd` hooks get it in `reason` (`done`,
    /// `exit`, `signal`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Done => "done",
            EndReason::Error => "error",
            EndReason::Interrupted => "interrupted",
            EndReason::Exit => "exit",
            EndReason::Signal => "signal",
            EndReason::Switched => "switched",
        }
    }
}

impl Point<'_> {
    /// The phase this point belongs to ([`Point::ModelFailed`] is
    /// [`Phase::AfterModel`]).
    pub fn phase(&self) -> Phase {
        match self {
            Point::SessionStart { .. } => Phase::SessionStart,
            Point::TurnStart { .. } => Phase::TurnStart,
            Point::BeforeModel => Phase::BeforeModel,
            Point::AfterModel { .. } | Point::ModelFailed { .. } => Phase::AfterModel,
            Point::BeforeTool { .. } => Phase::BeforeTool,
            Point::AfterTool { .. } => Phase::AfterTool,
            Point::StepEnd { .. } => Phase::StepEnd,
            Point::BeforeCompact { .. } => Phase::BeforeCompact,
            Point::TurnEnd { .. } => Phase::TurnEnd,
            Point::SessionEnd { .. } => Phase::SessionEnd,
        }
    }
}

/// A model reply, as effects see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The assistant text of the reply (may be empty when it only calls
    /// tools).
    pub text: String,
    /// The tool calls it asks for, in the order the model sent them.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens the request and its reply took, as the provider reported
    /// them.
    pub usage: Usage,
    /// Why the model stopped (`None` when the stream did not say).
    pub stop_reason: Option<StopReason>,
}

/// Usage and counts so far, for budgets.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// This turn's tokens.
    pub turn_usage: Usage,
    /// This turn's cost, when the model has a price.
    pub turn_cost: Option<f64>,
    /// Tool calls run (or answered) this turn.
    pub tool_calls: u32,
    /// Since the turn started.
    pub elapsed: Duration,
}

/// Tokens in the conversation, for compaction and context strategies.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    /// The conversation's size as of the last model response (provider
    /// usage, or an estimate when history changed since).
    pub context: u64,
    /// What the provider counts per locally estimated token (at least 1).
    pub scale: f64,
}

/// What an effect sees at one point: never the session itself.
pub struct IterationContext<'a> {
    /// Where the effect is called, with what happened there.
    pub point: Point<'a>,
    /// The turn of the session (1-based).
    pub turn: u32,
    /// Model requests made in this turn so far (0 at the first
    /// `before_model`: the request about to be made is not counted).
    pub iteration: u32,
    /// The agent running the loop (`main` for the top-level one).
    pub agent: &'a str,
    /// The session's id (the name of its session file; hooks get it as
    /// `session_id`).
    pub session_id: &'a str,
    /// The session's working directory (where commands of effects run).
    pub cwd: &'a Path,
    /// The session's pinned cwd and writable roots (commands an effect
    /// runs in the sandbox are confined to them).
    pub workspace: &'a Arc<Workspace>,
    /// The session's model, tools, instructions and limits.
    pub ctx: &'a TurnContext,
    /// The conversation: read it here, change it through a [`Decision`].
    pub history: &'a [HistoryItem],
    /// The model client, for effects that ask the model (compaction,
    /// reflection). What they spend comes back in [`Decision`]s' usage.
    pub provider: &'a Arc<dyn Provider>,
    /// What this turn has spent so far (the budgets read it).
    pub spent: Spent,
    /// The conversation's size in tokens (compaction reads it).
    pub tokens: Tokens,
    /// For an effect's own events (warnings, plans, reflections).
    pub sink: &'a dyn EventSink,
    /// Who answers approval questions (a hook's `ask`).
    pub approver: &'a dyn Approver,
    /// The session file, when the session is saved (hooks get its path).
    pub transcript_path: Option<&'a Path>,
    /// The Notification hooks, told when a hook's `ask` asks the user.
    pub(crate) notifications: &'a hooks::notify::Notifications,
}

impl IterationContext<'_> {
    /// The phase of [`IterationContext::point`].
    pub fn phase(&self) -> Phase {
        self.point.phase()
    }
}

/// How a turn ends when an effect stops it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// The turn's outcome ([`TurnResult::outcome`](crate::TurnResult::outcome)).
    pub outcome: TurnOutcome,
    /// Shown to the user (a warning) and recorded with the outcome.
    pub reason: String,
    /// The budget that ran out, for [`TurnOutcome::BudgetExceeded`].
    pub limit: Option<Limit>,
    /// What each call that does not run (or finish) because of the stop
    /// is answered with.
    pub call_output: String,
    /// `false`: the calls of the reply being handled still run, then the
    /// turn ends; `true`: nothing more runs.
    pub now: bool,
}

impl Stop {
    /// A stop by `effect` for `reason`, at once.
    pub fn by(effect: &str, outcome: TurnOutcome, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Stop {
            outcome,
            call_output: format!("Not run: stopped by {effect}: {reason}"),
            reason,
            limit: None,
            now: true,
        }
    }

    /// A budget ran out.
    pub fn budget(limit: Limit) -> Self {
        Stop {
            outcome: TurnOutcome::BudgetExceeded,
            reason: format!("stopped: the turn's {} is used up", limit.describe()),
            limit: Some(limit),
            call_output: format!(
                "Stopped: the turn's {} ran out before this call ran or finished.",
                limit.describe()
            ),
            now: true,
        }
    }
}

/// A context-stack operation on history, applied by the loop (which keeps
/// every call paired with its output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryEdit {
    /// Compact history with the session's context strategy (`overflow`:
    /// the last request did not fit). Runs the `before_compact` effects
    /// first.
    Compact {
        /// The last request did not fit (the provider's context
        /// overflow): compaction leaves at most half of that history.
        overflow: bool,
    },
    /// Remove the newest `n` items (a call goes with its output).
    Pop(usize),
}

/// An effect's answer at one point.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Go on.
    Continue,
    /// Items for the model: before a request, into it; after a reply or at
    /// the turn's end, for the next request (which keeps the turn going).
    AddItems(Vec<HistoryItem>),
    /// Items for history that do not by themselves ask for another
    /// request: at the turn's end they are kept and the turn still ends
    /// (a reflection on the final answer); elsewhere like `AddItems`.
    Note(Vec<HistoryItem>),
    /// Before a tool call: run it with these arguments instead.
    ReplaceArgs(String),
    /// Before a tool call: do not run it; `reason` is its output.
    Block(String),
    /// After a tool call: the model sees this result instead.
    ReplaceOutput(ToolResult),
    /// Change history (compaction, the context stack).
    Edit(HistoryEdit),
    /// End the turn.
    Stop(Stop),
}

/// An effect's result, with what it spent asking the model.
#[derive(Debug)]
pub struct Outcome {
    /// What the effect decided.
    pub decision: Decision,
    /// Model requests the effect made (counted like any request).
    pub usage: Vec<Usage>,
}

impl From<Decision> for Outcome {
    fn from(decision: Decision) -> Self {
        Outcome {
            decision,
            usage: Vec::new(),
        }
    }
}

/// Why an effect could not decide (reported; the loop goes on, or, for a
/// guard, blocks).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct EffectError(
    /// What went wrong, for the warning event and the turn's reason.
    pub String,
);

/// One effect.
pub trait Effect: Send + Sync {
    /// For events and errors: the config kind (`compact`, `cost_limit`, ...)
    /// or a hook's name.
    fn name(&self) -> &str;

    /// The phases it runs at; it is not called at others.
    fn phases(&self) -> &'static [Phase];

    /// Decide at `cx.point` (one of [`Effect::phases`]). An effect that
    /// asks the model (through `cx.provider`) returns what it spent in the
    /// [`Outcome`]. An `Err` (or a panic) is reported as a warning and then
    /// handled as [`Effect::guards`] and [`Effect::advisory`] say.
    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>>;

    /// A time budget from the turn's start: the loop stops whatever runs
    /// when it passes (a running tool or model stream included).
    fn deadline(&self) -> Option<Duration> {
        None
    }

    /// The budget it enforces, if it is one (carved for delegated agents).
    fn budget(&self) -> Option<budget::Budget> {
        None
    }

    /// Whether it is a guard (a guardrail, a hook, the output check): what
    /// it is asked may only go on when it answers, so its failure blocks
    /// (`Effects::failed`).
    fn guards(&self) -> bool {
        false
    }

    /// Whether its failure is only a warning and the loop goes on (a
    /// critique or a plan event that could not be made). Otherwise a
    /// failure ends the turn (`Effects::failed`).
    fn advisory(&self) -> bool {
        false
    }
}

/// An effect written as a closure (seed 003's `EffectFunc`): called at
/// `phases` with the iteration's context, it answers with a [`Decision`].
/// Made by [`effect_fn`].
pub struct EffectFn<F> {
    name: String,
    phases: &'static [Phase],
    f: F,
}

/// An effect from a closure: `effect_fn("no-rm", &[Phase::BeforeTool],
/// |cx| ...)`. It runs at `phases` only; its name is what events and
/// errors call it.
pub fn effect_fn<F>(name: impl Into<String>, phases: &'static [Phase], f: F) -> Box<dyn Effect>
where
    F: FnMut(&IterationContext<'_>) -> Decision + Send + Sync + 'static,
{
    Box::new(EffectFn {
        name: name.into(),
        phases,
        f,
    })
}

impl<F> Effect for EffectFn<F>
where
    F: FnMut(&IterationContext<'_>) -> Decision + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn phases(&self) -> &'static [Phase] {
        self.phases
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let decision = (self.f)(cx);
        Box::pin(async move { Ok(decision.into()) })
    }
}

/// The effects of a session, in registration order: the built-in ones,
/// those config names and the hooks, then the ones the program embedding
/// the engine added ([`Session::add_effect`](crate::Session::add_effect)),
/// which a reconfiguration keeps.
#[derive(Default)]
pub(crate) struct Effects {
    list: Vec<Box<dyn Effect>>,
    added: Vec<Box<dyn Effect>>,
}

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.all().map(|e| e.name()))
            .finish()
    }
}

impl Effects {
    fn all(&self) -> impl Iterator<Item = &Box<dyn Effect>> {
        self.list.iter().chain(&self.added)
    }

    fn get(&self, i: usize) -> &dyn Effect {
        match i.checked_sub(self.list.len()) {
            None => &*self.list[i],
            Some(j) => &*self.added[j],
        }
    }

    fn get_mut(&mut self, i: usize) -> &mut Box<dyn Effect> {
        match i.checked_sub(self.list.len()) {
            None => &mut self.list[i],
            Some(j) => &mut self.added[j],
        }
    }

    /// Add an effect of the embedding program's after all the others; a
    /// reconfiguration keeps it (`Effects::keep_added`).
    pub fn add(&mut self, effect: Box<dyn Effect>) {
        self.added.push(effect);
    }

    /// Take over the effects `from` had added (a reconfigured session's
    /// fresh effects get the old ones').
    pub(crate) fn keep_added(&mut self, from: &mut Effects) {
        self.added = std::mem::take(&mut from.added);
    }

    /// Add a built-in or configured effect at the end of those (before
    /// the embedding program's).
    pub fn push(&mut self, effect: Box<dyn Effect>) {
        self.list.push(effect);
    }

    /// Replace the effects named `name` with `effect` (at the first one's
    /// place), or add it at the end.
    pub fn replace(&mut self, effect: Box<dyn Effect>) {
        let name = effect.name().to_string();
        match self.list.iter().position(|e| e.name() == name) {
            Some(at) => {
                self.list[at] = effect;
                let mut i = at + 1;
                while i < self.list.len() {
                    if self.list[i].name() == name {
                        self.list.remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
            None => self.list.push(effect),
        }
    }

    /// Put `effect` before all others.
    pub fn insert_first(&mut self, effect: Box<dyn Effect>) {
        self.insert(0, effect);
    }

    /// Put `effect` at position `at` (at most the end).
    pub fn insert(&mut self, at: usize, effect: Box<dyn Effect>) {
        self.list.insert(at.min(self.list.len()), effect);
    }

    /// Remove every effect named `name`.
    pub fn remove(&mut self, name: &str) {
        self.list.retain(|e| e.name() != name);
    }

    /// The name of effect `i`.
    pub fn name(&self, i: usize) -> &str {
        self.get(i).name()
    }

    /// Every effect's name, in the order they run.
    pub fn names(&self) -> Vec<&str> {
        self.all().map(|e| e.name()).collect()
    }

    /// How many effects there are, the embedding program's included.
    pub fn len(&self) -> usize {
        self.list.len() + self.added.len()
    }

    /// Indexes of the effects that run at `phase`, in order.
    pub(crate) fn at(&self, phase: Phase) -> Vec<usize> {
        self.all()
            .enumerate()
            .filter(|(_, e)| e.phases().contains(&phase))
            .map(|(i, _)| i)
            .collect()
    }

    /// True when some effect runs at `phase`.
    pub(crate) fn wants(&self, phase: Phase) -> bool {
        self.all().any(|e| e.phases().contains(&phase))
    }

    /// The budgets in force, in order.
    pub(crate) fn budgets(&self) -> Vec<budget::Budget> {
        self.all().filter_map(|e| e.budget()).collect()
    }

    /// The earliest deadline any effect sets.
    pub(crate) fn deadline(&self) -> Option<Duration> {
        self.all().filter_map(|e| e.deadline()).min()
    }

    /// What the failure of effect `i` (a message from [`Effects::eval`]) at
    /// `phase` decides, besides being reported. An advisory effect's:
    /// nothing. A guard's: the call is blocked at `before_tool`, and the
    /// turn stops (`blocked`) at the other points of a turn. Any other
    /// effect's: the turn stops (`effect_failed`, naming the effect). At
    /// `session_start`, `before_compact` and `session_end` there is no
    /// turn to stop.
    pub(crate) fn failed(&self, i: usize, phase: Phase, message: &str) -> Option<Decision> {
        let effect = self.get(i);
        if effect.advisory() && !effect.guards() {
            return None;
        }
        let (outcome, reason) = if effect.guards() {
            (
                TurnOutcome::Blocked,
                format!("{message}; a guard that cannot give its answer blocks"),
            )
        } else {
            (
                TurnOutcome::EffectFailed,
                format!("{message}; the turn ends, as it does when an effect that is not advisory fails"),
            )
        };
        match phase {
            Phase::BeforeTool if effect.guards() => {
                Some(Decision::Block(format!("Blocked: {reason}")))
            }
            Phase::SessionStart | Phase::BeforeCompact | Phase::SessionEnd => None,
            Phase::BeforeTool
            | Phase::TurnStart
            | Phase::BeforeModel
            | Phase::AfterModel
            | Phase::AfterTool
            | Phase::StepEnd
            | Phase::TurnEnd => Some(Decision::Stop(Stop::by(effect.name(), outcome, reason))),
        }
    }

    /// Run effect `i` on `cx`. A failure or a panic becomes `Err` with a
    /// message naming the effect.
    pub(crate) async fn eval(
        &mut self,
        i: usize,
        cx: &IterationContext<'_>,
    ) -> Result<Outcome, String> {
        use futures::FutureExt;
        let effect = self.get_mut(i);
        let name = effect.name().to_string();
        let phase = cx.phase().as_str();
        match std::panic::AssertUnwindSafe(effect.eval(cx))
            .catch_unwind()
            .await
        {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(e)) => Err(format!("effect `{name}` failed at {phase}: {e}")),
            Err(panic) => Err(format!(
                "effect `{name}` panicked at {phase}: {}",
                panic_message(&*panic)
            )),
        }
    }
}

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}
