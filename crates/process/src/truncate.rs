//! Head + tail capping of text shown to the model.
//!
//! Long output keeps its beginning and its end, joined by one explicit marker
//! line (`[... N lines omitted ...]`, with a byte count when a line had to be
//! cut). Cuts happen at line ends when possible and always on UTF-8
//! boundaries. The caps apply to the kept text; the marker line comes on top.

use std::fmt::Write as _;

/// How much text may reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of text kept (the marker line comes on top).
    pub max_bytes: usize,
    /// The most lines of text kept (the marker line comes on top).
    pub max_lines: usize,
}

/// Part of a text that was never kept in memory (see `exec::CapturedStream`):
/// its size is known, its content is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gap {
    /// Bytes in the gap.
    pub bytes: u64,
    /// Line feeds inside the gap.
    pub newlines: u64,
    /// Whether the gap's last byte is a line feed.
    pub ends_with_newline: bool,
}

/// Cut `text` to `max` bytes on a character boundary, saying how much was
/// cut (`… [N more bytes]`): for one-line reports, where the end matters
/// less than the start.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more bytes]", &text[..cut], text.len() - cut)
}

/// Cap `text` to `limits`, keeping a head and a tail. Returns the text
/// unchanged when it fits.
pub fn head_tail(text: &str, limits: Limits) -> String {
    head_tail_parts(text, Gap::default(), "", limits)
}

/// Cap the text `head ++ <gap> ++ tail`, where the gap was dropped before we
/// saw it. With an empty gap this is [`head_tail`] of the concatenation.
pub fn head_tail_parts(head: &str, gap: Gap, tail: &str, limits: Limits) -> String {
    if gap.bytes == 0 {
        if tail.is_empty() {
            return cap_whole(head, limits);
        }
        return cap_whole(&format!("{head}{tail}"), limits);
    }
    let h = prefix_cut(head, halve(limits));
    let t = suffix_cut(tail, remaining(limits, h));
    let omitted = Omitted::of(&head[h.bytes..], gap, &tail[..t]);
    assemble(&head[..h.bytes], omitted, &tail[t..])
}

fn cap_whole(text: &str, limits: Limits) -> String {
    if text.len() <= limits.max_bytes && count_lines(text) <= limits.max_lines as u64 {
        return text.to_string();
    }
    let h = prefix_cut(text, halve(limits));
    let rest = &text[h.bytes..];
    let t = suffix_cut(rest, remaining(limits, h));
    let omitted = Omitted::of(&rest[..t], Gap::default(), "");
    assemble(&text[..h.bytes], omitted, &rest[t..])
}

/// Number of lines as a person counts them: a final line without a line feed
/// counts, an empty text has none.
pub fn count_lines(text: &str) -> u64 {
    let newlines = count_newlines(text);
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

fn count_newlines(text: &str) -> u64 {
    memchr::memchr_iter(b'\n', text.as_bytes()).count() as u64
}

/// The head gets the larger half of each budget.
fn halve(limits: Limits) -> Limits {
    Limits {
        max_bytes: limits.max_bytes.div_ceil(2),
        max_lines: limits.max_lines.div_ceil(2),
    }
}

/// What the tail may still use after the head took its part.
fn remaining(limits: Limits, head: Prefix) -> Limits {
    Limits {
        max_bytes: limits.max_bytes.saturating_sub(head.bytes),
        max_lines: limits.max_lines.saturating_sub(head.lines),
    }
}

#[derive(Debug, Clone, Copy)]
struct Prefix {
    bytes: usize,
    lines: usize,
}

/// Longest prefix of whole lines within `limits`; when not even the first
/// line fits, as much of it as the byte budget allows.
fn prefix_cut(text: &str, limits: Limits) -> Prefix {
    let mut end = 0;
    let mut lines = 0;
    for line in text.split_inclusive('\n') {
        if lines == limits.max_lines || end + line.len() > limits.max_bytes {
            break;
        }
        end += line.len();
        lines += 1;
    }
    if lines == 0 && limits.max_lines > 0 {
        let cut = floor_char_boundary(text, limits.max_bytes);
        return Prefix {
            bytes: cut,
            lines: usize::from(cut > 0),
        };
    }
    Prefix { bytes: end, lines }
}

/// Start of the shortest suffix of whole lines within `limits`; when not even
/// the last line fits, as much of its end as the byte budget allows.
fn suffix_cut(text: &str, limits: Limits) -> usize {
    let bytes = text.as_bytes();
    let mut start = text.len();
    let mut lines = 0;
    while start > 0 && lines < limits.max_lines {
        // The line ending at `start` begins after the previous line feed
        // (its own terminating line feed at `start - 1` is skipped).
        let line_start = memchr::memrchr(b'\n', &bytes[..start - 1]).map_or(0, |i| i + 1);
        if text.len() - line_start > limits.max_bytes {
            break;
        }
        start = line_start;
        lines += 1;
    }
    if lines == 0 && limits.max_lines > 0 {
        return ceil_char_boundary(text, text.len().saturating_sub(limits.max_bytes));
    }
    start
}

/// What the marker line reports about the dropped middle.
#[derive(Debug, Clone, Copy)]
struct Omitted {
    bytes: u64,
    newlines: u64,
    /// Whether the middle ends with a line feed.
    ends_with_newline: bool,
}

impl Omitted {
    fn of(before_gap: &str, gap: Gap, after_gap: &str) -> Self {
        let ends_with_newline = if !after_gap.is_empty() {
            after_gap.ends_with('\n')
        } else if gap.bytes > 0 {
            gap.ends_with_newline
        } else {
            before_gap.ends_with('\n')
        };
        Omitted {
            bytes: before_gap.len() as u64 + gap.bytes + after_gap.len() as u64,
            newlines: count_newlines(before_gap) + gap.newlines + count_newlines(after_gap),
            ends_with_newline,
        }
    }
}

fn assemble(head: &str, omitted: Omitted, tail: &str) -> String {
    let eol = if head.ends_with("\r\n") || (head.is_empty() && tail.contains("\r\n")) {
        "\r\n"
    } else {
        "\n"
    };
    let starts_at_line = head.is_empty() || head.ends_with('\n');
    let ends_at_line = tail.is_empty() || omitted.ends_with_newline;
    let mut out = String::with_capacity(head.len() + tail.len() + 64);
    out.push_str(head);
    if !starts_at_line {
        out.push_str(eol);
    }
    if starts_at_line && ends_at_line {
        // Whole lines only; an unterminated last line still counts as one.
        let last = u64::from(tail.is_empty() && !omitted.ends_with_newline);
        let lines = omitted.newlines + last;
        let _ = write!(out, "[... {lines} {} omitted ...]", plural(lines, "line"));
    } else if omitted.newlines == 0 {
        let _ = write!(out, "[... {} bytes omitted ...]", omitted.bytes);
    } else {
        let lines = omitted.newlines;
        let _ = write!(
            out,
            "[... {lines} {}, {} bytes omitted ...]",
            plural(lines, "line"),
            omitted.bytes
        );
    }
    out.push_str(eol);
    out.push_str(tail);
    out
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// Largest char boundary of `text` at or below `index`.
pub fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(max_bytes: usize, max_lines: usize) -> Limits {
        Limits {
            max_bytes,
            max_lines,
        }
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn empty_text_is_unchanged() {
        assert_eq!(head_tail("", lim(10, 2)), "");
        assert_eq!(head_tail("", lim(0, 0)), "");
    }

    #[test]
    fn text_at_exact_limits_is_unchanged() {
        let text = "ab\ncd\n";
        assert_eq!(head_tail(text, lim(6, 2)), text);
        let no_final_newline = "ab\ncd";
        assert_eq!(head_tail(no_final_newline, lim(5, 2)), no_final_newline);
    }

    #[test]
    fn one_line_over_keeps_head_and_tail() {
        let out = head_tail("a\nb\nc\n", lim(100, 2));
        assert_eq!(out, "a\n[... 1 line omitted ...]\nc\n");
    }

    #[test]
    fn one_byte_over_cuts_by_bytes() {
        let out = head_tail("ab\ncd\n", lim(5, 10));
        // Neither whole line fits in half the budget (3 bytes each) + rest.
        assert!(out.contains("omitted"), "{out:?}");
        assert!(out.starts_with("ab\n"), "{out:?}");
    }

    #[test]
    fn many_lines_keep_head_and_tail_with_count() {
        let text = numbered(1000);
        let out = head_tail(&text, lim(1 << 20, 10));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 11);
        assert_eq!(lines[0], "line 1");
        assert_eq!(lines[4], "line 5");
        assert_eq!(lines[5], "[... 990 lines omitted ...]");
        assert_eq!(lines[6], "line 996");
        assert_eq!(lines[10], "line 1000");
    }

    #[test]
    fn byte_cap_is_respected_apart_from_marker() {
        let text = numbered(10_000);
        let out = head_tail(&text, lim(1000, 10_000));
        let marker_len = out
            .lines()
            .find(|l| l.starts_with("[..."))
            .map(|l| l.len() + 1)
            .unwrap();
        assert!(out.len() - marker_len <= 1000, "{}", out.len());
        assert!(out.starts_with("line 1\n"));
        assert!(out.ends_with("line 10000\n"));
        // Cuts are on line boundaries, so the count is in lines only.
        assert!(out.contains(" lines omitted ...]\n"), "{out}");
    }

    #[test]
    fn multibyte_chars_are_never_split() {
        // One long line of 3-byte characters: every cut lands mid-line.
        let text = "€".repeat(1000);
        for max in [3, 4, 5, 7, 100, 101, 102] {
            let out = head_tail(&text, lim(max, 10));
            assert!(out.contains("bytes omitted"), "{max}: {out}");
            // `out` is a String, so it is valid UTF-8 by construction; check
            // that no byte of a character was dropped instead.
            let kept: usize = out.chars().filter(|&c| c == '€').count();
            let omitted: usize = out
                .split("[... ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap();
            assert_eq!(kept * 3 + omitted, 3000, "{max}: {out}");
            assert!(kept * 3 <= max, "{max}: {out}");
        }
    }

    #[test]
    fn budget_below_one_character_omits_the_whole_line() {
        let out = head_tail(&"€".repeat(10), lim(2, 10));
        assert_eq!(out, "[... 1 line omitted ...]\n");
    }

    #[test]
    fn one_huge_line_reports_bytes() {
        let text = "x".repeat(100_000);
        let out = head_tail(&text, lim(100, 10));
        assert_eq!(
            out,
            format!(
                "{}\n[... 99900 bytes omitted ...]\n{}",
                "x".repeat(50),
                "x".repeat(50)
            )
        );
    }

    #[test]
    fn huge_middle_line_between_short_lines() {
        let text = format!("first\n{}\nlast\n", "y".repeat(10_000));
        let out = head_tail(&text, lim(100, 10));
        assert_eq!(out, "first\n[... 1 line omitted ...]\nlast\n");
    }

    #[test]
    fn crlf_lines_stay_intact() {
        let text: String = (1..=20).map(|i| format!("row {i}\r\n")).collect();
        let out = head_tail(&text, lim(1 << 20, 4));
        assert_eq!(
            out,
            "row 1\r\nrow 2\r\n[... 16 lines omitted ...]\r\nrow 19\r\nrow 20\r\n"
        );
        assert!(!out.contains("\r\r"));
        assert_eq!(out.matches('\r').count(), out.matches('\n').count());
    }

    #[test]
    fn zero_limits_leave_only_the_marker() {
        let out = head_tail("a\nb\n", lim(0, 0));
        assert_eq!(out, "[... 2 lines omitted ...]\n");
    }

    #[test]
    fn gap_counts_are_added_to_the_marker() {
        let out = head_tail_parts(
            "h1\nh2\n",
            Gap {
                bytes: 1000,
                newlines: 100,
                ends_with_newline: true,
            },
            "t1\nt2\n",
            lim(1 << 20, 1000),
        );
        assert_eq!(out, "h1\nh2\n[... 100 lines omitted ...]\nt1\nt2\n");
    }

    #[test]
    fn gap_with_cut_parts_counts_everything() {
        let head = numbered(10);
        let tail = numbered(10);
        let out = head_tail_parts(
            &head,
            Gap {
                bytes: 500,
                newlines: 50,
                ends_with_newline: false,
            },
            &tail,
            lim(1 << 20, 4),
        );
        assert_eq!(
            out,
            "line 1\nline 2\n[... 66 lines omitted ...]\nline 9\nline 10\n"
        );
    }

    #[test]
    fn gap_inside_a_line_reports_bytes() {
        let out = head_tail_parts(
            "aaaa",
            Gap {
                bytes: 10,
                newlines: 0,
                ends_with_newline: false,
            },
            "bbbb",
            lim(100, 10),
        );
        assert_eq!(out, "aaaa\n[... 10 bytes omitted ...]\nbbbb");
    }

    #[test]
    fn empty_gap_joins_parts() {
        assert_eq!(
            head_tail_parts("a\n", Gap::default(), "b\n", lim(100, 10)),
            "a\nb\n"
        );
    }

    #[test]
    fn count_lines_counts_final_partial_line() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("\n\n"), 2);
    }
}
