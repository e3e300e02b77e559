//! Where a write lands, found without letting the kernel follow a symlink.
//!
//! A path is walked one directory at a time from a directory held open:
//! the outermost pinned root the path lies in (see
//! [`cogni_sandbox::Workspace`]), or `/`. Every step opens one name with
//! `O_NOFOLLOW` (a run of names at once with `openat2` and
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` where the
//! kernel has it). A symlink on the way is read here and its target walked
//! the same way from the start (at most [`MAX_LINKS`] of them), and so is
//! `..`; so the walk knows the real path of every directory it holds, and
//! the directory it ends in is the one written to: nothing is looked up by
//! path again between the check and the write.

use super::at::{self, Dir};
use super::entry::{Entry, Kind};
use cogni_sandbox::Root;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Symlinks one walk follows at most (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// What happens to a symlink that is the last component of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalLink {
    /// Resolve it: the file it points to is what gets rewritten.
    Follow,
    /// Keep it: the link itself is created, replaced or removed.
    Keep,
}

/// Why a path could not be walked.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// The path goes up (`..`) from a directory that does not exist, so
    /// where it leads cannot be known.
    #[error("`..` after a directory that does not exist")]
    DotDotInMissingPart,
    /// Opening or reading a directory on the way failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path as far as it was walked.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

/// A file to write: the deepest directory of its path that exists, held
/// open, and what is below it.
#[derive(Debug, Clone)]
pub struct Target {
    base: Dir,
    /// Directories to create below `base`, outermost first.
    missing: Vec<OsString>,
    name: OsString,
    real: PathBuf,
}

impl Target {
    /// The real path (symlinks resolved), for messages and comparisons.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// The entry, when its directory exists (no I/O).
    pub(crate) fn entry(&self) -> Option<Entry> {
        self.missing
            .is_empty()
            .then(|| Entry::new(self.base.clone(), self.name.clone()))
    }

    /// What is there now (missing when its directory is).
    pub(crate) fn kind(&self) -> io::Result<Kind> {
        self.entry().map_or(Ok(Kind::Missing), |e| e.kind())
    }

    /// The entry, after creating the missing directories above it (each
    /// one made is added to `created`, also when a later one fails).
    pub(crate) fn make_parents(&self, created: &mut Vec<Entry>) -> io::Result<Entry> {
        let mut dir = self.base.clone();
        for name in &self.missing {
            let entry = Entry::new(dir, name.clone());
            match entry.mkdir() {
                Ok(()) => created.push(entry.clone()),
                // Made meanwhile (another writer): opened below like any.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            dir = Arc::new(entry.open_dir()?);
        }
        Ok(Entry::new(dir, self.name.clone()))
    }
}

/// A walked path: the target and the pinned root it lies in.
#[derive(Debug)]
pub struct Walked {
    /// Where the file goes.
    pub target: Target,
    /// Index of the root (in the slice given) holding the target's
    /// directory; `None` when it lies outside all of them.
    pub root: Option<usize>,
}

/// Walk `path` (absolute) for a write, starting from `roots` where it
/// lies in one. Blocking.
pub fn walk(roots: &[Root], path: &Path, link: FinalLink) -> Result<Walked, WalkError> {
    Walker { roots, links: 0 }.file(path.to_path_buf(), link)
}

/// Walk `path` (absolute) to an existing directory: its real path and the
/// root it lies in. Blocking.
pub fn walk_dir(roots: &[Root], path: &Path) -> Result<(PathBuf, Option<usize>), WalkError> {
    let mut walker = Walker { roots, links: 0 };
    let mut abs = path.to_path_buf();
    loop {
        let (pos, steps) = walker.start(&abs)?;
        match walker.dirs(pos, steps, 0)? {
            Reached::Dir(pos, _) => return Ok((pos.real, pos.root)),
            Reached::Restart(next) => abs = next,
            Reached::Missing { pos, name, .. } => {
                return Err(io_error(
                    pos.real.join(name),
                    io::Error::from_raw_os_error(libc::ENOENT),
                ))
            }
        }
    }
}

fn io_error(path: PathBuf, source: io::Error) -> WalkError {
    WalkError::Io { path, source }
}

/// One component of what is left to walk.
#[derive(Debug, Clone)]
enum Step {
    Name(OsString),
    Up,
}

/// A directory reached, held open, with its real path.
struct Pos {
    dir: Dir,
    real: PathBuf,
    root: Option<usize>,
}

/// How walking the directories of a path ended.
enum Reached {
    /// Every step was taken but the ones left (see [`Walker::dirs`]).
    Dir(Pos, VecDeque<Step>),
    /// A symlink or `..` turned the walk into one of this absolute path.
    Restart(PathBuf),
    /// `name` does not exist in `pos`; `rest` are the plain names after it.
    Missing {
        pos: Pos,
        name: OsString,
        rest: VecDeque<Step>,
    },
}

struct Walker<'a> {
    roots: &'a [Root],
    /// Symlinks followed so far.
    links: usize,
}

impl Walker<'_> {
    /// Where walking `abs` starts: the outermost root holding it (so a
    /// nested root is looked up afresh, like any directory), or `/`.
    fn start(&self, abs: &Path) -> Result<(Pos, VecDeque<Step>), WalkError> {
        let outermost = self
            .roots
            .iter()
            .enumerate()
            .filter_map(|(i, root)| root.prefix_of(abs).map(|rest| (i, root, rest)))
            .max_by_key(|(_, _, rest)| rest.components().count());
        let (pos, rest) = match outermost {
            Some((i, root, rest)) => {
                let dir = at::dup(root).map_err(|e| io_error(root.real.clone(), e))?;
                let pos = Pos {
                    dir,
                    real: root.real.clone(),
                    root: Some(i),
                };
                (pos, rest)
            }
            None => {
                let (dir, real) = at::root_dir(abs).map_err(|e| io_error(abs.into(), e))?;
                let pos = Pos {
                    dir,
                    real,
                    root: None,
                };
                (pos, abs)
            }
        };
        let steps = rest
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(Step::Name(name.to_os_string())),
                Component::ParentDir => Some(Step::Up),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
            })
            .collect();
        Ok((pos, steps))
    }

    /// The absolute path to walk instead when `link` (a symlink in `pos`)
    /// is met with `rest` still to walk.
    fn follow(
        &mut self,
        pos: &Pos,
        link: &Entry,
        rest: &VecDeque<Step>,
    ) -> Result<PathBuf, WalkError> {
        self.links += 1;
        let here = pos.real.join(&link.name);
        if self.links > MAX_LINKS {
            return Err(io_error(here, at::too_many_links()));
        }
        let target = link.read_link().map_err(|e| io_error(here, e))?;
        Ok(joined(pos.real.join(target), rest))
    }

    /// Walk `steps` as directories from `pos`; `keep` steps at the end are
    /// left for the caller (the file name). Inside a root, the leading
    /// names are first tried in one `openat2`; what it could not take is
    /// walked name by name (a run ends at `..`, which restarts the walk).
    fn dirs(
        &mut self,
        mut pos: Pos,
        mut steps: VecDeque<Step>,
        keep: usize,
    ) -> Result<Reached, WalkError> {
        if pos.root.is_some() {
            pos = run_beneath(pos, &mut steps, keep);
        }
        while steps.len() > keep {
            match steps.pop_front() {
                Some(Step::Up) => {
                    return Ok(Reached::Restart(joined(parent(&pos.real), &steps)));
                }
                Some(Step::Name(name)) => {
                    let entry = Entry::new(pos.dir.clone(), name.clone());
                    match entry.open_dir() {
                        Ok(dir) => {
                            pos = Pos {
                                dir: Arc::new(dir),
                                real: pos.real.join(&name),
                                root: pos.root,
                            };
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            return Ok(Reached::Missing {
                                pos,
                                name,
                                rest: steps,
                            })
                        }
                        Err(e) => {
                            let kind = entry
                                .kind()
                                .map_err(|e| io_error(pos.real.join(&name), e))?;
                            match kind {
                                Kind::Symlink => {
                                    let next = self.follow(&pos, &entry, &steps)?;
                                    return Ok(Reached::Restart(next));
                                }
                                // Not there, whatever error the open gave
                                // (Windows' differ from Unix's).
                                Kind::Missing => {
                                    return Ok(Reached::Missing {
                                        pos,
                                        name,
                                        rest: steps,
                                    })
                                }
                                _ => return Err(io_error(pos.real.join(&name), e)),
                            }
                        }
                    }
                }
                None => break,
            }
        }
        Ok(Reached::Dir(pos, steps))
    }

    fn file(&mut self, mut abs: PathBuf, link: FinalLink) -> Result<Walked, WalkError> {
        loop {
            let (pos, steps) = self.start(&abs)?;
            let (pos, name, missing) = match self.dirs(pos, steps, 1)? {
                Reached::Restart(next) => {
                    abs = next;
                    continue;
                }
                Reached::Missing { pos, name, rest } => {
                    let mut names = vec![name];
                    for step in rest {
                        match step {
                            Step::Name(name) => names.push(name),
                            Step::Up => return Err(WalkError::DotDotInMissingPart),
                        }
                    }
                    let name = names.pop().expect("the file name is among them");
                    (pos, name, names)
                }
                Reached::Dir(pos, mut rest) => match rest.pop_front() {
                    Some(Step::Name(name)) => {
                        let entry = Entry::new(pos.dir.clone(), name.clone());
                        if link == FinalLink::Follow {
                            let kind = entry
                                .kind()
                                .map_err(|e| io_error(pos.real.join(&name), e))?;
                            if kind == Kind::Symlink {
                                abs = self.follow(&pos, &entry, &rest)?;
                                continue;
                            }
                        }
                        (pos, name, Vec::new())
                    }
                    // `dir/..` or a root itself: a directory, not a file.
                    Some(Step::Up) => return Err(not_a_file(parent(&pos.real))),
                    None => return Err(not_a_file(pos.real)),
                },
            };
            let mut real = pos.real.clone();
            real.extend(&missing);
            real.push(&name);
            return Ok(Walked {
                target: Target {
                    base: pos.dir,
                    missing,
                    name,
                    real,
                },
                root: pos.root,
            });
        }
    }
}

fn not_a_file(real: PathBuf) -> WalkError {
    io_error(
        real,
        io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"),
    )
}

/// The parent of a real path (`/` for `/`).
fn parent(real: &Path) -> PathBuf {
    real.parent().unwrap_or(real).to_path_buf()
}

/// `pos` moved down the leading run of plain names in `steps` (short of
/// the last `keep`) by one `openat2`, when that works; `pos` as it was
/// otherwise.
fn run_beneath(pos: Pos, steps: &mut VecDeque<Step>, keep: usize) -> Pos {
    let run: PathBuf = steps
        .iter()
        .take(steps.len().saturating_sub(keep))
        .map_while(|s| match s {
            Step::Name(name) => Some(name.as_os_str()),
            Step::Up => None,
        })
        .collect();
    let names = run.components().count();
    if names < 2 {
        return pos;
    }
    match at::open_beneath(&pos.dir, &run) {
        Some(dir) => {
            steps.drain(..names);
            Pos {
                dir: Arc::new(dir),
                real: pos.real.join(run),
                root: pos.root,
            }
        }
        None => pos,
    }
}

/// `base` with `rest` appended.
fn joined(mut base: PathBuf, rest: &VecDeque<Step>) -> PathBuf {
    for step in rest {
        match step {
            Step::Name(name) => base.push(name),
            Step::Up => base.push(".."),
        }
    }
    base
}

// Unix: they make symlinks, FIFOs and modes.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use cogni_sandbox::Workspace;
    use std::os::unix::fs::symlink;

    /// A workspace `ws` (pinned, with the writable root `extra`) and a
    /// directory `out` beside it.
    fn setup() -> (tempfile::TempDir, PathBuf, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        for dir in ["ws/a/b", "extra", "out"] {
            std::fs::create_dir_all(top.join(dir)).unwrap();
        }
        let ws = Workspace::pin(&top.join("ws"), &[top.join("extra")]);
        (tmp, top, ws)
    }

    fn real(ws: &Workspace, path: &Path, link: FinalLink) -> (PathBuf, Option<usize>) {
        let walked = walk(ws.roots().unwrap(), path, link).unwrap();
        (walked.target.real().to_path_buf(), walked.root)
    }

    #[test]
    fn symlinks_are_resolved_here_and_roots_are_tracked() {
        let (_tmp, top, ws) = setup();
        let w = top.join("ws");
        symlink("a/b", w.join("in")).unwrap();
        symlink("../extra", w.join("rel-extra")).unwrap();
        symlink(top.join("out"), w.join("abs-out")).unwrap();
        symlink("b/../../a/b/f", w.join("a/chain")).unwrap();
        let follow = FinalLink::Follow;
        assert_eq!(
            real(&ws, &w.join("in/x"), follow),
            (w.join("a/b/x"), Some(0))
        );
        assert_eq!(
            real(&ws, &w.join("rel-extra/x"), follow),
            (top.join("extra/x"), Some(1))
        );
        assert_eq!(
            real(&ws, &w.join("abs-out/x"), follow),
            (top.join("out/x"), None)
        );
        assert_eq!(
            real(&ws, &w.join("a/chain"), follow),
            (w.join("a/b/f"), Some(0))
        );
        // Kept, the last link is the entry itself.
        assert_eq!(
            real(&ws, &w.join("a/chain"), FinalLink::Keep),
            (w.join("a/chain"), Some(0))
        );
        // `..` leaves the workspace; missing directories are reported.
        assert_eq!(
            real(&ws, &w.join("../out/new/dir/f"), follow),
            (top.join("out/new/dir/f"), None)
        );
        let walked = walk(ws.roots().unwrap(), &w.join("a/new/dir/f"), follow).unwrap();
        assert_eq!(walked.target.real(), w.join("a/new/dir/f"));
        assert!(walked.target.entry().is_none());
        assert!(matches!(
            walk(ws.roots().unwrap(), &w.join("new/../../out/x"), follow),
            Err(WalkError::DotDotInMissingPart)
        ));
    }

    #[test]
    fn loops_and_files_on_the_way_are_errors() {
        let (_tmp, top, ws) = setup();
        let w = top.join("ws");
        symlink("loop2", w.join("loop1")).unwrap();
        symlink("loop1", w.join("loop2")).unwrap();
        std::fs::write(w.join("file"), "").unwrap();
        let roots = ws.roots().unwrap();
        let e = walk(roots, &w.join("loop1/x"), FinalLink::Follow).unwrap_err();
        assert!(
            matches!(&e, WalkError::Io { source, .. } if source.raw_os_error() == Some(libc::ELOOP)),
            "{e}"
        );
        let e = walk(roots, &w.join("file/x"), FinalLink::Follow).unwrap_err();
        assert!(e.to_string().contains("Not a directory"), "{e}");
        let e = walk(roots, &w.join("a/.."), FinalLink::Follow).unwrap_err();
        assert!(e.to_string().contains("it is a directory"), "{e}");
        let (dir, root) = walk_dir(roots, &w.join("a/b/..")).unwrap();
        assert_eq!((dir, root), (w.join("a"), Some(0)));
        assert!(walk_dir(roots, &w.join("missing")).is_err());
    }

    #[test]
    fn a_replaced_root_is_walked_from_where_it_was_pinned() {
        let (_tmp, top, ws) = setup();
        // The root `extra` is moved away and a symlink put in its place:
        // its path still leads to the directory pinned.
        std::fs::rename(top.join("extra"), top.join("moved")).unwrap();
        symlink(top.join("out"), top.join("extra")).unwrap();
        let walked = walk(ws.roots().unwrap(), &top.join("extra/x"), FinalLink::Follow).unwrap();
        assert_eq!(walked.root, Some(1));
        let mut created = Vec::new();
        let entry = walked.target.make_parents(&mut created).unwrap();
        entry.create_new(0o600).unwrap();
        assert!(top.join("moved/x").exists());
        assert!(!top.join("out/x").exists());
    }
}
