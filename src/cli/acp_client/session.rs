//! One session with the agent: `initialize` and `session/new` within the
//! start-up timeout, then prompts. While a prompt runs, what the agent
//! sends is handled in the order it came: updates become events, a
//! permission request goes to the approver, a refused write becomes a
//! warning; a stop request cancels the turn (`session/cancel`), and the
//! agent is killed when it does not end the turn within
//! [`super::CANCEL_WAIT`].

use super::events::{Noted, Translate};
use super::files::Files;
use super::{Control, Cx, Failure, Launch, CANCEL_WAIT};
use crate::mcp::{McpConfig, Transport};
use crate::protocol::{
    AgentEvent, ApprovalDecision, ApprovalStatus, Approver, EventSink, TurnOutcome,
};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Error, ErrorCode};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// How long a mode change may take.
const SET_MODE_WAIT: Duration = Duration::from_secs(30);

type Responder<T> = agent_client_protocol::v1::Responder<T>;

/// What the agent sent that a turn handles.
pub enum Incoming {
    Update(acp::SessionNotification),
    Permission(
        acp::RequestPermissionRequest,
        Responder<acp::RequestPermissionResponse>,
    ),
    /// A write of the agent's that the rules refused.
    Refused(String),
}

/// The error answer to a file request cogni refused.
pub fn refused(message: String) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

/// The agent's session, as a front door drives it.
pub struct Remote {
    cx: Cx,
    session: acp::SessionId,
    incoming: UnboundedReceiver<Incoming>,
    /// The agent's name and version, as it gave them (untrusted text).
    agent: String,
    modes: Option<acp::SessionModeState>,
    commands: Vec<acp::AvailableCommand>,
    translate: Translate,
    control: Control,
    files: Arc<Files>,
}

/// One step of a running prompt.
enum Step {
    Incoming(Box<Incoming>),
    Stop(u32),
    Overdue,
    Answered(Result<acp::PromptResponse, Error>),
}

impl Remote {
    /// Initialize the agent and open its session.
    pub async fn start(
        cx: Cx,
        incoming: UnboundedReceiver<Incoming>,
        launch: &Launch,
        files: Arc<Files>,
        control: Control,
    ) -> Result<Remote, Failure> {
        let fs = acp::FileSystemCapabilities::new()
            .read_text_file(true)
            .write_text_file(true);
        let init = acp::InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(acp::ClientCapabilities::new().fs(fs).terminal(false))
            .client_info(acp::Implementation::new("cogni", env!("CARGO_PKG_VERSION")));
        let what = "answer initialize";
        let sent = cx.send_request(init).block_task();
        let init = within(&cx, launch.timeout, what, sent)
            .await?
            .map_err(|e| failed(what, &e))?;
        if init.protocol_version != ProtocolVersion::V1 {
            return Err(Failure::Usage(format!(
                "the agent speaks version {} of the Agent Client Protocol; cogni speaks version 1",
                init.protocol_version.as_u16()
            )));
        }
        let agent = match &init.agent_info {
            Some(info) => format!(
                "{} {}",
                info.title.as_deref().unwrap_or(&info.name),
                info.version
            ),
            None => "an ACP agent".into(),
        };
        let what = "open a session";
        let servers = mcp_servers(&launch.mcp, &init.agent_capabilities.mcp_capabilities);
        let sent = cx
            .send_request(acp::NewSessionRequest::new(launch.cwd.clone()).mcp_servers(servers))
            .block_task();
        let session = match within(&cx, launch.timeout, what, sent).await? {
            Ok(session) => session,
            Err(e) if e.code == ErrorCode::AUTH_REQUIRED => {
                let methods: Vec<&str> = init.auth_methods.iter().map(|m| m.name()).collect();
                return Err(Failure::Usage(format!(
                    "the agent wants you to log in first{}: cogni does not log in to agents; log in with the agent itself, then try again",
                    if methods.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", methods.join(", "))
                    }
                )));
            }
            Err(e) => return Err(failed(what, &e)),
        };
        Ok(Remote {
            cx,
            session: session.session_id,
            incoming,
            agent,
            modes: session.modes,
            commands: Vec::new(),
            translate: Translate::default(),
            control,
            files,
        })
    }

    pub fn agent(&self) -> &str {
        &self.agent
    }

    pub fn session_id(&self) -> &str {
        &self.session.0
    }

    /// The agent's modes and the current one, if it has modes.
    pub fn modes(&self) -> Option<&acp::SessionModeState> {
        self.modes.as_ref()
    }

    /// The agent's commands, as it last listed them.
    pub fn commands(&self) -> &[acp::AvailableCommand] {
        &self.commands
    }

    /// Send `text` as a prompt and handle the turn until the agent answers
    /// it; its stop reason and the turn's outcome and answer.
    pub async fn prompt(
        &mut self,
        text: &str,
        sink: &dyn EventSink,
        approver: &dyn Approver,
    ) -> Result<(acp::StopReason, TurnOutcome, String), Failure> {
        self.drain(sink, approver).await;
        self.control.begin_turn();
        self.files.resume();
        self.translate.start(sink);
        let request = acp::PromptRequest::new(self.session.clone(), vec![text.to_string().into()]);
        let answer = self.cx.send_request(request).block_task();
        tokio::pin!(answer);
        let control = self.control.clone();
        let mut seen = 0;
        let mut deadline: Option<tokio::time::Instant> = None;
        let answered = loop {
            let overdue = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            // A stop goes first (an agent that never stops talking can
            // still be cancelled); what the agent sent goes before its
            // answer.
            let step = tokio::select! {
                biased;
                stops = control.stops_after(seen) => Step::Stop(stops),
                () = overdue => Step::Overdue,
                Some(incoming) = self.incoming.recv() => Step::Incoming(Box::new(incoming)),
                answered = &mut answer => Step::Answered(answered),
            };
            match step {
                Step::Incoming(incoming) => self.handle(*incoming, sink, approver).await,
                Step::Stop(stops) => {
                    seen = stops;
                    if deadline.is_none() {
                        self.cancel(sink);
                        deadline = Some(tokio::time::Instant::now() + CANCEL_WAIT);
                    }
                }
                Step::Overdue => {
                    sink.emit(AgentEvent::Warning {
                        message: format!(
                            "the agent did not end its turn within {} s of the cancel; killing it",
                            CANCEL_WAIT.as_secs()
                        ),
                    });
                    control.kill();
                    deadline = None;
                }
                Step::Answered(answered) => break answered,
            }
        };
        // What the agent sent before its answer is handled before it.
        self.drain(sink, approver).await;
        self.control.end_turn();
        match answered {
            Ok(response) => {
                let (outcome, answer) = self.translate.finish(response.stop_reason, sink);
                Ok((response.stop_reason, outcome, answer))
            }
            Err(e) => {
                let failure = if self.control.killed() {
                    Failure::Killed("the agent was killed during the turn".into())
                } else if self.cx.is_incoming_closed() {
                    Failure::Gone("the agent went away during the turn".into())
                } else {
                    Failure::Agent(format!("the agent failed the prompt: {}", e.message))
                };
                self.translate.fail(failure.message(), sink);
                Err(failure)
            }
        }
    }

    /// Switch the agent's session to mode `id`.
    pub async fn set_mode(&mut self, id: &str) -> Result<(), String> {
        let request = acp::SetSessionModeRequest::new(self.session.clone(), id.to_string());
        let sent = self.cx.send_request(request).block_task();
        match tokio::time::timeout(SET_MODE_WAIT, sent).await {
            Ok(Ok(_)) => {
                if let Some(modes) = &mut self.modes {
                    modes.current_mode_id = acp::SessionModeId::new(id.to_string());
                }
                Ok(())
            }
            Ok(Err(e)) => Err(format!("the agent refused mode {id}: {}", e.message)),
            Err(_) => Err(format!(
                "the agent did not answer within {} s",
                SET_MODE_WAIT.as_secs()
            )),
        }
    }

    /// Handle what arrived while no prompt ran (a mode change, a new list
    /// of commands).
    pub async fn drain(&mut self, sink: &dyn EventSink, approver: &dyn Approver) {
        while let Ok(incoming) = self.incoming.try_recv() {
            self.handle(incoming, sink, approver).await;
        }
    }

    fn cancel(&self, sink: &dyn EventSink) {
        self.files.stop();
        let note = acp::CancelNotification::new(self.session.clone());
        if let Err(e) = self.cx.send_notification(note) {
            sink.emit(AgentEvent::Warning {
                message: format!("cannot cancel the agent's turn: {}", e.message),
            });
        }
    }

    async fn handle(&mut self, incoming: Incoming, sink: &dyn EventSink, approver: &dyn Approver) {
        match incoming {
            Incoming::Update(note) if note.session_id == self.session => {
                match self.translate.update(note.update, sink) {
                    Noted::Commands(commands) => self.commands = commands,
                    Noted::Mode(id) => {
                        if let Some(modes) = &mut self.modes {
                            modes.current_mode_id = id;
                        }
                    }
                    Noted::Nothing => {}
                }
            }
            Incoming::Update(_) => {}
            Incoming::Permission(request, responder) => {
                let answer = if request.session_id == self.session {
                    Ok(self.permission(&request, sink, approver).await)
                } else {
                    Err(Error::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("no session {}", request.session_id.0),
                    ))
                };
                let _ = responder.respond_with_result(answer);
            }
            Incoming::Refused(message) => sink.emit(AgentEvent::Warning { message }),
        }
    }

    /// Ask the approver about a permission request, report the question
    /// and the answer as events, and choose the agent's option for it.
    async fn permission(
        &self,
        request: &acp::RequestPermissionRequest,
        sink: &dyn EventSink,
        approver: &dyn Approver,
    ) -> acp::RequestPermissionResponse {
        let (question, summary) = self.translate.question(request);
        let report = |status, reason: &str| {
            sink.emit(AgentEvent::Approval {
                call_id: question.call_id.clone(),
                tool: question.tool.clone(),
                summary: summary.clone(),
                status,
                reason: reason.to_string(),
            })
        };
        report(ApprovalStatus::Asked, &question.reason);
        let interactive = approver.is_interactive();
        let decision = approver.ask(&question).await;
        let (status, why, kinds) = match (&decision, interactive) {
            (_, false) => (
                ApprovalStatus::Denied,
                "no one to ask in a non-interactive run: answered no",
                REJECT,
            ),
            (ApprovalDecision::Approve, _) => {
                (ApprovalStatus::Approved, "approved once", ALLOW_ONCE)
            }
            (ApprovalDecision::ApproveForSession, _) => (
                ApprovalStatus::Approved,
                "approved for this session",
                ALLOW_ALWAYS,
            ),
            (ApprovalDecision::Deny, _) => (ApprovalStatus::Denied, "denied by the user", REJECT),
            // The protocol carries no message with a rejection.
            (ApprovalDecision::DenyWithMessage(_), _) => (
                ApprovalStatus::Denied,
                "denied by the user (the agent gets no message)",
                REJECT,
            ),
        };
        report(status, why);
        let chosen = kinds
            .iter()
            .find_map(|kind| request.options.iter().find(|o| o.kind == *kind));
        let outcome = match chosen {
            Some(option) => acp::RequestPermissionOutcome::Selected(
                acp::SelectedPermissionOutcome::new(option.option_id.clone()),
            ),
            // No option says this: the closest answer is none at all.
            None => acp::RequestPermissionOutcome::Cancelled,
        };
        acp::RequestPermissionResponse::new(outcome)
    }
}

/// The options that say yes once, yes always and no, best first.
const ALLOW_ONCE: &[acp::PermissionOptionKind] = &[acp::PermissionOptionKind::AllowOnce];
const ALLOW_ALWAYS: &[acp::PermissionOptionKind] = &[
    acp::PermissionOptionKind::AllowAlways,
    acp::PermissionOptionKind::AllowOnce,
];
const REJECT: &[acp::PermissionOptionKind] = &[
    acp::PermissionOptionKind::RejectOnce,
    acp::PermissionOptionKind::RejectAlways,
];

/// The answer to a request sent while starting, within `timeout`: an
/// error answer inside, the agent's going away or silence outside.
async fn within<T>(
    cx: &Cx,
    timeout: Duration,
    what: &str,
    sent: impl Future<Output = Result<T, Error>>,
) -> Result<Result<T, Error>, Failure> {
    match tokio::time::timeout(timeout, sent).await {
        Ok(Err(_)) if cx.is_incoming_closed() => Err(Failure::Gone(format!(
            "the agent went away before it could {what}"
        ))),
        Ok(answer) => Ok(answer),
        Err(_) => Err(Failure::Agent(format!(
            "the agent did not {what} within {} s (--acp-timeout)",
            timeout.as_secs()
        ))),
    }
}

fn failed(what: &str, e: &Error) -> Failure {
    Failure::Agent(format!("the agent could not {what}: {}", e.message))
}

/// The enabled servers of `config` as `session/new` gives them, for the
/// agent to start: values cogni takes from its environment (`env_vars`,
/// `env_headers`, `bearer_token_env_var`) are filled in. What the agent
/// cannot honour is said on stderr: an HTTP server to an agent without
/// `mcpCapabilities.http` is left out; a server's own `cwd` and its tool
/// filters are cogni's settings, which the protocol cannot carry.
fn mcp_servers(config: &McpConfig, can: &acp::McpCapabilities) -> Vec<acp::McpServer> {
    let env = |name: &str| std::env::var(name).ok();
    let mut servers = Vec::new();
    for server in config.enabled() {
        let name = &server.name;
        if server.enabled_tools.is_some()
            || !server.disabled_tools.is_empty()
            || !server.trusted_tools.is_empty()
        {
            eprintln!(
                "cogni: warning: MCP server `{name}`: the agent offers all its tools; \
                 enabled_tools, disabled_tools and trusted_tools apply only when cogni starts it"
            );
        }
        match &server.transport {
            Transport::Stdio {
                command,
                args,
                env: set,
                env_vars,
                cwd,
            } => {
                if let Some(cwd) = cwd {
                    eprintln!(
                        "cogni: warning: MCP server `{name}`: the agent starts it in its own \
                         directory, not in {}",
                        cwd.display()
                    );
                }
                let mut vars: Vec<acp::EnvVariable> = set
                    .iter()
                    .map(|(k, v)| acp::EnvVariable::new(k, v))
                    .collect();
                vars.extend(
                    env_vars
                        .iter()
                        .filter_map(|k| env(k).map(|v| acp::EnvVariable::new(k, v))),
                );
                servers.push(acp::McpServer::Stdio(
                    acp::McpServerStdio::new(name, command)
                        .args(args.clone())
                        .env(vars),
                ));
            }
            Transport::Http {
                url,
                headers,
                env_headers,
                bearer_token_env_var,
            } => {
                if !can.http {
                    eprintln!(
                        "cogni: warning: MCP server `{name}` is left out: the agent does not \
                         take MCP servers over HTTP"
                    );
                    continue;
                }
                let mut sent: Vec<acp::HttpHeader> = headers
                    .iter()
                    .map(|(k, v)| acp::HttpHeader::new(k, v))
                    .collect();
                sent.extend(
                    env_headers
                        .iter()
                        .filter_map(|(k, var)| env(var).map(|v| acp::HttpHeader::new(k, v))),
                );
                if let Some(token) = bearer_token_env_var.as_deref().and_then(env) {
                    sent.push(acp::HttpHeader::new(
                        "Authorization",
                        format!("Bearer {token}"),
                    ));
                }
                servers.push(acp::McpServer::Http(
                    acp::McpServerHttp::new(name, url).headers(sent),
                ));
            }
        }
    }
    servers
}
