//! What cogni asks the client: permission for a tool call (the approval
//! policy's questions), the model's questions to the user (`ask_user`,
//! as a permission request whose options are the question's) and, when
//! it offers them, the text of files and writes to them (its `fs`
//! methods, which see unsaved buffers).

use super::updates::Updates;
use super::Cx;
use crate::agent::StopHandle;
use crate::protocol::{ApprovalDecision, ApprovalRequest, Approver, Question, UserAnswer};
use crate::tools::editor::Editor;
use agent_client_protocol::v1::schema as acp;
use futures::future::BoxFuture;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The longest a permission question waits for its answer; then it is
/// answered no.
const PERMISSION_WAIT: Duration = Duration::from_secs(30 * 60);

/// The longest a file read or write through the client may take.
const FS_WAIT: Duration = Duration::from_secs(30);

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject_once";

/// The option of a question that declines to answer; the question's own
/// options are `option_1` to `option_4`.
const DECLINE: &str = "decline";
const OPTION: &str = "option_";

/// Asks the client (`session/request_permission`) when the approval
/// policy asks the user.
pub struct ClientApprover {
    pub cx: Cx,
    pub session: acp::SessionId,
    pub updates: Arc<Updates>,
    /// The client's `cancelled` answer stops the turn.
    pub stop: StopHandle,
}

impl Approver for ClientApprover {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            // The call waits for the answer.
            self.updates
                .status(&request.call_id, acp::ToolCallStatus::Pending);
            let call = acp::ToolCallUpdate::new(
                request.call_id.clone(),
                acp::ToolCallUpdateFields::new()
                    .status(acp::ToolCallStatus::Pending)
                    .title(
                        self.updates
                            .title(&request.call_id)
                            .unwrap_or_else(|| request.summary.clone()),
                    ),
            );
            let options = vec![
                acp::PermissionOption::new(
                    ALLOW_ONCE,
                    "Allow once",
                    acp::PermissionOptionKind::AllowOnce,
                ),
                acp::PermissionOption::new(
                    ALLOW_ALWAYS,
                    "Allow for this session",
                    acp::PermissionOptionKind::AllowAlways,
                ),
                acp::PermissionOption::new(REJECT, "Reject", acp::PermissionOptionKind::RejectOnce),
            ];
            let question = acp::RequestPermissionRequest::new(self.session.clone(), call, options);
            let answer =
                tokio::time::timeout(PERMISSION_WAIT, self.cx.send_request(question).block_task())
                    .await;
            let decision = match answer {
                Ok(Ok(response)) => match response.outcome {
                    acp::RequestPermissionOutcome::Selected(selected) => {
                        match &*selected.option_id.0 {
                            ALLOW_ONCE => ApprovalDecision::Approve,
                            ALLOW_ALWAYS => ApprovalDecision::ApproveForSession,
                            _ => ApprovalDecision::Deny,
                        }
                    }
                    // The client cancelled the prompt: the turn stops.
                    _ => {
                        self.stop.stop();
                        ApprovalDecision::Deny
                    }
                },
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "permission request failed");
                    ApprovalDecision::Deny
                }
                Err(_) => ApprovalDecision::DenyWithMessage(format!(
                    "No answer to the permission request within {} minutes.",
                    PERMISSION_WAIT.as_secs() / 60
                )),
            };
            if matches!(
                decision,
                ApprovalDecision::Approve | ApprovalDecision::ApproveForSession
            ) {
                self.updates
                    .status(&request.call_id, acp::ToolCallStatus::InProgress);
            }
            decision
        })
    }

    fn is_interactive(&self) -> bool {
        true
    }

    /// The question as a permission request: its options (`option_N`,
    /// named by their label and description) and one that declines.
    /// The protocol carries no typed answer, so a free answer is not
    /// offered; a cancelled request, a failed one and one unanswered for
    /// [`PERMISSION_WAIT`] decline.
    fn question<'a>(
        &'a self,
        call_id: &'a str,
        question: &'a Question,
    ) -> BoxFuture<'a, UserAnswer> {
        Box::pin(async move {
            // The call waits for the answer.
            self.updates.status(call_id, acp::ToolCallStatus::Pending);
            let call = acp::ToolCallUpdate::new(
                call_id.to_string(),
                acp::ToolCallUpdateFields::new()
                    .status(acp::ToolCallStatus::Pending)
                    .title(question.question.clone()),
            );
            let mut options: Vec<acp::PermissionOption> = question
                .options
                .iter()
                .enumerate()
                .map(|(i, option)| {
                    let mut name = option.label.clone();
                    if question.default == Some(i) {
                        name.push_str(" (recommended)");
                    }
                    if let Some(description) = &option.description {
                        name.push_str(&format!(": {description}"));
                    }
                    acp::PermissionOption::new(
                        format!("{OPTION}{}", i + 1),
                        name,
                        acp::PermissionOptionKind::AllowOnce,
                    )
                })
                .collect();
            options.push(acp::PermissionOption::new(
                DECLINE,
                "Decline to answer",
                acp::PermissionOptionKind::RejectOnce,
            ));
            let request = acp::RequestPermissionRequest::new(self.session.clone(), call, options);
            let answer =
                tokio::time::timeout(PERMISSION_WAIT, self.cx.send_request(request).block_task())
                    .await;
            let chosen = match answer {
                Ok(Ok(acp::RequestPermissionResponse {
                    outcome: acp::RequestPermissionOutcome::Selected(selected),
                    ..
                })) => selected
                    .option_id
                    .0
                    .strip_prefix(OPTION)
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| (1..=question.options.len()).contains(n))
                    .map(|n| UserAnswer::Chosen(n - 1)),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "question to the client failed");
                    None
                }
                _ => None,
            };
            self.updates
                .status(call_id, acp::ToolCallStatus::InProgress);
            chosen.unwrap_or(UserAnswer::Declined)
        })
    }
}

/// The client's `fs/read_text_file` and `fs/write_text_file`, for the
/// file tools ([`Editor`]).
pub struct ClientFiles {
    pub cx: Cx,
    pub session: acp::SessionId,
    /// The runtime the requests are awaited on (the tools call from
    /// their blocking threads).
    pub runtime: tokio::runtime::Handle,
    pub reads: bool,
    pub writes: bool,
}

impl ClientFiles {
    /// Send `request` and wait for its answer on this (blocking) thread.
    fn ask<R>(&self, request: R, what: &str, path: &Path) -> io::Result<R::Response>
    where
        R: agent_client_protocol::JsonRpcRequest,
        R::Response: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        let sent = self.cx.send_request(request);
        self.runtime.spawn(async move {
            let _ = tx.send(sent.block_task().await);
        });
        match rx.recv_timeout(FS_WAIT) {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(io::Error::other(format!(
                "the editor could not {what} {}: {}",
                path.display(),
                e.message
            ))),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the editor did not {what} {} within {} s",
                    path.display(),
                    FS_WAIT.as_secs()
                ),
            )),
        }
    }
}

impl Editor for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read(&self, path: &Path) -> io::Result<String> {
        let request = acp::ReadTextFileRequest::new(self.session.clone(), path);
        self.ask(request, "read", path).map(|r| r.content)
    }

    fn write(&self, path: &Path, text: &str) -> io::Result<()> {
        let request = acp::WriteTextFileRequest::new(self.session.clone(), path, text);
        self.ask(request, "write", path).map(drop)
    }
}
