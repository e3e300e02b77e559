//! The NDJSON decoder (`provider::ndjson`, Ollama's stream), checked
//! against a model of line splitting.
//!
//! Input: one byte choosing the line limit, two bytes seeding how the body
//! is cut into reads, then the body. Checked, besides "no panic":
//!
//! - the body decodes to the lines (and the error, if any) the model below
//!   says, whole and cut into reads anywhere;
//! - with the body still open after the last read, every complete line is
//!   delivered without waiting for more bytes;
//! - no line longer than the limit gets through, whatever the reads.
#![no_main]

mod common;

use common::{cut, decode, decode_open, Failure, Framing, Outcome};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let max_line = line_limit(data[0]);
    let seed = u64::from(u16::from_le_bytes([data[1], data[2]]));
    let body = &data[3..];

    let whole = decode(Framing::Ndjson, &[body.to_vec()], max_line);
    let expected = model(body, max_line, true);
    assert_eq!(whole, expected, "whole body, limit {max_line}");

    let reads = cut(body, seed);
    let split = decode(Framing::Ndjson, &reads, max_line);
    assert_eq!(split, expected, "body cut into {} reads", reads.len());

    let open = decode_open(Framing::Ndjson, &reads, max_line);
    assert_eq!(open, model(body, max_line, false), "body left open");
});

fn line_limit(b: u8) -> usize {
    let n = usize::from(b & 63);
    match b >> 6 {
        0 => n,
        1 => 1000 + n,
        2 => 2000 + n * 64,
        _ => cogni::fuzzing::DECODER_MAX_LINE_BYTES,
    }
}

/// Lines end at `\n` (a `\r` before it is dropped); blank lines are
/// skipped; a last line without `\n` counts once the body has ended. A line
/// longer than `max_line` bytes (before its `\n`) ends the stream with an
/// error, even before it is complete; so does one that is not UTF-8.
fn model(body: &[u8], max_line: usize, ended: bool) -> Outcome {
    let mut outcome = Outcome::default();
    let mut rest = body;
    while !rest.is_empty() {
        let (line, next, complete) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..], true),
            None => (rest, &rest[rest.len()..], ended),
        };
        if line.len() > max_line {
            outcome.failure = Some(Failure::LineTooLong);
            return outcome;
        }
        if !complete {
            return outcome;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.iter().all(u8::is_ascii_whitespace) {
            match std::str::from_utf8(line) {
                Ok(text) => outcome.frames.push((String::new(), text.to_string())),
                Err(_) => {
                    outcome.failure = Some(Failure::Utf8);
                    return outcome;
                }
            }
        }
        rest = next;
    }
    outcome
}
