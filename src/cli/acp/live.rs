//! One ACP session: a cogni session on a task of its own, taking its
//! prompts in order. A prompt is a slash command or one turn of the
//! engine, whose events stream to the client as session updates; the
//! turn's outcome is the prompt's stop reason.

use super::commands::{self, Registry};
use super::updates::Updates;
use super::Responder;
use crate::agent::{EndReason, Session, SessionConfig, TurnResult};
use crate::cli::mode::{sync_plan_note, Mode, Modes};
use crate::cli::slash;
use crate::mcp::{McpConfig, Servers};
use crate::protocol::{Limit, TurnOutcome};
use crate::store::SessionFile;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::Error;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::UnboundedReceiver;

/// What the agent asks of a session.
pub enum Command {
    Prompt(Vec<acp::ContentBlock>, Responder<acp::PromptResponse>),
    /// Replay the conversation, then answer the `session/load`.
    Replay(Responder<acp::LoadSessionResponse>),
}

/// A session's state on its task.
pub struct Live {
    pub session: Session,
    /// Its configuration now (model and mode applied).
    pub config: SessionConfig,
    pub mode: Mode,
    /// Act and auto run commands without the kernel sandbox.
    pub modes: Modes,
    /// The mode the client chose last (`session/set_mode`), applied
    /// before the next prompt.
    pub requested: Arc<Mutex<Mode>>,
    pub commands: Registry,
    /// The commands the client was told about last.
    pub advertised: Vec<acp::AvailableCommand>,
    pub updates: Arc<Updates>,
    pub file: Option<Arc<SessionFile>>,
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub max_context_bytes: usize,
    pub mcp: McpConfig,
    /// The directory is trusted: its own commands load.
    pub project_trusted: bool,
    pub servers: Option<Servers>,
    pub save_failure_reported: bool,
}

impl Live {
    /// Take commands until the agent lets go of the session, then end it.
    pub async fn run(mut self, mut commands: UnboundedReceiver<Command>) {
        self.advertise();
        let mut servers_started = false;
        while let Some(command) = commands.recv().await {
            match command {
                Command::Replay(responder) => {
                    let history = self.session.history()[self.session.initial_len()..].to_vec();
                    self.updates.replay(&history);
                    let response =
                        acp::LoadSessionResponse::new().modes(modes(self.mode, self.modes));
                    if responder.respond(response).is_err() {
                        tracing::debug!("session/load answered after the client left");
                    }
                }
                Command::Prompt(blocks, responder) => {
                    if !servers_started {
                        servers_started = true;
                        self.start_servers().await;
                    }
                    let answer = self.prompt(blocks).await;
                    if responder.respond_with_result(answer).is_err() {
                        tracing::debug!("session/prompt answered after the client left");
                    }
                }
            }
        }
        self.session.end(EndReason::Exit, &*self.updates).await;
        if let Some(servers) = &self.servers {
            servers.shut_down().await;
        }
    }

    /// The configured MCP servers; one that does not start is a warning
    /// (a required one too: the editor's session goes on without it).
    async fn start_servers(&mut self) {
        let updates = self.updates.clone();
        match crate::cli::mcp::attach(&mut self.session, &self.mcp, &*updates).await {
            Ok(servers) => self.servers = servers,
            Err(message) => {
                eprintln!("cogni: {message}");
                updates.say(&format!("MCP: {message}\n\n"));
            }
        }
    }

    /// The commands as they are now (command files may have come or
    /// gone), told to the client when they changed.
    fn advertise(&mut self) {
        let (mut registry, problems) = Registry::load(
            commands::builtins(),
            &self.cwd,
            &self.home,
            self.project_trusted,
        );
        for problem in problems {
            tracing::warn!(%problem, "slash command");
        }
        if let Some(skills) = &self.config.tool_config.skills {
            registry.add_skills(skills);
        }
        let available = commands::available(&registry);
        self.commands = registry;
        if available != self.advertised {
            self.advertised = available.clone();
            self.updates
                .send(acp::SessionUpdate::AvailableCommandsUpdate(
                    acp::AvailableCommandsUpdate::new(available),
                ));
        }
    }

    /// Switch to `mode` (the client asked, or `/mode`), and tell the
    /// client.
    pub fn switch_mode(&mut self, mode: Mode) {
        if let Ok(mut requested) = self.requested.lock() {
            *requested = mode;
        }
        self.apply_mode(mode);
        self.updates.send(acp::SessionUpdate::CurrentModeUpdate(
            acp::CurrentModeUpdate::new(mode.name()),
        ));
    }

    fn apply_mode(&mut self, mode: Mode) {
        if mode != self.mode {
            mode.switch(&mut self.session, &mut self.config, self.modes);
            self.mode = mode;
        }
    }

    async fn prompt(
        &mut self,
        blocks: Vec<acp::ContentBlock>,
    ) -> Result<acp::PromptResponse, Error> {
        let requested = self.requested.lock().map(|m| *m).unwrap_or(self.mode);
        self.apply_mode(requested);
        self.advertise();
        let (text, attached, images) = self.read_prompt(blocks)?;
        let text = match slash::split(text.trim()) {
            Some((name, args)) => match self.commands.find(name) {
                Some(slash::Found::Builtin(builtin)) => {
                    let run = builtin.run;
                    let answer = run(self, args).await;
                    self.updates.say(&answer);
                    return Ok(acp::PromptResponse::new(acp::StopReason::EndTurn));
                }
                Some(slash::Found::User(command)) => command.expand(args),
                None => {
                    self.updates
                        .say(&format!("unknown command /{name}; /help lists them"));
                    return Ok(acp::PromptResponse::new(acp::StopReason::EndTurn));
                }
            },
            None => text,
        };
        sync_plan_note(&mut self.session, self.mode);
        self.session
            .attach_images(images)
            .map_err(|e| Error::new(agent_client_protocol::ErrorCode::INVALID_PARAMS, e))?;
        let updates = self.updates.clone();
        let result = self.session.run_turn(&(text + &attached), &*updates).await;
        if let (Some(file), Ok(turn)) = (&self.file, &result) {
            file.record_usage(&turn.usage);
        }
        crate::cli::persist::report_failure(self.file.as_deref(), &mut self.save_failure_reported);
        match result {
            Ok(turn) => {
                if let Some(why) = unfinished(&turn, self.session.context().max_iterations) {
                    updates.say(&format!("\n\n(the turn stopped: {why})"));
                }
                Ok(acp::PromptResponse::new(stop_reason(&turn)))
            }
            Err(e) => Err(Error::new(
                agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                e.to_string(),
            )),
        }
    }

    /// The prompt's text, the files it links or embeds (to put after
    /// it), and its images (scaled down to what the APIs take).
    fn read_prompt(
        &self,
        blocks: Vec<acp::ContentBlock>,
    ) -> Result<(String, String, Vec<crate::protocol::Image>), Error> {
        let mut text = String::new();
        let mut linked = Vec::new();
        let mut embedded = String::new();
        let mut images = Vec::new();
        for block in blocks {
            match block {
                acp::ContentBlock::Text(t) => text.push_str(&t.text),
                acp::ContentBlock::ResourceLink(link) => linked.push(
                    link.uri
                        .strip_prefix("file://")
                        .unwrap_or(&link.uri)
                        .to_string(),
                ),
                acp::ContentBlock::Resource(resource) => match resource.resource {
                    acp::EmbeddedResourceResource::TextResourceContents(r) => {
                        let _ = write!(
                            embedded,
                            "\n\n<attached file=\"{}\">\n{}\n</attached>",
                            r.uri.strip_prefix("file://").unwrap_or(&r.uri),
                            r.text
                        );
                    }
                    _ => return Err(unsupported("binary resources")),
                },
                acp::ContentBlock::Image(image) => images.push(prompt_image(&image)?),
                acp::ContentBlock::Audio(_) => return Err(unsupported("audio")),
                _ => return Err(unsupported("this kind of content")),
            }
        }
        let (appendix, _) =
            crate::tools::attach::attach(&linked, &self.cwd, self.max_context_bytes);
        Ok((text, appendix + &embedded, images))
    }
}

/// An image block of a prompt, checked and scaled down like a file the
/// user attaches (its bytes, not its declared type, say what it is).
fn prompt_image(block: &acp::ImageContent) -> Result<crate::protocol::Image, Error> {
    use base64::Engine as _;
    let invalid =
        |message: String| Error::new(agent_client_protocol::ErrorCode::INVALID_PARAMS, message);
    let name = block
        .uri
        .as_deref()
        .map(|uri| uri.rsplit('/').next().unwrap_or(uri).to_string())
        .unwrap_or_else(|| "image".to_string());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block.data.as_bytes())
        .map_err(|e| invalid(format!("image {name}: its data is not base64: {e}")))?;
    crate::tools::image::from_bytes(&bytes, &name)
        .map(|prepared| prepared.image)
        .map_err(invalid)
}

fn unsupported(what: &str) -> Error {
    Error::new(
        agent_client_protocol::ErrorCode::INVALID_PARAMS,
        format!(
            "cogni takes text, images, file links and embedded text files in a prompt, not {what}"
        ),
    )
}

/// The modes a session offers, `current` first among equals, each
/// described as it works there (`modes`).
pub fn modes(current: Mode, modes: Modes) -> acp::SessionModeState {
    let available = Mode::ALL
        .into_iter()
        .map(|m| acp::SessionMode::new(m.name(), title(m.name())).description(m.description(modes)))
        .collect();
    acp::SessionModeState::new(current.name(), available)
}

fn title(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// How a turn's outcome reads as a stop reason.
fn stop_reason(turn: &TurnResult) -> acp::StopReason {
    match turn.outcome {
        TurnOutcome::Interrupted => acp::StopReason::Cancelled,
        TurnOutcome::Truncated => acp::StopReason::MaxTokens,
        TurnOutcome::BudgetExceeded if turn.limit == Some(Limit::Tokens) => {
            acp::StopReason::MaxTokens
        }
        TurnOutcome::MaxSteps | TurnOutcome::BudgetExceeded => acp::StopReason::MaxTurnRequests,
        TurnOutcome::Blocked | TurnOutcome::BlockedByReflect | TurnOutcome::EffectFailed => {
            acp::StopReason::Refusal
        }
        TurnOutcome::Done
        | TurnOutcome::EmptyResponse
        | TurnOutcome::RepeatedFailure
        | TurnOutcome::InvalidOutput => acp::StopReason::EndTurn,
    }
}

/// Why a turn ended before its work was done, for the user; `None` when
/// it finished or was cancelled.
fn unfinished(turn: &TurnResult, max_iterations: u32) -> Option<String> {
    match turn.outcome {
        TurnOutcome::Done | TurnOutcome::Interrupted => None,
        _ => Some(
            turn.reason
                .clone()
                .unwrap_or_else(|| crate::cli::launch::describe(&turn.outcome, max_iterations)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_map_to_stop_reasons() {
        let turn = |outcome, limit| TurnResult {
            outcome,
            final_text: String::new(),
            tool_calls: vec![],
            iterations: 1,
            usage: Default::default(),
            limit,
            reason: None,
        };
        let cases = [
            (TurnOutcome::Done, None, acp::StopReason::EndTurn),
            (TurnOutcome::Interrupted, None, acp::StopReason::Cancelled),
            (TurnOutcome::Truncated, None, acp::StopReason::MaxTokens),
            (
                TurnOutcome::MaxSteps,
                None,
                acp::StopReason::MaxTurnRequests,
            ),
            (
                TurnOutcome::BudgetExceeded,
                Some(Limit::Tokens),
                acp::StopReason::MaxTokens,
            ),
            (
                TurnOutcome::BudgetExceeded,
                Some(Limit::Cost),
                acp::StopReason::MaxTurnRequests,
            ),
            (TurnOutcome::Blocked, None, acp::StopReason::Refusal),
        ];
        for (outcome, limit, reason) in cases {
            assert_eq!(
                stop_reason(&turn(outcome.clone(), limit)),
                reason,
                "{outcome:?}"
            );
        }
        assert!(unfinished(&turn(TurnOutcome::Done, None), 25).is_none());
        let why = unfinished(&turn(TurnOutcome::MaxSteps, None), 25).unwrap();
        assert!(why.contains("25 steps"), "{why}");
    }

    #[test]
    fn every_mode_is_offered() {
        let state = modes(
            Mode::Act,
            Modes {
                unconfined: false,
                act: crate::protocol::ApprovalPolicy::OnRequest,
            },
        );
        assert_eq!(&*state.current_mode_id.0, "act");
        let names: Vec<&str> = state.available_modes.iter().map(|m| &*m.id.0).collect();
        assert_eq!(names, ["plan", "act", "auto"]);
        assert_eq!(state.available_modes[0].name, "Plan");
        let act = state.available_modes[1].description.as_deref().unwrap();
        assert!(
            act.contains("approval on-request") && act.contains("without asking"),
            "act says what it does: {act}"
        );
    }
}
