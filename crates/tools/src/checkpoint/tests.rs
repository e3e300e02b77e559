use super::*;
use std::process::Command;

fn plain_git(dir: &Path, args: &[&str]) -> String {
    let out = crate::git::plain(dir, args);
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(dir: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(path)).ok()
}

/// A repository with a commit, a staged change, an untracked and an
/// ignored file.
fn repository(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    write(&repo, "a.txt", "one\n");
    write(&repo, "src/b.txt", "bee\n");
    write(&repo, ".gitignore", "ignored.log\n");
    plain_git(&repo, &["init", "-q"]);
    plain_git(&repo, &["add", "."]);
    plain_git(&repo, &["commit", "-qm", "one"]);
    write(&repo, "staged.txt", "staged\n");
    plain_git(&repo, &["add", "staged.txt"]);
    write(&repo, "untracked.txt", "mine\n");
    write(&repo, "ignored.log", "log 1\n");
    repo
}

/// What the user's git sees: HEAD, branches, the index, the stash, status.
fn user_state(repo: &Path) -> Vec<String> {
    [
        &["rev-parse", "HEAD"][..],
        &["for-each-ref", "refs/heads", "refs/stash"],
        &["diff", "--cached", "--name-status"],
        &["stash", "list"],
    ]
    .iter()
    .map(|args| plain_git(repo, args))
    .collect()
}

fn changed(changes: &[Change]) -> Vec<String> {
    let mut list: Vec<String> = changes
        .iter()
        .map(|c| format!("{} {}", c.status, c.path))
        .collect();
    list.sort();
    list
}

fn paths(changes: &[Change]) -> Vec<String> {
    changes.iter().map(|c| c.path.clone()).collect()
}

#[tokio::test]
async fn a_repository_is_snapshot_and_restored_without_touching_the_users_git() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let before_state = user_state(&repo);
    let mut snaps = Snapshots::open(&repo, &dir.path().join("shadows"), "s1")
        .await
        .unwrap();
    assert_eq!(snaps.location().shadow, None);
    let before = snaps.take("before").await.unwrap();
    assert_eq!(
        snaps.take("again").await.unwrap(),
        before,
        "nothing changed: the same checkpoint"
    );

    // What a turn does.
    write(&repo, "a.txt", "two\n");
    write(&repo, "src/new/c.txt", "new\n");
    std::fs::remove_file(repo.join("untracked.txt")).unwrap();
    write(&repo, "ignored.log", "log 2\n");
    let after = snaps.take("after").await.unwrap();
    assert_ne!(after, before);
    let changes = snaps.changes(&before, &after).await.unwrap();
    assert_eq!(
        changed(&changes),
        ["D untracked.txt", "M a.txt", "A src/new/c.txt"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .tap_sort(),
        "ignored files are not part of a checkpoint"
    );
    let diff = snaps.diff(&before, &after).await.unwrap();
    assert!(diff.contains("-one\n+two"), "{diff}");

    snaps.restore(&before, &paths(&changes)).await.unwrap();
    assert_eq!(read(&repo, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(&repo, "untracked.txt").as_deref(), Some("mine\n"));
    assert!(!repo.join("src/new").exists(), "emptied directories go");
    assert!(repo.join("src").is_dir());
    assert_eq!(read(&repo, "ignored.log").as_deref(), Some("log 2\n"));
    assert_eq!(
        user_state(&repo),
        before_state,
        "HEAD, branches, index, stash"
    );
    assert_eq!(
        plain_git(&repo, &["rev-parse", "refs/cogni/checkpoints/s1"]).trim(),
        after,
        "the checkpoints are kept by a ref of their own"
    );
    let now = snaps.take("now").await.unwrap();
    assert!(snaps.changes(&before, &now).await.unwrap().is_empty());

    // Opened again (a resumed session, `cogni undo`): the chain goes on.
    let location = snaps.location().clone();
    drop(snaps);
    let mut again = Snapshots::at(location).await.unwrap();
    assert_eq!(again.take("same").await.unwrap(), now, "nothing changed");
    write(&repo, "a.txt", "three\n");
    let later = again.take("later").await.unwrap();
    let log = plain_git(&repo, &["rev-list", "refs/cogni/checkpoints/s1"]);
    for commit in [&before, &after, &now, &later] {
        assert!(log.contains(commit.as_str()), "{commit} not in {log}");
    }
}

trait TapSort {
    fn tap_sort(self) -> Self;
}

impl TapSort for Vec<String> {
    fn tap_sort(mut self) -> Self {
        self.sort();
        self
    }
}

#[tokio::test]
async fn a_plain_directory_gets_a_shadow_repository() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    write(&work, "notes.md", "first\n");
    write(&work, "node_modules/x/index.js", "dep\n");
    let shadows = dir.path().join("shadows");
    let mut snaps = Snapshots::open(&work, &shadows, "s2").await.unwrap();
    let shadow = snaps.location().shadow.clone().unwrap();
    assert!(shadow.starts_with(&shadows), "{}", shadow.display());
    assert!(
        !work.join(".git").exists(),
        "the workspace is not made a repository"
    );
    let before = snaps.take("before").await.unwrap();
    write(&work, "notes.md", "second\n");
    write(&work, "made.txt", "made\n");
    write(&work, "node_modules/x/index.js", "dep 2\n");
    let after = snaps.take("after").await.unwrap();
    let changes = snaps.changes(&before, &after).await.unwrap();
    assert_eq!(changed(&changes), ["A made.txt", "M notes.md"]);
    snaps.restore(&before, &paths(&changes)).await.unwrap();
    assert_eq!(read(&work, "notes.md").as_deref(), Some("first\n"));
    assert!(!work.join("made.txt").exists());

    // A later session in the same directory uses the same shadow.
    let again = Snapshots::open(&work, &shadows, "s3").await.unwrap();
    assert_eq!(again.location().shadow.as_deref(), Some(shadow.as_path()));
}

#[tokio::test]
async fn a_subdirectory_workspace_is_snapshot_and_restored_alone() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let work = repo.join("src");
    let mut snaps = Snapshots::open(&work, &dir.path().join("shadows"), "s4")
        .await
        .unwrap();
    let before = snaps.take("before").await.unwrap();
    write(&repo, "a.txt", "outside, by the user\n");
    write(&work, "b.txt", "changed\n");
    let after = snaps.take("after").await.unwrap();
    let changes = snaps.changes(&before, &after).await.unwrap();
    assert_eq!(changed(&changes), ["M b.txt"]);
    snaps.restore(&before, &paths(&changes)).await.unwrap();
    assert_eq!(read(&work, "b.txt").as_deref(), Some("bee\n"));
    assert_eq!(
        read(&repo, "a.txt").as_deref(),
        Some("outside, by the user\n")
    );
}

#[tokio::test]
async fn the_repositorys_commands_do_not_run_and_links_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let canary = dir.path().join("CANARY");
    let touch = format!("touch '{}'", canary.display());
    plain_git(&repo, &["config", "core.fsmonitor", &touch]);
    plain_git(&repo, &["config", "filter.evil.clean", &touch]);
    plain_git(&repo, &["config", "filter.evil.smudge", &touch]);
    write(&repo, ".gitattributes", "* filter=evil\n");
    let outside = dir.path().join("outside");
    write(&outside, "secret.txt", "the user's\n");

    let mut snaps = Snapshots::open(&repo, &dir.path().join("shadows"), "s5")
        .await
        .unwrap();
    let before = snaps.take("before").await.unwrap();
    // The turn swaps a file and a directory for links to outside.
    std::fs::remove_file(repo.join("a.txt")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), repo.join("a.txt")).unwrap();
    std::fs::remove_dir_all(repo.join("src")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("src")).unwrap();
    let after = snaps.take("after").await.unwrap();
    let changes = snaps.changes(&before, &after).await.unwrap();
    snaps.restore(&before, &paths(&changes)).await.unwrap();

    assert!(!canary.exists(), "a command the repository names ran");
    assert_eq!(
        read(&outside, "secret.txt").as_deref(),
        Some("the user's\n")
    );
    assert!(!outside.join("b.txt").exists(), "written through a link");
    let meta = std::fs::symlink_metadata(repo.join("a.txt")).unwrap();
    assert!(meta.is_file(), "a.txt is a file again");
    assert_eq!(read(&repo, "a.txt").as_deref(), Some("one\n"));
    assert!(!std::fs::symlink_metadata(repo.join("src"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read(&repo, "src/b.txt").as_deref(), Some("bee\n"));
}

#[test]
fn refs_and_paths_from_elsewhere_are_checked() {
    assert!(reference("20261128-ab_c").is_ok());
    for bad in ["", "..", "a/b", "a b", ".x", "a..b"] {
        assert!(reference(bad).is_err(), "{bad}");
    }
    for bad in ["", "/etc/passwd", "../x", "a/../../x", "./a"] {
        assert!(safe_relative(bad).is_err(), "{bad}");
    }
    assert!(safe_relative("a/b.txt").is_ok());
    assert_eq!(
        parse_name_status(b"M\0a b.txt\0A\0dir/\xe2\x9c\x93\0"),
        vec![
            Change {
                status: 'M',
                path: "a b.txt".into()
            },
            Change {
                status: 'A',
                path: "dir/✓".into()
            }
        ]
    );
}

#[tokio::test]
async fn a_filter_defined_after_opening_does_not_run_either() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let mut snaps = Snapshots::open(&repo, &dir.path().join("shadows"), "s6")
        .await
        .unwrap();
    let before = snaps.take("before").await.unwrap();
    let canary = dir.path().join("CANARY");
    let touch = format!("touch '{}'", canary.display());
    plain_git(&repo, &["config", "filter.late.clean", &touch]);
    plain_git(&repo, &["config", "filter.late.required", "true"]);
    write(&repo, ".gitattributes", "* filter=late\n");
    write(&repo, "a.txt", "changed\n");
    let after = snaps.take("after").await.unwrap();
    assert!(!canary.exists(), "the new filter ran");
    let changes = snaps.changes(&before, &after).await.unwrap();
    assert_eq!(changed(&changes), ["A .gitattributes", "M a.txt"]);
}

#[tokio::test]
async fn other_sessions_old_snapshots_are_let_go_and_recent_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let shadows = dir.path().join("shadows");
    let mut old = Snapshots::open(&repo, &shadows, "old").await.unwrap();
    old.take("long ago").await.unwrap();
    let mut recent = Snapshots::open(&repo, &shadows, "recent").await.unwrap();
    write(&repo, "a.txt", "recent\n");
    recent.take("lately").await.unwrap();
    // Age the old session's ref: point it at a commit dated 40 days ago.
    let tree = plain_git(&repo, &["rev-parse", "refs/cogni/checkpoints/old^{tree}"]);
    let aged = Command::new("git")
        .args(["commit-tree", tree.trim(), "-m", "aged"])
        .current_dir(&repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_COMMITTER_DATE", "@1000000000 +0000")
        .output()
        .unwrap();
    let aged = String::from_utf8_lossy(&aged.stdout).trim().to_string();
    plain_git(&repo, &["update-ref", "refs/cogni/checkpoints/old", &aged]);
    Snapshots::open(&repo, &shadows, "new").await.unwrap();
    let refs = plain_git(
        &repo,
        &["for-each-ref", "--format=%(refname)", "refs/cogni/"],
    );
    assert_eq!(refs.trim(), "refs/cogni/checkpoints/recent", "{refs}");
}

#[test]
fn stale_refs_are_other_sessions_older_than_the_cutoff() {
    let listed = "refs/cogni/checkpoints/a 100\nrefs/cogni/checkpoints/b 300\nrefs/cogni/checkpoints/me 50\nrefs/heads/main 1\nrefs/cogni/checkpoints/bad x\n";
    assert_eq!(
        stale_refs(listed, "refs/cogni/checkpoints/me", 200),
        ["refs/cogni/checkpoints/a"]
    );
}

/// A watched workspace's snapshots hold what a look at every file finds,
/// change after change.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn watched_snapshots_hold_what_a_full_look_finds() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let plain = dir.path().join("plain");
    write(&plain, "a.txt", "one\n");
    write(&plain, "src/b.txt", "bee\n");
    write(&plain, ".gitignore", "ignored.log\n");
    let shadows = dir.path().join("shadows");
    type Step = Box<dyn Fn(&Path)>;
    let steps: Vec<(&str, Step)> = vec![
        ("a file changed", Box::new(|w| write(w, "a.txt", "two\n"))),
        (
            "a new directory",
            Box::new(|w| write(w, "src/new/deeper/x.txt", "x\n")),
        ),
        (
            "written again inside it",
            Box::new(|w| write(w, "src/new/deeper/x.txt", "y\n")),
        ),
        (
            "a file and a directory removed",
            Box::new(|w| {
                std::fs::remove_file(w.join("src/b.txt")).unwrap();
                std::fs::remove_dir_all(w.join("src/new")).unwrap();
            }),
        ),
        (
            "a directory moved",
            Box::new(|w| std::fs::rename(w.join("src"), w.join("lib")).unwrap()),
        ),
        (
            "made and removed in one turn",
            Box::new(|w| {
                write(w, "tmp.txt", "t\n");
                std::fs::remove_file(w.join("tmp.txt")).unwrap();
            }),
        ),
        (
            "names that look like pathspecs",
            Box::new(|w| {
                write(w, "*", "star\n");
                write(w, ":(exclude)a.txt", "magic\n");
                let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
                std::fs::write(w.join(odd), "latin-1\n").unwrap();
            }),
        ),
        (
            "made executable",
            Box::new(|w| {
                let path = w.join("a.txt");
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            }),
        ),
        (
            "an ignored file, then the rule gone",
            Box::new(|w| {
                write(w, "ignored.log", "log 3\n");
                write(w, ".gitignore", "\n");
            }),
        ),
        (
            "a nested repository",
            Box::new(|w| {
                write(w, "nested/n.txt", "n\n");
                plain_git(&w.join("nested"), &["init", "-q"]);
                plain_git(&w.join("nested"), &["add", "."]);
                plain_git(&w.join("nested"), &["commit", "-qm", "n"]);
            }),
        ),
    ];
    for workspace in [&repo, &plain] {
        let mut watched = Snapshots::open(workspace, &shadows, "watched")
            .await
            .unwrap();
        watched.watch().await;
        assert!(watched.journal.is_some(), "inotify is there");
        watched.take("first").await.unwrap();
        for (n, (step, change)) in steps.iter().enumerate() {
            change(workspace);
            let seen = watched.take(step).await.unwrap();
            let mut full = Snapshots::open(workspace, &shadows, &format!("full{n}"))
                .await
                .unwrap();
            let looked = full.take(step).await.unwrap();
            let differ = watched.changes(&seen, &looked).await.unwrap();
            assert!(
                differ.is_empty(),
                "{}: after `{step}` the watched snapshot differs: {differ:?}",
                workspace.display()
            );
        }
    }
}
