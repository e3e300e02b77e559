//! Engine micro-benchmarks: build_prompt on a long history; choosing a
//! sliding window over 100,000 items.
//!
//! `cargo bench --bench engine`

use cogni::agent::window::slide;
use cogni::agent::{build_prompt, start_session_with_provider, SessionConfig};
use cogni::metrics::tokens::Estimator;
use cogni::protocol::{HistoryItem, Role, ToolCall, ToolCallKind, ToolOutput};
use cogni::provider::chat_completions::ChatCompletions;
use cogni::provider::scripted::{Script, ScriptedProvider};
use cogni::provider::{Provider, ProviderInfo, WireApi};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::sync::Arc;

fn history(n: usize) -> Vec<HistoryItem> {
    (0..n)
        .map(|i| match i % 3 {
            0 => HistoryItem::text(Role::Assistant, format!("step {i}: looking at the code")),
            1 => HistoryItem::tool_call(ToolCall {
                id: format!("call_{i}"),
                name: "shell".into(),
                arguments: format!("{{\"command\":\"cat src/file_{i}.rs\"}}"),
                kind: ToolCallKind::Function,
            }),
            _ => HistoryItem::tool_output(ToolOutput {
                call_id: format!("call_{}", i - 1),
                content: "fn main() {}\n".repeat(20),
                is_error: false,
                command: None,
                images: Vec::new(),
            }),
        })
        .collect()
}

fn bench_build_prompt(c: &mut Criterion) {
    let mut info = ProviderInfo::new("scripted", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    let config = SessionConfig::new(info, std::env::temp_dir());
    let provider = Arc::new(ScriptedProvider::new(Script::default()));
    let session = start_session_with_provider(config, provider).expect("session");
    let ctx = session.context();
    let items = history(1000);
    c.bench_function("build_prompt_1000_items", |b| {
        b.iter(|| {
            let prompt = build_prompt(black_box(ctx), black_box(&items));
            black_box(prompt.input_items.len())
        })
    });
    // What a request really costs before the network: the prompt and the
    // Chat Completions JSON body built from it (`stream` builds the body
    // eagerly; the stream is dropped unpolled, so nothing is sent).
    let chat = ChatCompletions::new(ProviderInfo::new(
        "bench",
        "http://127.0.0.1:9/v1",
        WireApi::Chat,
    ))
    .expect("client");
    c.bench_function("build_prompt_and_chat_body_1000_items", |b| {
        b.iter(|| {
            let prompt = build_prompt(black_box(ctx), black_box(&items));
            drop(black_box(chat.stream(&prompt.request(ctx))));
        })
    });
}

/// The sliding window over a 100,000-item history with a 100k-token limit:
/// the first choice (sizes estimated as the walk reaches them, from the
/// last item back), the same with sizes known, and the common case, a
/// window that still fits and does not move.
fn bench_sliding_window(c: &mut Criterion) {
    let items = history(100_000);
    let sizes: Vec<u64> = items
        .iter()
        .map(|i| Estimator::Bytes.count_item(i))
        .collect();
    let budget = 100_000;
    let mut group = c.benchmark_group("sliding_window_100k_items");
    group.bench_function("first_choice_estimating", |b| {
        b.iter(|| {
            let mut size = |i: usize| Estimator::Bytes.count_item(&items[i]);
            black_box(slide(black_box(&items), &mut size, 0, budget, false))
        })
    });
    group.bench_function("first_choice_sizes_known", |b| {
        b.iter(|| {
            black_box(slide(
                black_box(&items),
                &mut |i| sizes[i],
                0,
                budget,
                false,
            ))
        })
    });
    let start = slide(&items, &mut |i| sizes[i], 0, budget, false);
    group.bench_function("unchanged", |b| {
        b.iter(|| {
            black_box(slide(
                black_box(&items),
                &mut |i| sizes[i],
                start,
                budget,
                false,
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_build_prompt, bench_sliding_window);
criterion_main!(benches);
