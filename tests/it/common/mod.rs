//! Shared helpers for the integration tests.
#![allow(dead_code)]

pub mod mock;
pub mod pty;
pub mod wire_anthropic;
pub mod wire_ollama;
pub mod wire_responses;
