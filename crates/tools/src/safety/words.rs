//! Words as the program receives them: a shell script split into words
//! (quotes, escapes, what the parser refuses), and argv words.

use super::*;

/// One word of a command, as the program will receive it (before glob
/// expansion, for words from a shell script).
pub(super) trait Arg {
    fn text(&self) -> &str;
    /// Contains an unquoted glob character, so the shell may replace it by
    /// zero or more other words.
    fn globbed(&self) -> bool;
    /// Glob expansion may produce a word starting with `-`.
    fn may_be_option(&self) -> bool;
}

impl Arg for String {
    fn text(&self) -> &str {
        self
    }
    fn globbed(&self) -> bool {
        false
    }
    fn may_be_option(&self) -> bool {
        false
    }
}

#[derive(Debug)]
pub(super) struct Word<'a> {
    pub(super) text: Cow<'a, str>,
    globbed: bool,
    leading_glob: bool,
}

impl Arg for Word<'_> {
    fn text(&self) -> &str {
        &self.text
    }
    fn globbed(&self) -> bool {
        self.globbed
    }
    fn may_be_option(&self) -> bool {
        self.globbed && (self.leading_glob || self.text.starts_with('-'))
    }
}

/// Control characters are refused everywhere, quoted or not (tab only
/// separates words).
pub(super) fn is_control(c: u8) -> bool {
    (c < 0x20 && c != b'\t') || c == 0x7f
}

/// Characters with a shell meaning we do not accept outside quotes.
fn is_unquoted_special(c: u8) -> bool {
    matches!(
        c,
        b'|' | b'&' | b';' | b'<' | b'>' | b'(' | b')' | b'$' | b'`' | b'{' | b'}' | b'#' | b'^'
    ) || is_control(c)
}

/// Split a shell script into words, or `None` if it is anything but one
/// simple command without expansions (see the module docs).
pub(super) fn split_script(script: &str) -> Option<Vec<Word<'_>>> {
    let bytes = script.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        if i == bytes.len() {
            return Some(words);
        }
        let (word, next) = read_word(script, i)?;
        words.push(word);
        i = next;
    }
}

/// The words of `script` as `split_script` reads them, each with whether
/// it holds an unquoted glob character; `None` when the script is refused.
/// Only for the fuzz targets (see `crate::fuzzing`).
pub fn script_words(script: &str) -> Option<Vec<(String, bool)>> {
    let words = split_script(script)?;
    Some(
        words
            .into_iter()
            .map(|w| (w.text.into_owned(), w.globbed))
            .collect(),
    )
}

/// Read the word starting at `start` (not a blank); returns it and the index
/// after it.
fn read_word(s: &str, start: usize) -> Option<(Word<'_>, usize)> {
    let b = s.as_bytes();
    let mut i = start;
    // Set once quotes or escapes make the text differ from the source; it
    // then holds everything before `seg`.
    let mut owned: Option<String> = None;
    // Start of the literal run not yet copied into `owned`.
    let mut seg = start;
    let mut globbed = false;
    let mut leading_glob = false;

    // Move the pending literal run into the owned buffer.
    fn flush<'b>(
        owned: &'b mut Option<String>,
        s: &str,
        start: usize,
        seg: usize,
        i: usize,
    ) -> &'b mut String {
        match owned {
            Some(buf) => {
                buf.push_str(&s[seg..i]);
                buf
            }
            None => owned.insert(s[start..i].to_owned()),
        }
    }

    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => break,
            b'\'' => {
                let buf = flush(&mut owned, s, start, seg, i);
                let len = b[i + 1..].iter().position(|&c| c == b'\'')?;
                let inner = &s[i + 1..i + 1 + len];
                if inner.bytes().any(is_control) {
                    return None;
                }
                buf.push_str(inner);
                i += len + 2;
                seg = i;
            }
            b'"' => {
                let buf = flush(&mut owned, s, start, seg, i);
                i += 1;
                let mut run = i;
                loop {
                    let c = *b.get(i)?;
                    match c {
                        b'"' => {
                            buf.push_str(&s[run..i]);
                            i += 1;
                            break;
                        }
                        b'$' | b'`' => return None,
                        b'\\' => {
                            buf.push_str(&s[run..i]);
                            let next = *b.get(i + 1)?;
                            if matches!(next, b'$' | b'`' | b'"' | b'\\') {
                                buf.push(next as char);
                                i += 2;
                            } else {
                                // A literal backslash; the next character is
                                // read normally.
                                buf.push('\\');
                                i += 1;
                            }
                            run = i;
                        }
                        c if is_control(c) => return None,
                        _ => i += 1,
                    }
                }
                seg = i;
            }
            b'\\' => {
                let next = *b.get(i + 1)?;
                if is_control(next) {
                    return None;
                }
                let buf = flush(&mut owned, s, start, seg, i);
                let ch = s[i + 1..].chars().next()?;
                buf.push(ch);
                i += 1 + ch.len_utf8();
                seg = i;
            }
            b'*' | b'?' | b'[' => {
                let produced = match &owned {
                    None => i > start,
                    Some(buf) => !buf.is_empty() || i > seg,
                };
                if !produced {
                    leading_glob = true;
                }
                globbed = true;
                i += 1;
            }
            c if is_unquoted_special(c) => return None,
            _ => i += 1,
        }
    }
    let text = match owned {
        Some(mut buf) => {
            buf.push_str(&s[seg..i]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(&s[start..i]),
    };
    Some((
        Word {
            text,
            globbed,
            leading_glob,
        },
        i,
    ))
}
