//! Protected paths: read-only even inside the writable roots.
//!
//! `.git` (any repository's, nested ones included: hooks and config run
//! code later), `.cogni/`, `cogni.toml` and `AGENTS.md` (they steer cogni
//! itself). How each tool enforces it:
//!
//! - file tools refuse, before any I/O, a write whose real path has a
//!   `.git` or `.cogni` component or ends in `cogni.toml` or `AGENTS.md`
//!   ([`protected_part`]);
//! - commands see every protected path that exists under a writable root
//!   bound read-only onto itself in their mount namespace ([`scan`]), so
//!   the kernel answers "Read-only file system";
//! - a protected name missing at the top of a writable root cannot be
//!   bound (there is nothing to bind): if a command creates one, it is
//!   removed when the command ends and the model is told ([`Missing`]).

use std::fs;
use std::path::{Component, Path, PathBuf};

/// Directories protected with everything inside them.
pub const PROTECTED_DIRS: &[&str] = &[".git", ".cogni"];
/// Files protected wherever they are.
pub const PROTECTED_FILES: &[&str] = &["cogni.toml", "AGENTS.md"];
/// Names whose creation at the top of a writable root is undone.
const GUARDED_WHEN_MISSING: &[&str] = &[".cogni", "cogni.toml", "AGENTS.md"];

/// Entries [`scan`] looks at before it stops (a bound on start-up cost in
/// huge trees); [`Scan::complete`] says whether it stopped early.
const SCAN_LIMIT: usize = 200_000;

fn is_protected_name(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| PROTECTED_DIRS.contains(&n) || PROTECTED_FILES.contains(&n))
}

/// The protected part of `rel` (a path relative to a writable root), if
/// any: `.git/hooks/x` -> `.git`, `a/AGENTS.md` -> `a/AGENTS.md`.
pub fn protected_part(rel: &Path) -> Option<PathBuf> {
    let mut prefix = PathBuf::new();
    let components: Vec<Component> = rel.components().collect();
    for (i, component) in components.iter().enumerate() {
        prefix.push(component);
        if let Component::Normal(name) = component {
            let name = name.to_str().unwrap_or("");
            let last = i + 1 == components.len();
            if PROTECTED_DIRS.contains(&name) || (last && PROTECTED_FILES.contains(&name)) {
                return Some(prefix);
            }
        }
    }
    None
}

/// The protected paths that exist under some roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    pub paths: Vec<PathBuf>,
    /// False when the walk stopped at its entry limit.
    pub complete: bool,
}

/// Walk `roots` (symlinks are not followed; protected directories are not
/// entered) and collect every protected path. Blocking.
pub fn scan(roots: &[PathBuf]) -> Scan {
    let mut paths = Vec::new();
    let mut stack: Vec<PathBuf> = roots.to_vec();
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > SCAN_LIMIT {
                return Scan {
                    paths,
                    complete: false,
                };
            }
            let path = entry.path();
            if is_protected_name(&entry.file_name()) {
                paths.push(path);
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    paths.sort();
    paths.dedup();
    Scan {
        paths,
        complete: true,
    }
}

/// Protected names missing at the top of the writable roots before a
/// command runs.
#[derive(Debug, Clone, Default)]
pub struct Missing(Vec<PathBuf>);

impl Missing {
    pub fn before(roots: &[PathBuf]) -> Self {
        Missing(
            roots
                .iter()
                .flat_map(|root| GUARDED_WHEN_MISSING.iter().map(move |n| root.join(n)))
                .filter(|p| fs::symlink_metadata(p).is_err())
                .collect(),
        )
    }

    /// Remove what the command created of them; returns the removed paths.
    pub fn undo_created(&self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for path in &self.0 {
            let Ok(meta) = fs::symlink_metadata(path) else {
                continue;
            };
            let gone = if meta.is_dir() {
                fs::remove_dir_all(path)
            } else {
                fs::remove_file(path)
            };
            if gone.is_ok() {
                removed.push(path.clone());
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_parts() {
        let p = |s: &str| protected_part(Path::new(s));
        assert_eq!(p(".git/hooks/pre-commit"), Some(PathBuf::from(".git")));
        assert_eq!(
            p("vendor/x/.git/config"),
            Some(PathBuf::from("vendor/x/.git"))
        );
        assert_eq!(p(".cogni/config.toml"), Some(PathBuf::from(".cogni")));
        assert_eq!(p("cogni.toml"), Some(PathBuf::from("cogni.toml")));
        assert_eq!(p("docs/AGENTS.md"), Some(PathBuf::from("docs/AGENTS.md")));
        assert_eq!(p("AGENTS.md/x"), None);
        assert_eq!(p("src/main.rs"), None);
        assert_eq!(p(".github/workflows/ci.yml"), None);
        assert_eq!(p("x.git/config"), None);
    }

    #[test]
    fn scan_finds_nested_and_skips_inside_protected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        for dir in [".git/hooks", "vendor/x/.git/hooks", "src", ".cogni"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join("AGENTS.md"), "a").unwrap();
        fs::write(root.join("src/cogni.toml"), "").unwrap();
        fs::write(root.join("src/lib.rs"), "").unwrap();
        std::os::unix::fs::symlink("/", root.join("src/escape")).unwrap();
        let scan = scan(std::slice::from_ref(&root));
        assert!(scan.complete);
        let rel: Vec<_> = scan
            .paths
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().to_path_buf())
            .collect();
        let want: Vec<PathBuf> = [
            ".cogni",
            ".git",
            "AGENTS.md",
            "src/cogni.toml",
            "vendor/x/.git",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(rel, want);
    }

    #[test]
    fn created_guarded_names_are_undone() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        fs::write(root.join("AGENTS.md"), "keep").unwrap();
        let missing = Missing::before(std::slice::from_ref(&root));
        fs::create_dir_all(root.join(".cogni")).unwrap();
        fs::write(root.join(".cogni/config.toml"), "x").unwrap();
        let removed = missing.undo_created();
        assert_eq!(removed, vec![root.join(".cogni")]);
        assert!(!root.join(".cogni").exists());
        assert_eq!(fs::read_to_string(root.join("AGENTS.md")).unwrap(), "keep");
    }
}
