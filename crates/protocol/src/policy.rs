//! What a session may do: the approval policy and the sandbox policy.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

/// When the user is asked before a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Read-only tools and known-safe read-only commands run; everything else
    /// is asked first (`untrusted`).
    Untrusted,
    /// Everything runs in the sandbox; a call that fails the way a sandbox
    /// refusal looks is offered for a retry without it (`on-failure`).
    OnFailure,
    /// Everything runs in the sandbox; the model may ask to run a command
    /// outside it and the user decides (`on-request`, the default).
    #[default]
    OnRequest,
    /// Nobody is asked; what the sandbox forbids fails (`never`).
    Never,
}

impl ApprovalPolicy {
    /// The accepted names, as in config files and flags.
    pub const VARIANTS: &'static [&'static str] =
        &["untrusted", "on-failure", "on-request", "never"];

    /// The policy's name in config files, flags and events (`on-request`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Untrusted => "untrusted",
            ApprovalPolicy::OnFailure => "on-failure",
            ApprovalPolicy::OnRequest => "on-request",
            ApprovalPolicy::Never => "never",
        }
    }

    /// How much it asks: a policy may replace another only as a ceiling
    /// allows when its strictness is at least the other's (`untrusted`
    /// asks most, `never` never).
    pub fn strictness(self) -> u8 {
        match self {
            ApprovalPolicy::Never => 0,
            ApprovalPolicy::OnFailure | ApprovalPolicy::OnRequest => 1,
            ApprovalPolicy::Untrusted => 2,
        }
    }

    /// Parses a name of [`ApprovalPolicy::VARIANTS`]; `None` for anything else.
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
    /// Commands may read everywhere and write nowhere (`read-only`).
    ReadOnly,
    /// Commands may write under cwd and the writable roots only
    /// (`workspace-write`, the default).
    #[default]
    WorkspaceWrite,
    /// No sandbox: commands run with the user's own rights
    /// (`danger-full-access`).
    DangerFullAccess,
}

impl SandboxMode {
    /// How far its commands reach: read-only 0, workspace-write 1,
    /// danger-full-access 2.
    pub fn reach(self) -> u8 {
        match self {
            SandboxMode::ReadOnly => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::DangerFullAccess => 2,
        }
    }

    /// The accepted names, as in config files and flags.
    pub const VARIANTS: &'static [&'static str] =
        &["read-only", "workspace-write", "danger-full-access"];

    /// The mode's name in config files, flags and events (`workspace-write`,
    /// ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }

    /// Parses a name of [`SandboxMode::VARIANTS`]; `None` for anything else.
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
    /// What sandboxed commands may write.
    pub mode: SandboxMode,
    /// Whether sandboxed commands may use the network.
    pub network_access: bool,
    /// Extra writable roots besides cwd (workspace-write only).
    pub writable_roots: Vec<PathBuf>,
    /// The shell used for command strings, e.g. `/bin/bash` (on Windows
    /// `powershell.exe`, or `cmd.exe`); see [`shell_argv`].
    pub shell: String,
    /// Limits for commands run in the sandbox.
    #[serde(default)]
    pub limits: ResourceLimits,
    /// The files trusted commands run from the workspace (set when the
    /// configuration is read).
    #[serde(skip)]
    pub pins: Arc<Pins>,
}

/// The files that the user's own commands (hooks, effect and guardrail
/// commands, MCP servers, the test command) name in the workspace, as they
/// were when the session's configuration was read: read-only for
/// sandboxed commands and file tools, and checked again before each such
/// command runs (`pinned` in cogni-sandbox).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    /// When they were taken: a workspace file such a command names that
    /// changed after this is refused. `None`: nothing was pinned.
    pub since: Option<SystemTime>,
    /// The canonical cwd and writable roots they were taken under.
    pub roots: Vec<PathBuf>,
    /// The pinned files, symlinks and their targets each a pin.
    pub files: Vec<Pin>,
}

/// One pinned file: its path (a symlink's own, and its target's as
/// another pin) and its stamp then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The pinned path: a symlink's own path (its target is a pin of its
    /// own).
    pub path: PathBuf,
    /// How the file was when it was pinned.
    pub stamp: FileStamp,
}

/// What identifies a file's content and place: any change of it (a write,
/// a rename, a new link, chmod) changes the inode's ctime, which user
/// space cannot set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// The device the file is on (`st_dev`).
    pub dev: u64,
    /// The file's inode number (`st_ino`).
    pub ino: u64,
    /// Seconds and nanoseconds.
    pub ctime: (i64, i64),
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

/// The shell of command strings when none is configured: bash on Unix,
/// Windows PowerShell on Windows.
pub const DEFAULT_SHELL: &str = if cfg!(windows) {
    "powershell.exe"
} else {
    "/bin/bash"
};

/// What kind of shell `shell` (a path or a name) is, by its file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellKind {
    /// A POSIX shell (`sh -c LINE`).
    Posix,
    /// Windows' `cmd.exe` (`cmd /D /S /C LINE`).
    Cmd,
    /// PowerShell, Windows' or 7 (`powershell -NoProfile -Command LINE`).
    PowerShell,
}

impl ShellKind {
    /// The kind of `shell`.
    pub fn of(shell: &str) -> ShellKind {
        let name = shell
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(shell)
            .to_ascii_lowercase();
        let stem = name.strip_suffix(".exe").unwrap_or(&name);
        match stem {
            "cmd" => ShellKind::Cmd,
            "powershell" | "pwsh" => ShellKind::PowerShell,
            _ => ShellKind::Posix,
        }
    }
}

/// The argv that runs the command line `line` with `shell`.
pub fn shell_argv(shell: &str, line: &str) -> Vec<String> {
    let mut argv = vec![shell.to_string()];
    match ShellKind::of(shell) {
        ShellKind::Posix => argv.push("-c".into()),
        // No AutoRun commands from the registry; the line as it is.
        ShellKind::Cmd => argv.extend(["/D", "/S", "/C"].map(String::from)),
        ShellKind::PowerShell => {
            argv.extend(["-NoLogo", "-NoProfile", "-NonInteractive", "-Command"].map(String::from))
        }
    }
    argv.push(line.to_string());
    argv
}

/// The argv that runs `line` with `shell`, its stderr merged into stdout.
pub fn shell_argv_merged(shell: &str, line: &str) -> Vec<String> {
    let merged = match ShellKind::of(shell) {
        ShellKind::Posix => format!("exec 2>&1\n{line}"),
        ShellKind::Cmd => format!("({line}) 2>&1"),
        ShellKind::PowerShell => format!("& {{ {line} }} 2>&1"),
    };
    shell_argv(shell, &merged)
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            mode: SandboxMode::default(),
            network_access: false,
            writable_roots: Vec::new(),
            shell: DEFAULT_SHELL.to_string(),
            limits: ResourceLimits::default(),
            pins: Arc::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shell_gets_its_own_way_to_run_a_line() {
        assert_eq!(shell_argv("/bin/bash", "ls"), ["/bin/bash", "-c", "ls"]);
        assert_eq!(
            shell_argv(r"C:\Windows\System32\cmd.exe", "dir"),
            [r"C:\Windows\System32\cmd.exe", "/D", "/S", "/C", "dir"]
        );
        assert_eq!(
            shell_argv("pwsh", "Get-ChildItem")[1..],
            [
                "-NoLogo",
                "-NoProfile",
                "-NonInteractive",
                "-Command",
                "Get-ChildItem"
            ]
        );
        assert_eq!(ShellKind::of("POWERSHELL.EXE"), ShellKind::PowerShell);
        assert_eq!(ShellKind::of("/usr/bin/zsh"), ShellKind::Posix);
        assert_eq!(
            shell_argv_merged("cmd.exe", "echo x").last().unwrap(),
            "(echo x) 2>&1"
        );
        assert_eq!(
            shell_argv_merged("sh", "echo x").last().unwrap(),
            "exec 2>&1\necho x"
        );
    }
}
