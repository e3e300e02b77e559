//! `cogni --acp CMD` (the REPL): each line is a prompt to the agent,
//! rendered by the REPL's sink, its permission requests asked with the
//! REPL's one-key approver. The prompt shows the agent's mode; `/mode`
//! lists and switches the agent's modes, `/help` lists cogni's commands
//! and the agent's (`/NAME ARGS` of an agent command goes to it as the
//! prompt). Ctrl-C during a turn sends `session/cancel`, a second one
//! kills the agent (and the REPL ends). As in the REPL, `/help`, `/exit`,
//! `/quit` and `/clear` are reserved; an agent command named `mode` takes
//! `/mode`, the built-in staying `/cogni:mode`.

use super::session::Remote;
use super::{configure, connect, Control, Failure, Launch};
use crate::cli::render::{one_line, strip_terminal_controls};
use crate::cli::repl::approver::ReplApprover;
use crate::cli::repl::editor::{Completions, Editor, Input, Prompt};
use crate::cli::repl::notify::Notifier;
use crate::cli::repl::sink::ReplSink;
use crate::cli::repl::{listen_for_signals, private_file, term, Quit};
use crate::cli::{exit, setup, slash, ReplArgs};
use crate::protocol::TurnOutcome;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// cogni's own commands here (the agent's come after them in `/help`).
const BUILTINS: &[(&str, &str, &str)] = &[
    ("help", "", "list every command"),
    ("mode", "[ID]", "show the agent's modes, or switch to one"),
    ("clear", "", "clear the screen"),
    ("exit", "", "leave (also /quit, Ctrl-D)"),
    ("quit", "", "leave"),
];

/// Run the REPL in front of the agent; the exit code.
pub fn run(args: ReplArgs) -> u8 {
    let setup = match configure(&args.common, &args.policy) {
        Ok(setup) => setup,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    term::guard_panics();
    let history = setup.home.join("history");
    private_file(&history);
    let completions = Completions {
        commands: Arc::new(Mutex::new(names(&[]))),
        cwd: setup.cwd.clone(),
    };
    let names = completions.commands.clone();
    let editor = match Editor::start(Some(history), completions) {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::USAGE;
        }
    };
    let runtime = match setup::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::TASK_FAILED;
        }
    };
    let sink = ReplSink::new(term::Caps::detect(args.no_color));
    let control = Control::default();
    let stop = {
        let control = control.clone();
        Arc::new(move || control.stop())
    };
    // No notifications: the agent's turns are not watched for focus.
    let approver = ReplApprover::new(
        stop.clone(),
        sink.caps(),
        setup.cwd.clone(),
        Notifier::default(),
    );
    let launch = Launch {
        command: args.acp.clone().unwrap_or_default(),
        cwd: setup.cwd.clone(),
        timeout: Duration::from_secs(args.acp_timeout),
        mcp: setup.mcp.clone(),
    };
    let ended = runtime.block_on(async {
        let quit = match listen_for_signals(stop) {
            Ok(quit) => quit,
            Err(e) => {
                sink.error(&format!("warning: {e}"));
                Arc::new(Quit::default())
            }
        };
        sink.note(&format!(
            "cogni · starting {}…",
            one_line(&launch.command, 80)
        ));
        let front = Front {
            sink: &sink,
            approver: &approver,
            names,
        };
        let ended = connect(&launch, setup.files.clone(), control, async |remote| {
            front.serve(remote, &editor, &quit).await
        })
        .await;
        (ended, quit.signal())
    });
    drop(editor);
    term::restore();
    match ended {
        (_, Some(signal)) => signal.exit_code(),
        (Ok(None), None) => exit::DONE,
        // Shown as the turn's failure.
        (Ok(Some(gone)), None) => gone.code(),
        (Err(failure), None) => {
            eprintln!("cogni: {}", failure.message());
            failure.code()
        }
    }
}

/// What the REPL keeps besides the agent's session.
struct Front<'a> {
    sink: &'a ReplSink,
    approver: &'a ReplApprover,
    /// What Tab completes to (kept current with the agent's commands).
    names: Arc<Mutex<Vec<String>>>,
}

/// What happens after a line.
enum Flow {
    Continue,
    Exit,
    Prompt(String),
}

impl Front<'_> {
    /// Read lines until the user leaves; `Some` when the agent went away
    /// during a turn (which showed why).
    async fn serve(
        &self,
        mut remote: Remote,
        editor: &Editor,
        quit: &Quit,
    ) -> Result<Option<Failure>, Failure> {
        self.sink.note(&format!(
            "cogni · acp · {} · session {}",
            one_line(remote.agent(), 60),
            one_line(remote.session_id(), 60)
        ));
        self.sink.note(
            "/help lists commands · /mode the agent's modes · Ctrl-C stops a turn · Ctrl-D quits",
        );
        let mut last_interrupt: Option<Instant> = None;
        // What was typed before a Shift-Tab, back on the line.
        let mut typed = String::new();
        loop {
            remote.drain(self.sink, self.approver).await;
            if let Ok(mut known) = self.names.lock() {
                *known = names(remote.commands());
            }
            let shown = Prompt {
                initial: std::mem::take(&mut typed),
                ..prompt(&remote, self.sink.caps().color)
            };
            let input = tokio::select! {
                biased;
                () = quit.requested() => break,
                input = editor.read(shown) => input,
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
                // The agent's modes are switched with /mode; the line stays.
                Input::NextMode(line) => {
                    self.sink.note("(the agent's modes: /mode)");
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
            // What came while the user typed (a new list of commands).
            remote.drain(self.sink, self.approver).await;
            let flow = match slash::split(text) {
                Some((name, args)) => self.command(&mut remote, text, name, args).await,
                None => Flow::Prompt(text.to_string()),
            };
            match flow {
                Flow::Exit => break,
                Flow::Continue => {}
                Flow::Prompt(text) => {
                    if let Err(gone) = self.turn(&mut remote, &text).await {
                        return Ok(Some(gone));
                    }
                }
            }
            if quit.signal().is_some() {
                break;
            }
        }
        if let Some(signal) = quit.signal() {
            self.sink.note(&format!("({}: leaving)", signal.name()));
        }
        Ok(None)
    }

    /// One prompt; `Err` when the agent is gone.
    async fn turn(&self, remote: &mut Remote, text: &str) -> Result<(), Failure> {
        let spinner = self.sink.spawn_spinner();
        let result = remote.prompt(text, self.sink, self.approver).await;
        if let Some(spinner) = spinner {
            spinner.abort();
        }
        self.sink.idle();
        match result {
            Ok((_, TurnOutcome::Interrupted, _)) => {
                self.sink.note("(cancelled; back at the prompt)");
                Ok(())
            }
            Ok((_, TurnOutcome::Done, _)) => Ok(()),
            Ok((stop, _, _)) => {
                self.sink.note(&format!(
                    "(the agent stopped: {})",
                    super::events::describe(stop)
                ));
                Ok(())
            }
            // The error was shown as the turn's failure.
            Err(Failure::Agent(_)) => Ok(()),
            Err(gone) => Err(gone),
        }
    }

    async fn command(&self, remote: &mut Remote, text: &str, name: &str, args: &str) -> Flow {
        let agents = remote.commands().iter().any(|c| c.name == name);
        let reserved = slash::RESERVED.contains(&name);
        let builtin = match name.strip_prefix("cogni:") {
            Some(name) => name,
            None if agents && !reserved => return Flow::Prompt(text.to_string()),
            None => name,
        };
        match builtin {
            "help" => self.help(remote),
            "mode" if args.is_empty() => self.modes(remote),
            "mode" => match remote.set_mode(args).await {
                Ok(()) => self.sink.note(&format!("mode: {}", one_line(args, 60))),
                Err(e) => self.sink.error(&strip_terminal_controls(&e)),
            },
            "clear" => {
                if self.sink.caps().ansi {
                    self.sink.say("\x1b[2J\x1b[H");
                }
            }
            "exit" | "quit" => return Flow::Exit,
            _ => self.sink.error(&format!(
                "unknown command /{}; /help lists them",
                one_line(name, 60)
            )),
        }
        Flow::Continue
    }

    fn help(&self, remote: &Remote) {
        let taken = |name: &str| remote.commands().iter().any(|c| c.name == name);
        let mut text = String::from("commands:\n");
        for (name, usage, help) in BUILTINS {
            let name = if taken(name) && !slash::RESERVED.contains(name) {
                format!("cogni:{name}")
            } else {
                name.to_string()
            };
            let shown = format!("/{name} {usage}");
            let _ = writeln!(text, "  {:<40} {help}", shown.trim_end());
        }
        let theirs: Vec<_> = remote
            .commands()
            .iter()
            .filter(|c| !slash::RESERVED.contains(&c.name.as_str()))
            .collect();
        if !theirs.is_empty() {
            text.push_str("the agent's commands (sent to it as the prompt):\n");
        }
        for command in theirs {
            let input = match &command.input {
                Some(agent_client_protocol::v1::schema::AvailableCommandInput::Unstructured(i)) => {
                    format!(" {}", one_line(&i.hint, 30))
                }
                _ => String::new(),
            };
            let shown = format!("/{}{input}", one_line(&command.name, 40));
            let _ = writeln!(
                text,
                "  {shown:<40} {}",
                one_line(&command.description, 100)
            );
        }
        text.push_str("Tab completes · Ctrl-C stops a turn (twice: kills the agent)");
        self.sink.say(&text);
    }

    fn modes(&self, remote: &Remote) {
        let Some(modes) = remote.modes() else {
            self.sink.note("the agent has no modes");
            return;
        };
        let mut text = String::from("the agent's modes (/mode ID switches):\n");
        for mode in &modes.available_modes {
            let mark = if mode.id == modes.current_mode_id {
                "*"
            } else {
                " "
            };
            let about = mode
                .description
                .as_deref()
                .map(|d| format!(" · {}", one_line(d, 100)))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "{mark} {:<12} {}{about}",
                one_line(&mode.id.0, 40),
                one_line(&mode.name, 40)
            );
        }
        self.sink.say(text.trim_end());
    }
}

/// The prompt: the agent's mode, or `acp`.
fn prompt(remote: &Remote, color: bool) -> Prompt {
    let mode = remote
        .modes()
        .map(|m| one_line(&m.current_mode_id.0, 20))
        .unwrap_or_else(|| "acp".into());
    let raw = format!("{mode} › ");
    let styled = if color {
        format!("\x1b[36m{mode}\x1b[0m › ")
    } else {
        raw.clone()
    };
    Prompt {
        raw,
        styled,
        initial: String::new(),
    }
}

/// Tab's names: the built-ins and the agent's commands.
fn names(commands: &[agent_client_protocol::v1::schema::AvailableCommand]) -> Vec<String> {
    let mut names: Vec<String> = BUILTINS.iter().map(|(n, _, _)| format!("/{n}")).collect();
    names.extend(
        commands
            .iter()
            .map(|c| format!("/{}", strip_terminal_controls(&c.name))),
    );
    names
}
