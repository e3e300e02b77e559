//! The interactive REPL: `cogni` on a terminal, or `cogni repl`.
//!
//! The line editor runs on its own thread ([`editor`]); the engine runs on
//! a current-thread tokio runtime; events are rendered by [`sink`].
//! Ctrl-C during a turn stops it through the session's `StopHandle` (the
//! stream is dropped, running commands are killed, every call gets an
//! output) and returns to the prompt; Ctrl-C twice within a second on an
//! empty prompt, Ctrl-D, `/exit` or `/quit` leave. SIGTERM and SIGHUP stop
//! the turn the same way and then leave (exit 143 / 129). Slash commands live in a
//! registry ([`commands`]). See docs/repl.md.

pub(super) mod approver;
mod commands;
pub(super) mod editor;
mod fold;
mod init;
mod keys;
mod markdown;
mod mentions;
mod menu;
pub(super) mod notify;
pub(super) mod picker;
mod question;
mod replay;
mod review;
pub(super) mod sink;
mod status;
pub(super) mod term;
pub(super) mod tty;
mod undo;

use super::exit;
use super::interactive::{self, Options};
use super::mode::{sync_plan_note, Mode, Modes};
use super::persist::{Persist, Resume};
use super::signals::{self, Interrupt, Interrupts};
use super::slash;
use super::ReplArgs;
use crate::agent::{start_session, EndReason, Session, SessionConfig, StopHandle, TurnResult};
use crate::mcp::{McpConfig, Servers};
use crate::protocol::TurnOutcome;
use crate::spec::cards::AgentCard;
use crate::store::{Redactor, SessionFile, Store};
use commands::{Flow, Registry};
use editor::{Completions, Editor, Input, Prompt};
use sink::ReplSink;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The REPL's state between inputs.
pub(super) struct Repl {
    session: Session,
    /// The configuration at start (flags, files): agent cards apply to it.
    original: SessionConfig,
    /// The configuration now (model, mode, agent card applied).
    current: SessionConfig,
    sink: ReplSink,
    file: Option<Arc<SessionFile>>,
    store: Store,
    persist: bool,
    /// Keeps secrets out of the session file.
    redact: Redactor,
    mode: Mode,
    /// `--no-sandbox` or a danger-full-access config: act and auto run
    /// commands unconfined.
    modes: Modes,
    agent: Option<String>,
    /// `--model` was given: it wins over an agent card's model.
    model_typed: bool,
    home: PathBuf,
    registry: Arc<Registry>,
    /// The running session's stop handle, for the Ctrl-C listener.
    stop: Arc<Mutex<StopHandle>>,
    approver: Arc<approver::ReplApprover>,
    save_failure_reported: bool,
    /// Agents to switch to (`/agent`) and delegate to.
    agents: Vec<AgentCard>,
    /// `[mcp_servers.NAME]`: started when the REPL starts.
    mcp_config: McpConfig,
    /// The started servers (their tools go to every session it opens).
    mcp: Option<Servers>,
    /// `cogni "PROMPT"`: sent as if typed at the first prompt.
    first: Option<String>,
    /// Typed while the last turn ran: lines to run next, the line begun.
    ahead: keys::Typed,
    /// The status line above the prompt.
    status: status::StatusLine,
    /// The terminal's notifications and the idle notice.
    notices: notify::Notices,
}

/// `cogni resume` without an id: the session the user picks on the
/// terminal (`None`: they cancelled).
pub fn pick_session(args: &ReplArgs) -> Result<Option<String>, String> {
    let (_, cwd) = super::setup::dirs(&args.common)?;
    let home = super::setup::home();
    picker::pick(&home, &cwd, term::Caps::detect(args.no_color).color)
}

/// Run the REPL, sending `first` as its first input if given; returns the
/// exit code.
pub fn run(args: ReplArgs, resume: Option<Resume>, fork: bool, first: Option<String>) -> u8 {
    if args.acp.is_some() {
        if first.is_some() {
            eprintln!("cogni: with --acp, type the first message at the prompt");
            return exit::USAGE;
        }
        if resume.is_some() {
            eprintln!(
                "cogni: --acp starts a new session of the agent; it cannot resume a saved one"
            );
            return exit::USAGE;
        }
        return super::acp_client::repl(args);
    }
    match prepare(args, resume, fork) {
        Ok((mut repl, completions)) => {
            repl.first = first;
            interact(repl, completions)
        }
        Err(message) => {
            eprintln!("cogni: {message}");
            exit::USAGE
        }
    }
}

fn prepare(
    args: ReplArgs,
    resume: Option<Resume>,
    fork: bool,
) -> Result<(Repl, Completions), String> {
    let (launch_dir, cwd) = super::setup::dirs(&args.common)?;
    let images =
        crate::tools::image::attach(&args.images, &cwd).map_err(|e| format!("--image {e}"))?;
    let options = Options {
        common: args.common,
        policy: args.policy,
        mode: args.mode.as_deref().and_then(Mode::parse),
        persist: !args.no_persist,
    };
    let interactive::Opened {
        mut session,
        file,
        configured,
    } = interactive::open(&options, &launch_dir, cwd.clone(), resume, fork)?;
    let sink = ReplSink::new(term::Caps::detect(args.no_color));
    let notices = notify::Notices::new(&configured.repl, sink.caps(), &|k| std::env::var(k).ok());
    let stop = Arc::new(Mutex::new(session.stop_handle()));
    let approver = Arc::new(approver::ReplApprover::new(
        stop_turn(stop.clone()),
        sink.caps(),
        cwd.clone(),
        notices.terminal(),
    ));
    session.set_approver(approver.clone());
    if !images.is_empty() {
        let shown: Vec<String> = images.iter().map(|p| p.summary()).collect();
        session
            .attach_images(images.into_iter().map(|p| p.image).collect())
            .map_err(|e| format!("--image: {e}"))?;
        sink.note(&format!(
            "attached to your first message: {}",
            shown.join(", ")
        ));
    }
    let (registry, problems) = commands::load(&cwd, &configured.home, configured.project_trusted);
    for p in problems.iter().chain(&configured.problems) {
        sink.error(&format!("warning: {p}"));
    }
    let registry = Arc::new(registry);
    let completions = Completions {
        commands: Arc::new(Mutex::new(registry.completion_names())),
        cwd,
    };
    let store = configured.store().clone();
    let repl = Repl {
        session,
        original: configured.config.clone(),
        current: configured.config,
        sink,
        file,
        store,
        persist: options.persist,
        redact: configured.redact,
        mode: configured.mode,
        modes: configured.modes,
        agent: None,
        model_typed: options.common.model.is_some(),
        home: configured.home,
        registry,
        stop,
        approver,
        save_failure_reported: false,
        agents: configured.cards,
        mcp_config: configured.mcp,
        mcp: None,
        first: None,
        ahead: keys::Typed::default(),
        status: status::StatusLine::new(configured.repl.status_line),
        notices,
    };
    Ok((repl, completions))
}

fn interact(mut repl: Repl, completions: Completions) -> u8 {
    term::guard_panics();
    let history = repl.home.join("history");
    private_file(&history);
    let editor = match Editor::start(Some(history), completions) {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::USAGE;
        }
    };
    let runtime = match crate::cli::setup::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::TASK_FAILED;
        }
    };
    let quit = runtime.block_on(async {
        let quit = match listen_for_signals(stop_turn(repl.stop.clone())) {
            Ok(quit) => quit,
            Err(e) => {
                repl.sink.error(&format!("warning: {e}"));
                Arc::new(Quit::default())
            }
        };
        // A required MCP server that does not start ends the REPL before
        // it begins.
        match super::mcp::attach(&mut repl.session, &repl.mcp_config, &repl.sink).await {
            Ok(servers) => repl.mcp = servers,
            Err(message) => return Err(message),
        }
        repl.banner();
        repl.main_loop(&editor, &quit).await;
        let reason = match quit.signal() {
            Some(_) => EndReason::Signal,
            None => EndReason::Exit,
        };
        repl.session.end(reason, &repl.sink).await;
        if let Some(servers) = &repl.mcp {
            servers.shut_down().await;
        }
        repl.say_how_to_resume();
        Ok(quit)
    });
    drop(editor);
    term::restore();
    match quit {
        Ok(quit) => quit.signal().map_or(exit::DONE, Interrupt::exit_code),
        Err(message) => {
            eprintln!("cogni: {message}");
            exit::USAGE
        }
    }
}

/// Create `path` readable by its owner only, if it does not exist: typed
/// input may hold secrets.
pub(super) fn private_file(path: &std::path::Path) {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    // (On Windows the file is private by the profile directory's ACL.)
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let _ = options.open(path);
}

/// A signal that ends the REPL (SIGTERM or SIGHUP), once one came.
#[derive(Default)]
pub(super) struct Quit {
    signal: OnceLock<Interrupt>,
    notify: tokio::sync::Notify,
}

impl Quit {
    pub(super) fn signal(&self) -> Option<Interrupt> {
        self.signal.get().copied()
    }

    pub(super) async fn requested(&self) {
        while self.signal().is_none() {
            self.notify.notified().await;
        }
    }
}

/// What stops the running turn of the session `stop` points at.
fn stop_turn(stop: Arc<Mutex<StopHandle>>) -> Arc<dyn Fn() + Send + Sync> {
    Arc::new(move || {
        if let Ok(stop) = stop.lock() {
            stop.stop();
        }
    })
}

/// Ctrl-C while a turn runs (the terminal is not in the editor's raw
/// mode then) arrives as SIGINT: it stops the turn (`stop`), not the
/// program. SIGTERM and SIGHUP stop the turn too and then end the REPL
/// (the session is saved as it goes); a second one leaves at once.
pub(super) fn listen_for_signals(stop: Arc<dyn Fn() + Send + Sync>) -> Result<Arc<Quit>, String> {
    let mut interrupts = Interrupts::listen()?;
    let quit = Arc::new(Quit::default());
    let requested = quit.clone();
    tokio::spawn(async move {
        while let Some(signal) = interrupts.recv().await {
            stop();
            if signal == Interrupt::Int {
                continue;
            }
            if requested.signal.set(signal).is_err() {
                term::restore();
                signals::exit_now(signal);
            }
            requested.notify.notify_one();
        }
    });
    Ok(quit)
}

impl Repl {
    fn banner(&self) {
        let ctx = self.session.context();
        let resumed = self.session.history().len() > self.session.initial_len();
        self.sink.note(&format!(
            "cogni · {} · {} · {} mode · session {}{}",
            self.session.provider_id(),
            ctx.model,
            self.mode.name(),
            self.session.id,
            if resumed { " (resumed)" } else { "" }
        ));
        self.sink.note(
            "/help lists commands · @path attaches a file · Ctrl-C stops a turn · Ctrl-D quits",
        );
        if resumed {
            self.show_earlier();
        }
    }

    /// A resumed session's conversation so far, on screen.
    fn show_earlier(&self) {
        let lines = replay::lines(
            self.session.history(),
            self.session.initial_len(),
            self.sink.caps().color,
        );
        if !lines.is_empty() {
            self.sink.say(&lines.join("\n"));
        }
    }

    fn prompt(&self) -> Prompt {
        let mode = self.mode.name();
        let raw = format!("{mode} › ");
        let styled = if self.sink.caps().color {
            let code = match self.mode {
                Mode::Plan => "34",
                Mode::Act => "32",
                Mode::Auto => "33",
            };
            format!("\x1b[{code}m{mode}\x1b[0m › ")
        } else {
            raw.clone()
        };
        Prompt {
            raw,
            styled,
            initial: String::new(),
        }
    }

    async fn main_loop(&mut self, editor: &Editor, quit: &Quit) {
        let mut last_interrupt: Option<Instant> = None;
        // What was typed before a Shift-Tab, back on the line.
        let mut typed = String::new();
        loop {
            let next = match self.first.take() {
                Some(text) => Some(text),
                None if !self.ahead.lines.is_empty() => Some(self.ahead.lines.remove(0)),
                None => None,
            };
            let input = match next {
                Some(text) => {
                    self.sink.say(&format!("{}{text}", self.prompt().styled));
                    Input::Line(text)
                }
                None => {
                    let mut initial = std::mem::take(&mut typed);
                    initial.push_str(&std::mem::take(&mut self.ahead.partial));
                    self.show_status();
                    let prompt = Prompt {
                        initial,
                        ..self.prompt()
                    };
                    tokio::select! {
                        biased;
                        () = quit.requested() => break,
                        input = self.read_input(editor, prompt) => input,
                    }
                }
            };
            let text = match input {
                Input::Eof => break,
                Input::Interrupted => {
                    if last_interrupt.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
                        break;
                    }
                    last_interrupt = Some(Instant::now());
                    self.sink.note("(Ctrl-C again to quit, or /exit)");
                    continue;
                }
                Input::NextMode(line) => {
                    let next = self.mode.next();
                    self.set_mode(next);
                    self.sink
                        .note(&crate::cli::mode::switched(next, self.modes));
                    typed = line;
                    continue;
                }
                Input::Line(text) => text,
            };
            last_interrupt = None;
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let flow = if text.starts_with('/') {
                self.command(text).await
            } else {
                Flow::Submit(text.to_string())
            };
            if quit.signal().is_some() {
                break;
            }
            match flow {
                Flow::Exit => break,
                Flow::Continue => {}
                Flow::Submit(message) => {
                    self.turn(message).await;
                }
            }
        }
        if let Some(signal) = quit.signal() {
            self.sink.note(&format!(
                "({}: the session is saved; leaving)",
                signal.name()
            ));
        }
    }

    /// Run a slash command.
    async fn command(&mut self, text: &str) -> Flow {
        let Some((name, args)) = slash::split(text) else {
            return Flow::Submit(text.to_string());
        };
        let registry = self.registry.clone();
        match registry.find(name) {
            Some(slash::Found::Builtin(cmd)) => (cmd.run)(self, args).await,
            Some(slash::Found::User(cmd)) => Flow::Submit(cmd.expand(args)),
            None => {
                self.sink
                    .error(&format!("unknown command /{name}; /help lists them"));
                Flow::Continue
            }
        }
    }

    /// One turn for a user message; its result, unless it failed.
    async fn turn(&mut self, text: String) -> Option<TurnResult> {
        sync_plan_note(&mut self.session, self.mode);
        let cwd = self.session.context().cwd.clone();
        let expanded = mentions::expand(&text, &cwd, self.current.max_context_bytes);
        for problem in &expanded.problems {
            self.sink.error(problem);
        }
        let images = expanded.images.into_iter().map(|p| p.image).collect();
        if let Err(e) = self.session.attach_images(images) {
            self.sink.error(&e);
            return None;
        }
        if !expanded.attached.is_empty() {
            self.sink
                .note(&format!("attached: {}", expanded.attached.join(", ")));
        }
        let message = expanded.message;
        let spinner = self.sink.spawn_spinner();
        let started = Instant::now();
        // Esc stops the turn as Ctrl-C does; typing is kept for later.
        let follow_focus = self.notices.follow_focus();
        let keys = keys::TurnKeys::start(stop_turn(self.stop.clone()), follow_focus);
        let result = self.session.run_turn(&message, &self.sink).await;
        if let Some(keys) = keys {
            self.ahead = keys.finish();
        }
        if let Some(spinner) = spinner {
            spinner.abort();
        }
        self.notices.turn_ended(started.elapsed(), &result);
        if let (Some(file), Ok(turn)) = (&self.file, &result) {
            file.record_usage(&turn.usage);
        }
        self.report_save_failure();
        let turn = result.ok()?;
        if turn.outcome == TurnOutcome::Interrupted {
            self.sink.note("(interrupted; back at the prompt)");
        }
        Some(turn)
    }

    /// On leaving: the command that continues this session, when it was
    /// saved (and something was said in it).
    fn say_how_to_resume(&self) {
        let saved = self
            .file
            .as_ref()
            .is_some_and(|f| f.failure().is_none() && f.path().is_file());
        if saved && self.session.history().len() > self.session.initial_len() {
            self.sink.note(&format!(
                "resume this session: cogni resume {}",
                self.session.id
            ));
        }
    }

    fn report_save_failure(&mut self) {
        if let Some(failure) = self.file.as_ref().and_then(|f| f.failure()) {
            if !self.save_failure_reported {
                self.sink.error(&format!("error: {failure}"));
                self.save_failure_reported = true;
            }
        }
    }

    /// Switch mode: new policies, told to the model as an environment
    /// diff (the plan note follows with the next message).
    fn set_mode(&mut self, mode: Mode) {
        mode.switch(&mut self.session, &mut self.current, self.modes);
        self.mode = mode;
    }

    /// Replace the session (after `/resume`), keeping the REPL's approver
    /// and the Ctrl-C listener pointed at it.
    fn install_session(&mut self, mut session: Session, file: Option<Arc<SessionFile>>) {
        session.set_approver(self.approver.clone());
        if let Ok(mut stop) = self.stop.lock() {
            *stop = session.stop_handle();
        }
        self.session = session;
        self.file = file;
        self.save_failure_reported = false;
        self.sink.forget_context();
    }

    async fn resume(&mut self, id: &str) -> Result<(), String> {
        let id = self.store.resolve(id).map_err(|e| e.to_string())?;
        if id == self.session.id {
            return Err(format!("session {id} is the one open"));
        }
        let persist = Persist {
            store: self.store.clone(),
            enabled: self.persist,
            resume: Some(Resume::Id(id)),
            fork: false,
        };
        let mut config = self.current.clone();
        config.model_override = None;
        persist.prepare(&mut config)?;
        // The configuration carries the agents to delegate to.
        let mut session = start_session(config.clone()).map_err(|e| e.to_string())?;
        if let Some(servers) = &self.mcp {
            session.add_tools(servers.tools());
        }
        let file = persist.attach(&mut session, self.redact.clone())?;
        self.session.end(EndReason::Switched, &self.sink).await;
        self.current = config;
        self.install_session(session, file);
        Ok(())
    }
}
