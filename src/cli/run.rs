//! `cogni run`: one task, non-interactive, an exit code that tells the truth.

use super::approve::TerminalApprover;
use super::exit;
use super::persist::{self, Persist, Resume};
use super::render::{strip_terminal_controls, Human, Jsonl, RenderOptions};
use super::{setup, signals, RunArgs};
use crate::agent::{start_session_with_provider, AgentError, Delegating, EndReason, Session};
use crate::config::ConfigFile;
use crate::mcp::McpConfig;
use crate::protocol::{AgentEvent, ContextFile, EventSink, SandboxMode, TurnOutcome};
use crate::provider::{self, record, record::Recording};
use crate::store::{Redactor, SessionFile, Store};
use crate::tools::attach;
use crate::tools::fs::write_atomic;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Run the command and return its exit code.
pub fn run(args: RunArgs) -> u8 {
    if args.batch.tasks.is_some() {
        return super::tasks::run(args);
    }
    match prepare(&args) {
        Ok((session, task, context, verbose_max_bytes, file, redact, recorder, mcp)) => {
            let code = execute(
                session,
                Task {
                    text: task,
                    context,
                    mcp,
                },
                &args,
                verbose_max_bytes,
                file,
                redact,
            );
            match recorder.map(|r| r.finish()) {
                Some(Err(message)) => {
                    eprintln!("cogni: {message}");
                    code.max(exit::TASK_FAILED)
                }
                _ => code,
            }
        }
        Err(message) => {
            eprintln!("cogni: {message}");
            exit::USAGE
        }
    }
}

/// Everything that can fail before the first request: arguments, config,
/// session. Failures here are usage or config errors (exit 2).
type Prepared = (
    Session,
    String,
    Vec<ContextFile>,
    usize,
    Option<Arc<SessionFile>>,
    Redactor,
    Option<Recorder>,
    McpConfig,
);

/// `--record FILE`: the session's recording and where it goes.
struct Recorder {
    recording: Arc<Recording>,
    path: PathBuf,
    model: String,
    provider: String,
}

impl Recorder {
    /// Write the recording (also after a failed or interrupted turn).
    fn finish(self) -> Result<(), String> {
        let n = self
            .recording
            .write(&self.path, &self.model, &self.provider)?;
        eprintln!(
            "cogni: recorded {n} response{} to {}; replay it with --script {}",
            if n == 1 { "" } else { "s" },
            self.path.display(),
            self.path.display()
        );
        Ok(())
    }
}

fn prepare(args: &RunArgs) -> Result<Prepared, String> {
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    let mut task = read_task(args.task.as_deref().unwrap_or_default())?;
    let output_schema = match &args.output_schema {
        Some(path) => Some(read_schema(path)?),
        None => None,
    };
    if let Some(out) = &args.output_last_message {
        let parent = launch_dir.join(out);
        let parent = parent.parent().unwrap_or(Path::new("/"));
        if !parent.is_dir() {
            return Err(format!(
                "-o {}: directory {} does not exist",
                out.display(),
                parent.display()
            ));
        }
    }

    let flags = ConfigFile {
        sandbox_mode: if args.no_sandbox {
            Some(SandboxMode::DangerFullAccess)
        } else {
            args.sandbox
        },
        approval_policy: args.approval,
        max_iterations: args.max_iterations,
        ..Default::default()
    };
    let record = match &args.record {
        Some(path) => {
            let path = launch_dir.join(path);
            if path.is_dir() {
                return Err(format!(
                    "--record {}: a directory; give the script's file name",
                    path.display()
                ));
            }
            Some(path)
        }
        None if args.record_outputs => {
            return Err("--record-outputs goes with --record FILE (or --tasks)".into())
        }
        None => None,
    };
    let loaded = setup::load(&args.common, &launch_dir, cwd, flags)?;
    let home = loaded.home;
    let loaded = loaded.config;
    let catalog = super::agents::catalog(&loaded, &home);
    for problem in &catalog.problems {
        eprintln!("cogni: warning: {problem}");
    }
    let base = loaded.session.clone();
    let mut session_config = loaded.session;
    if let Some(name) = &args.batch.agent {
        let card = catalog
            .cards
            .iter()
            .find(|c| &c.name == name)
            .ok_or_else(|| format!("--agent {name}: no such agent; `cogni agents` lists them"))?;
        super::agents::apply(&mut session_config, card);
    }
    session_config.verbose = args.verbose;
    session_config.output_schema = output_schema;
    let redact = persist::redactor([&session_config]);
    setup::init_logging(&home, redact.clone());
    setup::check_sandbox(session_config.sandbox_policy.mode, args.no_sandbox)?;
    let persist = Persist {
        store: Store::new(&home),
        enabled: !args.no_persist,
        resume: args.resume.clone().map(Resume::Id),
        fork: args.fork,
    };
    persist.prepare(&mut session_config)?;
    let context = context_files(
        args,
        &mut task,
        &session_config.cwd,
        loaded.auto_context,
        loaded.max_context_bytes,
    )?;
    session_config.delegation = Some(Delegating {
        registry: super::agents::registry(&base, &catalog.cards),
        limits: loaded.delegation,
    });
    let recording = record
        .is_some()
        .then(|| Recording::new(redact.clone(), args.record_outputs));
    let provider = provider::create(&session_config.provider).map_err(|e| e.to_string())?;
    let provider = record::wrap(provider, recording.as_ref());
    let mut session =
        start_session_with_provider(session_config, provider).map_err(|e| e.to_string())?;
    let file = persist.attach(&mut session, redact.clone())?;
    let recorder = recording.zip(record).map(|(recording, path)| Recorder {
        recording,
        path,
        model: session.context().model.clone(),
        provider: session.provider_id().to_string(),
    });
    Ok((
        session,
        task,
        context,
        loaded.verbose_max_bytes,
        file,
        redact,
        recorder,
        loaded.mcp,
    ))
}

/// `--context PATH...` (each must exist), else with `[agent]
/// auto_context` the files the task names and the project's key files:
/// attached to the task within `max_context_bytes`.
fn context_files(
    args: &RunArgs,
    task: &mut String,
    cwd: &Path,
    auto_context: bool,
    max_bytes: usize,
) -> Result<Vec<ContextFile>, String> {
    for path in &args.context {
        if !cwd.join(path).exists() {
            return Err(format!(
                "--context {path}: no such file or directory (paths are relative to {})",
                cwd.display()
            ));
        }
    }
    let paths = if !args.context.is_empty() {
        args.context.clone()
    } else if auto_context {
        attach::relevant(task, cwd)
    } else {
        return Ok(Vec::new());
    };
    let (appendix, files) = attach::attach(&paths, cwd, max_bytes);
    task.push_str(&appendix);
    Ok(files)
}

fn read_task(task: &str) -> Result<String, String> {
    let text = if task == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .map_err(|e| format!("cannot read the task from stdin: {e}"))?;
        buf
    } else {
        task.to_string()
    };
    if text.trim().is_empty() {
        return Err(
            "the task is empty: pass it as an argument, or `-` to read it from stdin".into(),
        );
    }
    Ok(text)
}

fn read_schema(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--output-schema {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("--output-schema {}: invalid JSON: {e}", path.display()))?;
    if !value.is_object() {
        return Err(format!(
            "--output-schema {}: a JSON Schema must be a JSON object",
            path.display()
        ));
    }
    Ok(value)
}

/// The task as sent, the context files attached to it, and the MCP
/// servers to start for it.
struct Task {
    text: String,
    context: Vec<ContextFile>,
    mcp: McpConfig,
}

fn execute(
    mut session: Session,
    task: Task,
    args: &RunArgs,
    verbose_max_bytes: usize,
    file: Option<Arc<SessionFile>>,
    redact: Redactor,
) -> u8 {
    let options = RenderOptions {
        color: !args.no_color
            && std::env::var_os("NO_COLOR").is_none()
            && std::io::stderr().is_terminal(),
        stream_live: std::io::stderr().is_terminal(),
        stdout_is_terminal: std::io::stdout().is_terminal(),
        verbose: args.verbose,
        verbose_max_bytes,
    };
    let human;
    let jsonl;
    let sink: &dyn EventSink = if args.json {
        jsonl = Jsonl::new(options);
        &jsonl
    } else {
        human = Human::new(options);
        &human
    };
    // Questions go to a person only when one is at the keyboard; the task
    // itself may have come from stdin, which then is not a terminal.
    if std::io::stdin().is_terminal() && args.task.as_deref() != Some("-") {
        session.set_approver(Arc::new(TerminalApprover));
    }
    let ctx = session.context();
    sink.emit(AgentEvent::SessionStarted {
        session_id: session.id.clone(),
        model: ctx.model.clone(),
        provider: session.provider_id().to_string(),
        cwd: ctx.cwd.clone(),
        sandbox: ctx.sandbox_policy.mode,
        approval: ctx.approval_policy,
    });
    if !task.context.is_empty() {
        sink.emit(AgentEvent::Context {
            files: task.context,
        });
    }
    let runtime = match super::setup::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::TASK_FAILED;
        }
    };
    // A required MCP server that does not start is a usage error: the
    // session would lack what its config says it needs.
    let servers = match runtime.block_on(super::mcp::attach(&mut session, &task.mcp, sink)) {
        Ok(servers) => servers,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    let task = task.text;
    let stop = session.stop_handle();
    let result = runtime.block_on(async {
        // Ctrl-C, SIGTERM or SIGHUP stops the turn cleanly (running
        // commands are killed and every call gets its output, which the
        // session file records); a second signal leaves at once.
        let received = signals::stop_on_interrupt(move |_| stop.stop())?;
        let turn = session.run_turn(&task, sink).await;
        session.end(EndReason::after(&turn), sink).await;
        if let Some(servers) = &servers {
            servers.shut_down().await;
        }
        Ok::<_, String>((turn, received))
    });
    let (result, received) = match result {
        Ok(done) => done,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::TASK_FAILED;
        }
    };
    if let (Some(file), Ok(turn)) = (&file, &result) {
        file.record_usage(&turn.usage);
    }
    persist::report_failure(file.as_deref(), &mut false);
    match result {
        Err(AgentError::Provider(e)) => {
            eprintln!("cogni: {e}");
            exit::PROVIDER
        }
        Err(e @ AgentError::Panic(_)) => {
            eprintln!("cogni: {e}");
            exit::TASK_FAILED
        }
        Ok(turn) if turn.outcome == TurnOutcome::Interrupted => {
            match received.get() {
                Some(signal) => eprintln!("cogni: interrupted ({})", signal.describe()),
                None => eprintln!("cogni: interrupted"),
            }
            received.exit_code()
        }
        Ok(turn) => {
            if !args.json {
                let final_already_shown = options.stream_live && options.stdout_is_terminal;
                if !final_already_shown && !turn.final_text.is_empty() {
                    let mut out = std::io::stdout().lock();
                    let text = strip_terminal_controls(turn.final_text.trim_end());
                    let _ = writeln!(out, "{text}");
                    let _ = out.flush();
                }
            }
            if let Some(path) = &args.output_last_message {
                if let Err(e) = write_atomic(path, redact(&turn.final_text).as_bytes()) {
                    eprintln!("cogni: -o {}: {e}", path.display());
                    return exit::TASK_FAILED;
                }
            }
            match turn.outcome {
                TurnOutcome::Done => exit::DONE,
                TurnOutcome::BudgetExceeded => {
                    eprintln!(
                        "cogni: the task did not finish: {}",
                        turn.reason.as_deref().unwrap_or("a budget ran out")
                    );
                    exit::BUDGET_EXCEEDED
                }
                other => {
                    let why = match &turn.reason {
                        Some(reason) => reason.clone(),
                        None => describe(&other, session.context().max_iterations),
                    };
                    eprintln!("cogni: the task did not finish: {why}");
                    exit::TASK_FAILED
                }
            }
        }
    }
}

pub(super) fn describe(outcome: &TurnOutcome, max_iterations: u32) -> String {
    match outcome {
        TurnOutcome::Done => "done".into(),
        TurnOutcome::MaxSteps => format!(
            "reached the limit of {max_iterations} steps (raise --max-iterations or [agent] max_steps)"
        ),
        TurnOutcome::EmptyResponse => "the model returned empty responses".into(),
        TurnOutcome::Truncated => "the model's output was cut off at its token limit".into(),
        TurnOutcome::RepeatedFailure => "the model kept repeating a failing tool call".into(),
        TurnOutcome::InvalidOutput => "the final answer does not match --output-schema".into(),
        TurnOutcome::Interrupted => "interrupted".into(),
        TurnOutcome::BudgetExceeded => "a budget ran out".into(),
        TurnOutcome::Blocked => "blocked by a guardrail or a hook".into(),
        TurnOutcome::BlockedByReflect => "a reflection blocked the step".into(),
    }
}
