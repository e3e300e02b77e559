//! Newline-delimited JSON decoding (Ollama's native stream), with the same
//! byte-counting idle timeout as SSE. Each non-empty line becomes one frame
//! with an empty `event`; a final line without a newline still counts.

use super::sse::{line_too_long, IdleTimeout, SseError, SseEvent, MAX_LINE_BYTES};
use futures::Stream;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Split `bytes` into lines, failing with [`SseError::Idle`] when no bytes
/// arrive for `idle_timeout`.
pub fn decode<S, B, E>(bytes: S, idle_timeout: Duration) -> LineStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    decode_with_line_limit(bytes, idle_timeout, MAX_LINE_BYTES)
}

/// [`decode`] with another line limit than [`MAX_LINE_BYTES`] (for the fuzz
/// targets).
pub fn decode_with_line_limit<S, B, E>(
    bytes: S,
    idle_timeout: Duration,
    max_line: usize,
) -> LineStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    LineStream {
        inner: IdleTimeout::new(bytes, idle_timeout),
        buffer: Vec::new(),
        start: 0,
        scanned: 0,
        done: false,
        max_line,
    }
}

/// The stream returned by [`decode`].
pub struct LineStream<S> {
    inner: IdleTimeout<S>,
    buffer: Vec<u8>,
    /// Where the first unconsumed line starts in `buffer`.
    start: usize,
    /// Bytes before this offset hold no newline after `start`.
    scanned: usize,
    done: bool,
    /// Longest line accepted ([`MAX_LINE_BYTES`] but in fuzz targets).
    max_line: usize,
}

impl<S> LineStream<S> {
    /// End the stream: a line is longer than the limit (finished or not,
    /// however the body was cut into reads).
    fn too_long<E>(&mut self) -> Result<SseEvent, SseError<E>> {
        self.done = true;
        self.buffer.clear();
        self.start = 0;
        self.scanned = 0;
        Err(line_too_long(self.max_line))
    }

    /// The next complete line in the buffer, if any. Consumed lines are
    /// skipped by offset and the buffer compacted only once they make up
    /// half of it, and bytes already searched are not searched again, so a
    /// large read or a long line costs linear time.
    fn take_line<E>(&mut self, at_end: bool) -> Option<Result<SseEvent, SseError<E>>> {
        loop {
            let rest = &self.buffer[self.scanned..];
            let (line_end, next) = match memchr::memchr(b'\n', rest) {
                Some(i) => (self.scanned + i, self.scanned + i + 1),
                None if at_end && self.start < self.buffer.len() => {
                    (self.buffer.len(), self.buffer.len())
                }
                None if self.buffer.len() - self.start > self.max_line => {
                    return Some(self.too_long());
                }
                None => {
                    self.scanned = self.buffer.len();
                    if self.start > self.buffer.len() / 2 {
                        self.buffer.drain(..self.start);
                        self.scanned -= self.start;
                        self.start = 0;
                    }
                    return None;
                }
            };
            if line_end - self.start > self.max_line {
                return Some(self.too_long());
            }
            let mut line = &self.buffer[self.start..line_end];
            self.start = next;
            self.scanned = next;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(match std::str::from_utf8(line) {
                Ok(data) => Ok(SseEvent {
                    event: String::new(),
                    data: data.to_string(),
                }),
                Err(e) => Err(SseError::Decode(format!("invalid UTF-8 in a line: {e}"))),
            });
        }
    }
}

impl<S, B, E> Stream for LineStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<SseEvent, SseError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(line) = this.take_line(this.done) {
                return Poll::Ready(Some(line));
            }
            if this.done {
                return Poll::Ready(None);
            }
            // `IdleTimeout` boxes its inner stream, so it is Unpin.
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.buffer.extend_from_slice(chunk.as_ref()),
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    this.buffer.clear();
                    this.start = 0;
                    this.scanned = 0;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => this.done = true,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::convert::Infallible;

    async fn lines(chunks: Vec<&[u8]>) -> Vec<Result<String, String>> {
        let bytes =
            futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, Infallible>(c.to_vec())));
        decode(bytes, Duration::from_secs(30))
            .map(|r| r.map(|e| e.data).map_err(|e| e.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn splits_lines_at_every_byte_boundary() {
        let text = "{\"a\":\"h\u{e9}\u{1F980}\"}\r\n\n{\"b\":2}\n{\"c\":3}";
        let expected: Vec<Result<String, String>> = vec![
            Ok("{\"a\":\"h\u{e9}\u{1F980}\"}".into()),
            Ok("{\"b\":2}".into()),
            Ok("{\"c\":3}".into()),
        ];
        let bytes = text.as_bytes();
        for at in 0..=bytes.len() {
            assert_eq!(
                lines(vec![&bytes[..at], &bytes[at..]]).await,
                expected,
                "split at {at}"
            );
        }
    }

    #[tokio::test]
    async fn large_reads_and_long_lines() {
        // Many lines in one read; a line spread over many reads.
        let many: String = (0..1000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        let out = lines(vec![many.as_bytes()]).await;
        assert_eq!(out.len(), 1000);
        assert_eq!(out[999], Ok("{\"n\":999}".into()));
        let long = format!("{{\"s\":\"{}\"}}", "x".repeat(100_000));
        let mut reads: Vec<&[u8]> = long.as_bytes().chunks(1000).collect();
        reads.push(b"\n{\"b\":2}");
        assert_eq!(
            lines(reads).await,
            vec![Ok(long.clone()), Ok("{\"b\":2}".into())]
        );
    }

    #[tokio::test]
    async fn an_endless_line_fails_at_the_limit() {
        let piece = vec![b'y'; 64 * 1024];
        let mut reads: Vec<&[u8]> = vec![b"{\"a\":1}\n"];
        reads.extend(std::iter::repeat_n(piece.as_slice(), 300));
        let out = lines(reads).await;
        assert_eq!(out.len(), 2, "the first line, one error, then the end");
        assert_eq!(out[0], Ok("{\"a\":1}".into()));
        let error = out[1].clone().unwrap_err();
        assert!(error.contains("a line exceeded 17 MiB"), "{error}");
    }

    #[tokio::test]
    async fn a_long_line_fails_also_when_its_end_is_in_the_same_read() {
        // Found by the ndjson_framing fuzz target: a line over the limit
        // got through when its newline was already in the buffer.
        let text = b"{\"a\":1}\n{\"b\":\"too long\"}\n{\"c\":3}\n";
        for at in 0..=text.len() {
            let bytes = futures::stream::iter(
                [&text[..at], &text[at..]].map(|c| Ok::<_, Infallible>(c.to_vec())),
            );
            let out: Vec<_> = decode_with_line_limit(bytes, Duration::from_secs(30), 12)
                .map(|r| r.map(|e| e.data).map_err(|e| e.to_string()))
                .collect()
                .await;
            assert_eq!(
                out,
                vec![
                    Ok("{\"a\":1}".to_string()),
                    Err("invalid event stream: a line exceeded 12 bytes".to_string())
                ],
                "split at {at}"
            );
        }
        // The real limit, in one read.
        let long = format!("\"{}\"\n", "x".repeat(MAX_LINE_BYTES));
        let out = lines(vec![long.as_bytes()]).await;
        assert_eq!(out.len(), 1, "one error, then the end");
        let error = out[0].clone().unwrap_err();
        assert!(error.contains("a line exceeded 17 MiB"), "{error}");
    }

    #[tokio::test]
    async fn invalid_utf8_is_a_decode_error() {
        let out = lines(vec![b"{\"a\":1}\n\xff\xfe\n"]).await;
        assert_eq!(out[0], Ok("{\"a\":1}".into()));
        assert!(out[1].as_ref().unwrap_err().contains("UTF-8"));
    }

    #[tokio::test]
    async fn silence_is_an_idle_timeout() {
        let bytes = futures::stream::pending::<Result<Vec<u8>, Infallible>>();
        let mut s = decode(bytes, Duration::from_millis(50));
        let err = s.next().await.unwrap().unwrap_err();
        assert!(matches!(err, SseError::Idle { .. }));
    }
}
