//! `cogni run --acp CMD TASK`: the task goes to the agent as one prompt;
//! its updates are rendered as `cogni run` renders its own (progress on
//! stderr, or `--json` on stdout), its permission requests are answered
//! no at once (nobody is asked), and the exit code follows its stop
//! reason: `end_turn` 0, `max_tokens`, `max_turn_requests` and `refusal`
//! 1 (cogni's code for a turn cut off, out of steps or blocked),
//! `cancelled` 130 (or the signal's code). An agent that cannot start is
//! 2, one that fails, does not answer or dies is 3.

use super::{configure, connect, Control, Launch};
use crate::cli::run::{check_output, deliver, read_task, render_options, renderer};
use crate::cli::signals::{Interrupt, Interrupts};
use crate::cli::{exit, setup, RunArgs};
use crate::protocol::{AgentEvent, ApprovalPolicy, NonInteractive, TurnOutcome};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Run the task with the agent; the exit code.
pub fn run(args: &RunArgs) -> u8 {
    let (task, setup) = match prepare(args) {
        Ok(prepared) => prepared,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    let options = render_options(args, setup.verbose_max_bytes);
    let sink = renderer(args, options);
    let sink = sink.as_ref();
    let runtime = match setup::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::TASK_FAILED;
        }
    };
    let launch = Launch {
        command: args.acp.clone().unwrap_or_default(),
        cwd: setup.cwd.clone(),
        timeout: Duration::from_secs(args.acp_timeout),
        mcp: setup.mcp.clone(),
    };
    let files = setup.files.clone();
    let received = Arc::new(OnceLock::new());
    let result = runtime.block_on(async {
        let control = Control::default();
        listen(control.clone(), received.clone())?;
        let mode = files.mode();
        let ran = connect(&launch, files, control, async |mut remote| {
            sink.emit(AgentEvent::SessionStarted {
                session_id: remote.session_id().to_string(),
                model: remote.agent().to_string(),
                provider: "acp".into(),
                cwd: launch.cwd.clone(),
                sandbox: mode,
                // Nobody is asked: the agent's requests are answered no.
                approval: ApprovalPolicy::Never,
            });
            remote.prompt(&task, sink, &NonInteractive).await
        })
        .await;
        Ok::<_, String>(ran)
    });
    let ran = match result {
        Ok(ran) => ran,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::TASK_FAILED;
        }
    };
    if let Some(signal) = received.get() {
        eprintln!("cogni: interrupted ({})", signal.describe());
        return signal.exit_code();
    }
    match ran {
        Ok((_, TurnOutcome::Interrupted, _)) => {
            eprintln!("cogni: interrupted (the agent cancelled its turn)");
            exit::INTERRUPTED
        }
        Ok((stop, outcome, answer)) => {
            if let Err(code) = deliver(args, &options, &answer, &setup.redact) {
                return code;
            }
            if outcome == TurnOutcome::Done {
                return exit::DONE;
            }
            eprintln!(
                "cogni: the task did not finish: the agent stopped: {}",
                super::events::describe(stop)
            );
            exit::TASK_FAILED
        }
        Err(failure) => {
            eprintln!("cogni: {}", failure.message());
            failure.code()
        }
    }
}

/// The task and the configuration; failures are usage errors.
fn prepare(args: &RunArgs) -> Result<(String, super::Setup), String> {
    let (launch_dir, _) = setup::dirs(&args.common)?;
    let task = read_task(args.task.as_deref().unwrap_or_default())?;
    check_output(args.output_last_message.as_deref(), &launch_dir)?;
    let setup = configure(&args.common, &args.policy)?;
    Ok((task, setup))
}

/// Ctrl-C, SIGTERM or SIGHUP: the first cancels the agent's turn (before
/// the turn, while the agent starts, it is stopped), a second kills it.
/// The first is kept for the exit code.
fn listen(control: Control, received: Arc<OnceLock<Interrupt>>) -> Result<(), String> {
    let mut interrupts = Interrupts::listen()?;
    tokio::spawn(async move {
        while let Some(signal) = interrupts.recv().await {
            let _ = received.set(signal);
            control.interrupt();
        }
    });
    Ok(())
}
