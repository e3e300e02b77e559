//! `go test`, with and without `-v`.

use super::{Found, Framework, Names};

/// Tests are counted from their `--- PASS:` / `--- FAIL:` / `--- SKIP:`
/// lines, subtests included (as `go test -json` counts them): a table test
/// with one failing case counts two failures, `TestTable` and
/// `TestTable/case`, and both are named. Without `-v` go prints only the
/// failing tests' lines, so passed and skipped are unknown then; packages
/// are counted from `ok  \tpkg` and `FAIL\tpkg` lines.
#[derive(Default)]
pub(super) struct Parser {
    seen: bool,
    /// `-v`: every test has a line.
    verbose: bool,
    passed: u64,
    failed: u64,
    skipped: u64,
    names: Names,
    packages_ok: u64,
    packages_failed: u64,
    /// Of `packages_failed`: `[build failed]` or `[setup failed]`.
    packages_broken: u64,
}

impl Parser {
    /// `trimmed`: `line` without its indentation.
    pub(super) fn line(&mut self, line: &str, trimmed: &str) {
        let Some(&first) = line.as_bytes().first() else {
            return;
        };
        match first {
            b'o' if line.starts_with("ok  \t") => {
                self.seen = true;
                self.packages_ok += 1;
            }
            b'F' if line.starts_with("FAIL\t") => {
                self.seen = true;
                self.packages_failed += 1;
                if line.ends_with("[build failed]") || line.ends_with("[setup failed]") {
                    self.packages_broken += 1;
                }
            }
            b'?' if line.starts_with("?   \t") => self.seen = true,
            b'=' if line.starts_with("=== RUN ") => {
                self.seen = true;
                self.verbose = true;
            }
            b'-' | b' ' | b'\t' => {
                let Some(rest) = trimmed.strip_prefix("--- ") else {
                    return;
                };
                let (kind, rest) = match rest.split_once(": ") {
                    Some(parts) => parts,
                    None => return,
                };
                // "TestName (0.00s)"
                let name = match rest.rfind(" (") {
                    Some(i) if rest.ends_with("s)") => &rest[..i],
                    _ => return,
                };
                match kind {
                    "PASS" => self.passed += 1,
                    "FAIL" => {
                        self.failed += 1;
                        self.names.push(name);
                    }
                    "SKIP" => self.skipped += 1,
                    _ => return,
                }
                self.seen = true;
                // Only -v prints passing and skipped tests.
                if kind != "FAIL" {
                    self.verbose = true;
                }
            }
            _ => {}
        }
    }

    pub(super) fn finish(self) -> Option<Found> {
        if !self.seen {
            return None;
        }
        let mut found = Found::new(Framework::Go);
        if self.verbose {
            found.passed = Some(self.passed);
            found.skipped = Some(self.skipped);
        }
        // A package that failed without a failing test (it did not build,
        // or panicked outside a test) leaves the number of failed tests
        // unknown.
        let unexplained = self.packages_failed > 0 && self.failed == 0;
        if !unexplained {
            found.failed = Some(self.failed);
        }
        found.failing = self.names.into_vec();
        if self.packages_ok + self.packages_failed > 0 {
            let s = if self.packages_ok + self.packages_failed == 1 {
                ""
            } else {
                "s"
            };
            let mut note = format!("package{s}: {} ok", self.packages_ok);
            if self.packages_failed > 0 {
                note.push_str(&format!(", {} failed", self.packages_failed));
            }
            if self.packages_broken > 0 {
                note.push_str(&format!(" ({} did not build)", self.packages_broken));
            }
            found.notes.push(note);
        }
        Some(found)
    }
}
