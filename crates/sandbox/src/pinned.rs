//! Pinned files: the files in the workspace that the user's own commands
//! (hooks, effect and guardrail commands, MCP servers, the test command)
//! name, such as `./scripts/check`. Those commands run outside the
//! sandbox, so a model that could rewrite what they run would run its own
//! code unconfined. Three things stop it:
//!
//! - when the configuration is read, each such file is pinned ([`pin`]):
//!   its path and stamp (device, inode, ctime) go into the session's
//!   [`Pins`];
//! - every sandboxed command sees each pinned file bound read-only, and
//!   each directory above it (up to its writable root) bound onto itself,
//!   so the file can be neither written, removed, replaced nor moved away
//!   with its directory (a mount point cannot be renamed); the file tools
//!   refuse to write it;
//! - before such a command runs, the workspace files it names are checked
//!   ([`check`]): a pinned one must have its stamp still, and one that was
//!   not pinned must not have changed since the pins were taken (it was
//!   created or written during the session). Otherwise the command is
//!   refused, with an error naming the file.
//!
//! A file is "named" when a word of the command (split at blanks and shell
//! operators) is the path of a file, relative to the command's directory
//! or absolute. What that program then reads (a module it imports, a file
//! it sources) is not pinned: a command for a hook should name a program
//! that does not read code from the workspace.

use cogni_protocol::{Pin, Pins};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How far behind the clock file times may be (a scheduler tick).
const COARSE_CLOCK_LAG: Duration = Duration::from_millis(20);

/// One command to pin: its words and the directory it runs in.
pub struct Named<'a> {
    /// The command's words; each is tried as a path relative to `cwd`.
    pub words: Vec<&'a str>,
    /// The directory the command runs in.
    pub cwd: &'a Path,
}

impl<'a> Named<'a> {
    /// A shell command line (`sh -c`).
    pub fn line(command: &'a str, cwd: &'a Path) -> Self {
        Named {
            words: words(command),
            cwd,
        }
    }

    /// A program and its arguments (an MCP server's): each argument is a
    /// word, and so is what follows `=` in one (`--config=x.toml`).
    pub fn argv(argv: impl IntoIterator<Item = &'a str>, cwd: &'a Path) -> Self {
        let mut words = Vec::new();
        for arg in argv {
            words.push(arg);
            if let Some((_, value)) = arg.split_once('=') {
                words.push(value);
            }
        }
        Named { words, cwd }
    }
}

/// The words of a shell command line: split at blanks and at the
/// characters of operators, quotes and expansions.
fn words(command: &str) -> Vec<&str> {
    command
        .split(|c: char| c.is_whitespace() || ";&|<>()`'\"$={}".contains(c))
        .filter(|w| !w.is_empty() && !w.contains(['*', '?', '[']))
        .collect()
}

/// The workspace files `named` names, each with its stamp now: the path
/// as named (a symlink's own path), then the file a symlink leads to, when
/// that is in the workspace too. Missing files and directories are left
/// out.
fn files(named: &Named, roots: &[PathBuf]) -> Vec<Pin> {
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let mut out = Vec::new();
    for word in &named.words {
        let joined = named.cwd.join(word);
        let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
            continue;
        };
        let Ok(parent) = std::fs::canonicalize(parent) else {
            continue;
        };
        let path = parent.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            continue;
        }
        if inside(&path) {
            // A stamp that cannot be read: treated as missing.
            if let Ok(stamp) = crate::sys::identity(&path, &meta) {
                out.push(Pin {
                    path: path.clone(),
                    stamp,
                });
            }
        }
        if meta.file_type().is_symlink() {
            if let Ok(real) = std::fs::canonicalize(&path) {
                if let Ok(meta) = std::fs::symlink_metadata(&real) {
                    if inside(&real) && meta.is_file() {
                        if let Ok(stamp) = crate::sys::identity(&real, &meta) {
                            out.push(Pin { path: real, stamp });
                        }
                    }
                }
            }
        }
    }
    out
}

/// Pin the workspace files that `commands` name under `roots` (the
/// canonical cwd and writable roots). Blocking (a few stat calls).
pub fn pin(commands: &[Named], roots: &[PathBuf]) -> Pins {
    let mut files: Vec<Pin> = commands
        .iter()
        .flat_map(|c| self::files(c, roots))
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    Pins {
        since: Some(SystemTime::now()),
        roots: roots.to_vec(),
        files,
    }
}

/// Whether the command `named` may run: every workspace file it names is
/// pinned and unchanged, or was not changed since the pins were taken.
/// The error names the file and says what to do.
pub fn check(pins: &Pins, named: &Named) -> Result<(), String> {
    let Some(since) = pins.since else {
        return Ok(());
    };
    // File times come from a coarse clock that may lag the precise one by
    // a tick: a change right after the pins may look a little older.
    let since = (since - COARSE_CLOCK_LAG)
        .duration_since(UNIX_EPOCH)
        .map(|d| (d.as_secs() as i64, i64::from(d.subsec_nanos())))
        .unwrap_or_default();
    for now in files(named, &pins.roots) {
        let changed = match pins.files.iter().find(|p| p.path == now.path) {
            Some(pinned) => pinned.stamp != now.stamp,
            None => now.stamp.ctime >= since,
        };
        if changed {
            return Err(format!(
                "{} changed during this session (it is in the workspace, where the model's \
                 commands and edits write), so the command that runs it is refused; check the \
                 file, then start a new session to run it",
                now.path.display()
            ));
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("w");
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("scripts/check"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::write(root.join("lint.py"), "print(1)").unwrap();
        std::fs::write(tmp.path().join("outside.sh"), "").unwrap();
        symlink("scripts/check", root.join("link")).unwrap();
        // Older than the pins by more than the clock's lag.
        std::thread::sleep(COARSE_CLOCK_LAG * 2);
        (tmp, root)
    }

    #[test]
    fn the_files_a_command_names_are_pinned_with_a_symlinks_target() {
        let (tmp, root) = setup();
        let roots = [root.clone()];
        let outside = tmp.path().join("outside.sh");
        let line = format!(
            "./scripts/check --strict && python3 lint.py; ./link; {}; ./missing; cat scripts",
            outside.display()
        );
        let pins = pin(&[Named::line(&line, &root)], &roots);
        let paths: Vec<_> = pins.files.iter().map(|p| p.path.clone()).collect();
        assert_eq!(
            paths,
            [
                root.join("link"),
                root.join("lint.py"),
                root.join("scripts/check")
            ]
        );
        assert!(check(&pins, &Named::line(&line, &root)).is_ok());
    }

    #[test]
    fn a_changed_or_new_file_refuses_the_command() {
        let (_tmp, root) = setup();
        let roots = [root.clone()];
        let hook = Named::line("./scripts/check", &root);
        let pins = pin(&[Named::line("./scripts/check", &root)], &roots);
        // Rewritten in place.
        std::fs::write(root.join("scripts/check"), "#!/bin/sh\nrm -rf ~\n").unwrap();
        let e = check(&pins, &hook).unwrap_err();
        assert!(e.contains("scripts/check") && e.contains("changed"), "{e}");
        // Swapped by renaming its directory.
        let pins = pin(&[Named::line("./scripts/check", &root)], &roots);
        std::fs::rename(root.join("scripts"), root.join("old")).unwrap();
        std::fs::create_dir(root.join("scripts")).unwrap();
        std::fs::copy(root.join("old/check"), root.join("scripts/check")).unwrap();
        assert!(check(&pins, &hook).is_err());
        // Not there when pinned, created later.
        let late = Named::line("./late.sh", &root);
        let pins = pin(&[Named::line("./late.sh", &root)], &roots);
        std::fs::write(root.join("late.sh"), "evil").unwrap();
        assert!(check(&pins, &late).is_err());
        // A file older than the pins, named by a command that was not
        // pinned (an agent's own effect), runs.
        assert!(check(&pins, &Named::line("python3 lint.py", &root)).is_ok());
    }

    #[test]
    fn argv_words_include_what_follows_an_equals_sign() {
        let (_tmp, root) = setup();
        let pins = pin(
            &[Named::argv(["node", "--script=lint.py"], &root)],
            std::slice::from_ref(&root),
        );
        assert_eq!(pins.files.len(), 1);
        assert_eq!(pins.files[0].path, root.join("lint.py"));
    }
}
