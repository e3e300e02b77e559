//! The Ollama native stream parser (`provider::ollama`): NDJSON bodies in,
//! checked as in `common::check_wire` (no panic, `Completed` exactly at the
//! terminal line and last).
#![no_main]

mod common;

use cogni::provider::ollama::LineParser;
use common::{check_wire, Framing};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let mut parser = LineParser::new(vec!["apply_patch".to_string()]);
    check_wire(Framing::Ndjson, &mut parser, body);
});
