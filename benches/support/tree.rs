//! A deterministic source tree for grep benchmarks, shared by
//! `benches/tools.rs` and `examples/grep_bench.rs`.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// Every this-many files contains the benchmark needle.
pub const NEEDLE_EVERY: usize = 50;
/// Regex that matches the needles.
pub const NEEDLE_PATTERN: &str = r"needle_\d+";

/// Write `files` Rust-like files (about 1 KB each) under `root`, 100 per
/// directory, two directory levels deep.
pub fn generate(root: &Path, files: usize) -> io::Result<()> {
    for i in 0..files {
        let dir = root.join(format!("d{:03}/s{}", i / 1000, (i / 100) % 10));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        std::fs::write(dir.join(format!("f{i}.rs")), content(i))?;
    }
    Ok(())
}

fn content(i: usize) -> String {
    let mut text = String::with_capacity(1100);
    let _ = writeln!(
        text,
        "//! Generated module {i}.\nuse std::collections::HashMap;\n"
    );
    for f in 0..6 {
        let _ = writeln!(
            text,
            "pub fn item_{i}_{f}(map: &mut HashMap<u32, u64>, x: u32) -> u64 {{\n    \
             let v = map.entry(x).or_insert({f});\n    *v += u64::from(x) * {i};\n    *v\n}}\n"
        );
    }
    if i.is_multiple_of(NEEDLE_EVERY) {
        let _ = writeln!(text, "// needle_{i}: found me");
    }
    text
}
