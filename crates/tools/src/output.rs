//! How a process's end and output read for the model: the status line
//! and stdout/stderr sharing the output limits. Used by `shell` and the
//! background jobs.

use cogni_process::truncate::Limits;
use cogni_process::{CapturedStream, Termination};
use std::fmt::Write as _;
use std::time::Duration;

/// `exit code 0, 1.2s`, `killed by signal 9 (SIGKILL), 0.3s`, with
/// `timed out after 5s; ` in front when `timed_out` gives the timeout.
pub(crate) fn status_line(
    termination: Termination,
    timed_out: Option<Duration>,
    duration: Duration,
) -> String {
    let mut text = String::new();
    if let Some(timeout) = timed_out {
        let _ = write!(text, "timed out after {}s; ", fmt_secs(timeout));
    }
    match termination {
        Termination::Exited(code) => {
            let _ = write!(text, "exit code {code}");
        }
        Termination::Signaled(signal) => {
            let _ = write!(text, "killed by signal {signal}");
            if let Some(name) = signal_name(signal) {
                let _ = write!(text, " ({name})");
            }
        }
    }
    let _ = write!(text, ", {:.1}s", duration.as_secs_f64());
    text
}

/// stdout, then stderr labelled, sharing `limits` (empty when both are).
pub(crate) fn render_streams(out: &CapturedStream, err: &CapturedStream, limits: Limits) -> String {
    let mut text = String::new();
    let out_limits = Limits {
        max_bytes: share(limits.max_bytes, err.total_bytes, limits.max_bytes / 2),
        max_lines: share(limits.max_lines, err.total_lines, limits.max_lines / 2),
    };
    let err_limits = Limits {
        max_bytes: share(
            limits.max_bytes,
            out.total_bytes,
            limits.max_bytes.div_ceil(2),
        ),
        max_lines: share(
            limits.max_lines,
            out.total_lines,
            limits.max_lines.div_ceil(2),
        ),
    };
    if !out.is_empty() {
        push_block(&mut text, &out.to_model_text(out_limits));
    }
    if !err.is_empty() {
        text.push_str("stderr:\n");
        push_block(&mut text, &err.to_model_text(err_limits));
    }
    text
}

/// The part of `limit` one stream may use when the other stream has `other`
/// and may claim up to `other_claim`: half each, unused budget goes across.
fn share(limit: usize, other: u64, other_claim: usize) -> usize {
    let other = usize::try_from(other).unwrap_or(usize::MAX);
    limit - other.min(other_claim)
}

pub(crate) fn push_block(text: &mut String, block: &str) {
    text.push_str(block);
    if !block.ends_with('\n') {
        text.push('\n');
    }
}

pub(crate) fn fmt_secs(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs:.1}")
    }
}

/// The name of a Unix signal (Windows has none).
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    #[cfg(windows)]
    return {
        let _ = signal;
        None
    };
    #[cfg(unix)]
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_shared_between_streams() {
        // Both large: halves that add up to the limit.
        assert_eq!(share(101, 1000, 50) + share(101, 1000, 51), 101);
        // Small stderr: stdout gets the rest.
        assert_eq!(share(100, 10, 50), 90);
    }
}
