//! Checkpoints through the real binary: `cogni run --checkpoint` then
//! `cogni undo` in a git repository and in a plain directory (hand edits
//! are conflicts), the REPL's `/undo`, `/rewind` and `/diff` through a
//! pseudo-terminal, and the errors that say what to do.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::pty::Pty;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// `git ARGS` in `dir` as a user runs it (a fixed identity): its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The workspace: `keep.txt` and `gone.txt`, a git repository (committed,
/// with a staged change) when `repository`.
fn workspace(env: &Env, repository: bool) {
    let work = env.work();
    std::fs::write(work.join("keep.txt"), "original\n").unwrap();
    std::fs::write(work.join("gone.txt"), "doomed\n").unwrap();
    if repository {
        git(&work, &["init", "-q"]);
        git(&work, &["add", "."]);
        git(&work, &["commit", "-qm", "start"]);
        std::fs::write(work.join("staged.txt"), "staged\n").unwrap();
        git(&work, &["add", "staged.txt"]);
    }
}

/// A turn that makes `new.txt`, changes `keep.txt` and deletes `gone.txt`.
fn changes_three_files(env: &Env) -> std::path::PathBuf {
    env.script_file(
        "script.toml",
        serde_json::json!([
            {"text": "changing", "tool_calls": [
                {"name": "write_file", "arguments": {"path": "new.txt", "content": "made\n"}},
                {"name": "write_file", "arguments": {"path": "keep.txt", "content": "the model's\n"}},
                {"name": "shell", "arguments": {"command": "rm gone.txt"}}
            ]},
            {"text": "done"}
        ]),
    )
}

fn read(env: &Env, path: &str) -> Option<String> {
    std::fs::read_to_string(env.work().join(path)).ok()
}

fn undo(env: &Env, args: &[&str]) -> std::process::Output {
    env.cmd().arg("undo").args(args).output().unwrap()
}

#[test]
fn a_checkpointed_run_is_undone_hand_edits_settled_in_a_repository_and_a_plain_directory() {
    for repository in [true, false] {
        let env = Env::new();
        workspace(&env, repository);
        let user_git = |env: &Env| {
            repository.then(|| {
                [
                    git(&env.work(), &["rev-parse", "HEAD"]),
                    git(&env.work(), &["for-each-ref", "refs/heads"]),
                    git(&env.work(), &["diff", "--cached", "--name-status"]),
                    git(&env.work(), &["stash", "list"]),
                ]
            })
        };
        let before = user_git(&env);
        let script = changes_three_files(&env);
        let out = env
            .cmd()
            .args(["run", "--checkpoint", "--no-sandbox", "--script"])
            .arg(&script)
            .arg("change things")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("checkpoint: turn 1 changed 3 files"),
            "{}",
            stderr_of(&out)
        );
        assert_eq!(read(&env, "keep.txt").as_deref(), Some("the model's\n"));

        // A dry run shows what would happen and changes nothing.
        let out = undo(&env, &["--dry-run"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        let shown = stdout_of(&out);
        for line in [
            "remove     new.txt",
            "restore    keep.txt",
            "write back gone.txt",
        ] {
            assert!(shown.contains(line), "{line} in {shown}");
        }
        assert!(env.work().join("new.txt").exists());

        // keep.txt edited by hand since: a conflict, nothing restored.
        std::fs::write(env.work().join("keep.txt"), "my fix\n").unwrap();
        let out = undo(&env, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
        assert!(stdout_of(&out).contains("keep.txt  (changed by hand since: conflict)"));
        assert!(
            stderr_of(&out).contains("--keep-mine"),
            "{}",
            stderr_of(&out)
        );
        assert!(env.work().join("new.txt").exists(), "nothing restored");

        let out = undo(&env, &["--keep-mine"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        assert!(!env.work().join("new.txt").exists());
        assert_eq!(read(&env, "gone.txt").as_deref(), Some("doomed\n"));
        assert_eq!(read(&env, "keep.txt").as_deref(), Some("my fix\n"));
        assert_eq!(user_git(&env), before, "HEAD, branches, index, stash");

        let out = undo(&env, &["--force"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        assert_eq!(read(&env, "keep.txt").as_deref(), Some("original\n"));
        let out = undo(&env, &[]);
        assert!(
            stdout_of(&out).contains("nothing to undo"),
            "{}",
            stdout_of(&out)
        );
        assert_eq!(
            env.work().join(".git").exists(),
            repository,
            "a plain directory is not made a repository"
        );
    }
}

#[test]
fn without_checkpoints_undo_says_how_to_get_them() {
    let env = Env::new();
    workspace(&env, false);
    let script = changes_three_files(&env);
    let out = env
        .cmd()
        .args(["run", "--no-sandbox", "--script"])
        .arg(&script)
        .arg("change things")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(!env.dir.path().join("home/checkpoints").exists());
    let out = undo(&env, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("--checkpoint"),
        "{}",
        stderr_of(&out)
    );
    let out = env
        .cmd()
        .args(["run", "--checkpoint", "--no-persist", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let out = undo(&env, &["no-such-session"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The REPL in the workspace, auto mode, replaying `script`.
fn repl(env: &Env, script: &Path) -> Pty {
    let mut cmd = crate::repl::cogni(
        env,
        None,
        &["repl", "--no-sandbox", "--mode", "auto", "--script"],
    );
    cmd.arg(script);
    Pty::spawn(cmd, 120)
}

#[test]
fn the_repl_undoes_and_rewinds_turns_and_asks_about_hand_edits() {
    for repository in [true, false] {
        let env = Env::new();
        workspace(&env, repository);
        let script = env.script_file(
            "script.toml",
            serde_json::json!([
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "one.txt", "content": "1\n"}}]},
                {"text": "wrote one"},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "keep.txt", "content": "two\n"}}]},
                {"text": "wrote two"},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "three.txt", "content": "3\n"}}]},
                {"text": "wrote three"}
            ]),
        );
        let mut pty = repl(&env, &script);
        pty.expect("auto › ", WAIT);
        for (prompt, answer) in [
            ("first task", "wrote one"),
            ("second task", "wrote two"),
            ("third task", "wrote three"),
        ] {
            pty.send(&format!("{prompt}\r"));
            pty.expect(answer, WAIT);
            pty.expect("1 file changed · /undo takes the turn back", WAIT);
            pty.expect("auto › ", WAIT);
        }
        pty.send("/diff\r");
        pty.expect("+two", WAIT);
        pty.expect("auto › ", WAIT);

        // /undo: the third turn's file goes, and the turn with it.
        pty.send("/undo\r");
        pty.expect("remove     three.txt", WAIT);
        pty.expect("removed turn 3", WAIT);
        pty.expect("auto › ", WAIT);
        assert!(!env.work().join("three.txt").exists());
        pty.send("/rewind\r");
        pty.expect("second task", WAIT);
        pty.expect("auto › ", WAIT);
        let screen = pty.screen();
        let listing = &screen[screen.rfind("turns (/rewind").unwrap()..];
        assert!(!listing.contains("third task"), "{listing}");

        // keep.txt edited by hand: /rewind 1 asks; k keeps it.
        std::fs::write(env.work().join("keep.txt"), "by hand\n").unwrap();
        pty.send("/rewind 1\r");
        pty.expect("[o]verwrite", WAIT);
        pty.send("k");
        pty.expect("keep mine", WAIT);
        pty.expect("kept 1 changed by hand", WAIT);
        pty.expect("auto › ", WAIT);
        assert!(!env.work().join("one.txt").exists());
        assert_eq!(read(&env, "keep.txt").as_deref(), Some("by hand\n"));
        pty.send("/undo\r");
        pty.expect("nothing to undo", WAIT);
        pty.send("/exit\r");
        assert_eq!(pty.wait(WAIT).code(), Some(0), "{}", pty.screen());
    }
}
