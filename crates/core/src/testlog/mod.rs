//! Reading a test command's output: which tool ran, how many tests passed,
//! failed and were skipped, and which ones failed.
//!
//! [`parse`] takes the combined stdout and stderr of `cargo test`,
//! `cargo nextest run`, `pytest`, `go test`, `jest` or `vitest` (or of
//! anything printing a line such as "3 passed, 1 failed") and returns a
//! [`TestReport`]. It is pure and uses plain string operations: no regexes,
//! nothing that backtracks.
//!
//! ANSI escapes are removed first, and a line rewritten with `\r` counts as
//! what a terminal would show last. Then one pass over the lines, in which
//! every framework's parser sees every line. At the end the frameworks
//! whose output was recognised compete: one that saw failures beats one
//! that did not (a `make test` running two tools must not hide the failing
//! one), then the more specific wins, in the order nextest (whose output
//! embeds libtest's), cargo test, vitest, jest, pytest, go. Only when none
//! was recognised does the generic reading look for a counting line, going
//! back from the end, where a summary is.
//!
//! Counts are what the tools print, summed when a tool prints several
//! summaries (one per cargo test binary, per workspace package, per run).
//! Mapped onto passed/failed/skipped: pytest's errors count as failed, its
//! xfailed as skipped and xpassed as passed; nextest's timed-out and
//! exec-failed tests as failed; jest's and vitest's todo as skipped.

mod generic;
mod go;
mod js;
mod python;
mod rust;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

/// Which tool's output was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    /// `cargo test` (libtest's `test result:` lines).
    Cargo,
    /// `cargo nextest run`.
    Nextest,
    /// `pytest`.
    Pytest,
    /// `go test`.
    Go,
    /// `jest`.
    Jest,
    /// `vitest`.
    Vitest,
    /// No known tool, but a line counting tests ("3 passed, 1 failed").
    Generic,
}

impl Framework {
    /// How the summary line names the tool.
    fn label(self) -> &'static str {
        match self {
            Framework::Cargo => "cargo test",
            Framework::Nextest => "cargo nextest",
            Framework::Pytest => "pytest",
            Framework::Go => "go test",
            Framework::Jest => "jest",
            Framework::Vitest => "vitest",
            Framework::Generic => "tests",
        }
    }

    /// The tool's own word for tests it did not run.
    fn skipped_word(self) -> &'static str {
        match self {
            Framework::Cargo => "ignored",
            _ => "skipped",
        }
    }
}

/// What a test command's output says.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TestReport {
    /// None: nothing recognisable (only the exit code and tail are known).
    pub framework: Option<Framework>,
    /// Tests that passed (`None`: the output does not say).
    pub passed: Option<u64>,
    /// Tests that failed, errors included (`None`: the output does not
    /// say).
    pub failed: Option<u64>,
    /// ignored/skipped/todo
    pub skipped: Option<u64>,
    /// Names of failing tests, in order of first appearance, deduplicated,
    /// capped at 100 (see [`MAX_FAILING`]).
    pub failing_tests: Vec<String>,
    /// One line a human and a model can read, e.g. "cargo test: 41 passed,
    /// 2 failed, 1 ignored"; empty when nothing recognised.
    pub summary: String,
}

/// At most this many names in [`TestReport::failing_tests`].
pub const MAX_FAILING: usize = 100;

/// A failing test's name is cut to this many bytes (at a char boundary).
const MAX_NAME_BYTES: usize = 512;

/// Parse combined stdout+stderr of a test command.
pub fn parse(output: &str) -> TestReport {
    let clean = strip_ansi(output);
    let mut rust = rust::Parser::default();
    let mut python = python::Parser::default();
    let mut go = go::Parser::default();
    let mut js = js::Parser::default();
    let mut generic = generic::Parser::default();
    let mut start = 0;
    let bytes = clean.as_bytes();
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    // Most output has no `\r` at all: then no line needs looking at twice.
    let has_cr = memchr::memchr(b'\r', bytes).is_some();
    for end in ends {
        let line = &clean[start..end];
        let line = if has_cr { visible(line) } else { line };
        start = end + 1;
        // Without its indentation (spaces and tabs only: cheaper than
        // Unicode whitespace, and all the tools indent with those).
        let indent = line
            .bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count();
        let trimmed = &line[indent..];
        rust.line(line, trimmed);
        python.line(line);
        go.line(line, trimmed);
        js.line(line, trimmed);
        generic.line(line);
    }
    let mut found: Vec<Found> = Vec::with_capacity(6);
    let (nextest, cargo) = rust.finish();
    let (vitest, jest) = js.finish();
    // In order of preference.
    found.extend(nextest);
    found.extend(cargo);
    found.extend(vitest);
    found.extend(jest);
    found.extend(python.finish());
    found.extend(go.finish());
    let chosen = match found.iter().position(Found::saw_failures) {
        Some(i) => Some(found.swap_remove(i)),
        None if !found.is_empty() => Some(found.swap_remove(0)),
        None => generic.finish(&clean),
    };
    chosen.map(Found::into_report).unwrap_or_default()
}

/// The last `max_bytes` of output, cut at a line (and char) boundary, with
/// a leading "[... N bytes cut]\n" marker when cut.
///
/// The marker is not counted in `max_bytes`. The cut moves forward to the
/// start of the next line; when the kept part has no line start at all (one
/// long last line), it is cut at a char boundary instead.
pub fn tail(output: &str, max_bytes: usize) -> String {
    if output.len() <= max_bytes {
        return output.to_string();
    }
    let mut start = output.len() - max_bytes;
    while !output.is_char_boundary(start) {
        start += 1;
    }
    let at_line_start = output.as_bytes()[start - 1] == b'\n';
    if !at_line_start {
        if let Some(i) = memchr::memchr(b'\n', &output.as_bytes()[start..]) {
            if start + i + 1 < output.len() {
                start += i + 1;
            }
        }
    }
    format!("[... {start} bytes cut]\n{}", &output[start..])
}

/// `s` without ANSI escape sequences (CSI such as colours and cursor moves,
/// OSC such as hyperlinks and titles, and two- and three-byte escapes such
/// as charset selection). Borrowed when there is none.
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    let bytes = s.as_bytes();
    let Some(first) = memchr::memchr(0x1b, bytes) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = first;
    loop {
        // bytes[i] is ESC: everything before it since `copied` is text.
        out.push_str(&s[copied..i]);
        let end = escape_end(bytes, i);
        copied = end;
        match memchr::memchr(0x1b, &bytes[end..]) {
            Some(next) => i = end + next,
            None => break,
        }
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// The index just past the escape sequence starting at `bytes[esc]`. Only
/// ASCII bytes are consumed, so the result is a char boundary.
fn escape_end(bytes: &[u8], esc: usize) -> usize {
    let n = bytes.len();
    let Some(&kind) = bytes.get(esc + 1) else {
        return n;
    };
    match kind {
        // CSI: parameters and intermediates, then one final byte.
        b'[' => {
            let mut j = esc + 2;
            while j < n && (0x20..=0x3f).contains(&bytes[j]) {
                j += 1;
            }
            if j < n && (0x40..=0x7e).contains(&bytes[j]) {
                j + 1
            } else {
                j
            }
        }
        // OSC: up to BEL or ST (ESC \), never past the line.
        b']' => {
            let mut j = esc + 2;
            while j < n {
                match bytes[j] {
                    0x07 => return j + 1,
                    0x1b if bytes.get(j + 1) == Some(&b'\\') => return j + 2,
                    b'\n' => return j,
                    _ => j += 1,
                }
            }
            n
        }
        // Charset selection: ESC ( B and the like.
        b'(' | b')' | b'*' | b'+' => match bytes.get(esc + 2) {
            Some(c) if c.is_ascii() && *c != b'\n' => esc + 3,
            _ => esc + 2,
        },
        c if c.is_ascii() && c != b'\n' => esc + 2,
        _ => esc + 1,
    }
}

/// What a terminal would show of one raw line: a trailing `\r` dropped, and
/// only the text after the last `\r` in the middle.
fn visible(raw: &str) -> &str {
    let line = raw.trim_end_matches('\r');
    match memchr::memrchr(b'\r', line.as_bytes()) {
        Some(i) => &line[i + 1..],
        None => line,
    }
}

/// What one parser made of the output.
struct Found {
    framework: Framework,
    passed: Option<u64>,
    failed: Option<u64>,
    skipped: Option<u64>,
    failing: Vec<String>,
    /// Further clauses for the summary, joined with "; ".
    notes: Vec<String>,
}

impl Found {
    fn new(framework: Framework) -> Self {
        Found {
            framework,
            passed: None,
            failed: None,
            skipped: None,
            failing: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn saw_failures(&self) -> bool {
        self.failed.is_some_and(|n| n > 0) || !self.failing.is_empty()
    }

    fn into_report(self) -> TestReport {
        let mut counts = Vec::with_capacity(3);
        if let Some(n) = self.passed {
            counts.push(format!("{n} passed"));
        }
        if let Some(n) = self.failed {
            counts.push(format!("{n} failed"));
        }
        if let Some(n) = self.skipped.filter(|&n| n > 0) {
            counts.push(format!("{n} {}", self.framework.skipped_word()));
        }
        let mut clauses = Vec::with_capacity(1 + self.notes.len());
        if !counts.is_empty() {
            clauses.push(counts.join(", "));
        }
        clauses.extend(self.notes);
        if clauses.is_empty() {
            clauses.push("no counts found".to_string());
        }
        let summary = format!("{}: {}", self.framework.label(), clauses.join("; "));
        TestReport {
            framework: Some(self.framework),
            passed: self.passed,
            failed: self.failed,
            skipped: self.skipped,
            failing_tests: self.failing,
            summary,
        }
    }
}

/// Failing test names: in order of first appearance, without repeats, at
/// most [`MAX_FAILING`], each at most [`MAX_NAME_BYTES`].
#[derive(Default)]
struct Names(Vec<String>);

impl Names {
    fn push(&mut self, name: &str) {
        if self.0.len() >= MAX_FAILING {
            return;
        }
        let name = clip(name.trim(), MAX_NAME_BYTES);
        if name.is_empty() || self.0.iter().any(|n| n == name) {
            return;
        }
        self.0.push(name.to_string());
    }

    fn contains(&self, name: &str) -> bool {
        let name = clip(name.trim(), MAX_NAME_BYTES);
        self.0.iter().any(|n| n == name)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// `s` cut to at most `max` bytes at a char boundary.
fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Adds `n` to a count that may not have been seen yet.
fn add(count: &mut Option<u64>, n: u64) {
    *count = Some(count.unwrap_or(0).saturating_add(n));
}

/// "12 passed" → (12, "passed"): a count, then the rest trimmed. None when
/// `item` does not start with a number.
fn count_word(item: &str) -> Option<(u64, &str)> {
    let item = item.trim();
    let digits = item.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    let n = item[..digits].parse().ok()?;
    Some((n, item[digits..].trim()))
}

/// `s` without its trailing parenthesised part, if it ends with one:
/// "3 passed (1 slow)" → "3 passed".
fn drop_parenthesised(s: &str) -> &str {
    let s = s.trim_end();
    if s.ends_with(')') {
        if let Some(i) = s.rfind(" (") {
            return s[..i].trim_end();
        }
    }
    s
}
