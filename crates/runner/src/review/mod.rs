//! A review as a job, for every front door that runs one (`cogni review`,
//! `/review` in the REPL and `cogni acp`, a task file's `review`): the
//! read-only policy and tool set of its session ([`configure`]), its
//! `report_finding` tool ([`attach`]), its first message with the diff
//! ([`prompt`]), the verdict its final answer is held to
//! ([`verdict_schema`], through the session's output schema) and the
//! report made of the turn ([`Review::of`]), which [`sarif`],
//! [`markdown`] and [`gitlab`] write for code hosts and CI systems.

pub mod gitlab;
pub mod markdown;
pub mod sarif;

use cogni_core::{start_session, AgentError, Session, SessionConfig, StopHandle, TurnResult};
use cogni_protocol::{ApprovalPolicy, EditTool, SandboxMode, TurnOutcome};
use cogni_tools::review::{Change, Finding, Findings, ReportFindingTool, Scope};
use cogni_tools::truncate::Limits;
use cogni_tools::ExtraTools;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Bumped when a field of the JSON report changes meaning or goes away
/// (docs/review.md, docs/review.schema.json).
pub const SCHEMA_VERSION: u32 = 1;

/// The most of the diff the first message carries (head and tail, with a
/// marker saying what was left out and how to read it).
pub const PROMPT_DIFF_LIMITS: Limits = Limits {
    max_bytes: 256 * 1024,
    max_lines: 8000,
};

/// The tools of a review besides `report_finding`: reading and searching,
/// and `shell` when the kernel sandbox confines it to read-only.
const READ_TOOLS: &[&str] = &["read_file", "list_dir", "grep", "glob"];

/// The review's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing must change before the change is merged.
    Correct,
    /// Something must change first.
    NeedsChanges,
}

impl Verdict {
    /// `correct` or `needs_changes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Correct => "correct",
            Verdict::NeedsChanges => "needs_changes",
        }
    }
}

/// The final answer a review is held to.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    verdict: Verdict,
    explanation: String,
}

/// The JSON Schema of the final answer, set as the session's output
/// schema (providers that take one are held to it).
pub fn verdict_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["correct", "needs_changes"]},
            "explanation": {"type": "string"}
        },
        "required": ["verdict", "explanation"],
        "additionalProperties": false
    })
}

/// `config` as a review's: the read-only sandbox and plan mode's approval
/// policy whatever it said, reading tools only (with `shell` only when
/// `confined`: the kernel sandbox holds it to read-only), no web (fetch or
/// the provider's search), MCP servers, delegation, checkpoints, memory,
/// plans, test loop or reflection, and the verdict as the output schema.
pub fn configure(config: &mut SessionConfig, confined: bool) {
    config.sandbox_policy.mode = SandboxMode::ReadOnly;
    config.approval_policy = ApprovalPolicy::Untrusted;
    let tools = &mut config.tool_config;
    tools.enabled = READ_TOOLS.iter().map(|t| t.to_string()).collect();
    if confined {
        tools.enabled.push("shell".into());
    }
    tools.edit_tool = Some(EditTool::None);
    tools.max_background_jobs = 0;
    tools.web_fetch.enabled = false;
    tools.skills = None;
    config.features.skills_enabled = false;
    config.features.web_search = false;
    config.prompt.memory_files = None;
    config.delegation = None;
    config.run.checkpoints = None;
    config.enable_plan = false;
    config.test_run = None;
    config.reflect = None;
    config.output_schema = Some(verdict_schema());
}

/// Offer `report_finding` for `change` in `session`; the findings it keeps.
pub fn attach(session: &mut Session, change: Arc<Change>) -> Findings {
    let findings = Findings::default();
    let cwd = session.context().cwd.clone();
    let tool = ReportFindingTool::new(change, &cwd, findings.clone());
    session.add_tools(&ExtraTools {
        eager: vec![Arc::new(tool)],
        deferred: Vec::new(),
    });
    findings
}

/// The review's first message: what to do, how to report, the focus if
/// any, and the diff with both sides' line numbers.
pub fn prompt(change: &Change, scope: &Scope, cwd: &Path, focus: Option<&str>) -> String {
    let (added, removed) = change.diff.counts();
    let files = change.diff.files.len();
    let sub = cwd
        .canonicalize()
        .ok()
        .and_then(|c| {
            c.strip_prefix(&change.root)
                .ok()
                .map(|p| p.display().to_string())
        })
        .filter(|p| !p.is_empty());
    let mut text = format!(
        "Review {}: {files} file{}, +{added} -{removed} lines. You review; you change nothing \
         (the sandbox is read-only).\n\n",
        scope.describe(),
        if files == 1 { "" } else { "s" }
    );
    text.push_str(INSTRUCTIONS);
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        text.push_str(&format!("\n\nFocus of this review: {focus}"));
    }
    text.push_str(&format!(
        "\n\nThe change. Paths are relative to the repository's root{}. Before each line: its \
         number in the old file, its number in the new file, then ` `, `+` or `-`. If the diff \
         is cut, read the rest of a file with your tools.\n\n",
        sub.map_or(String::new(), |s| format!(
            " (the working directory is its subdirectory {s})"
        ))
    ));
    text.push_str(&change.diff.render(PROMPT_DIFF_LIMITS));
    text
}

const INSTRUCTIONS: &str = "Find the problems this change introduces: bugs, wrong behaviour in \
edge cases, security holes, data loss, races, broken error handling, missing or wrong tests for \
what changed, and code that will mislead the next reader. Read the surrounding code where the \
diff alone does not tell. Report each problem once with `report_finding`: point at the lines the \
diff shows (new-side numbers; for lines the change deleted, their old-side numbers with side \
\"old\"; a file without lines, such as a binary file, with start_line 0 and end_line 0), say what \
is wrong and why in the body, and give a fix in apply_patch's format only when you are sure of \
it. Priorities: 0 (P0) breaks something now and must be fixed at once; 1 (P1) must be fixed \
before merging; 2 (P2) should be fixed; 3 (P3) is minor. Do not report style preferences, or \
problems the change did not introduce. A refused finding says why: correct it or drop it.\n\n\
When you are done, answer with JSON only: {\"verdict\": \"correct\" or \"needs_changes\", \
\"explanation\": \"...\"}; needs_changes when something must be fixed before merging (a P0 or \
P1 finding), with an explanation of a few sentences.";

/// A review's change, read, with what it covers and its focus.
pub struct Job {
    /// The change, read with git.
    pub change: Arc<Change>,
    /// What the review covers.
    pub scope: Scope,
    /// What to look at especially, if anything.
    pub focus: Option<String>,
}

impl Job {
    /// Read the change `scope` covers for a session in `cwd`.
    pub async fn read(cwd: &Path, scope: Scope, focus: Option<String>) -> Result<Job, String> {
        let change = cogni_tools::review::read(cwd, &scope).await?;
        Ok(Job {
            change: Arc::new(change),
            scope,
            focus,
        })
    }

    /// The report of a review that had nothing to look at.
    pub fn nothing(&self) -> Option<Review> {
        self.change.diff.is_empty().then(|| {
            let explanation = format!(
                "Nothing to review: {} hold no change.",
                self.scope.describe()
            );
            let mut review = Review::of(&self.change, &self.scope, Vec::new(), "");
            review.verdict = Verdict::Correct;
            review.explanation = explanation;
            review
        })
    }

    /// Give `session` the review's tool; its findings and the first
    /// message.
    pub fn attach(&self, session: &mut Session) -> (Findings, String) {
        let findings = attach(session, self.change.clone());
        let cwd = session.context().cwd.clone();
        let prompt = prompt(&self.change, &self.scope, &cwd, self.focus.as_deref());
        (findings, prompt)
    }

    /// A review session for a front door whose session is configured as
    /// `config` (the REPL, `cogni acp`, a task's agent): read-only, with the review's tool
    /// (`shell` only when `confined`), stopped by `stop` (the front
    /// door's own session's handle); with its findings and first message.
    pub fn session(
        &self,
        config: &SessionConfig,
        confined: bool,
        stop: StopHandle,
    ) -> Result<(Session, Findings, String), String> {
        let mut config = config.clone();
        configure(&mut config, confined);
        let mut session = start_session(config).map_err(|e| e.to_string())?;
        session.share_stop_handle(stop);
        let (findings, prompt) = self.attach(&mut session);
        Ok((session, findings, prompt))
    }

    /// What a front door's conversation is told of a review the user ran
    /// beside it (`/review`), so that the next message can act on it.
    pub fn note(&self, review: &Review) -> String {
        format!(
            "The user ran /review: a read-only review of {} in a session of its own. Its \
             report follows; the user may ask you to act on it.\n\n{}",
            self.scope.describe(),
            markdown::markdown(review)
        )
    }

    /// The report of the review's turn; a turn that did not finish gives
    /// the findings reported before it stopped, saying so.
    pub fn report(&self, findings: &Findings, turn: &Result<TurnResult, AgentError>) -> Review {
        match turn {
            Ok(turn) if reported(turn) => {
                Review::of(&self.change, &self.scope, findings.all(), &turn.final_text)
            }
            _ => {
                let mut review = Review::of(&self.change, &self.scope, findings.all(), "");
                review.explanation = "The review did not finish; the findings reported before \
                     it stopped are below."
                    .into();
                review
            }
        }
    }
}

/// What a review found, as every format reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// What was reviewed.
    pub scope: Scope,
    /// The commit the change starts from, when it is one.
    #[serde(default)]
    pub base: Option<String>,
    /// The commit it ends at (none for the working tree).
    #[serde(default)]
    pub head: Option<String>,
    /// Files in the scope.
    pub files: usize,
    /// Lines added over every file.
    pub added: usize,
    /// Lines removed over every file.
    pub removed: usize,
    /// The model's verdict, or the one its findings give.
    pub verdict: Verdict,
    /// The model's explanation (its final answer, when that was not the
    /// verdict's JSON).
    pub explanation: String,
    /// True when the final answer was not the verdict's JSON and the
    /// verdict comes from the findings.
    pub verdict_derived: bool,
    /// The findings, by file (in the scope's order), most severe first,
    /// then by line.
    pub findings: Vec<Finding>,
}

impl Review {
    /// The report of a review of `change` whose model kept `findings` and
    /// answered `final_text`.
    pub fn of(
        change: &Change,
        scope: &Scope,
        mut findings: Vec<Finding>,
        final_text: &str,
    ) -> Self {
        let order = |path: &str| change.diff.files.iter().position(|f| f.path == path);
        findings.sort_by(|a, b| {
            (order(&a.path), a.priority, a.start_line, &a.title).cmp(&(
                order(&b.path),
                b.priority,
                b.start_line,
                &b.title,
            ))
        });
        let (verdict, explanation, derived) = match parse_answer(final_text) {
            Some(answer) => (answer.verdict, answer.explanation, false),
            None => {
                let severe = findings.iter().any(|f| f.priority <= 1);
                let verdict = if severe {
                    Verdict::NeedsChanges
                } else {
                    Verdict::Correct
                };
                (verdict, final_text.trim().to_string(), true)
            }
        };
        let (added, removed) = change.diff.counts();
        Review {
            schema_version: SCHEMA_VERSION,
            scope: scope.clone(),
            base: change.base.clone(),
            head: change.head.clone(),
            files: change.diff.files.len(),
            added,
            removed,
            verdict,
            explanation,
            verdict_derived: derived,
            findings,
        }
    }

    /// Findings at `priority` or more severe.
    pub fn at_or_above(&self, priority: u8) -> usize {
        self.findings
            .iter()
            .filter(|f| f.priority <= priority)
            .count()
    }

    /// The report as JSON (docs/review.schema.json).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

fn parse_answer(text: &str) -> Option<Answer> {
    serde_json::from_str(cogni_core::output::strip_fence(text)).ok()
}

/// Whether a review's turn gave a report: it finished (a final answer
/// that is not the verdict's JSON included: the output schema stops such
/// a turn as `invalid_output`, and the report takes the text as its
/// explanation). Any other end, or an `invalid_output` that a guardrail
/// of the user's gave to a well-formed verdict, is the turn's failure.
pub fn reported(turn: &TurnResult) -> bool {
    match turn.outcome {
        TurnOutcome::Done => true,
        TurnOutcome::InvalidOutput => parse_answer(&turn.final_text).is_none(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
