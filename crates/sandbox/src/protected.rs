//! Protected paths: read-only even inside the writable roots, at every
//! depth, for the whole session.
//!
//! `.git` (any repository's, nested ones included: hooks and config run
//! code later), `.cogni/`, `cogni.toml` and `AGENTS.md` (they steer cogni
//! itself), and the files a trusted command runs from the workspace (see
//! `super::pinned`). How each tool enforces it:
//!
//! - file tools refuse a write whose real path has a `.git` or `.cogni`
//!   component or ends in `cogni.toml` or `AGENTS.md` ([`protected_part`]);
//! - before every command the writable roots are scanned ([`Scanner`]) and
//!   every protected path found is bound read-only onto itself in the
//!   command's mount namespace, so the kernel answers "Read-only file
//!   system". The scan is fresh for each command, so a directory renamed
//!   by an earlier one (`mv vendor/x vendor/y`) is bound where it is now;
//!   within a command a bind moves with a renamed parent, and a bound path
//!   itself cannot be renamed or removed (it is a mount point);
//! - after every command (and when a background job ends) the roots are
//!   scanned again: a protected name that was not there before, at any
//!   depth (`sub/cogni.toml`, `a/b/.git`), is moved aside to
//!   `NAME.cogni-refused` ([`Scanner::refuse_new`]) and the model is told.
//!
//! Scans are cheap when little changed: a directory whose inode and ctime
//! are what an earlier scan saw is not read again (unless it was changed
//! within a second of that read, when a coarse clock could hide a later
//! change). The ctime, not the modification time: a command can set a
//! directory's modification time back (`touch -d`), never its ctime.

use cogni_protocol::FileStamp;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Directories protected with everything inside them.
pub const PROTECTED_DIRS: &[&str] = &[".git", ".cogni", ".claude"];
/// Files protected wherever they are.
pub const PROTECTED_FILES: &[&str] = &["cogni.toml", "AGENTS.md", "CLAUDE.md"];

/// What a refused name is renamed to (then `-2`, `-3`, ...).
pub const REFUSED_SUFFIX: &str = ".cogni-refused";

/// Entries a scan looks at before it stops (a bound on its cost in huge
/// trees); [`Scan::complete`] says whether it stopped early.
const SCAN_LIMIT: usize = 200_000;

/// A directory changed this close to being read is read again next time.
const RACY: Duration = Duration::from_secs(1);

fn is_protected_name(name: &OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| PROTECTED_DIRS.contains(&n) || PROTECTED_FILES.contains(&n))
}

/// The protected part of `rel` (a path relative to a writable root), if
/// any: `.git/hooks/x` -> `.git`, `a/AGENTS.md` -> `a/AGENTS.md`.
pub fn protected_part(rel: &Path) -> Option<PathBuf> {
    let mut prefix = PathBuf::new();
    let components: Vec<Component> = rel.components().collect();
    for (i, component) in components.iter().enumerate() {
        prefix.push(component);
        if let Component::Normal(name) = component {
            let name = name.to_str().unwrap_or("");
            let last = i + 1 == components.len();
            if PROTECTED_DIRS.contains(&name) || (last && PROTECTED_FILES.contains(&name)) {
                return Some(prefix);
            }
        }
    }
    None
}

/// A file's device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(id: &FileStamp) -> Self {
        FileId {
            dev: id.dev,
            ino: id.ino,
        }
    }
}

/// The protected paths under some roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Each path with its identity, sorted by path.
    pub found: Vec<(PathBuf, FileId)>,
    /// False when the walk stopped at its entry limit.
    pub complete: bool,
}

impl Scan {
    /// The protected paths found, sorted, without their identities.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.found.iter().map(|(p, _)| p.as_path())
    }
}

/// What an earlier scan read of one directory.
#[derive(Debug)]
struct Listing {
    id: FileId,
    ctime: (i64, i64),
    /// When it was read (seconds, nanoseconds since the epoch).
    read_at: (i64, i64),
    /// Its entries.
    entries: usize,
    /// Subdirectories to walk (not symlinks, not protected ones).
    subdirs: Vec<OsString>,
    /// Protected entries.
    protected: Vec<(OsString, FileId)>,
}

impl Listing {
    /// `dir` (with identity `id`) read now.
    fn read(dir: &Path, id: &FileStamp) -> io::Result<Self> {
        let read_at = now();
        let mut listing = Listing {
            id: FileId::of(id),
            ctime: id.ctime,
            read_at,
            entries: 0,
            subdirs: Vec::new(),
            protected: Vec::new(),
        };
        for entry in fs::read_dir(dir)?.flatten() {
            listing.entries += 1;
            let name = entry.file_name();
            if is_protected_name(&name) {
                let path = entry.path();
                let id =
                    fs::symlink_metadata(&path).and_then(|meta| crate::sys::identity(&path, &meta));
                if let Ok(id) = id {
                    listing.protected.push((name, FileId::of(&id)));
                }
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                listing.subdirs.push(name);
            }
        }
        Ok(listing)
    }

    /// Still what the directory holds, judging by its identity now.
    fn current(&self, id: &FileStamp) -> bool {
        let settled = self.ctime.0 + (RACY.as_secs() as i64) < self.read_at.0
            || (self.ctime.0 + (RACY.as_secs() as i64) == self.read_at.0
                && self.ctime.1 < self.read_at.1);
        FileId::of(id) == self.id && id.ctime == self.ctime && settled
    }
}

fn now() -> (i64, i64) {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_secs() as i64, i64::from(t.subsec_nanos()))
}

/// Scans the writable roots for protected paths, remembering what it read
/// so the next scan reads only what changed. One per session.
#[derive(Debug, Default)]
pub struct Scanner {
    dirs: HashMap<PathBuf, Listing>,
}

impl Scanner {
    /// Walk `roots` (symlinks are not followed; protected directories are
    /// not entered) and collect every protected path. Blocking.
    pub fn scan(&mut self, roots: &[PathBuf]) -> Scan {
        let mut found = Vec::new();
        let mut read = HashMap::new();
        let mut stack: Vec<PathBuf> = roots.to_vec();
        let mut seen = 0usize;
        let mut complete = true;
        while let Some(dir) = stack.pop() {
            let Ok(meta) = fs::symlink_metadata(&dir) else {
                continue;
            };
            if !meta.is_dir() || read.contains_key(&dir) {
                continue;
            }
            let Ok(id) = crate::sys::identity(&dir, &meta) else {
                continue;
            };
            let listing = match self.dirs.remove(&dir) {
                Some(listing) if listing.current(&id) => listing,
                _ => match Listing::read(&dir, &id) {
                    Ok(listing) => listing,
                    Err(_) => continue,
                },
            };
            seen += listing.entries;
            if seen > SCAN_LIMIT {
                complete = false;
                break;
            }
            stack.extend(listing.subdirs.iter().map(|name| dir.join(name)));
            found.extend(
                listing
                    .protected
                    .iter()
                    .map(|(name, id)| (dir.join(name), *id)),
            );
            read.insert(dir, listing);
        }
        self.dirs = read;
        found.sort();
        found.dedup();
        Scan { found, complete }
    }

    /// Scan `roots` again and move aside every protected entry that
    /// `before` did not have (by identity, so a renamed directory's
    /// `.git` is not new): renamed to `NAME.cogni-refused` in its
    /// directory, found without following symlinks from its root.
    /// Returns what was moved (its old path) and the scan after. Blocking.
    pub fn refuse_new(&mut self, roots: &[PathBuf], before: &Scan) -> (Vec<PathBuf>, Scan) {
        let known: HashSet<FileId> = before.found.iter().map(|(_, id)| *id).collect();
        let after = self.scan(roots);
        let mut moved = Vec::new();
        for (path, id) in &after.found {
            if known.contains(id) {
                continue;
            }
            let Some(root) = roots.iter().find(|r| path.starts_with(r)) else {
                continue;
            };
            match move_aside(root, path) {
                Ok(()) => moved.push(path.clone()),
                Err(e) => tracing::warn!(path = %path.display(), error = %e,
                    "cannot move aside a protected name a command created"),
            }
        }
        if moved.is_empty() {
            (moved, after)
        } else {
            // What is left is what the next command is bound to.
            let after = self.scan(roots);
            (moved, after)
        }
    }
}

/// Rename `path` (below `root`) to a free `NAME.cogni-refused[-N]` beside
/// it, never following a symlink on the way (see [`walk_beneath`]).
fn move_aside(root: &Path, path: &Path) -> io::Result<()> {
    let rel = path
        .strip_prefix(root)
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let dir = walk_beneath(root, rel.parent().unwrap_or(Path::new("")))?;
    for n in 1..1000 {
        let mut aside = name.to_os_string();
        aside.push(REFUSED_SUFFIX);
        if n > 1 {
            aside.push(format!("-{n}"));
        }
        match dir.rename_noreplace(name, &aside) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

fn plain_components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(part) => Ok(part),
            _ => Err(io::Error::from(io::ErrorKind::InvalidInput)),
        })
        .collect()
}

/// A directory below a root, reached without following symlinks.
#[cfg(unix)]
struct Beneath(std::os::fd::OwnedFd);

/// Open `rel` below `root`: every directory on the way is opened without
/// following symlinks, so a command racing to swap one for a link cannot
/// redirect what is done there.
#[cfg(unix)]
fn walk_beneath(root: &Path, rel: &Path) -> io::Result<Beneath> {
    use std::os::fd::AsRawFd;
    let mut dir = open_dir(root, libc::AT_FDCWD, 0)?;
    for part in plain_components(rel)? {
        dir = open_dir(Path::new(part), dir.as_raw_fd(), libc::O_NOFOLLOW)?;
    }
    Ok(Beneath(dir))
}

#[cfg(unix)]
impl Beneath {
    fn rename_noreplace(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        use std::os::fd::AsFd;
        crate::sys::rename_noreplace(self.0.as_fd(), &cstring(from)?, &cstring(to)?)
    }
}

#[cfg(unix)]
fn cstring(name: &OsStr) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(name.as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Open the directory `path` relative to `at` (an fd or `AT_FDCWD`).
#[cfg(unix)]
fn open_dir(path: &Path, at: libc::c_int, extra: libc::c_int) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = cstring(path.as_os_str())?;
    // SAFETY: `c` is a valid C string; the result is checked.
    let fd = unsafe {
        libc::openat(
            at,
            c.as_ptr(),
            crate::sys::DIR_HANDLE | libc::O_DIRECTORY | libc::O_CLOEXEC | extra,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// A directory below a root, reached without following symlinks or
/// junctions.
#[cfg(windows)]
struct Beneath(PathBuf);

/// Walk `rel` below `root` by path, refusing a component that is not a
/// plain directory (a symlink or junction is a reparse point). Windows
/// has no `openat`: a command running at the same moment could still swap
/// a directory, but commands there run unconfined anyway.
#[cfg(windows)]
fn walk_beneath(root: &Path, rel: &Path) -> io::Result<Beneath> {
    let mut dir = root.to_path_buf();
    for part in plain_components(rel)? {
        dir.push(part);
        let meta = fs::symlink_metadata(&dir)?;
        if !meta.is_dir() || meta.file_type().is_symlink() {
            return Err(io::Error::from(io::ErrorKind::NotADirectory));
        }
    }
    Ok(Beneath(dir))
}

#[cfg(windows)]
impl Beneath {
    fn rename_noreplace(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        crate::sys::rename_noreplace_path(&self.0.join(from), &self.0.join(to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_parts() {
        let p = |s: &str| protected_part(Path::new(s));
        assert_eq!(p(".git/hooks/pre-commit"), Some(PathBuf::from(".git")));
        assert_eq!(
            p("vendor/x/.git/config"),
            Some(PathBuf::from("vendor/x/.git"))
        );
        assert_eq!(p(".cogni/config.toml"), Some(PathBuf::from(".cogni")));
        assert_eq!(p("cogni.toml"), Some(PathBuf::from("cogni.toml")));
        assert_eq!(p("docs/AGENTS.md"), Some(PathBuf::from("docs/AGENTS.md")));
        assert_eq!(p("AGENTS.md/x"), None);
        assert_eq!(p("src/main.rs"), None);
        assert_eq!(p(".github/workflows/ci.yml"), None);
        assert_eq!(p("x.git/config"), None);
    }

    #[test]
    fn scan_finds_nested_and_skips_inside_protected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        for dir in [".git/hooks", "vendor/x/.git/hooks", "src", ".cogni"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join("AGENTS.md"), "a").unwrap();
        fs::write(root.join("src/cogni.toml"), "").unwrap();
        fs::write(root.join("src/lib.rs"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/", root.join("src/escape")).unwrap();
        let scan = Scanner::default().scan(std::slice::from_ref(&root));
        assert!(scan.complete);
        let rel: Vec<_> = scan
            .paths()
            .map(|p| p.strip_prefix(&root).unwrap().to_path_buf())
            .collect();
        let want: Vec<PathBuf> = [
            ".cogni",
            ".git",
            "AGENTS.md",
            "src/cogni.toml",
            "vendor/x/.git",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(rel, want);
    }

    #[test]
    fn a_later_scan_reads_only_what_changed_and_sees_every_change() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::create_dir_all(root.join("c")).unwrap();
        // Older than the window in which a listing is not trusted.
        std::thread::sleep(RACY + Duration::from_millis(100));
        let roots = [root.clone()];
        let mut scanner = Scanner::default();
        assert!(scanner.scan(&roots).found.is_empty());
        // A listing whose directory did not change is reused: poison one
        // to see it.
        scanner
            .dirs
            .get_mut(&root.join("c"))
            .unwrap()
            .protected
            .push(("AGENTS.md".into(), FileId { dev: 0, ino: 0 }));
        assert_eq!(scanner.scan(&roots).found.len(), 1, "c was not read again");
        // A change is seen, however recent.
        fs::write(root.join("a/b/cogni.toml"), "").unwrap();
        let scan = scanner.scan(&roots);
        assert!(
            scan.paths().any(|p| p.ends_with("a/b/cogni.toml")),
            "{scan:?}"
        );
        // A renamed directory is read where it is now.
        fs::rename(root.join("a"), root.join("z")).unwrap();
        let scan = scanner.scan(&roots);
        assert!(
            scan.paths().any(|p| p.ends_with("z/b/cogni.toml")),
            "{scan:?}"
        );
        assert!(!scan.paths().any(|p| p.ends_with("a/b/cogni.toml")));
    }

    #[test]
    fn new_protected_names_are_moved_aside_at_any_depth_and_renamed_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        fs::create_dir_all(root.join("vendor/x/.git")).unwrap();
        fs::write(root.join("AGENTS.md"), "keep").unwrap();
        let roots = [root.clone()];
        let mut scanner = Scanner::default();
        let before = scanner.scan(&roots);
        // A command: renames a directory holding a .git, creates names.
        fs::rename(root.join("vendor/x"), root.join("vendor/y")).unwrap();
        fs::create_dir_all(root.join("sub/.cogni/commands")).unwrap();
        fs::write(root.join("sub/cogni.toml"), "x").unwrap();
        fs::create_dir_all(root.join("sub/deep/.git")).unwrap();
        fs::write(root.join("sub/cogni.toml.cogni-refused"), "taken").unwrap();
        let (moved, after) = scanner.refuse_new(&roots, &before);
        let rel: HashSet<PathBuf> = moved
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().to_path_buf())
            .collect();
        let want: HashSet<PathBuf> = ["sub/.cogni", "sub/cogni.toml", "sub/deep/.git"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(rel, want);
        assert!(root.join("sub/.cogni.cogni-refused/commands").is_dir());
        assert_eq!(
            fs::read_to_string(root.join("sub/cogni.toml.cogni-refused-2")).unwrap(),
            "x",
            "nothing is overwritten"
        );
        assert!(root.join("sub/deep/.git.cogni-refused").is_dir());
        assert!(
            root.join("vendor/y/.git").is_dir(),
            "a renamed .git is not new"
        );
        assert_eq!(fs::read_to_string(root.join("AGENTS.md")).unwrap(), "keep");
        let left: Vec<_> = after.paths().map(|p| p.to_path_buf()).collect();
        assert_eq!(
            left,
            vec![root.join("AGENTS.md"), root.join("vendor/y/.git")]
        );
    }

    #[test]
    #[cfg(unix)]
    fn moving_aside_follows_no_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(root.join("real")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("cogni.toml"), "the user's").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let e = move_aside(&root, &root.join("link/cogni.toml")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotADirectory, "{e}");
        assert!(outside.join("cogni.toml").exists());
    }
}
