//! Running a user's command for an effect (a guardrail, a hook): through
//! `tools::exec` like every process cogni starts (own process group,
//! supervised, killed at its timeout with everything it started), with a
//! JSON document on stdin and the user's environment. It is the user's
//! own program, not the model's, so it runs outside the sandbox.

use crate::tools::exec::{self, ExecRequest, Termination};
use std::path::Path;
use std::time::Duration;

/// Bytes of a command's stdout and stderr kept.
const CAPTURE_BYTES: usize = 64 * 1024;

/// How a user command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// `None` when it timed out or was killed by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

impl Ran {
    /// One line for people: `exit code 2`, `timed out after 5s`, ...
    pub fn status(&self, timeout: Duration) -> String {
        match (self.timed_out, self.exit_code) {
            (true, _) => format!(
                "timed out after {:.1}s and was killed",
                timeout.as_secs_f64()
            ),
            (false, Some(code)) => format!("exit code {code}"),
            (false, None) => "killed by a signal".to_string(),
        }
    }
}

/// Run `command` with `sh -c` in `cwd`, `input` on stdin, at most `timeout`.
pub async fn run(
    command: &str,
    input: &serde_json::Value,
    cwd: &Path,
    extra_env: &[(&str, String)],
    timeout: Duration,
) -> Result<Ran, String> {
    let mut env: std::collections::BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    for (k, v) in extra_env {
        env.insert((*k).to_string(), v.clone());
    }
    let request = ExecRequest {
        argv: vec!["/bin/sh".into(), "-c".into(), command.into()],
        cwd: cwd.to_path_buf(),
        env,
        timeout,
        capture_limit_bytes: CAPTURE_BYTES,
        kill_grace: exec::DEFAULT_KILL_GRACE,
        io_drain: exec::DEFAULT_IO_DRAIN,
        sandbox: None,
        stdin: Some(serde_json::to_vec(input).unwrap_or_default()),
    };
    let out = exec::run(request).await.map_err(|e| e.to_string())?;
    let text = |s: &exec::CapturedStream| {
        let mut all = s.head.clone();
        all.extend_from_slice(&s.tail);
        String::from_utf8_lossy(&all).trim_end().to_string()
    };
    Ok(Ran {
        exit_code: match out.termination {
            Termination::Exited(code) if !out.timed_out => Some(code),
            _ => None,
        },
        timed_out: out.timed_out,
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
        duration: out.duration,
    })
}
