//! A guard that cannot give its answer blocks, through the real binary:
//! every kind of guard (guardrails on calls and replies, the output
//! guardrail's command, hooks at every event that can block) with every
//! way of not answering (a script without `#!` found on `PATH` or named by
//! its path, a missing program, a `#!` naming a missing interpreter, a
//! crash by a signal, a timeout, an answer that cannot be read).

use crate::cli::Env;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A way for a guard's command not to answer (or, for a script without
/// `#!`, to answer only when run as the shell would run it).
struct Failure {
    name: &'static str,
    /// The command, `BIN` standing for the directory of the test's programs.
    command: &'static str,
    /// Only hooks have an answer on stdout to read.
    hooks_only: bool,
}

const FAILURES: &[Failure] = &[
    Failure {
        name: "a script without #! on PATH",
        command: "nosheb",
        hooks_only: false,
    },
    Failure {
        name: "a script without #! by its path",
        command: "BIN/nosheb",
        hooks_only: false,
    },
    Failure {
        name: "a missing program",
        command: "no-such-guard-program",
        hooks_only: false,
    },
    Failure {
        name: "a #! naming a missing interpreter",
        command: "badinterp",
        hooks_only: false,
    },
    Failure {
        name: "a crash by a signal",
        command: "kill -KILL $$",
        hooks_only: false,
    },
    Failure {
        name: "a timeout",
        command: "sleep 20",
        hooks_only: false,
    },
    Failure {
        name: "an answer that cannot be read",
        command: "echo '{\"decision\": '",
        hooks_only: true,
    },
];

/// What a blocking guard does to the run.
#[derive(Debug, Clone, Copy)]
enum Blocks {
    /// The call does not run; the turn goes on (exit 0).
    Call,
    /// The turn ends blocked or with an invalid output (exit 1); the call
    /// does not run.
    Turn,
    /// The call ran; its output carries the hook's reason.
    Output,
}

/// A kind of guard: its config (`CMD` stands for the command) and what its
/// block does.
struct Guard {
    name: &'static str,
    config: &'static str,
    is_hook: bool,
    blocks: Blocks,
    /// Its block when it answers (exit 2) keeps the turn going instead, so
    /// the scripts without `#!` (which answer) are not tried.
    only_no_answer: bool,
}

const GUARDS: &[Guard] = &[
    Guard {
        name: "guardrail on tool calls",
        config: "effects = [{ kind = \"guardrail\", on = \"tool_call\", command = CMD, timeout_ms = 500 }]\n",
        is_hook: false,
        blocks: Blocks::Call,
        only_no_answer: false,
    },
    Guard {
        name: "guardrail on replies",
        config: "effects = [{ kind = \"guardrail\", on = \"reply\", command = CMD, timeout_ms = 500 }]\n",
        is_hook: false,
        blocks: Blocks::Turn,
        only_no_answer: false,
    },
    Guard {
        name: "the output guardrail",
        config: "[run.output_guardrail]\ncommand = CMD\ntimeout_ms = 500\n",
        is_hook: false,
        blocks: Blocks::Turn,
        only_no_answer: false,
    },
    Guard {
        name: "a PreToolUse hook",
        config: "[[hooks.PreToolUse]]\ncommand = CMD\ntimeout_ms = 500\n",
        is_hook: true,
        blocks: Blocks::Call,
        only_no_answer: false,
    },
    Guard {
        name: "a UserPromptSubmit hook",
        config: "[[hooks.UserPromptSubmit]]\ncommand = CMD\ntimeout_ms = 500\n",
        is_hook: true,
        blocks: Blocks::Turn,
        only_no_answer: false,
    },
    Guard {
        name: "a PostToolUse hook",
        config: "[[hooks.PostToolUse]]\ncommand = CMD\ntimeout_ms = 500\n",
        is_hook: true,
        blocks: Blocks::Output,
        only_no_answer: false,
    },
    Guard {
        name: "a Stop hook",
        config: "[[hooks.Stop]]\ncommand = CMD\ntimeout_ms = 500\n",
        is_hook: true,
        blocks: Blocks::Turn,
        only_no_answer: true,
    },
];

/// The model: one call that leaves a file behind, then two answers (the
/// output guardrail asks once more after a rejection).
const SCRIPT: &str = r#"
[[turns]]
text = "touching"
[[turns.tool_calls]]
name = "shell"
arguments = { command = "touch ran.txt" }
[[turns]]
text = "first answer"
[[turns]]
text = "second answer"
"#;

fn program(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_guard_that_cannot_give_its_answer_blocks() {
    let mut checked = 0;
    let mut failed = Vec::new();
    for guard in GUARDS {
        for failure in FAILURES {
            let no_answer = !failure.name.contains("without #!");
            if (failure.hooks_only && !guard.is_hook) || (guard.only_no_answer && !no_answer) {
                continue;
            }
            let what = format!("{} with {}", guard.name, failure.name);
            let env = Env::new();
            let bin = env.dir.path().join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            // Blocks when run the way `sh` runs it (exit 2 blocks every kind).
            program(&bin, "nosheb", "echo 'no, says the guard' >&2\nexit 2\n");
            program(&bin, "badinterp", "#!/nonexistent/interpreter\nexit 0\n");
            let command = failure.command.replace("BIN", &bin.to_string_lossy());
            let config = guard
                .config
                .replace("CMD", &toml::Value::String(command).to_string());
            env.write("home/config.toml", &config);
            let script = env.write("script.toml", SCRIPT);
            let path = format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            );
            let out = env
                .cmd()
                .env("PATH", path)
                .args(["run", "--json", "--no-sandbox", "--script"])
                .arg(&script)
                .arg("go")
                .output()
                .unwrap();
            let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            let ran = env.work().join("ran.txt").exists();
            let code = out.status.code();
            let held = match guard.blocks {
                Blocks::Call => !ran && code == Some(0),
                Blocks::Turn => {
                    let outcome = &events.last().map_or(Value::Null, |e| e["outcome"].clone());
                    code == Some(1) && (outcome == "blocked" || outcome == "invalid_output")
                }
                Blocks::Output => events
                    .iter()
                    .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
                    .is_some_and(|e| {
                        e["item"]["output"]
                            .to_string()
                            .contains("[PostToolUse hook]")
                    }),
            };
            if !held {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let last = events.last().cloned().unwrap_or_default();
                failed.push(format!(
                    "{what}: exit {code:?}, the call ran: {ran}, last event {last}\n{stderr}"
                ));
            }
            checked += 1;
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {checked} guards let things through:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert_eq!(checked, 44);
}
