//! The interface of `at.rs` on Windows, which has no `openat`: each
//! directory a walk reaches is opened (not following a reparse point: a
//! symlink or junction is refused as one) and held without delete sharing
//! while the walk uses it, so it can be neither renamed nor removed
//! meanwhile, and names in it are then used by path. What is checked is
//! what is used, as on Unix; the difference is that a name's own entry
//! (not its directory) could be swapped between a check and a use, which
//! on Windows only an unconfined command (there is no sandbox there) could
//! do.

use super::entry::{Entry, Kind};
use cogni_sandbox::Root;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use windows_sys::Win32::Storage::FileSystem as wfs;

/// A directory held open, with its path.
#[derive(Debug)]
pub(crate) struct Held {
    path: PathBuf,
    _handle: File,
}

/// A directory held open, shared by the entries in it.
pub(crate) type Dir = Arc<Held>;

/// Why an entry was refused: a reparse point (symlink, junction) where
/// none is followed.
#[derive(Debug, thiserror::Error)]
#[error("it is a symlink")]
struct MetSymlink;

fn met_symlink_error() -> io::Error {
    io::Error::new(io::ErrorKind::NotADirectory, MetSymlink)
}

/// Whether `e` is the error of opening a symlink where none is followed.
pub(crate) fn met_symlink(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<MetSymlink>())
}

/// The error of a walk that met too many symlinks.
pub(crate) fn too_many_links() -> io::Error {
    io::Error::other("too many levels of symbolic links")
}

/// Open the directory at `path` itself (a reparse point is opened as
/// such, then refused) and hold it.
fn hold(path: PathBuf) -> io::Result<Held> {
    let handle = OpenOptions::new()
        .access_mode(0)
        .share_mode(wfs::FILE_SHARE_READ | wfs::FILE_SHARE_WRITE)
        .custom_flags(wfs::FILE_FLAG_BACKUP_SEMANTICS | wfs::FILE_FLAG_OPEN_REPARSE_POINT)
        .open(&path)?;
    let file_type = handle.metadata()?.file_type();
    if file_type.is_symlink() {
        return Err(met_symlink_error());
    }
    if !file_type.is_dir() {
        return Err(io::Error::from(io::ErrorKind::NotADirectory));
    }
    Ok(Held {
        path,
        _handle: handle,
    })
}

/// The drive or share root of `abs`, held, and its path: where a walk of
/// `abs` starts outside every root.
pub(crate) fn root_dir(abs: &Path) -> io::Result<(Dir, PathBuf)> {
    let root: PathBuf = abs
        .components()
        .take_while(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
        .collect();
    if root.as_os_str().is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not an absolute path",
        ));
    }
    Ok((Arc::new(hold(root.clone())?), root))
}

/// The pinned directory of `root`, held anew.
pub(crate) fn dup(root: &Root) -> io::Result<Dir> {
    hold(root.real.clone()).map(Arc::new)
}

/// Never on Windows: every walk goes name by name.
pub(crate) fn open_beneath(_dir: &Held, _rel: &Path) -> Option<Held> {
    None
}

/// What `file_type` is, in words (for errors).
pub(crate) fn type_name(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        super::DIRECTORY
    } else if file_type.is_symlink() {
        "a symlink"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

fn kind_of(meta: io::Result<std::fs::Metadata>) -> io::Result<Kind> {
    let meta = match meta {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Kind::Missing),
        Err(e) => return Err(e),
    };
    let file_type = meta.file_type();
    Ok(if file_type.is_symlink() {
        Kind::Symlink
    } else if file_type.is_dir() {
        Kind::Directory
    } else if file_type.is_file() {
        Kind::File(meta.permissions())
    } else {
        Kind::Other(type_name(file_type))
    })
}

/// Open the file at `path` (symlinks followed) for reading; a directory
/// opens too, so that the caller can say what it is.
pub(crate) fn open_path(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(wfs::FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)
}

impl Entry {
    fn path(&self) -> PathBuf {
        self.dir.path.join(&self.name)
    }

    /// What is there, not following a symlink.
    pub(crate) fn kind(&self) -> io::Result<Kind> {
        kind_of(std::fs::symlink_metadata(self.path()))
    }

    /// What a symlink here points to, followed.
    pub(crate) fn followed_kind(&self) -> io::Result<Kind> {
        kind_of(std::fs::metadata(self.path()))
    }

    /// The directory here, held, not following a symlink.
    pub(crate) fn open_dir(&self) -> io::Result<Held> {
        hold(self.path())
    }

    /// The target of the symlink here.
    pub(crate) fn read_link(&self) -> io::Result<PathBuf> {
        std::fs::read_link(self.path())
    }

    /// Open the file here for reading, not following a symlink.
    pub(crate) fn open_read(&self) -> io::Result<File> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(wfs::FILE_FLAG_BACKUP_SEMANTICS | wfs::FILE_FLAG_OPEN_REPARSE_POINT)
            .open(self.path())?;
        if file.metadata()?.file_type().is_symlink() {
            return Err(met_symlink_error());
        }
        Ok(file)
    }

    /// Create a new file here (never opens an existing one, nor a
    /// symlink), writable. Windows has no mode bits: `_mode` is unused.
    pub(crate) fn create_new(&self, _mode: u32) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.path())
    }

    /// Create the directory here.
    pub(crate) fn mkdir(&self) -> io::Result<()> {
        std::fs::create_dir(self.path())
    }

    /// Remove the (empty) directory here.
    pub(crate) fn rmdir(&self) -> io::Result<()> {
        std::fs::remove_dir(self.path())
    }

    /// Remove the file or symlink here.
    pub(crate) fn unlink(&self) -> io::Result<()> {
        std::fs::remove_file(self.path())
    }

    /// Rename this entry to `to` (replacing what is there).
    pub(crate) fn rename_to(&self, to: &Entry) -> io::Result<()> {
        std::fs::rename(self.path(), to.path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_used_in_the_directory_held() {
        let tmp = tempfile::tempdir().unwrap();
        let dir: Dir = Arc::new(hold(tmp.path().to_path_buf()).unwrap());
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("f"), "x").unwrap();
        let at = |name: &str| Entry::new(dir.clone(), name);
        assert_eq!(at("d").kind().unwrap(), Kind::Directory);
        assert!(matches!(at("f").kind().unwrap(), Kind::File(_)));
        assert_eq!(at("none").kind().unwrap(), Kind::Missing);
        assert!(at("d").open_dir().is_ok());
        assert!(at("f").open_dir().is_err());
        assert!(at("f").create_new(0o666).is_err(), "never an existing file");
        at("n").create_new(0o666).unwrap();
        at("n").rename_to(&at("f")).unwrap();
        assert_eq!(at("n").kind().unwrap(), Kind::Missing);
        let (root, path) = root_dir(tmp.path()).unwrap();
        assert!(path.parent().is_none(), "{}", path.display());
        drop(root);
    }
}
