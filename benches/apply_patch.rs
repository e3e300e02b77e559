//! apply_patch throughput: 50 hunks on a 20,000-line file.
//!
//! `cargo bench --bench apply_patch`. Two figures: parsing and applying in
//! memory, and the whole tool path on disk (sandbox checks, read, atomic
//! write via temp file + rename).

use cogni::protocol::SandboxPolicy;
use cogni::tools::apply_patch::{apply_patch_in, parse_patch, update_text, FileOp};
use cogni::tools::fs::CommitGate;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;

const LINES: usize = 20_000;
const HUNKS: usize = 50;

/// A Rust-looking file: four-line functions, so `}` and `    y * 2` repeat
/// and only the numbered lines are unique.
fn source() -> Vec<String> {
    (0..LINES)
        .map(|i| match i % 4 {
            0 => format!("fn item_{i}(x: u32) -> u32 {{"),
            1 => format!("    let y = x + {i};"),
            2 => "    y * 2".to_string(),
            _ => "}".to_string(),
        })
        .collect()
}

/// One update with `HUNKS` hunks spread over the file, each with three
/// context lines on both sides.
fn patch(lines: &[String]) -> String {
    let mut out = String::from("*** Begin Patch\n*** Update File: big.rs\n");
    let step = LINES / HUNKS;
    for k in 0..HUNKS {
        let target = k * step + 101 - (k * step + 101) % 4 + 1;
        out.push_str("@@\n");
        for line in &lines[target - 3..target] {
            out.push_str(&format!(" {line}\n"));
        }
        out.push_str(&format!("-{}\n", lines[target]));
        out.push_str(&format!("+    let y = x.wrapping_add({target});\n"));
        for line in &lines[target + 1..target + 4] {
            out.push_str(&format!(" {line}\n"));
        }
    }
    out.push_str("*** End Patch\n");
    out
}

fn bench(c: &mut Criterion) {
    let lines = source();
    let original = lines.join("\n") + "\n";
    let patch_text = patch(&lines);

    c.bench_function("apply_patch 50 hunks / 20k lines (in memory)", |b| {
        b.iter(|| {
            let patch = parse_patch(black_box(&patch_text)).expect("patch parses");
            let Some(FileOp::Update { hunks, .. }) = patch.ops.first() else {
                panic!("expected one update");
            };
            let updated = update_text("big.rs", black_box(&original), hunks).expect("applies");
            black_box(updated.text.len())
        })
    });

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.rs");
    let policy = SandboxPolicy::default();
    let commits = CommitGate::default();
    c.bench_function("apply_patch 50 hunks / 20k lines (tool path, disk)", |b| {
        b.iter_batched(
            || std::fs::write(&path, &original).expect("reset file"),
            |()| {
                let report = apply_patch_in(dir.path(), &policy, &commits, black_box(&patch_text))
                    .expect("applies");
                black_box(report.files.len())
            },
            BatchSize::PerIteration,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
