//! All-or-nothing file changes: every new file is first written to a temp
//! file beside its target; then targets are swapped in by rename, the old
//! files kept under a backup name until every rename succeeded. Any failure
//! undoes what was done, so the tree is left exactly as it was.

use crate::editor::Files;
use crate::fs::{hidden_sibling, remove_dirs, Entry, Kind, StagedFile, Target};
use std::fs::Permissions;
use std::io;

/// One file-level change, to a resolved target.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// Create or replace the file of `target` with `contents`.
    Write {
        target: Target,
        contents: Vec<u8>,
        /// Permissions to give the new file (those of the file it replaces
        /// or moves); `None` for the default of a new file.
        permissions: Option<Permissions>,
        /// The text it replaces (an update), to put back through an
        /// editor when a later write fails; `None` for a new file.
        original: Option<String>,
    },
    Remove {
        target: Target,
    },
}

impl Change {
    fn target(&self) -> &Target {
        match self {
            Change::Write { target, .. } | Change::Remove { target } => target,
        }
    }
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
                target,
                contents,
                original,
                ..
            } if files.writes_through_editor() => match std::str::from_utf8(contents) {
                Ok(text) => writes.push((target, text, original)),
                Err(_) => return commit(changes),
            },
            _ => return commit(changes),
        }
    }
    for (i, (target, text, _)) in writes.iter().enumerate() {
        if let Err(e) = files.write_text(target, text) {
            let message = format!("cannot write {}: {e}", target.real().display());
            let failed: Vec<String> = writes[..i]
                .iter()
                .rev()
                .filter_map(|(target, _, original)| {
                    let undone = match original {
                        Some(text) => files.write_text(target, text).map(drop),
                        None => entry(target).and_then(|e| e.unlink()),
                    };
                    undone
                        .err()
                        .map(|e| format!("restore {}: {e}", target.real().display()))
                })
                .collect();
            return Err(CommitError::undone(message, failed));
        }
    }
    Ok(())
}

/// The entry of a target whose directory exists.
fn entry(target: &Target) -> io::Result<Entry> {
    target
        .entry()
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

/// What has been done so far, for undo. Every step is a call relative to
/// a directory held open, so what is undone is what was done.
#[derive(Default)]
struct Transaction {
    created_dirs: Vec<Entry>,
    /// Staged new content per change and the entry it goes to, by change
    /// index (`None` for a `Remove`). Dropping one that was not installed
    /// removes its temp file.
    staged: Vec<Option<(Entry, StagedFile)>>,
    /// Original file, its backup, and its path for messages.
    backups: Vec<(Entry, Entry, String)>,
    /// Files that now hold new content, with their paths for messages.
    installed: Vec<(Entry, String)>,
}

impl Transaction {
    fn run(&mut self, changes: &[Change]) -> Result<(), String> {
        for change in changes {
            let staged = match change {
                Change::Write {
                    target,
                    contents,
                    permissions,
                    ..
                } => {
                    let shown = target.real().display();
                    let entry = target.make_parents(&mut self.created_dirs).map_err(|e| {
                        let dir = target.real().parent().unwrap_or(target.real());
                        format!("cannot create directory {}: {e}", dir.display())
                    })?;
                    let staged = StagedFile::new(&entry, contents, permissions.as_ref())
                        .map_err(|e| format!("cannot write {shown}: {e}"))?;
                    Some((entry, staged))
                }
                Change::Remove { .. } => None,
            };
            self.staged.push(staged);
        }
        for (change, staged) in changes.iter().zip(self.staged.iter_mut()) {
            let shown = change.target().real().display().to_string();
            let entry = match staged {
                Some((entry, _)) => entry.clone(),
                None => {
                    entry(change.target()).map_err(|e| format!("cannot remove {shown}: {e}"))?
                }
            };
            let kind = entry
                .kind()
                .map_err(|e| format!("cannot move {shown} aside: {e}"))?;
            if kind != Kind::Missing {
                let backup = hidden_sibling(&entry, "bak");
                entry
                    .rename_to(&backup)
                    .map_err(|e| format!("cannot move {shown} aside: {e}"))?;
                self.backups.push((entry.clone(), backup, shown.clone()));
            }
            if let Some((_, staged)) = staged {
                staged
                    .install()
                    .map_err(|e| format!("cannot write {shown}: {e}"))?;
                self.installed.push((entry, shown));
            }
        }
        Ok(())
    }

    /// Drop backups after success. A leftover backup is only clutter, so
    /// failures here are ignored.
    fn finish(self) {
        for (_, backup, _) in self.backups {
            let _ = backup.unlink();
        }
    }

    /// Put everything back; returns what could not be undone.
    fn undo(self) -> Vec<String> {
        let mut failed = Vec::new();
        for (entry, shown) in self.installed.iter().rev() {
            if let Err(e) = entry.unlink() {
                failed.push(format!("remove {shown}: {e}"));
            }
        }
        for (original, backup, shown) in self.backups.iter().rev() {
            if let Err(e) = backup.rename_to(original) {
                failed.push(format!("restore {shown} from its backup: {e}"));
            }
        }
        drop(self.staged);
        remove_dirs(&self.created_dirs);
        failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tests::target;
    use std::collections::BTreeMap;
    use std::fs;
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

    #[cfg(unix)]
    #[test]
    fn writes_replaces_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("old"), "old").unwrap();
        fs::write(root.join("gone"), "gone").unwrap();
        commit(&[
            Change::Write {
                target: target(&root.join("old")),
                contents: b"new".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Write {
                target: target(&root.join("a/b/c.txt")),
                contents: b"c".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Remove {
                target: target(&root.join("gone")),
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
                target: target(&root.join("keep")),
                contents: b"changed".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Write {
                target: target(&root.join("new/dir/x")),
                contents: b"x".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Remove {
                target: target(&root.join("gone")),
            },
            // The temp file's name is too long: staging fails.
            Change::Write {
                target: target(&root.join("x".repeat(250))),
                contents: b"x".to_vec(),
                permissions: None,
                original: None,
            },
        ])
        .unwrap_err();
        assert!(e.restored);
        assert!(e.message.contains("cannot write"), "{e}");
        assert_eq!(tree(root), before);
    }

    #[test]
    fn failure_during_renames_restores_everything() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("a"), "a").unwrap();
        // A name so long that its backup name is too long for the file
        // system: moving it aside fails after `a` was already swapped in.
        let long = "x".repeat(240);
        fs::write(root.join(&long), "l").unwrap();
        let before = tree(root);
        let e = commit(&[
            Change::Write {
                target: target(&root.join("a")),
                contents: b"A".to_vec(),
                permissions: None,
                original: None,
            },
            Change::Remove {
                target: target(&root.join(&long)),
            },
        ])
        .unwrap_err();
        assert!(e.restored, "{e}");
        assert!(e.message.contains("cannot move"), "{e}");
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
            target: target(&path.clone()),
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
