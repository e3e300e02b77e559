//! `cargo test` (libtest's human output, pretty and terse) and
//! `cargo nextest run`.

use super::{add, count_word, drop_parenthesised, Found, Framework, Names};

#[derive(Default)]
pub(super) struct Parser {
    cargo: Cargo,
    nextest: Nextest,
}

impl Parser {
    /// `trimmed`: `line` without its indentation.
    pub(super) fn line(&mut self, line: &str, trimmed: &str) {
        self.cargo.line(line);
        self.nextest.line(trimmed);
    }

    /// (nextest, cargo test).
    pub(super) fn finish(self) -> (Option<Found>, Option<Found>) {
        (self.nextest.finish(), self.cargo.finish())
    }
}

/// libtest as run by `cargo test`: every test binary prints `running N
/// tests`, a line per test (pretty) or a dot per test (terse, `-q`), the
/// failures with their output, a `failures:` list of names, and `test
/// result: ...`. Its lines start at column 0; nextest's captured copies of
/// them are indented and so not read here.
#[derive(Default)]
struct Cargo {
    seen: bool,
    passed: u64,
    failed: u64,
    ignored: u64,
    /// Per-test lines of the binary running now, counted in case it dies
    /// before its `test result:` line.
    open: Option<[u64; 3]>,
    names: Names,
    /// Just after a `failures:` line: indented names may follow.
    in_list: bool,
}

impl Cargo {
    fn line(&mut self, line: &str) {
        if self.in_list {
            if let Some(name) = line.strip_prefix("    ") {
                if !name.starts_with(char::is_whitespace) && !name.is_empty() {
                    self.names.push(name);
                    return;
                }
            }
            self.in_list = false;
        }
        // Terse (`-q`): "name --- FAILED".
        if let Some(name) = line.strip_suffix(" --- FAILED") {
            self.names.push(name);
            return;
        }
        let Some(first) = line.as_bytes().first() else {
            return;
        };
        match first {
            b'f' if line == "failures:" => self.in_list = true,
            b'r' => {
                if let Some(rest) = line.strip_prefix("running ") {
                    if let Some((_, word)) = count_word(rest) {
                        if word == "tests" || word == "test" {
                            self.seen = true;
                            self.close_binary();
                            self.open = Some([0; 3]);
                        }
                    }
                }
            }
            b't' => {
                if let Some(rest) = line.strip_prefix("test result: ") {
                    self.result(rest);
                } else if let Some(rest) = line.strip_prefix("test ") {
                    if let Some((name, status)) = rest.rsplit_once(" ... ") {
                        self.test_line(name, status);
                    }
                }
            }
            b'-' => {
                // The failure's captured output: "---- name stdout ----".
                if let Some(name) = line
                    .strip_prefix("---- ")
                    .and_then(|r| r.strip_suffix(" stdout ----"))
                {
                    self.names.push(name);
                }
            }
            _ => {}
        }
    }

    fn test_line(&mut self, name: &str, status: &str) {
        let slot = if status == "ok" {
            0
        } else if status == "FAILED" {
            self.names.push(name);
            1
        } else if status.starts_with("ignored") {
            2
        } else {
            return;
        };
        if let Some(open) = &mut self.open {
            open[slot] += 1;
        }
    }

    /// "ok. 4 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out;
    /// finished in 0.00s"
    fn result(&mut self, rest: &str) {
        let Some((_, counts)) = rest.split_once(". ") else {
            return;
        };
        self.seen = true;
        self.open = None;
        for item in counts.split(';') {
            match count_word(item) {
                Some((n, "passed")) => self.passed = self.passed.saturating_add(n),
                Some((n, "failed")) => self.failed = self.failed.saturating_add(n),
                Some((n, "ignored")) => self.ignored = self.ignored.saturating_add(n),
                _ => {}
            }
        }
    }

    /// A binary that printed test lines but no result (it crashed): count
    /// its lines.
    fn close_binary(&mut self) {
        if let Some([p, f, i]) = self.open.take() {
            self.passed = self.passed.saturating_add(p);
            self.failed = self.failed.saturating_add(f);
            self.ignored = self.ignored.saturating_add(i);
        }
    }

    fn finish(mut self) -> Option<Found> {
        if !self.seen {
            return None;
        }
        self.close_binary();
        let mut found = Found::new(Framework::Cargo);
        found.passed = Some(self.passed);
        found.failed = Some(self.failed);
        found.skipped = Some(self.ignored);
        found.failing = self.names.into_vec();
        Some(found)
    }
}

/// `cargo nextest run`: `Starting N tests across M binaries`, a status line
/// per test (`PASS [   0.006s] (1/8) crate::bin test_name`), `Summary
/// [...] N tests run: ...`, then the failing tests' status lines again.
/// Failing names are reported as nextest prints them, binary id and test
/// name: `rsfail::api api_fails`.
#[derive(Default)]
struct Nextest {
    seen: bool,
    passed: Option<u64>,
    failed: Option<u64>,
    skipped: Option<u64>,
    /// Tests that were to run and did not (a cancelled run: "3/8 tests
    /// run").
    not_run: u64,
    total: u64,
    after_summary: bool,
    /// Failures while running (retried attempts included).
    during: Names,
    /// Failures listed after the summary: the final word.
    listed: Names,
    /// Tests that failed an attempt, then passed on retry.
    recovered: Vec<String>,
}

enum Status {
    Pass,
    Fail,
    /// A failed attempt that will be retried.
    Retry,
    Other,
}

impl Nextest {
    fn line(&mut self, t: &str) {
        // Status words are upper case: a cheap first filter.
        if !t.as_bytes().first().is_some_and(u8::is_ascii_uppercase) {
            return;
        }
        if let Some(rest) = t.strip_prefix("Summary [") {
            if let Some((_, stats)) = rest.split_once(']') {
                self.summary(stats.trim());
            }
            return;
        }
        if t.starts_with("Starting ") && t.contains(" across ") {
            self.seen = true;
            return;
        }
        if let Some((status, name)) = status_line(t) {
            self.seen = true;
            match status {
                Status::Fail | Status::Retry if self.after_summary => self.listed.push(name),
                Status::Fail | Status::Retry => self.during.push(name),
                Status::Pass => {
                    if self.during.contains(name) && self.recovered.len() < 1000 {
                        self.recovered.push(name.to_string());
                    }
                }
                Status::Other => {}
            }
        }
    }

    /// "8 tests run: 5 passed (1 slow), 3 failed, 1 timed out, 2 skipped",
    /// or "3/8 tests run: ..." when cancelled.
    fn summary(&mut self, stats: &str) {
        let Some((run, counts)) = stats.split_once(':') else {
            return;
        };
        let Some(run) = run
            .strip_suffix(" tests run")
            .or_else(|| run.strip_suffix(" test run"))
        else {
            return;
        };
        self.seen = true;
        self.after_summary = true;
        if let Some((ran, total)) = run.split_once('/') {
            if let (Ok(ran), Ok(total)) = (ran.trim().parse::<u64>(), total.trim().parse::<u64>()) {
                self.not_run = self.not_run.saturating_add(total.saturating_sub(ran));
                self.total = self.total.saturating_add(total);
            }
        } else if let Ok(total) = run.trim().parse::<u64>() {
            self.total = self.total.saturating_add(total);
        }
        // Parentheses hold sub-counts ("(1 slow, 2 flaky)"); drop them
        // before splitting on commas.
        let mut flat = String::with_capacity(counts.len());
        let mut depth = 0u32;
        for c in counts.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ if depth == 0 => flat.push(c),
                _ => {}
            }
        }
        // Zero where the line says nothing: nextest omits "0 failed".
        add(&mut self.passed, 0);
        add(&mut self.failed, 0);
        add(&mut self.skipped, 0);
        for item in flat.split(',') {
            match count_word(drop_parenthesised(item)) {
                Some((n, "passed")) => add(&mut self.passed, n),
                Some((n, "failed" | "exec failed" | "timed out")) => add(&mut self.failed, n),
                Some((n, "skipped")) => add(&mut self.skipped, n),
                _ => {}
            }
        }
    }

    fn finish(self) -> Option<Found> {
        if !self.seen {
            return None;
        }
        let mut found = Found::new(Framework::Nextest);
        found.passed = self.passed;
        found.failed = self.failed;
        found.skipped = self.skipped;
        found.failing = if !self.listed.is_empty() {
            self.listed.into_vec()
        } else {
            let mut names = self.during.into_vec();
            names.retain(|n| !self.recovered.contains(n));
            names
        };
        if self.not_run > 0 {
            found
                .notes
                .push(format!("{} of {} tests not run", self.not_run, self.total));
        }
        Some(found)
    }
}

/// "FAIL [   0.090s] (2/8) rsfail tests::adds_wrong" → (Fail,
/// "rsfail tests::adds_wrong"). The status is upper case (`PASS`, `FAIL`,
/// `SIGSEGV`, `TRY 2 FAIL`, `FLAKY 2/3`, ...) and the bracket holds a
/// duration.
fn status_line(t: &str) -> Option<(Status, &str)> {
    // The status is at most 12 characters, then " [".
    let open = memchr::memchr(b'[', &t.as_bytes()[..t.len().min(20)])?;
    let prefix = t[..open].trim_end();
    if prefix.is_empty()
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b" +-/".contains(&b))
    {
        return None;
    }
    let close = open + t[open..].find(']')?;
    if !t[open + 1..close].trim().ends_with('s') {
        return None;
    }
    let mut rest = t[close + 1..].trim_start();
    // The counter: "(2/8)" or "( 2/10)".
    if rest.starts_with('(') {
        rest = rest.split_once(')').map_or(rest, |(_, r)| r.trim_start());
    }
    let name = rest.trim_end();
    if name.is_empty() {
        return None;
    }
    Some((classify(prefix), name))
}

fn classify(prefix: &str) -> Status {
    if let Some(rest) = prefix.strip_prefix("TRY ") {
        // "TRY 2 FAIL", "TRY 1 PASS", "TRY 3 SEGV".
        let word = rest.split_once(' ').map_or("", |(_, w)| w);
        return match word {
            "PASS" | "LEAK" | "TMPASS" => Status::Pass,
            "SLOW" | "START" | "TRMNTG" | "" => Status::Other,
            _ => Status::Retry,
        };
    }
    match prefix {
        "PASS" | "LEAK" | "TIMEOUT-PASS" => Status::Pass,
        "FAIL" | "FAIL + LEAK" | "XFAIL" | "LEAK-FAIL" | "TIMEOUT" => Status::Fail,
        _ if prefix.starts_with("FLAKY") => Status::Pass,
        _ if prefix.starts_with("FLKY-FL") => Status::Fail,
        _ if prefix.starts_with("SIG") || prefix.starts_with("ABORT") => Status::Fail,
        _ => Status::Other,
    }
}
