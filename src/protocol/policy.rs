//! What a session may do: the approval policy and the sandbox policy.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// When the user is asked before a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    Untrusted,
    OnFailure,
    #[default]
    OnRequest,
    Never,
}

impl ApprovalPolicy {
    /// The names, from the policy that lets least run without asking to
    /// the one that lets most ([`ApprovalPolicy::looseness`]'s order).
    pub const VARIANTS: &'static [&'static str] =
        &["untrusted", "on-failure", "on-request", "never"];

    /// Its place in [`ApprovalPolicy::VARIANTS`]: a policy is looser than
    /// another when more runs under it without asking.
    pub fn looseness(self) -> usize {
        match self {
            ApprovalPolicy::Untrusted => 0,
            ApprovalPolicy::OnFailure => 1,
            ApprovalPolicy::OnRequest => 2,
            ApprovalPolicy::Never => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Untrusted => "untrusted",
            ApprovalPolicy::OnFailure => "on-failure",
            ApprovalPolicy::OnRequest => "on-request",
            ApprovalPolicy::Never => "never",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "untrusted" => ApprovalPolicy::Untrusted,
            "on-failure" => ApprovalPolicy::OnFailure,
            "on-request" => ApprovalPolicy::OnRequest,
            "never" => ApprovalPolicy::Never,
            _ => return None,
        })
    }
}

/// What tools may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    #[default]
    WorkspaceWrite,
    DangerFullAccess,
}

impl SandboxMode {
    /// The names, from the tightest mode to the loosest
    /// ([`SandboxMode::looseness`]'s order).
    pub const VARIANTS: &'static [&'static str] =
        &["read-only", "workspace-write", "danger-full-access"];

    /// Its place in [`SandboxMode::VARIANTS`]: a mode is looser than
    /// another when commands may touch more under it.
    pub fn looseness(self) -> usize {
        match self {
            SandboxMode::ReadOnly => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::DangerFullAccess => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "read-only" => SandboxMode::ReadOnly,
            "workspace-write" => SandboxMode::WorkspaceWrite,
            "danger-full-access" => SandboxMode::DangerFullAccess,
            _ => return None,
        })
    }
}

/// The spec's `sandbox_policy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    pub network_access: bool,
    /// Extra writable roots besides cwd (workspace-write only).
    pub writable_roots: Vec<PathBuf>,
    /// The shell used for command strings, e.g. `/bin/bash`.
    pub shell: String,
    /// Limits for commands run in the sandbox.
    #[serde(default)]
    pub limits: ResourceLimits,
}

/// Resource limits of sandboxed commands; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// Processes (and threads) at once, the command's own included.
    pub max_processes: Option<u64>,
    /// Largest file a command may write.
    pub max_file_size_bytes: Option<u64>,
    /// CPU seconds per process.
    pub cpu_time_secs: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            max_processes: Some(1024),
            max_file_size_bytes: None,
            cpu_time_secs: None,
        }
    }
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            mode: SandboxMode::default(),
            network_access: false,
            writable_roots: Vec::new(),
            shell: "/bin/bash".to_string(),
            limits: ResourceLimits::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_go_from_tight_to_loose() {
        for (i, name) in ApprovalPolicy::VARIANTS.iter().enumerate() {
            assert_eq!(ApprovalPolicy::parse(name).unwrap().looseness(), i);
        }
        for (i, name) in SandboxMode::VARIANTS.iter().enumerate() {
            assert_eq!(SandboxMode::parse(name).unwrap().looseness(), i);
        }
    }
}
