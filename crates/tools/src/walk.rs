//! Directory walks shared by `list_dir`, `grep` and `glob`: `.gitignore` and
//! `.ignore` files are respected (also outside git repositories), hidden
//! files are included, `.git` directories are skipped.
//!
//! The `ignore` crate opens ignore files with a blocking `open` and reads
//! them whole, so each is checked before the walk gets to it: a directory
//! whose ignore file is not a regular file (a FIFO would block the walk,
//! a symlink to `/dev/zero` would never end) or is larger than
//! [`SPEC_FILE_MAX_BYTES`] is left out of the walk; when the root or a
//! directory above it has one, the walk reads no ignore file at all.

use super::fs::SPEC_FILE_MAX_BYTES;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use std::path::Path;

/// The ignore files a walk reads in a directory.
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".git/info/exclude"];

pub(crate) fn builder(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| {
            entry.file_name() != ".git"
                && !(entry.file_type().is_some_and(|t| t.is_dir())
                    && unsafe_ignore_file(entry.path()).is_some())
        });
    let above = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if let Some(bad) = above.ancestors().find_map(unsafe_ignore_file) {
        tracing::warn!(file = %bad.display(), "not a regular file within the limit; the walk reads no ignore file");
        builder
            .git_ignore(false)
            .git_exclude(false)
            .git_global(false)
            .ignore(false)
            .parents(false);
    }
    builder
}

/// An ignore file of `dir` that must not be read: not a regular file
/// (symlinks followed), or larger than the limit.
fn unsafe_ignore_file(dir: &Path) -> Option<std::path::PathBuf> {
    unsafe_file(dir, IGNORE_FILES)
}

/// The first of `names` in `dir` that must not be read: not a regular
/// file (symlinks followed), or larger than the limit.
pub(crate) fn unsafe_file(dir: &Path, names: &[&str]) -> Option<std::path::PathBuf> {
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|file| match std::fs::metadata(file) {
            Ok(meta) => !meta.is_file() || meta.len() > SPEC_FILE_MAX_BYTES,
            Err(e) => {
                e.kind() != std::io::ErrorKind::NotFound && e.raw_os_error() != Some(libc::ENOTDIR)
            }
        })
}

/// A file glob as the model writes it: without `/` it matches the file name
/// at any depth (`*.rs`); with `/` it matches the path relative to the
/// search root (`src/**/*.rs`). `*` never crosses `/`.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    pub(crate) fn new(pattern: &str) -> Result<Self, globset::Error> {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()?
            .compile_matcher();
        Ok(PathGlob {
            matcher,
            whole_path: pattern.contains('/'),
        })
    }

    /// Whether `path` (under `root`) matches.
    pub(crate) fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.whole_path {
            path.strip_prefix(root)
                .is_ok_and(|relative| self.matcher.is_match(relative))
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_without_slash_matches_names_at_any_depth() {
        let g = PathGlob::new("*.rs").unwrap();
        let root = Path::new("/r");
        assert!(g.is_match(root, Path::new("/r/a.rs")));
        assert!(g.is_match(root, Path::new("/r/src/deep/b.rs")));
        assert!(!g.is_match(root, Path::new("/r/a.rs.bak")));
    }

    #[test]
    fn glob_with_slash_matches_relative_paths() {
        let root = Path::new("/r");
        let g = PathGlob::new("src/*.rs").unwrap();
        assert!(g.is_match(root, Path::new("/r/src/a.rs")));
        assert!(!g.is_match(root, Path::new("/r/src/deep/a.rs")));
        let g = PathGlob::new("./src/**/*.rs").unwrap();
        assert!(g.is_match(root, Path::new("/r/src/a.rs")));
        assert!(g.is_match(root, Path::new("/r/src/deep/a.rs")));
        assert!(!g.is_match(root, Path::new("/r/other/a.rs")));
    }

    #[cfg(unix)]
    #[test]
    fn directories_with_unreadable_ignore_files_are_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("ok")).unwrap();
        std::fs::create_dir_all(root.join("bad")).unwrap();
        std::fs::write(root.join("ok/.gitignore"), "x\n").unwrap();
        std::fs::write(root.join("ok/f"), "").unwrap();
        std::fs::write(root.join("bad/f"), "").unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("bad/.gitignore")).unwrap();
        let walked = |root: &Path| -> Vec<String> {
            let mut names: Vec<String> = builder(root)
                .build()
                .flatten()
                .map(|e| e.path().strip_prefix(root).unwrap().display().to_string())
                .collect();
            names.sort();
            names
        };
        assert_eq!(walked(root), ["", "ok", "ok/.gitignore", "ok/f"]);
        // At the root: no ignore file is read, nothing is left out.
        let bad = root.join("bad");
        assert_eq!(walked(&bad), ["", ".gitignore", "f"]);
    }

    #[test]
    fn bad_glob_is_an_error() {
        assert!(PathGlob::new("a[").is_err());
    }
}
