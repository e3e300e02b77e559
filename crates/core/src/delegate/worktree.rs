//! `isolation = "worktree"`: a child that writes works in its own git
//! worktree, made from the parent's working tree as it is (uncommitted
//! changes to tracked files included), so parallel writers cannot clobber
//! each other or the parent. Its changes come back as a diff the parent
//! may apply (`git apply FILE`); the worktree is removed.

use cogni_tools::git::{git, worktree_add, worktree_remove};
use std::path::{Path, PathBuf};

pub(crate) struct Worktree {
    /// Where the child works (the same place in the tree as the parent).
    pub(crate) cwd: PathBuf,
    repo: PathBuf,
    root: PathBuf,
    /// The commit the worktree started from.
    base: String,
    /// Holds the worktree's directory; removed with it.
    _dir: tempfile::TempDir,
}

impl Worktree {
    pub(crate) async fn create(cwd: &Path, id: &str) -> Result<Worktree, String> {
        let repo = git(cwd, &["rev-parse", "--show-toplevel"])
            .await
            .map(PathBuf::from)
            .map_err(|e| format!("isolation = \"worktree\" needs a git repository: {e}"))?;
        // The working tree as it is: a commit of the uncommitted changes
        // (`git stash create` leaves the stash list alone), else HEAD.
        let base = match git(cwd, &["stash", "create"]).await? {
            s if s.is_empty() => git(cwd, &["rev-parse", "HEAD"]).await?,
            s => s,
        };
        let dir = tempfile::Builder::new()
            .prefix("cogni-agent-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for the worktree: {e}"))?;
        let root = dir.path().join(id.replace('#', "-"));
        worktree_add(&repo, &root, &base).await?;
        let inside = cwd
            .canonicalize()
            .ok()
            .and_then(|c| {
                let top = repo.canonicalize().ok()?;
                c.strip_prefix(top).ok().map(Path::to_path_buf)
            })
            .unwrap_or_default();
        Ok(Worktree {
            cwd: root.join(inside),
            repo,
            root,
            base,
            _dir: dir,
        })
    }

    /// The child's changes since the start, as a git diff (binary files
    /// included), and the file that holds it; `None` when it changed
    /// nothing. The worktree is removed either way.
    pub(crate) async fn finish(self) -> Result<(Option<String>, Option<String>), String> {
        let taken = self.diff().await;
        let removed = self.remove_inner().await;
        let out = taken?;
        removed?;
        Ok(out)
    }

    async fn diff(&self) -> Result<(Option<String>, Option<String>), String> {
        git(&self.root, &["add", "-A"]).await?;
        let file = tempfile::Builder::new()
            .prefix("cogni-agent-")
            .suffix(".diff")
            .tempfile()
            .map_err(|e| format!("cannot make the diff's file: {e}"))?;
        let output = format!("--output={}", file.path().display());
        git(
            &self.root,
            &["diff", "--cached", "--binary", &output, &self.base],
        )
        .await?;
        let text = std::fs::read_to_string(file.path()).unwrap_or_default();
        if text.trim().is_empty() {
            return Ok((None, None));
        }
        let (_, path) = file
            .keep()
            .map_err(|e| format!("cannot keep the diff's file: {e}"))?;
        Ok((Some(text), Some(path.display().to_string())))
    }

    async fn remove_inner(&self) -> Result<(), String> {
        worktree_remove(&self.repo, &self.root).await
    }

    /// Remove it without taking the diff.
    pub(crate) async fn remove(self) {
        if let Err(e) = self.remove_inner().await {
            tracing::warn!(error = %e, "could not remove a delegated agent's worktree");
        }
    }
}
