//! Streamed markdown for the terminal: headings, lists, quotes, rules,
//! fenced code blocks (with their language tag), inline code, bold and
//! italics.
//!
//! Text arrives in pieces that may end anywhere, also inside `**bold`; a
//! line is rendered only once it is complete, so half-finished markup is
//! never shown, and terminal controls are stripped from whole lines (an
//! escape sequence split across pieces is still caught). Without color the
//! text is printed as written (markdown
//! reads well as plain text). Hand-written rather than a crate: the subset
//! is small, and rendering line by line is what streaming needs.

use crate::cli::render::{paint, strip_terminal_controls};

/// Turns streamed text into rendered lines.
#[derive(Debug, Default)]
pub struct MarkdownStream {
    pending: String,
    in_code: bool,
    color: bool,
    width: usize,
}

impl MarkdownStream {
    pub fn new(color: bool, width: usize) -> Self {
        MarkdownStream {
            color,
            width,
            ..MarkdownStream::default()
        }
    }

    /// Add a piece of text; returns the rendered complete lines (each
    /// ending with a newline), possibly none.
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let Some(end) = self.pending.rfind('\n') else {
            return String::new();
        };
        let complete: String = self.pending.drain(..=end).collect();
        let mut out = String::new();
        for line in complete.split_inclusive('\n') {
            out.push_str(&self.line(line.trim_end_matches('\n')));
            out.push('\n');
        }
        out
    }

    /// The text of the line not complete yet, as it arrived (not
    /// rendered, controls not stripped).
    pub fn pending(&self) -> &str {
        &self.pending
    }

    /// The rest of the text at the end of a message; starts a new message.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let out = if rest.is_empty() {
            String::new()
        } else {
            format!("{}\n", self.line(&rest))
        };
        self.in_code = false;
        out
    }

    /// Forget what was not rendered yet (the message was abandoned).
    pub fn reset(&mut self) {
        self.pending.clear();
        self.in_code = false;
    }

    fn line(&mut self, line: &str) -> String {
        let line = strip_terminal_controls(line);
        let line = line.as_ref();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            self.in_code = !self.in_code;
            if !self.color {
                return line.to_string();
            }
            let lang = trimmed.trim_start_matches('`').trim();
            return if self.in_code && !lang.is_empty() {
                paint(true, "2", &format!("── {lang}"))
            } else {
                paint(true, "2", "──")
            };
        }
        if !self.color {
            return line.to_string();
        }
        if self.in_code {
            return format!("  {}", paint(true, "36", line));
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some((level, text)) = heading(trimmed) {
            let code = if level == 1 { "1;4" } else { "1" };
            return format!("{indent}{}", paint(true, code, &inline(text, true)));
        }
        if let Some(text) = ["- ", "* ", "+ "]
            .iter()
            .find_map(|m| trimmed.strip_prefix(m))
        {
            return format!("{indent}• {}", inline(text, true));
        }
        if let Some(text) = trimmed.strip_prefix('>') {
            return format!(
                "{indent}{} {}",
                paint(true, "2", "│"),
                paint(true, "2", &inline(text.trim_start(), false))
            );
        }
        if is_rule(trimmed) {
            return paint(true, "2", &"─".repeat(self.width.clamp(3, 60)));
        }
        format!("{indent}{}", inline(trimmed, true))
    }
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&level) && line[level..].starts_with(' ') {
        Some((level, line[level..].trim()))
    } else {
        None
    }
}

fn is_rule(line: &str) -> bool {
    let l = line.trim();
    l.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|c| l.chars().all(|x| x == *c || x == ' '))
        && l.chars().filter(|c| !c.is_whitespace()).count() >= 3
}

/// Inline code, bold and italics within one complete line. Markers
/// without a closing partner are printed as they are.
fn inline(text: &str, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (marker, code) = if rest.starts_with('`') {
            ("`", "36")
        } else if rest.starts_with("**") {
            ("**", "1")
        } else if rest.starts_with('*') || rest.starts_with('_') {
            (&rest[..1], "3")
        } else {
            let next = rest
                .find(['`', '*', '_'])
                .filter(|i| *i > 0)
                .unwrap_or(rest.len());
            out.push_str(&rest[..next]);
            rest = &rest[next..];
            continue;
        };
        let body = &rest[marker.len()..];
        // `_` inside a word (snake_case) is not emphasis.
        let word_underscore =
            marker == "_" && out.chars().last().is_some_and(char::is_alphanumeric);
        match body.find(marker).filter(|i| *i > 0 && !word_underscore) {
            Some(end) => {
                out.push_str(&paint(true, code, &body[..end]));
                rest = &body[end + marker.len()..];
            }
            None => {
                out.push_str(marker);
                rest = body;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(pieces: &[&str], color: bool) -> Vec<String> {
        let mut md = MarkdownStream::new(color, 20);
        let mut out = Vec::new();
        for p in pieces {
            out.push(md.push(p));
        }
        out.push(md.finish());
        out
    }

    #[test]
    fn nothing_is_shown_before_a_line_is_complete() {
        let out = render(&["Some **bo", "ld** text", "\nnext"], true);
        assert_eq!(out[0], "");
        assert_eq!(out[1], "", "half a line waits");
        assert_eq!(out[2], "Some \x1b[1mbold\x1b[0m text\n");
        assert_eq!(out[3], "next\n");
    }

    #[test]
    fn blocks_render_with_color() {
        let text = "# Title\n- item `x`\n```rust\nlet a = 1;\n```\n> note\n---\nsnake_case_name\n";
        let out = render(&[text], true).concat();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "\x1b[1;4mTitle\x1b[0m");
        assert_eq!(lines[1], "• item \x1b[36mx\x1b[0m");
        assert_eq!(lines[2], "\x1b[2m── rust\x1b[0m");
        assert_eq!(lines[3], "  \x1b[36mlet a = 1;\x1b[0m");
        assert_eq!(lines[4], "\x1b[2m──\x1b[0m");
        assert!(lines[5].contains("note"));
        assert_eq!(lines[6], format!("\x1b[2m{}\x1b[0m", "─".repeat(20)));
        assert_eq!(lines[7], "snake_case_name");
    }

    #[test]
    fn without_color_the_text_is_unchanged() {
        let text = "# Title\n- **a**\n```sh\nls\n```\n";
        assert_eq!(render(&[text], false).concat(), text);
    }

    #[test]
    fn escape_sequences_split_across_pieces_are_stripped() {
        let out = render(&["a\x1b]0;ti", "tle\x07b\x1b[", "2Jc\n"], false).concat();
        assert_eq!(out, "abc\n");
    }

    #[test]
    fn code_block_content_is_not_markdown() {
        let out = render(&["```\n# not a heading *x*\n```\n"], true).concat();
        assert!(out.contains("# not a heading *x*"), "{out:?}");
    }
}
