//! Commands the runner starts itself: setup and check commands (through
//! the agent's shell and child environment) and git. All go through
//! [`cogni_process`]: own process group, timeout that kills the group,
//! bounded capture.

use cogni_process::{self as exec, ExecRequest, DEFAULT_IO_DRAIN, DEFAULT_KILL_GRACE};
pub use cogni_tools::git::{git, lossy, tail};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Bytes of output kept in results per command.
pub const OUTPUT_TAIL_BYTES: usize = 4096;

/// Bytes of each stream kept in memory while a command runs.
const CAPTURE_BYTES: usize = 256 * 1024;

/// Where and how commands run.
#[derive(Debug, Clone)]
pub struct Shell {
    /// e.g. `/bin/bash`; commands run as `shell -c COMMAND`.
    pub program: String,
    pub env: BTreeMap<String, String>,
}

/// How a command went.
#[derive(Debug, Clone)]
pub struct Finished {
    pub success: bool,
    /// Exit code, `timed out after ...`, or why it could not start.
    pub summary: String,
    pub output_tail: String,
}

impl Shell {
    pub async fn run(&self, command: &str, cwd: &Path, timeout: Duration) -> Finished {
        let argv = cogni_protocol::shell_argv(&self.program, command);
        run(argv, cwd, &self.env, timeout).await
    }
}

async fn run(
    argv: Vec<String>,
    cwd: &Path,
    env: &BTreeMap<String, String>,
    timeout: Duration,
) -> Finished {
    let request = ExecRequest {
        argv,
        cwd: cwd.to_path_buf(),
        env: env.clone(),
        timeout,
        capture_limit_bytes: CAPTURE_BYTES,
        kill_grace: DEFAULT_KILL_GRACE,
        io_drain: DEFAULT_IO_DRAIN,
        // The task file's own commands, like any CI step: not the agent's.
        sandbox: None,
        stdin: None,
    };
    match exec::run(request).await {
        Ok(out) => {
            let summary = if out.timed_out {
                format!("timed out after {:.1}s", timeout.as_secs_f64())
            } else {
                format!("exit code {}", out.termination.exit_code())
            };
            let mut text = lossy(&out.stdout);
            text.push_str(&lossy(&out.stderr));
            Finished {
                success: out.termination.success() && !out.timed_out,
                summary,
                output_tail: tail(&text, OUTPUT_TAIL_BYTES),
            }
        }
        Err(e) => Finished {
            success: false,
            summary: e.to_string(),
            output_tail: String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell() -> Shell {
        Shell {
            program: "/bin/sh".into(),
            env: std::env::vars().collect(),
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn commands_report_exit_code_and_output_tail() {
        let dir = tempfile::tempdir().unwrap();
        let ok = shell()
            .run(
                "echo out; echo err >&2",
                dir.path(),
                Duration::from_secs(10),
            )
            .await;
        assert!(ok.success);
        assert_eq!(ok.output_tail, "out\nerr\n");
        let bad = shell()
            .run("exit 3", dir.path(), Duration::from_secs(10))
            .await;
        assert!(!bad.success);
        assert_eq!(bad.summary, "exit code 3");
        let slow = shell()
            .run("sleep 5", dir.path(), Duration::from_millis(100))
            .await;
        assert!(!slow.success);
        assert!(slow.summary.starts_with("timed out"), "{}", slow.summary);
    }

    #[test]
    fn tails_cut_on_character_boundaries() {
        assert_eq!(tail("short", 10), "short");
        assert_eq!(tail("aé€z", 4), "[...]€z");
    }
}
