//! Running a user's command for an effect (a guardrail, a hook): through
//! `tools::exec` like every process cogni starts (own process group,
//! supervised, killed at its timeout with everything it started), with a
//! JSON document on stdin and the user's environment. It is the user's
//! own program, not the model's, so it runs outside the sandbox, started
//! by the fork server when it can (`exec::run_served`).

use cogni_process::{self as exec, ExecRequest, Termination};
use cogni_protocol::Pins;
use cogni_sandbox::pinned;
use std::path::Path;
use std::time::Duration;

/// Bytes of a command's stdout and stderr kept.
const CAPTURE_BYTES: usize = 64 * 1024;

/// How a user command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// `None` when it timed out or was killed by a signal.
    pub exit_code: Option<i32>,
    /// It ran past its timeout and was killed (with everything it
    /// started).
    pub timed_out: bool,
    /// What it printed on stdout: its first and last 32 KiB when longer
    /// (the middle dropped), lossy UTF-8, trailing whitespace trimmed.
    pub stdout: String,
    /// What it printed on stderr: its first and last 32 KiB when longer
    /// (the middle dropped), lossy UTF-8, trailing whitespace trimmed.
    pub stderr: String,
    /// Wall-clock time from start to exit (or kill).
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

/// Shell words that must stay with the shell: its builtins and keywords,
/// which may also exist as programs that behave differently (`cd`, `exit`).
const SHELL_WORDS: &[&str] = &[
    ".", ":", "[", "alias", "bg", "break", "case", "cd", "command", "continue", "do", "done",
    "elif", "else", "esac", "eval", "exec", "exit", "export", "fc", "fg", "fi", "for", "getopts",
    "hash", "if", "jobs", "local", "read", "readonly", "return", "set", "shift", "source", "then",
    "times", "trap", "type", "ulimit", "umask", "unalias", "unset", "until", "wait", "while",
];

/// `command` as an argv to run without a shell, when that means exactly
/// what `sh -c` would: plain words (letters, digits and `-_./:,+@%=`, no
/// quoting, expansion, redirection or operators), the first a program
/// found in `path` by its bare name (not a path, not an assignment, not a
/// shell word) that the kernel can run itself (a binary or a `#!`
/// script; a script without that line is one the shell runs, not exec).
/// Saves starting a shell for hooks like `true` or `check-call --strict`;
/// anything else goes through `sh -c`.
fn plain_argv(command: &str, path: Option<&str>) -> Option<Vec<String>> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:,+@%=".contains(c);
    let words: Vec<&str> = command
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    let first = *words.first()?;
    if !command.chars().all(|c| plain(c) || c == ' ' || c == '\t')
        || first.contains(['/', '='])
        || SHELL_WORDS.contains(&first)
    {
        return None;
    }
    let program = exec::find_program(first, path?)?;
    if !exec_format(&program) {
        return None;
    }
    let mut argv = vec![program.to_string_lossy().into_owned()];
    argv.extend(words[1..].iter().map(|w| w.to_string()));
    Some(argv)
}

/// Whether the regular file at `path` starts as a program the kernel
/// executes: an ELF binary or a `#!` script. A file that cannot be read
/// is not.
fn exec_format(path: &Path) -> bool {
    use std::io::Read;
    let mut start = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut start))
        .is_ok_and(|()| start.starts_with(b"#!") || start == *b"\x7fELF")
}

/// Run `command` with `sh -c` (or directly when it is plain words naming a
/// program: `plain_argv`) in `cwd`, `input` on stdin, at most `timeout`.
/// Refused when a workspace file it names changed during the session
/// (`pins`: see `cogni_sandbox::pinned`).
pub async fn run(
    command: &str,
    input: &serde_json::Value,
    cwd: &Path,
    extra_env: &[(&str, String)],
    timeout: Duration,
    pins: &Pins,
) -> Result<Ran, String> {
    pinned::check(pins, &pinned::Named::line(command, cwd))?;
    let mut env: std::collections::BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    for (k, v) in extra_env {
        env.insert((*k).to_string(), v.clone());
    }
    let argv = plain_argv(command, env.get("PATH").map(String::as_str)).unwrap_or_else(|| {
        let shell = if cfg!(windows) {
            cogni_protocol::DEFAULT_SHELL
        } else {
            "/bin/sh"
        };
        cogni_protocol::shell_argv(shell, command)
    });
    let request = ExecRequest {
        argv,
        cwd: cwd.to_path_buf(),
        env,
        timeout,
        capture_limit_bytes: CAPTURE_BYTES,
        kill_grace: exec::DEFAULT_KILL_GRACE,
        io_drain: exec::DEFAULT_IO_DRAIN,
        sandbox: None,
        stdin: Some(serde_json::to_vec(input).unwrap_or_default()),
    };
    let out = exec::run_served(request).await.map_err(|e| e.to_string())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: Option<&str> = Some("/nonexistent:/usr/bin:/bin");

    #[cfg(unix)]
    #[test]
    fn plain_words_naming_a_program_run_without_a_shell() {
        let argv = plain_argv("true", PATH).expect("plain");
        assert!(argv[0].ends_with("/true") && argv.len() == 1, "{argv:?}");
        let argv = plain_argv("  test  -d /tmp ", PATH).expect("plain");
        assert_eq!(&argv[1..], ["-d", "/tmp"]);
    }

    #[test]
    fn anything_the_shell_would_read_differently_keeps_the_shell() {
        for command in [
            "echo $HOME",
            "echo 'a b'",
            "echo \"x\"",
            "true && false",
            "true; false",
            "cat < in",
            "echo a > out",
            "ls *.rs",
            "echo ~",
            "echo a\\ b",
            "exit 2",
            "cd /tmp",
            "FOO=1 env",
            "./scripts/check",
            "/bin/true",
            "no-such-program-anywhere",
            "true\nfalse",
            "",
        ] {
            assert_eq!(plain_argv(command, PATH), None, "{command:?}");
        }
        assert_eq!(plain_argv("true", None), None, "no PATH, no lookup");
    }

    #[cfg(unix)]
    #[test]
    fn a_script_without_a_shebang_is_left_to_the_shell() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [("bare", "exit 1\n"), ("shebang", "#!/bin/sh\nexit 1\n")] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = dir.path().to_string_lossy().into_owned();
        assert_eq!(plain_argv("bare", Some(&path)), None);
        assert!(plain_argv("shebang", Some(&path)).is_some());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_plain_command_and_a_shell_command_run_alike() {
        let dir = tempfile::tempdir().unwrap();
        let input = serde_json::json!({"a": 1});
        let pins = Pins::default();
        let plain = run(
            "cat",
            &input,
            dir.path(),
            &[],
            Duration::from_secs(10),
            &pins,
        )
        .await
        .unwrap();
        let shell = run(
            "cat | cat",
            &input,
            dir.path(),
            &[],
            Duration::from_secs(10),
            &pins,
        )
        .await
        .unwrap();
        assert_eq!(plain.stdout, r#"{"a":1}"#);
        assert_eq!(plain.stdout, shell.stdout);
        let failed = run(
            "false",
            &input,
            dir.path(),
            &[],
            Duration::from_secs(10),
            &pins,
        )
        .await
        .unwrap();
        assert_eq!(failed.exit_code, Some(1));
    }
}
