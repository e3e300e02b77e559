//! Calls relative to a directory held open (`openat`, `mkdirat`,
//! `renameat`, ...). None of them follows a symlink in the name it is
//! given, and none of them blocks on what it opens: a name is one entry of
//! one directory, so what a call changes is exactly that entry. (Unix;
//! `at_windows.rs` is the same interface on Windows.)

use super::entry::{Entry, Kind};
use cogni_sandbox::Root;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Permissions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A directory held open (`O_PATH`), shared by the entries in it.
pub(crate) type Dir = Arc<OwnedFd>;

/// Flags of every directory this module opens.
const DIR_FLAGS: libc::c_int = cogni_sandbox::sys::DIR_HANDLE | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// Flags of every file opened for reading: never wait for a writer (a
/// FIFO) and never become the controlling terminal (a tty).
const READ_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the name contains a NUL byte"))
}

/// `-1` as an error, anything else as the value.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A descriptor the kernel just returned, owned from now on.
fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `check` passed, so `fd` is a new descriptor owned by nobody
    // else.
    check(fd).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `/`, held open, and its path: where a walk of `_abs` starts outside
/// every root.
pub(crate) fn root_dir(_abs: &Path) -> io::Result<(Dir, PathBuf)> {
    // SAFETY: a valid C string and flags; the result is checked.
    let dir = owned(unsafe { libc::open(c"/".as_ptr(), DIR_FLAGS) })?;
    Ok((Arc::new(dir), PathBuf::from("/")))
}

/// The pinned directory of `root`, held anew (it is borrowed).
pub(crate) fn dup(root: &Root) -> io::Result<Dir> {
    root.dir().try_clone_to_owned().map(Arc::new)
}

/// Whether `e` is the error of opening a symlink where none is followed.
pub(crate) fn met_symlink(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// The error of a walk that met too many symlinks.
pub(crate) fn too_many_links() -> io::Error {
    io::Error::from_raw_os_error(libc::ELOOP)
}

/// Whether `openat2` works here (it does from Linux 5.6, unless a seccomp
/// filter refuses it).
#[cfg(target_os = "linux")]
static OPENAT2_WORKS: AtomicBool = AtomicBool::new(true);

/// Let walks use `openat2` or not (tests of the walk without it).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn use_openat2(works: bool) {
    OPENAT2_WORKS.store(works, Ordering::Relaxed);
}

/// The directory `rel` (plain names only) below `dir`, opened by one
/// `openat2` that refuses every symlink and anything that would leave
/// `dir`. `None` when that did not work, for whatever reason: the caller
/// then walks name by name to find out why. (Linux only: elsewhere every
/// walk goes name by name.)
#[cfg(not(target_os = "linux"))]
pub(crate) fn open_beneath(_dir: &OwnedFd, _rel: &Path) -> Option<OwnedFd> {
    None
}

/// The directory `rel` (plain names only) below `dir`, opened by one
/// `openat2` that refuses every symlink and anything that would leave
/// `dir`. `None` when that did not work, for whatever reason: the caller
/// then walks name by name to find out why.
#[cfg(target_os = "linux")]
pub(crate) fn open_beneath(dir: &OwnedFd, rel: &Path) -> Option<OwnedFd> {
    if !OPENAT2_WORKS.load(Ordering::Relaxed) {
        return None;
    }
    let path = c_name(rel.as_os_str()).ok()?;
    // SAFETY: open_how is plain data.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = DIR_FLAGS as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `path` is a valid C string and `how` a valid open_how of the
    // size passed; the result is checked.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    match owned(fd as libc::c_int) {
        Ok(fd) => Some(fd),
        Err(e) => {
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS | libc::EPERM | libc::E2BIG)
            ) {
                OPENAT2_WORKS.store(false, Ordering::Relaxed);
            }
            None
        }
    }
}

/// What the mode bits `mode` say a file is, in words (for errors).
fn kind_name(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => super::DIRECTORY,
        libc::S_IFLNK => "a symlink",
        libc::S_IFIFO => "a FIFO (named pipe)",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFREG => "a regular file",
        _ => "not a regular file",
    }
}

/// What `file_type` is, in words (for errors).
pub(crate) fn type_name(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let mode = if file_type.is_dir() {
        libc::S_IFDIR
    } else if file_type.is_symlink() {
        libc::S_IFLNK
    } else if file_type.is_fifo() {
        libc::S_IFIFO
    } else if file_type.is_char_device() {
        libc::S_IFCHR
    } else if file_type.is_block_device() {
        libc::S_IFBLK
    } else if file_type.is_socket() {
        libc::S_IFSOCK
    } else if file_type.is_file() {
        libc::S_IFREG
    } else {
        0
    };
    kind_name(mode)
}

fn kind_of(st: &libc::stat) -> Kind {
    use std::os::unix::fs::PermissionsExt;
    match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Directory,
        libc::S_IFLNK => Kind::Symlink,
        libc::S_IFREG => Kind::File(Permissions::from_mode(cogni_sandbox::sys::permission_bits(
            st,
        ))),
        _ => Kind::Other(kind_name(st.st_mode)),
    }
}

/// Open the file at `path` (symlinks followed) for reading, without
/// blocking on a FIFO or taking a terminal.
pub(crate) fn open_path(path: &Path) -> io::Result<File> {
    let c_path = c_name(path.as_os_str())?;
    // SAFETY: a valid C string and flags; the result is checked.
    owned(unsafe { libc::open(c_path.as_ptr(), READ_FLAGS) }).map(File::from)
}

impl Entry {
    fn c_name(&self) -> io::Result<CString> {
        c_name(&self.name)
    }

    fn raw_dir(&self) -> libc::c_int {
        self.dir.as_raw_fd()
    }

    fn stat_with(&self, flags: libc::c_int) -> io::Result<Option<libc::stat>> {
        let name = self.c_name()?;
        // SAFETY: stat is plain data that fstatat fills.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor, C string and writable stat.
        match check(unsafe { libc::fstatat(self.raw_dir(), name.as_ptr(), &mut st, flags) }) {
            Ok(_) => Ok(Some(st)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What is there, not following a symlink.
    pub(crate) fn kind(&self) -> io::Result<Kind> {
        Ok(self
            .stat_with(libc::AT_SYMLINK_NOFOLLOW)?
            .map_or(Kind::Missing, |st| kind_of(&st)))
    }

    /// What a symlink here points to, followed by the kernel: only for the
    /// permissions of a file a user named replacing a symlink.
    pub(crate) fn followed_kind(&self) -> io::Result<Kind> {
        Ok(self.stat_with(0)?.map_or(Kind::Missing, |st| kind_of(&st)))
    }

    /// The directory here, opened without following a symlink: ENOTDIR
    /// for a symlink or a file, ENOENT when nothing is there.
    pub(crate) fn open_dir(&self) -> io::Result<OwnedFd> {
        let name = self.c_name()?;
        // SAFETY: a valid descriptor and C string; the result is checked.
        owned(unsafe { libc::openat(self.raw_dir(), name.as_ptr(), DIR_FLAGS | libc::O_NOFOLLOW) })
    }

    /// The target of the symlink here.
    pub(crate) fn read_link(&self) -> io::Result<PathBuf> {
        let name = self.c_name()?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: a valid descriptor and C string; `buf` has the room given.
        let n = unsafe {
            libc::readlinkat(
                self.raw_dir(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        Ok(PathBuf::from(OsString::from_vec(buf)))
    }

    /// Open the regular file here for reading, without following a
    /// symlink and without blocking: see [`super::limited::checked`].
    pub(crate) fn open_read(&self) -> io::Result<File> {
        let name = self.c_name()?;
        // SAFETY: a valid descriptor and C string; the result is checked.
        let fd = owned(unsafe {
            libc::openat(self.raw_dir(), name.as_ptr(), READ_FLAGS | libc::O_NOFOLLOW)
        })?;
        Ok(File::from(fd))
    }

    /// Create a new file here (never opens an existing one, nor a
    /// symlink), writable, with `mode` before the umask.
    pub(crate) fn create_new(&self, mode: u32) -> io::Result<File> {
        let name = self.c_name()?;
        let flags = libc::O_WRONLY
            | libc::O_CREAT
            | libc::O_EXCL
            | libc::O_NOFOLLOW
            | libc::O_NOCTTY
            | libc::O_CLOEXEC;
        // SAFETY: a valid descriptor and C string; the result is checked.
        let fd = owned(unsafe {
            libc::openat(self.raw_dir(), name.as_ptr(), flags, mode as libc::c_uint)
        })?;
        Ok(File::from(fd))
    }

    /// Create the directory here.
    pub(crate) fn mkdir(&self) -> io::Result<()> {
        let name = self.c_name()?;
        // SAFETY: a valid descriptor and C string.
        check(unsafe { libc::mkdirat(self.raw_dir(), name.as_ptr(), 0o777) }).map(drop)
    }

    /// Remove the (empty) directory here.
    pub(crate) fn rmdir(&self) -> io::Result<()> {
        self.unlink_with(libc::AT_REMOVEDIR)
    }

    /// Remove the file or symlink here.
    pub(crate) fn unlink(&self) -> io::Result<()> {
        self.unlink_with(0)
    }

    fn unlink_with(&self, flags: libc::c_int) -> io::Result<()> {
        let name = self.c_name()?;
        // SAFETY: a valid descriptor and C string.
        check(unsafe { libc::unlinkat(self.raw_dir(), name.as_ptr(), flags) }).map(drop)
    }

    /// Rename this entry to `to` (replacing what is there).
    pub(crate) fn rename_to(&self, to: &Entry) -> io::Result<()> {
        let (from_name, to_name) = (self.c_name()?, to.c_name()?);
        // SAFETY: valid descriptors and C strings.
        check(unsafe {
            libc::renameat(
                self.raw_dir(),
                from_name.as_ptr(),
                to.raw_dir(),
                to_name.as_ptr(),
            )
        })
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_never_follow_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir: Dir = Arc::new(File::open(tmp.path()).unwrap().into());
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("f"), "x").unwrap();
        std::os::unix::fs::symlink("d", tmp.path().join("l")).unwrap();
        let at = |name: &str| Entry::new(dir.clone(), name);
        assert_eq!(at("d").kind().unwrap(), Kind::Directory);
        assert_eq!(at("l").kind().unwrap(), Kind::Symlink);
        assert_eq!(at("l").followed_kind().unwrap(), Kind::Directory);
        assert!(matches!(at("f").kind().unwrap(), Kind::File(_)));
        assert_eq!(at("none").kind().unwrap(), Kind::Missing);
        assert!(at("d").open_dir().is_ok());
        let e = at("l").open_dir().unwrap_err();
        assert!(
            matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)),
            "{e}"
        );
        assert_eq!(at("l").read_link().unwrap(), PathBuf::from("d"));
        assert!(at("l").open_read().is_err());
        assert!(at("l").create_new(0o666).is_err());
        assert!(open_beneath(&dir, Path::new("l")).is_none());
        assert!(open_beneath(&dir, Path::new("d")).is_some());
    }
}
