//! The Responses stream parser (`provider::responses`): SSE bodies in,
//! checked as in `common::check_wire` (no panic, `Completed` exactly at the
//! terminal frame and last).
#![no_main]

mod common;

use cogni::provider::responses::EventParser;
use common::{check_wire, Framing};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let mut parser = EventParser::new();
    check_wire(Framing::Sse, &mut parser, body);
});
