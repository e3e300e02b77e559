//! Integration tests: one binary, one module per area.

mod anthropic_provider;
mod apply_patch_fixtures;
mod approval_tty;
mod chat_provider;
mod cli;
mod common;
mod compaction;
mod context;
mod effects;
mod engine_mock;
mod hooks;
mod manual;
mod memory;
mod ollama_provider;
mod plan;
mod prompt;
mod record;
mod repl;
mod responses_provider;
mod runner;
mod sandbox;
mod sessions;
mod shard;
mod shell;
mod strategies;
mod text_tools;
