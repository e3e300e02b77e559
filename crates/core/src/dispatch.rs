//! Running the tool calls of one response: the `before_tool` and
//! `after_tool` effects, the approval gate, concurrency for read-only
//! calls, the retry without the sandbox, and one record per call in call
//! order. Calls that started while the response streamed
//! ([`super::early`]) are taken over here.

use super::approval::{self, Precheck};
use super::delegate::is_delegation_tool;
use super::early::{EarlyCalls, Running, TURN_FAILED};
use super::effects::hooks::notify::Notice;
use super::effects::{Point, Stop};
use super::limits::Watch;
use super::outcome::{AgentError, ToolCallRecord};
use super::session::Session;
use super::turn::{Applied, Ended, TurnRun};
use cogni_protocol::{
    AgentEvent, ApprovalDecision, ApprovalStatus, EventSink, HistoryItem, Item, SandboxMode,
    ToolCall, ToolStatus,
};
use cogni_tools::fs::CommitGate;
use cogni_tools::{ask_user, ToolContext, ToolResult};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// Calls that may run at once when a response holds several read-only calls.
pub(super) const MAX_CONCURRENT_TOOLS: usize = 8;

/// One call's result and the approval decisions made for it.
struct CallOutcome {
    result: ToolResult,
    duration: Duration,
    approvals: Vec<ApprovalStatus>,
}

/// A call of the batch being prepared: what runs, or its answer.
pub(super) enum Prepared {
    /// Run this call (its arguments as the effects left them).
    Run(ToolCall),
    /// This call already runs: it started while the response streamed.
    Started(ToolCall, Running),
    /// Answered without running (blocked, or stopped).
    Answered(ToolResult),
}

/// What the `before_tool` effects decided for one call.
pub(super) struct Before {
    pub(super) prepared: Prepared,
    /// Items they added for the next request.
    pub(super) items: Vec<HistoryItem>,
    /// A stop they asked for (the call is answered with its output).
    pub(super) stop: Option<Stop>,
}

/// The `before_tool` effects' decisions for `call`, as a call to run (counted
/// as run this turn) or its answer.
pub(super) fn before_tool(call: &ToolCall, applied: Applied, run: &mut TurnRun) -> Before {
    let prepared = if let Some(stop) = &applied.stop {
        Prepared::Answered(ToolResult::error(stop.call_output.clone()))
    } else if let Some(reason) = applied.block {
        Prepared::Answered(ToolResult::error(reason))
    } else {
        run.tool_calls += 1;
        Prepared::Run(match applied.args {
            Some(arguments) => ToolCall {
                arguments,
                ..call.clone()
            },
            None => call.clone(),
        })
    };
    Before {
        prepared,
        items: applied.items,
        stop: applied.stop,
    }
}

/// The `item.completed` event of a call that did not run or finish:
/// failed, with `output`.
pub(super) fn unfinished_event(call: &ToolCall, output: &str) -> AgentEvent {
    AgentEvent::ItemCompleted {
        item: Item::ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            status: ToolStatus::Failed,
            output: Some(output.to_string()),
            exit_code: None,
            duration_ms: Some(0),
            diff: None,
        },
    }
}

/// The `item.started` event of a call that starts.
pub(super) fn started_event(call: &ToolCall) -> AgentEvent {
    AgentEvent::ItemStarted {
        item: Item::ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            status: ToolStatus::InProgress,
            output: None,
            exit_code: None,
            duration_ms: None,
            diff: None,
        },
    }
}

impl Session {
    /// Run every call and return one record per call, in call order. With
    /// `parallel`, consecutive read-only calls run concurrently; calls that
    /// may change state run one at a time, in order. Before each call the
    /// `before_tool` effects may change its arguments, block it (its output
    /// is their reason) or stop the turn (it and the rest are answered with
    /// the stop's output); after it, the `after_tool` effects may replace
    /// its output. When the turn is interrupted or its time runs out,
    /// running calls are dropped (their process groups killed) and every
    /// call without a result gets the halt's output; a file change that is
    /// being committed is finished instead and reported as it is (see
    /// `tools::fs::CommitGate`), so the model is never told a change did
    /// not happen when it did. `early` holds the first calls when they
    /// started while the response streamed: their `before_tool` effects
    /// ran then, in the same order, and they are waited for here like the
    /// rest of their batch.
    pub(crate) async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        parallel: bool,
        mut early: EarlyCalls,
        run: &mut TurnRun,
        watch: &Watch,
        sink: &dyn EventSink,
    ) -> Result<(Vec<ToolCallRecord>, Option<Ended>), AgentError> {
        // Nothing the turn's calls change may go into the snapshot before
        // it (the calls started early only read).
        self.settle_checkpoint(sink).await;
        if let Some(error) = early.failed() {
            self.cancel_early(early, TURN_FAILED, run, sink);
            return Err(error);
        }
        let mut started = early.take(run).into_iter();
        let mut records: Vec<ToolCallRecord> = Vec::with_capacity(calls.len());
        let mut ended: Option<Ended> = None;
        let mut i = 0;
        while i < calls.len() && ended.is_none() {
            let batch_len = if parallel {
                calls[i..]
                    .iter()
                    .take_while(|c| self.toolset.registry.is_read_only(&c.name))
                    .count()
                    .max(1)
            } else {
                1
            };
            let batch = &calls[i..i + batch_len];
            // Before: each call's effects, in order.
            let mut prepared = Vec::with_capacity(batch_len);
            for call in batch {
                if ended.is_some() {
                    break;
                }
                let before = match started.next() {
                    // Prepared (and started) while the response streamed.
                    Some(entry) => {
                        debug_assert_eq!(entry.call.id, call.id);
                        entry.before
                    }
                    None => match watch
                        .run(self.at_point(Point::BeforeTool { call }, run, sink))
                        .await
                    {
                        Ok(applied) => before_tool(call, applied?, run),
                        Err(halt) => {
                            ended = Some(Ended::Halt(halt));
                            break;
                        }
                    },
                };
                run.queued.extend(before.items);
                if let Some(stop) = before.stop {
                    if stop.now {
                        ended = Some(Ended::Stop(stop));
                    } else if run.stop_after_calls.is_none() {
                        run.stop_after_calls = Some(stop);
                    }
                }
                prepared.push(before.prepared);
            }
            if let Some(Ended::Halt(halt)) = &ended {
                // Interrupted while preparing: nothing of the batch runs.
                let output = halt.call_output();
                for (call, p) in batch.iter().zip(&prepared) {
                    records.push(match p {
                        Prepared::Answered(result) => self.finish_call(
                            call,
                            CallOutcome {
                                result: result.clone(),
                                duration: Duration::ZERO,
                                approvals: Vec::new(),
                            },
                            false,
                            sink,
                        ),
                        Prepared::Run(_) | Prepared::Started(..) => {
                            self.unfinished(call, &output, sink)
                        }
                    });
                }
                break;
            }
            // File changes of this batch are made through a gate its stop closes.
            self.toolset.shared.commits = CommitGate::default();
            let outcomes = {
                let this = &*self;
                let mut outcomes = Vec::with_capacity(prepared.len());
                let calls: Vec<_> = prepared
                    .iter_mut()
                    .map(|p| this.run_prepared(p, sink))
                    .collect();
                let mut running = futures::stream::iter(calls).buffered(MAX_CONCURRENT_TOOLS);
                loop {
                    match watch.run(running.next()).await {
                        Ok(Some(outcome)) => outcomes.push(outcome),
                        Ok(None) => break,
                        Err(stop) => {
                            ended = Some(Ended::Halt(stop));
                            if self.toolset.shared.commits.close() {
                                // A change was let through before the stop: wait
                                // for it (a few writes and renames) and keep
                                // what it reports.
                                while let Some(outcome) = running.next().await {
                                    outcomes.push(outcome);
                                }
                            }
                            break;
                        }
                    }
                }
                outcomes
            };
            // After: each call that ran, its effects, in order; then its event.
            for (p, outcome) in prepared.iter().zip(outcomes) {
                let call = match p {
                    Prepared::Run(call) | Prepared::Started(call, _) => call,
                    Prepared::Answered(_) => {
                        let original = &batch[records.len() - i];
                        records.push(self.finish_call(original, outcome, false, sink));
                        continue;
                    }
                };
                let mut outcome = outcome;
                if ended.is_none() {
                    let after = match watch
                        .run(self.at_point(
                            Point::AfterTool {
                                call,
                                result: &outcome.result,
                            },
                            run,
                            sink,
                        ))
                        .await
                    {
                        Ok(applied) => applied?,
                        Err(halt) => {
                            ended = Some(Ended::Halt(halt));
                            Default::default()
                        }
                    };
                    run.queued.extend(after.items);
                    if let Some(result) = after.output {
                        outcome.result = result;
                    }
                    if let Some(stop) = after.stop {
                        if stop.now {
                            ended = Some(Ended::Stop(stop));
                        } else if run.stop_after_calls.is_none() {
                            run.stop_after_calls = Some(stop);
                        }
                    }
                }
                // Recorded with the arguments it ran with.
                records.push(self.finish_call(call, outcome, true, sink));
            }
            i += batch_len;
        }
        debug_assert!(
            started.next().is_none(),
            "a call started early was not taken over"
        );
        if let Some(ended) = &ended {
            let output = match ended {
                Ended::Halt(halt) => halt.call_output(),
                Ended::Stop(stop) => stop.call_output.clone(),
            };
            for call in &calls[records.len()..] {
                records.push(self.unfinished(call, &output, sink));
            }
        }
        Ok((records, ended))
    }

    /// Record a call's outcome: metrics (when it `ran`), approvals, the
    /// completed event (with what the model sees).
    fn finish_call(
        &mut self,
        call: &ToolCall,
        outcome: CallOutcome,
        ran: bool,
        sink: &dyn EventSink,
    ) -> ToolCallRecord {
        let result = outcome.result;
        if ran {
            self.meter
                .metrics
                .record_tool(&call.name, outcome.duration, result.is_error);
        }
        for status in &outcome.approvals {
            self.meter.metrics.record_approval(status.as_str());
        }
        sink.emit(AgentEvent::ItemCompleted {
            item: Item::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                status: if result.is_error {
                    ToolStatus::Failed
                } else {
                    ToolStatus::Completed
                },
                output: Some(result.content.clone()),
                exit_code: result.exit_code(),
                duration_ms: Some(outcome.duration.as_millis() as u64),
                diff: result.diff.clone(),
            },
        });
        ToolCallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.arguments.clone(),
            result: result.content,
            is_error: result.is_error,
            command: result.command,
            images: result.images,
            duration: outcome.duration,
        }
    }

    /// The record of a call the turn's stop kept from running or finishing.
    pub(super) fn unfinished(
        &self,
        call: &ToolCall,
        output: &str,
        sink: &dyn EventSink,
    ) -> ToolCallRecord {
        sink.emit(unfinished_event(call, output));
        ToolCallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.arguments.clone(),
            result: output.to_string(),
            is_error: true,
            command: None,
            duration: Duration::ZERO,
            images: Vec::new(),
        }
    }

    /// Run a prepared call, wait for one that started early, or pass on
    /// its answer.
    async fn run_prepared(&self, prepared: &mut Prepared, sink: &dyn EventSink) -> CallOutcome {
        match prepared {
            Prepared::Run(call) => self.run_one(call, sink).await,
            Prepared::Started(call, running) => {
                let (result, ran) = running.result().await;
                let mut approvals = std::mem::take(&mut running.approvals);
                let started = Instant::now();
                let result = self
                    .offer_unsandboxed(call, result, sink, &mut approvals)
                    .await;
                let duration = ran + started.elapsed();
                tracing::debug!(
                    tool = %call.name,
                    call_id = %call.id,
                    ?duration,
                    is_error = result.is_error,
                    "tool call started early finished"
                );
                CallOutcome {
                    result,
                    duration,
                    approvals,
                }
            }
            Prepared::Answered(result) => CallOutcome {
                result: result.clone(),
                duration: Duration::ZERO,
                approvals: Vec::new(),
            },
        }
    }

    async fn run_one(&self, call: &ToolCall, sink: &dyn EventSink) -> CallOutcome {
        sink.emit(started_event(call));
        let started = Instant::now();
        let mut approvals = Vec::new();
        let result = self.run_gated(call, sink, &mut approvals).await;
        let duration = started.elapsed();
        tracing::debug!(
            tool = %call.name,
            call_id = %call.id,
            ?duration,
            is_error = result.is_error,
            exit_code = ?result.exit_code(),
            "tool call finished"
        );
        CallOutcome {
            result,
            duration,
            approvals,
        }
    }

    /// The approval policy around one dispatch.
    async fn run_gated(
        &self,
        call: &ToolCall,
        sink: &dyn EventSink,
        approvals: &mut Vec<ApprovalStatus>,
    ) -> ToolResult {
        if is_delegation_tool(&call.name) && self.toolset.registry.spec(&call.name).is_none() {
            // A delegated agent asks for approval of its own calls, with
            // this session's approver; starting it needs none.
            return self.delegate(call, sink).await;
        }
        if self.toolset.registry.spec(&call.name).is_none() {
            // No such tool (or a call that could not be read): nothing runs,
            // so there is nothing to approve; the answer says what is wrong.
            return self
                .toolset
                .registry
                .dispatch(call, &self.toolset.context(&self.ctx))
                .await;
        }
        if call.name == ask_user::NAME {
            return self.ask_user(call, sink).await;
        }
        let policy = self.ctx.approval_policy;
        let read_only = self.toolset.registry.is_read_only(&call.name);
        match approval::precheck(policy, call, read_only, &self.ctx.sandbox_policy.shell) {
            Precheck::Run => {}
            Precheck::AutoApprove => {
                self.report(
                    call,
                    ApprovalStatus::AutoApproved,
                    "allowed by the approval policy",
                    sink,
                    approvals,
                );
            }
            Precheck::Ask { reason, escalate } => {
                if let Err(no) = self.ask(call, reason, sink, approvals).await {
                    let interactive = self.conversation.approver.is_interactive();
                    return ToolResult::error(approval::denial_output(&no, !interactive));
                }
                if escalate {
                    return self
                        .toolset
                        .registry
                        .dispatch(call, &self.unsandboxed())
                        .await;
                }
            }
        }
        let result = self
            .toolset
            .registry
            .dispatch(call, &self.toolset.context(&self.ctx))
            .await;
        self.offer_unsandboxed(call, result, sink, approvals).await
    }

    /// A call that failed the way a sandbox refusal looks: under the
    /// on-failure policy, with someone to ask, offer to run it again
    /// without the sandbox.
    async fn offer_unsandboxed(
        &self,
        call: &ToolCall,
        result: ToolResult,
        sink: &dyn EventSink,
        approvals: &mut Vec<ApprovalStatus>,
    ) -> ToolResult {
        let policy = self.ctx.approval_policy;
        if result.is_error
            && approval::on_failure_retry(
                policy,
                self.ctx.sandbox_policy.mode,
                self.conversation.approver.is_interactive(),
                &result.content,
            )
        {
            let reason = "it failed in the sandbox; run it again without the sandbox?".to_string();
            return match self.ask(call, reason, sink, approvals).await {
                Ok(()) => {
                    self.toolset
                        .registry
                        .dispatch(call, &self.unsandboxed())
                        .await
                }
                Err(declined) => ToolResult {
                    content: format!(
                        "{}\n\n{}",
                        result.content,
                        approval::retry_declined_output(&declined)
                    ),
                    ..result
                },
            };
        }
        result
    }

    /// The tool context with the sandbox lifted, for approved escalations.
    fn unsandboxed(&self) -> ToolContext {
        let mut ctx = self.toolset.context(&self.ctx);
        ctx.sandbox.mode = SandboxMode::DangerFullAccess;
        ctx
    }

    pub(super) fn report(
        &self,
        call: &ToolCall,
        status: ApprovalStatus,
        reason: &str,
        sink: &dyn EventSink,
        approvals: &mut Vec<ApprovalStatus>,
    ) {
        approvals.push(status);
        sink.emit(AgentEvent::Approval {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            summary: approval::describe(call),
            status,
            reason: reason.to_string(),
        });
    }

    /// Ask the approver (unless the same call was approved for the
    /// session). `Err` is the user's no.
    async fn ask(
        &self,
        call: &ToolCall,
        reason: String,
        sink: &dyn EventSink,
        approvals: &mut Vec<ApprovalStatus>,
    ) -> Result<(), ApprovalDecision> {
        let key = approval::call_key(call);
        let approved_before = self
            .conversation
            .approved
            .lock()
            .map(|set| set.contains(&key))
            .unwrap_or(false);
        if approved_before {
            self.report(
                call,
                ApprovalStatus::Approved,
                "approved earlier for this session",
                sink,
                approvals,
            );
            return Ok(());
        }
        let request = approval::request(call, reason);
        self.report(
            call,
            ApprovalStatus::Asked,
            &request.reason,
            sink,
            approvals,
        );
        let interactive = self.conversation.approver.is_interactive();
        if interactive {
            self.notify(&Notice::Permission {
                tool: call.name.clone(),
            });
        }
        let decision = self.conversation.approver.ask(&request).await;
        let status = approval::status_of(&decision);
        let why = match (&decision, interactive) {
            (_, false) => "no one to ask in a non-interactive run: answered no",
            (ApprovalDecision::ApproveForSession, _) => "approved for this session",
            (ApprovalDecision::Approve, _) => "approved once",
            (ApprovalDecision::Deny, _) => "denied by the user",
            (ApprovalDecision::DenyWithMessage(_), _) => "denied by the user, with a message",
        };
        self.report(call, status, why, sink, approvals);
        match decision {
            ApprovalDecision::Approve => Ok(()),
            ApprovalDecision::ApproveForSession => {
                if let Ok(mut set) = self.conversation.approved.lock() {
                    set.insert(key);
                }
                Ok(())
            }
            other => Err(other),
        }
    }
}
