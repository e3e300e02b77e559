//! The fallback: a line that counts tests in words, such as "3 passed, 1
//! failed", "Failed: 1, Passed: 2", "10 examples, 2 failures" (RSpec),
//! mocha's "1 passing" / "1 failing" on consecutive lines, bun's " 3 pass";
//! and Python's unittest ("Ran 4 tests in 0.001s", "FAILED (failures=1,
//! errors=1)", "FAIL: test_x (module.Class.test_x)").

use super::{Found, Framework, Names};

/// Lines longer than this are output, not summaries.
const MAX_SUMMARY_LINE: usize = 300;

/// Only unittest's failing names are read line by line; the counts are
/// read from the end of the output, and only when no framework was
/// recognised ([`Parser::finish`]).
#[derive(Default)]
pub(super) struct Parser {
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
        let Some(rest) = line
            .strip_prefix("FAIL: ")
            .or_else(|| line.strip_prefix("ERROR: "))
        else {
            return;
        };
        // unittest: "test_wrong (test_ut.MathTest.test_wrong)"; before
        // Python 3.11 "test_wrong (test_ut.MathTest)".
        let Some((method, class)) = rest.split_once(" (") else {
            return;
        };
        let Some(class) = class.strip_suffix(')') else {
            return;
        };
        if class.ends_with(&format!(".{method}")) {
            self.names.push(class);
        } else {
            self.names.push(&format!("{class}.{method}"));
        }
    }

    /// The last counting line of `text` (the whole cleaned output) and the
    /// consecutive counting lines just above it with other keys (mocha
    /// prints passing, pending and failing on three lines), or unittest's
    /// verdict with its "Ran N tests". Read from the end: a summary is
    /// last, and most output is never scanned.
    pub(super) fn finish(self, text: &str) -> Option<Found> {
        let mut lines = RevLines::new(text);
        let mut counts = loop {
            let line = lines.next()?;
            if line.len() > MAX_SUMMARY_LINE {
                continue;
            }
            if let Some(details) = unittest_verdict(line) {
                if let Some(total) = lines.clone().take(3).find_map(ran) {
                    break unittest_counts(total, details);
                }
            }
            let mut block = scan(line);
            if !block.has_verdict() && block.skipped.is_none() {
                continue;
            }
            for above in lines {
                if above.len() > MAX_SUMMARY_LINE {
                    break;
                }
                let counts = scan(above);
                let counted = counts.has_verdict() || counts.skipped.is_some();
                if !counted || counts.overlaps(&block) {
                    break;
                }
                block.merge(counts);
            }
            break block;
        };
        if !counts.has_verdict() {
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

/// The visible lines of `text`, last first.
#[derive(Clone)]
struct RevLines<'a> {
    text: &'a str,
    /// Where the next line (going back) ends; None when done.
    end: Option<usize>,
}

impl<'a> RevLines<'a> {
    fn new(text: &'a str) -> Self {
        RevLines {
            text,
            end: Some(text.len()),
        }
    }
}

impl<'a> Iterator for RevLines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let end = self.end?;
        let start = match memchr::memrchr(b'\n', &self.text.as_bytes()[..end]) {
            Some(i) => {
                self.end = Some(i);
                i + 1
            }
            None => {
                self.end = None;
                0
            }
        };
        Some(super::visible(&self.text[start..end]))
    }
}

/// unittest's verdict: "OK", "OK (skipped=1)", "FAILED (failures=1,
/// errors=1, skipped=1)" → what is in the parentheses.
fn unittest_verdict(line: &str) -> Option<&str> {
    if line == "OK" {
        return Some("");
    }
    let d = line
        .strip_prefix("OK (")
        .or_else(|| line.strip_prefix("FAILED ("))?;
    d.strip_suffix(')')
}

/// "Ran 4 tests in 0.001s" → 4.
fn ran(line: &str) -> Option<u64> {
    let (n, word) = line.strip_prefix("Ran ")?.split_once(' ')?;
    if !word.starts_with("test") {
        return None;
    }
    n.parse().ok()
}

fn unittest_counts(total: u64, details: &str) -> Counts {
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
    Counts {
        passed: Some(total.saturating_sub(failed).saturating_sub(skipped)),
        failed: Some(failed),
        skipped: Some(skipped),
        total: Some(total),
    }
}

/// The counts on one line: "N word" and "Word: N" / "word=N" pairs. It
/// jumps from number to number, so lines without digits cost one scan.
fn scan(line: &str) -> Counts {
    let mut counts = Counts::default();
    let b = line.as_bytes();
    let mut i = 0;
    while let Some(off) = find_digit(&b[i..]) {
        let start = i + off;
        let mut end = start + 1;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        i = end;
        // A number inside a word or a version ("v1.2", "x86", "5ms") is not
        // a count.
        let glued = |c: u8| c.is_ascii_alphanumeric() || c == b'.';
        if (start > 0 && glued(b[start - 1])) || (end < b.len() && glued(b[end])) {
            continue;
        }
        let Ok(n) = line[start..end].parse::<u64>() else {
            continue;
        };
        // "Failed: 1" / "failures=1": the word before.
        let mut k = start;
        while k > 0 && b[k - 1] == b' ' {
            k -= 1;
        }
        if k > 0 && (b[k - 1] == b':' || b[k - 1] == b'=') {
            k -= 1;
            while k > 0 && b[k - 1] == b' ' {
                k -= 1;
            }
            let word_end = k;
            while k > 0 && b[k - 1].is_ascii_alphabetic() {
                k -= 1;
            }
            if let Some(key) = key(&line[k..word_end]) {
                counts.set(key, n);
                continue;
            }
        }
        // "3 passed": the word after.
        let mut j = end;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        if j > end {
            let word_start = j;
            while j < b.len() && b[j].is_ascii_alphabetic() {
                j += 1;
            }
            if let Some(key) = key(&line[word_start..j]) {
                counts.set(key, n);
                i = j;
            }
        }
    }
    counts
}

/// The index of the first ASCII digit in `b`, eight bytes at a time.
pub(super) fn find_digit(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES * 128;
    const LOW7: u64 = ONES * 127;
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // Bytes strictly between b'0' - 1 and b'9' + 1 ("Bit Twiddling
        // Hacks": determine if a word has a byte between m and n; exact).
        let low = x & LOW7;
        let found = (ONES * (127 + 0x3a)).wrapping_sub(low)
            & !x
            & low.wrapping_add(ONES * (127 - 0x2f))
            & HIGH;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(u8::is_ascii_digit)
        .map(|i| at + i)
}
