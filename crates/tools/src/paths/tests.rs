use super::*;
use crate::ToolConfig;
use cogni_protocol::SandboxPolicy;
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
    let root = cogni_sandbox::sys::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(root.join("p/sub")).unwrap();
    std::fs::create_dir_all(root.join("p-evil")).unwrap();
    (tmp, root)
}

#[tokio::test]
async fn write_inside_workspace_is_allowed() {
    let (_tmp, root) = setup();
    let c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
    let t = writable_target(&c, "sub/new/file.txt").await.unwrap();
    assert_eq!(t.real(), root.join("p/sub/new/file.txt"));
    let t = writable_target(&c, "./sub/../a.txt").await.unwrap();
    assert_eq!(t.real(), root.join("p/a.txt"));
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

#[cfg(unix)]
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
    let got = writable_target(&c, "newdir/../../p-evil/x").await;
    assert!(
        matches!(got, Err(PathError::DotDotInMissingPart(_))),
        "{got:?}"
    );
}

#[tokio::test]
async fn writable_roots_and_full_access_allow_outside() {
    let (_tmp, root) = setup();
    let mut c = ctx(&root.join("p"), SandboxMode::WorkspaceWrite);
    let mut sandbox = c.sandbox.clone();
    sandbox.writable_roots = vec![root.join("p-evil")];
    c.workspace = Workspace::repin(&c.workspace, &c.cwd, &sandbox.writable_roots);
    c.sandbox = sandbox;
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

/// The write access of `policy` in `cwd`, its workspace pinned now.
fn write_access(cwd: &Path, policy: &SandboxPolicy) -> Result<WriteAccess, PathError> {
    let workspace = Arc::new(Workspace::pin(cwd, &policy.writable_roots));
    WriteAccess::new(cwd, policy, &workspace)
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
    let e = write_access(missing, &policy(SandboxMode::ReadOnly, vec![])).unwrap_err();
    assert!(matches!(e, PathError::ReadOnly));
}

#[cfg(unix)]
#[test]
fn workspace_write_follows_symlinks_and_honours_roots() {
    let ws = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
    std::os::unix::fs::symlink(extra.path(), ws.path().join("extra")).unwrap();
    std::fs::write(outside.path().join("f"), "x").unwrap();
    std::os::unix::fs::symlink(outside.path().join("f"), ws.path().join("link")).unwrap();

    let access = write_access(ws.path(), &policy(SandboxMode::WorkspaceWrite, vec![])).unwrap();
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

    let with_root = write_access(
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

    let full = write_access(ws.path(), &policy(SandboxMode::DangerFullAccess, vec![])).unwrap();
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
    let access = write_access(&ws, &policy(SandboxMode::WorkspaceWrite, vec![])).unwrap();
    assert!(access.resolve(&sibling.join("x"), FinalLink::Keep).is_err());
    assert!(access.resolve(&ws.join("x"), FinalLink::Keep).is_ok());
}

#[test]
fn dotdot_in_missing_part_is_refused_by_write_access() {
    let (_tmp, root) = setup();
    let cwd = root.join("p");
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess] {
        let access = write_access(&cwd, &policy(mode, vec![])).unwrap();
        for link in [FinalLink::Keep, FinalLink::Follow] {
            assert!(matches!(
                access.resolve(Path::new("new/../../p-evil/x"), link),
                Err(PathError::DotDotInMissingPart(_))
            ));
        }
    }
}

#[cfg(unix)]
#[test]
fn protected_paths_are_refused_in_workspace_write_only() {
    let (_tmp, root) = setup();
    let cwd = root.join("p");
    std::fs::create_dir_all(cwd.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(cwd.join("vendor/x/.git")).unwrap();
    std::os::unix::fs::symlink(cwd.join(".git"), cwd.join("g")).unwrap();
    let access = write_access(&cwd, &policy(SandboxMode::WorkspaceWrite, vec![])).unwrap();
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
    let full = write_access(&cwd, &policy(SandboxMode::DangerFullAccess, vec![])).unwrap();
    assert!(full
        .resolve(Path::new(".git/config"), FinalLink::Keep)
        .is_ok());
}

#[cfg(unix)]
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

#[cfg(unix)]
#[tokio::test]
async fn a_writable_root_made_a_symlink_after_the_start_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (ws, home) = (root.join("ws"), root.join("home"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let c = ToolContext::new(
        ws.clone(),
        SandboxPolicy {
            writable_roots: vec![PathBuf::from("cache")],
            ..SandboxPolicy::default()
        },
        Arc::new(crate::ToolConfig::default()),
    );
    std::os::unix::fs::symlink(&home, ws.join("cache")).unwrap();
    let e = writable_target(&c, "cache/.bashrc").await;
    assert!(matches!(e, Err(PathError::Outside { .. })), "{e:?}");
}

/// `text` with Windows' path separators as `/`, for comparing the paths a
/// tool shows with the ones a test expects (on Unix `text` as it is).
pub(crate) fn slashed(text: &str) -> String {
    if cfg!(windows) {
        text.replace('\\', "/")
    } else {
        text.to_string()
    }
}
