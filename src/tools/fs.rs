//! Whole-file reads and atomic writes shared by `write_file`, `edit_file`,
//! `apply_patch` and `cogni run -o`, and the [`CommitGate`] that decides
//! whether a tool's change may still land once its turn was stopped.
//!
//! New content goes to a hidden temp file in the target's directory and is
//! renamed over the target, so a reader sees the old file or the new one,
//! never half of either. An existing file keeps its permissions. The path is
//! written as given: a symlink at it is replaced, not followed. The tools
//! resolve their paths through [`super::paths`] first, which is how a symlink
//! inside the workspace gets written through.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Whether file changes of the calls running now may still be made: a
/// turn's stop closes it.
///
/// The file tools do their work on a blocking thread, which goes on when
/// the stopped turn drops the call. So a tool makes its change only after
/// [`CommitGate::admit`] said yes, right before the change (the rename that
/// makes it visible). Once the gate is closed nothing is admitted: a call
/// stopped before that point changes nothing, and "did not finish" is true.
/// A change admitted before the stop is made, and the engine waits for its
/// call and reports what it did ([`CommitGate::close`] tells it to). The
/// engine takes a fresh gate for each group of calls it runs; clones share
/// the state.
#[derive(Debug, Clone, Default)]
pub struct CommitGate(Arc<Mutex<GateState>>);

#[derive(Debug, Default)]
struct GateState {
    closed: bool,
    admitted: bool,
}

impl CommitGate {
    /// May a change be made now? `false` once the gate is closed (then
    /// nothing may be changed). After `true` the change counts as made.
    pub fn admit(&self) -> bool {
        match self.0.lock() {
            Ok(mut state) if !state.closed => {
                state.admitted = true;
                true
            }
            _ => false,
        }
    }

    /// Close the gate: nothing is admitted from now on. Returns whether a
    /// change was admitted before: its call must then be waited for and
    /// reported as it finished.
    pub fn close(&self) -> bool {
        match self.0.lock() {
            Ok(mut state) => {
                state.closed = true;
                state.admitted
            }
            // Poisoned: a tool panicked while asking; nothing was admitted.
            Err(_) => false,
        }
    }
}

/// The error of a change refused by a closed [`CommitGate`].
pub fn stopped_before_commit() -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        "the turn was stopped before the change was made; nothing was changed",
    )
}

/// What [`write_atomic`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Replaced,
}

/// Create or replace the file at `path` with `contents`, atomically.
/// Missing parent directories are created, and removed again when the write
/// fails; a failed write leaves no temp file either. Blocking.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<Written> {
    let permissions = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is a directory",
            ))
        }
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let mut created = Vec::new();
    let written = create_parent_dirs(path, &mut created)
        .and_then(|()| StagedFile::new(path, contents, permissions.as_ref()))
        .and_then(|mut staged| staged.install());
    if let Err(e) = written {
        remove_dirs(&created);
        return Err(e);
    }
    Ok(match permissions {
        Some(_) => Written::Replaced,
        None => Written::Created,
    })
}

/// New contents for a file, written (and synced) to a temp file beside it
/// until [`StagedFile::install`] renames it into place. Dropping a staged
/// file that was not installed removes the temp file.
#[derive(Debug)]
pub(crate) struct StagedFile {
    temp: PathBuf,
    target: PathBuf,
    installed: bool,
}

impl StagedFile {
    /// Stage `contents` for `target`, whose directory must exist. The new
    /// file gets `permissions`, or the default of a new file.
    pub(crate) fn new(
        target: &Path,
        contents: &[u8],
        permissions: Option<&Permissions>,
    ) -> io::Result<Self> {
        let (temp, mut file) = create_temp(target)?;
        let staged = StagedFile {
            temp,
            target: target.to_path_buf(),
            installed: false,
        };
        file.write_all(contents)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions.clone())?;
        }
        file.sync_all()?;
        Ok(staged)
    }

    /// Rename the temp file over the target.
    pub(crate) fn install(&mut self) -> io::Result<()> {
        fs::rename(&self.temp, &self.target)?;
        self.installed = true;
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.installed {
            // Already gone is fine: the goal is that no temp file is left.
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// A unique hidden name beside `path`, for a temp file or a backup
/// (`kind`).
pub(crate) fn hidden_sibling(path: &Path, kind: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}-{n}.cogni-{kind}", std::process::id()))
}

/// Create a new temp file beside `target`; never opens an existing file.
fn create_temp(target: &Path) -> io::Result<(PathBuf, File)> {
    loop {
        let path = hidden_sibling(target, "tmp");
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Create the missing directories above `path`, outermost first, adding
/// each one made to `created` (also when a later one fails) so the caller
/// can remove them again with [`remove_dirs`].
pub(crate) fn create_parent_dirs(path: &Path, created: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() || fs::symlink_metadata(d).is_ok() {
            break;
        }
        missing.push(d.to_path_buf());
        dir = d.parent();
    }
    for d in missing.into_iter().rev() {
        fs::create_dir(&d)?;
        created.push(d);
    }
    Ok(())
}

/// Remove directories made by [`create_parent_dirs`], innermost first;
/// one that is no longer empty stays.
pub(crate) fn remove_dirs(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

/// Why a file could not be read as text to edit.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadTextError {
    #[error("it is a directory")]
    Directory,
    #[error("it is not UTF-8 text")]
    NotUtf8,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The text of the existing file at `path` (symlinks followed) and its
/// permissions, for a tool that rewrites it. Blocking.
pub(crate) fn read_text(path: &Path) -> Result<(String, Permissions), ReadTextError> {
    let meta = fs::metadata(path)?;
    if meta.is_dir() {
        return Err(ReadTextError::Directory);
    }
    let text = String::from_utf8(fs::read(path)?).map_err(|_| ReadTextError::NotUtf8)?;
    Ok((text, meta.permissions()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The names in `dir`, sorted: for checking that no temp file is left.
    pub(crate) fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn creates_parents_then_replaces_keeping_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/run.sh");
        assert_eq!(write_atomic(&path, b"one").unwrap(), Written::Created);
        fs::set_permissions(&path, Permissions::from_mode(0o750)).unwrap();
        assert_eq!(write_atomic(&path, b"two").unwrap(), Written::Replaced);
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o750
        );
        assert_eq!(entries(&dir.path().join("a/b")), ["run.sh"]);
    }

    #[test]
    fn a_symlink_at_the_path_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("real"), "old").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("link")).unwrap();
        write_atomic(&dir.path().join("link"), b"new").unwrap();
        assert_eq!(fs::read(dir.path().join("real")).unwrap(), b"old");
        assert_eq!(fs::read(dir.path().join("link")).unwrap(), b"new");
        assert!(!fs::symlink_metadata(dir.path().join("link"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn failures_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("d")).unwrap();
        let e = write_atomic(&dir.path().join("d"), b"x").unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        fs::write(dir.path().join("f"), "x").unwrap();
        assert!(write_atomic(&dir.path().join("f/child"), b"x").is_err());
        // The directories are made, then the temp file's name is too long.
        let long = dir.path().join("a/b").join("x".repeat(250));
        assert!(write_atomic(&long, b"x").is_err());
        assert_eq!(entries(dir.path()), ["d", "f"]);
    }

    #[test]
    fn dropping_an_uninstalled_stage_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        let staged = StagedFile::new(&target, b"x", None).unwrap();
        assert_eq!(entries(dir.path()).len(), 1);
        drop(staged);
        assert!(entries(dir.path()).is_empty());
        let mut staged = StagedFile::new(&target, b"x", None).unwrap();
        staged.install().unwrap();
        drop(staged);
        assert_eq!(entries(dir.path()), ["t"]);
    }

    #[test]
    fn read_text_refuses_directories_and_binary() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("t"), "é\n").unwrap();
        fs::write(dir.path().join("b"), b"\xff\xfe").unwrap();
        assert_eq!(read_text(&dir.path().join("t")).unwrap().0, "é\n");
        assert!(matches!(
            read_text(&dir.path().join("b")),
            Err(ReadTextError::NotUtf8)
        ));
        assert!(matches!(
            read_text(dir.path()),
            Err(ReadTextError::Directory)
        ));
        assert!(matches!(
            read_text(&dir.path().join("missing")),
            Err(ReadTextError::Io(e)) if e.kind() == io::ErrorKind::NotFound
        ));
    }
}
