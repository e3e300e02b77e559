//! Which paths of a workspace changed since the last snapshot, told by
//! the kernel (inotify), so that a snapshot adds those paths to its index
//! instead of looking at every file (the stat of each of 10,000 files is
//! most of a snapshot's time; adding a few paths is not).
//!
//! Every directory git would look at is watched: not `.git`, not a
//! nested repository, not what the `.gitignore` files (and a shadow
//! repository's excludes) leave out, never through a symbolic link, and
//! at most [`MAX_WATCHES`] of them, so a huge tree never takes the
//! user's inotify watches (the journal then gives up and every snapshot
//! looks at everything, as it would without it).
//!
//! The journal answers "everything" whenever it cannot be sure what
//! changed: for the first snapshot, after the kernel's queue overflowed,
//! when a watched directory moved or a `.gitignore` or `.gitattributes`
//! changed (then it watches the tree again), and when more than
//! [`MAX_PATHS`] paths changed. What it does not see: writes through a shared memory map,
//! and commits inside a nested repository (the next full look does).
//!
//! The walk also finds what would make git wait forever or read without
//! end: a `.gitignore` or `.gitattributes` (or `.git/info/exclude`) that
//! is a FIFO, a device or a link to one, or larger than the limit. Then
//! no snapshot is taken ([`Journal::blocked`]) until it is gone.

use super::Changed;
use crate::walk::unsafe_file;
use std::collections::{BTreeSet, HashMap};
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Directories watched at most; a workspace with more is looked at whole.
const MAX_WATCHES: usize = 16_384;

/// Changed paths beyond which a snapshot looks at everything anyway.
const MAX_PATHS: usize = 4_096;

/// The files git reads in each directory it looks at.
const GIT_FILES: &[&str] = &[".gitignore", ".gitattributes", ".git/info/exclude"];

/// What the kernel reports for a watched directory: its entries created,
/// deleted, written, closed after writing, their mode changed, moved in
/// and out; the directory itself moved or deleted. Never through a
/// link; a deleted file that is still open stops reporting.
const MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_MOVE_SELF
    | libc::IN_DELETE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW
    | libc::IN_EXCL_UNLINK;

/// A workspace's changes as the kernel reports them.
pub(crate) struct Journal {
    fd: OwnedFd,
    root: PathBuf,
    /// Names of directories never watched (a shadow repository's
    /// excludes).
    excluded: Vec<String>,
    /// Each watch's directory, relative to the root.
    dirs: HashMap<i32, PathBuf>,
    changed: BTreeSet<PathBuf>,
    /// Directories that appeared: watched before the next answer.
    appeared: Vec<PathBuf>,
    /// The watches no longer match the tree (an overflow, a directory
    /// moved, a `.gitignore` changed): watch it again, look at everything.
    stale: bool,
    /// Nothing answered yet: the first answer is "everything".
    fresh: bool,
    /// A file git would block on or read without end, found by the walk,
    /// and the directory it is in (looked at again at each answer: while
    /// it is there, that directory is not watched).
    blocked: Option<(PathBuf, PathBuf)>,
}

impl Journal {
    /// Watch `root`'s directories, leaving out those named in `excluded`;
    /// `None` when inotify is not there or the tree has too many.
    pub(crate) fn start(root: &Path, excluded: Vec<String>) -> Option<Journal> {
        let mut journal = Journal {
            fd: inotify()?,
            root: root.to_path_buf(),
            excluded,
            dirs: HashMap::new(),
            changed: BTreeSet::new(),
            appeared: Vec::new(),
            stale: false,
            fresh: true,
            blocked: None,
        };
        journal.watch(Path::new("")).then_some(journal)
    }

    /// What changed since the last answer; `None` when the journal can no
    /// longer tell (too many directories to watch: drop it).
    pub(crate) fn drain(&mut self) -> Option<Changed> {
        if let Some((dir, _)) = &self.blocked {
            self.stale |= unsafe_file(dir, GIT_FILES).is_none();
        }
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reads at most `buf.len()` bytes into `buf`.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            self.events(&buf[..n]);
        }
        if self.stale {
            self.fd = inotify()?;
            self.blocked = None;
            self.dirs.clear();
            self.appeared.clear();
            self.changed.clear();
            self.stale = false;
            return self.watch(Path::new("")).then_some(Changed::Everything);
        }
        for dir in std::mem::take(&mut self.appeared) {
            if !self.watch(&dir) {
                return None;
            }
        }
        let changed = std::mem::take(&mut self.changed);
        if std::mem::take(&mut self.fresh) || changed.len() > MAX_PATHS {
            return Some(Changed::Everything);
        }
        Some(Changed::Paths(changed))
    }

    /// A file in the workspace (or above it) that git would block on or
    /// read without end: no snapshot may be taken while it is there.
    pub(crate) fn blocked(&self) -> Option<&Path> {
        self.blocked.as_ref().map(|(_, file)| file.as_path())
    }

    /// Note the events in `bytes` (whole `inotify_event`s).
    fn events(&mut self, mut bytes: &[u8]) {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        while bytes.len() >= HEADER {
            let field = |at: usize| {
                u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
            };
            let (wd, mask, len) = (field(0) as i32, field(4), field(12) as usize);
            let end = (HEADER + len).min(bytes.len());
            let name = &bytes[HEADER..end];
            let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
            self.event(wd, mask, name);
            bytes = &bytes[end..];
        }
    }

    fn event(&mut self, wd: i32, mask: u32, name: &[u8]) {
        if mask & libc::IN_Q_OVERFLOW != 0 {
            self.stale = true;
            return;
        }
        if mask & libc::IN_IGNORED != 0 {
            self.dirs.remove(&wd);
            return;
        }
        let Some(dir) = self.dirs.get(&wd) else {
            return;
        };
        let is_dir = mask & libc::IN_ISDIR != 0;
        if mask & libc::IN_MOVE_SELF != 0
            || (is_dir && mask & libc::IN_MOVED_FROM != 0)
            || name == b".gitignore"
            || name == b".gitattributes"
        {
            // The paths of the watches under a moved directory are wrong
            // now; new ignore rules may uncover directories, and new
            // attributes change how unchanged files are stored.
            self.stale = true;
            return;
        }
        // The directory's own events are its parent's to report; git
        // looks at no `.git`.
        if name.is_empty() || name == b".git" {
            return;
        }
        let path = dir.join(OsStr::from_bytes(name));
        if is_dir && mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0 {
            self.appeared.push(path.clone());
        }
        self.changed.insert(path);
    }

    /// Watch `relative` (the root when empty) and the directories under
    /// it that git would look at; false when there are too many or the
    /// kernel has no more watches to give.
    fn watch(&mut self, relative: &Path) -> bool {
        let start = self.root.join(relative);
        // Walked from the parent, so the directory's own ignore rules
        // apply to it too.
        let (from, only) = match relative.parent() {
            Some(parent) => (self.root.join(parent), Some(start.clone())),
            None => (start, None),
        };
        let above = from.canonicalize().unwrap_or_else(|_| from.clone());
        let bad_above = above
            .ancestors()
            .find_map(|dir| Some((dir.to_path_buf(), unsafe_file(dir, GIT_FILES)?)));
        if let Some(bad) = bad_above {
            self.blocked = Some(bad);
            return true;
        }
        let excluded = self.excluded.clone();
        let found = std::sync::Arc::new(std::sync::Mutex::new(None));
        let blocked = found.clone();
        let walk = crate::walk::builder(&from)
            .ignore(false)
            .follow_links(false)
            .filter_entry(move |entry| {
                let name = entry.file_name().as_bytes();
                let wanted = entry.file_type().is_some_and(|t| t.is_dir())
                    && name != b".git"
                    && !excluded.iter().any(|e| e.as_bytes() == name)
                    && only
                        .as_ref()
                        .is_none_or(|only| entry.depth() != 1 || entry.path() == only)
                    && (entry.depth() == 0
                        || std::fs::symlink_metadata(entry.path().join(".git")).is_err());
                // Not walked into: the walk would block on it too.
                let bad = wanted
                    .then(|| unsafe_file(entry.path(), GIT_FILES))
                    .flatten();
                let clear = bad.is_none();
                if let (Some(bad), Ok(mut blocked)) = (bad, blocked.lock()) {
                    blocked.get_or_insert((entry.path().to_path_buf(), bad));
                }
                wanted && clear
            })
            .build();
        for entry in walk.flatten() {
            if entry.depth() == 0 && !relative.as_os_str().is_empty() {
                continue;
            }
            if self.dirs.len() >= MAX_WATCHES {
                return false;
            }
            let Ok(path) = CString::new(entry.path().as_os_str().as_bytes()) else {
                continue;
            };
            // SAFETY: `path` is a NUL-terminated string that outlives the call.
            let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), MASK) };
            if wd < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    // Gone or replaced since it was listed: its parent
                    // reported that.
                    Some(libc::ENOENT | libc::ENOTDIR) => continue,
                    _ => return false,
                }
            }
            let inside = entry
                .path()
                .strip_prefix(&self.root)
                .unwrap_or(entry.path());
            self.dirs.insert(wd, inside.to_path_buf());
        }
        if let Some(bad) = found.lock().ok().and_then(|mut found| found.take()) {
            self.blocked.get_or_insert(bad);
        }
        true
    }
}

/// A new inotify instance that does not block and is not inherited.
fn inotify() -> Option<OwnedFd> {
    // SAFETY: no pointers; the result is checked.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    // SAFETY: a fresh descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(changed: Option<Changed>) -> Vec<String> {
        match changed.expect("the journal still tells") {
            Changed::Paths(paths) => paths.iter().map(|p| p.display().to_string()).collect(),
            Changed::Everything => vec!["EVERYTHING".into()],
        }
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for path in [
            "a.txt",
            "src/b.rs",
            "src/deep/c.rs",
            "target/out.o",
            "logs/x.log",
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::write(dir.path().join(".gitignore"), "logs/\n").unwrap();
        dir
    }

    #[test]
    fn the_first_answer_is_everything_then_only_what_changed() {
        let dir = tree();
        let root = dir.path();
        let mut journal = Journal::start(root, vec!["target".into()]).unwrap();
        assert_eq!(paths(journal.drain()), ["EVERYTHING"]);
        assert!(paths(journal.drain()).is_empty());
        std::fs::write(root.join("src/deep/c.rs"), "changed").unwrap();
        std::fs::remove_file(root.join("a.txt")).unwrap();
        std::fs::write(root.join("new.txt"), "new").unwrap();
        assert_eq!(
            paths(journal.drain()),
            ["a.txt", "new.txt", "src/deep/c.rs"]
        );
        // Ignored and excluded directories are not watched.
        std::fs::write(root.join("logs/x.log"), "more").unwrap();
        std::fs::write(root.join("target/out.o"), "more").unwrap();
        assert!(paths(journal.drain()).is_empty());
    }

    #[test]
    fn a_new_directory_is_reported_and_then_watched() {
        let dir = tree();
        let root = dir.path();
        let mut journal = Journal::start(root, Vec::new()).unwrap();
        journal.drain();
        std::fs::create_dir_all(root.join("src/new/inner")).unwrap();
        std::fs::write(root.join("src/new/inner/f.rs"), "f").unwrap();
        assert_eq!(paths(journal.drain()), ["src/new"]);
        std::fs::write(root.join("src/new/inner/f.rs"), "g").unwrap();
        assert_eq!(paths(journal.drain()), ["src/new/inner/f.rs"]);
        // An ignored new directory is not watched.
        std::fs::create_dir_all(root.join("logs/today")).unwrap();
        journal.drain();
        std::fs::write(root.join("logs/today/y.log"), "y").unwrap();
        assert!(paths(journal.drain()).is_empty());
    }

    #[test]
    fn moves_of_directories_and_new_ignore_rules_mean_everything() {
        let dir = tree();
        let root = dir.path();
        let mut journal = Journal::start(root, Vec::new()).unwrap();
        journal.drain();
        std::fs::rename(root.join("src/deep"), root.join("src/moved")).unwrap();
        assert_eq!(paths(journal.drain()), ["EVERYTHING"]);
        // Watched again, at the new paths.
        std::fs::write(root.join("src/moved/c.rs"), "moved").unwrap();
        assert_eq!(paths(journal.drain()), ["src/moved/c.rs"]);
        std::fs::write(root.join(".gitignore"), "").unwrap();
        assert_eq!(paths(journal.drain()), ["EVERYTHING"]);
        std::fs::write(root.join("logs/x.log"), "seen now").unwrap();
        assert_eq!(paths(journal.drain()), ["logs/x.log"]);
    }

    #[test]
    fn links_and_nested_repositories_are_not_watched() {
        let dir = tree();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        std::fs::create_dir_all(root.join("nested/.git")).unwrap();
        let mut journal = Journal::start(root, Vec::new()).unwrap();
        journal.drain();
        std::fs::write(outside.path().join("o.txt"), "o").unwrap();
        std::fs::write(root.join("nested/n.txt"), "n").unwrap();
        std::fs::write(root.join("nested/.git/HEAD"), "h").unwrap();
        assert!(paths(journal.drain()).is_empty());
    }

    #[test]
    fn a_fifo_git_would_read_blocks_snapshots_until_it_is_gone() {
        let dir = tree();
        let root = dir.path();
        let mut journal = Journal::start(root, Vec::new()).unwrap();
        journal.drain();
        assert_eq!(journal.blocked(), None);
        let fifo = root.join("src/.gitattributes");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(paths(journal.drain()), ["EVERYTHING"]);
        assert_eq!(journal.blocked(), Some(fifo.as_path()));
        std::fs::remove_file(&fifo).unwrap();
        journal.drain();
        assert_eq!(journal.blocked(), None);
        // At the start too, without waiting on it.
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("src/deep/.gitignore"))
            .status()
            .unwrap();
        assert!(made.success());
        let journal = Journal::start(root, Vec::new()).unwrap();
        assert_eq!(
            journal.blocked(),
            Some(root.join("src/deep/.gitignore").as_path())
        );
    }
}
