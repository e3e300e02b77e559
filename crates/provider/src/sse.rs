//! Server-sent events decoding, decoupled from HTTP.
//!
//! [`decode`] turns any stream of byte chunks into a stream of [`SseEvent`]s
//! using `eventsource-stream` for the line grammar. It adds an idle timeout
//! that counts *bytes*, not events: the timer is reset by every chunk that
//! arrives, so a server that only sends SSE comments (keep-alives) is alive,
//! and a server that sends nothing for the idle period is not.
//!
//! Errors carry how many bytes had arrived before them, so a caller can tell
//! a failure before the first body byte (safe to retry) from one mid-stream.

use eventsource_stream::{EventStream, EventStreamError};
use futures::Stream;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// One dispatched SSE event. Comments never appear here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when the server sent none.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Why an SSE stream failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError<E> {
    /// The byte stream itself failed.
    #[error("{error}")]
    Transport {
        /// The transport's error.
        error: E,
        /// Bytes received before the failure.
        received: u64,
    },
    /// No byte arrived for `idle`.
    #[error("no data for {idle:?}")]
    Idle {
        /// The idle timeout that ran out.
        idle: Duration,
        /// Bytes received before the stall.
        received: u64,
    },
    /// The bytes are not valid SSE (or not UTF-8).
    #[error("invalid event stream: {0}")]
    Decode(String),
}

impl<E> SseError<E> {
    /// Bytes that had arrived before this error; zero means the failure
    /// happened before the body started, where a retry is safe.
    pub fn received(&self) -> u64 {
        match self {
            SseError::Transport { received, .. } | SseError::Idle { received, .. } => *received,
            // Decoding needs bytes, so some had arrived.
            SseError::Decode(_) => 1,
        }
    }
}

/// Decode `bytes` as an event stream, failing with [`SseError::Idle`] when
/// no bytes arrive for `idle_timeout`.
///
/// Needs a tokio runtime with the time driver enabled when polled.
pub fn decode<S, B, E>(bytes: S, idle_timeout: Duration) -> SseStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    decode_with_line_limit(bytes, idle_timeout, MAX_LINE_BYTES)
}

/// [`decode`] with another line limit than [`MAX_LINE_BYTES`] (for the fuzz
/// targets, which cannot afford 17 MiB lines).
pub fn decode_with_line_limit<S, B, E>(
    bytes: S,
    idle_timeout: Duration,
    max_line: usize,
) -> SseStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    SseStream {
        events: EventStream::new(Pieces::new(IdleTimeout::new(bytes, idle_timeout), max_line)),
        failed: false,
    }
}

/// The stream returned by [`decode`]. It ends after its first error.
pub struct SseStream<S> {
    events: EventStream<Pieces<S>>,
    failed: bool,
}

impl<S, B, E> Stream for SseStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<SseEvent, SseError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            // `eventsource-stream` may add an error of its own (bytes of
            // an unfinished character it still holds).
            return Poll::Ready(None);
        }
        // `IdleTimeout` boxes its inner stream, so everything here is Unpin.
        let polled = Pin::new(&mut self.events).poll_next(cx);
        if let Poll::Ready(Some(Err(_))) = &polled {
            self.failed = true;
        }
        polled.map(|item| {
            item.map(|result| match result {
                Ok(event) => Ok(SseEvent {
                    event: event.event,
                    data: event.data,
                }),
                Err(EventStreamError::Transport(error)) => Err(error),
                Err(EventStreamError::Utf8(error)) => Err(SseError::Decode(error.to_string())),
                Err(EventStreamError::Parser(error)) => Err(SseError::Decode(error.to_string())),
            })
        })
    }
}

/// Bytes handed to the SSE parser at once, while lines are short.
const PIECE: usize = 1024;

/// Longest line the decoders accept. Beyond it the stream fails, so a
/// server sending one endless line cannot fill memory before a whole
/// frame exists for the response cap (16 MiB) to count.
pub const MAX_LINE_BYTES: usize = 17 * 1024 * 1024;

/// The error for a line over `max_line` bytes.
pub(crate) fn line_too_long<E>(max_line: usize) -> SseError<E> {
    const MIB: usize = 1024 * 1024;
    if max_line.is_multiple_of(MIB) {
        SseError::Decode(format!("a line exceeded {} MiB", max_line / MIB))
    } else {
        SseError::Decode(format!("a line exceeded {max_line} bytes"))
    }
}

/// The byte stream re-cut into pieces for `eventsource-stream`, which
/// moves the rest of its buffer once per line it consumes and parses an
/// unfinished line again from its start whenever more bytes come. While
/// lines are short, pieces are [`PIECE`] bytes, so one large read (a local
/// server on loopback delivers hundreds of kilobytes at a time) costs
/// linear time. Within a long line, bytes are held back until there are as
/// many as the line so far (nothing can be dispatched before the line
/// ends), so its re-parsing adds up to linear time too.
///
/// Bytes are checked as they arrive: at the first byte that makes a line
/// longer than the limit, or that is not UTF-8, the bytes before it are
/// handed on (so the events they complete are dispatched) and then the
/// stream fails, however the body was cut into reads. Which of the two
/// comes first is decided by the bytes up to the one too many: a
/// character it leaves unfinished makes the line the error, even if the
/// byte after it would show the character invalid. (Left to
/// `eventsource-stream`, invalid UTF-8 would be reported only at the end of
/// the body, with everything after it buffered and copied again on every
/// read until then.)
struct Pieces<S> {
    inner: IdleTimeout<S>,
    /// Bytes received and not yet handed on start at `offset`.
    buf: Vec<u8>,
    offset: usize,
    /// `buf[offset..scanned]` holds no line break.
    scanned: usize,
    /// Bytes handed on since the last line break.
    line: usize,
    /// The last byte handed on is `\r`: `eventsource-stream` waits for the
    /// next one (is it `\r\n`?), so that is not held back.
    after_cr: bool,
    /// Length of the line in progress at the end of `buf`.
    run: usize,
    /// `buf[..utf8]` is valid UTF-8 (checked); `buf[utf8..]` is at most
    /// an unfinished character.
    utf8: usize,
    /// Bytes removed from the front of `buf` so far.
    dropped: u64,
    /// Where in `buf` the bytes stop being good, and what is wrong: nothing
    /// from there on is handed on, and no more bytes are read.
    bad: Option<(usize, Bad)>,
    ended: bool,
    failed: bool,
    /// Longest line accepted ([`MAX_LINE_BYTES`] but in fuzz targets).
    max_line: usize,
}

/// Why the bytes from some point on cannot be decoded.
#[derive(Debug, Clone, Copy)]
enum Bad {
    LineTooLong,
    /// Not UTF-8 from this byte of the body on, or the body ended inside
    /// the character starting there.
    Utf8(u64),
}

impl<S> Pieces<S> {
    fn new(inner: IdleTimeout<S>, max_line: usize) -> Self {
        Pieces {
            inner,
            buf: Vec::new(),
            offset: 0,
            scanned: 0,
            line: 0,
            after_cr: false,
            run: 0,
            utf8: 0,
            dropped: 0,
            bad: None,
            ended: false,
            failed: false,
            max_line,
        }
    }

    /// Take in a read, finding the first byte that makes a line too long
    /// or is not UTF-8.
    fn receive(&mut self, chunk: &[u8]) {
        let start = self.buf.len();
        self.buf.extend_from_slice(chunk);
        let too_long = self.line_over_limit(start, chunk);
        // Nothing past the byte that makes a line too long is ever read, so
        // nothing past it may decide the error either: a character that
        // the byte too many leaves unfinished is not judged, whether or not
        // its next byte came in the same read.
        let end = too_long.map_or(self.buf.len(), |at| at + 1);
        let invalid = match std::str::from_utf8(&self.buf[self.utf8..end]) {
            Ok(_) => {
                self.utf8 = end;
                None
            }
            Err(e) if e.error_len().is_some() => Some(self.utf8 + e.valid_up_to()),
            Err(e) => {
                self.utf8 += e.valid_up_to();
                None
            }
        };
        self.bad = match (too_long, invalid) {
            (Some(long), Some(utf8)) if utf8 < long => Some(self.utf8_error_at(utf8)),
            (Some(long), _) => Some((long, Bad::LineTooLong)),
            (None, Some(utf8)) => Some(self.utf8_error_at(utf8)),
            (None, None) => None,
        };
    }

    /// The stop for bytes that are not UTF-8 from `buf[at]` on. The start
    /// of an unfinished character may have been handed on already (it ends
    /// a piece); then the stream stops where it is.
    fn utf8_error_at(&self, at: usize) -> (usize, Bad) {
        (at.max(self.offset), Bad::Utf8(self.dropped + at as u64))
    }

    /// Where in `buf` the first line gets a byte too many, if it does in
    /// `chunk` (which starts at `start`).
    fn line_over_limit(&mut self, start: usize, chunk: &[u8]) -> Option<usize> {
        let mut at = 0;
        loop {
            let next = memchr::memchr2(b'\n', b'\r', &chunk[at..]).map(|i| at + i);
            let len = next.unwrap_or(chunk.len()) - at;
            if self.run + len > self.max_line {
                return Some(start + at + (self.max_line - self.run));
            }
            match next {
                Some(i) => {
                    self.run = 0;
                    at = i + 1;
                }
                None => {
                    self.run += len;
                    return None;
                }
            }
        }
    }

    /// The next piece to hand on, if one is due.
    fn piece<E>(&mut self) -> Option<Result<Vec<u8>, SseError<E>>> {
        let limit = self.bad.map_or(self.buf.len(), |(at, _)| at);
        let available = limit - self.offset;
        if available == 0 {
            let (_, bad) = self.bad?;
            self.failed = true;
            return Some(Err(match bad {
                Bad::LineTooLong => line_too_long(self.max_line),
                Bad::Utf8(at) => SseError::Decode(format!("invalid UTF-8 at byte {at}")),
            }));
        }
        let want = PIECE.max(self.line);
        let take = if available >= want {
            want
        } else if self.ended
            || self.bad.is_some()
            || self.after_cr
            || memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..limit]).is_some()
        {
            available
        } else {
            self.scanned = limit;
            return None;
        };
        let piece = self.buf[self.offset..self.offset + take].to_vec();
        self.offset += take;
        self.scanned = self.scanned.max(self.offset);
        self.line = match memchr::memrchr2(b'\n', b'\r', &piece) {
            Some(at) => piece.len() - at - 1,
            None => self.line + piece.len(),
        };
        self.after_cr = piece.last() == Some(&b'\r');
        // Keep an unfinished character: its check resumes at `utf8`.
        let done = self.offset.min(self.utf8);
        if done > self.buf.len() / 2 {
            self.buf.drain(..done);
            self.dropped += done as u64;
            self.offset -= done;
            self.scanned -= done;
            self.utf8 -= done;
            if let Some((at, _)) = &mut self.bad {
                *at -= done;
            }
        }
        Some(Ok(piece))
    }
}

impl<S, B, E> Stream for Pieces<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<Vec<u8>, SseError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.failed {
                return Poll::Ready(None);
            }
            if let Some(piece) = this.piece() {
                return Poll::Ready(Some(piece));
            }
            if this.ended || this.bad.is_some() {
                return Poll::Ready(None);
            }
            // `IdleTimeout` boxes its inner stream, so it is Unpin.
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.receive(chunk.as_ref()),
                Poll::Ready(Some(Err(e))) => {
                    this.failed = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    if this.bad.is_none() && this.utf8 < this.buf.len() {
                        // The body ended inside a character.
                        this.bad = Some(this.utf8_error_at(this.utf8));
                    }
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A byte stream with an inactivity deadline that every chunk pushes back
/// (shared with the NDJSON decoder).
pub(crate) struct IdleTimeout<S> {
    inner: Pin<Box<S>>,
    idle: Duration,
    sleep: Pin<Box<Sleep>>,
    /// Whether `sleep` has been set for the current wait.
    armed: bool,
    received: u64,
    failed: bool,
}

impl<S> IdleTimeout<S> {
    pub(crate) fn new(inner: S, idle: Duration) -> Self {
        IdleTimeout {
            inner: Box::pin(inner),
            idle,
            sleep: Box::pin(tokio::time::sleep_until(deadline(idle))),
            armed: false,
            received: 0,
            failed: false,
        }
    }
}

/// `now + idle`, saturating far in the future for huge timeouts.
fn deadline(idle: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(idle)
        .unwrap_or_else(|| now + Duration::from_secs(60 * 60 * 24 * 365 * 30))
}

impl<S, B, E> Stream for IdleTimeout<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<B, SseError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        if !this.armed {
            // The clock starts when the consumer starts waiting, so time the
            // consumer spent elsewhere is not counted against the server.
            let at = deadline(this.idle);
            this.sleep.as_mut().reset(at);
            this.armed = true;
        }
        // Data first: bytes already waiting are never lost to the timer.
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                this.received += chunk.as_ref().len() as u64;
                this.armed = false;
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(error))) => {
                this.failed = true;
                Poll::Ready(Some(Err(SseError::Transport {
                    error,
                    received: this.received,
                })))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.failed = true;
                    Poll::Ready(Some(Err(SseError::Idle {
                        idle: this.idle,
                        received: this.received,
                    })))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::convert::Infallible;

    type Collected = Vec<Result<SseEvent, String>>;

    /// Decode `chunks` (each one network read) and collect every item.
    async fn collect(chunks: Vec<Vec<u8>>) -> Collected {
        let bytes = futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>));
        decode(bytes, Duration::from_secs(30))
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
            .await
    }

    fn ev(data: &str) -> Result<SseEvent, String> {
        Ok(SseEvent {
            event: "message".into(),
            data: data.into(),
        })
    }

    const SAMPLE: &str = concat!(
        ": keep-alive\n\n",
        "data: {\"a\":\"h\u{e9}llo \u{1F980} \u{4e16}\u{754c}\"}\n\n",
        "event: custom\r\ndata: line one\r\ndata: line two\r\n\r\n",
        ": OPENROUTER PROCESSING\n\n",
        "data:no-space\n\n",
        "data: [DONE]\n\n",
    );

    fn sample_events() -> Collected {
        vec![
            ev("{\"a\":\"h\u{e9}llo \u{1F980} \u{4e16}\u{754c}\"}"),
            Ok(SseEvent {
                event: "custom".into(),
                data: "line one\nline two".into(),
            }),
            ev("no-space"),
            ev("[DONE]"),
        ]
    }

    #[tokio::test]
    async fn decodes_whole_stream() {
        assert_eq!(
            collect(vec![SAMPLE.as_bytes().to_vec()]).await,
            sample_events()
        );
    }

    #[tokio::test]
    async fn split_at_every_byte_boundary_gives_identical_events() {
        let bytes = SAMPLE.as_bytes();
        let expected = sample_events();
        // Every split point, including the middle of multi-byte characters
        // and between `\r` and `\n`.
        for at in 0..=bytes.len() {
            let chunks = vec![bytes[..at].to_vec(), bytes[at..].to_vec()];
            assert_eq!(collect(chunks).await, expected, "split at byte {at}");
        }
    }

    #[tokio::test]
    async fn one_byte_per_chunk_gives_identical_events() {
        let chunks = SAMPLE.bytes().map(|b| vec![b]).collect();
        assert_eq!(collect(chunks).await, sample_events());
    }

    #[tokio::test]
    async fn split_inside_every_multibyte_character() {
        let text = "data: \u{e9}\u{1F980}\u{4e16}\n\n";
        let bytes = text.as_bytes();
        for (start, ch) in text.char_indices().filter(|(_, c)| c.len_utf8() > 1) {
            for inner in 1..ch.len_utf8() {
                let at = start + inner;
                let chunks = vec![bytes[..at].to_vec(), Vec::new(), bytes[at..].to_vec()];
                assert_eq!(
                    collect(chunks).await,
                    vec![ev("\u{e9}\u{1F980}\u{4e16}")],
                    "split inside {ch:?} at byte {at}"
                );
            }
        }
    }

    #[tokio::test]
    async fn one_large_read_gives_every_event_in_order() {
        // A read many pieces long, with multi-byte characters on every
        // piece boundary in turn and an event longer than a piece.
        let mut text = String::new();
        let mut expected = Vec::new();
        for i in 0..500 {
            let data = format!("{}\u{1F980}{i}", "\u{e9}".repeat(i % 7));
            text.push_str(&format!("data: {data}\n\n"));
            expected.push(ev(&data));
        }
        let long = "\u{4e16}".repeat(3 * PIECE);
        text.push_str(&format!("event: custom\ndata: {long}\n\n"));
        expected.push(Ok(SseEvent {
            event: "custom".into(),
            data: long,
        }));
        for shift in 0..4 {
            let mut bytes = b": pad".repeat(shift).to_vec();
            bytes.push(b'\n');
            bytes.extend_from_slice(text.as_bytes());
            assert_eq!(collect(vec![bytes]).await, expected, "shifted by {shift}");
        }
    }

    #[tokio::test]
    async fn a_long_line_in_small_reads_decodes_and_an_endless_one_fails() {
        // 4 MB in one data line, read 8 KiB at a time: decoded whole (and
        // in linear time: pieces grow with the line).
        let long = "x".repeat(4 * 1024 * 1024);
        let text = format!("data: {long}\n\ndata: after\n\n");
        let reads = text.as_bytes().chunks(8192).map(<[u8]>::to_vec).collect();
        assert_eq!(collect(reads).await, vec![ev(&long), ev("after")]);
        // A line that never ends fails once it passes the limit, and the
        // stream ends there.
        let endless = std::iter::once(b"data: ".to_vec())
            .chain(std::iter::repeat_n(vec![b'y'; 64 * 1024], 300))
            .collect();
        let out = collect(endless).await;
        assert_eq!(out.len(), 1, "one error, then the end");
        let error = out[0].clone().unwrap_err();
        assert!(error.contains("a line exceeded 17 MiB"), "{error}");
    }

    /// Decode `chunks` with a line limit of `max_line` bytes.
    async fn collect_limited(chunks: Vec<Vec<u8>>, max_line: usize) -> Collected {
        let bytes = futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>));
        decode_with_line_limit(bytes, Duration::from_secs(30), max_line)
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_long_line_fails_also_when_its_end_is_in_the_same_read() {
        // Found by the sse_framing fuzz target: a line over the limit got
        // through when it arrived whole, line end included, in one read.
        let text = b"data: short\n\ndata: this line is too long\n\ndata: after\n\n";
        for at in 0..=text.len() {
            let chunks = vec![text[..at].to_vec(), text[at..].to_vec()];
            assert_eq!(
                collect_limited(chunks, 16).await,
                vec![
                    ev("short"),
                    Err("invalid event stream: a line exceeded 16 bytes".into())
                ],
                "split at {at}"
            );
        }
    }

    #[tokio::test]
    async fn invalid_utf8_fails_without_waiting_for_the_end_of_the_body() {
        // Found by the sse_framing fuzz target: bytes after invalid UTF-8
        // were buffered (copied again on every read) until the body ended,
        // and only then was the error reported.
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, Infallible>>();
        tx.unbounded_send(Ok(b"data: ok\n\ndata: \xff\n\n".to_vec()))
            .expect("send");
        tx.unbounded_send(Ok(b"data: after\n\n".to_vec()))
            .expect("send");
        let events = decode(rx, Duration::from_secs(30)).map(|r| r.map_err(|e| e.to_string()));
        // The sender stays alive: the body has not ended.
        let out: Collected = tokio::time::timeout(Duration::from_secs(5), events.take(2).collect())
            .await
            .expect("the error arrives while the body is still open");
        assert_eq!(out[0], ev("ok"));
        assert_eq!(
            out[1],
            Err("invalid event stream: invalid UTF-8 at byte 16".into())
        );
        drop(tx);
    }

    #[tokio::test]
    async fn a_character_handed_on_unfinished_then_not_finished_fails_cleanly() {
        // Found by the sse_framing fuzz target (an overflow in the first
        // version of the UTF-8 check): the unfinished character ends a
        // piece already handed on when it turns out invalid, or the body
        // ends.
        let expected = vec![
            ev("a"),
            Err("invalid event stream: invalid UTF-8 at byte 9".into()),
        ];
        let start = b"data: a\n\n\xe4".to_vec();
        assert_eq!(
            collect(vec![start.clone(), b"\n\n".to_vec()]).await,
            expected
        );
        assert_eq!(collect(vec![start]).await, expected);
    }

    #[tokio::test]
    async fn an_event_ended_by_a_lone_cr_is_dispatched_when_the_next_byte_comes() {
        // Found by the sse_framing fuzz target: after a blank line that is
        // a lone `\r`, the parser needs one more byte to know it is not
        // `\r\n`, but the decoder held back the start of the next line
        // until that line ended, so the event waited for the next one.
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, Infallible>>();
        tx.unbounded_send(Ok(b"data: one\r\r".to_vec()))
            .expect("send");
        tx.unbounded_send(Ok(b"data: tw".to_vec())).expect("send");
        let mut events = decode(rx, Duration::from_secs(30));
        // The sender stays alive: the body has not ended.
        let first = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("the event arrives while the next line is unfinished");
        assert_eq!(first.map(|r| r.map_err(|e| e.to_string())), Some(ev("one")));
        drop(tx);
    }

    #[tokio::test]
    async fn a_line_too_long_inside_a_character_fails_the_same_whatever_the_reads() {
        // Found by the sse_framing fuzz target: the byte too many was the
        // second of a character that the byte after it showed invalid.
        // Read whole, the body failed on the UTF-8; cut after the byte too
        // many, it failed on the line (the decoder reads no further), so
        // the error depended on where the reads ended. Bytes past the one
        // too many now never decide it.
        let text = b"data: a\n\nabcdefg\xf4\x84;\n\n";
        let expected = vec![
            ev("a"),
            Err("invalid event stream: a line exceeded 8 bytes".into()),
        ];
        assert_eq!(collect_limited(vec![text.to_vec()], 8).await, expected);
        for at in 0..=text.len() {
            let chunks = vec![text[..at].to_vec(), text[at..].to_vec()];
            assert_eq!(collect_limited(chunks, 8).await, expected, "split at {at}");
        }
        // The body ends inside the character: the line is still the error.
        let ended = text[..18].to_vec();
        assert_eq!(collect_limited(vec![ended], 8).await, expected);
    }

    #[tokio::test]
    async fn incomplete_last_event_is_not_dispatched() {
        let chunks = vec![b"data: one\n\ndata: two".to_vec()];
        assert_eq!(collect(chunks).await, vec![ev("one")]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_a_decode_error() {
        let chunks = vec![b"data: ok\n\n".to_vec(), vec![b'd', 0xff, 0xfe]];
        let items = collect(chunks).await;
        assert_eq!(items[0], ev("ok"));
        assert!(matches!(&items[1], Err(m) if m.contains("invalid event stream")));
    }

    #[tokio::test]
    async fn transport_error_reports_bytes_received() {
        let items: Vec<Result<&[u8], &str>> = vec![Ok(b"data: x\n\n"), Err("reset")];
        let out: Vec<_> = decode(futures::stream::iter(items), Duration::from_secs(30))
            .collect()
            .await;
        assert_eq!(out.len(), 2);
        match &out[1] {
            Err(SseError::Transport { error, received }) => {
                assert_eq!(*error, "reset");
                assert_eq!(*received, 9);
            }
            other => panic!("expected transport error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn transport_error_before_any_byte_has_received_zero() {
        let items: Vec<Result<&[u8], &str>> = vec![Err("refused")];
        let out: Vec<_> = decode(futures::stream::iter(items), Duration::from_secs(30))
            .collect()
            .await;
        assert_eq!(out.len(), 1);
        assert!(matches!(&out[0], Err(e) if e.received() == 0));
    }

    #[tokio::test]
    async fn silence_is_an_idle_timeout() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, Infallible>>();
        tx.unbounded_send(Ok(b"data: first\n\n".to_vec()))
            .expect("send");
        let mut events = decode(rx, Duration::from_millis(50));
        assert_eq!(
            events.next().await.map(|r| r.map_err(|e| e.to_string())),
            Some(ev("first"))
        );
        // The sender stays alive, so the stream is open but silent.
        let next = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("idle timeout fires well within 10s");
        match next {
            Some(Err(SseError::Idle { idle, received })) => {
                assert_eq!(idle, Duration::from_millis(50));
                assert_eq!(received, 13);
            }
            other => panic!("expected idle timeout, got {other:?}"),
        }
        assert!(events.next().await.is_none(), "stream ends after the error");
        drop(tx);
    }

    #[tokio::test]
    async fn comments_alone_keep_the_stream_alive() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, Infallible>>();
        let idle = Duration::from_millis(300);
        let feeder = async move {
            // Eight comment-only chunks 50 ms apart: 400 ms with no event,
            // longer than the idle timeout, but never 300 ms without bytes.
            for _ in 0..8 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                tx.unbounded_send(Ok(b": ping\n\n".to_vec())).expect("send");
            }
            tx.unbounded_send(Ok(b"data: end\n\n".to_vec()))
                .expect("send");
        };
        let reader = async move {
            let mut events = decode(rx, idle);
            events.next().await.map(|r| r.map_err(|e| e.to_string()))
        };
        let ((), first) = tokio::join!(feeder, reader);
        assert_eq!(first, Some(ev("end")));
    }
}
