//! Integration tests: one binary, one module per area. They drive the
//! binary through `sh`, PTYs, Unix signals and the Linux sandbox, so they
//! are Unix's; on Windows the unit tests of each crate run (and
//! `.ci/run` runs the quick-start task under Wine).
#![cfg(unix)]

mod acp;
mod acp_client;
mod agents;
mod anthropic_provider;
mod apply_patch_fixtures;
mod approval_tty;
mod ask_user;
mod browser;
mod chat_provider;
mod checkpoints;
mod cli;
mod common;
mod compaction;
mod context;
mod docs;
mod early_tools;
mod effects;
mod engine_mock;
mod files;
mod guards;
mod hooks;
mod hostile;
mod images;
mod import;
mod install;
mod interop;
mod layers;
mod library;
mod manual;
mod mcp;
mod mcp_server;
mod memory;
mod ollama_provider;
mod plan;
mod prompt;
mod record;
mod repl;
mod repl_notify;
mod repl_shows;
mod responses_provider;
mod review;
mod review_fronts;
mod review_tasks;
mod runner;
mod sandbox;
mod scale;
mod secrets;
mod sessions;
mod shard;
mod shell;
mod skills;
mod strategies;
mod text_tools;
mod transcripts;
mod web_fetch;
mod web_search;
