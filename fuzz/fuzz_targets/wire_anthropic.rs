//! The Anthropic Messages stream parser (`provider::anthropic`): SSE bodies
//! in, each parsed twice (without and with an output schema, which the
//! parser answers through a tool), checked as in `common::check_wire` (no
//! panic, `Completed` exactly at the terminal frame and last).
#![no_main]

mod common;

use cogni::provider::anthropic::EventParser;
use common::{check_wire, Framing};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let freeform = || vec!["apply_patch".to_string()];
    let mut parser = EventParser::new(freeform(), None);
    check_wire(Framing::Sse, &mut parser, body);
    let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let mut parser = EventParser::new(freeform(), Some(&schema));
    check_wire(Framing::Sse, &mut parser, body);
});
