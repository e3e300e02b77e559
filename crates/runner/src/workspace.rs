//! The directory an attempt runs in: the source itself, a fresh copy of it,
//! or a detached git worktree of its HEAD, so attempts cannot disturb each
//! other (or the repository).

use super::command::git;
use cogni_spec::tasks::WorkspaceMode;
pub(crate) use cogni_tools::git::remove_dir;
use cogni_tools::git::{worktree_add, worktree_remove};
use ignore::WalkBuilder;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Most threads copying files at once.
const COPY_THREADS: usize = 4;

/// A workspace for one attempt; [`Workspace::remove`] cleans it up.
#[derive(Debug)]
pub struct Workspace {
    /// Where the agent, setup and checks run.
    pub cwd: PathBuf,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    InPlace,
    Copy { root: PathBuf },
    Worktree { repo: PathBuf, root: PathBuf },
}

impl Workspace {
    /// Make the workspace for `source` at `dest` (which must not exist);
    /// `exclude` lists directories a copy leaves out (e.g. the results).
    pub async fn create(
        mode: WorkspaceMode,
        source: &Path,
        dest: &Path,
        exclude: &[PathBuf],
    ) -> Result<Workspace, String> {
        match mode {
            WorkspaceMode::InPlace => Ok(Workspace {
                cwd: source.to_path_buf(),
                kind: Kind::InPlace,
            }),
            WorkspaceMode::Copy => {
                let (from, to, exclude) =
                    (source.to_path_buf(), dest.to_path_buf(), exclude.to_vec());
                tokio::task::spawn_blocking(move || copy_tree(&from, &to, &exclude))
                    .await
                    .map_err(|e| format!("copying the workspace failed: {e}"))?
                    .map_err(|e| {
                        format!(
                            "cannot copy {} to {}: {e}",
                            source.display(),
                            dest.display()
                        )
                    })?;
                Ok(Workspace {
                    cwd: dest.to_path_buf(),
                    kind: Kind::Copy {
                        root: dest.to_path_buf(),
                    },
                })
            }
            WorkspaceMode::Worktree => {
                let top = git(source, &["rev-parse", "--show-toplevel"])
                    .await
                    .map_err(|e| format!("workspace = \"worktree\" needs a git repository: {e}"))?;
                let repo = PathBuf::from(top);
                let inside = source
                    .canonicalize()
                    .ok()
                    .and_then(|s| {
                        let top = repo.canonicalize().ok()?;
                        s.strip_prefix(&top).ok().map(Path::to_path_buf)
                    })
                    .unwrap_or_default();
                worktree_add(&repo, dest, "HEAD").await?;
                Ok(Workspace {
                    cwd: dest.join(inside),
                    kind: Kind::Worktree {
                        repo,
                        root: dest.to_path_buf(),
                    },
                })
            }
        }
    }

    /// Remove a copy or worktree; an in-place workspace stays as it is.
    /// A copy is removed in the background, off the attempt's time: the
    /// returned task finishes when it is gone.
    pub async fn remove(self) -> Result<Option<Removal>, String> {
        match self.kind {
            Kind::InPlace => Ok(None),
            Kind::Copy { root } => Ok(Some(tokio::spawn(remove_dir(root)))),
            Kind::Worktree { repo, root } => {
                worktree_remove(&repo, &root).await?;
                Ok(None)
            }
        }
    }
}

/// A workspace being removed in the background.
pub type Removal = tokio::task::JoinHandle<Result<(), String>>;

/// What [`copy_tree`] copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied {
    /// Regular files copied.
    pub files: usize,
    /// Directories created.
    pub dirs: usize,
    /// Symlinks recreated (not followed).
    pub symlinks: usize,
}

/// Copy the tree at `from` to `to` (created; must not exist), leaving out
/// `.git`, what git ignores (`.gitignore`, `.git/info/exclude`) and the
/// directories in `exclude`. Symlinks are copied as links; files keep their
/// permissions (less the umask, as with `cp -r`). Files are copied by
/// several threads. Blocking.
pub fn copy_tree(from: &Path, to: &Path, exclude: &[PathBuf]) -> io::Result<Copied> {
    let from = from.canonicalize()?;
    let walker = walk(&from, exclude);
    std::fs::create_dir_all(to.parent().unwrap_or(Path::new("/")))?;
    std::fs::create_dir(to)?;
    let mut copied = Copied::default();
    let mut files = Vec::new();
    for entry in walker {
        let entry = entry.map_err(io::Error::other)?;
        let rel = match entry.path().strip_prefix(&from) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
            _ => continue,
        };
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let target = to.join(&rel);
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copied.dirs += 1;
        } else if kind.is_symlink() {
            copy_symlink(entry.path(), &target)?;
            copied.symlinks += 1;
        } else if kind.is_file() {
            let permissions = entry.metadata().map_err(io::Error::other)?.permissions();
            files.push((entry.into_path(), target, permissions));
        }
    }
    copied.files = files.len();
    copy_files(&files)?;
    Ok(copied)
}

/// What a copy of `from` takes: everything but `.git`, what git ignores
/// and `exclude`, without following links.
fn walk(from: &Path, exclude: &[PathBuf]) -> ignore::Walk {
    let exclude: Vec<PathBuf> = exclude
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    WalkBuilder::new(from)
        .hidden(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && !exclude.iter().any(|x| x.as_path() == e.path())
        })
        .build()
}

/// Bytes of the files a copy of `from` would take, counted up to just
/// past `limit` (a large tree is not walked to its end).
fn copy_size(from: &Path, exclude: &[PathBuf], limit: u64) -> u64 {
    let mut total = 0u64;
    for entry in walk(from, exclude).filter_map(Result::ok) {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            total += entry.metadata().map_or(0, |m| m.len());
            if total > limit {
                break;
            }
        }
    }
    total
}

/// Largest copy that goes to memory.
const TMPFS_MAX_COPY: u64 = 256 * 1024 * 1024;

/// Where a run makes its copies and worktrees. `configured` (the caller's
/// choice) wins; else, unless `$TMPDIR` says otherwise, /dev/shm when it
/// is a tmpfs with room for four times `jobs` copies of the largest source
/// and that source is at most 256 MiB: creating and removing thousands of
/// small files there is several times faster than on a disk. Else the
/// temp directory. Blocking (walks the sources).
pub fn scratch_root(
    configured: Option<&Path>,
    sources: &[PathBuf],
    exclude: &[PathBuf],
    jobs: usize,
) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_path_buf();
    }
    let temp = std::env::temp_dir();
    let shm = Path::new("/dev/shm");
    if std::env::var_os("TMPDIR").is_some() || sources.is_empty() {
        return temp;
    }
    let Some(free) = tmpfs_free_bytes(shm) else {
        return temp;
    };
    let largest = sources
        .iter()
        .map(|s| copy_size(s, exclude, TMPFS_MAX_COPY))
        .max()
        .unwrap_or(0);
    if largest <= TMPFS_MAX_COPY && largest.saturating_mul(4 * jobs.max(1) as u64) <= free {
        shm.to_path_buf()
    } else {
        temp
    }
}

/// A symlink at `to` with the target of the one at `from`.
#[cfg(unix)]
fn copy_symlink(from: &Path, to: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
}

/// A symlink at `to` with the target of the one at `from` (a directory
/// link when that target is a directory, as Windows distinguishes them).
#[cfg(windows)]
fn copy_symlink(from: &Path, to: &Path) -> io::Result<()> {
    let target = std::fs::read_link(from)?;
    if std::fs::metadata(from).is_ok_and(|m| m.is_dir()) {
        std::os::windows::fs::symlink_dir(target, to)
    } else {
        std::os::windows::fs::symlink_file(target, to)
    }
}

/// Free bytes on `dir` when it is a writable tmpfs (Linux's: elsewhere
/// there is none to use).
#[cfg(not(target_os = "linux"))]
fn tmpfs_free_bytes(_dir: &Path) -> Option<u64> {
    None
}

/// Free bytes on `dir` when it is a writable tmpfs.
#[cfg(target_os = "linux")]
fn tmpfs_free_bytes(dir: &Path) -> Option<u64> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs is plain data; the call fills it for a valid C string.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `fs` is writable.
    if unsafe { libc::statfs(path.as_ptr(), &mut fs) } != 0 {
        return None;
    }
    // SAFETY: as above; access(2) only reads the path.
    let writable = unsafe { libc::access(path.as_ptr(), libc::W_OK) } == 0;
    (fs.f_type as i64 == TMPFS_MAGIC && writable).then(|| fs.f_bavail as u64 * fs.f_bsize as u64)
}

/// Copy `(from, to, permissions)` files on a few threads; the first error
/// wins.
fn copy_files(files: &[(PathBuf, PathBuf, Permissions)]) -> io::Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, COPY_THREADS)
        .min(files.len().div_ceil(64).max(1));
    let chunk = files.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    part.iter().try_for_each(|(from, to, permissions)| {
                        copy_file(from, to, permissions, &mut buf)
                    })
                })
            })
            .collect();
        // The scope joins every thread; the first error is reported.
        workers.into_iter().try_for_each(|w| {
            w.join()
                .unwrap_or_else(|_| Err(io::Error::other("a copy thread panicked")))
        })
    })
}

/// Copy one file to a new path with `permissions` (its mode less the
/// umask, as `cp` does; on Windows its read-only flag). Fewer system calls
/// than `std::fs::copy`, which matters when thousands of small files are
/// copied for every attempt.
fn copy_file(from: &Path, to: &Path, permissions: &Permissions, buf: &mut [u8]) -> io::Result<()> {
    let mut input = File::open(from)?;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(permissions.mode() & 0o7777);
    }
    let mut output = options.open(to)?;
    loop {
        match input.read(buf) {
            Ok(0) => break,
            Ok(n) => output.write_all(&buf[..n])?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    #[cfg(windows)]
    if permissions.readonly() {
        output.set_permissions(permissions.clone())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_go_to_tmpfs_only_when_small_and_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let configured = dir.path().join("mine");
        assert_eq!(scratch_root(Some(&configured), &[], &[], 1), configured);
        let temp = std::env::temp_dir();
        // Over 256 MiB (a sparse file: no disk used): never in memory.
        let big = dir.path().join("big");
        std::fs::create_dir(&big).unwrap();
        File::create(big.join("blob"))
            .unwrap()
            .set_len(300 * 1024 * 1024)
            .unwrap();
        assert_eq!(scratch_root(None, &[big], &[], 1), temp);
        // A small tree goes to /dev/shm when it is a tmpfs with room and
        // $TMPDIR does not say otherwise.
        let small = dir.path().join("small");
        std::fs::create_dir(&small).unwrap();
        std::fs::write(small.join("a.rs"), "fn main() {}").unwrap();
        let shm = Path::new("/dev/shm");
        let expected = if std::env::var_os("TMPDIR").is_none() && tmpfs_free_bytes(shm).is_some() {
            shm.to_path_buf()
        } else {
            temp
        };
        assert_eq!(scratch_root(None, &[small], &[], 4), expected);
    }
    use std::fs;

    #[cfg(unix)]
    #[test]
    fn a_copy_leaves_out_git_ignored_and_excluded_paths() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        fs::create_dir_all(src.join(".git/objects")).unwrap();
        fs::create_dir_all(src.join("target/debug")).unwrap();
        fs::create_dir_all(src.join("lib/deep")).unwrap();
        fs::create_dir_all(src.join(".cogni/results")).unwrap();
        fs::write(src.join(".git/HEAD"), "ref").unwrap();
        fs::write(src.join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::write(src.join("target/debug/big"), "x").unwrap();
        fs::write(src.join("run.log"), "x").unwrap();
        fs::write(src.join(".cogni/results/r.json"), "{}").unwrap();
        fs::write(src.join("lib/deep/a.rs"), "fn a() {}").unwrap();
        fs::write(src.join("script.sh"), "#!/bin/sh").unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(src.join("script.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("lib/deep/a.rs", src.join("link.rs")).unwrap();

        let dst = dir.path().join("work/copy");
        let copied = copy_tree(&src, &dst, &[src.join(".cogni/results")]).unwrap();
        assert_eq!(copied.files, 3, "{copied:?}");
        assert_eq!(copied.symlinks, 1);
        assert_eq!(
            fs::read_to_string(dst.join("lib/deep/a.rs")).unwrap(),
            "fn a() {}"
        );
        assert_eq!(
            fs::read_to_string(dst.join("link.rs")).unwrap(),
            "fn a() {}"
        );
        assert!(fs::symlink_metadata(dst.join("link.rs"))
            .unwrap()
            .file_type()
            .is_symlink());
        let mode = fs::metadata(dst.join("script.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert!(dst.join(".gitignore").exists());
        for gone in [".git", "target", "run.log", ".cogni/results"] {
            assert!(!dst.join(gone).exists(), "{gone} was copied");
        }
        assert!(dst.join(".cogni").is_dir());
        assert!(
            copy_tree(&src, &dst, &[]).is_err(),
            "the destination must be new"
        );
    }

    #[test]
    fn many_files_are_copied_by_several_threads() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        for d in 0..5 {
            fs::create_dir_all(src.join(format!("d{d}"))).unwrap();
            for f in 0..100 {
                fs::write(src.join(format!("d{d}/f{f}")), format!("{d}/{f}")).unwrap();
            }
        }
        let dst = dir.path().join("dst");
        let copied = copy_tree(&src, &dst, &[]).unwrap();
        assert_eq!((copied.files, copied.dirs), (500, 5));
        assert_eq!(fs::read_to_string(dst.join("d4/f99")).unwrap(), "4/99");
    }
}
