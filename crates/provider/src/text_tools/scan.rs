//! Finding tool-call blocks in a reply as it streams.
//!
//! Text passes through as it arrives, except what might be a call: a line
//! that opens a ```` ``` ```` fence (untagged or tagged `json`, `tool`,
//! `tool_call`, `tool_code`), a `<tool_call>` tag, or a bare JSON object
//! at the start of a line whose first key may name a tool. That is held
//! back until it is complete, then parsed: calls become [`Piece::Call`],
//! a block that tried to be a call and failed becomes [`Piece::Invalid`],
//! anything else is released as the text it was. Other code fences pass
//! through untouched, JSON lines inside them too.

use crate::freeform;
use cogni_protocol::ToolCallKind;
use serde_json::Value;

/// What the scanner found, in reply order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Call {
        name: String,
        arguments: String,
        kind: ToolCallKind,
    },
    /// A block that meant to call a tool and could not be read: what was
    /// wrong, and the block as written.
    Invalid {
        problem: String,
        block: String,
    },
}

/// Fence tags whose blocks may hold calls (compared lowercased).
const CALL_TAGS: &[&str] = &["", "json", "tool", "tool_call", "tool-call", "tool_code"];
/// The tag some models (Hermes, Qwen) wrap calls in.
const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
/// Keys that name the tool; a bare object is held only when its first key
/// is one of these or an argument key.
const NAME_KEYS: &[&str] = &["tool", "tool_name", "name"];
const ARGUMENT_KEYS: &[&str] = &["arguments", "parameters"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Ordinary text; `line_start`: the pending text starts a line.
    Text { line_start: bool },
    /// Right after a block: the blanks up to the end of its line go.
    AfterBlock,
    /// Inside a code fence that holds no calls, until it closes.
    Code { ticks: usize, line_start: bool },
    /// Holding a block that may hold calls. `body`: where its content
    /// starts in the pending text; `searched`: how far complete lines were
    /// searched for the closing fence.
    Block {
        close: Close,
        body: usize,
        searched: usize,
    },
    /// Holding a JSON object that starts a line.
    Bare(JsonScan),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Close {
    Ticks(usize),
    Tag,
}

/// A string-aware brace matcher over the pending text.
#[derive(Debug, Clone, Copy, PartialEq)]
struct JsonScan {
    /// Where the `{` is.
    start: usize,
    /// How far the text was scanned.
    pos: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Where the first key starts, once its quote was seen.
    key_start: Option<usize>,
    key_checked: bool,
}

/// The scanner of one response.
#[derive(Debug)]
pub(crate) struct Scanner {
    pending: String,
    mode: Mode,
    /// The request's freeform tools (their input is raw text).
    freeform: Vec<String>,
    out: Vec<Piece>,
}

impl Scanner {
    pub(crate) fn new(freeform: Vec<String>) -> Self {
        Scanner {
            pending: String::new(),
            mode: Mode::Text { line_start: true },
            freeform,
            out: Vec::new(),
        }
    }

    /// Feed a piece of the reply.
    pub(crate) fn push(&mut self, delta: &str) {
        self.pending.push_str(delta);
        while self.step() {}
    }

    /// What was found since the last call, in order.
    pub(crate) fn take(&mut self) -> Vec<Piece> {
        std::mem::take(&mut self.out)
    }

    /// The reply is complete: whatever is held is settled. A block that
    /// was still open is read as it is; when the reply was `cut_off` (at
    /// its token limit) and the block does not read, it is reported as
    /// incomplete (the tool's name, if it was written) and dropped.
    pub(crate) fn finish(&mut self, cut_off: bool) -> Option<String> {
        let pending = std::mem::take(&mut self.pending);
        let mode = std::mem::replace(&mut self.mode, Mode::Text { line_start: true });
        let (content, block) = match mode {
            Mode::Text { .. } | Mode::Code { .. } => {
                self.text(pending);
                return None;
            }
            Mode::AfterBlock => {
                if !pending.trim().is_empty() {
                    self.text(pending);
                }
                return None;
            }
            Mode::Block { close, body, .. } => {
                let mut content = &pending[body..];
                if let Close::Ticks(ticks) = close {
                    // A closing fence without a newline after it.
                    let last = content.rfind('\n').map_or(0, |i| i + 1);
                    if closes(&content[last..], ticks) {
                        content = &content[..last];
                    }
                }
                (content, &pending[..])
            }
            Mode::Bare(scan) => (&pending[scan.start..], &pending[scan.start..]),
        };
        match parse_block(content, block, &self.freeform) {
            None => {
                self.text(pending.clone());
                None
            }
            Some(pieces) => {
                let invalid = pieces.iter().any(|p| matches!(p, Piece::Invalid { .. }));
                if cut_off && invalid {
                    return Some(tool_name(content).unwrap_or_else(|| "a tool".into()));
                }
                self.out.extend(pieces);
                None
            }
        }
    }

    fn text(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        if let Some(Piece::Text(last)) = self.out.last_mut() {
            last.push_str(&text);
        } else {
            self.out.push(Piece::Text(text));
        }
    }

    /// Release the first `n` bytes of the pending text as text.
    fn release(&mut self, n: usize) {
        let text: String = self.pending.drain(..n).collect();
        self.text(text);
    }

    /// One step forward; false when more text is needed.
    fn step(&mut self) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        match self.mode {
            Mode::Text { line_start: false } => {
                self.through_line_end(Mode::Text { line_start: true })
            }
            Mode::Text { line_start: true } => self.line_start(),
            Mode::AfterBlock => {
                let rest = self.pending.trim_start_matches([' ', '\t', '\r']);
                if rest.is_empty() {
                    self.pending.clear();
                    return false;
                }
                let blanks = self.pending.len() - rest.len();
                let eol = usize::from(rest.starts_with('\n'));
                self.pending.drain(..blanks + eol);
                self.mode = Mode::Text {
                    line_start: eol == 1,
                };
                true
            }
            Mode::Code {
                ticks,
                line_start: false,
            } => self.through_line_end(Mode::Code {
                ticks,
                line_start: true,
            }),
            Mode::Code {
                ticks,
                line_start: true,
            } => self.code_line(ticks),
            Mode::Block {
                close,
                body,
                searched,
            } => self.block(close, body, searched),
            Mode::Bare(scan) => self.bare(scan),
        }
    }

    /// Release the text up to and including the next newline (then be in
    /// `next`), or all of it.
    fn through_line_end(&mut self, next: Mode) -> bool {
        match self.pending.find('\n') {
            Some(i) => {
                self.release(i + 1);
                self.mode = next;
                true
            }
            None => {
                self.release(self.pending.len());
                false
            }
        }
    }

    fn line_start(&mut self) -> bool {
        let rest = self.pending.trim_start_matches([' ', '\t']);
        let indent = self.pending.len() - rest.len();
        if rest.is_empty() {
            return false;
        }
        if rest.starts_with('\n') {
            self.release(indent + 1);
            return true;
        }
        if rest.starts_with('{') {
            self.mode = Mode::Bare(JsonScan {
                start: indent,
                pos: indent + 1,
                depth: 1,
                in_string: false,
                escaped: false,
                key_start: None,
                key_checked: false,
            });
            return true;
        }
        if rest.starts_with('`') {
            let ticks = rest.len() - rest.trim_start_matches('`').len();
            if ticks == rest.len() {
                return false;
            }
            if ticks < 3 {
                self.mode = Mode::Text { line_start: false };
                return true;
            }
            let after = &rest[ticks..];
            let (tag, line_end) = match after.find('\n') {
                Some(nl) => (after[..nl].trim(), Some(indent + ticks + nl + 1)),
                None => (after.trim(), None),
            };
            let tag = tag.to_ascii_lowercase();
            match line_end {
                Some(end) if CALL_TAGS.contains(&tag.as_str()) => {
                    self.mode = Mode::Block {
                        close: Close::Ticks(ticks),
                        body: end,
                        searched: end,
                    };
                }
                Some(end) => {
                    self.release(end);
                    self.mode = Mode::Code {
                        ticks,
                        line_start: true,
                    };
                }
                None if CALL_TAGS.iter().any(|t| t.starts_with(tag.as_str())) => return false,
                None => {
                    self.mode = Mode::Code {
                        ticks,
                        line_start: false,
                    }
                }
            }
            return true;
        }
        if rest.starts_with(OPEN_TAG) {
            self.mode = Mode::Block {
                close: Close::Tag,
                body: indent + OPEN_TAG.len(),
                searched: indent + OPEN_TAG.len(),
            };
            return true;
        }
        if OPEN_TAG.starts_with(rest) {
            return false;
        }
        self.mode = Mode::Text { line_start: false };
        true
    }

    /// A line inside a fence that holds no calls: is it the closing fence?
    fn code_line(&mut self, ticks: usize) -> bool {
        let rest = self.pending.trim_start_matches([' ', '\t']);
        if rest.is_empty() {
            return false;
        }
        let (line, complete) = match rest.find('\n') {
            Some(i) => (&rest[..i], true),
            None => (rest, false),
        };
        if !rest.starts_with('`') || !line.trim_end().chars().all(|c| c == '`') {
            self.mode = Mode::Code {
                ticks,
                line_start: false,
            };
            return true;
        }
        if !complete {
            return false;
        }
        let i = self.pending.find('\n').unwrap_or(self.pending.len() - 1);
        let closed = closes(&self.pending[..i], ticks);
        self.release(i + 1);
        self.mode = if closed {
            Mode::Text { line_start: true }
        } else {
            Mode::Code {
                ticks,
                line_start: true,
            }
        };
        true
    }

    /// Holding a block: release it as soon as it cannot hold calls; settle
    /// it once it closes.
    fn block(&mut self, close: Close, body: usize, searched: usize) -> bool {
        let content = &self.pending[body..];
        if let Some(c) = content.trim_start().chars().next() {
            if c != '{' && c != '[' {
                let line_start = self.pending.ends_with('\n');
                self.release(self.pending.len());
                self.mode = match close {
                    Close::Ticks(ticks) => Mode::Code { ticks, line_start },
                    Close::Tag => Mode::Text { line_start },
                };
                return false;
            }
        }
        // (content end, block end)
        let found = match close {
            Close::Tag => self.pending[body..]
                .find(CLOSE_TAG)
                .map(|i| (body + i, body + i + CLOSE_TAG.len())),
            Close::Ticks(ticks) => {
                let mut at = searched;
                let mut found = None;
                while let Some(nl) = self.pending[at..].find('\n') {
                    if closes(&self.pending[at..at + nl], ticks) {
                        found = Some((at, at + nl + 1));
                        break;
                    }
                    at += nl + 1;
                }
                if found.is_none() {
                    self.mode = Mode::Block {
                        close,
                        body,
                        searched: at,
                    };
                }
                found
            }
        };
        let Some((content_end, end)) = found else {
            return false;
        };
        let parsed = parse_block(
            &self.pending[body..content_end],
            &self.pending[..end],
            &self.freeform,
        );
        match parsed {
            None => {
                self.release(end);
                self.mode = Mode::Text { line_start: true };
            }
            Some(pieces) => {
                self.out.extend(pieces);
                self.pending.drain(..end);
                self.mode = match close {
                    Close::Ticks(_) => Mode::Text { line_start: true },
                    Close::Tag => Mode::AfterBlock,
                };
            }
        }
        true
    }

    /// Holding a bare JSON object: scan on to its end.
    fn bare(&mut self, mut scan: JsonScan) -> bool {
        let mut end = None;
        let mut not_a_call = false;
        for (i, c) in self.pending[scan.pos..].char_indices() {
            let at = scan.pos + i;
            if scan.in_string {
                if scan.escaped {
                    scan.escaped = false;
                } else if c == '\\' {
                    scan.escaped = true;
                } else if c == '"' {
                    scan.in_string = false;
                    if let (Some(key), false) = (scan.key_start, scan.key_checked) {
                        scan.key_checked = true;
                        let key = &self.pending[key..at];
                        if !NAME_KEYS.contains(&key) && !ARGUMENT_KEYS.contains(&key) {
                            not_a_call = true;
                            break;
                        }
                    }
                }
                continue;
            }
            match c {
                '"' => {
                    scan.in_string = true;
                    if scan.depth == 1 && scan.key_start.is_none() {
                        scan.key_start = Some(at + 1);
                    }
                }
                '{' | '[' => scan.depth += 1,
                '}' | ']' => {
                    scan.depth -= 1;
                    if scan.depth == 0 {
                        end = Some(at + 1);
                        break;
                    }
                }
                c if !scan.key_checked && scan.key_start.is_none() && !c.is_whitespace() => {
                    // Only a key may open an object.
                    not_a_call = true;
                    break;
                }
                _ => {}
            }
        }
        if not_a_call {
            self.mode = Mode::Text { line_start: false };
            return true;
        }
        let Some(end) = end else {
            scan.pos = self.pending.len();
            self.mode = Mode::Bare(scan);
            return false;
        };
        let object = &self.pending[scan.start..end];
        match parse_block(object, object, &self.freeform) {
            None => {
                self.release(end);
                self.mode = Mode::Text { line_start: false };
            }
            Some(pieces) => {
                self.out.extend(pieces);
                self.pending.drain(..end);
                self.mode = Mode::AfterBlock;
            }
        }
        true
    }
}

/// Whether `line` is a closing fence for an opening of `ticks` backticks.
fn closes(line: &str, ticks: usize) -> bool {
    let line = line.trim();
    line.len() >= ticks && line.chars().all(|c| c == '`')
}

/// The calls in a block's `content` (one JSON object, several, or an
/// array of them); `None` when the block is no call at all (JSON that
/// names no tool, or broken JSON that does not look like a call).
fn parse_block(content: &str, block: &str, freeform: &[String]) -> Option<Vec<Piece>> {
    let mut values = Vec::new();
    let mut error = None;
    for value in serde_json::Deserializer::from_str(content).into_iter::<Value>() {
        match value {
            Ok(Value::Array(items)) => values.extend(items),
            Ok(value) => values.push(value),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let meant = values.iter().any(looks_like_call)
        || (error.is_some()
            && [
                "\"tool\"",
                "\"tool_name\"",
                "\"arguments\"",
                "\"parameters\"",
            ]
            .iter()
            .any(|k| content.contains(k)));
    if !meant {
        return None;
    }
    let mut pieces: Vec<Piece> = values
        .iter()
        .map(|v| {
            read_call(v, freeform).unwrap_or_else(|problem| Piece::Invalid {
                problem,
                block: block.to_string(),
            })
        })
        .collect();
    if let Some(e) = error {
        let problem = if e.is_eof() {
            format!("the JSON ends before it is complete ({e})")
        } else {
            format!("it is not valid JSON: {e}")
        };
        pieces.push(Piece::Invalid {
            problem,
            block: block.to_string(),
        });
    }
    Some(pieces)
}

fn looks_like_call(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let has = |keys: &[&str]| keys.iter().any(|k| object.contains_key(*k));
    // `arguments` alone: a call that forgot its tool's name.
    has(&["tool", "tool_name", "arguments"]) || (has(&["name"]) && has(ARGUMENT_KEYS))
}

/// One call from its JSON, or what is wrong with it.
fn read_call(value: &Value, freeform: &[String]) -> Result<Piece, String> {
    let Some(object) = value.as_object() else {
        return Err(format!(
            "a call must be a JSON object, not {}",
            kind_of(value)
        ));
    };
    let name = NAME_KEYS.iter().find_map(|k| object.get(*k));
    let name = match name {
        None => return Err("it names no tool (add \"tool\": \"NAME\")".into()),
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(other) => {
            return Err(format!(
                "the tool's name must be a non-empty string, not {}",
                kind_of(other)
            ))
        }
    };
    let arguments = ARGUMENT_KEYS.iter().find_map(|k| object.get(*k));
    let free = freeform.contains(&name);
    let arguments = match arguments {
        None | Some(Value::Null) => "{}".to_string(),
        Some(object @ Value::Object(_)) => object.to_string(),
        Some(Value::String(text)) if free => {
            return Ok(Piece::Call {
                name,
                arguments: text.clone(),
                kind: ToolCallKind::Freeform,
            })
        }
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            // Arguments encoded as a string, the way the wire APIs send them.
            Ok(object @ Value::Object(_)) => object.to_string(),
            _ => {
                return Err(format!(
                    "the arguments of `{name}` must be a JSON object, not a string"
                ))
            }
        },
        Some(other) => {
            return Err(format!(
                "the arguments of `{name}` must be a JSON object, not {}",
                kind_of(other)
            ))
        }
    };
    let (kind, arguments) = freeform::call(freeform, &name, arguments);
    Ok(Piece::Call {
        name,
        arguments,
        kind,
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The tool a (broken) block names, for reports: the string after the
/// first name key.
fn tool_name(content: &str) -> Option<String> {
    NAME_KEYS.iter().find_map(|key| {
        let at = content.find(&format!("\"{key}\""))? + key.len() + 2;
        let rest = content[at..].trim_start().strip_prefix(':')?.trim_start();
        let rest = rest.strip_prefix('"')?;
        Some(rest[..rest.find('"')?].to_string())
    })
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
