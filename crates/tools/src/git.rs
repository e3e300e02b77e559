//! git for cogni's own use (task workspaces, delegated agents' worktrees,
//! the repository a run reports), through [`cogni_process`]: own
//! process group, a timeout that kills it, bounded capture; never
//! sandboxed (it is not the agent's command).
//!
//! The repository is someone else's: the model may have made it, or
//! written its `.git/config`, hooks and `.gitattributes`, from inside the
//! sandbox, and git runs programs those name. So every git command cogni
//! runs is built here, by [`git`], and cannot run any of them:
//!
//! - settings given as `GIT_CONFIG_*` variables, which win over every
//!   config file and what the files include (`NEUTRAL`): no fsmonitor,
//!   no hooks (`core.hooksPath` is `/dev/null`), no transport (so no ssh
//!   command, askpass or credential helper), no submodules, no detached
//!   gc or maintenance, no signing, no bare repository found by
//!   searching;
//! - every filter driver the repository's own config defines (its
//!   `.git/config`, `config.worktree` and the files they include; not
//!   yours in `~/.gitconfig`, such as Git LFS) has its `clean`, `smudge`
//!   and `process` emptied and is not `required` (`repository_filters`);
//! - `git diff` runs with `--no-ext-diff --no-textconv` (no
//!   `diff.external`, no diff driver's command or textconv);
//! - `GIT_CONFIG_NOSYSTEM=1`, and an environment of your core variables
//!   only (`environment`): no provider keys, no `GIT_*` of cogni's own
//!   environment that could point git elsewhere (`GIT_DIR`,
//!   `GIT_CONFIG_PARAMETERS`, ...), a fixed identity for `git stash
//!   create`, `GIT_PAGER=cat` and `GIT_EDITOR=:` (nothing to page or
//!   edit);
//! - `git` itself is found on cogni's `PATH`, in absolute directories
//!   only (a relative entry would find a `git` in the model's directory).
//!
//! cogni runs only git's own commands, never aliases (git does not let an
//! alias take a command's name).

use crate::env::{EnvInherit, ShellEnvPolicy};
use cogni_process::{
    self as exec, CapturedStream, ExecRequest, DEFAULT_IO_DRAIN, DEFAULT_KILL_GRACE,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long git may take for the small queries cogni makes.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of each stream kept in memory while git runs.
const CAPTURE_BYTES: usize = 256 * 1024;

/// Settings that keep git from running anything a repository names.
const NEUTRAL: &[(&str, &str)] = &[
    // A repository's fsmonitor command runs on every index refresh.
    ("core.fsmonitor", "false"),
    // No hook runs (post-checkout after `worktree add`,
    // reference-transaction, ...): git finds none under /dev/null.
    ("core.hooksPath", "/dev/null"),
    // No transport: no ssh command, askpass, credential helper or `ext::`.
    ("protocol.allow", "never"),
    ("submodule.recurse", "false"),
    // Nothing left running in the background.
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    // No signing program for the commit `git stash create` makes.
    ("commit.gpgSign", "false"),
    // A directory that looks like a bare repository is not one by surprise.
    ("safe.bareRepository", "explicit"),
];

/// The keys of a filter driver emptied when the repository defines it.
const FILTER_KEYS: &[(&str, &str)] = &[
    ("clean", ""),
    ("smudge", ""),
    ("process", ""),
    ("required", "false"),
];

/// Flags of the git commands that write a diff, so no program a
/// repository names makes it.
const DIFF_FLAGS: &[&str] = &["--no-ext-diff", "--no-textconv"];

/// Git does not like several worktrees of one repository being added or
/// removed at the same moment; callers take turns.
static WORKTREE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `git worktree add --detach DEST REV` in `repo`.
pub async fn worktree_add(repo: &Path, dest: &Path, rev: &str) -> Result<(), String> {
    let dest_arg = dest.to_string_lossy();
    let _turn = WORKTREE_LOCK.lock().await;
    git(
        repo,
        &["worktree", "add", "--detach", "--quiet", &dest_arg, rev],
    )
    .await
    .map(|_| ())
}

/// Remove the worktree at `root` of `repo` (its directory, if git cannot).
pub async fn worktree_remove(repo: &Path, root: &Path) -> Result<(), String> {
    let root_arg = root.to_string_lossy().into_owned();
    let _turn = WORKTREE_LOCK.lock().await;
    if git(repo, &["worktree", "remove", "--force", &root_arg])
        .await
        .is_err()
    {
        remove_dir(root.to_path_buf()).await?;
        git(repo, &["worktree", "prune"]).await?;
    }
    Ok(())
}

/// Remove `dir` and everything in it, off the async threads; a directory
/// that is already gone is fine.
pub async fn remove_dir(dir: std::path::PathBuf) -> Result<(), String> {
    let shown = dir.display().to_string();
    tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("cannot remove {shown}: {e}"))
}

/// `git ARGS` in `dir`, neutralised (see the module's documentation); its
/// trimmed stdout, or what went wrong.
pub async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    Git::open(dir, &[]).await?.run(args).await
}

/// git in one directory, neutralised, with the filter drivers the
/// repository defined when it was opened emptied: for several commands in
/// a row (one config read for all of them).
#[derive(Clone)]
pub struct Git {
    program: PathBuf,
    dir: PathBuf,
    /// `GIT_*` variables of cogni's choosing (`GIT_INDEX_FILE`, `GIT_DIR`,
    /// `GIT_WORK_TREE`), set after the neutral environment.
    vars: Vec<(String, String)>,
    config: Vec<(String, String)>,
    capture: usize,
}

impl Git {
    /// git in `dir` with `vars` set (only `GIT_INDEX_FILE`, `GIT_DIR` and
    /// `GIT_WORK_TREE` are accepted: they point git at cogni's own files).
    pub async fn open(dir: &Path, vars: &[(&str, &Path)]) -> Result<Git, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| {
                assert!(
                    matches!(*k, "GIT_INDEX_FILE" | "GIT_DIR" | "GIT_WORK_TREE"),
                    "git variable {k} is not one cogni sets"
                );
                (k.to_string(), v.to_string_lossy().into_owned())
            })
            .collect();
        let mut git = Git {
            program: git_program()?,
            dir: dir.to_path_buf(),
            vars,
            config: neutral(),
            capture: CAPTURE_BYTES,
        };
        let filters = git.repository_filters().await?;
        git.config.extend(filters);
        Ok(git)
    }

    /// The same git in `dir`, another directory of the same repository
    /// (the repository's filters, read when it was opened, stay right).
    pub fn in_dir(mut self, dir: &Path) -> Self {
        self.dir = dir.to_path_buf();
        self
    }

    /// The same git on another index file (`GIT_INDEX_FILE`).
    pub fn with_index(mut self, index: &Path) -> Self {
        self.vars.retain(|(k, _)| k != "GIT_INDEX_FILE");
        self.vars.push((
            "GIT_INDEX_FILE".into(),
            index.to_string_lossy().into_owned(),
        ));
        self
    }

    /// The same git with `key` set to `value` for every command (after
    /// the neutral settings, which it may not change).
    pub fn with_config(mut self, key: &str, value: &str) -> Self {
        assert!(
            !NEUTRAL.iter().any(|(k, _)| k.eq_ignore_ascii_case(key)),
            "{key} is one of the neutral settings"
        );
        self.config.push((key.to_string(), value.to_string()));
        self
    }

    /// The same git, keeping up to `bytes` of each stream (for output that
    /// must be whole, such as a list of paths).
    pub fn with_capture(mut self, bytes: usize) -> Self {
        self.capture = bytes;
        self
    }

    /// `git ARGS`: its trimmed stdout, or what went wrong.
    pub async fn run(&self, args: &[&str]) -> Result<String, String> {
        let args = with_diff_flags(args);
        let out = self.output(&args, None).await?;
        stdout_of(&args, out)
    }

    /// `git ARGS` with `input` on its stdin: its stdout as bytes, whole
    /// (an error if it was longer than the capture), or what went wrong.
    pub async fn run_bytes(
        &self,
        args: &[&str],
        input: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, String> {
        let args = with_diff_flags(args);
        let out = self.output(&args, input).await?;
        if out.stdout.gap.bytes > 0 {
            return Err(format!(
                "git {}: more output than the {} bytes cogni keeps",
                args.join(" "),
                self.capture
            ));
        }
        let mut bytes = out.stdout.head.clone();
        bytes.extend_from_slice(&out.stdout.tail);
        stdout_of(&args, out).map(|_| bytes)
    }

    /// `git ARGS`, where a failure that still did part of the work (`add
    /// --ignore-errors` skipping an unreadable file) is not an error; a
    /// timeout is. `input` goes to its stdin. Its stderr, for a warning.
    pub async fn run_lenient(
        &self,
        args: &[&str],
        input: Option<Vec<u8>>,
    ) -> Result<String, String> {
        let out = self.output(args, input).await?;
        if out.timed_out {
            return Err(format!("git {}: timed out", args.join(" ")));
        }
        Ok(lossy(&out.stderr).trim().to_string())
    }

    /// Run `git ARGS`, whatever its exit status.
    async fn output(
        &self,
        args: &[&str],
        stdin: Option<Vec<u8>>,
    ) -> Result<exec::ExecOutput, String> {
        let mut argv = vec![self.program.to_string_lossy().into_owned()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        let mut env = environment(vars, &self.config);
        env.extend(self.vars.iter().cloned());
        let request = ExecRequest {
            argv,
            cwd: self.dir.clone(),
            env,
            timeout: GIT_TIMEOUT,
            capture_limit_bytes: self.capture,
            kill_grace: DEFAULT_KILL_GRACE,
            io_drain: DEFAULT_IO_DRAIN,
            // cogni's own command, neutralised: not the agent's.
            sandbox: None,
            stdin,
        };
        exec::run(request)
            .await
            .map_err(|e| format!("git {}: {e}", args.join(" ")))
    }

    /// Settings that empty every filter driver defined in the
    /// repository's own config (any scope but your global file):
    /// `filter.NAME.clean` and the others of [`FILTER_KEYS`]. Reading
    /// config runs nothing.
    async fn repository_filters(&self) -> Result<Vec<(String, String)>, String> {
        let args = [
            "config",
            "--null",
            "--show-scope",
            "--get-regexp",
            r"^filter\.",
        ];
        let out = self.output(&args, None).await?;
        // Exit 1: no such key (also outside a repository).
        if out.termination == exec::Termination::Exited(1) && !out.timed_out {
            return Ok(Vec::new());
        }
        let listed = stdout_of(&args, out)
            .map_err(|e| format!("cannot read the repository's git config: {e}"))?;
        Ok(drivers_not_yours(&listed)
            .iter()
            .flat_map(|driver| {
                FILTER_KEYS
                    .iter()
                    .map(move |(key, value)| (format!("filter.{driver}.{key}"), value.to_string()))
            })
            .collect())
    }
}

/// `git` on cogni's `PATH`.
fn git_program() -> Result<PathBuf, String> {
    let path = std::env::var("PATH").unwrap_or_default();
    exec::find_program("git", &path).ok_or_else(|| {
        "git not found: no `git` in an absolute directory of PATH; install git or add its \
             directory to PATH"
            .to_string()
    })
}

/// `NEUTRAL`, owned.
fn neutral() -> Vec<(String, String)> {
    NEUTRAL
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `args` with [`DIFF_FLAGS`] after a `diff` command.
fn with_diff_flags<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    if args.first() == Some(&"diff") {
        all.splice(1..1, DIFF_FLAGS.iter().copied());
    }
    all
}

/// The filter drivers that `listed` (`git config --null --show-scope`'s
/// `SCOPE\0KEY\nVALUE\0` records) defines in any scope but `global`.
fn drivers_not_yours(listed: &str) -> Vec<&str> {
    let fields: Vec<&str> = listed.split('\0').collect();
    let mut drivers: Vec<&str> = fields
        .chunks(2)
        .filter(|pair| pair.len() == 2 && pair[0] != "global")
        .filter_map(|pair| {
            let key = pair[1].split('\n').next()?;
            let (driver, _) = key.strip_prefix("filter.")?.rsplit_once('.')?;
            Some(driver)
        })
        .collect();
    drivers.sort_unstable();
    drivers.dedup();
    drivers
}

/// The trimmed stdout of `git ARGS`, or why it failed.
fn stdout_of(args: &[&str], out: exec::ExecOutput) -> Result<String, String> {
    if out.termination.success() && !out.timed_out {
        Ok(lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            tail(lossy(&out.stderr).trim(), 500)
        ))
    }
}

/// The environment of cogni's git commands, from cogni's own `vars`: the
/// core variables (`PATH`, `HOME`, `LANG`, ...; `XDG_CONFIG_HOME`, where
/// your global git config may be), nothing else of cogni's (no keys, no
/// `GIT_*`), and `config` as `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_N`,
/// `GIT_CONFIG_VALUE_N`.
fn environment(
    vars: impl IntoIterator<Item = (String, String)>,
    config: &[(String, String)],
) -> BTreeMap<String, String> {
    let vars: Vec<(String, String)> = vars.into_iter().collect();
    let core = ShellEnvPolicy {
        inherit: EnvInherit::Core,
        ..Default::default()
    };
    let mut env = core.apply(vars.iter().cloned()).unwrap_or_default();
    if let Some((k, v)) = vars.into_iter().find(|(k, _)| k == "XDG_CONFIG_HOME") {
        env.insert(k, v);
    }
    for (k, v) in [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_PAGER", "cat"),
        ("GIT_EDITOR", ":"),
        ("GIT_AUTHOR_NAME", "cogni"),
        ("GIT_AUTHOR_EMAIL", "cogni@localhost"),
        ("GIT_COMMITTER_NAME", "cogni"),
        ("GIT_COMMITTER_EMAIL", "cogni@localhost"),
    ] {
        env.insert(k.into(), v.into());
    }
    env.insert("GIT_CONFIG_COUNT".into(), config.len().to_string());
    for (i, (key, value)) in config.iter().enumerate() {
        env.insert(format!("GIT_CONFIG_KEY_{i}"), key.clone());
        env.insert(format!("GIT_CONFIG_VALUE_{i}"), value.clone());
    }
    env
}

/// A captured stream as text, with a marker where the middle was dropped.
pub fn lossy(stream: &CapturedStream) -> String {
    let mut text = String::from_utf8_lossy(&stream.head).into_owned();
    if stream.gap.bytes > 0 {
        text.push_str(&format!("\n[... {} bytes omitted ...]\n", stream.gap.bytes));
    }
    text.push_str(&String::from_utf8_lossy(&stream.tail));
    text
}

/// The last `max` bytes of `text`, cut on a character boundary.
pub fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[...]{}", &text[start..])
}

/// git as anyone would run it (no neutral settings, a fixed identity), for
/// the tests to make repositories and show what plain git would do.
#[cfg(all(test, unix))]
pub(crate) fn plain(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap()
}

// Unix: they make symlinks, FIFOs and modes.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A repository at `DIR/repo` with one committed file (and, with
    /// `attributes`, a committed `.gitattributes`), and the path of a
    /// canary outside it.
    fn repository(dir: &Path, attributes: Option<&str>) -> (PathBuf, PathBuf) {
        let repo = dir.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        if let Some(text) = attributes {
            std::fs::write(repo.join(".gitattributes"), text).unwrap();
        }
        for args in [
            &["init", "-q"][..],
            &["add", "."],
            &["commit", "-qm", "one"],
        ] {
            assert!(plain_git(&repo, args), "git {args:?}");
        }
        (repo, dir.join("CANARY"))
    }

    /// git as anyone would run it, to show that the vector is live.
    fn plain_git(dir: &Path, args: &[&str]) -> bool {
        plain(dir, args).status.success()
    }

    fn set(repo: &Path, key: &str, value: &str) {
        assert!(plain_git(repo, &["config", key, value]));
    }

    fn touch(canary: &Path) -> String {
        format!("touch '{}'", canary.display())
    }

    /// cogni's `git ARGS` leaves no canary; the same command run plainly
    /// makes one (so the vector is real). `a.txt` changes before each.
    async fn neutralised(repo: &Path, canary: &Path, args: &[&str]) {
        std::fs::write(repo.join("a.txt"), "changed by cogni\n").unwrap();
        git(repo, args).await.unwrap();
        assert!(
            !canary.exists(),
            "cogni's git {args:?} ran the repository's command"
        );
        std::fs::write(repo.join("a.txt"), "changed plainly, at another length\n").unwrap();
        plain_git(repo, args);
        assert!(
            canary.exists(),
            "plain git {args:?} did not run it: not a test"
        );
    }

    #[tokio::test]
    async fn an_fsmonitor_command_does_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, canary) = repository(dir.path(), None);
        set(&repo, "core.fsmonitor", &touch(&canary));
        std::fs::write(repo.join("a.txt"), "two\n").unwrap();
        git(&repo, &["stash", "create"]).await.unwrap();
        neutralised(&repo, &canary, &["status", "--porcelain"]).await;
    }

    #[tokio::test]
    async fn hooks_do_not_run_when_a_worktree_is_added() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, canary) = repository(dir.path(), None);
        let hook = repo.join(".git/hooks/post-checkout");
        std::fs::write(&hook, format!("#!/bin/sh\n{}\n", touch(&canary))).unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        worktree_add(&repo, &dir.path().join("wt"), "HEAD")
            .await
            .unwrap();
        assert!(dir.path().join("wt/a.txt").exists());
        assert!(!canary.exists(), "the post-checkout hook ran");
        worktree_remove(&repo, &dir.path().join("wt"))
            .await
            .unwrap();
        let wt = dir.path().join("wt2").to_string_lossy().into_owned();
        plain_git(&repo, &["worktree", "add", "--detach", &wt, "HEAD"]);
        assert!(canary.exists(), "not a test");
    }

    #[tokio::test]
    async fn filters_do_not_run_even_when_required_or_included() {
        for included in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let (repo, canary) = repository(dir.path(), Some("* filter=x\n"));
            let config = format!(
                "[filter \"x\"]\n\tclean = {touch}; cat\n\tsmudge = {touch}; cat\n\trequired = true\n",
                touch = touch(&canary)
            );
            if included {
                let file = dir.path().join("more.gitconfig");
                std::fs::write(&file, config).unwrap();
                set(&repo, "include.path", &file.to_string_lossy());
            } else {
                let mut text = std::fs::read_to_string(repo.join(".git/config")).unwrap();
                text.push_str(&config);
                std::fs::write(repo.join(".git/config"), text).unwrap();
            }
            std::fs::write(repo.join("a.txt"), "two\n").unwrap();
            git(&repo, &["stash", "create"]).await.unwrap();
            worktree_add(&repo, &dir.path().join("wt"), "HEAD")
                .await
                .unwrap();
            assert!(!canary.exists(), "included: {included}");
            neutralised(&repo, &canary, &["add", "-A"]).await;
        }
    }

    #[tokio::test]
    async fn diff_programs_and_textconv_do_not_run() {
        for (key, attributes) in [
            ("diff.external", None),
            ("diff.d.textconv", Some("* diff=d\n")),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let (repo, canary) = repository(dir.path(), attributes);
            let program = format!("{}; cat", touch(&canary));
            set(&repo, key, &program);
            std::fs::write(repo.join("a.txt"), "two\n").unwrap();
            let diff = git(&repo, &["diff", "HEAD"]).await.unwrap();
            assert!(diff.contains("+two"), "{diff}");
            assert!(!canary.exists(), "{key} ran");
            plain_git(&repo, &["diff", "HEAD"]);
            assert!(canary.exists(), "{key}: not a test");
        }
    }

    #[test]
    fn only_filters_outside_your_global_config_are_emptied() {
        let listed = "global\0filter.lfs.clean\ngit-lfs clean -- %f\0\
                      local\0filter.x.clean\ntouch /tmp/c\0\
                      local\0filter.x.smudge\ncat\0\
                      worktree\0filter.a.b.process\nevil\0";
        assert_eq!(drivers_not_yours(listed), ["a.b", "x"]);
        assert!(drivers_not_yours("").is_empty());
    }

    #[test]
    fn the_environment_is_cognis_core_without_git_variables_or_keys() {
        let vars = [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/home/u/.config"),
            ("LC_ALL", "C"),
            ("GIT_DIR", "/elsewhere/.git"),
            ("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='x'"),
            ("GIT_EXTERNAL_DIFF", "evil"),
            ("OPENAI_API_KEY", "sk-x"),
            ("EDITOR", "vim"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let config = [("core.fsmonitor".to_string(), "false".to_string())];
        let env = environment(vars, &config);
        for gone in [
            "GIT_DIR",
            "GIT_CONFIG_PARAMETERS",
            "GIT_EXTERNAL_DIFF",
            "OPENAI_API_KEY",
            "EDITOR",
        ] {
            assert!(!env.contains_key(gone), "{gone}");
        }
        for (k, v) in [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/home/u/.config"),
            ("LC_ALL", "C"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
            ("GIT_CONFIG_VALUE_0", "false"),
        ] {
            assert_eq!(env.get(k).map(String::as_str), Some(v), "{k}");
        }
    }

    #[test]
    fn only_diff_commands_get_the_diff_flags() {
        assert_eq!(
            with_diff_flags(&["diff", "--cached", "HEAD"]),
            ["diff", "--no-ext-diff", "--no-textconv", "--cached", "HEAD"]
        );
        assert_eq!(with_diff_flags(&["status"]), ["status"]);
    }
}
