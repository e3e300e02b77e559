//! Head + tail capture of a stream while it is read: memory stays under
//! the limit whatever the stream's size; what is dropped in between is
//! counted (bytes and line feeds), and characters the gap would split move
//! into it.

use crate::truncate::{self, Gap, Limits};

/// What one stream produced: the first and last bytes, and the size of the
/// part in between that was dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedStream {
    /// The first bytes of the stream, up to half the capture limit.
    pub head: Vec<u8>,
    /// The last bytes of the stream, up to the other half of the limit; empty
    /// when the stream fit in `head`.
    pub tail: Vec<u8>,
    /// Dropped between `head` and `tail` (empty when everything was kept).
    pub gap: Gap,
    /// Bytes the stream produced in all, kept or not.
    pub total_bytes: u64,
    /// Lines written, counting a final line without a line feed.
    pub total_lines: u64,
}

impl CapturedStream {
    /// True when the stream produced no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.total_bytes == 0
    }

    /// The stream as text (invalid UTF-8 replaced), capped to `limits`.
    pub fn to_model_text(&self, limits: Limits) -> String {
        if self.gap.bytes == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&self.tail);
            return truncate::head_tail(&String::from_utf8_lossy(&all), limits);
        }
        truncate::head_tail_parts(
            &String::from_utf8_lossy(&self.head),
            self.gap,
            &String::from_utf8_lossy(&self.tail),
            limits,
        )
    }
}

/// Where a stream's bytes go as they are read.
pub trait Sink {
    /// Takes the next chunk of bytes read from the stream, in order.
    fn push(&mut self, bytes: &[u8]);
}

impl Sink for Capture {
    fn push(&mut self, bytes: &[u8]) {
        Capture::push(self, bytes);
    }
}

/// Head + tail capture of one stream while it is being read: memory stays
/// under the limit whatever the stream's size.
#[derive(Debug, Clone)]
pub struct Capture {
    head: Vec<u8>,
    head_cap: usize,
    tail: Ring,
    total_bytes: u64,
    newlines: u64,
    last_evicted: Option<u8>,
}

impl Capture {
    /// A capture keeping at most `limit` bytes: the first half (rounded up) as
    /// the head, the rest as a ring of the newest bytes.
    pub fn new(limit: usize) -> Self {
        let head_cap = limit.div_ceil(2);
        Capture {
            head: Vec::new(),
            head_cap,
            tail: Ring::new(limit - head_cap),
            total_bytes: 0,
            newlines: 0,
            last_evicted: None,
        }
    }

    /// Adds a chunk read from the stream: it fills the head first, then the
    /// tail ring, whose oldest bytes drop into the counted gap.
    pub fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        let to_head = (self.head_cap - self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..to_head]);
        if let Some(byte) = self.tail.push(&chunk[to_head..]) {
            self.last_evicted = Some(byte);
        }
    }

    /// True once anything was written.
    pub fn has_data(&self) -> bool {
        self.total_bytes > 0
    }

    /// What was captured so far; the capture starts over, empty.
    pub fn take(&mut self) -> CapturedStream {
        let limit = self.head_cap + self.tail.cap;
        std::mem::replace(self, Capture::new(limit)).finish()
    }

    /// What was captured: head, tail and the counts of the gap between them
    /// (characters the gap would split move into it).
    pub fn finish(self) -> CapturedStream {
        let last_byte = self.tail.last().or(self.head.last().copied());
        let total_lines = self.newlines + u64::from(last_byte.is_some_and(|b| b != b'\n'));
        let mut head = self.head;
        let mut tail = self.tail.into_vec();
        let kept = (head.len() + tail.len()) as u64;
        if kept == self.total_bytes {
            return CapturedStream {
                head,
                tail,
                gap: Gap::default(),
                total_bytes: self.total_bytes,
                total_lines,
            };
        }
        // Characters split by the gap would show as replacement characters:
        // move their bytes into the gap.
        head.truncate(head.len() - incomplete_char_suffix(&head));
        let lead = tail
            .iter()
            .take(3)
            .take_while(|&&b| is_continuation(b))
            .count();
        tail.drain(..lead);
        let newlines_kept =
            memchr::memchr_iter(b'\n', &head).count() + memchr::memchr_iter(b'\n', &tail).count();
        let gap = Gap {
            bytes: self.total_bytes - (head.len() + tail.len()) as u64,
            newlines: self.newlines - newlines_kept as u64,
            ends_with_newline: lead == 0 && self.last_evicted == Some(b'\n'),
        };
        CapturedStream {
            head,
            tail,
            gap,
            total_bytes: self.total_bytes,
            total_lines,
        }
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// Length of a UTF-8 sequence cut off at the end of `bytes` (0 when the
/// last character is complete or the bytes are not UTF-8 anyway).
fn incomplete_char_suffix(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        if is_continuation(byte) {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// Fixed-size ring of the most recent bytes.
#[derive(Debug, Clone)]
struct Ring {
    buf: Vec<u8>,
    cap: usize,
    /// Index of the oldest byte once the ring is full.
    start: usize,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Ring {
            buf: Vec::new(),
            cap,
            start: 0,
        }
    }

    /// Append `data`, returning the newest byte pushed out, if any.
    fn push(&mut self, mut data: &[u8]) -> Option<u8> {
        if self.cap == 0 {
            return data.last().copied();
        }
        let fill = (self.cap - self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..fill]);
        data = &data[fill..];
        let mut evicted = None;
        while !data.is_empty() {
            let n = (self.cap - self.start).min(data.len());
            evicted = Some(self.buf[self.start + n - 1]);
            self.buf[self.start..self.start + n].copy_from_slice(&data[..n]);
            self.start = (self.start + n) % self.cap;
            data = &data[n..];
        }
        evicted
    }

    fn last(&self) -> Option<u8> {
        if self.buf.is_empty() {
            return None;
        }
        let newest = (self.start + self.buf.len() - 1) % self.buf.len();
        Some(self.buf[newest])
    }

    fn into_vec(mut self) -> Vec<u8> {
        self.buf.rotate_left(self.start);
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(limit: usize, chunks: &[&[u8]]) -> CapturedStream {
        let mut c = Capture::new(limit);
        for chunk in chunks {
            c.push(chunk);
        }
        c.finish()
    }

    #[test]
    fn small_output_is_kept_whole() {
        let s = capture(10, &[b"ab", b"c\nd"]);
        assert_eq!([s.head.clone(), s.tail.clone()].concat(), b"abc\nd");
        assert_eq!(s.gap, Gap::default());
        assert_eq!((s.total_bytes, s.total_lines), (5, 2));
    }

    #[test]
    fn output_at_limit_is_kept_whole() {
        let s = capture(4, &[b"ab", b"cd"]);
        assert_eq!([s.head, s.tail].concat(), b"abcd");
        assert_eq!(s.gap.bytes, 0);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_counts_the_rest() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let chunks: Vec<&[u8]> = data.chunks(777).collect();
        let s = capture(100, &chunks);
        assert_eq!(s.head, &data[..50]);
        assert_eq!(s.tail, &data[data.len() - 50..]);
        assert_eq!(s.total_bytes, data.len() as u64);
        assert_eq!(s.total_lines, 10_000);
        let kept_newlines = [&s.head[..], &s.tail[..]]
            .iter()
            .map(|b| b.iter().filter(|&&c| c == b'\n').count() as u64)
            .sum::<u64>();
        assert_eq!(s.gap.newlines + kept_newlines, 10_000);
        assert_eq!(s.gap.bytes, data.len() as u64 - 100);
    }

    #[test]
    fn ring_handles_chunks_larger_than_itself() {
        let mut ring = Ring::new(4);
        assert_eq!(ring.push(b"ab"), None);
        assert_eq!(ring.push(b"cdefghij"), Some(b'f'));
        assert_eq!(ring.last(), Some(b'j'));
        assert_eq!(ring.into_vec(), b"ghij");
    }

    #[test]
    fn split_characters_move_into_the_gap() {
        // "é" is two bytes; limit 4 cuts inside characters on both sides.
        let data = "éééééééé".as_bytes();
        let s = capture(5, &[data]);
        assert!(std::str::from_utf8(&s.head).is_ok());
        assert!(std::str::from_utf8(&s.tail).is_ok());
        assert_eq!(
            s.head.len() as u64 + s.gap.bytes + s.tail.len() as u64,
            data.len() as u64
        );
        let text = s.to_model_text(Limits {
            max_bytes: 100,
            max_lines: 10,
        });
        assert!(!text.contains('\u{FFFD}'), "{text}");
    }

    #[test]
    fn incomplete_suffix_lengths() {
        assert_eq!(incomplete_char_suffix(b"abc"), 0);
        assert_eq!(incomplete_char_suffix("é".as_bytes()), 0);
        assert_eq!(incomplete_char_suffix(&"€".as_bytes()[..2]), 2);
        assert_eq!(incomplete_char_suffix(&"𝄞".as_bytes()[..3]), 3);
        assert_eq!(incomplete_char_suffix(b"\xff"), 0);
    }
}
