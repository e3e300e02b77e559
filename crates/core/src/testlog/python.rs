//! pytest: default, verbose (`-v`) and quiet (`-q`) output, with or
//! without pytest-xdist.

use super::{add, count_word, Found, Framework, Names};

/// Failing names come from the node ids pytest prints: the short summary
/// (`FAILED tests/test_x.py::test_y - AssertionError`, shown by default)
/// and verbose lines (`tests/test_x.py::test_y FAILED [ 50%]`). When there
/// are none (`-rN`), from the section headers (`____ test_y ____`).
#[derive(Default)]
pub(super) struct Parser {
    seen: bool,
    passed: Option<u64>,
    failed: Option<u64>,
    skipped: Option<u64>,
    ids: Names,
    headers: Names,
}

impl Parser {
    pub(super) fn line(&mut self, line: &str) {
        let t = line.trim_end();
        let Some(&first) = t.as_bytes().first() else {
            return;
        };
        match first {
            b'=' => {
                let inner = t.trim_matches('=').trim();
                if inner == "test session starts" {
                    self.seen = true;
                } else {
                    self.summary(inner);
                }
            }
            b'0'..=b'9' | b'n' => self.summary(t),
            b'F' | b'E' => {
                if let Some(rest) = t
                    .strip_prefix("FAILED ")
                    .or_else(|| t.strip_prefix("ERROR "))
                {
                    self.short_summary(rest);
                }
            }
            // pytest-xdist: "[gw0] [ 50%] FAILED tests/test_x.py::test_y".
            b'[' if t.starts_with("[gw") => {
                if let Some(i) = t.find("] FAILED ").or_else(|| t.find("] ERROR ")) {
                    let rest = &t[i + 2..];
                    let rest = rest.split_once(' ').map_or("", |(_, r)| r);
                    self.short_summary(rest);
                }
            }
            b'_' => {
                let name = t.trim_matches('_').trim();
                let name = [
                    "ERROR at setup of ",
                    "ERROR at teardown of ",
                    "ERROR collecting ",
                ]
                .iter()
                .find_map(|p| name.strip_prefix(p))
                .unwrap_or(name);
                if !name.is_empty() && t.ends_with('_') && t.starts_with("___") {
                    self.headers.push(name);
                }
            }
            _ => {}
        }
        // Verbose: "tests/test_x.py::test_y FAILED          [ 18%]".
        let s = if t.ends_with("%]") {
            match memchr::memrchr(b'[', t.as_bytes()) {
                Some(i) => t[..i].trim_end(),
                None => t,
            }
        } else {
            t
        };
        if let Some(id) = s
            .strip_suffix(" FAILED")
            .or_else(|| s.strip_suffix(" ERROR"))
        {
            if !id.starts_with(char::is_whitespace) && id.contains("::") {
                self.ids.push(id);
            }
        }
    }

    /// After "FAILED " or "ERROR ": "tests/x.py::test_y[a - b] - message".
    fn short_summary(&mut self, rest: &str) {
        // The " - " that ends the id comes after any parameter brackets.
        let from = match (rest.find('['), rest.find(" - ")) {
            (Some(b), Some(d)) if b < d => rest[b..].find(']').map_or(0, |i| b + i),
            _ => 0,
        };
        let id = match rest[from..].find(" - ") {
            Some(i) => &rest[..from + i],
            None => rest,
        };
        if id.contains("::") || id.contains(".py") {
            self.ids.push(id);
        }
    }

    /// "3 failed, 5 passed, 1 skipped, 1 xfailed, 1 error in 0.05s" (the
    /// `=` rule already taken off), or "no tests ran in 0.01s".
    fn summary(&mut self, s: &str) {
        let Some((counts, time)) = s.rsplit_once(" in ") else {
            return;
        };
        let time = time.trim();
        if !time.starts_with(|c: char| c.is_ascii_digit()) || !time.contains('s') {
            return;
        }
        let (mut passed, mut failed, mut skipped) = (0u64, 0u64, 0u64);
        if counts != "no tests ran" {
            let mut known = false;
            for item in counts.split(", ") {
                let Some((n, word)) = count_word(item) else {
                    return;
                };
                known |= match word {
                    "passed" | "xpassed" => {
                        passed = passed.saturating_add(n);
                        true
                    }
                    "failed" | "error" | "errors" => {
                        failed = failed.saturating_add(n);
                        true
                    }
                    "skipped" | "xfailed" => {
                        skipped = skipped.saturating_add(n);
                        true
                    }
                    "deselected" | "warning" | "warnings" | "rerun" | "reruns" => true,
                    _ => false,
                };
            }
            if !known {
                return;
            }
        }
        self.seen = true;
        add(&mut self.passed, passed);
        add(&mut self.failed, failed);
        add(&mut self.skipped, skipped);
    }

    pub(super) fn finish(self) -> Option<Found> {
        if !self.seen {
            return None;
        }
        let mut found = Found::new(Framework::Pytest);
        found.passed = self.passed;
        found.failed = self.failed;
        found.skipped = self.skipped;
        found.failing = if self.ids.is_empty() {
            self.headers.into_vec()
        } else {
            self.ids.into_vec()
        };
        Some(found)
    }
}
