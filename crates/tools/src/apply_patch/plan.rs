//! Check a parsed patch against the file system and apply it atomically.
//!
//! Order of work: refuse by sandbox policy (every path, before reading
//! anything), then read and transform every file in memory, then commit all
//! changes at once. Any error before the commit leaves the disk untouched;
//! the commit itself undoes partial work.

use super::apply::{update_text, HunkError};
use super::commit::{commit_through, Change};
use super::parser::{parse_patch, FileOp, ParseError};
use super::seek::Fuzz;
use crate::diff;
use crate::editor::Files;
use crate::fs::{CommitGate, Kind, ReadTextError, Target};
use crate::paths::{FinalLink, PathError, WriteAccess};
use cogni_protocol::SandboxPolicy;
use cogni_sandbox::Workspace;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a patch was not applied. `Display` is the message for the model.
#[derive(Debug, thiserror::Error)]
pub enum ApplyPatchError {
    /// The patch text is not a valid patch.
    #[error("{0}")]
    Parse(#[from] ParseError),
    /// A path is outside what the sandbox policy lets the tool write (or
    /// cannot be resolved).
    #[error("{0}")]
    Access(#[from] PathError),
    /// A hunk does not match the file.
    #[error("{0}")]
    Hunk(#[from] HunkError),
    /// A file is missing, exists already, is a directory, is not UTF-8...
    #[error("{0}")]
    File(String),
    /// Writing failed; `restored` says whether every file was put back.
    #[error("{message}")]
    Commit {
        /// What failed, for the model.
        message: String,
        /// True when every file was put back as it was.
        restored: bool,
    },
    /// The turn was stopped before the change was made.
    #[error("the turn was stopped before the patch was applied")]
    Stopped,
}

impl ApplyPatchError {
    /// True when the disk is exactly as before the call.
    pub fn nothing_changed(&self) -> bool {
        match self {
            ApplyPatchError::Commit { restored, .. } => *restored,
            _ => true,
        }
    }
}

/// What one file operation did, with paths as the patch named them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// The file was created (`A`).
    Added(PathBuf),
    /// The file was removed (`D`).
    Deleted(PathBuf),
    /// The file was changed in place (`M`).
    Modified {
        /// The file.
        path: PathBuf,
        /// (1-based hunk, level) for hunks that needed fuzz.
        fuzz: Vec<(usize, Fuzz)>,
    },
    /// The file was updated and moved (`R`).
    Moved {
        /// Where it was.
        from: PathBuf,
        /// Where it is now.
        to: PathBuf,
        /// (1-based hunk, level) for hunks that needed fuzz.
        fuzz: Vec<(usize, Fuzz)>,
    },
}

/// The summary of an applied patch: one `A/M/D/R` line per file, then a
/// note for every hunk that needed fuzzy matching (its `Display`, for the
/// model), and the unified diff of every file, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchReport {
    /// One outcome per file operation, in patch order.
    pub files: Vec<FileOutcome>,
    /// The unified diff of the files, in patch order (`None` when none
    /// could be made: a deleted file that was not text).
    pub diff: Option<String>,
}

impl fmt::Display for PatchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut notes = Vec::new();
        for (i, outcome) in self.files.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match outcome {
                FileOutcome::Added(p) => write!(f, "A {}", p.display())?,
                FileOutcome::Deleted(p) => write!(f, "D {}", p.display())?,
                FileOutcome::Modified { path, fuzz } => {
                    write!(f, "M {}", path.display())?;
                    notes.extend(fuzz.iter().map(|z| (path, *z)));
                }
                FileOutcome::Moved { from, to, fuzz } => {
                    write!(f, "R {} -> {}", from.display(), to.display())?;
                    notes.extend(fuzz.iter().map(|z| (from, *z)));
                }
            }
        }
        for (path, (hunk, level)) in notes {
            write!(
                f,
                "\nnote: {} hunk {hunk} matched {}",
                path.display(),
                level.describe()
            )?;
        }
        Ok(())
    }
}

/// Parse `patch` and apply it under `cwd` on disk, all or nothing,
/// committed through `commits`, in a workspace of its own (pinned now).
/// Blocking: call it from `spawn_blocking` in async code.
pub fn apply_patch_in(
    cwd: &Path,
    policy: &SandboxPolicy,
    commits: &CommitGate,
    patch: &str,
) -> Result<PatchReport, ApplyPatchError> {
    let workspace = Arc::new(Workspace::pin(cwd, &policy.writable_roots));
    let access = WriteAccess::new(cwd, policy, &workspace)?;
    apply_patch_through(&Files::default(), &access, commits, patch)
}

/// [`apply_patch_in`] with `access`, reading and writing text through
/// `files` (see [`commit_through`] for what an editor takes).
pub(crate) fn apply_patch_through(
    files: &Files,
    access: &WriteAccess,
    commits: &CommitGate,
    patch: &str,
) -> Result<PatchReport, ApplyPatchError> {
    let patch = parse_patch(patch)?;
    let targets = resolve_all(&patch.ops, access)?;
    let mut changes = Vec::new();
    let mut report = Vec::new();
    let mut diffs = Vec::new();
    for (op, target) in patch.ops.iter().zip(&targets) {
        let (outcome, diff) = plan_op(files, op, target, &mut changes)?;
        report.push(outcome);
        diffs.push(diff);
    }
    if !commits.admit() {
        return Err(ApplyPatchError::Stopped);
    }
    commit_through(files, &changes).map_err(|e| ApplyPatchError::Commit {
        message: e.message,
        restored: e.restored,
    })?;
    Ok(PatchReport {
        files: report,
        diff: diff::join(diffs),
    })
}

/// The targets of one operation.
struct Targets {
    /// The file as named (a symlink stays a symlink): what is created,
    /// deleted, or removed by a move.
    named: Target,
    /// What is read and rewritten by an update (the symlink's target).
    content: Target,
    move_to: Option<Target>,
}

/// Resolve and sandbox-check every path before any file is read, and refuse
/// two operations on one real file.
fn resolve_all(ops: &[FileOp], access: &WriteAccess) -> Result<Vec<Targets>, ApplyPatchError> {
    let mut targets = Vec::with_capacity(ops.len());
    let mut seen: Vec<(PathBuf, &Path)> = Vec::new();
    for op in ops {
        let named = access.resolve(op.path(), FinalLink::Keep)?;
        let (content, move_to) = match op {
            FileOp::Update { path, move_to, .. } => (
                access.resolve(path, FinalLink::Follow)?,
                move_to
                    .as_deref()
                    .map(|dest| access.resolve(dest, FinalLink::Keep))
                    .transpose()?,
            ),
            _ => (named.clone(), None),
        };
        let mut touched = vec![(content.clone(), op.path())];
        if let (
            Some(dest),
            FileOp::Update {
                move_to: Some(shown),
                ..
            },
        ) = (&move_to, op)
        {
            touched.push((dest.clone(), shown.as_path()));
        }
        for (target, shown) in touched {
            let real = target.real().to_path_buf();
            if let Some((_, other)) = seen.iter().find(|(r, _)| *r == real) {
                return Err(ApplyPatchError::File(format!(
                    "`{}` and `{}` are the same file; change it in one section",
                    other.display(),
                    shown.display()
                )));
            }
            seen.push((real, shown));
        }
        targets.push(Targets {
            named,
            content,
            move_to,
        });
    }
    Ok(targets)
}

/// Check one operation against the disk and add its changes; returns
/// what it does and its diff.
fn plan_op(
    files: &Files,
    op: &FileOp,
    target: &Targets,
    changes: &mut Vec<Change>,
) -> Result<(FileOutcome, Option<String>), ApplyPatchError> {
    match op {
        FileOp::Add { path, contents } => {
            if target.named.kind().map_err(|e| missing("add", path, &e))? != Kind::Missing {
                return Err(file_error(format!(
                    "cannot add `{}`: it already exists. Use `*** Update File:` to change it (Add never overwrites).",
                    path.display()
                )));
            }
            changes.push(Change::Write {
                target: target.named.clone(),
                contents: contents.clone().into_bytes(),
                permissions: None,
                original: None,
            });
            let shown = path.display().to_string();
            let diff = diff::unified(None, Some((&shown, contents)));
            Ok((FileOutcome::Added(path.clone()), diff))
        }
        FileOp::Delete { path } => {
            match target.named.kind() {
                Ok(Kind::Directory) => {
                    return Err(file_error(format!(
                        "cannot delete `{}`: it is a directory; only files can be deleted",
                        path.display()
                    )))
                }
                Ok(Kind::Missing) => {
                    let e = io::Error::from_raw_os_error(libc::ENOENT);
                    return Err(missing("delete", path, &e));
                }
                Ok(_) => {}
                Err(e) => return Err(missing("delete", path, &e)),
            }
            changes.push(Change::Remove {
                target: target.named.clone(),
            });
            let shown = path.display().to_string();
            let diff = files
                .read_text(&target.named)
                .ok()
                .and_then(|(old, _)| diff::unified(Some((&shown, &old)), None));
            Ok((FileOutcome::Deleted(path.clone()), diff))
        }
        FileOp::Update {
            path,
            move_to,
            hunks,
        } => {
            let (original, permissions) =
                files.read_text(&target.content).map_err(|e| match e {
                    ReadTextError::Io(e) => missing("update", path, &e),
                    other => file_error(format!("cannot update `{}`: {other}", path.display())),
                })?;
            let updated = update_text(&path.display().to_string(), &original, hunks)?;
            let write_to = match (&target.move_to, move_to) {
                (Some(dest), Some(shown)) => {
                    if dest.kind().map_err(|e| missing("move", path, &e))? != Kind::Missing {
                        return Err(file_error(format!(
                            "cannot move `{}` to `{}`: the destination already exists",
                            path.display(),
                            shown.display()
                        )));
                    }
                    dest.clone()
                }
                _ => target.content.clone(),
            };
            let (from, to) = (
                path.display().to_string(),
                move_to.as_deref().unwrap_or(path).display().to_string(),
            );
            let diff = diff::unified(Some((&from, &original)), Some((&to, &updated.text)));
            changes.push(Change::Write {
                target: write_to,
                contents: updated.text.into_bytes(),
                permissions: Some(permissions),
                original: Some(original),
            });
            let outcome = match move_to {
                Some(to) => {
                    changes.push(Change::Remove {
                        target: target.named.clone(),
                    });
                    FileOutcome::Moved {
                        from: path.clone(),
                        to: to.clone(),
                        fuzz: updated.fuzz,
                    }
                }
                None => FileOutcome::Modified {
                    path: path.clone(),
                    fuzz: updated.fuzz,
                },
            };
            Ok((outcome, diff))
        }
    }
}

fn file_error(message: String) -> ApplyPatchError {
    ApplyPatchError::File(message)
}

fn missing(action: &str, path: &Path, e: &io::Error) -> ApplyPatchError {
    let hint = match (action, e.kind()) {
        ("update", io::ErrorKind::NotFound) => {
            ": the file does not exist (use `*** Add File:` to create it)".to_string()
        }
        (_, io::ErrorKind::NotFound) => ": the file does not exist".to_string(),
        _ => format!(": {e}"),
    };
    file_error(format!("cannot {action} `{}`{hint}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tests::entries;
    use std::fs;

    fn apply(dir: &Path, body: &str) -> Result<PatchReport, ApplyPatchError> {
        let patch = format!("*** Begin Patch\n{body}*** End Patch\n");
        apply_patch_in(
            dir,
            &SandboxPolicy::default(),
            &CommitGate::default(),
            &patch,
        )
    }

    #[cfg(unix)]
    #[test]
    fn an_editor_gets_updates_and_additions_and_the_disk_the_rest() {
        use crate::editor::tests::Buffers;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(root.join("m"), "saved\n").unwrap();
        let buffers = std::sync::Arc::new(Buffers::default());
        buffers
            .open
            .lock()
            .unwrap()
            .insert(root.join("m"), "unsaved\n".into());
        let files = Files::through(buffers.clone());
        let policy = SandboxPolicy::default();
        let patch = "*** Begin Patch\n*** Update File: m\n@@\n-unsaved\n+edited\n*** Add File: n\n+new\n*** End Patch\n";
        let workspace = Arc::new(Workspace::pin(&root, &[]));
        let access = WriteAccess::new(&root, &policy, &workspace).unwrap();
        apply_patch_through(&files, &access, &CommitGate::default(), patch).unwrap();
        let open = buffers.open.lock().unwrap().clone();
        assert_eq!(open[&root.join("m")], "edited\n", "the buffer was patched");
        assert_eq!(open[&root.join("n")], "new\n");
        assert_eq!(fs::read_to_string(root.join("m")).unwrap(), "saved\n");
        // A deletion cannot go through the editor: the patch goes to disk.
        let patch = "*** Begin Patch\n*** Delete File: m\n*** End Patch\n";
        let workspace = Arc::new(Workspace::pin(&root, &[]));
        let access = WriteAccess::new(&root, &policy, &workspace).unwrap();
        apply_patch_through(&files, &access, &CommitGate::default(), patch).unwrap();
        assert!(!root.join("m").exists());
    }

    #[test]
    fn a_stopped_turn_applies_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("m"), "a\n").unwrap();
        let gate = CommitGate::default();
        gate.close();
        let patch = "*** Begin Patch\n*** Add File: new\n+x\n*** Update File: m\n@@\n-a\n+b\n*** End Patch\n";
        let e = apply_patch_in(dir.path(), &SandboxPolicy::default(), &gate, patch).unwrap_err();
        assert!(matches!(e, ApplyPatchError::Stopped), "{e}");
        assert!(e.nothing_changed());
        assert_eq!(entries(dir.path()), ["m"]);
        assert_eq!(fs::read_to_string(dir.path().join("m")).unwrap(), "a\n");
    }

    #[cfg(unix)]
    #[test]
    fn two_names_for_one_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        fs::write(dir.path().join("real/f.txt"), "a\n").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        let e = apply(
            dir.path(),
            "*** Update File: real/f.txt\n@@\n-a\n+b\n*** Update File: alias/f.txt\n@@\n-a\n+c\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("are the same file"), "{e}");
        assert_eq!(
            fs::read_to_string(dir.path().join("real/f.txt")).unwrap(),
            "a\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn updates_write_through_symlinks_and_keep_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        fs::write(&script, "echo a\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o750)).unwrap();
        std::os::unix::fs::symlink("run.sh", dir.path().join("link.sh")).unwrap();
        let report = apply(
            dir.path(),
            "*** Update File: link.sh\n@@\n-echo a\n+echo b\n",
        )
        .unwrap();
        assert_eq!(report.to_string(), "M link.sh");
        assert_eq!(fs::read_to_string(&script).unwrap(), "echo b\n");
        assert!(fs::symlink_metadata(dir.path().join("link.sh"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o750
        );
    }

    #[test]
    fn leaves_no_temp_or_backup_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        fs::write(dir.path().join("b.txt"), "b\n").unwrap();
        apply(
            dir.path(),
            "*** Update File: a.txt\n*** Move to: c.txt\n@@\n-a\n+A\n*** Delete File: b.txt\n*** Add File: d.txt\n+d\n",
        )
        .unwrap();
        assert_eq!(entries(dir.path()), vec!["c.txt", "d.txt"]);
    }
}
