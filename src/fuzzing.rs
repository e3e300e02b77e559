//! Entry points for the fuzz targets in `fuzz/` (cargo-fuzz; see
//! docs/testing.md), and for nothing else: not a stable API.
//!
//! Most parsers the targets drive are public already (the wire parsers in
//! `provider::*`, `tools::apply_patch::parse_patch`,
//! `tools::safety::is_known_safe`, `spec::tasks::TaskFile::parse`,
//! `config::ConfigFile::parse`); this module adds only what is not: the
//! stream decoders with a small line limit, so that a fuzz input can cross
//! it, and the shell tokenizer behind the known-safe classifier.

use crate::provider::sse::{SseStream, MAX_LINE_BYTES};
use crate::provider::{ndjson, sse};
use futures::Stream;
use std::time::Duration;

/// The line limit of the real decoders.
pub const DECODER_MAX_LINE_BYTES: usize = MAX_LINE_BYTES;

/// [`sse::decode`] failing on lines longer than `max_line` bytes.
pub fn sse_decode<S, B, E>(bytes: S, idle_timeout: Duration, max_line: usize) -> SseStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    sse::decode_with_line_limit(bytes, idle_timeout, max_line)
}

/// [`ndjson::decode`] failing on lines longer than `max_line` bytes.
pub fn ndjson_decode<S, B, E>(
    bytes: S,
    idle_timeout: Duration,
    max_line: usize,
) -> ndjson::LineStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    ndjson::decode_with_line_limit(bytes, idle_timeout, max_line)
}

/// The words the known-safe classifier's shell tokenizer makes of
/// `script`, each with whether it holds an unquoted glob character; `None`
/// when the tokenizer refuses the script (so it is never known-safe).
pub fn shell_words(script: &str) -> Option<Vec<(String, bool)>> {
    crate::tools::safety::script_words(script)
}
