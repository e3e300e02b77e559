//! Recognise `apply_patch` called through the shell, so the shell tool can
//! route it here instead of running a program that does not exist.
//!
//! Accepted shapes (anything else is left to the shell):
//! `apply_patch <<'EOF'` ... `EOF` (any delimiter, quoted or not, `<<-` too),
//! `apply_patch '<patch>'` or `apply_patch "<patch>"` (one argument), either
//! optionally preceded by `cd <dir> &&`; `applypatch` is the same command.

use super::parser::heredoc_delimiter;

const COMMANDS: [&str; 2] = ["apply_patch", "applypatch"];

/// A patch found in a shell command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellPatch {
    /// The patch text (`*** Begin Patch` ... `*** End Patch`), unquoted.
    pub patch: String,
    /// The directory of a leading `cd <dir> &&`, as written.
    pub workdir: Option<String>,
}

/// Recognise a shell script (what `bash -c` would run) that only applies a
/// patch.
pub fn shell_patch_from_script(script: &str) -> Option<ShellPatch> {
    let (workdir, rest) = strip_cd(script.trim_start())?;
    let first_line_end = rest.find('\n').unwrap_or(rest.len());
    let first_line = &rest[..first_line_end];
    if let Some(delim) = heredoc_delimiter(first_line) {
        // `heredoc_delimiter` also accepts a bare `<<EOF`; require the command.
        let command = first_line.trim_start();
        if !COMMANDS.iter().any(|c| command.starts_with(c)) {
            return None;
        }
        let body = rest.get(first_line_end + 1..)?;
        let lines: Vec<&str> = body.lines().collect();
        let close = lines.iter().rposition(|l| !l.trim().is_empty())?;
        if lines[close].trim() != delim {
            return None;
        }
        let patch = lines[..close].join("\n");
        return Some(ShellPatch { patch, workdir });
    }
    let after = strip_command(rest)?;
    let (patch, tail) = shell_word(after.trim_start())?;
    tail.trim()
        .is_empty()
        .then_some(ShellPatch { patch, workdir })
}

/// Recognise an exec-style command line: `["apply_patch", "<patch>"]` or
/// `["bash", "-lc", "<script>"]` (also `sh`/`zsh`, `-c`).
pub fn shell_patch_from_argv(argv: &[String]) -> Option<ShellPatch> {
    match argv {
        [cmd, patch] if COMMANDS.contains(&cmd.as_str()) => Some(ShellPatch {
            patch: patch.clone(),
            workdir: None,
        }),
        [shell, flag, script] => {
            let name = shell.rsplit('/').next().unwrap_or(shell);
            let is_shell = ["bash", "sh", "zsh"].contains(&name);
            let is_flag = ["-c", "-lc", "-cl"].contains(&flag.as_str());
            if is_shell && is_flag {
                shell_patch_from_script(script)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `cd <dir> && rest` -> (Some(dir), rest); otherwise (None, input).
fn strip_cd(s: &str) -> Option<(Option<String>, &str)> {
    let Some(after) = s.strip_prefix("cd ") else {
        return Some((None, s));
    };
    let (dir, rest) = shell_word(after.trim_start())?;
    let rest = rest.trim_start().strip_prefix("&&")?;
    Some((Some(dir), rest.trim_start()))
}

/// The text after `apply_patch`/`applypatch` followed by whitespace.
fn strip_command(s: &str) -> Option<&str> {
    COMMANDS.iter().find_map(|c| {
        let rest = s.strip_prefix(c)?;
        rest.starts_with(char::is_whitespace).then_some(rest)
    })
}

/// One shell word: single-quoted (literal), double-quoted (`\"`, `\\`, `\$`,
/// `` \` `` unescaped), or bare up to whitespace. Returns it and the rest.
fn shell_word(s: &str) -> Option<(String, &str)> {
    match s.chars().next()? {
        '\'' => {
            let end = s[1..].find('\'')? + 1;
            Some((s[1..end].to_string(), &s[end + 1..]))
        }
        '"' => {
            let mut out = String::new();
            let mut chars = s.char_indices().skip(1);
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => return Some((out, &s[i + 1..])),
                    '\\' => match chars.next() {
                        Some((_, e @ ('"' | '\\' | '$' | '`'))) => out.push(e),
                        Some((_, '\n')) => {}
                        Some((_, e)) => {
                            out.push('\\');
                            out.push(e);
                        }
                        None => return None,
                    },
                    _ => out.push(c),
                }
            }
            None
        }
        _ => {
            let end = s.find(char::is_whitespace).unwrap_or(s.len());
            let word = &s[..end];
            // Bare words with quotes or substitutions need a real shell.
            if word.contains(['\'', '"', '$', '`', '\\', ';', '|', '&', '<', '>']) {
                return None;
            }
            Some((word.to_string(), &s[end..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "*** Begin Patch\n*** Delete File: a\n*** End Patch";

    fn found(patch: &str, workdir: Option<&str>) -> Option<ShellPatch> {
        Some(ShellPatch {
            patch: patch.to_string(),
            workdir: workdir.map(str::to_string),
        })
    }

    #[test]
    fn heredocs() {
        for script in [
            format!("apply_patch <<'EOF'\n{PATCH}\nEOF\n"),
            format!("applypatch <<\"PATCH\"\n{PATCH}\nPATCH"),
            format!("  apply_patch <<EOF\n{PATCH}\nEOF\n\n"),
        ] {
            assert_eq!(
                shell_patch_from_script(&script),
                found(PATCH, None),
                "{script}"
            );
        }
        assert_eq!(
            shell_patch_from_script(&format!("cd 'my dir' && apply_patch <<'EOF'\n{PATCH}\nEOF")),
            found(PATCH, Some("my dir"))
        );
    }

    #[test]
    fn single_argument() {
        assert_eq!(
            shell_patch_from_script(&format!("apply_patch '{PATCH}'")),
            found(PATCH, None)
        );
        assert_eq!(
            shell_patch_from_script("apply_patch \"a \\\"q\\\" \\$x\""),
            found("a \"q\" $x", None)
        );
        assert_eq!(
            shell_patch_from_argv(&["apply_patch".into(), PATCH.into()]),
            found(PATCH, None)
        );
        assert_eq!(
            shell_patch_from_argv(&[
                "/bin/bash".into(),
                "-lc".into(),
                format!("cd src && applypatch <<'EOF'\n{PATCH}\nEOF\n")
            ]),
            found(PATCH, Some("src"))
        );
    }

    #[test]
    fn other_commands_are_left_alone() {
        for script in [
            format!("cat <<'EOF'\n{PATCH}\nEOF\n"),
            format!("<<'EOF'\n{PATCH}\nEOF\n"),
            format!("apply_patch <<'EOF'\n{PATCH}\nEOF\necho done\n"),
            format!("apply_patch '{PATCH}' && cargo test"),
            "apply_patchx 'x'".to_string(),
            "apply_patch $PATCH".to_string(),
            "cd a; apply_patch 'x'".to_string(),
            "ls -la".to_string(),
        ] {
            assert_eq!(shell_patch_from_script(&script), None, "{script}");
        }
        assert_eq!(
            shell_patch_from_argv(&["python".into(), "-c".into(), "apply_patch 'x'".into()]),
            None
        );
        assert_eq!(shell_patch_from_argv(&["apply_patch".into()]), None);
    }
}
