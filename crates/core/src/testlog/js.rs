//! jest and vitest. Their outputs share a few marks (`✓`, `×`, `FAIL`
//! lines); their summaries differ: jest's `Tests:       1 failed, 4 passed,
//! 5 total`, vitest's ` Tests  1 failed | 3 passed (4)`.

use super::{add, count_word, drop_parenthesised, Found, Framework, Names};

#[derive(Default)]
pub(super) struct Parser {
    jest: Jest,
    vitest: Vitest,
    /// Per-test failure marks, `✕ title (3 ms)` (jest) or `× title 7ms`
    /// (vitest; jest on Windows): the names of last resort.
    crossed: Names,
}

impl Parser {
    /// `trimmed`: `line` without its indentation.
    pub(super) fn line(&mut self, line: &str, t: &str) {
        let Some(&first) = t.as_bytes().first() else {
            return;
        };
        match first {
            b'T' => {
                if let Some(rest) = t.strip_prefix("Tests:") {
                    self.jest.tests(rest);
                } else if let Some(rest) = t.strip_prefix("Test Suites:") {
                    self.jest.suites(rest);
                } else if let Some(rest) = t.strip_prefix("Tests  ") {
                    self.vitest.tests(rest);
                } else if let Some(rest) = t.strip_prefix("Test Files  ") {
                    self.vitest.files(rest);
                }
            }
            b'F' => {
                if let Some(rest) = t.strip_prefix("FAIL ") {
                    // jest: "FAIL path" starts a file's report ("FAIL  path"
                    // in colour); vitest: "FAIL  file > suite > test".
                    self.jest.file = Some(clip_owned(rest.trim()));
                    if let Some(name) = rest.strip_prefix(' ') {
                        self.vitest.fail_line(name);
                    }
                }
            }
            // "●" (U+25CF) starts with 0xE2.
            0xE2 if line.starts_with("  ● ") => self.jest.bullet(&line["  ● ".len()..]),
            // "✕" (U+2715) starts with 0xE2, "×" (U+00D7) with 0xC3.
            0xE2 | 0xC3 => {
                if let Some(rest) = t.strip_prefix("✕ ").or_else(|| t.strip_prefix("× ")) {
                    self.crossed.push(strip_duration(rest));
                }
            }
            _ => {}
        }
    }

    /// (vitest, jest).
    pub(super) fn finish(self) -> (Option<Found>, Option<Found>) {
        let Parser {
            jest,
            vitest,
            crossed,
        } = self;
        if vitest.tally.seen {
            (Some(vitest.finish(crossed)), None)
        } else if jest.tally.seen {
            (None, Some(jest.finish(crossed)))
        } else {
            (None, None)
        }
    }
}

/// What jest and vitest both report: counts, failed suites or files, and
/// the failing tests' names from the failure headers.
#[derive(Default)]
struct Tally {
    seen: bool,
    passed: Option<u64>,
    failed: Option<u64>,
    skipped: Option<u64>,
    /// Test suites (jest) or files (vitest) that failed.
    units_failed: u64,
    names: Names,
}

impl Tally {
    fn counts(&mut self, passed: u64, failed: u64, skipped: u64) {
        self.seen = true;
        add(&mut self.passed, passed);
        add(&mut self.failed, failed);
        add(&mut self.skipped, skipped);
    }

    fn units_failed(&mut self, n: u64) {
        self.units_failed = self.units_failed.saturating_add(n);
    }

    /// The names from the headers, else the crossed-out lines; a failed
    /// `unit` without failed tests (it did not load) is noted.
    fn finish(self, framework: Framework, crossed: Names, unit: &str) -> Found {
        let mut found = Found::new(framework);
        found.passed = self.passed;
        found.failed = self.failed;
        found.skipped = self.skipped;
        found.failing = if self.names.is_empty() {
            crossed.into_vec()
        } else {
            self.names.into_vec()
        };
        if self.units_failed > 0 && self.failed.unwrap_or(0) == 0 {
            found.notes.push(plural(self.units_failed, unit, "failed"));
        }
        found
    }
}

#[derive(Default)]
struct Jest {
    /// Names from the failure headers: `● Suite › test name`.
    tally: Tally,
    /// The file of the last `FAIL path` line.
    file: Option<String>,
}

impl Jest {
    /// "       3 failed, 1 skipped, 1 todo, 4 passed, 9 total"
    fn tests(&mut self, rest: &str) {
        let mut total = false;
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        for item in rest.split(',') {
            match count_word(item) {
                Some((n, "passed")) => passed += n,
                Some((n, "failed")) => failed += n,
                Some((n, "skipped" | "todo" | "pending")) => skipped += n,
                Some((_, "total")) => total = true,
                _ => {}
            }
        }
        if total {
            self.tally.counts(passed, failed, skipped);
        }
    }

    /// "Test Suites: 1 failed, 1 passed, 2 total"
    fn suites(&mut self, rest: &str) {
        for item in rest.split(',') {
            match count_word(item) {
                Some((n, "failed")) => self.tally.units_failed(n),
                Some((_, "total")) => self.tally.seen = true,
                _ => {}
            }
        }
    }

    /// After "  ● ": "math › adds wrong", "Test suite failed to run",
    /// "Console".
    fn bullet(&mut self, rest: &str) {
        let name = rest.trim();
        if name == "Test suite failed to run" {
            if let Some(file) = &self.file {
                self.tally.names.push(file);
            }
        } else if name != "Console" {
            self.tally.names.push(name);
        }
    }

    fn finish(self, crossed: Names) -> Found {
        self.tally.finish(Framework::Jest, crossed, "test suite")
    }
}

#[derive(Default)]
struct Vitest {
    /// Names from the failure headers: `FAIL  file > suite > test`.
    tally: Tally,
}

impl Vitest {
    /// After "Tests  ": "3 failed | 4 passed | 1 skipped | 1 todo (9)"
    fn tests(&mut self, rest: &str) {
        let rest = drop_parenthesised(rest);
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        let mut known = false;
        for item in rest.split('|') {
            let (n, word) = match count_word(item) {
                Some(c) => c,
                None => continue,
            };
            known = true;
            match word {
                "passed" => passed += n,
                "failed" => failed += n,
                "skipped" | "todo" => skipped += n,
                _ => {}
            }
        }
        if known {
            self.tally.counts(passed, failed, skipped);
        }
    }

    /// After "Test Files  ": "1 failed | 1 passed (2)"
    fn files(&mut self, rest: &str) {
        for item in drop_parenthesised(rest).split('|') {
            match count_word(item) {
                Some((n, "failed")) => self.tally.units_failed(n),
                Some(_) => self.tally.seen = true,
                None => {}
            }
        }
    }

    /// After "FAIL  ": "vfail/math.test.js > math > adds wrong", or for a
    /// file that did not load "verr/broken.test.js [ verr/broken.test.js ]".
    fn fail_line(&mut self, rest: &str) {
        let name = rest.trim();
        let name = match name.rfind(" [ ") {
            Some(i) if name.ends_with(" ]") => &name[..i],
            _ => name,
        };
        self.tally.names.push(name);
    }

    fn finish(self, crossed: Names) -> Found {
        self.tally.finish(Framework::Vitest, crossed, "test file")
    }
}

/// "adds wrong (2 ms)" → "adds wrong" (jest); "adds wrong 7ms" → "adds
/// wrong" (vitest).
fn strip_duration(s: &str) -> &str {
    let s = s.trim_end();
    if let Some(inner) = s.strip_suffix(" ms)").or_else(|| s.strip_suffix(" s)")) {
        if let Some(i) = inner.rfind(" (") {
            if inner[i + 2..]
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'.')
            {
                return &s[..i];
            }
        }
    }
    if let Some(inner) = s.strip_suffix("ms") {
        if let Some(i) = inner.rfind(' ') {
            let digits = &inner[i + 1..];
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return &s[..i];
            }
        }
    }
    s
}

fn plural(n: u64, thing: &str, what: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} {thing}{s} {what}")
}

/// A file name kept across lines, bounded like a test name.
fn clip_owned(s: &str) -> String {
    super::clip(s, super::MAX_NAME_BYTES).to_string()
}
