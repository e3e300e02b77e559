//! git for cogni's own use (task workspaces, delegated agents' worktrees),
//! through [`crate::tools::exec`]: own process group, a timeout that kills
//! it, bounded capture; never sandboxed (it is not the agent's command).

use crate::tools::exec::{self, CapturedStream, ExecRequest, DEFAULT_IO_DRAIN, DEFAULT_KILL_GRACE};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// How long git may take for the small queries cogni makes.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of each stream kept in memory while git runs.
const CAPTURE_BYTES: usize = 256 * 1024;

/// Git does not like several worktrees of one repository being added or
/// removed at the same moment; callers take turns.
static WORKTREE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `git worktree add --detach DEST REV` in `repo`.
pub async fn worktree_add(
    repo: &Path,
    dest: &Path,
    rev: &str,
    env: &BTreeMap<String, String>,
) -> Result<(), String> {
    let dest_arg = dest.to_string_lossy();
    let _turn = WORKTREE_LOCK.lock().await;
    git(
        repo,
        &["worktree", "add", "--detach", "--quiet", &dest_arg, rev],
        env,
    )
    .await
    .map(|_| ())
}

/// Remove the worktree at `root` of `repo` (its directory, if git cannot).
pub async fn worktree_remove(
    repo: &Path,
    root: &Path,
    env: &BTreeMap<String, String>,
) -> Result<(), String> {
    let root_arg = root.to_string_lossy().into_owned();
    let _turn = WORKTREE_LOCK.lock().await;
    if git(repo, &["worktree", "remove", "--force", &root_arg], env)
        .await
        .is_err()
    {
        remove_dir(root.to_path_buf()).await?;
        git(repo, &["worktree", "prune"], env).await?;
    }
    Ok(())
}

/// Remove `dir` and everything in it, off the async threads; a directory
/// that is already gone is fine.
pub async fn remove_dir(dir: std::path::PathBuf) -> Result<(), String> {
    let shown = dir.display().to_string();
    tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("cannot remove {shown}: {e}"))
}

/// `git ARGS` in `dir`; its trimmed stdout, or what went wrong.
pub async fn git(
    dir: &Path,
    args: &[&str],
    env: &BTreeMap<String, String>,
) -> Result<String, String> {
    let mut argv = vec!["git".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let request = ExecRequest {
        argv,
        cwd: dir.to_path_buf(),
        env: env.clone(),
        timeout: GIT_TIMEOUT,
        capture_limit_bytes: CAPTURE_BYTES,
        kill_grace: DEFAULT_KILL_GRACE,
        io_drain: DEFAULT_IO_DRAIN,
        // The task file's own commands, like any CI step: not the agent's.
        sandbox: None,
        stdin: None,
    };
    let out = exec::run(request)
        .await
        .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
    if out.termination.success() && !out.timed_out {
        Ok(lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            tail(lossy(&out.stderr).trim(), 500)
        ))
    }
}

/// A captured stream as text, with a marker where the middle was dropped.
pub fn lossy(stream: &CapturedStream) -> String {
    let mut text = String::from_utf8_lossy(&stream.head).into_owned();
    if stream.gap.bytes > 0 {
        text.push_str(&format!("\n[... {} bytes omitted ...]\n", stream.gap.bytes));
    }
    text.push_str(&String::from_utf8_lossy(&stream.tail));
    text
}

/// The last `max` bytes of `text`, cut on a character boundary.
pub fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[...]{}", &text[start..])
}
