//! Shared helpers for the integration tests.
#![allow(dead_code)]

pub mod images;
pub mod mock;
pub mod provider_harness;
pub mod pty;
pub mod web_search;
pub mod wire_anthropic;
pub mod wire_chat;
pub mod wire_ollama;
pub mod wire_responses;

/// `actual` against the fixture `tests/fixtures/NAME`; with
/// `COGNI_UPDATE_SNAPSHOTS=1` the fixture is written first.
pub fn assert_golden(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    if std::env::var_os("COGNI_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (COGNI_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "{name} changed; if on purpose, run with COGNI_UPDATE_SNAPSHOTS=1"
    );
}

/// The names in `dir`, sorted; none when it cannot be read.
pub fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Host pids of live (not zombie) processes whose command line (NUL
/// separated arguments) contains `needle`. Sandboxed commands live in their
/// own PID namespace, so tests find them by command line, not by `$$`.
pub fn pids_running(needle: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = state
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'));
            String::from_utf8_lossy(&cmdline).contains(needle) && !zombie
        })
        .collect()
}

/// How many processes [`pids_running`] finds.
pub fn processes_running(needle: &str) -> usize {
    pids_running(needle).len()
}
