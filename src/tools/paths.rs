//! The path policy of every tool.
//!
//! Paths are resolved against the session's cwd ([`resolve`], [`existing`])
//! and shown relative to it ([`display`]).
//!
//! A write is checked in up to two steps. Tools that take paths from a patch
//! or an edit first check the text as the model wrote it ([`model_path`]: no
//! `..`, relative unless allowed). Every write then goes through
//! [`WriteAccess`] (or [`writable_target`], its async form for one path): a
//! read-only sandbox refuses before any I/O; otherwise the nearest existing
//! ancestor is canonicalised (symlinks and `..` resolved by the file system),
//! the part that does not exist yet may not contain `..`, and in
//! workspace-write mode the real path must lie inside cwd or a writable root
//! and must not be a protected path (`.git`, `.cogni`, `cogni.toml`,
//! `AGENTS.md`: see `crate::sandbox::protected`). Containment compares
//! whole path components, so `/w/p-evil` is not inside `/w/p`. The shell's `workdir` must be an existing directory inside the
//! same roots, whatever the mode ([`workspace_dir`]).

use super::ToolContext;
use crate::protocol::{SandboxMode, SandboxPolicy};
use crate::sandbox::protected;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The protected names (for what tells the model about them).
pub use crate::sandbox::protected::{PROTECTED_DIRS, PROTECTED_FILES};

/// Why a path may not be written (or used as a workdir).
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("the sandbox is read-only: no file may be written")]
    ReadOnly,
    #[error("`{shown}` is outside the workspace: it resolves to {}, outside the writable roots ({roots})", real.display())]
    Outside {
        shown: String,
        real: PathBuf,
        roots: String,
    },
    #[error("`{shown}` is protected by the sandbox ({}): .git, .cogni, cogni.toml and AGENTS.md stay read-only in workspace-write mode; ask the user to make this change", part.display())]
    Protected { shown: String, part: PathBuf },
    #[error("`{0}` is run by one of the user's own commands (a hook, a guardrail, an MCP server or the test command), so it stays read-only for this session; ask the user to make this change")]
    Pinned(String),
    #[error("`{0}` has `..` after a directory that does not exist")]
    DotDotInMissingPart(PathBuf),
    #[error("cannot resolve the working directory {cwd}: {source}")]
    Cwd { cwd: PathBuf, source: io::Error },
    #[error("`{path}`: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("path resolution was interrupted")]
    Interrupted,
}

/// The git repository `dir` is in: the nearest ancestor (`dir` itself
/// included) holding a `.git` entry (a directory, or a worktree's file).
pub fn repo_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// `path` made absolute against `cwd` (no file system access).
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    cwd.join(path)
}

/// `path` (default cwd) resolved against `cwd`, or a message saying it does
/// not exist.
pub async fn existing(cwd: &Path, path: Option<&str>) -> Result<PathBuf, String> {
    let resolved = resolve(cwd, path.unwrap_or("."));
    match tokio::fs::metadata(&resolved).await {
        Ok(_) => Ok(resolved),
        Err(e) => Err(format!("`{}`: {e}", display(cwd, &resolved))),
    }
}

/// `path` relative to `cwd` when inside it, for showing to the model.
pub fn display(cwd: &Path, path: &Path) -> String {
    let shown = path.strip_prefix(cwd).unwrap_or(path);
    if shown.as_os_str().is_empty() {
        ".".to_string()
    } else {
        shown.display().to_string()
    }
}

/// Check a file path as the model wrote it. `./` prefixes are dropped; `..`
/// components are refused (they are either escapes or confusing); absolute
/// paths only when `allow_absolute`. The message is for the model.
pub fn model_path(text: &str, allow_absolute: bool) -> Result<PathBuf, String> {
    let path = Path::new(text);
    if text.contains('\0') {
        return Err(format!("`{}` contains a NUL byte", text.escape_debug()));
    }
    if !allow_absolute && (path.has_root() || text.starts_with('\\')) {
        return Err(format!(
            "`{text}` is an absolute path; use a path relative to the working directory"
        ));
    }
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "`{text}` contains `..`; name the file without `..` components"
                ))
            }
            other => clean.push(other),
        }
    }
    if clean.file_name().is_none() {
        return Err(format!("`{text}` does not name a file"));
    }
    Ok(clean)
}

/// What happens to a symlink that is the last component of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalLink {
    /// Resolve it: the file it points to is what gets rewritten.
    Follow,
    /// Keep it: the link itself is created, replaced or removed.
    Keep,
}

/// The write policy of one tool call, resolved once for all its paths.
#[derive(Debug)]
pub struct WriteAccess {
    cwd: PathBuf,
    /// Canonical roots; `None` when every path may be written.
    roots: Option<Vec<PathBuf>>,
    /// The session's pinned files (`crate::sandbox::pinned`).
    pins: std::sync::Arc<crate::protocol::Pins>,
}

impl WriteAccess {
    /// Read-only refuses here, before any I/O.
    pub fn new(cwd: &Path, policy: &SandboxPolicy) -> Result<Self, PathError> {
        let roots = match policy.mode {
            SandboxMode::ReadOnly => return Err(PathError::ReadOnly),
            SandboxMode::DangerFullAccess => None,
            SandboxMode::WorkspaceWrite => Some(workspace_roots(cwd, policy)?),
        };
        Ok(WriteAccess {
            cwd: cwd.to_path_buf(),
            roots,
            pins: policy.pins.clone(),
        })
    }

    /// The real path a write to `path` (relative to cwd, or absolute) lands
    /// on, or why it may not happen. Write there, not to `path`. Blocking.
    pub fn resolve(&self, path: &Path, link: FinalLink) -> Result<PathBuf, PathError> {
        let joined = self.cwd.join(path);
        let real = match (link, joined.parent(), joined.file_name()) {
            (FinalLink::Keep, Some(parent), Some(name)) => real_path(parent, path)?.join(name),
            _ => real_path(&joined, path)?,
        };
        let Some(roots) = &self.roots else {
            return Ok(real);
        };
        let real = ensure_unprotected(path, ensure_inside(path, real, roots)?, roots)?;
        if self.pins.files.iter().any(|p| p.path == real) {
            return Err(PathError::Pinned(path.display().to_string()));
        }
        Ok(real)
    }
}

/// `real` (inside one of `roots`) unless it is or lies in a protected path.
fn ensure_unprotected(
    shown: &Path,
    real: PathBuf,
    roots: &[PathBuf],
) -> Result<PathBuf, PathError> {
    let protected = roots
        .iter()
        .filter_map(|root| Some((root, real.strip_prefix(root).ok()?)))
        .find_map(|(root, rel)| Some(root.join(protected::protected_part(rel)?)));
    match protected {
        Some(part) => Err(PathError::Protected {
            shown: shown.display().to_string(),
            part,
        }),
        None => Ok(real),
    }
}

/// Where a write to `path` lands, or why it may not happen: [`WriteAccess`]
/// for one path, with a symlink at `path` followed. The returned path has
/// symlinks resolved; write there, not to `path`.
pub async fn writable_target(ctx: &ToolContext, path: &str) -> Result<PathBuf, PathError> {
    let cwd = ctx.cwd.clone();
    let policy = ctx.sandbox.clone();
    let path = PathBuf::from(path);
    blocking(move || WriteAccess::new(&cwd, &policy)?.resolve(&path, FinalLink::Follow)).await
}

/// An existing directory inside the workspace (cwd or a writable root),
/// canonicalised.
pub async fn workspace_dir(ctx: &ToolContext, path: &str) -> Result<PathBuf, PathError> {
    let cwd = ctx.cwd.clone();
    let policy = ctx.sandbox.clone();
    let path = PathBuf::from(path);
    blocking(move || {
        let roots = workspace_roots(&cwd, &policy)?;
        let dir = cwd.join(&path);
        let dir = fs::canonicalize(&dir).map_err(|source| PathError::Io { path: dir, source })?;
        let dir = ensure_inside(&path, dir, &roots)?;
        if !dir.is_dir() {
            return Err(PathError::Io {
                path: dir,
                source: io::Error::from_raw_os_error(libc::ENOTDIR),
            });
        }
        Ok(dir)
    })
    .await
}

/// Canonical cwd and writable roots (the sandbox's definition).
fn workspace_roots(cwd: &Path, policy: &SandboxPolicy) -> Result<Vec<PathBuf>, PathError> {
    crate::sandbox::workspace_roots(cwd, policy).map_err(|source| PathError::Cwd {
        cwd: cwd.to_path_buf(),
        source,
    })
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, PathError> + Send + 'static,
) -> Result<T, PathError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| PathError::Interrupted)?
}

/// Canonicalise the nearest existing ancestor of `path` and append the rest,
/// which may not contain `..` (it does not exist, so `..` would be resolved
/// by whoever creates it, possibly through a symlink). `shown` names the
/// path in errors.
fn real_path(path: &Path, shown: &Path) -> Result<PathBuf, PathError> {
    let components: Vec<Component> = path.components().collect();
    for split in (0..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        if prefix.as_os_str().is_empty() {
            continue;
        }
        match fs::canonicalize(&prefix) {
            Ok(mut base) => {
                for component in &components[split..] {
                    match component {
                        Component::Normal(name) => base.push(name),
                        Component::CurDir => {}
                        _ => return Err(PathError::DotDotInMissingPart(shown.to_path_buf())),
                    }
                }
                return Ok(base);
            }
            Err(e) if is_missing(&e) => continue,
            Err(source) => {
                return Err(PathError::Io {
                    path: prefix,
                    source,
                })
            }
        }
    }
    Err(PathError::Io {
        path: path.to_path_buf(),
        source: io::Error::from(io::ErrorKind::NotFound),
    })
}

fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

/// `real` when it lies inside one of the canonical `roots` (whole
/// components: `Path::starts_with`).
fn ensure_inside(shown: &Path, real: PathBuf, roots: &[PathBuf]) -> Result<PathBuf, PathError> {
    if roots.iter().any(|root| real.starts_with(root)) {
        return Ok(real);
    }
    Err(PathError::Outside {
        shown: shown.display().to_string(),
        real,
        roots: roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::protocol::SandboxPolicy;
    use crate::tools::ToolConfig;
    use std::sync::Arc;

    /// A context rooted at `cwd` with default settings.
    pub(crate) fn ctx(cwd: &Path, mode: SandboxMode) -> ToolContext {
        ToolContext::new(
            cwd.to_path_buf(),
            SandboxPolicy {
                mode,
                ..SandboxPolicy::default()
            },
            Arc::new(ToolConfig::default()),
        )
    }

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("p/sub")).unwrap();
        std::fs::create_dir_all(root.join("p-evil")).unwrap();
        (tmp, root)
    }

    #[tokio::test]
    async fn write_inside_workspace_is_allowed() {
        let (_tmp, root) = setup();
        let c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
        let t = writable_target(&c, "sub/new/file.txt").await.unwrap();
        assert_eq!(t, root.join("p/sub/new/file.txt"));
        let t = writable_target(&c, "./sub/../a.txt").await.unwrap();
        assert_eq!(t, root.join("p/a.txt"));
    }

    #[tokio::test]
    async fn read_only_refuses_before_io() {
        let c = ctx(Path::new("/nonexistent/cogni"), SandboxMode::ReadOnly);
        assert!(matches!(
            writable_target(&c, "x").await,
            Err(PathError::ReadOnly)
        ));
    }

    #[tokio::test]
    async fn sibling_with_common_prefix_is_outside() {
        let (_tmp, root) = setup();
        let c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
        let evil = root.join("p-evil/x").display().to_string();
        assert!(matches!(
            writable_target(&c, &evil).await,
            Err(PathError::Outside { .. })
        ));
        assert!(matches!(
            writable_target(&c, "../p-evil/x").await,
            Err(PathError::Outside { .. })
        ));
    }

    #[tokio::test]
    async fn symlink_escape_is_refused() {
        let (_tmp, root) = setup();
        std::os::unix::fs::symlink(root.join("p-evil"), root.join("p/link")).unwrap();
        let c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
        assert!(matches!(
            writable_target(&c, "link/x").await,
            Err(PathError::Outside { .. })
        ));
    }

    #[tokio::test]
    async fn dotdot_in_missing_part_is_refused() {
        let (_tmp, root) = setup();
        let c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
        assert!(matches!(
            writable_target(&c, "newdir/../../p-evil/x").await,
            Err(PathError::DotDotInMissingPart(_))
        ));
    }

    #[tokio::test]
    async fn writable_roots_and_full_access_allow_outside() {
        let (_tmp, root) = setup();
        let mut c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
        c.sandbox.writable_roots = vec![root.join("p-evil")];
        assert!(writable_target(&c, "../p-evil/x").await.is_ok());
        let c = ctx(&root.join("p"), SandboxMode::DangerFullAccess);
        assert!(writable_target(&c, "../p-evil/x").await.is_ok());
    }

    #[tokio::test]
    async fn workspace_dir_must_exist_inside() {
        let (_tmp, root) = setup();
        let c = ctx(&root.join("p"), SandboxMode::ReadOnly);
        assert_eq!(workspace_dir(&c, "sub").await.unwrap(), root.join("p/sub"));
        assert!(workspace_dir(&c, "..").await.is_err());
        assert!(workspace_dir(&c, "missing").await.is_err());
    }

    #[tokio::test]
    async fn existing_reports_missing_paths() {
        let (_tmp, root) = setup();
        assert_eq!(existing(&root, None).await.unwrap(), root.join("."));
        assert_eq!(existing(&root, Some("p")).await.unwrap(), root.join("p"));
        let err = existing(&root, Some("nope")).await.unwrap_err();
        assert!(err.starts_with("`nope`: "), "{err}");
    }

    #[test]
    fn display_is_relative_inside_cwd() {
        let cwd = Path::new("/w/p");
        assert_eq!(display(cwd, Path::new("/w/p/a/b")), "a/b");
        assert_eq!(display(cwd, Path::new("/w/p")), ".");
        assert_eq!(display(cwd, Path::new("/w/p-evil/a")), "/w/p-evil/a");
    }

    fn policy(mode: SandboxMode, roots: Vec<PathBuf>) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            writable_roots: roots,
            ..SandboxPolicy::default()
        }
    }

    #[test]
    fn model_paths() {
        assert_eq!(
            model_path("./a/b.txt", false).unwrap(),
            PathBuf::from("a/b.txt")
        );
        assert!(model_path("/etc/passwd", false)
            .unwrap_err()
            .contains("absolute"));
        assert_eq!(model_path("/tmp/x", true).unwrap(), PathBuf::from("/tmp/x"));
        assert!(model_path("a/../../b", true).unwrap_err().contains(".."));
        assert!(model_path(".", false)
            .unwrap_err()
            .contains("does not name"));
        assert!(model_path("", false).is_err());
    }

    #[test]
    fn read_only_refuses_without_io() {
        let missing = Path::new("/definitely/not/here");
        let e = WriteAccess::new(missing, &policy(SandboxMode::ReadOnly, vec![])).unwrap_err();
        assert!(matches!(e, PathError::ReadOnly));
    }

    #[test]
    fn workspace_write_follows_symlinks_and_honours_roots() {
        let ws = tempfile::tempdir().unwrap();
        let extra = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
        std::os::unix::fs::symlink(extra.path(), ws.path().join("extra")).unwrap();
        std::fs::write(outside.path().join("f"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), ws.path().join("link")).unwrap();

        let access =
            WriteAccess::new(ws.path(), &policy(SandboxMode::WorkspaceWrite, vec![])).unwrap();
        assert!(access
            .resolve(Path::new("new/dir/file"), FinalLink::Keep)
            .is_ok());
        let e = access
            .resolve(Path::new("out/new.txt"), FinalLink::Keep)
            .unwrap_err();
        assert!(e.to_string().contains("outside the writable roots"), "{e}");
        assert!(access
            .resolve(Path::new("link"), FinalLink::Follow)
            .is_err());
        // The link itself lives in the workspace and may be removed.
        assert!(access.resolve(Path::new("link"), FinalLink::Keep).is_ok());
        assert!(access
            .resolve(Path::new("extra/x"), FinalLink::Keep)
            .is_err());
        assert!(access
            .resolve(Path::new("/tmp/abs"), FinalLink::Keep)
            .is_err());

        let with_root = WriteAccess::new(
            ws.path(),
            &policy(
                SandboxMode::WorkspaceWrite,
                vec![extra.path().to_path_buf()],
            ),
        )
        .unwrap();
        assert!(with_root
            .resolve(Path::new("extra/x"), FinalLink::Keep)
            .is_ok());

        let full =
            WriteAccess::new(ws.path(), &policy(SandboxMode::DangerFullAccess, vec![])).unwrap();
        assert!(full
            .resolve(Path::new("out/new.txt"), FinalLink::Keep)
            .is_ok());
    }

    #[test]
    fn roots_compare_whole_components() {
        let parent = tempfile::tempdir().unwrap();
        let ws = parent.path().join("ws");
        let sibling = parent.path().join("ws-other");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&sibling).unwrap();
        let access = WriteAccess::new(&ws, &policy(SandboxMode::WorkspaceWrite, vec![])).unwrap();
        assert!(access.resolve(&sibling.join("x"), FinalLink::Keep).is_err());
        assert!(access.resolve(&ws.join("x"), FinalLink::Keep).is_ok());
    }

    #[test]
    fn dotdot_in_missing_part_is_refused_by_write_access() {
        let (_tmp, root) = setup();
        let cwd = root.join("p");
        for mode in [SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess] {
            let access = WriteAccess::new(&cwd, &policy(mode, vec![])).unwrap();
            for link in [FinalLink::Keep, FinalLink::Follow] {
                assert!(matches!(
                    access.resolve(Path::new("new/../../p-evil/x"), link),
                    Err(PathError::DotDotInMissingPart(_))
                ));
            }
        }
    }

    #[test]
    fn protected_paths_are_refused_in_workspace_write_only() {
        let (_tmp, root) = setup();
        let cwd = root.join("p");
        std::fs::create_dir_all(cwd.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(cwd.join("vendor/x/.git")).unwrap();
        std::os::unix::fs::symlink(cwd.join(".git"), cwd.join("g")).unwrap();
        let access = WriteAccess::new(&cwd, &policy(SandboxMode::WorkspaceWrite, vec![])).unwrap();
        for path in [
            ".git/hooks/pre-commit",
            ".git/config",
            "vendor/x/.git/hooks/post-checkout",
            ".cogni/config.toml",
            "cogni.toml",
            "docs/AGENTS.md",
            "g/config",
        ] {
            for link in [FinalLink::Keep, FinalLink::Follow] {
                let e = access.resolve(Path::new(path), link).unwrap_err();
                assert!(matches!(e, PathError::Protected { .. }), "{path}: {e}");
                assert!(e.to_string().contains("protected by the sandbox"), "{e}");
            }
        }
        assert!(access
            .resolve(Path::new("src/git.rs"), FinalLink::Keep)
            .is_ok());
        assert!(access
            .resolve(Path::new(".github/x.yml"), FinalLink::Keep)
            .is_ok());
        let full = WriteAccess::new(&cwd, &policy(SandboxMode::DangerFullAccess, vec![])).unwrap();
        assert!(full
            .resolve(Path::new(".git/config"), FinalLink::Keep)
            .is_ok());
    }

    #[tokio::test]
    async fn outside_message_names_the_path_and_the_roots() {
        let (_tmp, root) = setup();
        std::os::unix::fs::symlink(root.join("p-evil"), root.join("p/link")).unwrap();
        let c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
        let e = writable_target(&c, "link/x").await.unwrap_err().to_string();
        let real = root.join("p-evil/x");
        let roots = root.join("p");
        assert_eq!(
            e,
            format!(
                "`link/x` is outside the workspace: it resolves to {}, outside the writable roots ({})",
                real.display(),
                roots.display()
            )
        );
    }
}
