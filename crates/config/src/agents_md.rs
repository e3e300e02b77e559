//! User instructions from AGENTS.md files: the global one in COGNI_HOME,
//! then every AGENTS.md from the repository root down to cwd, in that
//! order, capped in total size (`project_doc_max_bytes`). In a directory
//! without an AGENTS.md, its CLAUDE.md stands in (Claude Code's name for
//! the same file); where both exist AGENTS.md wins. No more than the cap
//! is read of any file; one that is not a regular file (a FIFO, a symlink
//! to `/dev/zero`) or not UTF-8 is left out with a warning.

use cogni_tools::fs::read_head;
use std::path::{Path, PathBuf};

pub const DEFAULT_MAX_BYTES: usize = 32 * 1024;
const FILE_NAME: &str = "AGENTS.md";
/// Read in a directory that has no [`FILE_NAME`].
const CLAUDE_NAME: &str = "CLAUDE.md";

/// The instructions file of `dir`: its AGENTS.md when there is one (of
/// any kind: a bad one is reported, not passed over), else its CLAUDE.md.
fn instructions_file(dir: &Path) -> PathBuf {
    let agents = dir.join(FILE_NAME);
    if agents.symlink_metadata().is_ok() {
        agents
    } else {
        dir.join(CLAUDE_NAME)
    }
}

/// Directories from the repository root (the nearest ancestor holding
/// `.git`) down to `cwd`; just `cwd` outside a repository.
fn repo_chain(cwd: &Path) -> Vec<PathBuf> {
    let root = cogni_tools::paths::repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut chain: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    chain.reverse();
    chain
}

/// The concatenated instructions, or `None` when there are none; what was
/// left out, and why, is added to `warnings`.
pub fn load_user_instructions(
    home: &Path,
    cwd: &Path,
    max_bytes: usize,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let mut files = vec![instructions_file(home)];
    files.extend(repo_chain(cwd).iter().map(|d| instructions_file(d)));
    let mut out = String::new();
    let mut truncated = false;
    for path in files {
        let head = match read_head(&path, max_bytes as u64) {
            Ok(head) => head,
            Err(e) if e.is_missing() => continue,
            Err(e) => {
                warnings.push(format!("{e}; it is left out of the instructions"));
                continue;
            }
        };
        let cut = head.cut;
        let Some(text) = head.into_text() else {
            warnings.push(format!(
                "{} is not UTF-8 text; it is left out of the instructions",
                path.display()
            ));
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let room = max_bytes.saturating_sub(out.len());
        if text.len() > room {
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str(&text[..cut]);
            truncated = true;
            break;
        }
        out.push_str(text);
        if cut {
            truncated = true;
            break;
        }
    }
    if truncated {
        out.push_str(&format!(
            "\n[AGENTS.md and CLAUDE.md content truncated at {max_bytes} bytes]"
        ));
    }
    (!out.trim().is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_then_root_down_to_cwd_with_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let repo = tmp.path().join("repo");
        let sub = repo.join("a/b");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(home.join("AGENTS.md"), "global").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "root").unwrap();
        std::fs::write(repo.join("a/b/AGENTS.md"), "leaf").unwrap();
        // Above the repository root: not read.
        std::fs::write(tmp.path().join("AGENTS.md"), "outside").unwrap();

        let text = load_user_instructions(&home, &sub, 1000, &mut Vec::new()).unwrap();
        assert_eq!(text, "global\n\nroot\n\nleaf");

        let capped = load_user_instructions(&home, &sub, 10, &mut Vec::new()).unwrap();
        assert!(capped.starts_with("global\n\nro"), "{capped}");
        assert!(capped.contains("truncated at 10 bytes"), "{capped}");

        // CLAUDE.md where there is no AGENTS.md; AGENTS.md where both are.
        std::fs::write(repo.join("a/CLAUDE.md"), "claude middle").unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "claude root").unwrap();
        let text = load_user_instructions(&home, &sub, 1000, &mut Vec::new()).unwrap();
        assert_eq!(text, "global\n\nroot\n\nclaude middle\n\nleaf");

        assert_eq!(
            load_user_instructions(
                &tmp.path().join("none"),
                &tmp.path().join("none"),
                100,
                &mut Vec::new()
            ),
            None
        );
    }
}
