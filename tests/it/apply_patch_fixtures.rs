//! Data-driven `apply_patch` scenarios: `tests/fixtures/apply_patch/NNN_name/`
//! (layout in that directory's README.md). Each runs the real tool in a temp
//! copy of `input/` under the workspace-write sandbox.

use cogni::protocol::SandboxPolicy;
use cogni::tools::apply_patch::apply_patch_tool;
use cogni::tools::{ToolConfig, ToolContext, ToolInput, ToolResult};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apply_patch")
}

fn scenarios() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(fixtures_root())
        .expect("fixtures directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every file under `root` (missing root = empty), by relative path.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !root.exists() {
        return out;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                out.insert(
                    rel.to_string_lossy().replace('\\', "/"),
                    fs::read(&path).expect("read file"),
                );
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let dest = to.join(&rel);
        fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        fs::write(dest, bytes).expect("write");
    }
}

/// Differences between two trees, readable in a failure message.
fn tree_diff(got: &BTreeMap<String, Vec<u8>>, want: &BTreeMap<String, Vec<u8>>) -> String {
    let mut out = String::new();
    for (path, bytes) in want {
        match got.get(path) {
            None => out.push_str(&format!("  missing {path}\n")),
            Some(g) if g != bytes => out.push_str(&format!(
                "  {path} differs:\n    got:  {:?}\n    want: {:?}\n",
                String::from_utf8_lossy(g),
                String::from_utf8_lossy(bytes)
            )),
            Some(_) => {}
        }
    }
    for path in got.keys().filter(|p| !want.contains_key(*p)) {
        out.push_str(&format!("  unexpected {path}\n"));
    }
    out
}

async fn run_patch(cwd: &Path, patch: String) -> ToolResult {
    let ctx = ToolContext::new(
        cwd.to_path_buf(),
        SandboxPolicy::default(),
        Arc::new(ToolConfig::default()),
    );
    apply_patch_tool(false)
        .run(ToolInput::Json(serde_json::json!({ "input": patch })), &ctx)
        .await
}

/// Run one scenario; `Err` describes every way it went wrong.
async fn check(dir: &Path) -> Result<(), String> {
    let read = |name: &str| fs::read_to_string(dir.join(name)).ok();
    let patch = read("patch.txt").ok_or("missing patch.txt")?;
    let input = tree(&dir.join("input"));
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    copy_tree(&dir.join("input"), work.path());

    let result = run_patch(work.path(), patch).await;
    let after = tree(work.path());
    let mut problems = String::new();
    if let Some(wanted) = read("expected_error.txt") {
        let wanted = wanted.trim();
        if !result.is_error {
            problems.push_str(&format!(
                "expected an error, got success:\n{}\n",
                result.content
            ));
        } else if !result.content.contains(wanted) {
            problems.push_str(&format!(
                "error text lacks {wanted:?}; got:\n{}\n",
                result.content
            ));
        }
        if after != input {
            problems.push_str(&format!(
                "tree changed on error:\n{}",
                tree_diff(&after, &input)
            ));
        }
    } else {
        if result.is_error {
            problems.push_str(&format!("unexpected error:\n{}\n", result.content));
        }
        let expected = tree(&dir.join("expected"));
        if after != expected {
            problems.push_str(&format!(
                "tree differs from expected/:\n{}",
                tree_diff(&after, &expected)
            ));
        }
    }
    if let Some(summary) = read("expected_output.txt") {
        if result.content != summary.trim() {
            problems.push_str(&format!(
                "output differs from expected_output.txt:\n  got:  {:?}\n  want: {:?}\n",
                result.content,
                summary.trim()
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[tokio::test]
async fn apply_patch_fixtures_match_expected_trees_and_errors() {
    let mut failures = Vec::new();
    let all = scenarios();
    for dir in &all {
        if let Err(problems) = check(dir).await {
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            failures.push(format!("{name}:\n{problems}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} apply_patch fixtures failed:\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn apply_patch_fixture_set_is_complete_and_well_formed() {
    let all = scenarios();
    assert!(all.len() >= 45, "only {} fixtures", all.len());
    for dir in &all {
        let has_error = dir.join("expected_error.txt").is_file();
        let has_expected = dir.join("expected").is_dir();
        assert!(
            dir.join("patch.txt").is_file(),
            "{}: no patch.txt",
            dir.display()
        );
        assert!(
            has_error != has_expected,
            "{}: needs exactly one of expected/ and expected_error.txt",
            dir.display()
        );
    }
}
