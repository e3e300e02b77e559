//! Parsing a test command's output: `testlog::parse` over about 10 MB
//! built by repeating the real fixtures in `tests/fixtures/testlog/`.
//!
//! `cargo bench --bench testlog`

use cogni::agent::testlog::{parse, tail};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

const TARGET: usize = 10 * 1024 * 1024;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../tests/fixtures/testlog/", $name))
    };
}

/// `pieces` repeated in turn until the text reaches [`TARGET`] bytes.
fn build(pieces: &[&str]) -> String {
    let mut out = String::with_capacity(TARGET + 64 * 1024);
    while out.len() < TARGET {
        for p in pieces {
            out.push_str(p);
            out.push('\n');
        }
    }
    out
}

fn bench_parse(c: &mut Criterion) {
    let logs = [
        // One long cargo test run: many binaries, many failures.
        (
            "cargo_10mb",
            build(&[fixture!("cargo-fail-no-fail-fast.txt")]),
        ),
        // The same in colour: ANSI stripping copies the whole text.
        (
            "cargo_color_10mb",
            build(&[fixture!("cargo-fail-color.txt")]),
        ),
        // Every fixture in turn: every parser has work on most lines.
        (
            "all_fixtures_10mb",
            build(&[
                fixture!("cargo-fail-no-fail-fast.txt"),
                fixture!("nextest-fail-no-fail-fast.txt"),
                fixture!("pytest-fail-verbose.txt"),
                fixture!("go-fail-verbose.txt"),
                fixture!("jest-fail-verbose.txt"),
                fixture!("vitest-fail-verbose.txt"),
                fixture!("jest-suite-error.txt"),
                fixture!("generic-unittest-fail.txt"),
                fixture!("generic-mocha-fail.txt"),
            ]),
        ),
        // Nothing recognised: the generic reading scans every line from
        // the end (the worst case).
        (
            "unrecognised_10mb",
            build(&[fixture!("cargo-build-error.txt")]),
        ),
    ];
    let mut group = c.benchmark_group("testlog_parse");
    group.sample_size(20);
    for (name, log) in &logs {
        group.throughput(Throughput::Bytes(log.len() as u64));
        group.bench_function(*name, |b| b.iter(|| parse(black_box(log))));
    }
    group.finish();

    let (_, log) = &logs[0];
    c.bench_function("testlog_tail_64k_of_10mb", |b| {
        b.iter(|| tail(black_box(log), 64 * 1024))
    });
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
