//! The initial context of a session and environment updates.

use cogni_protocol::{ApprovalPolicy, SandboxPolicy};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What the model is told about where and how it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentContext {
    /// The session's working directory (`<cwd>`).
    pub cwd: PathBuf,
    /// When the model's calls need approval (`<approval_policy>`).
    pub approval_policy: ApprovalPolicy,
    /// The sandbox: its mode, writable roots, network access and shell
    /// (`<sandbox_mode>`, `<writable_roots>`, `<network_access>`,
    /// `<shell>`).
    pub sandbox_policy: SandboxPolicy,
}

impl EnvironmentContext {
    /// The environment of a session in `cwd` under these policies.
    pub fn from_policy(cwd: &Path, approval: ApprovalPolicy, sandbox: &SandboxPolicy) -> Self {
        EnvironmentContext {
            cwd: cwd.to_path_buf(),
            approval_policy: approval,
            sandbox_policy: sandbox.clone(),
        }
    }

    /// Each field as (tag, value), in the spec's order.
    fn fields(&self) -> [(&'static str, String); 6] {
        let roots: Vec<String> = self
            .sandbox_policy
            .writable_roots
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let network = if self.sandbox_policy.network_access {
            "enabled"
        } else {
            "restricted"
        };
        [
            ("cwd", self.cwd.display().to_string()),
            ("approval_policy", self.approval_policy.as_str().to_string()),
            (
                "sandbox_mode",
                self.sandbox_policy.mode.as_str().to_string(),
            ),
            ("network_access", network.to_string()),
            ("writable_roots", roots.join(", ")),
            ("shell", self.sandbox_policy.shell.clone()),
        ]
    }

    /// The full `<environment_context>` block.
    pub fn render(&self) -> String {
        render_block("environment_context", self.fields().iter())
    }

    /// An `<environment_diff>` block holding only the fields that differ
    /// from `before`, or `None` when nothing changed.
    pub fn diff(&self, before: &EnvironmentContext) -> Option<String> {
        let old = before.fields();
        let new = self.fields();
        let changed: Vec<_> = new
            .iter()
            .zip(old.iter())
            .filter(|(n, o)| n.1 != o.1)
            .map(|(n, _)| n)
            .collect();
        (!changed.is_empty()).then(|| render_block("environment_diff", changed.into_iter()))
    }
}

fn render_block<'a>(tag: &str, fields: impl Iterator<Item = &'a (&'static str, String)>) -> String {
    let mut out = format!("<{tag}>\n");
    for (name, value) in fields {
        let _ = writeln!(out, "  <{name}>{value}</{name}>");
    }
    let _ = write!(out, "</{tag}>");
    out
}

/// User instructions in the AGENTS.md wrapper.
pub fn wrap_user_instructions(cwd: &Path, instructions: &str) -> String {
    format!(
        "# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n{}\n</INSTRUCTIONS>",
        cwd.display(),
        instructions.trim_end()
    )
}
