//! The crates are the layers: each crate of the workspace depends only on
//! the crates docs/architecture.md allows it ("Dependency direction"), as
//! `cargo metadata` reports its manifest. Cargo itself refuses a cycle;
//! this test refuses a dependency that runs up a layer the doc does not
//! allow, and a crate the doc does not place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// `crate -> {allowed, ...}` lines of the rule block: the first fenced
/// block after the "## Dependency direction" heading. A line may wrap; the
/// names are the `cogni-*` words inside its braces.
fn documented_rule() -> BTreeMap<String, BTreeSet<String>> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let section = doc
        .split_once("## Dependency direction")
        .expect("docs/architecture.md has a Dependency direction section")
        .1;
    let block = section.split("```").nth(1).expect("a rule block");
    let mut rule = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in block.lines() {
        if let Some((name, rest)) = line.split_once(" -> ") {
            assert!(current.is_none(), "unclosed braces before {line:?}");
            current = Some((name.trim().to_string(), rest.to_string()));
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
        }
        let closed = current.as_ref().is_some_and(|(_, text)| text.contains('}'));
        if closed {
            let (name, text) = current.take().unwrap();
            let allowed = text
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| w.starts_with("cogni-"))
                .map(String::from)
                .collect();
            rule.insert(name, allowed);
        }
    }
    assert!(current.is_none(), "the rule block ends inside braces");
    rule
}

/// Each workspace package and the workspace packages it depends on (any
/// kind: normal, build or dev), from `cargo metadata --no-deps`.
fn actual_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: BTreeSet<&str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["name"].as_str().unwrap())
                .filter(|name| members.contains(name))
                .map(String::from)
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_what_the_architecture_allows() {
    let rule = documented_rule();
    let actual = actual_dependencies();
    // The test reads what it should: the layers it knows of at least.
    for name in ["cogni", "cogni-core", "cogni-protocol", "cogni-process"] {
        assert!(actual.contains_key(name), "no package {name}: {actual:?}");
        assert!(rule.contains_key(name), "no rule for {name}: {rule:?}");
    }
    assert!(rule["cogni-protocol"].is_empty());
    let mut broken = Vec::new();
    for (name, deps) in &actual {
        let Some(allowed) = rule.get(name) else {
            broken.push(format!(
                "{name} is a crate of the workspace, but the rule block of docs/architecture.md does not place it"
            ));
            continue;
        };
        for dep in deps.difference(allowed) {
            broken.push(format!(
                "{name} depends on {dep}, which docs/architecture.md does not allow it"
            ));
        }
    }
    for name in rule.keys().filter(|n| !actual.contains_key(*n)) {
        broken.push(format!(
            "docs/architecture.md has a rule for {name}, which is not a crate of the workspace"
        ));
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_layers_below_the_engine_never_name_it() {
    // The rule itself keeps its shape: nothing below cogni-core may name
    // cogni-core, cogni-config, cogni-runner or the front doors.
    let rule = documented_rule();
    let upper = ["cogni-core", "cogni-config", "cogni-runner", "cogni"];
    for lower in [
        "cogni-protocol",
        "cogni-sandbox",
        "cogni-process",
        "cogni-metrics",
        "cogni-store",
        "cogni-tools",
        "cogni-spec",
        "cogni-provider",
        "cogni-mcp",
        "cogni-transcript",
    ] {
        for name in upper {
            assert!(
                !rule[lower].contains(name),
                "{lower} may not depend on {name}"
            );
        }
    }
}
