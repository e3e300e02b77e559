//! Finding skills in a repository of 50,000 files: only the skill
//! directories from the working directory up to the repository root and
//! the user's are read, so the repository's size does not matter.
//!
//! `cargo bench --bench skills`

// The tree's needle constants are for the grep benchmarks.
#[allow(dead_code)]
#[path = "support/tree.rs"]
mod tree;

use cogni::tools::skills::{roots, Skills, DEFAULT_MAX_LISTING_BYTES};
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;

/// `count` skills named `PREFIX-N` under `dir`.
fn skills(dir: &Path, prefix: &str, count: usize) {
    for i in 0..count {
        let skill = dir.join(format!("{prefix}-{i}"));
        std::fs::create_dir_all(skill.join("scripts")).expect("skill folder");
        std::fs::write(
            skill.join("SKILL.md"),
            format!(
                "---\nname: {prefix}-{i}\ndescription: Does task {i} of {prefix}. Use when the user asks for it.\nlicense: MIT\nmetadata:\n  version: \"1.{i}\"\n---\n# Steps\n{}",
                "1. Read the input.\n2. Run scripts/run.sh.\n3. Check the result.\n".repeat(20)
            ),
        )
        .expect("SKILL.md");
        std::fs::write(skill.join("scripts/run.sh"), "#!/bin/sh\n").expect("script");
    }
}

fn find_skills(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    tree::generate(&repo, 50_000).expect("the tree");
    std::fs::create_dir_all(repo.join(".git")).expect(".git");
    skills(&repo.join(".cogni/skills"), "project", 30);
    skills(&repo.join(".agents/skills"), "shared", 10);
    let cwd = repo.join("d012/s3");
    skills(&cwd.join(".cogni/skills"), "near", 5);
    let home = tmp.path().join("cogni-home");
    skills(&home.join("skills"), "user", 10);
    let user_home = tmp.path().join("me");

    let load = || {
        Skills::load(
            roots(&cwd, &home, Some(&user_home)),
            |_| true,
            DEFAULT_MAX_LISTING_BYTES,
        )
    };
    assert_eq!(load().all().len(), 55);
    c.bench_function("skills/load_55_in_a_50000_file_repo", |b| b.iter(load));
}

criterion_group!(benches, find_skills);
criterion_main!(benches);
