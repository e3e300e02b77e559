//! The path policy of every tool.
//!
//! Paths are resolved against the session's cwd ([`resolve`], [`existing`])
//! and shown relative to it ([`display`]).
//!
//! A write is checked in up to two steps. Tools that take paths from a patch
//! or an edit first check the text as the model wrote it ([`model_path`]: no
//! `..`, relative unless allowed). Every write then goes through
//! [`WriteAccess`] (or [`writable_target`], its async form for one path): a
//! read-only sandbox refuses before any I/O; otherwise the path is walked
//! from the session's pinned roots (the workspace: cwd and the writable
//! roots, opened when the session started; see [`cogni_sandbox::Workspace`])
//! without the kernel following any symlink ([`super::fs::walk`]): a symlink
//! on the way is read and its target walked the same way, so one inside the
//! workspace pointing inside it is written through. The part that does not
//! exist yet may not contain `..`. In workspace-write mode the directory the
//! walk ends in must lie in a root, and the real path must not be a
//! protected path (`.git`, `.cogni`, `cogni.toml`, `AGENTS.md`, `CLAUDE.md`: see
//! `cogni_sandbox::protected`). The result is a [`Target`] holding that
//! directory open, which the write then uses: nothing is looked up by path
//! again. The shell's `workdir` must be an existing directory inside the
//! same roots, whatever the mode ([`workspace_dir`]).

use super::fs::{walk, walk_dir, WalkError};
use super::ToolContext;
use cogni_protocol::{SandboxMode, SandboxPolicy};
use cogni_sandbox::{protected, Root, Workspace};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub use super::fs::{FinalLink, Target};

/// The protected names (for what tells the model about them).
pub use cogni_sandbox::protected::{PROTECTED_DIRS, PROTECTED_FILES};

/// Why a path may not be written (or used as a workdir).
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The sandbox is `read-only`: no file tool may write.
    #[error("the sandbox is read-only: no file may be written")]
    ReadOnly,
    /// The path resolves outside cwd and the writable roots.
    #[error("`{shown}` is outside the workspace: it resolves to {}, outside the writable roots ({roots})", real.display())]
    Outside {
        /// The path as the model gave it.
        shown: String,
        /// Where it resolves to, symlinks followed.
        real: PathBuf,
        /// The writable roots, for the message.
        roots: String,
    },
    /// The path is or lies under a protected name (`.git`, `.cogni`,
    /// `cogni.toml`, `AGENTS.md`, `CLAUDE.md`).
    #[error("`{shown}` is protected by the sandbox ({}): .git, .cogni, cogni.toml and AGENTS.md stay read-only in workspace-write mode; ask the user to make this change", part.display())]
    Protected {
        /// The path as the model gave it.
        shown: String,
        /// The protected part it runs into.
        part: PathBuf,
    },
    /// The file is pinned: one of the user's own commands runs it (the
    /// field is the path as the model gave it).
    #[error("`{0}` is run by one of the user's own commands (a hook, a guardrail, an MCP server or the test command), so it stays read-only for this session; ask the user to make this change")]
    Pinned(String),
    /// The path goes up (`..`) from a directory that does not exist.
    #[error("`{0}` has `..` after a directory that does not exist")]
    DotDotInMissingPart(PathBuf),
    /// The working directory could not be opened.
    #[error("cannot open the working directory {cwd}: {source}")]
    Cwd {
        /// The working directory.
        cwd: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Resolving the path failed on the file system.
    #[error("`{path}`: {source}")]
    Io {
        /// The path in question.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The blocking task that resolves the path was cancelled or panicked.
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
            // A drive without a root (`C:notes.txt`, Windows) is relative
            // to that drive's current directory: as absolute as `C:\`.
            Component::Prefix(_) if !allow_absolute && !path.has_root() => {
                return Err(format!(
                    "`{text}` names a drive; use a path relative to the working directory"
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

/// The write policy of one tool call, resolved once for all its paths.
#[derive(Debug)]
pub struct WriteAccess {
    cwd: PathBuf,
    workspace: Arc<Workspace>,
    /// Targets must lie in the workspace's roots (workspace-write).
    confined: bool,
    /// The session's pinned files (`cogni_sandbox::pinned`).
    pins: Arc<cogni_protocol::Pins>,
}

impl WriteAccess {
    /// Writes to paths relative to `cwd` under `policy`, in `workspace`.
    /// Read-only refuses here, before any I/O.
    pub fn new(
        cwd: &Path,
        policy: &SandboxPolicy,
        workspace: &Arc<Workspace>,
    ) -> Result<Self, PathError> {
        let confined = match policy.mode {
            SandboxMode::ReadOnly => return Err(PathError::ReadOnly),
            SandboxMode::DangerFullAccess => false,
            SandboxMode::WorkspaceWrite => {
                roots(workspace)?;
                true
            }
        };
        Ok(WriteAccess {
            cwd: cwd.to_path_buf(),
            workspace: workspace.clone(),
            confined,
            pins: policy.pins.clone(),
        })
    }

    /// [`WriteAccess::new`] for a tool call's context.
    pub fn of(ctx: &ToolContext) -> Result<Self, PathError> {
        Self::new(&ctx.cwd, &ctx.sandbox, &ctx.workspace)
    }

    /// Where a write to `path` (relative to cwd, or absolute) lands, or
    /// why it may not happen. Write to the target returned, never to
    /// `path`. Blocking.
    pub fn resolve(&self, path: &Path, link: FinalLink) -> Result<Target, PathError> {
        let roots = self.workspace.roots().unwrap_or_default();
        let walked = walk(roots, &self.cwd.join(path), link).map_err(|e| walk_error(path, e))?;
        if !self.confined {
            return Ok(walked.target);
        }
        if walked.root.is_none() {
            return Err(outside(path, walked.target.real(), roots));
        }
        let target = ensure_unprotected(path, walked.target, roots)?;
        if self.pins.files.iter().any(|p| p.path == target.real()) {
            return Err(PathError::Pinned(path.display().to_string()));
        }
        Ok(target)
    }
}

/// `target` (inside one of `roots`) unless it is or lies in a protected
/// path, judged by its real path: the whole chain, symlinks resolved.
fn ensure_unprotected(shown: &Path, target: Target, roots: &[Root]) -> Result<Target, PathError> {
    let real = target.real();
    let protected = roots
        .iter()
        .filter_map(|root| Some((root, real.strip_prefix(&root.real).ok()?)))
        .find_map(|(root, rel)| Some(root.real.join(protected::protected_part(rel)?)));
    match protected {
        Some(part) => Err(PathError::Protected {
            shown: shown.display().to_string(),
            part,
        }),
        None => Ok(target),
    }
}

/// Where a write to `path` lands, or why it may not happen: [`WriteAccess`]
/// for one path, with a symlink at `path` followed.
pub async fn writable_target(ctx: &ToolContext, path: &str) -> Result<Target, PathError> {
    let access = WriteAccess::of(ctx);
    let path = PathBuf::from(path);
    blocking(move || access?.resolve(&path, FinalLink::Follow)).await
}

/// An existing directory inside the workspace (cwd or a writable root),
/// as its real path.
pub async fn workspace_dir(ctx: &ToolContext, path: &str) -> Result<PathBuf, PathError> {
    let (workspace, dir) = (ctx.workspace.clone(), ctx.cwd.join(path));
    let path = PathBuf::from(path);
    blocking(move || {
        let roots = roots(&workspace)?;
        match walk_dir(roots, &dir).map_err(|e| walk_error(&path, e))? {
            (real, Some(_)) => Ok(real),
            (real, None) => Err(outside(&path, &real, roots)),
        }
    })
    .await
}

/// The file `path` names inside the workspace (cwd or a writable root),
/// for a tool that reads only there (`view_image`): walked like a write,
/// so a symlink is followed only while it stays in the roots. Any path
/// under danger-full-access.
pub async fn workspace_file(ctx: &ToolContext, path: &str) -> Result<Target, PathError> {
    let (workspace, file) = (ctx.workspace.clone(), ctx.cwd.join(path));
    let anywhere = ctx.sandbox.mode == SandboxMode::DangerFullAccess;
    let path = PathBuf::from(path);
    blocking(move || {
        let roots = roots(&workspace)?;
        let walked = walk(roots, &file, FinalLink::Follow).map_err(|e| walk_error(&path, e))?;
        match walked.root {
            None if !anywhere => Err(outside(&path, walked.target.real(), roots)),
            _ => Ok(walked.target),
        }
    })
    .await
}

/// The pinned roots, or why the working directory could not be opened.
fn roots(workspace: &Workspace) -> Result<&[Root], PathError> {
    workspace.roots().map_err(|source| PathError::Cwd {
        cwd: workspace.cwd().to_path_buf(),
        source,
    })
}

fn walk_error(shown: &Path, e: WalkError) -> PathError {
    match e {
        WalkError::DotDotInMissingPart => PathError::DotDotInMissingPart(shown.to_path_buf()),
        WalkError::Io { path, source } => PathError::Io { path, source },
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, PathError> + Send + 'static,
) -> Result<T, PathError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| PathError::Interrupted)?
}

/// `shown` resolves to `real`, outside every root.
fn outside(shown: &Path, real: &Path, roots: &[Root]) -> PathError {
    PathError::Outside {
        shown: shown.display().to_string(),
        real: real.to_path_buf(),
        roots: roots
            .iter()
            .map(|r| r.real.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
pub(crate) mod tests;
