//! Running the tool calls of one response: the approval gate, concurrency
//! for read-only calls, the retry without the sandbox, and one record per
//! call in call order.

use super::approval::{self, Precheck};
use super::limits::{Halt, Limit, Watch};
use super::session::Session;
use super::turn::ToolCallRecord;
use crate::protocol::{
    AgentEvent, ApprovalDecision, ApprovalStatus, EventSink, Item, SandboxMode, ToolCall,
    ToolStatus,
};
use crate::tools::fs::CommitGate;
use crate::tools::{ToolContext, ToolResult};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// Calls that may run at once when a response holds several read-only calls.
const MAX_CONCURRENT_TOOLS: usize = 8;

/// What the model is told instead of running a call it keeps repeating.
pub(crate) const REPEATED_CALL_REFUSAL: &str = "Not run: this exact call already failed 3 times in a row. The turn ends here; try a different approach next time.";

/// One call's record and the approval decisions made for it.
struct CallOutcome {
    record: ToolCallRecord,
    approvals: Vec<ApprovalStatus>,
}

impl Session {
    /// Run every call and return one record per call, in call order. With
    /// `parallel`, consecutive read-only calls run concurrently; calls that
    /// may change state run one at a time, in order. A call whose key is
    /// `blocked` is not run (see the repeated-failure rule in turn.rs); with
    /// a `cap` of `(n, limit)` at most `n` calls run and the rest are
    /// answered as stopped by `limit`. When the turn is
    /// stopped, running calls are dropped (their process groups killed) and
    /// every call without a result gets the halt's output; a file change
    /// that is being committed is finished instead and reported as it is
    /// (see `tools::fs::CommitGate`), so the model is never told a change
    /// did not happen when it did.
    pub(crate) async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        parallel: bool,
        blocked: Option<&str>,
        cap: Option<(usize, Limit)>,
        watch: &Watch,
        sink: &dyn EventSink,
    ) -> (Vec<ToolCallRecord>, Option<Halt>) {
        let runnable = cap.map_or(calls.len(), |(n, _)| n.min(calls.len()));
        let mut halt = cap
            .filter(|_| runnable < calls.len())
            .map(|(_, limit)| Halt::Budget(limit));
        let mut records = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < runnable {
            let batch_len = if parallel {
                calls[i..runnable]
                    .iter()
                    .take_while(|c| self.tools.is_read_only(&c.name))
                    .count()
                    .max(1)
            } else {
                1
            };
            let batch = &calls[i..i + batch_len];
            // File changes of this batch are made through a gate its stop closes.
            self.tool_ctx.commits = CommitGate::default();
            let this = &*self;
            let mut running = futures::stream::iter(batch)
                .map(|call| this.run_one(call, blocked, sink))
                .buffered(MAX_CONCURRENT_TOOLS);
            let mut outcomes = Vec::with_capacity(batch_len);
            let mut stopped = false;
            loop {
                match watch.run(running.next()).await {
                    Ok(Some(outcome)) => outcomes.push(outcome),
                    Ok(None) => break,
                    Err(stop) => {
                        halt = Some(stop);
                        stopped = true;
                        if self.tool_ctx.commits.close() {
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
            drop(running);
            for outcome in outcomes {
                let r = &outcome.record;
                self.metrics.record_tool(&r.name, r.duration, r.is_error);
                for status in &outcome.approvals {
                    self.metrics.record_approval(status.as_str());
                }
                records.push(outcome.record);
            }
            if stopped || (halt.is_some() && records.len() < i + batch_len) {
                break;
            }
            i += batch_len;
        }
        if let Some(halt) = halt {
            for call in &calls[records.len()..] {
                records.push(self.unfinished(call, halt, sink));
            }
        }
        (records, halt)
    }

    /// The record of a call the turn's stop kept from running or finishing.
    fn unfinished(&self, call: &ToolCall, halt: Halt, sink: &dyn EventSink) -> ToolCallRecord {
        let output = halt.call_output();
        sink.emit(AgentEvent::ItemCompleted {
            item: Item::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                status: ToolStatus::Failed,
                output: Some(output.clone()),
                exit_code: None,
                duration_ms: Some(0),
            },
        });
        ToolCallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.arguments.clone(),
            result: output,
            is_error: true,
            exit_code: None,
            duration: Duration::ZERO,
        }
    }

    async fn run_one(
        &self,
        call: &ToolCall,
        blocked: Option<&str>,
        sink: &dyn EventSink,
    ) -> CallOutcome {
        sink.emit(AgentEvent::ItemStarted {
            item: Item::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                status: ToolStatus::InProgress,
                output: None,
                exit_code: None,
                duration_ms: None,
            },
        });
        let started = Instant::now();
        let mut approvals = Vec::new();
        let result = if blocked == Some(approval::call_key(call).as_str()) {
            ToolResult::error(REPEATED_CALL_REFUSAL)
        } else {
            self.run_gated(call, sink, &mut approvals).await
        };
        let duration = started.elapsed();
        tracing::debug!(
            tool = %call.name,
            call_id = %call.id,
            ?duration,
            is_error = result.is_error,
            exit_code = ?result.exit_code,
            "tool call finished"
        );
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
                exit_code: result.exit_code,
                duration_ms: Some(duration.as_millis() as u64),
            },
        });
        CallOutcome {
            record: ToolCallRecord {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.arguments.clone(),
                result: result.content,
                is_error: result.is_error,
                exit_code: result.exit_code,
                duration,
            },
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
        let policy = self.ctx.approval_policy;
        let read_only = self.tools.is_read_only(&call.name);
        match approval::precheck(policy, call, read_only, &self.tool_ctx.sandbox.shell) {
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
                    let interactive = self.approver.is_interactive();
                    return ToolResult::error(approval::denial_output(&no, !interactive));
                }
                if escalate {
                    return self.tools.dispatch(call, &self.unsandboxed()).await;
                }
            }
        }
        let result = self.tools.dispatch(call, &self.tool_ctx).await;
        if result.is_error
            && approval::on_failure_retry(
                policy,
                self.tool_ctx.sandbox.mode,
                self.approver.is_interactive(),
                &result.content,
            )
        {
            let reason = "it failed in the sandbox; run it again without the sandbox?".to_string();
            return match self.ask(call, reason, sink, approvals).await {
                Ok(()) => self.tools.dispatch(call, &self.unsandboxed()).await,
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
        let mut ctx = self.tool_ctx.clone();
        ctx.sandbox.mode = SandboxMode::DangerFullAccess;
        ctx
    }

    fn report(
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
            .session_approved
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
        let interactive = self.approver.is_interactive();
        let decision = self.approver.ask(&request).await;
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
                if let Ok(mut set) = self.session_approved.lock() {
                    set.insert(key);
                }
                Ok(())
            }
            other => Err(other),
        }
    }
}
