//! The workspace of a session: its working directory and writable roots,
//! resolved once and held open for the whole session.
//!
//! A root is opened when the session starts (symlinks in the path as
//! configured are followed then, once) and kept as a directory descriptor.
//! The file tools walk from these descriptors and the sandbox's Landlock
//! rules are made from them, so a command that later replaces a root (or a
//! directory above it) with a symlink changes nothing about where writes
//! may go. A writable root that does not exist when the session starts is
//! ignored with a warning: one made later by a command of the model is the
//! model's own directory, not a root the user granted.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a root is held: a directory descriptor on Unix; on Windows a
/// handle opened without delete sharing, so the directory cannot be
/// renamed or removed while the session holds it.
#[cfg(unix)]
type Held = std::os::fd::OwnedFd;
#[cfg(windows)]
type Held = std::fs::File;

/// One root, held open.
#[derive(Debug)]
pub struct Root {
    /// The path as configured, made absolute against the working directory.
    pub given: PathBuf,
    /// Where it was when the session started (symlinks resolved).
    pub real: PathBuf,
    #[cfg_attr(windows, allow(dead_code))]
    dir: Held,
}

impl Root {
    /// The directory (`O_PATH`): walk from it, never from [`Root::real`].
    #[cfg(unix)]
    pub fn dir(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.dir.as_fd()
    }

    /// Whether `path` (absolute) is this root or lies inside it, as
    /// configured or as resolved; whole components are compared.
    pub fn prefix_of<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        path.strip_prefix(&self.given)
            .or_else(|_| path.strip_prefix(&self.real))
            .ok()
    }
}

/// The working directory and the writable roots of a session, pinned.
#[derive(Debug)]
pub struct Workspace {
    /// What was pinned: the working directory and the roots as configured.
    cwd: PathBuf,
    writable_roots: Vec<PathBuf>,
    /// The working directory first, then the writable roots that exist; or
    /// the error of opening the working directory.
    roots: Result<Vec<Root>, (io::ErrorKind, String)>,
    warnings: Vec<String>,
}

impl Workspace {
    /// Open `cwd` and each of `writable_roots` (relative ones against
    /// `cwd`). A root that cannot be opened as a directory is left out,
    /// with a warning naming it and why. Blocking (a few `open` calls).
    pub fn pin(cwd: &Path, writable_roots: &[PathBuf]) -> Workspace {
        let mut warnings = Vec::new();
        let roots = open_root(cwd).map_err(|e| (e.kind(), e.to_string()));
        let roots = roots.map(|first| {
            let mut roots = vec![first];
            for configured in writable_roots {
                let given = cwd.join(configured);
                match open_root(&given) {
                    Ok(root) => roots.push(root),
                    Err(e) => warnings.push(format!(
                        "writable root `{}` is ignored: {}. Writable roots are fixed when the \
                         session starts; create the directory first, then start cogni",
                        given.display(),
                        reason(&e)
                    )),
                }
            }
            roots
        });
        Workspace {
            cwd: cwd.to_path_buf(),
            writable_roots: writable_roots.to_vec(),
            roots,
            warnings,
        }
    }

    /// The roots, the working directory first; an error when the working
    /// directory could not be opened.
    pub fn roots(&self) -> io::Result<&[Root]> {
        self.roots
            .as_deref()
            .map_err(|(kind, message)| io::Error::new(*kind, message.clone()))
    }

    /// The real paths of the roots (none when the working directory could
    /// not be opened).
    pub fn real_paths(&self) -> Vec<PathBuf> {
        self.roots()
            .map(|roots| roots.iter().map(|r| r.real.clone()).collect())
            .unwrap_or_default()
    }

    /// The working directory as given.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Whether this was pinned for `cwd` and `writable_roots` (otherwise
    /// the caller pins again: the user changed them).
    pub fn is_for(&self, cwd: &Path, writable_roots: &[PathBuf]) -> bool {
        self.cwd == cwd && self.writable_roots == writable_roots
    }

    /// The workspace for `cwd` and `writable_roots` after a change of
    /// environment: `current` when it was pinned for them (the roots stay
    /// those of the start, whatever commands did to them since), else
    /// pinned now (the user changed them).
    pub fn repin(current: &Arc<Workspace>, cwd: &Path, writable_roots: &[PathBuf]) -> Arc<Self> {
        if current.is_for(cwd, writable_roots) {
            current.clone()
        } else {
            Arc::new(Workspace::pin(cwd, writable_roots))
        }
    }

    /// What the user should know: the roots left out and why.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// Open `path` as a directory (`O_PATH`) and learn where it really is.
#[cfg(unix)]
fn open_root(path: &Path) -> io::Result<Root> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c_path` is a valid C string; the descriptor returned is
    // owned by the OwnedFd below.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            crate::sys::DIR_HANDLE | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let dir = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let real = real_path(&dir, path)?;
    Ok(Root {
        given: path.to_path_buf(),
        real,
        dir,
    })
}

/// The path of the directory `dir` is open on: the kernel's name for it,
/// or, without `/proc`, `path` canonicalised and checked to be the same
/// directory.
#[cfg(unix)]
fn real_path(dir: &std::os::fd::OwnedFd, path: &Path) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())) {
        if real.is_absolute() {
            return Ok(real);
        }
    }
    let real = std::fs::canonicalize(path)?;
    let held = std::fs::File::from(dir.try_clone()?).metadata()?;
    let named = std::fs::metadata(&real)?;
    let (held, named) = (
        crate::sys::identity(path, &held)?,
        crate::sys::identity(&real, &named)?,
    );
    if (held.dev, held.ino) == (named.dev, named.ino) {
        Ok(real)
    } else {
        Err(io::Error::other("it was replaced while it was opened"))
    }
}

/// Open `path` as a directory, held without delete sharing (so nobody
/// renames or removes it while cogni runs), and learn where it is.
#[cfg(windows)]
fn open_root(path: &Path) -> io::Result<Root> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem as fs;
    let dir = std::fs::OpenOptions::new()
        .access_mode(0)
        .share_mode(fs::FILE_SHARE_READ | fs::FILE_SHARE_WRITE)
        .custom_flags(fs::FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    if !dir.metadata()?.is_dir() {
        return Err(io::Error::from(io::ErrorKind::NotADirectory));
    }
    let real = crate::sys::canonicalize(path)?;
    Ok(Root {
        given: path.to_path_buf(),
        real,
        dir,
    })
}

/// Why a root could not be opened, in words.
fn reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "it does not exist".into(),
        io::ErrorKind::NotADirectory => "it is not a directory".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn roots_are_pinned_and_missing_ones_warned_about() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("real")).unwrap();
        std::os::unix::fs::symlink("real", ws.join("link")).unwrap();
        std::fs::write(ws.join("file"), "").unwrap();
        let roots = ["link", "missing", "file"].map(PathBuf::from);
        let pinned = Workspace::pin(&ws, &roots);
        let real: Vec<PathBuf> = pinned.real_paths();
        assert_eq!(real, vec![ws.clone(), ws.join("real")]);
        let warnings = pinned.warnings().join("\n");
        assert!(
            warnings.contains(&format!(
                "`{}` is ignored: it does not exist",
                ws.join("missing").display()
            )),
            "{warnings}"
        );
        assert!(warnings.contains("not a directory"), "{warnings}");
        assert!(pinned.is_for(&ws, &roots));
        assert!(!pinned.is_for(&ws, &[]));
        // The link is replaced: the pinned root is still the directory.
        std::fs::remove_file(ws.join("link")).unwrap();
        std::os::unix::fs::symlink("/", ws.join("link")).unwrap();
        let root = &pinned.roots().unwrap()[1];
        assert_eq!(root.real, ws.join("real"));
        assert_eq!(root.prefix_of(&ws.join("link/x")), Some(Path::new("x")));
        assert_eq!(root.prefix_of(&ws.join("other")), None);
    }

    #[test]
    fn a_missing_working_directory_is_an_error_when_used() {
        let pinned = Workspace::pin(Path::new("/nonexistent/cogni"), &[]);
        assert_eq!(pinned.roots().unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(pinned.real_paths().is_empty());
    }
}
