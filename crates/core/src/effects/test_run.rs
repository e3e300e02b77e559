//! The test-driven loop (`[agent] enable_test_run`; docs/test-loop.md):
//! when the model is done for now, the test command runs in the sandbox,
//! like any `shell` call. Each attempt is a `test` event with what the
//! output says (failing tests, a summary, its tail). Failing tests keep
//! the turn going: their report goes to the model, and the turn ends when
//! the tests pass and the model is done, or at the step limit.

use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point};
use crate::testlog;
use cogni_process::truncate::Limits;
use cogni_protocol::{AgentEvent, HistoryItem, MessageTag, Role, TestRun};
use cogni_tools::shell::ShellTool;
use cogni_tools::{ToolConfig, ToolContext};
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) const KIND: &str = "test_run";

/// Default of `test_timeout_seconds`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Output kept per run for parsing: the head and the tail, 8 MiB each.
const CAPTURE_BYTES: usize = 16 * 1024 * 1024;

/// Bytes of the output's end in the `test` event and results.json.
pub const EVENT_TAIL_BYTES: usize = 4 * 1024;

/// Bytes of the output's end the model gets with a failure.
const MODEL_TAIL_BYTES: usize = 8 * 1024;

/// Failing test names the model gets (the event has them all, capped by
/// the parser).
const MODEL_FAILING: usize = 30;

/// `[agent]` test settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRunConfig {
    /// A shell line, run in the workspace.
    pub command: String,
    /// Extra attempts when it fails (flaky tests).
    pub retries: u32,
    /// Per attempt; the command and everything it started are killed.
    pub timeout: Duration,
}

/// The session's test runs, in order (for reflection and results.json).
pub type TestLog = Arc<Mutex<Vec<TestRun>>>;

pub(crate) struct TestRunEffect {
    config: TestRunConfig,
    /// The session's `shell` tool (its sandbox is prepared once for both).
    shell: Arc<ShellTool>,
    tool_config: Arc<ToolConfig>,
    log: TestLog,
}

impl TestRunEffect {
    pub fn new(
        config: TestRunConfig,
        shell: Arc<ShellTool>,
        tool_config: Arc<ToolConfig>,
        log: TestLog,
    ) -> Self {
        TestRunEffect {
            config,
            shell,
            tool_config,
            log,
        }
    }

    /// One attempt of the test command, as the `test` event reports it,
    /// and its output.
    async fn attempt(
        &self,
        cx: &IterationContext<'_>,
        run: u32,
        attempt: u32,
    ) -> (TestRun, String) {
        let ctx = ToolContext::in_workspace(
            cx.cwd.to_path_buf(),
            cx.ctx.sandbox_policy.clone(),
            self.tool_config.clone(),
            cx.workspace.clone(),
        );
        let command = self.config.command.clone();
        let ran = self
            .shell
            .run_command(&ctx, &command, self.config.timeout, CAPTURE_BYTES)
            .await;
        let (output, protected) = match ran {
            Ok(ran) => ran,
            Err(e) => {
                let run = TestRun {
                    run,
                    attempt,
                    command,
                    test_summary: format!("the test command could not run: {e}"),
                    output_tail: e.clone(),
                    ..TestRun::default()
                };
                return (run, e);
            }
        };
        // All that was kept; a dropped middle is marked.
        let mut text = output.stdout.to_model_text(Limits {
            max_bytes: usize::MAX,
            max_lines: usize::MAX,
        });
        if let Some(note) = protected {
            text.push('\n');
            text.push_str(&note);
        }
        let exit_code = match output.termination {
            cogni_process::Termination::Exited(code) if !output.timed_out => Some(code),
            _ => None,
        };
        let report = testlog::parse(&text);
        // Colour escapes (jest, vitest, pytest with colour forced) are
        // noise to the model and in events.
        let text = testlog::strip_ansi(&text).into_owned();
        let mut summary = report.summary;
        if output.timed_out {
            let timed_out = format!(
                "timed out after {}s and was killed",
                self.config.timeout.as_secs()
            );
            summary = if summary.is_empty() {
                timed_out
            } else {
                format!("{summary}; {timed_out}")
            };
        }
        let result = TestRun {
            run,
            attempt,
            command,
            exit_code,
            timed_out: output.timed_out,
            passed: exit_code == Some(0),
            duration_ms: u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX),
            framework: report
                .framework
                .and_then(|f| serde_json::to_value(f).ok())
                .and_then(|v| v.as_str().map(str::to_string)),
            tests_passed: report.passed,
            tests_failed: report.failed,
            tests_skipped: report.skipped,
            failing_tests: report.failing_tests,
            test_summary: summary,
            output_tail: testlog::tail(&text, EVENT_TAIL_BYTES),
        };
        (result, text)
    }
}

/// What the model is told about a failed run.
pub fn failure_message(run: &TestRun, output: &str) -> String {
    let status = match (run.timed_out, run.exit_code) {
        (true, _) => "timed out".to_string(),
        (false, Some(code)) => format!("exited with code {code}"),
        (false, None) => "could not run or was killed".to_string(),
    };
    let mut text = format!("The test command `{}` {status}", run.command);
    if !run.test_summary.is_empty() {
        text.push_str(&format!(" ({})", run.test_summary));
    }
    text.push_str(".\n");
    if !run.failing_tests.is_empty() {
        let shown: Vec<&str> = run
            .failing_tests
            .iter()
            .take(MODEL_FAILING)
            .map(String::as_str)
            .collect();
        text.push_str("Failing tests:\n");
        for name in &shown {
            text.push_str(&format!("- {name}\n"));
        }
        if run.failing_tests.len() > shown.len() {
            text.push_str(&format!(
                "- ... and {} more\n",
                run.failing_tests.len() - shown.len()
            ));
        }
    }
    text.push_str(&format!(
        "The end of its output:\n```\n{}\n```\nFix the code so the tests pass, then answer again.",
        testlog::tail(output, MODEL_TAIL_BYTES).trim_end()
    ));
    text
}

impl Effect for TestRunEffect {
    fn name(&self) -> &str {
        KIND
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::TurnEnd]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        Box::pin(async move {
            if !matches!(cx.point, Point::TurnEnd { .. }) {
                return Ok(Decision::Continue.into());
            }
            let run = self
                .log
                .lock()
                .map(|l| l.last().map_or(0, |r| r.run))
                .unwrap_or(0)
                + 1;
            let mut last = None;
            for attempt in 1..=self.config.retries + 1 {
                let (result, output) = self.attempt(cx, run, attempt).await;
                cx.sink.emit(AgentEvent::Test {
                    run: result.clone(),
                });
                if let Ok(mut log) = self.log.lock() {
                    log.push(result.clone());
                }
                let passed = result.passed;
                last = Some((result, output));
                if passed {
                    break;
                }
            }
            let Some((result, output)) = last else {
                return Ok(Decision::Continue.into());
            };
            if result.passed {
                return Ok(Decision::Continue.into());
            }
            Ok(Decision::AddItems(vec![HistoryItem::tagged(
                Role::User,
                MessageTag::TestReport,
                failure_message(&result, &output),
            )])
            .into())
        })
    }
}
