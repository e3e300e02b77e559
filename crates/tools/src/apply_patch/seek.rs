//! Find a hunk's old lines in a file, from exact to increasingly fuzzy
//! comparisons, and say how close the nearest miss was when none matches.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

/// How loosely lines were compared to find a match. Ordered from strict to
/// loose; each level is tried only when the stricter ones found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fuzz {
    /// Byte-for-byte equal lines.
    Exact,
    /// Trailing whitespace ignored.
    TrailingWhitespace,
    /// Leading and trailing whitespace ignored.
    Trimmed,
    /// As `Trimmed`, with Unicode dashes, quotes and spaces read as ASCII.
    Unicode,
    /// `@@` headers only: the file line starts with the header text.
    HeaderPrefix,
}

/// Levels used for hunk bodies, strict first.
const BODY_LEVELS: [Fuzz; 4] = [
    Fuzz::Exact,
    Fuzz::TrailingWhitespace,
    Fuzz::Trimmed,
    Fuzz::Unicode,
];

impl Fuzz {
    /// How the match was made, for the summary shown to the model.
    pub fn describe(self) -> &'static str {
        match self {
            Fuzz::Exact => "exactly",
            Fuzz::TrailingWhitespace => "ignoring trailing whitespace",
            Fuzz::Trimmed => "ignoring leading and trailing whitespace",
            Fuzz::Unicode => "after normalising Unicode punctuation and spaces",
            Fuzz::HeaderPrefix => "by the start of the @@ header line",
        }
    }

    /// `line` as this level compares it. `HeaderPrefix` compares like `Unicode`.
    fn normalize(self, line: &str) -> Cow<'_, str> {
        match self {
            Fuzz::Exact => Cow::Borrowed(line),
            Fuzz::TrailingWhitespace => Cow::Borrowed(line.trim_end()),
            Fuzz::Trimmed => Cow::Borrowed(line.trim()),
            Fuzz::Unicode | Fuzz::HeaderPrefix => normalize_unicode(line),
        }
    }
}

/// Map typographic punctuation and exotic spaces to ASCII, then trim.
pub fn normalize_unicode(line: &str) -> Cow<'_, str> {
    let trimmed = line.trim();
    if trimmed.is_ascii() || !trimmed.chars().any(|c| ascii_equivalent(c).is_some()) {
        return Cow::Borrowed(trimmed);
    }
    let mapped: String = trimmed
        .chars()
        .map(|c| ascii_equivalent(c).unwrap_or(c))
        .collect();
    Cow::Owned(mapped.trim().to_string())
}

fn ascii_equivalent(c: char) -> Option<char> {
    Some(match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{3000}' => ' ',
        _ => return None,
    })
}

/// A file's lines (without line terminators), with the Unicode-normalised
/// view computed once, on first use.
pub struct Haystack<'a> {
    lines: &'a [&'a str],
    /// Per line hash, so the exact scan compares integers, not strings.
    hashes: OnceCell<Vec<u64>>,
    unicode: OnceCell<Vec<Cow<'a, str>>>,
}

impl<'a> Haystack<'a> {
    pub fn new(lines: &'a [&'a str]) -> Self {
        Haystack {
            lines,
            hashes: OnceCell::new(),
            unicode: OnceCell::new(),
        }
    }

    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    pub fn line(&self, index: usize) -> &'a str {
        self.lines[index]
    }

    fn unicode_lines(&self) -> &[Cow<'a, str>] {
        self.unicode
            .get_or_init(|| self.lines.iter().map(|l| normalize_unicode(l)).collect())
    }

    /// Line `index` as `level` compares it.
    fn view(&self, level: Fuzz, index: usize) -> &str {
        let line = self.lines[index];
        match level {
            Fuzz::Exact => line,
            Fuzz::TrailingWhitespace => line.trim_end(),
            Fuzz::Trimmed => line.trim(),
            Fuzz::Unicode | Fuzz::HeaderPrefix => &self.unicode_lines()[index],
        }
    }

    /// Every start in `starts` where `pattern` (already normalised for
    /// `level`) matches. One monomorphic scan per level: this is the hot
    /// loop, run over the rest of the file for every hunk.
    fn positions(&self, level: Fuzz, pattern: &[Cow<'_, str>], starts: Range<usize>) -> Vec<usize> {
        match level {
            Fuzz::Exact => {
                // Scan the hashes for one anchor line (the longest pattern
                // line, likely the rarest), then check the whole window.
                let wanted: Vec<u64> = pattern.iter().map(|p| line_hash(p)).collect();
                let hashes = self
                    .hashes
                    .get_or_init(|| self.lines.iter().map(|l| line_hash(l)).collect());
                let Some((anchor, _)) = pattern.iter().enumerate().max_by_key(|(_, p)| p.len())
                else {
                    return Vec::new();
                };
                let m = pattern.len();
                hashes[starts.start + anchor..starts.end + anchor]
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| **h == wanted[anchor])
                    .map(|(k, _)| starts.start + k)
                    .filter(|&i| {
                        hashes[i..i + m] == wanted[..]
                            && self.lines[i..i + m]
                                .iter()
                                .zip(pattern)
                                .all(|(l, p)| *l == p.as_ref())
                    })
                    .collect()
            }
            Fuzz::TrailingWhitespace => scan(self.lines, |l| l.trim_end(), pattern, starts),
            Fuzz::Trimmed => scan(self.lines, |l| l.trim(), pattern, starts),
            Fuzz::Unicode | Fuzz::HeaderPrefix => {
                scan(self.unicode_lines(), |l| l.as_ref(), pattern, starts)
            }
        }
    }
}

/// FxHash-style word-at-a-time hash; only a pre-filter, collisions are
/// resolved by comparing the strings.
fn line_hash(line: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let bytes = line.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    let mut h = mix(0, bytes.len() as u64);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = mix(h, u64::from_le_bytes(word));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(h, u64::from_le_bytes(tail))
}

fn scan<'l, T: 'l>(
    lines: &'l [T],
    view: impl Fn(&'l T) -> &'l str,
    pattern: &[Cow<'_, str>],
    starts: Range<usize>,
) -> Vec<usize> {
    let m = pattern.len();
    let Some(first) = pattern.first() else {
        return Vec::new();
    };
    let window = &lines[starts.start..starts.end + m - 1];
    window
        .windows(m)
        .enumerate()
        .filter(|(_, w)| {
            view(&w[0]) == first.as_ref()
                && w[1..]
                    .iter()
                    .zip(&pattern[1..])
                    .all(|(line, p)| view(line) == p.as_ref())
        })
        .map(|(i, _)| starts.start + i)
        .collect()
}

/// Where a block of lines was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Unique {
        at: usize,
        fuzz: Fuzz,
    },
    /// More than one place matches at the strictest level that matches at all.
    Ambiguous {
        fuzz: Fuzz,
        at: Vec<usize>,
    },
    None,
}

/// Look for `pattern` starting inside `range` (and ending at or before its
/// end). With `at_end`, only the position that ends the file counts.
pub fn find_block(
    hay: &Haystack<'_>,
    pattern: &[&str],
    range: Range<usize>,
    at_end: bool,
) -> Found {
    let m = pattern.len();
    let end = range.end.min(hay.line_count());
    if m == 0 || m > end || range.start + m > end {
        return Found::None;
    }
    let starts = if at_end {
        let only = hay.line_count() - m;
        if only < range.start || end != hay.line_count() {
            return Found::None;
        }
        only..only + 1
    } else {
        range.start..end - m + 1
    };
    for level in BODY_LEVELS {
        let normalized: Vec<Cow<'_, str>> = pattern.iter().map(|p| level.normalize(p)).collect();
        let at = hay.positions(level, &normalized, starts.clone());
        match at.len() {
            0 => continue,
            1 => {
                return Found::Unique {
                    at: at[0],
                    fuzz: level,
                }
            }
            _ => return Found::Ambiguous { fuzz: level, at },
        }
    }
    Found::None
}

/// First line at or after `from` matching an `@@` header, trying levels up
/// to `max_level` (header text is often the start of the line only).
pub fn find_header(
    hay: &Haystack<'_>,
    header: &str,
    from: usize,
    max_level: Fuzz,
) -> Option<(usize, Fuzz)> {
    for level in BODY_LEVELS.into_iter().chain([Fuzz::HeaderPrefix]) {
        if level > max_level {
            break;
        }
        let wanted = level.normalize(header);
        let hit = (from..hay.line_count()).find(|&i| {
            let line = hay.view(level, i);
            if level == Fuzz::HeaderPrefix {
                !wanted.is_empty() && line.starts_with(wanted.as_ref())
            } else {
                line == wanted.as_ref()
            }
        });
        if let Some(i) = hit {
            return Some((i, level));
        }
    }
    None
}

/// The window of the file that looks most like `pattern`.
#[derive(Debug, Clone, PartialEq)]
pub struct Closest {
    pub start: usize,
    /// Per pattern line (up to the window's length): equal at the loosest
    /// body level.
    pub equal: Vec<bool>,
}

impl Closest {
    /// Index (in the pattern) of the first line that is not equal.
    pub fn first_difference(&self) -> Option<usize> {
        self.equal.iter().position(|eq| !eq)
    }

    /// The window as numbered file lines, differences marked with `!`
    /// (at most a dozen lines, around the first difference). Ends with a
    /// newline.
    pub fn render(&self, hay: &Haystack<'_>) -> String {
        const MAX_SHOWN: usize = 12;
        let len = self.equal.len();
        let equal = self.equal.iter().filter(|e| **e).count();
        let mut out =
            format!("Closest lines in the file ({equal} of {len} equal; `!` marks differences):\n");
        let first = self.first_difference().unwrap_or(0);
        let skip = first
            .saturating_sub(MAX_SHOWN / 2)
            .min(len.saturating_sub(MAX_SHOWN));
        for (j, eq) in self.equal.iter().enumerate().skip(skip).take(MAX_SHOWN) {
            let index = self.start + j;
            let mark = if *eq { ' ' } else { '!' };
            out.push_str(&format!("{mark}{:>6} | {}\n", index + 1, hay.line(index)));
        }
        out
    }
}

/// Longest prefix of a pattern that is scored, to bound the work on huge
/// hunks (this runs only to explain a failure).
const MAX_SCORED_LINES: usize = 40;

/// Score every window of the file against `pattern` (per line: 1 when equal
/// after normalisation, else the share of common prefix and suffix) and
/// return the best one, or `None` when nothing resembles it.
pub fn closest_window(hay: &Haystack<'_>, pattern: &[&str]) -> Option<Closest> {
    let m = pattern.len().min(hay.line_count()).min(MAX_SCORED_LINES);
    if m == 0 {
        return None;
    }
    let wanted: Vec<Cow<'_, str>> = pattern[..m].iter().map(|p| normalize_unicode(p)).collect();
    let mut best: Option<(f64, usize)> = None;
    for start in 0..=hay.line_count() - m {
        let score: f64 = wanted
            .iter()
            .enumerate()
            .map(|(j, w)| similarity(hay.view(Fuzz::Unicode, start + j), w))
            .sum();
        if score > 0.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, start));
        }
    }
    let (_, start) = best?;
    let equal = wanted
        .iter()
        .enumerate()
        .map(|(j, w)| hay.view(Fuzz::Unicode, start + j) == w.as_ref())
        .collect();
    Some(Closest { start, equal })
}

/// 1.0 for equal lines, otherwise the fraction of bytes covered by the
/// common prefix and suffix. Cheap and good enough to rank candidates.
fn similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let longest = a.len().max(b.len());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    // Never count a mismatching pair as a perfect one.
    0.99 * (prefix + suffix) as f64 / longest as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(file: &[&str], pattern: &[&str]) -> Found {
        let hay = Haystack::new(file);
        find_block(&hay, pattern, 0..file.len(), false)
    }

    #[test]
    fn levels_are_tried_in_order() {
        let file = ["a  ", "  b", "c\u{2014}d \u{201C}q\u{201D}\u{00A0}", "end"];
        assert_eq!(
            found(&file, &["end"]),
            Found::Unique {
                at: 3,
                fuzz: Fuzz::Exact
            }
        );
        assert_eq!(
            found(&file, &["a"]),
            Found::Unique {
                at: 0,
                fuzz: Fuzz::TrailingWhitespace
            }
        );
        assert_eq!(
            found(&file, &["b"]),
            Found::Unique {
                at: 1,
                fuzz: Fuzz::Trimmed
            }
        );
        assert_eq!(
            found(&file, &["c-d \"q\""]),
            Found::Unique {
                at: 2,
                fuzz: Fuzz::Unicode
            }
        );
        assert_eq!(found(&file, &["zzz"]), Found::None);
    }

    #[test]
    fn stricter_unique_match_wins_over_looser_duplicates() {
        // "x" matches exactly once and trimmed twice: the exact one wins.
        let file = ["x", " x", "x "];
        assert_eq!(
            found(&file, &["x"]),
            Found::Unique {
                at: 0,
                fuzz: Fuzz::Exact
            }
        );
    }

    #[test]
    fn ambiguity_is_reported_at_the_best_level() {
        let file = ["}", "a", "}", "b", " }"];
        assert_eq!(
            found(&file, &["}"]),
            Found::Ambiguous {
                fuzz: Fuzz::Exact,
                at: vec![0, 2]
            }
        );
        let hay = Haystack::new(&file);
        assert_eq!(
            find_block(&hay, &["}"], 1..5, false),
            Found::Unique {
                at: 2,
                fuzz: Fuzz::Exact
            }
        );
    }

    #[test]
    fn range_and_end_anchor_limit_candidates() {
        let file = ["a", "b", "a", "b"];
        let hay = Haystack::new(&file);
        assert_eq!(
            find_block(&hay, &["a", "b"], 0..4, true),
            Found::Unique {
                at: 2,
                fuzz: Fuzz::Exact
            }
        );
        assert_eq!(
            find_block(&hay, &["a", "b"], 0..3, false),
            Found::Unique {
                at: 0,
                fuzz: Fuzz::Exact
            }
        );
        assert_eq!(find_block(&hay, &["a"], 0..4, true), Found::None);
        assert_eq!(
            find_block(&hay, &["a", "b", "a", "b", "c"], 0..4, false),
            Found::None
        );
        assert_eq!(find_block(&hay, &["b"], 4..4, false), Found::None);
    }

    #[test]
    fn headers_match_first_occurrence_and_by_prefix() {
        let file = ["class A {", "  fn m() {", "}", "class B {", "  fn m() {"];
        let hay = Haystack::new(&file);
        assert_eq!(
            find_header(&hay, "fn m() {", 0, Fuzz::HeaderPrefix),
            Some((1, Fuzz::Trimmed))
        );
        assert_eq!(
            find_header(&hay, "class B", 0, Fuzz::HeaderPrefix),
            Some((3, Fuzz::HeaderPrefix))
        );
        assert_eq!(
            find_header(&hay, "fn m()", 2, Fuzz::HeaderPrefix),
            Some((4, Fuzz::HeaderPrefix))
        );
        assert_eq!(find_header(&hay, "class B", 0, Fuzz::Unicode), None);
    }

    #[test]
    fn closest_window_points_at_the_near_miss() {
        let file = ["one", "two", "fn main() {", "    println!(\"hi\");", "}"];
        let hay = Haystack::new(&file);
        let closest = closest_window(&hay, &["fn main() {", "    println!(\"hello\");"]).unwrap();
        assert_eq!(closest.start, 2);
        assert_eq!(closest.equal, vec![true, false]);
        assert_eq!(closest_window(&hay, &["qqq"]), None);
    }

    #[test]
    fn unicode_normalisation() {
        assert_eq!(
            normalize_unicode("\u{00A0}\u{2018}a\u{2019} \u{2013} b\u{3000}"),
            "'a' - b"
        );
        assert!(matches!(
            normalize_unicode("  plain "),
            Cow::Borrowed("plain")
        ));
    }
}
