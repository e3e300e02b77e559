use super::*;
use crate::git::plain;
use crate::review::diff::{FileStatus, Side};

fn git(dir: &Path, args: &[&str]) {
    let out = plain(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(dir: &Path, path: &str, text: &[u8]) {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

/// A repository with one commit: `a.txt` (ten lines), `old.rs`,
/// `gone.txt`.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    let ten: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(repo, "a.txt", ten.as_bytes());
    write(repo, "old.rs", b"fn one() {}\nfn two() {}\nfn three() {}\n");
    write(repo, "gone.txt", b"bye\n");
    git(repo, &["add", "."]);
    git(repo, &["commit", "-qm", "one"]);
    dir
}

fn paths(change: &Change) -> Vec<(&str, FileStatus)> {
    change
        .diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect()
}

#[tokio::test]
async fn uncommitted_is_staged_unstaged_and_untracked() {
    let dir = repository();
    let repo = dir.path();
    write(repo, "a.txt", b"line 1\nchanged\n");
    git(repo, &["mv", "old.rs", "new.rs"]);
    git(repo, &["rm", "-q", "gone.txt"]);
    write(repo, "fresh.txt", b"new\nfile\n");
    write(repo, "logo.png", b"\x89PNG\r\n\0\0\0binary");
    write(repo, ".gitignore", b"ignored.txt\n");
    write(repo, "ignored.txt", b"not reviewed\n");
    let change = read(repo, &Scope::Uncommitted).await.unwrap();
    let mut listed = paths(&change);
    listed.sort_by_key(|(p, _)| p.to_string());
    assert_eq!(
        listed,
        [
            (".gitignore", FileStatus::Added),
            ("a.txt", FileStatus::Modified),
            ("fresh.txt", FileStatus::Added),
            ("gone.txt", FileStatus::Deleted),
            ("logo.png", FileStatus::Added),
            ("new.rs", FileStatus::Renamed),
        ]
    );
    let renamed = change.diff.file("new.rs").unwrap();
    assert_eq!(renamed.old_path.as_deref(), Some("old.rs"));
    assert!(!change.diff.file("logo.png").unwrap().content.has_lines());
    let fresh = change.diff.file("fresh.txt").unwrap();
    assert_eq!(fresh.lines(Side::New, 1, 2).map(|l| l.len()), Some(2));
    let a = change.diff.file("a.txt").unwrap();
    assert!(a.lines(Side::Old, 3, 10).is_some(), "the deleted lines");
    assert_eq!(change.head, None);
    assert!(change.base.is_some());
}

#[tokio::test]
async fn a_clean_tree_has_an_empty_change() {
    let dir = repository();
    let change = read(dir.path(), &Scope::Uncommitted).await.unwrap();
    assert!(change.diff.is_empty());
}

#[tokio::test]
async fn a_repository_without_commits_compares_against_the_empty_tree() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q"]);
    write(repo, "staged.txt", b"one\n");
    git(repo, &["add", "staged.txt"]);
    write(repo, "loose.txt", b"two\n");
    let change = read(repo, &Scope::Uncommitted).await.unwrap();
    let mut listed = paths(&change);
    listed.sort_by_key(|(p, _)| p.to_string());
    assert_eq!(
        listed,
        [
            ("loose.txt", FileStatus::Added),
            ("staged.txt", FileStatus::Added)
        ]
    );
    let e = read(repo, &Scope::Base("main".into())).await.unwrap_err();
    assert!(e.contains("no commits yet"), "{e}");
}

#[tokio::test]
async fn base_and_commit_scopes() {
    let dir = repository();
    let repo = dir.path();
    git(repo, &["checkout", "-q", "-b", "topic"]);
    write(repo, "a.txt", b"line 1\n");
    git(repo, &["commit", "-qam", "two"]);
    write(repo, "b.txt", b"b\n");
    git(repo, &["add", "b.txt"]);
    git(repo, &["commit", "-qm", "three"]);
    write(repo, "uncommitted.txt", b"not in --base\n");
    let base = read(repo, &Scope::Base("main".into())).await.unwrap();
    assert_eq!(
        paths(&base),
        [
            ("a.txt", FileStatus::Modified),
            ("b.txt", FileStatus::Added)
        ]
    );
    assert!(base.head.is_some());
    let last = read(repo, &Scope::Commit("HEAD".into())).await.unwrap();
    assert_eq!(paths(&last), [("b.txt", FileStatus::Added)]);
    let root = read(repo, &Scope::Commit("main".into())).await.unwrap();
    assert_eq!(root.diff.files.len(), 3, "a root commit: all of it is new");
    let e = read(repo, &Scope::Commit("nope".into())).await.unwrap_err();
    assert!(e.contains("`nope` is not a commit"), "{e}");
    let e = read(repo, &Scope::Base("--output=x".into()))
        .await
        .unwrap_err();
    assert!(e.contains("not a revision"), "{e}");
    let e = read(repo, &Scope::Base("nope".into())).await.unwrap_err();
    assert!(e.contains("no merge base of nope"), "{e}");
}

#[tokio::test]
async fn files_are_read_whole_inside_the_repository_only() {
    let dir = repository();
    let repo = dir.path();
    write(repo, "src/x.rs", b"one\ntwo\n");
    write(repo, "src/y.rs", b"three\n");
    let sub = repo.join("src");
    // A repository's `diff.relative` changes nothing: paths are the root's.
    git(repo, &["config", "diff.relative", "true"]);
    write(repo, "a.txt", b"changed\n");
    let uncommitted = read(&sub, &Scope::Uncommitted).await.unwrap();
    assert!(
        uncommitted.diff.file("a.txt").is_some(),
        "{:?}",
        paths(&uncommitted)
    );
    git(repo, &["checkout", "-q", "--", "a.txt"]);
    let change = read(&sub, &Scope::Files(vec!["x.rs".into(), "../a.txt".into()]))
        .await
        .unwrap();
    assert_eq!(
        paths(&change),
        [
            ("a.txt", FileStatus::Whole),
            ("src/x.rs", FileStatus::Whole)
        ]
    );
    let all = read(repo, &Scope::Files(vec!["src".into()])).await.unwrap();
    assert_eq!(all.diff.files.len(), 2);
    let e = read(repo, &Scope::Files(vec!["../outside".into()]))
        .await
        .unwrap_err();
    assert!(e.contains("outside the repository"), "{e}");
    let e = read(repo, &Scope::Files(vec!["missing.rs".into()]))
        .await
        .unwrap_err();
    assert!(e.contains("--files missing.rs"), "{e}");
}

#[tokio::test]
async fn outside_a_repository_only_files_can_be_reviewed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "f.txt", b"hello\n");
    let e = read(dir.path(), &Scope::Uncommitted).await.unwrap_err();
    assert!(e.contains("not in a git repository"), "{e}");
    let change = read(dir.path(), &Scope::Files(vec!["f.txt".into()]))
        .await
        .unwrap();
    assert_eq!(paths(&change), [("f.txt", FileStatus::Whole)]);
}

#[tokio::test]
async fn untracked_fifos_and_symlinks_are_not_read() {
    let dir = repository();
    let repo = dir.path();
    let fifo = std::ffi::CString::new(repo.join("pipe").to_string_lossy().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::os::unix::fs::symlink("/etc/passwd", repo.join("link")).unwrap();
    let change = read(repo, &Scope::Uncommitted).await.unwrap();
    let link = change.diff.file("link").unwrap();
    assert_eq!(link.content, Content::Symlink);
    // git does not list a FIFO as untracked; if it did, it would be
    // skipped, never opened for reading.
    if let Some(pipe) = change.diff.file("pipe") {
        assert!(!pipe.content.has_lines());
    }
}
