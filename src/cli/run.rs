//! `cogni run`: one task, non-interactive, an exit code that tells the truth.

use super::approve::TerminalApprover;
use super::builder::{Card, Checkpoints, SessionBuilder};
use super::exit;
use super::persist::Resume;
use super::render::{strip_terminal_controls, Human, Jsonl, RenderOptions};
use super::{launch, setup, signals, RunArgs};
use crate::agent::Session;
use crate::config::ConfigFile;
use crate::mcp::McpConfig;
use crate::protocol::{AgentEvent, ContextFile, EventSink, TurnOutcome};
use crate::provider::record::Recording;
use crate::store::{Redactor, SessionFile};
use crate::tools::attach;
use crate::tools::fs::{read_text_limited, write_atomic, SPEC_FILE_MAX_BYTES};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Run the command and return its exit code.
pub fn run(args: RunArgs) -> u8 {
    if args.budget.any() && (args.batch.tasks.is_some() || args.acp.is_some()) {
        eprintln!(
            "cogni: --max-cost, --max-tokens and --max-seconds budget cogni's own turn: with \
             --tasks set a task's `budget` in the task file; with --acp the agent keeps its own"
        );
        return exit::USAGE;
    }
    if args.batch.tasks.is_some() {
        return super::tasks::run(args);
    }
    if args.acp.is_some() {
        return super::acp_client::run(&args);
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
    check_output(args.output_last_message.as_deref(), &launch_dir)?;

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
    let resume = args.resume.clone().map(Resume::Id);
    let configured = SessionBuilder::new(args.common.clone(), args.policy.clone(), launch_dir, cwd)
        .flags(ConfigFile {
            max_iterations: args.max_iterations,
            effects: args.budget.effects()?,
            ..Default::default()
        })
        .card(args.batch.agent.clone().map(Card::Named))
        .output(args.verbose, output_schema)
        .persist(!args.no_persist, resume, args.fork)
        .checkpoints(Checkpoints::Run {
            asked: args.checkpoint,
        })
        .configure()?;
    configured.warn_problems();
    let config = &configured.config;
    let context = context_files(
        args,
        &mut task,
        &config.cwd,
        config.auto_context,
        config.max_context_bytes,
    )?;
    let images = crate::tools::image::attach(&args.images, &config.cwd)
        .map_err(|e| format!("--image {e}"))?;
    let mut context = context;
    context.extend(images.iter().map(|image| image.context_file()));
    let recording = record
        .is_some()
        .then(|| Recording::new(configured.redact.clone(), args.record_outputs));
    let (mut session, file) = configured.start(recording.as_ref())?;
    session
        .attach_images(images.into_iter().map(|p| p.image).collect())
        .map_err(|e| format!("--image: {e}"))?;
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
        configured.verbose_max_bytes,
        file,
        configured.redact,
        recorder,
        configured.mcp,
    ))
}

/// `-o FILE`: its directory must exist before anything runs.
pub(super) fn check_output(out: Option<&Path>, launch_dir: &Path) -> Result<(), String> {
    if let Some(out) = out {
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
    Ok(())
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
    let paths = attach::paths_for(task, &args.context, auto_context, cwd).map_err(|path| {
        format!(
            "--context {path}: no such file or directory (paths are relative to {})",
            cwd.display()
        )
    })?;
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let (appendix, files) = attach::attach(&paths, cwd, max_bytes);
    task.push_str(&appendix);
    Ok(files)
}

pub(super) fn read_task(task: &str) -> Result<String, String> {
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
    let text = read_text_limited(path, SPEC_FILE_MAX_BYTES)
        .map_err(|e| format!("--output-schema: {e}"))?;
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
    let options = render_options(args, verbose_max_bytes);
    let sink = renderer(args, options);
    let sink = sink.as_ref();
    // Questions go to a person only when one is at the keyboard; the task
    // itself may have come from stdin, which then is not a terminal.
    if std::io::stdin().is_terminal() && args.task.as_deref() != Some("-") {
        session.set_approver(Arc::new(TerminalApprover {
            cwd: session.context().cwd.clone(),
            color: options.color,
        }));
    }
    sink.emit(launch::started(&session));
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
        let turn = launch::run_task(&mut session, servers, file.as_deref(), &task, sink).await;
        Ok::<_, String>((turn, received))
    });
    let (result, received) = match result {
        Ok(done) => done,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::TASK_FAILED;
        }
    };
    let (code, why) = launch::verdict(&result, session.context().max_iterations);
    match &result {
        Ok(turn) if turn.outcome == TurnOutcome::Interrupted => {
            match received.get() {
                Some(signal) => eprintln!("cogni: interrupted ({})", signal.describe()),
                None => eprintln!("cogni: interrupted"),
            }
            return received.exit_code();
        }
        Ok(turn) => {
            if let Err(code) = deliver(args, &options, &turn.final_text, &redact) {
                return code;
            }
        }
        Err(_) => {}
    }
    if let Some(why) = why {
        eprintln!("cogni: {why}");
    }
    code
}

/// How `cogni run` renders: colors, live text, verbose logs.
pub(super) fn render_options(args: &RunArgs, verbose_max_bytes: usize) -> RenderOptions {
    RenderOptions {
        color: !args.no_color
            && std::env::var_os("NO_COLOR").is_none()
            && std::io::stderr().is_terminal(),
        stream_live: std::io::stderr().is_terminal(),
        stdout_is_terminal: std::io::stdout().is_terminal(),
        verbose: args.verbose,
        verbose_max_bytes,
    }
}

/// The renderer `--json` chooses: JSONL on stdout, or human progress on
/// stderr.
pub(super) fn renderer(args: &RunArgs, options: RenderOptions) -> Box<dyn EventSink> {
    if args.json {
        Box::new(Jsonl::new(options))
    } else {
        Box::new(Human::new(options))
    }
}

/// The final answer: on stdout (unless `--json`, or it was streamed to
/// the terminal already) and to `-o FILE`; `Err` is the exit code of a
/// failed write.
pub(super) fn deliver(
    args: &RunArgs,
    options: &RenderOptions,
    final_text: &str,
    redact: &Redactor,
) -> Result<(), u8> {
    if !args.json {
        let final_already_shown = options.stream_live && options.stdout_is_terminal;
        if !final_already_shown && !final_text.is_empty() {
            let mut out = std::io::stdout().lock();
            let text = strip_terminal_controls(final_text.trim_end());
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        }
    }
    if let Some(path) = &args.output_last_message {
        if let Err(e) = write_atomic(path, redact(final_text).as_bytes()) {
            eprintln!("cogni: -o {}: {e}", path.display());
            return Err(exit::TASK_FAILED);
        }
    }
    Ok(())
}
