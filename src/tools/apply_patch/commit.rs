//! All-or-nothing file changes: every new file is first written to a temp
//! file beside its target; then targets are swapped in by rename, the old
//! files kept under a backup name until every rename succeeded. Any failure
//! undoes what was done, so the tree is left exactly as it was.

use crate::tools::editor::Files;
use crate::tools::fs::{create_parent_dirs, hidden_sibling, remove_dirs, StagedFile};
use std::fs::{self, Permissions};
use std::path::PathBuf;

/// One file-level change, with real (resolved) paths.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// Create or replace `path` with `contents`.
    Write {
        path: PathBuf,
        contents: Vec<u8>,
        /// Permissions to give the new file (those of the file it replaces
        /// or moves); `None` for the default of a new file.
        permissions: Option<Permissions>,
        /// The text it replaces (an update), to put back through an
        /// editor when a later write fails; `None` for a new file.
        original: Option<String>,
    },
    Remove {
        path: PathBuf,
    },
}

/// A commit that failed. `restored` is false only when undoing also failed,
/// so the caller must not claim nothing changed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct CommitError {
    pub message: String,
    pub restored: bool,
}

impl CommitError {
    /// The failure `message`, after an undo that could not undo `failed`.
    fn undone(message: String, failed: Vec<String>) -> Self {
        CommitError {
            restored: failed.is_empty(),
            message: if failed.is_empty() {
                message
            } else {
                format!(
                    "{message}; undoing it failed as well: {}",
                    failed.join("; ")
                )
            },
        }
    }
}

/// Apply `changes` in order, or none of them.
pub(crate) fn commit(changes: &[Change]) -> Result<(), CommitError> {
    let mut tx = Transaction::default();
    match tx.run(changes) {
        Ok(()) => {
            tx.finish();
            Ok(())
        }
        Err(message) => Err(CommitError::undone(message, tx.undo())),
    }
}

/// Apply `changes` through `files`: one write after the other through an
/// editor when it takes them all (an editor writes text; it cannot delete
/// or move), undone when one fails; the transaction on disk otherwise.
pub(crate) fn commit_through(files: &Files, changes: &[Change]) -> Result<(), CommitError> {
    let mut writes = Vec::with_capacity(changes.len());
    for change in changes {
        match change {
            Change::Write {
                path,
                contents,
                original,
                ..
            } if files.writes_through_editor() => match std::str::from_utf8(contents) {
                Ok(text) => writes.push((path, text, original)),
                Err(_) => return commit(changes),
            },
            _ => return commit(changes),
        }
    }
    for (i, (path, text, _)) in writes.iter().enumerate() {
        if let Err(e) = files.write_text(path, text) {
            let message = format!("cannot write {}: {e}", path.display());
            let failed: Vec<String> = writes[..i]
                .iter()
                .rev()
                .filter_map(|(path, _, original)| {
                    let undone = match original {
                        Some(text) => files.write_text(path, text).map(drop),
                        None => fs::remove_file(path),
                    };
                    undone
                        .err()
                        .map(|e| format!("restore {}: {e}", path.display()))
                })
                .collect();
            return Err(CommitError::undone(message, failed));
        }
    }
    Ok(())
}

/// What has been done so far, for undo.
#[derive(Default)]
struct Transaction {
    created_dirs: Vec<PathBuf>,
    /// Staged new content per change, by change index (`None` for a
    /// `Remove`). Dropping one that was not installed removes its temp file.
    staged: Vec<Option<StagedFile>>,
    /// Original file -> backup name.
    backups: Vec<(PathBuf, PathBuf)>,
    /// Targets that now hold new content.
    installed: Vec<PathBuf>,
}

impl Transaction {
    fn run(&mut self, changes: &[Change]) -> Result<(), String> {
        for change in changes {
            let staged = match change {
                Change::Write {
                    path,
                    contents,
                    permissions,
                    ..
                } => {
                    create_parent_dirs(path, &mut self.created_dirs).map_err(|e| {
                        let dir = path.parent().unwrap_or(path);
                        format!("cannot create directory {}: {e}", dir.display())
                    })?;
                    let staged = StagedFile::new(path, contents, permissions.as_ref())
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    Some(staged)
                }
                Change::Remove { .. } => None,
            };
            self.staged.push(staged);
        }
        for (change, staged) in changes.iter().zip(self.staged.iter_mut()) {
            let path = match change {
                Change::Write { path, .. } | Change::Remove { path } => path,
            };
            if fs::symlink_metadata(path).is_ok() {
                let backup = hidden_sibling(path, "bak");
                fs::rename(path, &backup)
                    .map_err(|e| format!("cannot move {} aside: {e}", path.display()))?;
                self.backups.push((path.clone(), backup));
            }
            if let Some(staged) = staged {
                staged
                    .install()
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                self.installed.push(path.clone());
            }
        }
        Ok(())
    }

    /// Drop backups after success. A leftover backup is only clutter, so
    /// failures here are ignored.
    fn finish(self) {
        for (_, backup) in self.backups {
            let _ = fs::remove_file(backup);
        }
    }

    /// Put everything back; returns what could not be undone.
    fn undo(self) -> Vec<String> {
        let mut failed = Vec::new();
        for path in self.installed.iter().rev() {
            if let Err(e) = fs::remove_file(path) {
                failed.push(format!("remove {}: {e}", path.display()));
            }
        }
        for (original, backup) in self.backups.iter().rev() {
            if let Err(e) = fs::rename(backup, original) {
                failed.push(format!(
                    "restore {} from {}: {e}",
                    original.display(),
                    backup.display()
                ));
            }
        }
        // Only now: a temp file inside a directory that was moved aside is
        // back where it was staged. Dropping removes what is still staged.
        drop(self.staged);
        remove_dirs(&self.created_dirs);
        failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::Path;

    fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                if path.is_dir() {
                    out.insert(format!("{rel}/"), Vec::new());
                    stack.push(path);
                } else {
                    out.insert(rel, fs::read(&path).unwrap());
                }
            }
        }
        out
    }

    #[test]
    fn writes_replaces_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("old"), "old").unwrap();
        fs::write(root.join("gone"), "gone").unwrap();
        commit(&[
            Change::Write {
                path: root.join("old"),
                contents: b"new".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Write {
                path: root.join("a/b/c.txt"),
                contents: b"c".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Remove {
                path: root.join("gone"),
            },
        ])
        .unwrap();
        let t = tree(root);
        assert_eq!(
            t.keys().collect::<Vec<_>>(),
            vec!["a/", "a/b/", "a/b/c.txt", "old"]
        );
        assert_eq!(t["old"], b"new");
    }

    #[test]
    fn failure_restores_everything() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("keep"), "keep").unwrap();
        fs::write(root.join("gone"), "gone").unwrap();
        fs::write(root.join("file"), "not a dir").unwrap();
        let before = tree(root);
        let e = commit(&[
            Change::Write {
                path: root.join("keep"),
                contents: b"changed".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Write {
                path: root.join("new/dir/x"),
                contents: b"x".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Remove {
                path: root.join("gone"),
            },
            // The parent is a file: staging fails.
            Change::Write {
                path: root.join("file/child"),
                contents: b"x".to_vec(),
                permissions: None,
                original: None,
            },
        ])
        .unwrap_err();
        assert!(e.restored);
        assert!(e.message.contains("file/child"), "{e}");
        assert_eq!(tree(root), before);
    }

    #[test]
    fn failure_during_renames_restores_everything() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("a"), "a").unwrap();
        fs::create_dir(root.join("d")).unwrap();
        fs::write(root.join("d/inner"), "i").unwrap();
        let before = tree(root);
        // Moving `d` aside makes the temp file staged inside it vanish, so
        // the last rename fails after `a` was already swapped in.
        let e = commit(&[
            Change::Write {
                path: root.join("a"),
                contents: b"A".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Remove {
                path: root.join("d"),
            },
            Change::Write {
                path: root.join("d/x"),
                contents: b"x".to_vec(),
                permissions: None,
                original: None,
            },
        ])
        .unwrap_err();
        assert!(e.restored, "{e}");
        assert!(e.message.contains("cannot write"), "{e}");
        assert_eq!(tree(root), before);
    }

    #[cfg(unix)]
    #[test]
    fn permissions_are_applied() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o755)).unwrap();
        let permissions = Some(fs::metadata(&path).unwrap().permissions());
        commit(&[Change::Write {
            path: path.clone(),
            contents: b"new".to_vec(),
            permissions,
            original: None,
        }])
        .unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }
}
