//! The fallback: a line that counts tests in words, such as "3 passed, 1
//! failed", "Failed: 1, Passed: 2", "10 examples, 2 failures" (RSpec),
//! mocha's "1 passing" / "1 failing" on consecutive lines, bun's " 3 pass";
//! and Python's unittest ("Ran 4 tests in 0.001s", "FAILED (failures=1,
//! errors=1)", "FAIL: test_x (module.Class.test_x)").

use super::{Found, Framework, Names};

/// Lines longer than this are output, not summaries.
const MAX_SUMMARY_LINE: usize = 300;

#[derive(Default)]
pub(super) struct Parser {
    /// The last block of counting lines (consecutive lines with different
    /// keys merge, as mocha prints them).
    last: Option<Counts>,
    last_line: usize,
    line_no: usize,
    /// unittest's "Ran N tests", waiting for its verdict line.
    ran: Option<u64>,
    names: Names,
}

#[derive(Default, Clone, Copy)]
struct Counts {
    passed: Option<u64>,
    failed: Option<u64>,
    skipped: Option<u64>,
    total: Option<u64>,
}

impl Counts {
    fn has_verdict(&self) -> bool {
        self.passed.is_some() || self.failed.is_some()
    }

    fn overlaps(&self, other: &Counts) -> bool {
        (self.passed.is_some() && other.passed.is_some())
            || (self.failed.is_some() && other.failed.is_some())
            || (self.skipped.is_some() && other.skipped.is_some())
            || (self.total.is_some() && other.total.is_some())
    }

    fn merge(&mut self, other: Counts) {
        self.passed = self.passed.or(other.passed);
        self.failed = self.failed.or(other.failed);
        self.skipped = self.skipped.or(other.skipped);
        self.total = self.total.or(other.total);
    }

    fn set(&mut self, key: Key, n: u64) {
        let slot = match key {
            Key::Passed => &mut self.passed,
            Key::Failed => &mut self.failed,
            Key::Skipped => &mut self.skipped,
            Key::Total => &mut self.total,
        };
        *slot = Some(slot.unwrap_or(0).saturating_add(n));
    }
}

#[derive(Clone, Copy)]
enum Key {
    Passed,
    Failed,
    Skipped,
    Total,
}

fn key(word: &str) -> Option<Key> {
    // Case-insensitive without allocating: the words are short ASCII.
    let mut buf = [0u8; 12];
    let b = word.as_bytes();
    if b.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(b) {
        *d = s.to_ascii_lowercase();
    }
    Some(match &buf[..b.len()] {
        b"passed" | b"passing" | b"pass" | b"passes" | b"succeeded" => Key::Passed,
        b"failed" | b"failing" | b"fail" | b"failures" | b"failure" => Key::Failed,
        b"skipped" | b"skip" | b"pending" | b"ignored" | b"todo" => Key::Skipped,
        b"examples" | b"example" | b"tests" | b"test" | b"total" => Key::Total,
        _ => return None,
    })
}

impl Parser {
    pub(super) fn line(&mut self, line: &str) {
        self.line_no += 1;
        if line.len() > MAX_SUMMARY_LINE {
            return;
        }
        if self.unittest(line) {
            return;
        }
        if !line.bytes().any(|b| b.is_ascii_digit()) {
            return;
        }
        let counts = scan(line);
        if !counts.has_verdict() && counts.skipped.is_none() {
            return;
        }
        match &mut self.last {
            Some(last) if self.last_line + 1 == self.line_no && !last.overlaps(&counts) => {
                last.merge(counts)
            }
            _ => self.last = Some(counts),
        }
        self.last_line = self.line_no;
    }

    /// unittest's lines; true when the line was one.
    fn unittest(&mut self, line: &str) -> bool {
        if let Some(rest) = line.strip_prefix("Ran ") {
            // "Ran 4 tests in 0.001s"
            if let Some((n, word)) = rest.split_once(' ') {
                if let (Ok(n), true) = (n.parse(), word.starts_with("test")) {
                    self.ran = Some(n);
                    return true;
                }
            }
            return false;
        }
        if let Some(rest) = line
            .strip_prefix("FAIL: ")
            .or_else(|| line.strip_prefix("ERROR: "))
        {
            // "test_wrong (test_ut.MathTest.test_wrong)"; before Python 3.11
            // "test_wrong (test_ut.MathTest)".
            if let Some((method, class)) = rest.split_once(" (") {
                if let Some(class) = class.strip_suffix(')') {
                    if class.ends_with(&format!(".{method}")) {
                        self.names.push(class);
                    } else {
                        self.names.push(&format!("{class}.{method}"));
                    }
                    return true;
                }
            }
            return false;
        }
        let Some(total) = self.ran else {
            return false;
        };
        // "OK", "OK (skipped=1)", "FAILED (failures=1, errors=1, skipped=1)"
        let details = if line == "OK" {
            ""
        } else if let Some(d) = line
            .strip_prefix("OK (")
            .or_else(|| line.strip_prefix("FAILED ("))
        {
            d.strip_suffix(')').unwrap_or(d)
        } else {
            return false;
        };
        let mut counts = Counts::default();
        let (mut failed, mut skipped) = (0u64, 0u64);
        for item in details.split(", ") {
            let Some((k, v)) = item.split_once('=') else {
                continue;
            };
            let v: u64 = v.parse().unwrap_or(0);
            match k {
                "failures" | "errors" | "unexpected successes" => failed += v,
                "skipped" | "expected failures" => skipped += v,
                _ => {}
            }
        }
        counts.failed = Some(failed);
        counts.skipped = Some(skipped);
        counts.passed = Some(total.saturating_sub(failed).saturating_sub(skipped));
        self.last = Some(counts);
        self.last_line = self.line_no;
        self.ran = None;
        true
    }

    pub(super) fn finish(self) -> Option<Found> {
        let mut counts = self.last?;
        if counts.passed.is_none() && counts.failed.is_none() {
            return None;
        }
        // "10 examples, 2 failures, 1 pending": passed is what is left.
        if let (None, Some(total)) = (counts.passed, counts.total) {
            let others = counts.failed.unwrap_or(0) + counts.skipped.unwrap_or(0);
            counts.passed = Some(total.saturating_sub(others));
        }
        let mut found = Found::new(Framework::Generic);
        found.passed = counts.passed;
        found.failed = counts.failed;
        found.skipped = counts.skipped;
        found.failing = self.names.into_vec();
        Some(found)
    }
}

/// The counts on one line: "N word" and "Word: N" / "word=N" pairs.
fn scan(line: &str) -> Counts {
    let mut counts = Counts::default();
    let b = line.as_bytes();
    let mut i = 0;
    // The last word seen and where it ended, for "Word: N".
    let mut prev_word: Option<(usize, usize)> = None;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            // A number inside a word or a version ("v1.2", "x86") is not a
            // count.
            let glued_before =
                start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'.');
            let glued_after = i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.');
            if glued_before || glued_after {
                prev_word = None;
                continue;
            }
            let Ok(n) = line[start..i].parse::<u64>() else {
                prev_word = None;
                continue;
            };
            // "Failed: 1" / "failures=1": the word before.
            if let Some((ws, we)) = prev_word.take() {
                let between = &line[we..start];
                if matches!(between.trim(), ":" | "=") {
                    if let Some(k) = key(&line[ws..we]) {
                        counts.set(k, n);
                        continue;
                    }
                }
            }
            // "3 passed": the word after.
            let mut j = i;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j > i {
                let ws = j;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                if let Some(k) = key(&line[ws..j]) {
                    counts.set(k, n);
                    i = j;
                }
            }
        } else if b[i].is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            prev_word = Some((start, i));
        } else {
            i += 1;
        }
    }
    counts
}
