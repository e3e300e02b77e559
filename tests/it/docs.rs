//! docs/architecture.md, the module map, stays true: every source path it
//! names exists, and every top-level module of `src/` and every crate of
//! the workspace has its entry.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).unwrap()
}

/// The module map: the first fenced block, whose entries start with
/// `src/...` at the beginning of a line.
fn module_map(doc: &str) -> &str {
    doc.split("```")
        .nth(1)
        .expect("docs/architecture.md has a module map")
}

/// Paths written as `src/...`, `crates/...` (or `agent/...`, `cli/...`:
/// a module as the root package names it, as the engine contract writes
/// them), with the punctuation of the sentence around them left out.
fn named_paths(doc: &str, modules: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for word in doc.split(|c: char| c.is_whitespace() || "`(),;:[]|".contains(c)) {
        let word = word.trim_end_matches(['.', '\'']);
        if !word.contains('/') || !word.ends_with(['/', 's']) {
            continue;
        }
        let path = if word.starts_with("src/") || word.starts_with("crates/") {
            word.to_string()
        } else {
            match resolve(word, modules) {
                Some(path) => path,
                None => continue,
            }
        };
        if path == "src/" || !(path.ends_with('/') || path.ends_with(".rs")) {
            continue;
        }
        paths.insert(path);
    }
    paths
}

/// `agent/turn.rs` -> `crates/core/src/turn.rs`: a path that starts with a
/// module's name, from where that module's source is.
fn resolve(word: &str, modules: &BTreeMap<String, String>) -> Option<String> {
    let (first, rest) = word.split_once('/')?;
    modules.get(first).map(|dir| format!("{dir}{rest}"))
}

/// Every module the root package names, and where its source is: src's
/// own modules (`cli` -> `src/cli/`) and the layers it re-exports from the
/// workspace's crates (`pub use cogni_core as agent;` -> `crates/core/src/`).
fn modules() -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("src")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let module = name.trim_end_matches(".rs").to_string();
        map.insert(module, format!("src/{name}/"));
    }
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("pub use cogni_") else {
            continue;
        };
        let (krate, name) = rest.trim_end_matches(';').split_once(" as ").unwrap();
        map.insert(name.to_string(), format!("crates/{krate}/src/"));
    }
    map
}

#[test]
fn every_source_path_the_architecture_names_exists() {
    let doc = architecture();
    let modules = modules();
    assert_eq!(modules["agent"], "crates/core/src/");
    let paths = named_paths(&doc, &modules);
    // The test reads what it should: the module map's own entries at least.
    for expected in [
        "src/main.rs",
        "crates/core/src/",
        "src/cli/acp/",
        "crates/core/src/turn.rs",
        "crates/tools/src/shell.rs",
    ] {
        assert!(
            paths.contains(expected),
            "{expected} not found among {paths:?}"
        );
    }
    let missing: Vec<&String> = paths.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn every_file_the_module_map_lists_under_an_entry_exists_in_its_directory() {
    // Within an entry (`src/tools/  ... walk.rs ... fs/ (... at.rs ...)`)
    // files are named relative to the entry's directory, sometimes
    // nested: each must exist somewhere below it.
    let doc = architecture();
    let modules = modules();
    let mut entry: Option<PathBuf> = None;
    let mut missing = Vec::new();
    for line in module_map(&doc).lines() {
        let mut text = line;
        if let Some(head) = line
            .split_whitespace()
            .next()
            .filter(|w| w.starts_with("src/") || w.starts_with("crates/"))
        {
            entry = Some(root().join(head));
            text = &line[head.len()..];
        }
        let Some(dir) = entry.as_deref().filter(|d| d.is_dir()) else {
            continue;
        };
        for word in text.split(|c: char| c.is_whitespace() || "`(),;:[]".contains(c)) {
            let word = word.trim_end_matches('.');
            let Some(name) = word.strip_suffix(".rs") else {
                continue;
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_/".contains(c))
            {
                continue;
            }
            // `cli/export.rs` in another entry names a module's path.
            let found = match resolve(word, &modules) {
                Some(path) => root().join(path).is_file(),
                None => exists_below(dir, word),
            };
            if !found {
                missing.push(format!(
                    "{} (under {})",
                    word,
                    dir.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md's module map names files that do not exist: {missing:?}"
    );
}

/// `rel` (`walk.rs`, `exec/capture.rs`) is a file somewhere below `dir`.
fn exists_below(dir: &Path, rel: &str) -> bool {
    if dir.join(rel).is_file() {
        return true;
    }
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .any(|p| p.is_dir() && exists_below(&p, rel))
}

#[test]
fn every_top_level_module_has_an_entry_in_the_module_map() {
    let doc = architecture();
    let entries: BTreeSet<&str> = module_map(&doc)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("src/") || w.starts_with("crates/"))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let path = format!("crates/{name}/src/");
        if !entries.contains(path.as_str()) {
            missing.push(path);
        }
    }
    for entry in std::fs::read_dir(root().join("src")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if entry.path().is_dir() {
            format!("src/{name}/")
        } else {
            format!("src/{name}")
        };
        if !entries.contains(path.as_str()) {
            missing.push(path);
        }
    }
    assert!(
        missing.is_empty(),
        "src/ has modules docs/architecture.md's module map does not list: {missing:?}"
    );
}
