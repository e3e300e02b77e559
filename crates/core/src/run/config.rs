//! `[run]`: the settings of the built-in middleware, and what the output
//! guardrail checks.

use crate::effects::command;
use crate::output::OutputSchema;
use std::sync::Arc;
use std::time::Duration;

/// `[run]`: middleware settings.
#[derive(Debug, Clone, Default)]
pub struct RunConfig {
    /// `[run] timeout_secs`: how long a whole run may take; past it, it
    /// ends with `budget_exceeded` (seconds). `None`: no limit.
    pub timeout: Option<Duration>,
    /// Each layer's `[run.output_guardrail]`, in order: the answer must
    /// satisfy all of them.
    pub output_guardrails: Vec<OutputGuardrail>,
    /// Snapshot the workspace before and after each run, so the turn can
    /// be taken back (`crate::checkpoints`); shadow repositories for
    /// workspaces outside git go under this directory. `None`: off.
    pub checkpoints: Option<std::path::PathBuf>,
}

/// What the final answer must satisfy.
#[derive(Clone)]
pub struct OutputGuardrail {
    /// `schema_file`: the answer must be JSON (bare or in a `json` code
    /// fence) valid against it.
    pub schema: Option<Arc<OutputSchema>>,
    /// `regex`: the answer must match it (anywhere, unless anchored).
    pub regex: Option<regex::Regex>,
    /// Gets `{"answer": ...}` on stdin; exit 0 accepts it.
    pub command: Option<String>,
    /// `timeout_ms`: how long `command` may run before it is killed (and
    /// the answer rejected).
    pub timeout: Duration,
}

impl std::fmt::Debug for OutputGuardrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputGuardrail")
            .field("schema", &self.schema.is_some())
            .field("regex", &self.regex.as_ref().map(|r| r.as_str()))
            .field("command", &self.command)
            .finish()
    }
}

impl OutputGuardrail {
    /// What is wrong with `answer`, if anything (`pins`: the session's
    /// pinned files, which the command must not have seen change).
    pub(crate) async fn check(
        &self,
        answer: &str,
        cwd: &std::path::Path,
        pins: &cogni_protocol::Pins,
    ) -> Option<String> {
        if let Some(schema) = &self.schema {
            if let Err(problem) = schema.check(answer) {
                return Some(problem);
            }
        }
        if let Some(regex) = &self.regex {
            if !regex.is_match(answer) {
                return Some(format!("the final answer does not match /{regex}/"));
            }
        }
        if let Some(command) = &self.command {
            let input = serde_json::json!({ "answer": answer });
            return match command::run(command, &input, cwd, &[], self.timeout, pins).await {
                Ok(ran) if ran.exit_code == Some(0) => None,
                Ok(ran) => {
                    let said = cogni_sandbox::redact::redact(&ran.stderr).into_owned();
                    Some(if said.trim().is_empty() {
                        format!(
                            "the output check `{command}` rejected the final answer ({})",
                            ran.status(self.timeout)
                        )
                    } else {
                        format!("the output check rejected the final answer: {said}")
                    })
                }
                Err(e) => Some(format!("the output check `{command}` could not run: {e}")),
            };
        }
        None
    }
}
