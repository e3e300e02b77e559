//! The hostile-repository corpus: every directory of `tests/hostile/` is
//! one attack a repository (with the model and the commands it runs) tries
//! on the user's machine. Each case runs the real binary in a copy of its
//! repository, with a fresh `COGNI_HOME` and a fake `HOME`, and passes only
//! when nothing outside the workspace changed, no canary exists anywhere,
//! and cogni said what it refused. The format is in tests/hostile/README.md.

use crate::sandbox::backend;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Files named like this are canaries: none may exist after a run.
const CANARY: &str = "PWNED";

/// What the user's `~/.bashrc` holds before every run.
const BASHRC: &str = "# the user's own .bashrc\nexport EDITOR=vi\n";

/// `case.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// The attack, in one sentence.
    about: String,
    /// `git init` and commit the repository before the run.
    #[serde(default)]
    git: bool,
    /// `cogni trust` the workspace before the run.
    #[serde(default)]
    trusted: bool,
    /// The case needs the kernel sandbox (skipped without it, unless
    /// `COGNI_REQUIRE_SANDBOX` is set).
    #[serde(default)]
    sandbox: bool,
    /// Shell lines run in the workspace before cogni (unconfined, by the test).
    #[serde(default)]
    setup: Vec<String>,
    /// Shell lines run in the workspace after cogni, as the user's next
    /// commands would (`git status`, `cogni run` in a subdirectory): they
    /// may fail, but must not run a canary.
    #[serde(default)]
    after: Vec<String>,
    /// The user's own `$COGNI_HOME/config.toml`.
    user_config: Option<String>,
    /// cogni's arguments.
    args: Vec<String>,
    /// Variables set for cogni, besides PATH, HOME and COGNI_HOME.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Given on cogni's stdin (default: nothing, stdin closed).
    stdin: Option<String>,
    /// Run cogni on a pseudo-terminal instead, typing these in order;
    /// its output (stdout and stderr, one stream) is `stdout`.
    #[serde(default)]
    terminal: Vec<Typed>,
    /// The run is killed after this long, and the case fails.
    #[serde(default = "default_timeout")]
    timeout_secs: u64,
    #[serde(default)]
    expect: Expect,
}

/// One step of a run on a terminal.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Typed {
    /// Wait until the terminal shows this (escape sequences left out).
    wait: Option<String>,
    /// Then type this.
    send: String,
}

fn default_timeout() -> u64 {
    60
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// The exit code, when the case cares.
    exit: Option<i32>,
    /// Each must appear in stderr.
    #[serde(default)]
    stderr: Vec<String>,
    /// None may appear in stderr.
    #[serde(default)]
    not_stderr: Vec<String>,
    /// Each must appear in stdout.
    #[serde(default)]
    stdout: Vec<String>,
    /// None may appear in stdout.
    #[serde(default)]
    not_stdout: Vec<String>,
    /// Paths that must not exist afterwards (besides the canaries).
    #[serde(default)]
    absent: Vec<String>,
    /// Paths and the text they must hold afterwards.
    #[serde(default)]
    files: BTreeMap<String, String>,
}

/// The directories of one run.
struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    cogni_home: PathBuf,
    outside: PathBuf,
    work: PathBuf,
    case: PathBuf,
    script: PathBuf,
}

impl Dirs {
    fn new(case: &Path) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let dirs = Dirs {
            home: root.join("home"),
            cogni_home: root.join("cogni-home"),
            outside: root.join("outside"),
            work: root.join("work"),
            script: root.join("script.toml"),
            case: case.to_path_buf(),
            root,
            _tmp: tmp,
        };
        for d in [&dirs.home, &dirs.cogni_home, &dirs.outside, &dirs.work] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(dirs.home.join(".bashrc"), BASHRC).unwrap();
        std::fs::write(dirs.outside.join("notes.txt"), "the user's notes\n").unwrap();
        dirs
    }

    /// `text` with the placeholders replaced.
    fn fill(&self, text: &str) -> String {
        text.replace("{{HOME}}", &self.home.display().to_string())
            .replace("{{COGNI_HOME}}", &self.cogni_home.display().to_string())
            .replace("{{OUTSIDE}}", &self.outside.display().to_string())
            .replace("{{WORK}}", &self.work.display().to_string())
            .replace("{{CASE}}", &self.case.display().to_string())
            .replace("{{SCRIPT}}", &self.script.display().to_string())
            .replace("{{COGNI}}", env!("CARGO_BIN_EXE_cogni"))
    }

    /// A command with the run's environment: nothing of the test's own
    /// but PATH.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("COGNI_HOME", &self.cogni_home)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        cmd
    }

    fn sh(&self, line: &str) -> std::process::Output {
        self.command("sh").arg("-c").arg(line).output().unwrap()
    }

    /// Run a setup line, which must succeed.
    fn setup(&self, line: &str) {
        let out = self.sh(line);
        assert!(
            out.status.success(),
            "setup `{line}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Copy `from` into `to`, placeholders filled in text files, modes kept.
fn copy_tree(dirs: &Dirs, from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&src).unwrap();
        if meta.is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(dirs, &src, &dst);
        } else {
            let bytes = std::fs::read(&src).unwrap();
            let bytes = match String::from_utf8(bytes) {
                Ok(text) => dirs.fill(&text).into_bytes(),
                Err(e) => e.into_bytes(),
            };
            std::fs::write(&dst, bytes).unwrap();
            std::fs::set_permissions(&dst, meta.permissions()).unwrap();
        }
    }
}

/// Everything under `dir` (symlinks not followed): path -> what it is.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let mode = meta.permissions().mode() & 0o7777;
            let what = if meta.file_type().is_symlink() {
                format!("link -> {:?}", std::fs::read_link(&path).ok())
            } else if meta.is_dir() {
                stack.push(path.clone());
                format!("dir {mode:o}")
            } else if meta.is_file() {
                let bytes = std::fs::read(&path).unwrap_or_default();
                format!("file {mode:o} {:?}", String::from_utf8_lossy(&bytes))
            } else {
                format!("special {mode:o}")
            };
            all.insert(path, what);
        }
    }
    all
}

/// Every canary under `dir`.
fn canaries(dir: &Path) -> Vec<PathBuf> {
    snapshot(dir)
        .into_keys()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(CANARY))
        })
        .collect()
}

/// Why the case failed, or `None`.
fn run_case(name: &str, dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("case.toml")).unwrap();
    let case: Case = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}/case.toml: {e}"));
    if case.sandbox && !backend(&format!("hostile::{name}")) {
        return None;
    }
    let dirs = Dirs::new(dir);
    if dir.join("repo").is_dir() {
        copy_tree(&dirs, &dir.join("repo"), &dirs.work);
    }
    if dir.join("script.toml").is_file() {
        let text = std::fs::read_to_string(dir.join("script.toml")).unwrap();
        std::fs::write(&dirs.script, dirs.fill(&text)).unwrap();
    }
    if let Some(config) = &case.user_config {
        std::fs::write(dirs.cogni_home.join("config.toml"), dirs.fill(config)).unwrap();
    }
    if case.git {
        dirs.setup("git init -q && git add -A && git commit -qm init");
    }
    for line in &case.setup {
        dirs.setup(&dirs.fill(line));
    }
    if case.trusted {
        let out = dirs
            .command(env!("CARGO_BIN_EXE_cogni"))
            .arg("trust")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: cogni trust failed");
    }
    let home_before = snapshot(&dirs.home);
    let outside_before = snapshot(&dirs.outside);

    let mut cmd = dirs.command(env!("CARGO_BIN_EXE_cogni"));
    cmd.args(case.args.iter().map(|a| dirs.fill(a)))
        .envs(case.env.iter().map(|(k, v)| (k, dirs.fill(v))));
    let limit = Duration::from_secs(case.timeout_secs);
    let (status, stdout, stderr, timed_out) = if case.terminal.is_empty() {
        cmd.stdin(if case.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        if let Some(input) = &case.stdin {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(dirs.fill(input).as_bytes()).unwrap();
        }
        let (out, timed_out) = wait_for(child, limit);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status, stdout, stderr, timed_out)
    } else {
        let (status, output, timed_out) = on_terminal(cmd, &dirs, &case.terminal, limit);
        (status, output, String::new(), timed_out)
    };
    for line in &case.after {
        dirs.sh(&dirs.fill(line));
    }

    let mut problems = Vec::new();
    if timed_out {
        problems.push(format!("did not end within {} s", case.timeout_secs));
    }
    if let Some(code) = case.expect.exit {
        if status.code() != Some(code) {
            problems.push(format!("exit {:?}, expected {code}", status.code()));
        }
    }
    for canary in canaries(&dirs.root) {
        problems.push(format!("canary {} exists", canary.display()));
    }
    for (what, before, after) in [
        ("HOME", home_before, snapshot(&dirs.home)),
        (
            "the directory outside",
            outside_before,
            snapshot(&dirs.outside),
        ),
    ] {
        if before != after {
            problems.push(format!("{what} changed: {}", diff(&before, &after)));
        }
    }
    for want in &case.expect.stderr {
        if !stderr.contains(&dirs.fill(want)) {
            problems.push(format!("stderr lacks {want:?}"));
        }
    }
    for unwanted in &case.expect.not_stderr {
        if stderr.contains(&dirs.fill(unwanted)) {
            problems.push(format!("stderr has {unwanted:?}"));
        }
    }
    for want in &case.expect.stdout {
        if !stdout.contains(&dirs.fill(want)) {
            problems.push(format!("stdout lacks {want:?}"));
        }
    }
    for unwanted in &case.expect.not_stdout {
        if stdout.contains(&dirs.fill(unwanted)) {
            problems.push(format!("stdout has {unwanted:?}"));
        }
    }
    for path in &case.expect.absent {
        let path = dirs.fill(path);
        if std::fs::symlink_metadata(&path).is_ok() {
            problems.push(format!("{path} exists"));
        }
    }
    for (path, want) in &case.expect.files {
        let path = dirs.fill(path);
        match std::fs::read_to_string(&path) {
            Ok(text) if &text == want => {}
            Ok(text) => problems.push(format!("{path} holds {text:?}, expected {want:?}")),
            Err(e) => problems.push(format!("{path}: {e}")),
        }
    }
    (!problems.is_empty()).then(|| {
        format!(
            "{name} ({}):\n  - {}\n  stderr:\n{}\n  stdout (last 2000 bytes):\n{}",
            case.about,
            problems.join("\n  - "),
            indent(&stderr),
            indent(&stdout[stdout.len().saturating_sub(2000)..])
        )
    })
}

/// Run `cmd` on a pseudo-terminal, typing `steps`: how it exited, all
/// it wrote, and whether it ran past `limit` (and was killed). A step
/// whose text never shows counts as running past it.
fn on_terminal(
    cmd: Command,
    dirs: &Dirs,
    steps: &[Typed],
    limit: Duration,
) -> (std::process::ExitStatus, String, bool) {
    let start = Instant::now();
    let mut pty = crate::common::pty::Pty::spawn(cmd, 100);
    let mut timed_out = false;
    for step in steps {
        if let Some(wait) = &step.wait {
            if !pty.appears(&dirs.fill(wait), limit.saturating_sub(start.elapsed())) {
                timed_out = true;
                break;
            }
        }
        pty.send(&dirs.fill(&step.send));
    }
    let status = loop {
        if let Some(status) = pty.child.try_wait().unwrap() {
            break status;
        }
        if timed_out || start.elapsed() > limit {
            timed_out = true;
            let _ = pty.child.kill();
            break pty.child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the child wrote last may still be on its way from the master.
    std::thread::sleep(Duration::from_millis(100));
    (status, pty.raw(), timed_out)
}

/// The child's output, killed (and waited for) after `limit`.
fn wait_for(mut child: std::process::Child, limit: Duration) -> (std::process::Output, bool) {
    let start = Instant::now();
    let mut timed_out = false;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            timed_out = true;
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), timed_out)
}

fn diff(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> String {
    let mut lines = Vec::new();
    for (path, what) in after {
        match before.get(path) {
            None => lines.push(format!("+ {} ({what})", path.display())),
            Some(old) if old != what => {
                lines.push(format!("~ {} ({old} -> {what})", path.display()))
            }
            _ => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        lines.push(format!("- {}", path.display()));
    }
    lines.join("; ")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The cases, by name; `COGNI_HOSTILE=NAME[,NAME]` runs only those.
fn cases() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let only: Option<Vec<String>> = std::env::var("COGNI_HOSTILE")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| v.split(',').map(String::from).collect());
    let mut cases: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("case.toml").is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(name, _)| only.as_ref().is_none_or(|o| o.contains(name)))
        .collect();
    cases.sort();
    cases
}

#[test]
fn hostile_repositories_change_nothing_outside_the_workspace() {
    let cases = cases();
    assert!(!cases.is_empty(), "no cases in tests/hostile");
    // Two at a time: each run is mostly waiting on its child.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let chunks: Vec<_> = cases.chunks(cases.len().div_ceil(2)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(name, dir)| run_case(name, dir))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
