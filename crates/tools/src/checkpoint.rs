//! Snapshots of a workspace as git objects, for undoing what a turn did.
//!
//! In a git repository a snapshot is a commit of the working tree with
//! its untracked files (not the ignored ones), built in a private index
//! (a copy of the repository's, so unchanged files are not read again)
//! and kept under `refs/cogni/checkpoints/SESSION`: never on a branch, in
//! the user's index or stash, and HEAD does not move. Elsewhere the
//! workspace gets a shadow repository of its own under cogni's home
//! (`checkpoints/NAME.git`), which sees the workspace as its work tree.
//!
//! Every git command runs through [`crate::git::Git`], neutralised: the
//! repository (its config, hooks and attributes) cannot make it run a
//! program. Line endings are stored as they are on disk
//! (`core.autocrlf=false`); a repository's own `.gitattributes` still
//! applies as it does to its commits.

use crate::git::Git;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

#[cfg(target_os = "linux")]
mod journal;

/// Without inotify there is no journal: every snapshot looks at the
/// whole workspace.
#[cfg(not(target_os = "linux"))]
mod journal {
    pub(crate) enum Journal {}

    impl Journal {
        pub(crate) fn start(_: &std::path::Path, _: Vec<String>) -> Option<Journal> {
            None
        }

        pub(crate) fn drain(&mut self) -> Option<super::Changed> {
            match *self {}
        }

        pub(crate) fn blocked(&self) -> Option<&std::path::Path> {
            match *self {}
        }
    }
}

use journal::Journal;

/// What may differ from the last snapshot.
#[derive(Debug, PartialEq, Eq)]
enum Changed {
    /// Only these paths, relative to the workspace (files and
    /// directories, some of them gone). Only a journal says so (Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Paths(BTreeSet<PathBuf>),
    /// Anything: look at the whole workspace.
    Everything,
}

/// Days a session's snapshots are kept after its last one (then the ref
/// goes and git's gc may collect them).
pub const KEEP_DAYS: u64 = 30;

/// The largest repository index copied to start the private one from
/// (an index of a million files is about 100 MB).
const INDEX_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Bytes kept of a listing of paths or a diff.
const LISTING_BYTES: usize = 64 * 1024 * 1024;

/// Patterns a shadow repository never snapshots (a plain directory has
/// no `.gitignore` that names them): dependency trees and build output.
const SHADOW_EXCLUDES: &str =
    "node_modules/\ntarget/\n.venv/\nvenv/\n__pycache__/\n.cache/\ndist/\nbuild/\n.DS_Store\n";

/// Settings of every snapshot and restore: bytes as they are on disk, no
/// advice printed about nested repositories, and no checksum over the
/// private index (only this git reads it; hashing its 700 KB for 10,000
/// files on each read and write was 9 of a snapshot's 45 ms).
const SNAPSHOT_CONFIG: &[(&str, &str)] = &[
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("advice.addEmbeddedRepo", "false"),
    ("index.skipHash", "true"),
];

/// Where a workspace's snapshots live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The workspace: what is snapshot and restored (a repository's
    /// subdirectory limits both to itself).
    pub workspace: PathBuf,
    /// The shadow repository's git directory, when the workspace is in
    /// no repository of its own.
    pub shadow: Option<PathBuf>,
    /// The ref that keeps the snapshots, `refs/cogni/checkpoints/ID`.
    pub reference: String,
}

/// A path that differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// `A` added, `D` deleted, `M` modified, `T` type changed (as from the
    /// first snapshot to the second).
    pub status: char,
    /// Relative to the workspace.
    pub path: String,
}

/// A workspace's snapshots for one session.
pub struct Snapshots {
    location: Location,
    /// Holds the private index.
    scratch: tempfile::TempDir,
    /// The last snapshot: its commit and tree.
    last: Option<(String, String)>,
    /// The repository's config file, and git opened (its filters read)
    /// when the file was as stamped: opened again when the file changes.
    config: PathBuf,
    git: Option<(Git, Option<Stamp>)>,
    /// What the kernel says changed, once [`Snapshots::watch`] started it.
    journal: Option<Journal>,
    /// The private index may not match the last snapshot (a snapshot
    /// failed half-way): the next one looks at everything.
    unsure: bool,
}

/// A file's modification time and size, to notice that it changed.
type Stamp = (std::time::SystemTime, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl Snapshots {
    /// The snapshots of session `id` in `workspace`: its repository's, or
    /// a shadow repository under `shadow_root` (created when missing).
    pub async fn open(workspace: &Path, shadow_root: &Path, id: &str) -> Result<Self, String> {
        let reference = reference(id)?;
        let probe = Git::open(workspace, &[]).await?;
        let shadow = match probe.run(&["rev-parse", "--is-inside-work-tree"]).await {
            Ok(inside) if inside == "true" => None,
            _ => Some(shadow_repository(workspace, shadow_root).await?),
        };
        let mut snapshots = Self::at(Location {
            workspace: workspace.to_path_buf(),
            shadow,
            reference,
        })
        .await?;
        snapshots.prune(KEEP_DAYS).await?;
        Ok(snapshots)
    }

    /// Drop the refs of other sessions' snapshots whose newest is older
    /// than `days`, so their objects can be collected by git's gc.
    async fn prune(&mut self, days: u64) -> Result<(), String> {
        let own = self.location.reference.clone();
        let git = self.git().await?;
        let listed = git
            .run(&[
                "for-each-ref",
                "--format=%(refname) %(committerdate:unix)",
                "refs/cogni/checkpoints/",
            ])
            .await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let old = stale_refs(&listed, &own, now.saturating_sub(days * 86_400));
        if old.is_empty() {
            return Ok(());
        }
        let input: String = old.iter().map(|r| format!("delete {r}\n")).collect();
        git.run_bytes(&["update-ref", "--stdin"], Some(input.into_bytes()))
            .await
            .map(|_| ())
    }

    /// The snapshots at `location` (an earlier session's, to restore them).
    pub async fn at(location: Location) -> Result<Self, String> {
        let scratch = tempfile::Builder::new()
            .prefix("cogni-checkpoint-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for the checkpoint index: {e}"))?;
        let mut snapshots = Snapshots {
            location,
            scratch,
            last: None,
            config: PathBuf::new(),
            git: None,
            journal: None,
            unsure: false,
        };
        let git = snapshots.git().await?.clone();
        let paths = git
            .run(&["rev-parse", "--git-path", "index", "--git-path", "config"])
            .await?;
        let mut paths = paths.lines().map(|p| snapshots.location.workspace.join(p));
        let (index, config) = (paths.next(), paths.next());
        snapshots.config = config.unwrap_or_default();
        snapshots.git = Some((git.clone(), stamp(&snapshots.config)));
        // New snapshots continue the ref's chain (a resumed session's), so
        // none of the earlier ones becomes unreachable.
        let tip = format!("{}^{{commit}}", snapshots.location.reference);
        if let Ok(commit) = git.run(&["rev-parse", "--verify", "--quiet", &tip]).await {
            let tree = git
                .run(&["rev-parse", &format!("{commit}^{{tree}}")])
                .await?;
            snapshots.last = Some((commit, tree));
        }
        if let Some(index) = index.filter(|_| snapshots.location.shadow.is_none()) {
            // Start from the repository's index: its stat data spares
            // reading every unchanged file again. The repository names
            // it: a FIFO, a device or a huge file is not read (the
            // private index then starts empty, and the first snapshot
            // reads every file once).
            let copied = tokio::task::spawn_blocking(move || {
                crate::fs::read_limited(&index, INDEX_MAX_BYTES).ok()
            })
            .await
            .ok()
            .flatten();
            if let Some(bytes) = copied {
                std::fs::write(snapshots.index(), bytes)
                    .map_err(|e| format!("cannot write the checkpoint index: {e}"))?;
            }
        }
        Ok(snapshots)
    }

    /// Where these snapshots live.
    pub fn location(&self) -> &Location {
        &self.location
    }

    fn index(&self) -> PathBuf {
        self.scratch.path().join("index")
    }

    /// Neutralised git in the workspace, on the shadow repository if there
    /// is one, with the private index; the repository's filters are read
    /// again when its config file changed.
    async fn git(&mut self) -> Result<&Git, String> {
        let now = stamp(&self.config);
        if self.git.as_ref().is_none_or(|(_, then)| *then != now) {
            let private = self.index();
            let mut vars: Vec<(&str, &Path)> = vec![("GIT_INDEX_FILE", &private)];
            if let Some(dir) = &self.location.shadow {
                vars.push(("GIT_DIR", dir));
                vars.push(("GIT_WORK_TREE", &self.location.workspace));
            }
            let mut git = Git::open(&self.location.workspace, &vars).await?;
            for (key, value) in SNAPSHOT_CONFIG {
                git = git.with_config(key, value);
            }
            self.git = Some((git.with_capture(LISTING_BYTES), now));
        }
        Ok(&self.git.as_ref().expect("opened above").0)
    }

    /// Watch the workspace, so that later snapshots look only at the
    /// paths that changed (Linux; elsewhere, or when the tree has too many
    /// directories, every snapshot looks at everything).
    pub async fn watch(&mut self) {
        let root = self.location.workspace.clone();
        let excluded: Vec<String> = match self.location.shadow {
            Some(_) => SHADOW_EXCLUDES
                .lines()
                .filter_map(|l| l.strip_suffix('/'))
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
        self.journal = tokio::task::spawn_blocking(move || Journal::start(&root, excluded))
            .await
            .ok()
            .flatten();
    }

    /// Snapshot the workspace now; `message` describes it. The commit id
    /// (the last one again when nothing changed).
    pub async fn take(&mut self, message: &str) -> Result<String, String> {
        let taken = self.snapshot(message).await;
        self.unsure = taken.is_err();
        taken
    }

    async fn snapshot(&mut self, message: &str) -> Result<String, String> {
        let git = self.git().await?.clone();
        let changed = match self.changed().await {
            _ if self.unsure => Changed::Everything,
            changed => changed,
        };
        if let Some(bad) = self.journal.as_ref().and_then(Journal::blocked) {
            return Err(format!(
                "{} is not a regular file within the size limit, and git would wait on it \
                 or read it without end: no snapshot is taken while it is there",
                bad.display()
            ));
        }
        match changed {
            Changed::Paths(paths) if paths.is_empty() => {
                if let Some((commit, _)) = &self.last {
                    return Ok(commit.clone());
                }
            }
            Changed::Paths(paths) => {
                if !self.add_paths(&git, paths).await? {
                    add_everything(&git).await?;
                }
            }
            Changed::Everything => add_everything(&git).await?,
        }
        let tree = git.run(&["write-tree"]).await?;
        if let Some((commit, last_tree)) = &self.last {
            if *last_tree == tree {
                return Ok(commit.clone());
            }
        }
        let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
        let parent = self.last.as_ref().map(|(c, _)| c.clone());
        if let Some(parent) = &parent {
            args.extend(["-p", parent.as_str()]);
        }
        let commit = git.run(&args).await?;
        git.run(&["update-ref", &self.location.reference, &commit])
            .await?;
        self.last = Some((commit.clone(), tree));
        Ok(commit)
    }

    /// What the journal says changed since the last snapshot (everything,
    /// without one).
    async fn changed(&mut self) -> Changed {
        let Some(mut journal) = self.journal.take() else {
            return Changed::Everything;
        };
        let drained = tokio::task::spawn_blocking(move || {
            let changed = journal.drain();
            changed.map(|changed| (journal, changed))
        })
        .await;
        match drained {
            Ok(Some((journal, changed))) => {
                self.journal = Some(journal);
                changed
            }
            _ => Changed::Everything,
        }
    }

    /// Put `paths` (relative to the workspace) into the private index as
    /// they are now: those still there added, the others removed. False
    /// when git refused the list (a path inside a nested repository):
    /// then everything is looked at.
    async fn add_paths(&self, git: &Git, paths: BTreeSet<PathBuf>) -> Result<bool, String> {
        let workspace = &self.location.workspace;
        let (present, gone): (Vec<PathBuf>, Vec<PathBuf>) = paths
            .into_iter()
            .partition(|p| std::fs::symlink_metadata(workspace.join(p)).is_ok());
        let commands: [(&[&str], Vec<PathBuf>); 2] = [
            (
                &["rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch"],
                gone,
            ),
            (&["add", "--all", "--ignore-errors"], present),
        ];
        for (command, paths) in commands {
            if paths.is_empty() {
                continue;
            }
            let mut args = vec!["--literal-pathspecs"];
            args.extend(command);
            args.extend(["--pathspec-from-file=-", "--pathspec-file-nul"]);
            let mut list = Vec::new();
            for path in &paths {
                list.extend_from_slice(path.as_os_str().as_encoded_bytes());
                list.push(0);
            }
            let stderr = git.run_lenient(&args, Some(list)).await?;
            if stderr.contains("fatal:") {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The paths of the workspace that differ from snapshot `from` to
    /// snapshot `to`.
    pub async fn changes(&mut self, from: &str, to: &str) -> Result<Vec<Change>, String> {
        let git = self.git().await?;
        let out = git
            .run_bytes(
                &[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    "--name-status",
                    "--relative",
                    from,
                    to,
                ],
                None,
            )
            .await?;
        Ok(parse_name_status(&out))
    }

    /// The unified diff from snapshot `from` to `to`, with a stat above
    /// it (no colours: the files' own bytes are in it).
    pub async fn diff(&mut self, from: &str, to: &str) -> Result<String, String> {
        let git = self.git().await?;
        let out = git
            .run_bytes(
                &[
                    "diff",
                    "--no-color",
                    "--no-renames",
                    "--relative",
                    "--stat",
                    "--patch",
                    from,
                    to,
                ],
                None,
            )
            .await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Put `paths` of the workspace back as they are in snapshot `to`: a
    /// path `to` does not have is removed (and directories left empty by
    /// that), the others are written from `to`.
    pub async fn restore(&mut self, to: &str, paths: &[String]) -> Result<(), String> {
        let workspace = self.location.workspace.clone();
        let target = self.scratch.path().join("restore-index");
        let _ = std::fs::remove_file(&target);
        let git = self.git().await?.clone().with_index(&target);
        git.run(&["read-tree", to]).await?;
        let listed = git.run_bytes(&["ls-files", "-z", "--", "."], None).await?;
        let present: std::collections::HashSet<&[u8]> = listed
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .collect();
        let mut write = Vec::new();
        for path in paths {
            let relative = safe_relative(path)?;
            if present.contains(path.as_bytes()) {
                write.extend_from_slice(path.as_bytes());
                write.push(0);
            } else {
                remove(&workspace, &relative)?;
            }
        }
        if !write.is_empty() {
            git.run_bytes(&["checkout-index", "-f", "-z", "--stdin"], Some(write))
                .await?;
        }
        Ok(())
    }
}

/// Add every file of the workspace to the private index (a file that
/// cannot be read is left out, and stays as it is on undo).
async fn add_everything(git: &Git) -> Result<(), String> {
    git.run_lenient(&["add", "--all", "--ignore-errors", "--", "."], None)
        .await
        .map(|_| ())
}

/// The refs of `listed` (`for-each-ref`'s `REF UNIXTIME` lines) last
/// written before `cutoff`, `own` left out.
fn stale_refs<'a>(listed: &'a str, own: &str, cutoff: u64) -> Vec<&'a str> {
    listed
        .lines()
        .filter_map(|line| line.rsplit_once(' '))
        .filter(|(name, time)| {
            *name != own
                && name.starts_with("refs/cogni/checkpoints/")
                && time.parse::<u64>().is_ok_and(|t| t < cutoff)
        })
        .map(|(name, _)| name)
        .collect()
}

/// `refs/cogni/checkpoints/ID`, for a session id git accepts in a ref.
fn reference(id: &str) -> Result<String, String> {
    let valid = !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if valid {
        Ok(format!("refs/cogni/checkpoints/{id}"))
    } else {
        Err(format!("`{id}` cannot name a checkpoint ref"))
    }
}

/// The shadow repository of `workspace` under `root`, made (with its
/// excludes) when it is not there yet.
async fn shadow_repository(workspace: &Path, root: &Path) -> Result<PathBuf, String> {
    let dir = root.join(format!("{}.git", shadow_name(workspace)));
    if !dir.join("HEAD").is_file() {
        std::fs::create_dir_all(root)
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        let git = Git::open(root, &[]).await?;
        let shown = dir.to_string_lossy().into_owned();
        git.run(&["init", "--quiet", "--bare", &shown]).await?;
        let info = dir.join("info");
        std::fs::create_dir_all(&info)
            .and_then(|()| std::fs::write(info.join("exclude"), SHADOW_EXCLUDES))
            .map_err(|e| format!("cannot write {}: {e}", info.display()))?;
    }
    Ok(dir)
}

/// A readable, unique name for a workspace's shadow repository: the last
/// components of its path and a hash of the whole.
fn shadow_name(workspace: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    workspace.hash(&mut hasher);
    let tail: Vec<String> = workspace
        .components()
        .rev()
        .take(2)
        .filter_map(|c| match c {
            Component::Normal(s) => Some(
                s.to_string_lossy()
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .take(40)
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    let mut name: Vec<String> = tail.into_iter().rev().collect();
    name.push(format!("{:016x}", hasher.finish()));
    name.join("-")
}

/// `diff-tree -z --name-status` output as changes.
fn parse_name_status(out: &[u8]) -> Vec<Change> {
    let fields: Vec<&[u8]> = out.split(|b| *b == 0).collect();
    fields
        .chunks(2)
        .filter(|pair| pair.len() == 2 && !pair[0].is_empty())
        .map(|pair| Change {
            status: pair[0][0] as char,
            path: String::from_utf8_lossy(pair[1]).into_owned(),
        })
        .collect()
}

/// `path` (from git) as a relative path with only normal components.
fn safe_relative(path: &str) -> Result<PathBuf, String> {
    let relative = PathBuf::from(path);
    if path.is_empty()
        || !relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(format!(
            "refusing to restore `{path}`: not a plain relative path"
        ));
    }
    Ok(relative)
}

/// Remove `relative` from `workspace` (a file or a symbolic link, never
/// what a link points at; a directory, such as a nested repository, is
/// left), then the directories that left empty. A parent that is a
/// symbolic link is refused.
fn remove(workspace: &Path, relative: &Path) -> Result<(), String> {
    let mut walked = workspace.to_path_buf();
    let parents: Vec<&std::ffi::OsStr> = relative
        .parent()
        .into_iter()
        .flat_map(|p| p.iter())
        .collect();
    for part in &parents {
        walked.push(part);
        match std::fs::symlink_metadata(&walked) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "refusing to remove {}: {} is a symbolic link",
                    relative.display(),
                    walked.display()
                ))
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    let path = workspace.join(relative);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => std::fs::remove_file(&path)
            .map_err(|e| format!("cannot remove {}: {e}", path.display()))?,
        Err(_) => return Ok(()),
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == workspace || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}

// Unix: they make symlinks, FIFOs and modes.
#[cfg(all(test, unix))]
mod tests;
