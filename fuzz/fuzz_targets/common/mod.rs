//! What the fuzz targets share: a runtime for the decoders' idle timer,
//! cutting a body into reads, and running a decoder to an [`Outcome`].
#![allow(dead_code)] // each target uses part of this

use cogni::fuzzing;
use cogni::provider::sse::{SseError, SseEvent};
use futures::{Stream, StreamExt};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Long enough never to fire while a target runs.
pub const IDLE: Duration = Duration::from_secs(3600);

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
}

/// Run `f` inside the runtime (the decoders' timers need its time driver).
pub fn with_runtime<T>(f: impl FnOnce(&tokio::runtime::Runtime) -> T) -> T {
    RUNTIME.with(f)
}

/// How a decoder failed, independent of the message's details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    LineTooLong,
    Utf8,
    Other,
}

impl Failure {
    pub fn of(error: &SseError<Infallible>) -> Self {
        let text = error.to_string();
        if text.contains("a line exceeded") {
            Failure::LineTooLong
        } else if text.contains("UTF-8") || text.contains("utf-8") || text.contains("UTF8") {
            Failure::Utf8
        } else {
            Failure::Other
        }
    }
}

/// The frames a decoder produced up to its first error, and that error.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    pub frames: Vec<(String, String)>,
    pub failure: Option<Failure>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Sse,
    Ndjson,
}

type Frames<'a> = Pin<Box<dyn Stream<Item = Result<SseEvent, SseError<Infallible>>> + 'a>>;

fn decoder<'a>(
    framing: Framing,
    bytes: impl Stream<Item = Result<Vec<u8>, Infallible>> + 'a,
    max_line: usize,
) -> Frames<'a> {
    match framing {
        Framing::Sse => Box::pin(fuzzing::sse_decode(bytes, IDLE, max_line)),
        Framing::Ndjson => Box::pin(fuzzing::ndjson_decode(bytes, IDLE, max_line)),
    }
}

fn push(outcome: &mut Outcome, item: Result<SseEvent, SseError<Infallible>>) -> bool {
    match item {
        Ok(frame) => {
            outcome.frames.push((frame.event, frame.data));
            true
        }
        Err(error) => {
            outcome.failure = Some(Failure::of(&error));
            false
        }
    }
}

/// Decode `reads`, then the end of the body, up to the first error (where
/// the HTTP driver stops reading).
pub fn decode(framing: Framing, reads: &[Vec<u8>], max_line: usize) -> Outcome {
    with_runtime(|rt| {
        rt.block_on(async {
            let bytes = futures::stream::iter(reads.iter().cloned().map(Ok));
            let mut frames = decoder(framing, bytes, max_line);
            let mut outcome = Outcome::default();
            while let Some(item) = frames.next().await {
                if !push(&mut outcome, item) {
                    break;
                }
            }
            outcome
        })
    })
}

/// Decode `reads` from a body that stays open after them: what the decoder
/// delivers before it has to wait for more bytes.
pub fn decode_open(framing: Framing, reads: &[Vec<u8>], max_line: usize) -> Outcome {
    with_runtime(|rt| {
        let _entered = rt.enter();
        let bytes =
            futures::stream::iter(reads.iter().cloned().map(Ok)).chain(futures::stream::pending());
        let mut frames = decoder(framing, bytes, max_line);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut outcome = Outcome::default();
        loop {
            match frames.as_mut().poll_next(&mut cx) {
                Poll::Ready(Some(item)) => {
                    if !push(&mut outcome, item) {
                        break;
                    }
                }
                Poll::Ready(None) => panic!("the decoder ended a body that is still open"),
                Poll::Pending => break,
            }
        }
        outcome
    })
}

/// A small deterministic generator, seeded by the input, for cutting a
/// body into reads.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `body` cut into reads of mixed sizes (empty reads too), as a network
/// might deliver it.
pub fn cut(body: &[u8], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut reads = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let r = rng.next();
        let len = match r % 8 {
            0 => 0,
            1..=4 => 1 + (r >> 8) as usize % 4,
            5 | 6 => 1 + (r >> 8) as usize % 64,
            _ => 1 + (r >> 8) as usize % 4096,
        };
        let end = (at + len).min(body.len());
        reads.push(body[at..end].to_vec());
        at = end;
    }
    reads
}

/// Feed the frames `body` decodes to (whole, with the real line limit) to
/// `parser`, as the HTTP driver does, and check what the driver relies on:
/// `Ok(true)` exactly when the frame queued `Completed`, which is then the
/// last event queued; no `Completed` before it; an error has a message.
/// Returns the events.
pub fn check_wire(
    framing: Framing,
    parser: &mut dyn cogni::provider::http::WireParser,
    body: &[u8],
) -> Vec<cogni::provider::ResponseEvent> {
    use cogni::provider::ResponseEvent;
    let frames = decode(framing, &[body.to_vec()], fuzzing::DECODER_MAX_LINE_BYTES).frames;
    let mut out = std::collections::VecDeque::new();
    let mut all = Vec::new();
    for (event, data) in frames {
        let frame = SseEvent { event, data };
        let result = parser.on_frame(&frame, &mut out);
        let queued: Vec<ResponseEvent> = out.drain(..).collect();
        let completed = queued
            .iter()
            .position(|e| matches!(e, ResponseEvent::Completed { .. }));
        match result {
            Ok(true) => assert_eq!(
                completed,
                Some(queued.len() - 1),
                "the terminal frame must end with Completed: {queued:?}"
            ),
            Ok(false) => assert_eq!(completed, None, "Completed before the end: {queued:?}"),
            Err(error) => {
                assert!(!error.message.is_empty(), "an error without a message");
                all.extend(queued);
                return all;
            }
        }
        let done = result == Ok(true);
        all.extend(queued);
        if done {
            break;
        }
    }
    all
}
