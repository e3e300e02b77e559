//! Whole-file reads and atomic writes shared by `write_file`, `edit_file`,
//! `apply_patch` and `cogni run -o`, and the [`CommitGate`] that decides
//! whether a tool's change may still land once its turn was stopped.
//!
//! A write goes to a [`Target`]: the directory it lands in, held open after
//! a walk that followed no symlink through the kernel ([`walk`]), and a
//! name in it. New content goes to a hidden temp file created in that
//! directory (`O_CREAT | O_EXCL | O_NOFOLLOW`) and is renamed over the name
//! (`renameat`, the same directory), so a reader sees the old file or the
//! new one, never half of either, and nothing between the check of the
//! path and the write can send it elsewhere. An existing file keeps its
//! permissions. The tools find their targets through [`super::paths`];
//! [`write_atomic`] is for paths the user named.

#[cfg_attr(windows, path = "at_windows.rs")]
mod at;
mod entry;
mod limited;
mod walk;

pub(crate) use entry::{Entry, Kind};
pub use limited::{
    open_regular, read_head, read_limited, read_text_limited, Head, ReadLimitError,
    SCRIPT_MAX_BYTES, SPEC_FILE_MAX_BYTES,
};
pub use walk::{walk, walk_dir, FinalLink, Target, WalkError, Walked};

use std::ffi::OsString;
use std::fs::{File, Metadata, Permissions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a directory is called in errors.
const DIRECTORY: &str = "a directory";

/// Files the tools rewrite are read whole, up to this size (a larger one
/// is better changed by a command).
pub const EDIT_MAX_BYTES: u64 = 64 * 1024 * 1024;

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
    /// Nothing was at the path: a new file was created.
    Created,
    /// A file (or symlink) at the path was replaced.
    Replaced,
}

/// Create or replace the file at `path` (a path the user named, relative
/// to the current directory or absolute) with `contents`, atomically; a
/// symlink at `path` is replaced, not followed. See [`write_at`]. Blocking.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<Written> {
    let abs = std::env::current_dir()?.join(path);
    let walked = walk(&[], &abs, FinalLink::Keep).map_err(|e| match e {
        WalkError::Io { source, .. } => source,
        other => io::Error::new(io::ErrorKind::InvalidInput, other.to_string()),
    })?;
    write_at(&walked.target, contents)
}

/// Create or replace the file of `target` with `contents`, atomically.
/// Missing parent directories are created, and removed again when the
/// write fails; a failed write leaves no temp file either. Blocking.
pub fn write_at(target: &Target, contents: &[u8]) -> io::Result<Written> {
    let permissions = existing_permissions(target)?;
    let mut created = Vec::new();
    let written = target
        .make_parents(&mut created)
        .and_then(|entry| StagedFile::new(&entry, contents, permissions.as_ref()))
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

/// The permissions of the file `target` replaces (of the file a symlink
/// there points to), `None` when there is none; an error for a directory.
pub(crate) fn existing_permissions(target: &Target) -> io::Result<Option<Permissions>> {
    let kind = match target.kind()? {
        Kind::Symlink => target
            .entry()
            .map_or(Ok(Kind::Missing), |e| e.followed_kind())?,
        kind => kind,
    };
    match kind {
        Kind::Directory => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory",
        )),
        Kind::File(permissions) => Ok(Some(permissions)),
        Kind::Missing | Kind::Symlink | Kind::Other(_) => Ok(None),
    }
}

/// New contents for a file, written (and synced) to a temp file beside it
/// until [`StagedFile::install`] renames it into place. Dropping a staged
/// file that was not installed removes the temp file.
#[derive(Debug)]
pub(crate) struct StagedFile {
    temp: Entry,
    target: Entry,
    installed: bool,
}

impl StagedFile {
    /// Stage `contents` for `target`. The new file gets `permissions`, or
    /// the default of a new file.
    pub(crate) fn new(
        target: &Entry,
        contents: &[u8],
        permissions: Option<&Permissions>,
    ) -> io::Result<Self> {
        let (temp, mut file) = create_temp(target)?;
        let staged = StagedFile {
            temp,
            target: target.clone(),
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
        self.temp.rename_to(&self.target)?;
        self.installed = true;
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.installed {
            // Already gone is fine: the goal is that no temp file is left.
            let _ = self.temp.unlink();
        }
    }
}

/// A unique hidden name beside `entry`, for a temp file or a backup
/// (`kind`).
pub(crate) fn hidden_sibling(entry: &Entry, kind: &str) -> Entry {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = OsString::from(".");
    name.push(&entry.name);
    name.push(format!(".{}-{n}.cogni-{kind}", std::process::id()));
    entry.sibling(name)
}

/// Create a new temp file beside `target`; never opens an existing file.
fn create_temp(target: &Entry) -> io::Result<(Entry, File)> {
    loop {
        let temp = hidden_sibling(target, "tmp");
        match temp.create_new(0o666) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Remove directories made by [`Target::make_parents`], innermost first;
/// one that is no longer empty stays.
pub(crate) fn remove_dirs(created: &[Entry]) {
    for dir in created.iter().rev() {
        let _ = dir.rmdir();
    }
}

/// Why a file could not be read as text to edit.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadTextError {
    #[error("it is a directory")]
    Directory,
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is not UTF-8 text")]
    NotUtf8,
    #[error("it is larger than {EDIT_MAX_BYTES} bytes; change it with a command")]
    TooLarge,
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl From<ReadLimitError> for ReadTextError {
    fn from(e: ReadLimitError) -> Self {
        match e {
            e if e.is_directory() => ReadTextError::Directory,
            ReadLimitError::NotRegular { kind, .. } => ReadTextError::NotRegular(kind),
            ReadLimitError::NotUtf8 { .. } => ReadTextError::NotUtf8,
            ReadLimitError::TooLarge { .. } => ReadTextError::TooLarge,
            ReadLimitError::Io { source, .. } => ReadTextError::Io(source),
        }
    }
}

/// The existing regular file of `target` (which is not a symlink: the
/// tools resolve those first) opened for reading, with its metadata. Never
/// blocks on a FIFO. Errors name the file `path`. Blocking.
pub(crate) fn open_target(
    target: &Target,
    path: &Path,
) -> Result<(File, Metadata), ReadLimitError> {
    let io_error = |source| ReadLimitError::Io {
        path: path.to_path_buf(),
        source,
    };
    let entry = target
        .entry()
        .ok_or_else(|| io_error(io::Error::from(io::ErrorKind::NotFound)))?;
    let file = entry.open_read().map_err(|e| match at::met_symlink(&e) {
        // A symlink where none is followed: say what is there.
        true => ReadLimitError::NotRegular {
            path: path.to_path_buf(),
            kind: "a symlink",
        },
        false => io_error(e),
    })?;
    limited::regular(file, path)
}

/// The text of the existing regular file of `target` and its
/// permissions, for a tool that rewrites it. Blocking.
pub(crate) fn read_text(target: &Target) -> Result<(String, Permissions), ReadTextError> {
    let path = target.real();
    let (file, meta) = open_target(target, path)?;
    let text = limited::text_of(limited::all_of(file, path, EDIT_MAX_BYTES)?, path)?;
    Ok((text, meta.permissions()))
}

/// All of the existing regular file of `target`, refused when it holds
/// more than `limit` bytes. Errors name the file `shown`. Blocking.
pub(crate) fn read_target(
    target: &Target,
    shown: &Path,
    limit: u64,
) -> Result<Vec<u8>, ReadLimitError> {
    let (file, _) = open_target(target, shown)?;
    limited::all_of(file, shown, limit)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fs;

    #[cfg(target_os = "linux")]
    pub(crate) use super::at::use_openat2;

    /// The target of `path` (absolute), with no roots.
    pub(crate) fn target(path: &Path) -> Target {
        walk(&[], path, FinalLink::Keep).unwrap().target
    }

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
    #[cfg(unix)]
    fn creates_parents_then_replaces_keeping_permissions() {
        use std::os::unix::fs::PermissionsExt;
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
    #[cfg(unix)]
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
        let target = target(&dir.path().join("t")).entry().unwrap();
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
    #[cfg(unix)]
    fn read_text_refuses_directories_and_binary() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("t"), "é\n").unwrap();
        fs::write(dir.path().join("b"), b"\xff\xfe").unwrap();
        let read = |name: &str| read_text(&target(&dir.path().join(name)));
        assert_eq!(read("t").unwrap().0, "é\n");
        assert!(matches!(read("b"), Err(ReadTextError::NotUtf8)));
        fs::create_dir(dir.path().join("d")).unwrap();
        assert!(matches!(read("d"), Err(ReadTextError::Directory)));
        assert!(matches!(
            read("missing"),
            Err(ReadTextError::Io(e)) if e.kind() == io::ErrorKind::NotFound
        ));
        std::os::unix::fs::symlink("t", dir.path().join("l")).unwrap();
        assert!(matches!(read("l"), Err(ReadTextError::NotRegular(_))));
    }
}
