//! What a review covers ([`Scope`]) and its change, read with cogni's own
//! git ([`crate::git::Git`]: neutralised, with a timeout): the working
//! tree against HEAD with untracked files, a branch's merge base to HEAD,
//! one commit, or files read whole.

use super::diff::{self, Content, FileDiff, ScopeDiff};
use crate::fs::{read_limited, ReadLimitError};
use crate::git::Git;
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The most of the whole diff read from git; a larger change is refused
/// (review a smaller scope).
const MAX_DIFF_BYTES: usize = 64 * 1024 * 1024;

/// The most of one file read whole (an untracked file, or one of
/// `--files`); a larger one is shown as skipped.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// What a review covers: exactly one of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Staged, unstaged and untracked changes against HEAD (the empty tree
    /// in a repository with no commits).
    Uncommitted,
    /// The merge base of HEAD with this branch (or any revision) to HEAD.
    Base(String),
    /// One commit against its first parent (the empty tree for a root
    /// commit).
    Commit(String),
    /// These files (or the files under these directories) as they are,
    /// whole.
    Files(Vec<String>),
}

impl Scope {
    /// The scope in a few words: `uncommitted changes`, `changes since
    /// main`, ...
    pub fn describe(&self) -> String {
        match self {
            Scope::Uncommitted => "the uncommitted changes (staged, unstaged and untracked)".into(),
            Scope::Base(branch) => format!("the changes from the merge base with {branch} to HEAD"),
            Scope::Commit(rev) => format!("commit {rev}"),
            Scope::Files(paths) => format!("the files {}", paths.join(", ")),
        }
    }
}

/// A scope's change, and where it was read.
#[derive(Debug, Clone)]
pub struct Change {
    /// The files and their hunks.
    pub diff: ScopeDiff,
    /// The directory paths are relative to: the repository's top
    /// directory (the working directory for `--files` outside one).
    pub root: PathBuf,
    /// The commit the change starts from, when it is one.
    pub base: Option<String>,
    /// The commit it ends at (none for changes in the working tree).
    pub head: Option<String>,
}

/// Read the change `scope` covers, for a session working in `cwd`. The
/// error says what is wrong and what to do.
pub async fn read(cwd: &Path, scope: &Scope) -> Result<Change, String> {
    if let Scope::Base(rev) | Scope::Commit(rev) = scope {
        if rev.is_empty() || rev.starts_with('-') {
            return Err(format!(
                "`{rev}` is not a revision: name a branch, tag or commit"
            ));
        }
    }
    let cwd = &cwd
        .canonicalize()
        .map_err(|e| format!("cannot open {}: {e}", cwd.display()))?;
    let here = Git::open(cwd, &[]).await?;
    let top = here
        .run(&["rev-parse", "--show-toplevel"])
        .await
        .ok()
        .map(PathBuf::from);
    let Some(root) = top else {
        return match scope {
            Scope::Files(paths) => Ok(Change {
                diff: ScopeDiff {
                    files: files_whole(None, cwd, cwd, paths).await?,
                },
                root: cwd.to_path_buf(),
                base: None,
                head: None,
            }),
            _ => Err(format!(
                "{} is not in a git repository: a review of {} needs one (--files PATH reviews \
                 files anywhere)",
                cwd.display(),
                scope.describe()
            )),
        };
    };
    let git = here
        .in_dir(&root)
        .with_capture(MAX_DIFF_BYTES)
        .with_config("core.quotePath", "false");
    let head = git
        .run(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .await
        .ok();
    let empty_tree = || async {
        let tree = git
            .run_bytes(&["hash-object", "-t", "tree", "--stdin"], Some(Vec::new()))
            .await?;
        Ok::<_, String>(String::from_utf8_lossy(&tree).trim().to_string())
    };
    let (from, to) = match scope {
        Scope::Files(paths) => {
            let files = files_whole(Some(&git), &root, cwd, paths).await?;
            return Ok(Change {
                diff: ScopeDiff { files },
                root,
                base: None,
                head,
            });
        }
        Scope::Uncommitted => match &head {
            Some(head) => (head.clone(), None),
            None => (empty_tree().await?, None),
        },
        Scope::Base(branch) => {
            let Some(head) = &head else {
                return Err(format!(
                    "the repository at {} has no commits yet: nothing lies between {branch} and \
                     HEAD (review the work in progress with --uncommitted)",
                    root.display()
                ));
            };
            let base = git.run(&["merge-base", branch, head]).await.map_err(|e| {
                format!(
                    "no merge base of {branch} and HEAD: is `{branch}` a branch of this \
                     repository (git fetch it first in a shallow clone)? ({e})"
                )
            })?;
            (base, Some(head.clone()))
        }
        Scope::Commit(rev) => {
            let spec = format!("{rev}^{{commit}}");
            let commit = git
                .run(&["rev-parse", "--verify", "--quiet", &spec])
                .await
                .map_err(|_| format!("`{rev}` is not a commit of this repository"))?;
            let parent_spec = format!("{commit}^");
            let parent = match git
                .run(&["rev-parse", "--verify", "--quiet", &parent_spec])
                .await
            {
                Ok(parent) => parent,
                // A root commit: everything in it is new.
                Err(_) => empty_tree().await?,
            };
            (parent, Some(commit))
        }
    };
    let mut range = vec![from.as_str()];
    range.extend(to.as_deref());
    let mut files = tracked(&git, &range).await?;
    if *scope == Scope::Uncommitted {
        files.extend(untracked(&git, &root).await?);
    }
    Ok(Change {
        diff: ScopeDiff { files },
        root,
        base: Some(from),
        head: to,
    })
}

/// `git diff RANGE`'s files (the working tree when `range` is one tree).
async fn tracked(git: &Git, range: &[&str]) -> Result<Vec<FileDiff>, String> {
    // `--no-relative`: paths from the root, whatever `diff.relative` says.
    let flags = ["diff", "--no-color", "--no-relative", "--find-renames"];
    let with = |more: &[&'static str]| {
        let mut args: Vec<&str> = flags.to_vec();
        args.extend_from_slice(more);
        args.extend_from_slice(range);
        args.push("--");
        args
    };
    // (`--unified` implies `--patch`: only for the patch.)
    let (raw, patch) = (with(&["--raw", "-z"]), with(&["--unified=3"]));
    let (raw, patch) = tokio::try_join!(git.run_bytes(&raw, None), git.run_bytes(&patch, None))?;
    diff::parse(&raw, &patch)
}

/// The untracked files (not ignored), each read whole as new.
async fn untracked(git: &Git, root: &Path) -> Result<Vec<FileDiff>, String> {
    let listed = git
        .run_bytes(&["ls-files", "--others", "--exclude-standard", "-z"], None)
        .await?;
    let paths: Vec<String> = listed
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || {
        paths
            .into_iter()
            .map(|path| {
                let bytes = read_file(&root.join(&path));
                diff::new_file(path, bytes)
            })
            .collect()
    })
    .await
    .map_err(|e| format!("reading the untracked files was interrupted: {e}"))
}

/// The bytes of a file of the scope, or why it has no lines to show: a
/// symlink is not followed, and only a regular file is read, never more
/// than [`MAX_FILE_BYTES`].
fn read_file(path: &Path) -> Result<Vec<u8>, Content> {
    match path.symlink_metadata() {
        Ok(meta) if meta.file_type().is_symlink() => return Err(Content::Symlink),
        Err(e) => return Err(Content::Skipped(format!("cannot read it: {e}"))),
        Ok(_) => {}
    }
    read_limited(path, MAX_FILE_BYTES).map_err(|e| match e {
        ReadLimitError::TooLarge { limit, .. } => {
            Content::Skipped(format!("larger than {limit} bytes"))
        }
        ReadLimitError::NotRegular { kind, .. } => {
            Content::Skipped(format!("{kind}, not a regular file"))
        }
        other => Content::Skipped(other.to_string()),
    })
}

/// `--files PATH...`: each file, or each file under a directory (those
/// git lists, tracked or untracked and not ignored; a directory needs a
/// repository), read whole. Paths are given relative to `cwd` and must
/// lie in `root`.
async fn files_whole(
    git: Option<&Git>,
    root: &Path,
    cwd: &Path,
    given: &[String],
) -> Result<Vec<FileDiff>, String> {
    let mut paths: Vec<String> = Vec::new();
    for path in given {
        let relative = inside(root, cwd, path)?;
        let full = root.join(&relative);
        let meta = full
            .symlink_metadata()
            .map_err(|e| format!("--files {path}: {e}"))?;
        if meta.is_dir() {
            let Some(git) = git else {
                return Err(format!(
                    "--files {path}: a directory is reviewed file by file as git lists them, and \
                     {} is not in a git repository; name the files",
                    cwd.display()
                ));
            };
            let listed = git
                .run_bytes(
                    &[
                        "ls-files",
                        "--cached",
                        "--others",
                        "--exclude-standard",
                        "-z",
                        "--",
                        &relative,
                    ],
                    None,
                )
                .await?;
            let before = paths.len();
            paths.extend(
                listed
                    .split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
            );
            if paths.len() == before {
                return Err(format!("--files {path}: no file in this directory"));
            }
        } else {
            paths.push(relative);
        }
    }
    paths.sort();
    paths.dedup();
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || {
        paths
            .into_iter()
            .filter(|path| root.join(path).symlink_metadata().is_ok())
            .map(|path| {
                let bytes = read_file(&root.join(&path));
                diff::whole_file(path, bytes)
            })
            .collect()
    })
    .await
    .map_err(|e| format!("reading the files was interrupted: {e}"))
}

/// `path` (relative to `cwd`, or absolute) relative to `root`, without
/// `..`; an error when it lies outside.
fn inside(root: &Path, cwd: &Path, path: &str) -> Result<String, String> {
    let full = cwd.join(path);
    let mut clean = PathBuf::new();
    for part in full.components() {
        match part {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    let relative = clean.strip_prefix(root).map_err(|_| {
        format!(
            "--files {path}: outside the repository ({}); review files inside it",
            root.display()
        )
    })?;
    let text = relative.to_string_lossy().into_owned();
    if text.is_empty() {
        Ok(".".into())
    } else {
        Ok(text)
    }
}

// Unix: they make symlinks, FIFOs and modes.
#[cfg(all(test, unix))]
mod tests;
