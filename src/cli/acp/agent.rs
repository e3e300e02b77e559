//! The agent side of the connection: `initialize`, the sessions (new,
//! loaded, listed), and where each request for a session goes. It owns
//! every session's handle; each session runs on a task of its own
//! ([`super::live`]), so a long turn never holds up another session, a
//! cancel or a mode change.

use super::client::{ClientApprover, ClientFiles};
use super::commands::{self, Registry};
use super::live::{self, Command, Live};
use super::updates::Updates;
use super::{Cx, Responder};
use crate::agent::StopHandle;
use crate::cli::builder::Configured;
use crate::cli::interactive::{self, Opened, Options};
use crate::cli::mode::Mode;
use crate::cli::persist::Resume;
use crate::mcp::{ServerConfig, Transport, DEFAULT_STARTUP_TIMEOUT};
use crate::protocol::utc_date_time;
use crate::store::Store;
use crate::tools::editor::Files;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Error, ErrorCode};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// How long the sessions get to end after the client left.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// A message from the client, with the way to answer it.
pub enum Request {
    /// What the client can do (from `initialize`, answered already).
    Client(acp::ClientCapabilities),
    New(acp::NewSessionRequest, Responder<acp::NewSessionResponse>),
    Load(acp::LoadSessionRequest, Responder<acp::LoadSessionResponse>),
    List(
        acp::ListSessionsRequest,
        Responder<acp::ListSessionsResponse>,
    ),
    Prompt(acp::PromptRequest, Responder<acp::PromptResponse>),
    SetMode(
        acp::SetSessionModeRequest,
        Responder<acp::SetSessionModeResponse>,
    ),
    Cancel(acp::CancelNotification),
}

/// What the agent keeps of a running session.
struct Handle {
    commands: UnboundedSender<Command>,
    stop: StopHandle,
    requested: Arc<Mutex<Mode>>,
    updates: Arc<Updates>,
    task: tokio::task::JoinHandle<()>,
}

pub struct Agent {
    options: Options,
    launch_dir: PathBuf,
    /// `$COGNI_HOME`, for listing saved sessions.
    home: PathBuf,
    cx: Cx,
    /// What the client said it can do with files.
    fs: acp::FileSystemCapabilities,
    sessions: HashMap<String, Handle>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn failed(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, message)
}

/// Answer a request; a client that left gets nothing.
fn answer<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, Error>,
) {
    if let Err(e) = responder.respond_with_result(result) {
        tracing::debug!(error = %e, "answer not sent");
    }
}

impl Agent {
    pub fn new(options: Options, launch_dir: PathBuf, home: PathBuf, cx: Cx) -> Self {
        Agent {
            options,
            launch_dir,
            home,
            cx,
            fs: acp::FileSystemCapabilities::new(),
            sessions: HashMap::new(),
        }
    }

    /// Serve `requests` until `closed` (the client closed stdin), then end
    /// every session: running turns are stopped (their commands killed)
    /// and each session ends within [`SHUTDOWN_WAIT`].
    pub async fn serve(
        mut self,
        mut requests: UnboundedReceiver<Request>,
        closed: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(closed);
        loop {
            tokio::select! {
                biased;
                () = &mut closed => break,
                request = requests.recv() => match request {
                    Some(request) => self.handle(request),
                    None => break,
                },
            }
        }
        let mut tasks = Vec::new();
        for (_, handle) in self.sessions.drain() {
            handle.stop.close();
            drop(handle.commands);
            tasks.push(handle.task);
        }
        let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
        if tokio::time::timeout(SHUTDOWN_WAIT, futures::future::join_all(tasks))
            .await
            .is_err()
        {
            eprintln!(
                "cogni: sessions did not end within {} s; leaving",
                SHUTDOWN_WAIT.as_secs()
            );
            aborts.iter().for_each(|a| a.abort());
        }
    }

    fn handle(&mut self, request: Request) {
        match request {
            Request::Client(capabilities) => self.fs = capabilities.fs,
            Request::New(request, responder) => {
                let result = self.new_session(request);
                answer(responder, result);
            }
            Request::Load(request, responder) => self.load_session(request, responder),
            Request::List(request, responder) => answer(responder, self.list(request)),
            Request::Prompt(request, responder) => match self.session(&request.session_id) {
                Ok(handle) => {
                    if let Err(refused) = handle
                        .commands
                        .send(Command::Prompt(request.prompt, responder))
                    {
                        if let Command::Prompt(_, responder) = refused.0 {
                            answer(responder, Err(failed("the session has ended")));
                        }
                    }
                }
                Err(e) => answer(responder, Err(e)),
            },
            Request::SetMode(request, responder) => {
                let result = self.set_mode(&request);
                answer(responder, result);
            }
            Request::Cancel(note) => {
                if let Some(handle) = self.sessions.get(&*note.session_id.0) {
                    handle.stop.stop();
                }
            }
        }
    }

    fn session(&self, id: &acp::SessionId) -> Result<&Handle, Error> {
        self.sessions.get(&*id.0).ok_or_else(|| {
            invalid(format!(
                "no session `{id}` is open; create one with session/new or open a saved one with session/load"
            ))
        })
    }

    fn new_session(
        &mut self,
        request: acp::NewSessionRequest,
    ) -> Result<acp::NewSessionResponse, Error> {
        let opened = self.open(&request.cwd, None, &request.mcp_servers)?;
        let (mode, modes) = (opened.configured.mode, opened.configured.modes);
        let id = opened.session.id.clone();
        self.start(opened, request.cwd, None);
        Ok(acp::NewSessionResponse::new(id).modes(live::modes(mode, modes)))
    }

    fn load_session(
        &mut self,
        request: acp::LoadSessionRequest,
        responder: Responder<acp::LoadSessionResponse>,
    ) {
        // Open here already: the session replays what it has.
        if let Some(handle) = self.sessions.get(&*request.session_id.0) {
            if let Err(refused) = handle.commands.send(Command::Replay(responder)) {
                if let Command::Replay(responder) = refused.0 {
                    answer(responder, Err(failed("the session has ended")));
                }
            }
            return;
        }
        let resume = Resume::Id(request.session_id.to_string());
        match self.open(&request.cwd, Some(resume), &request.mcp_servers) {
            Ok(opened) => self.start(opened, request.cwd, Some(Command::Replay(responder))),
            Err(e) => answer(responder, Err(e)),
        }
    }

    /// Open a session in `cwd` with the client's MCP servers added to the
    /// configured ones.
    fn open(
        &self,
        cwd: &std::path::Path,
        resume: Option<Resume>,
        servers: &[acp::McpServer],
    ) -> Result<Opened, Error> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(invalid(format!(
                "cwd `{}` is not an absolute path to a directory",
                cwd.display()
            )));
        }
        let resuming = resume.is_some();
        let mut opened = interactive::open(
            &self.options,
            &self.launch_dir,
            cwd.to_path_buf(),
            resume,
            false,
        )
        .map_err(|e| if resuming { invalid(e) } else { failed(e) })?;
        opened.configured.warn_problems();
        for server in servers {
            match client_server(server) {
                Ok(config) => {
                    let mcp = &mut opened.configured.mcp;
                    mcp.servers.retain(|s| s.name != config.name);
                    mcp.servers.push(config);
                }
                Err(e) => return Err(invalid(e)),
            }
        }
        Ok(opened)
    }

    /// Put an opened session on its task; `first` is its first command.
    fn start(&mut self, opened: Opened, cwd: PathBuf, first: Option<Command>) {
        let Opened {
            mut session,
            file,
            configured,
        } = opened;
        let Configured {
            config,
            mode,
            modes,
            home,
            mcp,
            project_trusted,
            ..
        } = configured;
        let max_context_bytes = config.max_context_bytes;
        let id = acp::SessionId::new(session.id.clone());
        let updates = Arc::new(Updates::new(self.cx.clone(), id.clone(), cwd.clone()));
        let stop = session.stop_handle();
        session.set_approver(Arc::new(ClientApprover {
            cx: self.cx.clone(),
            session: id.clone(),
            updates: updates.clone(),
            stop: stop.clone(),
        }));
        if self.fs.read_text_file || self.fs.write_text_file {
            session.set_files(Files::through(Arc::new(ClientFiles {
                cx: self.cx.clone(),
                session: id.clone(),
                runtime: tokio::runtime::Handle::current(),
                reads: self.fs.read_text_file,
                writes: self.fs.write_text_file,
            })));
        }
        let requested = Arc::new(Mutex::new(mode));
        let live = Live {
            session,
            config,
            mode,
            modes,
            requested: requested.clone(),
            commands: Registry::load(commands::builtins(), &cwd, &home, project_trusted).0,
            advertised: Vec::new(),
            updates: updates.clone(),
            file,
            cwd,
            home,
            max_context_bytes,
            mcp,
            project_trusted,
            servers: None,
            save_failure_reported: false,
        };
        let (tx, rx) = unbounded_channel();
        if let Some(first) = first {
            // The channel is new and its receiver is alive.
            let _ = tx.send(first);
        }
        let task = tokio::task::spawn_local(live.run(rx));
        self.sessions.insert(
            id.to_string(),
            Handle {
                commands: tx,
                stop,
                requested,
                updates,
                task,
            },
        );
    }

    fn list(&self, request: acp::ListSessionsRequest) -> Result<acp::ListSessionsResponse, Error> {
        let saved = Store::new(&self.home)
            .list()
            .map_err(|e| failed(e.to_string()))?;
        let sessions = saved
            .into_iter()
            .filter(|s| request.cwd.as_ref().is_none_or(|cwd| &s.cwd == cwd))
            .map(|s| {
                let title: String = s.first_prompt.chars().take(80).collect();
                let (date, (h, m, sec)) = utc_date_time(s.started_at);
                acp::SessionInfo::new(s.id, s.cwd)
                    .title((!title.trim().is_empty()).then(|| title.trim().to_string()))
                    .updated_at(format!("{date}T{h:02}:{m:02}:{sec:02}Z"))
            })
            .collect();
        Ok(acp::ListSessionsResponse::new(sessions))
    }

    fn set_mode(
        &self,
        request: &acp::SetSessionModeRequest,
    ) -> Result<acp::SetSessionModeResponse, Error> {
        let handle = self.session(&request.session_id)?;
        let mode = Mode::parse(&request.mode_id.0).ok_or_else(|| {
            let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
            invalid(format!(
                "unknown mode `{}`; this session's modes are {}",
                request.mode_id,
                names.join(", ")
            ))
        })?;
        if let Ok(mut requested) = handle.requested.lock() {
            *requested = mode;
        }
        handle.updates.send(acp::SessionUpdate::CurrentModeUpdate(
            acp::CurrentModeUpdate::new(mode.name()),
        ));
        Ok(acp::SetSessionModeResponse::new())
    }
}

/// What cogni can do, for `initialize`.
pub fn initialize() -> acp::InitializeResponse {
    let capabilities = acp::AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(
            acp::PromptCapabilities::new()
                .embedded_context(true)
                .image(true),
        )
        .mcp_capabilities(acp::McpCapabilities::new().http(true))
        .session_capabilities(
            acp::SessionCapabilities::new().list(acp::SessionListCapabilities::new()),
        );
    acp::InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(
            acp::Implementation::new("cogni", env!("CARGO_PKG_VERSION")).title("cogni".to_string()),
        )
}

/// An MCP server the client passed, as cogni's MCP client starts it.
fn client_server(server: &acp::McpServer) -> Result<ServerConfig, String> {
    let (name, transport) = match server {
        acp::McpServer::Stdio(s) => (
            s.name.clone(),
            Transport::Stdio {
                command: s.command.display().to_string(),
                args: s.args.clone(),
                env: s.env.iter().map(|v| (v.name.clone(), v.value.clone())).collect(),
                env_vars: Vec::new(),
                cwd: None,
            },
        ),
        acp::McpServer::Http(s) => (
            s.name.clone(),
            Transport::Http {
                url: s.url.clone(),
                headers: s
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
                env_headers: Default::default(),
                bearer_token_env_var: None,
            },
        ),
        _ => {
            return Err(
                "cogni starts MCP servers over stdio or streamable HTTP, not SSE; drop the server or give its HTTP endpoint"
                    .into(),
            )
        }
    };
    Ok(ServerConfig {
        name,
        transport,
        enabled: true,
        required: false,
        startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        tool_timeout: crate::mcp::config::DEFAULT_TOOL_TIMEOUT,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        trusted_tools: Vec::new(),
    })
}
