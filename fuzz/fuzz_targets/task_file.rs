//! Task files (`spec::tasks::TaskFile::parse`): parsing and validation.
//!
//! Input: the file's text (inputs that are not UTF-8 are skipped), parsed
//! as if it were examples/tasks.toml, so relative paths in it find the
//! example's prompt, script and fixture files. Checked, besides "no
//! panic": a rejected file names at least one problem, each with where it
//! is, and parsing is deterministic.
//!
//! Validation reads the files a task file names. So that an input cannot
//! make it read a device or a pipe (`/dev/zero` never ends, `/dev/stdin`
//! waits), inputs with a string naming `dev`, `proc`, `sys`, `run` or `fd`
//! anywhere are skipped.
#![no_main]

use cogni::spec::tasks::TaskFile;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const TASKS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/tasks.toml");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(table) = text.parse::<toml::Table>() {
        if names_a_special_file(&toml::Value::Table(table)) {
            return;
        }
    }
    let path = Path::new(TASKS);
    match TaskFile::parse(path, text) {
        Ok(file) => {
            let again = TaskFile::parse(path, text).expect("the same text parses twice");
            assert_eq!(format!("{file:?}"), format!("{again:?}"));
        }
        Err(error) => {
            assert!(!error.problems.is_empty(), "rejected without a problem");
            for problem in &error.problems {
                assert!(!problem.at.is_empty() || !problem.message.is_empty());
                assert!(!problem.message.is_empty(), "a problem without a message");
            }
            let again = TaskFile::parse(path, text).expect_err("the same text fails twice");
            assert_eq!(error, again);
        }
    }
});

fn names_a_special_file(value: &toml::Value) -> bool {
    match value {
        toml::Value::String(s) => ["dev", "proc", "sys", "run", "fd"]
            .iter()
            .any(|word| s.contains(word)),
        toml::Value::Array(items) => items.iter().any(names_a_special_file),
        toml::Value::Table(table) => table.values().any(names_a_special_file),
        _ => false,
    }
}
