//! Session files: resuming a 2,000-item session (read, parse, replay,
//! repair; opened for appending under its lock), and appending one item.

use cogni::protocol::{HistoryItem, HistoryObserver, Role, ToolCall, ToolCallKind, ToolOutput};
use cogni::sandbox::redact::redact;
use cogni::store::{Header, Redactor, Store};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

/// A realistic mix: user requests, assistant text, calls and 1-2 KB outputs.
fn history(n: usize) -> Vec<HistoryItem> {
    (0..n)
        .map(|i| match i % 4 {
            0 => HistoryItem::text(
                Role::User,
                format!("request {i}: please fix the bug in module {i}"),
            ),
            1 => HistoryItem::tool_call(ToolCall {
                id: format!("call_{i}"),
                name: "shell".into(),
                arguments: format!("{{\"command\":\"cat src/file_{i}.rs\"}}"),
                kind: ToolCallKind::Function,
            }),
            2 => HistoryItem::tool_output(ToolOutput {
                call_id: format!("call_{}", i - 1),
                content: "fn main() { println!(\"hello\"); }\n".repeat(40),
                is_error: false,
                command: None,
                images: Vec::new(),
            }),
            _ => HistoryItem::text(
                Role::Assistant,
                "I looked at the file and changed the loop bound; the tests pass now. ".repeat(4),
            ),
        })
        .collect()
}

fn identity() -> Redactor {
    Arc::new(|line: &str| line.to_string())
}

fn bench_store(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path());
    let header = Header::new("bench", 0, Path::new("/repo"), "gpt-4.1", "openai");
    let file = store.create(&header, &[], identity()).expect("create");
    for item in history(2000) {
        file.appended(std::slice::from_ref(&item));
    }
    drop(file);
    let size = std::fs::metadata(dir.path().join("sessions/bench.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!("session file: 2,000 items, {size} bytes");
    c.bench_function("resume_2000_items", |b| {
        b.iter(|| {
            let (loaded, file) = store.open("bench", None, identity()).expect("open");
            black_box((loaded.history.len(), file));
        })
    });
    let append = Store::new(&dir.path().join("append"));
    let file = append
        .create(
            &Header::new("a", 0, Path::new("/"), "m", "p"),
            &[],
            Arc::new(|line: &str| redact(line).into_owned()),
        )
        .expect("create");
    let item = history(3).pop().expect("item");
    c.bench_function("append_one_item_2kb", |b| {
        b.iter(|| file.appended(std::slice::from_ref(black_box(&item))))
    });
}

criterion_group!(benches, bench_store);
criterion_main!(benches);
