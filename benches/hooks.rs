//! What a hook costs: one turn whose model calls `read_file` once, with no
//! hook, with a PreToolUse hook that runs `true`, and with a PreToolUse
//! and a PostToolUse hook that run `true`. The difference between the
//! rows is the hooks' cost (starting `true` from the fork server,
//! supervised, the JSON in, the verdict out).
//!
//! The same turn with no effects configured and with ten (every budget,
//! compaction, the repeated-failure rule, three regex guardrails): the
//! cost of effects in the loop.
//!
//! `cargo bench --bench hooks`

#[path = "support/turn.rs"]
mod turn;

use cogni::spec::effects::EffectSpec;
use cogni::spec::hooks::{HookEvent, HookSpec, OnFailure, DEFAULT_TIMEOUT};
use criterion::{criterion_group, BatchSize, Criterion};

fn hook(event: HookEvent) -> HookSpec {
    HookSpec {
        event,
        matcher: Some("read_file".into()),
        command: "true".into(),
        timeout: DEFAULT_TIMEOUT,
        on_failure: OnFailure::Allow,
    }
}

/// Ten effects, as `effects = [...]` in cogni.toml would give them.
const TEN_EFFECTS: &str = r#"effects = [
  { kind = "compact", threshold = 0.8 },
  { kind = "cost_limit", usd = 20.0 },
  { kind = "token_limit", tokens = 5000000 },
  { kind = "time_limit", seconds = 600 },
  { kind = "step_limit", steps = 40 },
  { kind = "tool_call_limit", calls = 100 },
  { kind = "repeated_failure", limit = 3 },
  { kind = "guardrail", on = "tool_call", tools = "shell", pattern = "rm\\s+-rf\\s+/", reason = "no recursive deletes of /" },
  { kind = "guardrail", on = "tool_call", pattern = "curl\\s+.*\\|\\s*sh", reason = "no piping downloads into a shell" },
  { kind = "guardrail", on = "reply", pattern = "BEGIN PRIVATE KEY", reason = "no keys in replies" },
]"#;

fn bench_hooks(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    turn::workspace(dir.path());
    let mut group = c.benchmark_group("turn_with_one_read_file");
    let cases = [
        ("no_hook", vec![]),
        ("pre_tool_use_true", vec![hook(HookEvent::PreToolUse)]),
        (
            "pre_and_post_tool_use_true",
            vec![hook(HookEvent::PreToolUse), hook(HookEvent::PostToolUse)],
        ),
    ];
    for (name, hooks) in cases {
        group.bench_function(name, |b| {
            b.iter_batched(
                || turn::session(dir.path(), &hooks, Vec::new()),
                |mut s| rt.block_on(turn::read_notes(&mut s)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn bench_effects(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    turn::workspace(dir.path());
    let table: toml::Table = toml::from_str(TEN_EFFECTS).expect("effects");
    let values = table["effects"].as_array().expect("a list").clone();
    let ten = EffectSpec::parse_all(&values, "effects").expect("ten effects");
    assert_eq!(ten.len(), 10);
    let mut group = c.benchmark_group("turn_with_one_read_file_effects");
    for (name, effects) in [("builtin_only", Vec::new()), ("ten_effects", ten)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || turn::session(dir.path(), &[], effects.clone()),
                |mut s| rt.block_on(turn::read_notes(&mut s)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_hooks, bench_effects);

/// criterion's main, after what cogni's own main does first: in the fork
/// server's process, serve; anywhere else, let hooks start from one (so
/// the figures are the hook's cost in cogni, not of forking this process).
fn main() {
    cogni::sandbox::fork_server::serve_if_asked().expect("the fork server");
    benches();
    Criterion::default().configure_from_args().final_summary();
}
