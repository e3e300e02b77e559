//! Checks run after the agent finished: commands, files, the final answer,
//! and a review's findings and verdict.

use super::command::{tail, Shell, OUTPUT_TAIL_BYTES};
use super::results::{millis, CheckResult};
use super::review::Review;
use cogni_core::output::OutputSchema;
use cogni_spec::tasks::Check;
use cogni_tools::fs::read_limited;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Run every check (a failing one does not stop the others).
pub async fn run_all(
    checks: &[Check],
    workspace: &Path,
    answer: &str,
    review: Option<&Review>,
    shell: &Shell,
) -> Vec<CheckResult> {
    let mut results = Vec::with_capacity(checks.len());
    for check in checks {
        results.push(run(check, workspace, answer, review, shell).await);
    }
    results
}

async fn run(
    check: &Check,
    workspace: &Path,
    answer: &str,
    review: Option<&Review>,
    shell: &Shell,
) -> CheckResult {
    let started = Instant::now();
    let (passed, output_tail) = match check {
        Check::Command { command, timeout } => {
            let done = shell.run(command, workspace, *timeout).await;
            let output = if done.success {
                done.output_tail
            } else {
                tail(
                    &format!("{}\n{}", done.output_tail.trim_end(), done.summary),
                    OUTPUT_TAIL_BYTES,
                )
            };
            (done.success, output)
        }
        Check::FileExists { path } => match tokio::fs::symlink_metadata(workspace.join(path)).await
        {
            Ok(_) => (true, String::new()),
            Err(e) => (false, format!("{path}: {e}")),
        },
        Check::FileMatches { path, pattern } => match read_checked(workspace.join(path)).await {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                if pattern.is_match(&text) {
                    (true, String::new())
                } else {
                    let shown = tail(&text, OUTPUT_TAIL_BYTES / 2);
                    (
                        false,
                        format!("{path} does not match /{pattern}/; it ends with:\n{shown}"),
                    )
                }
            }
            Err(e) => (false, e),
        },
        Check::AnswerRegex(pattern) => {
            if pattern.is_match(answer) {
                (true, String::new())
            } else {
                (
                    false,
                    mismatch(&format!("does not match /{pattern}/"), answer),
                )
            }
        }
        Check::AnswerEquals(expected) => {
            let got = extract_answer(answer).trim();
            if got == expected.trim() {
                (true, String::new())
            } else {
                (
                    false,
                    mismatch(&format!("is not {:?}", expected.trim()), got),
                )
            }
        }
        Check::AnswerSchema(schema) => {
            match OutputSchema::compile(schema).and_then(|s| s.check(extract_answer(answer))) {
                Ok(()) => (true, String::new()),
                Err(problem) => (false, problem),
            }
        }
        Check::Finding { .. } | Check::FindingCount { .. } | Check::Verdict(_) => match review {
            Some(review) => on_review(check, review),
            None => (false, "the task made no review to check".into()),
        },
    };
    CheckResult {
        kind: check.kind().to_string(),
        description: check.describe(),
        passed,
        output_tail,
        duration_ms: millis(started.elapsed()),
    }
}

/// A check of a review's findings or verdict: whether it holds, and what
/// the review found when it does not.
fn on_review(check: &Check, review: &Review) -> (bool, String) {
    let found = || {
        let list: Vec<String> = review
            .findings
            .iter()
            .map(|f| format!("{} {} ({})", f.priority_name(), f.location(), f.title))
            .collect();
        if list.is_empty() {
            "the review reported no finding".to_string()
        } else {
            format!("the review reported: {}", list.join("; "))
        }
    };
    let passed = match check {
        Check::Finding {
            path,
            lines,
            priority,
        } => review.findings.iter().any(|f| {
            let on_lines = lines.is_none_or(|(a, b)| {
                let (start, end) = match f.anchor_line {
                    // Deleted lines count where they stood too.
                    Some(anchor) if !(f.start_line <= b && a <= f.end_line) => (anchor, anchor),
                    _ => (f.start_line, f.end_line),
                };
                start <= b && a <= end
            });
            (&f.path == path || f.old_path.as_ref() == Some(path))
                && f.priority <= *priority
                && on_lines
        }),
        Check::FindingCount { min, max, priority } => {
            let n = review.at_or_above(*priority) as u32;
            min.is_none_or(|min| n >= min) && max.is_none_or(|max| n <= max)
        }
        Check::Verdict(verdict) => review.verdict.as_str() == verdict,
        _ => false,
    };
    if passed {
        (true, String::new())
    } else if let Check::Verdict(_) = check {
        (
            false,
            format!(
                "the verdict was {}: {}",
                review.verdict.as_str(),
                review.explanation
            ),
        )
    } else {
        (false, found())
    }
}

/// The most of a file `file_matches` reads.
const FILE_MATCHES_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The file a `file_matches` check reads (the model may have left anything
/// there: a FIFO is refused, not waited on), or why it cannot be.
async fn read_checked(path: PathBuf) -> Result<Vec<u8>, String> {
    tokio::task::spawn_blocking(move || read_limited(&path, FILE_MATCHES_MAX_BYTES))
        .await
        .map_err(|e| format!("reading the file was interrupted: {e}"))?
        .map_err(|e| e.to_string())
}

fn mismatch(what: &str, answer: &str) -> String {
    format!(
        "the answer {what}; it was:\n{}",
        tail(answer, OUTPUT_TAIL_BYTES / 2)
    )
}

/// The text of the last `<answer>...</answer>` block, or all of `text`.
pub fn extract_answer(text: &str) -> &str {
    const OPEN: &str = "<answer>";
    const CLOSE: &str = "</answer>";
    text.rfind(OPEN)
        .and_then(|start| {
            let body = &text[start + OPEN.len()..];
            body.find(CLOSE).map(|end| &body[..end])
        })
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;
    use std::time::Duration;

    fn shell() -> Shell {
        Shell {
            program: "/bin/sh".into(),
            env: std::env::vars().collect(),
        }
    }

    #[test]
    fn answers_are_taken_from_the_last_answer_block() {
        assert_eq!(extract_answer("plain"), "plain");
        assert_eq!(extract_answer("x <answer> 42 </answer> y"), " 42 ");
        assert_eq!(
            extract_answer("<answer>1</answer> then <answer>2</answer>"),
            "2"
        );
        assert_eq!(extract_answer("<answer>unclosed"), "<answer>unclosed");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn each_kind_of_check_passes_and_fails_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("out.txt"), "hello\n").unwrap();
        let answer = "Done. <answer>{\"n\": 42}</answer>";
        let checks = vec![
            Check::Command {
                command: "grep -q hello out.txt".into(),
                timeout: Duration::from_secs(10),
            },
            Check::Command {
                command: "echo nope; exit 1".into(),
                timeout: Duration::from_secs(10),
            },
            Check::FileExists {
                path: "out.txt".into(),
            },
            Check::FileExists {
                path: "missing.txt".into(),
            },
            Check::FileMatches {
                path: "out.txt".into(),
                pattern: Regex::new("(?m)^hel+o$").unwrap(),
            },
            Check::FileMatches {
                path: "out.txt".into(),
                pattern: Regex::new("bye").unwrap(),
            },
            Check::AnswerRegex(Regex::new("(?i)done").unwrap()),
            Check::AnswerEquals("{\"n\": 42}".into()),
            Check::AnswerEquals("41".into()),
            Check::AnswerSchema(serde_json::json!({
                "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]
            })),
            Check::AnswerSchema(serde_json::json!({"required": ["m"]})),
        ];
        let results = run_all(&checks, dir.path(), answer, None, &shell()).await;
        let passed: Vec<bool> = results.iter().map(|r| r.passed).collect();
        assert_eq!(
            passed,
            [true, false, true, false, true, false, true, true, false, true, false]
        );
        assert!(
            results[1].output_tail.contains("nope\nexit code 1"),
            "{:?}",
            results[1]
        );
        assert!(results[3].output_tail.starts_with("missing.txt: "));
        assert!(results[5].output_tail.contains("does not match /bye/"));
        assert!(results[8].output_tail.contains("is not \"41\""));
        assert!(results[10]
            .output_tail
            .contains("does not match the output schema"));
        assert_eq!(results[4].kind, "file_matches");
    }
}
