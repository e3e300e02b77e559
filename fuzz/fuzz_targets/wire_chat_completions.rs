//! The Chat Completions stream parser (`provider::chat_completions`): SSE
//! bodies in, checked as in `common::check_wire` (no panic, `Completed`
//! exactly at the terminal frame and last).
#![no_main]

mod common;

use cogni::provider::chat_completions::ChunkParser;
use common::{check_wire, Framing};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let mut parser = ChunkParser::new(vec!["apply_patch".to_string()]);
    check_wire(Framing::Sse, &mut parser, body);
});
