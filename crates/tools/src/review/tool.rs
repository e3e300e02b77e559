//! `report_finding`: offered only in reviews. Each call is checked against
//! the scope's diff ([`super::finding::check`]) and its fix against the
//! file as it is ([`super::finding::fix`]); a finding that fails is
//! refused back to the model with the reason, one that passes is kept in
//! the review's [`Findings`].

use super::finding::{self, Finding, FindingArgs, MAX_FINDINGS};
use super::scope::Change;
use crate::fs::read_text_limited;
use crate::{parse_args, paths, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};

/// The tool's name.
pub const NAME: &str = "report_finding";

/// The most bytes of a file read to check a fix against.
const FIX_FILE_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// The findings a review has kept so far, in the order they came.
#[derive(Debug, Clone, Default)]
pub struct Findings(Arc<Mutex<Vec<Finding>>>);

impl Findings {
    /// Every finding kept, in order.
    pub fn all(&self) -> Vec<Finding> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Keep `finding`, unless the same one (file, lines, title) is there
    /// already or the review has as many as it keeps; `Err` says which.
    fn add(&self, finding: Finding) -> Result<(), String> {
        let mut list = self.0.lock().map_err(|_| "the findings are unavailable")?;
        let same = list.iter().any(|f| {
            f.path == finding.path
                && f.side == finding.side
                && (f.start_line, f.end_line) == (finding.start_line, finding.end_line)
                && f.title == finding.title
        });
        if same {
            return Err("this finding (same file, lines and title) was reported already".into());
        }
        if list.len() >= MAX_FINDINGS {
            return Err(format!(
                "a review keeps at most {MAX_FINDINGS} findings: report only the most important"
            ));
        }
        list.push(finding);
        Ok(())
    }
}

/// The `report_finding` tool of one review.
pub struct ReportFindingTool {
    change: Arc<Change>,
    /// The session's working directory relative to the repository's root.
    prefix: String,
    findings: Findings,
}

impl ReportFindingTool {
    /// The tool for a review of `change` by a session working in `cwd`,
    /// keeping what passes in `findings`.
    pub fn new(change: Arc<Change>, cwd: &std::path::Path, findings: Findings) -> Self {
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let prefix = cwd
            .strip_prefix(&change.root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        ReportFindingTool {
            change,
            prefix,
            findings,
        }
    }

    async fn report(&self, args: FindingArgs, ctx: &ToolContext) -> Result<String, String> {
        let mut found = finding::check(&args, &self.change.diff, &self.prefix)?;
        if let Some(patch) = args.fix.as_deref().filter(|p| !p.trim().is_empty()) {
            let full = self.change.root.join(&found.path);
            let shown = found.path.clone();
            // Read like a tool reads: only inside the workspace, a symlink
            // followed only while it stays there, never a FIFO.
            let target = paths::workspace_file(ctx, &full.to_string_lossy())
                .await
                .map_err(|e| format!("cannot read `{shown}` to check the fix: {e}"))?;
            let real = target.real().to_path_buf();
            let current =
                tokio::task::spawn_blocking(move || read_text_limited(&real, FIX_FILE_MAX_BYTES))
                    .await
                    .map_err(|e| format!("reading `{shown}` was interrupted: {e}"))?
                    .map_err(|e| format!("cannot check the fix against `{shown}`: {e}"))?;
            found.fix = Some(finding::fix(patch, &found.path, &current)?);
        }
        let location = found.location();
        let priority = found.priority_name();
        self.findings.add(found)?;
        // No running count: calls of one response run side by side.
        Ok(format!("recorded: {priority} at {location}"))
    }
}

impl Tool for ReportFindingTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Report one problem in the change under review. `path` is relative \
                to the repository's root; `start_line`..`end_line` are lines the diff shows \
                (new-side numbers, or with side \"old\" the old-side numbers of deleted lines; \
                0 and 0 for a file without lines such as a binary file). `priority`: 0 must \
                fix at once (P0), 1 must fix before merging (P1), 2 should fix (P2), 3 nit \
                (P3). `confidence`: 0 to 1. `fix`: optionally, a patch in apply_patch's format \
                (one `*** Update File:` of this file) that fixes it. Findings outside the diff \
                are refused with the reason."
                .into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "start_line": {"type": "integer", "minimum": 0},
                        "end_line": {"type": "integer", "minimum": 0},
                        "side": {"type": "string", "enum": ["new", "old"]},
                        "priority": {"type": "integer", "minimum": 0, "maximum": 3},
                        "title": {"type": "string"},
                        "body": {"type": "string"},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                        "fix": {"type": "string"}
                    },
                    "required": ["path", "start_line", "end_line", "priority", "title", "body", "confidence"],
                    "additionalProperties": false
                }),
            },
            // It changes no file; its calls only add to the review.
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: FindingArgs = match parse_args(NAME, input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            match self.report(args, ctx).await {
                Ok(text) => ToolResult::ok(text),
                Err(reason) => ToolResult::error(format!("finding refused: {reason}")),
            }
        })
    }
}
