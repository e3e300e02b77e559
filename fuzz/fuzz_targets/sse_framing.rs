//! The SSE decoder (`provider::sse`), checked against a small model of the
//! event-stream grammar.
//!
//! Input: one byte choosing the line limit, two bytes seeding how the body
//! is cut into reads, then the body. Checked, besides "no panic":
//!
//! - the body decodes to the events (and the error, if any) that the model
//!   below says, whole and cut into reads anywhere;
//! - with the body still open after the last read, the decoder delivers
//!   every event it has the bytes for, and any error the bytes already
//!   show, without waiting for more;
//! - no line longer than the limit gets through: the first one fails the
//!   stream, whatever the reads, after the events before it;
//! - invalid UTF-8 fails the stream at the same point, after the events
//!   before it; which of the two errors comes first is decided by the bytes
//!   up to the byte too many (the decoder reads no further).
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

    let whole = decode(Framing::Sse, &[body.to_vec()], max_line);
    let expected = model(body, max_line, true);
    assert_eq!(whole, expected, "whole body, limit {max_line}");

    let reads = cut(body, seed);
    let split = decode(Framing::Sse, &reads, max_line);
    assert_eq!(split, expected, "body cut into {} reads", reads.len());

    let open = decode_open(Framing::Sse, &reads, max_line);
    assert_eq!(open, model(body, max_line, false), "body left open");
});

/// Limits near 0, near the decoder's 1024-byte pieces, a few kilobytes,
/// and the real one.
fn line_limit(b: u8) -> usize {
    let n = usize::from(b & 63);
    match b >> 6 {
        0 => n,
        1 => 1000 + n,
        2 => 2000 + n * 64,
        _ => cogni::fuzzing::DECODER_MAX_LINE_BYTES,
    }
}

/// What the decoder must make of `body`: the event-stream grammar of the
/// HTML standard as `eventsource-stream` reads it (a final lone `\r` is not
/// yet a line end; a BOM at the very start is dropped), stopping at the
/// first line longer than `max_line` bytes (not counting its line end) or
/// the first invalid UTF-8. With `ended` false the body may go on, so an
/// unfinished character at its end is not (yet) an error. Nothing after
/// the byte that makes a line too long counts: a character that byte
/// leaves unfinished is not an error, even if the next byte shows it
/// invalid or the body ends.
fn model(body: &[u8], max_line: usize, ended: bool) -> Outcome {
    // Where the first line over the limit gets its byte too many.
    let mut too_long = None;
    let mut run = 0;
    for (i, &b) in body.iter().enumerate() {
        if b == b'\n' || b == b'\r' {
            run = 0;
        } else {
            run += 1;
            if run > max_line {
                too_long = Some(i);
                break;
            }
        }
    }
    let checked = too_long.map_or(body, |l| &body[..=l]);
    let bad_utf8 = match std::str::from_utf8(checked) {
        Ok(_) => None,
        Err(e) if e.error_len().is_some() || (ended && too_long.is_none()) => Some(e.valid_up_to()),
        Err(_) => None,
    };
    let (stop, failure) = match (too_long, bad_utf8) {
        (Some(l), Some(u)) if u < l => (u, Some(Failure::Utf8)),
        (Some(l), _) => (l, Some(Failure::LineTooLong)),
        (None, Some(u)) => (u, Some(Failure::Utf8)),
        (None, None) => (body.len(), None),
    };
    let valid = match std::str::from_utf8(&body[..stop]) {
        Ok(text) => text,
        // Only an unfinished character at the end of an open body, or
        // before the byte too many.
        Err(e) => std::str::from_utf8(&body[..e.valid_up_to()]).unwrap_or(""),
    };
    let text = valid.strip_prefix('\u{feff}').unwrap_or(valid);
    Outcome {
        frames: events(text),
        failure,
    }
}

/// The events dispatched by the complete lines of `text`.
fn events(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut data = String::new();
    let mut event = String::new();
    let mut rest = text;
    while let Some(end) = rest.find(['\r', '\n']) {
        let line = &rest[..end];
        let after = &rest[end..];
        rest = if let Some(next) = after.strip_prefix("\r\n") {
            next
        } else if after == "\r" {
            // `\r` then nothing: maybe the first half of `\r\n`.
            break;
        } else {
            &after[1..]
        };
        if line.is_empty() {
            if !data.is_empty() {
                data.pop();
                let name = if event.is_empty() { "message" } else { &event };
                out.push((name.to_string(), std::mem::take(&mut data)));
            }
            data.clear();
            event.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            "event" => event = value.to_string(),
            _ => {}
        }
    }
    out
}
