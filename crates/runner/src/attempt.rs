//! One attempt: workspace, setup, the agent's turn under the task's
//! budgets, checks, clean-up.

use super::checks;
use super::command::{tail, OUTPUT_TAIL_BYTES};
use super::results::{millis, AttemptResult, FailureReason, Status, Tokens};
use super::review::{self, Job};
use super::workspace::{Removal, Workspace};
use super::{AttemptId, Phase, Plan, Planned, PreparedAgent, Progress, ProgressEvent, RunControl};
use cogni_core::{start_session_with_provider, AgentError, EndReason, ToolCallRecord};
use cogni_protocol::{AgentEvent, EventSink, Item, SandboxMode, TurnOutcome};
use cogni_provider::{record, record::Recording};
use cogni_spec::tasks::TaskSpec;
use cogni_tools::apply_patch::{parse_patch, FileOp};
use cogni_tools::attach;
use cogni_transcript::{self as transcript, format_ms, Entry};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub(super) struct Attempt<'a> {
    pub plan: &'a Plan,
    pub planned: &'a Planned,
    /// The run's directory for copies and worktrees.
    pub scratch: &'a Path,
    pub progress: &'a dyn Progress,
    pub control: &'a RunControl,
    /// Copies still being removed; the run waits for them at its end.
    pub removals: &'a std::sync::Mutex<Vec<Removal>>,
}

impl Attempt<'_> {
    /// Run the attempt; `lock` serialises attempts that share a directory.
    pub async fn run(self, lock: Option<Arc<tokio::sync::Mutex<()>>>) -> AttemptResult {
        let p = self.planned;
        let task = &self.plan.file.tasks[p.task];
        let id = AttemptId {
            task: task.id.clone(),
            agent: p.agent.clone(),
            attempt: p.attempt,
            of: p.of,
        };
        let mut result = AttemptResult::new(p.attempt);
        let Some(agent) = self.plan.agents.get(&p.agent) else {
            // Plan::new prepares every agent it plans for.
            result.fail(
                FailureReason::SetupFailed,
                format!("agent `{}` was not prepared", p.agent),
            );
            return result;
        };
        let _turn = match &lock {
            Some(lock) => Some(lock.lock().await),
            None => None,
        };
        let started = Instant::now();
        let transcript = Mutex::new(transcript::Builder::default());
        self.progress.report(ProgressEvent::AttemptStarted(&id));
        self.progress
            .report(ProgressEvent::Phase(&id, Phase::Workspace));
        let dest = self
            .scratch
            .join(format!("{}@{}-{}", id.task, id.agent, id.attempt));
        match Workspace::create(task.workspace, &p.source, &dest, &self.plan.options.exclude).await
        {
            Err(e) => result.fail(FailureReason::SetupFailed, e),
            Ok(workspace) => {
                self.in_workspace(&id, task, agent, &workspace.cwd, &mut result, &transcript)
                    .await;
                match workspace.remove().await {
                    Ok(Some(removal)) => self.removals.lock().expect("lock").push(removal),
                    Ok(None) => {}
                    Err(e) => self.progress.report(ProgressEvent::Warning {
                        id: &id,
                        message: &e,
                    }),
                }
            }
        }
        result.wall_ms = millis(started.elapsed());
        let mut transcript = transcript.into_inner().unwrap_or_else(|e| e.into_inner());
        let failed = result.status != Status::Passed;
        if let (true, Some(error)) = (failed, &result.error) {
            // Why it failed, unless a failed check or the engine said so.
            if result.failure_reason != Some(FailureReason::CheckFailed)
                && !transcript.has_error(error)
            {
                transcript.push(Entry::Error {
                    text: error.clone(),
                });
            }
        }
        let mut transcript = transcript.finish(failed);
        transcript.map_text(&*self.plan.options.redact);
        result.transcript = Some(transcript::Json::of(&transcript));
        self.progress.report(ProgressEvent::AttemptFinished {
            id: &id,
            result: &result,
        });
        result
    }

    async fn in_workspace(
        &self,
        id: &AttemptId,
        task: &TaskSpec,
        agent: &PreparedAgent,
        cwd: &Path,
        result: &mut AttemptResult,
        transcript: &Mutex<transcript::Builder>,
    ) {
        if !task.setup.is_empty() {
            self.progress.report(ProgressEvent::Phase(id, Phase::Setup));
        }
        for command in &task.setup {
            let run = agent
                .shell
                .run(command, cwd, cogni_spec::tasks::DEFAULT_COMMAND_TIMEOUT);
            let Some(done) = self.control.unless_interrupted(run).await else {
                return result.fail(
                    FailureReason::Interrupted,
                    format!("interrupted during setup command `{command}`"),
                );
            };
            if !done.success {
                let output = tail(done.output_tail.trim_end(), OUTPUT_TAIL_BYTES);
                result.fail(
                    FailureReason::SetupFailed,
                    format!(
                        "setup command `{command}` failed ({}):\n{output}",
                        done.summary
                    ),
                );
                return;
            }
        }
        self.progress.report(ProgressEvent::Phase(id, Phase::Agent));
        self.agent_turn(id, task, agent, cwd, result, transcript)
            .await;
        if result.status != Status::Passed || task.checks.is_empty() {
            return;
        }
        self.progress
            .report(ProgressEvent::Phase(id, Phase::Checks));
        let run = checks::run_all(
            &task.checks,
            cwd,
            &result.final_answer,
            result.review.as_ref(),
            &agent.shell,
        );
        let Some(checks) = self.control.unless_interrupted(run).await else {
            return result.fail(
                FailureReason::Interrupted,
                "interrupted while the checks ran".into(),
            );
        };
        if let Ok(mut t) = transcript.lock() {
            for check in &checks {
                t.push(Entry::Check {
                    what: check.description.clone(),
                    passed: check.passed,
                    out: check.output_tail.clone(),
                    dur: format_ms(check.duration_ms),
                });
            }
        }
        result.checks = checks;
        let failed: Vec<&str> = result
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.description.as_str())
            .collect();
        if !failed.is_empty() {
            let message = format!(
                "{} of {} checks failed: {}",
                failed.len(),
                result.checks.len(),
                failed.join("; ")
            );
            result.fail(FailureReason::CheckFailed, message);
        }
    }

    async fn agent_turn(
        &self,
        id: &AttemptId,
        task: &TaskSpec,
        agent: &PreparedAgent,
        cwd: &Path,
        result: &mut AttemptResult,
        transcript: &Mutex<transcript::Builder>,
    ) {
        let job = match &task.review {
            Some(scope) => {
                let focus = Some(task.prompt.clone()).filter(|p| !p.trim().is_empty());
                match Job::read(cwd, scope.clone(), focus).await {
                    Ok(job) => Some(job),
                    Err(e) => {
                        return result.fail(FailureReason::SetupFailed, format!("review: {e}"))
                    }
                }
            }
            None => None,
        };
        if let Some(nothing) = job.as_ref().and_then(Job::nothing) {
            // Nothing to review: no request; the checks decide.
            result.final_answer = nothing.explanation.clone();
            result.review = Some(nothing);
            return;
        }
        let mut config = agent.config.clone();
        config.cwd = cwd.to_path_buf();
        if let Err(e) = cogni_core::apply_strategies(
            &task.strategies,
            &mut config,
            &format!("tasks.{}", task.id),
        ) {
            return result.fail(FailureReason::SetupFailed, e);
        }
        if job.is_some() {
            // Unconfined agents get no shell: nothing could hold it to
            // read-only.
            let confined = config.sandbox_policy.mode != SandboxMode::DangerFullAccess;
            review::configure(&mut config, confined);
        }
        if let Some(script) = &self.planned.script {
            config.provider.script = Some(script.clone());
        }
        let recording = self.planned.record.as_ref().map(|_| {
            let options = &self.plan.options;
            Recording::new(options.redact.clone(), options.record_outputs)
        });
        let (auto_context, max_context_bytes) = (config.auto_context, config.max_context_bytes);
        let provider = match cogni_core::create_provider(&config) {
            Ok(provider) => record::wrap(provider, recording.as_ref()),
            Err(e) => return result.fail(FailureReason::SetupFailed, e.to_string()),
        };
        let mut session = match start_session_with_provider(config, provider) {
            Ok(session) => session,
            Err(e) => return result.fail(FailureReason::SetupFailed, e.to_string()),
        };
        if let Err(e) = session.set_limits(self.planned.limits.clone()) {
            return result.fail(FailureReason::SetupFailed, e.to_string());
        }
        let (findings, mut prompt) = match &job {
            Some(job) => {
                let (findings, prompt) = job.attach(&mut session);
                (Some(findings), prompt)
            }
            None => (None, task.prompt.clone()),
        };
        let _stoppable = self.control.register(session.stop_handle());
        if self.control.is_interrupted() {
            return result.fail(
                FailureReason::Interrupted,
                "interrupted before the agent started".into(),
            );
        }
        if let Ok(mut t) = transcript.lock() {
            t.user(&prompt);
        }
        let sink = AttemptSink {
            id,
            transcript,
            progress: self.progress,
            tokens: AtomicU64::new(0),
            steps: AtomicU32::new(0),
            tool_calls: AtomicU32::new(0),
        };
        let paths = match attach::paths_for(&prompt, &task.context_paths, auto_context, cwd) {
            Ok(paths) => paths,
            Err(missing) => {
                return result.fail(
                    FailureReason::SetupFailed,
                    format!("context_paths: `{missing}` is not in the workspace"),
                )
            }
        };
        let images = match cogni_tools::image::attach(&task.images, cwd) {
            Ok(images) => images,
            Err(e) => return result.fail(FailureReason::SetupFailed, format!("images: {e}")),
        };
        if !paths.is_empty() || !images.is_empty() {
            let (appendix, mut files) = attach::attach(&paths, cwd, max_context_bytes);
            prompt.push_str(&appendix);
            files.extend(images.iter().map(|image| image.context_file()));
            sink.emit(AgentEvent::Context { files });
        }
        let images = images.into_iter().map(|p| p.image).collect();
        if let Err(e) = session.attach_images(images) {
            return result.fail(FailureReason::SetupFailed, format!("images: {e}"));
        }
        let started = Instant::now();
        // An interrupt stops the turn through its stop handle; one that
        // came (on another thread) after the check above but before the
        // turn took its stop token is passed on again until the turn ends.
        let stop = session.stop_handle();
        let restop = async {
            self.control.interrupted().await;
            loop {
                stop.stop();
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        let turn = tokio::select! {
            turn = session.run_turn(&prompt, &sink) => turn,
            // `restop` never ends; were it to, the turn would be gone.
            () = restop => {
                return result.fail(FailureReason::Interrupted, "interrupted".into())
            }
        };
        session.end(EndReason::after(&turn), &sink).await;
        result.agent_ms = millis(started.elapsed());
        if let (Some(recording), Some(path)) = (&recording, &self.planned.record) {
            let message =
                match recording.write(path, &session.context().model, session.provider_id()) {
                    Ok(n) => format!("recorded {n} responses to {}", path.display()),
                    Err(e) => e,
                };
            self.progress.report(ProgressEvent::Warning {
                id,
                message: &message,
            });
        }
        let snapshot = session.metrics().snapshot();
        result.agents = snapshot.agents;
        let totals = snapshot.turn;
        result.tokens = Tokens {
            input: totals.usage.input_tokens,
            output: totals.usage.output_tokens,
            cached_input: totals.usage.cached_input_tokens,
        };
        result.cost_usd = totals.cost_usd;
        result.model_requests = totals.model_requests;
        result.compactions = totals.compactions;
        result.plan = session.plan();
        result.tests = session.test_runs();
        result.questions = session.questions();
        result.tool_calls = totals
            .tools
            .iter()
            .map(|(name, stats)| (name.clone(), stats.calls))
            .collect();
        if let (Some(job), Some(findings)) = (&job, &findings) {
            result.review = Some(job.report(findings, &turn));
        }
        let turn = match turn {
            Ok(turn) => turn,
            Err(AgentError::Provider(e)) => {
                result.steps = totals.model_requests;
                return result.fail(FailureReason::ProviderError, e.to_string());
            }
            Err(e @ AgentError::Panic(_)) => {
                result.steps = totals.model_requests;
                return result.fail(FailureReason::AgentFailed, e.to_string());
            }
        };
        result.steps = turn.iterations;
        result.final_answer = turn.final_text.clone();
        result.outcome = serde_json::to_value(&turn.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string));
        let (read, written) = touched_files(&turn.tool_calls);
        result.files_read = read;
        result.files_written = written;
        let max_steps = agent.config.max_iterations;
        // A review's answer that is not the verdict's JSON still makes a
        // report (its verdict from the findings).
        let outcome = if job.is_some() && review::reported(&turn) {
            TurnOutcome::Done
        } else {
            turn.outcome.clone()
        };
        match outcome {
            TurnOutcome::Done => {}
            TurnOutcome::BudgetExceeded => {
                result.limit = turn.limit;
                let what = turn.limit.map_or("budget", |l| l.describe());
                result.fail(
                    FailureReason::BudgetExceeded,
                    format!("stopped: the {what} ran out"),
                );
            }
            TurnOutcome::MaxSteps => result.fail(
                FailureReason::MaxSteps,
                format!("reached the agent's limit of {max_steps} steps"),
            ),
            TurnOutcome::Interrupted => {
                result.fail(FailureReason::Interrupted, "interrupted".into())
            }
            other => {
                let why = match other {
                    TurnOutcome::EmptyResponse => "the model returned empty responses",
                    TurnOutcome::Truncated => "the model's output was cut off at its token limit",
                    TurnOutcome::RepeatedFailure => "the model kept repeating a failing tool call",
                    TurnOutcome::Blocked => "blocked by a guardrail or a hook",
                    TurnOutcome::BlockedByReflect => "a reflection blocked the step",
                    TurnOutcome::EffectFailed => "an effect failed",
                    _ => "the final answer does not match the output schema",
                };
                let why = turn.reason.clone().unwrap_or_else(|| why.to_string());
                result.fail(FailureReason::AgentFailed, why);
            }
        }
    }
}

/// Counts what the engine reports and passes it on as progress.
struct AttemptSink<'a> {
    id: &'a AttemptId,
    /// What the transcript keeps of each event.
    transcript: &'a Mutex<transcript::Builder>,
    progress: &'a dyn Progress,
    tokens: AtomicU64,
    steps: AtomicU32,
    tool_calls: AtomicU32,
}

impl AttemptSink<'_> {
    fn activity(&self) {
        self.progress.report(ProgressEvent::Activity {
            id: self.id,
            tokens: self.tokens.load(Ordering::Relaxed),
            steps: self.steps.load(Ordering::Relaxed),
            tool_calls: self.tool_calls.load(Ordering::Relaxed),
        });
    }
}

impl EventSink for AttemptSink<'_> {
    fn emit(&self, event: AgentEvent) {
        if let Ok(mut t) = self.transcript.lock() {
            t.event(&event);
        }
        match event {
            AgentEvent::ModelResponse { usage, .. } => {
                let used = usage.map_or(0, |u| u.total());
                self.tokens.fetch_add(used, Ordering::Relaxed);
                self.steps.fetch_add(1, Ordering::Relaxed);
                self.activity();
            }
            AgentEvent::ItemCompleted {
                item: Item::ToolCall { .. },
            } => {
                self.tool_calls.fetch_add(1, Ordering::Relaxed);
                self.activity();
            }
            AgentEvent::Warning { message } => self.progress.report(ProgressEvent::Warning {
                id: self.id,
                message: &message,
            }),
            AgentEvent::Retry {
                attempt,
                delay_ms,
                reason,
            } => {
                let message = format!("retry {attempt} in {delay_ms} ms: {reason}");
                self.progress.report(ProgressEvent::Warning {
                    id: self.id,
                    message: &message,
                });
            }
            _ => {}
        }
    }
}

/// Files the file tools read and changed (successful calls only), sorted.
fn touched_files(calls: &[ToolCallRecord]) -> (Vec<String>, Vec<String>) {
    let mut read = BTreeSet::new();
    let mut written = BTreeSet::new();
    let path_arg = |input: &str| {
        serde_json::from_str::<serde_json::Value>(input)
            .ok()
            .and_then(|v| v.get("path").and_then(|p| p.as_str()).map(str::to_string))
    };
    for call in calls.iter().filter(|c| !c.is_error) {
        match call.name.as_str() {
            "read_file" => read.extend(path_arg(&call.input)),
            "write_file" | "edit_file" => written.extend(path_arg(&call.input)),
            "apply_patch" => {
                let json_input = serde_json::from_str::<serde_json::Value>(&call.input)
                    .ok()
                    .and_then(|v| v.get("input").and_then(|p| p.as_str()).map(str::to_string));
                let text = json_input.unwrap_or_else(|| call.input.clone());
                for op in parse_patch(&text).map(|p| p.ops).unwrap_or_default() {
                    if let FileOp::Update {
                        move_to: Some(to), ..
                    } = &op
                    {
                        written.insert(shown(to));
                    }
                    written.insert(shown(op.path()));
                }
            }
            _ => {}
        }
    }
    (read.into_iter().collect(), written.into_iter().collect())
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn call(name: &str, input: &str, is_error: bool) -> ToolCallRecord {
        ToolCallRecord {
            id: "c".into(),
            name: name.into(),
            input: input.into(),
            result: String::new(),
            is_error,
            command: None,
            duration: Duration::ZERO,
            images: Vec::new(),
        }
    }

    #[test]
    fn file_tools_are_traced_by_their_arguments() {
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: old.rs\n*** Move to: moved.rs\n@@\n-a\n+b\n*** End Patch";
        let calls = [
            call("read_file", r#"{"path":"src/a.rs"}"#, false),
            call("read_file", r#"{"path":"missing.rs"}"#, true),
            call("write_file", r#"{"path":"out.txt","content":"x"}"#, false),
            call(
                "edit_file",
                r#"{"path":"src/a.rs","old_string":"a","new_string":"b"}"#,
                false,
            ),
            call(
                "apply_patch",
                &serde_json::json!({ "input": patch }).to_string(),
                false,
            ),
            call(
                "apply_patch",
                "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
                false,
            ),
            call("shell", r#"{"command":"cat x"}"#, false),
        ];
        let (read, written) = touched_files(&calls);
        assert_eq!(read, ["src/a.rs"]);
        assert_eq!(
            written,
            ["gone.txt", "moved.rs", "new.txt", "old.rs", "out.txt", "src/a.rs"]
        );
    }
}
