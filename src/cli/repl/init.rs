//! `/init`: an AGENTS.md for the repository. The model studies it in a
//! turn of its own (with its usual tools and policies) and answers with
//! the file's text; the REPL writes that text to `AGENTS.md` of the
//! working directory, and nowhere else. The model cannot write the file
//! itself: AGENTS.md is a protected name for its tools (it steers every
//! later session), so the write is the user's, asked for by `/init`.

use super::commands::Flow;
use super::Repl;
use crate::cli::render::strip_terminal_controls;
use crate::protocol::TurnOutcome;
use std::path::Path;

/// The file `/init` writes, in the working directory.
const FILE: &str = "AGENTS.md";

/// The most text `/init` writes; a longer answer is refused.
const MAX_BYTES: usize = 64 * 1024;

/// The message of `/init`'s turn.
pub const PROMPT: &str = "Study this repository and write an AGENTS.md for it: the file coding \
agents read first when they work here. Look around with your tools first (the README, the build \
and package files, CI configuration, the source layout, a few source and test files) and do not \
change any file. Then answer with the complete text of AGENTS.md and nothing else: no preamble, no \
closing remarks, no code fence around it, because your answer is written to ./AGENTS.md as it is. \
Keep it short and specific to this repository (a page or two of Markdown): the exact commands to \
build, test, lint and run it; the layout (what lives where); the conventions the code and its \
configuration actually follow (style, naming, errors, tests, commits); anything surprising a \
newcomer must know. Write only what you found evidence for.";

/// `/init [--force]`.
pub async fn init(r: &mut Repl, args: &str) -> Flow {
    let force = match args {
        "" => false,
        "--force" => true,
        _ => {
            r.sink.error("usage: /init [--force]");
            return Flow::Continue;
        }
    };
    let dir = r.session.context().cwd.clone();
    if let Err(e) = refuse_existing(&dir, force) {
        r.sink.error(&e);
        return Flow::Continue;
    }
    let Some(turn) = r.turn(PROMPT.to_string()).await else {
        r.sink.error("AGENTS.md was not written: the turn failed");
        return Flow::Continue;
    };
    if turn.outcome != TurnOutcome::Done {
        r.sink
            .error("AGENTS.md was not written: the model did not finish its answer");
        return Flow::Continue;
    }
    let written = document(&turn.final_text).and_then(|text| {
        // Again: a command of the turn may have made one meanwhile.
        refuse_existing(&dir, force)?;
        crate::tools::fs::write_atomic(&dir.join(FILE), text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", dir.join(FILE).display()))?;
        Ok(text.lines().count())
    });
    match written {
        Ok(lines) => r.sink.note(&format!(
            "wrote {FILE} ({lines} line{}); sessions here read it from now on",
            if lines == 1 { "" } else { "s" }
        )),
        Err(e) => r.sink.error(&format!("AGENTS.md was not written: {e}")),
    }
    Flow::Continue
}

/// An error when `dir` has an AGENTS.md (of any kind, a symlink too) and
/// `force` was not given.
fn refuse_existing(dir: &Path, force: bool) -> Result<(), String> {
    let path = dir.join(FILE);
    if !force && path.symlink_metadata().is_ok() {
        return Err(format!("{FILE} exists already; /init --force replaces it"));
    }
    Ok(())
}

/// The file's text from the model's answer: without terminal controls,
/// without a code fence around the whole of it, ending with a newline.
fn document(answer: &str) -> Result<String, String> {
    let clean = strip_terminal_controls(answer);
    let mut text = clean.trim();
    if let Some(inner) = text.strip_prefix("```").and_then(|t| t.strip_suffix("```")) {
        // The fence's own line (```markdown) goes with it.
        text = inner.split_once('\n').map_or("", |(_, body)| body).trim();
    }
    if text.is_empty() {
        return Err("the answer was empty".into());
    }
    if text.len() > MAX_BYTES {
        return Err(format!(
            "the answer is {} bytes, more than the {MAX_BYTES} an AGENTS.md may have here",
            text.len()
        ));
    }
    Ok(format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_becomes_the_file() {
        assert_eq!(
            document("# Guide\n\nRun `make`.").unwrap(),
            "# Guide\n\nRun `make`.\n"
        );
        assert_eq!(
            document("```markdown\n# Guide\n```\n").unwrap(),
            "# Guide\n",
            "a fence around the whole answer goes"
        );
        assert_eq!(
            document("a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\n").unwrap(),
            "ab\n"
        );
        assert!(document("  \n").is_err());
        assert!(document(&"x".repeat(MAX_BYTES + 1)).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn an_existing_file_or_link_is_kept_without_force() {
        let dir = tempfile::tempdir().unwrap();
        assert!(refuse_existing(dir.path(), false).is_ok());
        std::os::unix::fs::symlink("/nonexistent", dir.path().join(FILE)).unwrap();
        let e = refuse_existing(dir.path(), false).unwrap_err();
        assert!(e.contains("--force"), "{e}");
        assert!(refuse_existing(dir.path(), true).is_ok());
    }
}
