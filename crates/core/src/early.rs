//! Read-only calls that start while the model's response still streams.
//!
//! A call starts as soon as its item is complete in the stream when
//! dispatch ([`Session::run_tools`]) would run it at once, beside its
//! neighbours, without asking anyone:
//!
//! - the session runs read-only calls concurrently (the model family
//!   supports parallel calls and `features.parallel_tools` is on), and
//!   `features.early_tools` is on;
//! - its tool is registered and read-only (`ToolSpec::read_only`), and is
//!   not one of [`KEEPS_ORDER`], whose results are session state the model
//!   must see;
//! - the approval policy runs it without a question;
//! - every call before it in the response started early as well: they are
//!   the first batch of read-only calls dispatch would run together (a
//!   call after a write waits for the write, as always); and fewer than
//!   [`MAX_CONCURRENT_TOOLS`] of them run.
//!
//! Its `before_tool` effects run when it arrives, so they run in call
//! order, as dispatch runs them for a batch; a blocked call is answered and
//! not run. The tool runs on a task of its own. Once the response is
//! complete, dispatch takes the prepared calls over, waits for them with
//! the rest of their batch and runs the `after_tool` effects in call order:
//! effects see the same sequence and history gets the same items as
//! without early start.
//!
//! When the provider restarts the response (a retry in the middle of the
//! stream), the calls started so far are parked and their items end
//! (failed, "discarded"). The restarted response's call at the same position, if it is
//! the same call (name and arguments), adopts the parked one: its
//! decisions and its running task, under the new call's id; it does not
//! run twice. Parked calls nobody adopts are aborted and not counted. When
//! the response fails or the turn is stopped before dispatch takes over,
//! [`Session::cancel_early`] aborts what runs and answers every call that
//! started.

use super::approval::{self, call_key, Precheck};
use super::dispatch::{
    before_tool, started_event, unfinished_event, Before, Prepared, MAX_CONCURRENT_TOOLS,
};
use super::effects::Point;
use super::outcome::AgentError;
use super::session::Session;
use super::turn::TurnRun;
use cogni_protocol::{ApprovalStatus, EventSink, ToolCall};
use cogni_tools::{ask_user, ToolRegistry, ToolResult};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// Read-only tools that never start early: what they return is the
/// session's state (a job's output since the last read, a stopped job, the
/// tools found), which a response that fails or restarts would lose, or
/// the user's answer to a question, which must not be asked while the
/// response still streams (nor twice when it restarts).
const KEEPS_ORDER: &[&str] = &["shell_output", "shell_kill", "search_tools", ask_user::NAME];

/// How the item of a call ends when the provider restarts its response.
const RESTARTED: &str = "Discarded: the model's response broke off and starts over; a call it sends again goes on without running twice";

/// How a call that started ends when an effect fails the turn first.
pub(super) const TURN_FAILED: &str =
    "Cancelled: the turn failed before this call's result was used.";

/// A call running on a task of its own; dropping it aborts the task.
pub(crate) struct Running {
    task: JoinHandle<(ToolResult, Duration)>,
    /// The approval decisions made for it (an auto-approval).
    pub(super) approvals: Vec<ApprovalStatus>,
}

impl Running {
    /// Its result and how long it ran, when it ends (a tool's panic goes
    /// on from here, as it would from the tool itself).
    pub(super) async fn result(&mut self) -> (ToolResult, Duration) {
        match (&mut self.task).await {
            Ok(done) => done,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // Only dropping it aborts the task.
            Err(_) => (ToolResult::error("the call was cancelled"), Duration::ZERO),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A call prepared while the response streamed.
pub(super) struct Entry {
    /// The call as the response sent it.
    pub(super) call: ToolCall,
    pub(super) before: Before,
}

/// The calls of one response that started (or were answered) early.
pub(crate) struct EarlyCalls {
    /// Early start applies to this session's responses.
    enabled: bool,
    /// Calls may still start early in this response (the first batch has
    /// not ended).
    open: bool,
    /// The response's first calls, in call order.
    entries: Vec<Entry>,
    /// Calls of an attempt the provider restarted, by position: the first
    /// is the candidate for the call at `entries.len()`.
    parked: VecDeque<Entry>,
    /// The tools the calls run with, shared by the response's tasks.
    registry: Option<Arc<ToolRegistry>>,
    /// The effects failed (the turn fails with it).
    error: Option<AgentError>,
}

impl EarlyCalls {
    pub(crate) fn new(enabled: bool) -> Self {
        EarlyCalls {
            enabled,
            open: enabled,
            entries: Vec::new(),
            parked: VecDeque::new(),
            registry: None,
            error: None,
        }
    }

    /// The provider restarts the response: what started is parked for the
    /// new attempt to adopt, and its items end (failed, "discarded").
    pub(crate) fn restart(&mut self, reason: &str, sink: &dyn EventSink) {
        let output = format!("{RESTARTED} ({reason})");
        for entry in &self.entries {
            if let Prepared::Started(call, _) = &entry.before.prepared {
                sink.emit(unfinished_event(call, &output));
            }
        }
        let mut parked: VecDeque<Entry> = self.entries.drain(..).collect();
        parked.append(&mut self.parked);
        self.parked = parked;
        self.open = self.enabled;
    }

    /// Abort the parked calls nobody adopted; they do not count as run.
    pub(crate) fn drop_parked(&mut self, run: &mut TurnRun) {
        for entry in self.parked.drain(..) {
            if matches!(entry.before.prepared, Prepared::Started(..)) {
                run.tool_calls = run.tool_calls.saturating_sub(1);
            }
        }
    }

    /// The error of an effect at an early call's `before_tool` (the turn
    /// fails with it).
    pub(super) fn failed(&mut self) -> Option<AgentError> {
        self.error.take()
    }

    /// The calls for dispatch, in call order.
    pub(super) fn take(mut self, run: &mut TurnRun) -> Vec<Entry> {
        self.drop_parked(run);
        std::mem::take(&mut self.entries)
    }

    fn running(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.before.prepared, Prepared::Started(..)))
            .count()
    }
}

impl Session {
    /// The early calls of the next response (`parallel`: dispatch runs
    /// read-only calls concurrently).
    pub(crate) fn early_calls(&self, parallel: bool) -> EarlyCalls {
        EarlyCalls::new(parallel && self.ctx.features.early_tools)
    }

    /// A call is complete in the stream: adopt a parked one like it, or
    /// start it when it qualifies, its `before_tool` effects first.
    /// `on_start` runs before a call's item starts (the text so far is
    /// completed first).
    pub(crate) async fn offer_early(
        &mut self,
        early: &mut EarlyCalls,
        call: &ToolCall,
        run: &mut TurnRun,
        sink: &dyn EventSink,
        on_start: &mut (dyn FnMut() + Send),
    ) {
        if !early.open {
            early.drop_parked(run);
            return;
        }
        if let Some(mut parked) = early.parked.pop_front() {
            if call_key(&parked.call) == call_key(call) {
                parked.call = call.clone();
                if let Prepared::Started(ran, _) = &mut parked.before.prepared {
                    ran.id = call.id.clone();
                    on_start();
                    sink.emit(started_event(ran));
                }
                early.open = !parked.before.stop.as_ref().is_some_and(|s| s.now);
                early.entries.push(parked);
                return;
            }
            early.parked.push_front(parked);
            early.drop_parked(run);
        }
        let Some(auto_approved) = self.starts_early(call) else {
            early.open = false;
            return;
        };
        if early.running() >= MAX_CONCURRENT_TOOLS {
            early.open = false;
            return;
        }
        let applied = match self.at_point(Point::BeforeTool { call }, run, sink).await {
            Ok(applied) => applied,
            Err(error) => {
                early.error = Some(error);
                early.open = false;
                return;
            }
        };
        let mut before = before_tool(call, applied, run);
        early.open = !before.stop.as_ref().is_some_and(|s| s.now);
        before.prepared = match before.prepared {
            Prepared::Run(ready) => {
                on_start();
                self.start_early(ready, auto_approved, early, sink)
            }
            answered => answered,
        };
        early.entries.push(Entry {
            call: call.clone(),
            before,
        });
    }

    /// Whether `call` qualifies (`Some`), and whether the policy reports
    /// it as approved without asking.
    fn starts_early(&self, call: &ToolCall) -> Option<bool> {
        let registry = &self.toolset.registry;
        if !registry.is_read_only(&call.name) || KEEPS_ORDER.contains(&call.name.as_str()) {
            return None;
        }
        match approval::precheck(
            self.ctx.approval_policy,
            call,
            true,
            &self.ctx.sandbox_policy.shell,
        ) {
            Precheck::Run => Some(false),
            Precheck::AutoApprove => Some(true),
            Precheck::Ask { .. } => None,
        }
    }

    /// Start `call` on a task of its own, as dispatch would run it.
    fn start_early(
        &self,
        call: ToolCall,
        auto_approved: bool,
        early: &mut EarlyCalls,
        sink: &dyn EventSink,
    ) -> Prepared {
        sink.emit(started_event(&call));
        let mut approvals = Vec::new();
        if auto_approved {
            self.report(
                &call,
                ApprovalStatus::AutoApproved,
                "allowed by the approval policy",
                sink,
                &mut approvals,
            );
        }
        let registry = early
            .registry
            .get_or_insert_with(|| Arc::new(self.toolset.registry.clone()))
            .clone();
        let ctx = self.toolset.context(&self.ctx);
        let running = call.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let result = registry.dispatch(&running, &ctx).await;
            (result, started.elapsed())
        });
        Prepared::Started(call, Running { task, approvals })
    }

    /// The response will not be dispatched (it failed, was cut off, or the
    /// turn stopped): abort what runs, and answer each call that started
    /// with `output` (recorded as run this turn, as dispatch records a call
    /// a stop kept from finishing).
    pub(crate) fn cancel_early(
        &self,
        mut early: EarlyCalls,
        output: &str,
        run: &mut TurnRun,
        sink: &dyn EventSink,
    ) {
        early.drop_parked(run);
        for entry in early.entries.drain(..) {
            if let Prepared::Started(call, running) = entry.before.prepared {
                drop(running);
                run.records.push(self.unfinished(&call, output, sink));
            }
        }
    }
}
