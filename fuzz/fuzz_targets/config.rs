//! Configuration files (`config::ConfigFile::parse`) and their validation
//! into a session config (`config::resolve`).
//!
//! Input: a cogni.toml (inputs that are not UTF-8 are skipped). Each file
//! that parses is resolved against a fixed environment (an OpenAI key,
//! `SHELL`) with an empty home and working directory. Checked, besides "no
//! panic": resolving is deterministic, and an accepted config keeps the
//! limits validation promises (a shell timeout between 1 ms and the
//! maximum, output caps of at least 1).
//!
//! Resolving reads two files a config may name, `base_instructions_file`
//! and a provider's `key_file`; they are cleared first, so an input cannot
//! make it read a device (`/dev/zero` never ends).
#![no_main]

use cogni::config::{self, ConfigFile};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = scratch();
    let Ok(mut file) = ConfigFile::parse(&dir.join("cogni.toml"), text) else {
        return;
    };
    file.base_instructions_file = None;
    for provider in file.model_providers.values_mut() {
        provider.key_file = None;
    }
    let first = config::resolve(file.clone(), &dir, &dir, &env);
    let second = config::resolve(file, &dir, &dir, &env);
    match (first, second) {
        (Ok(a), Ok(b)) => {
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
            let tools = &a.session.tool_config;
            assert!(!tools.shell_timeout.is_zero());
            assert!(tools.shell_timeout <= tools.max_shell_timeout);
            assert!(tools.max_output_bytes >= 1 && tools.max_output_lines >= 1);
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("resolving twice differs: {a:?} / {b:?}"),
    }
});

fn env(name: &str) -> Option<String> {
    match name {
        "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" | "OPENROUTER_API_KEY" => {
            Some("sk-fuzz".to_string())
        }
        "SHELL" => Some("/bin/bash".to_string()),
        _ => None,
    }
}

/// An empty directory for home and the working directory.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cogni-fuzz-config-{}", std::process::id()));
    if !Path::new(&dir).is_dir() {
        std::fs::create_dir_all(&dir).expect("a scratch directory");
    }
    dir
}
