//! What a hook costs: one turn whose model calls `read_file` once, with no
//! hook, with a PreToolUse hook that runs `true`, and with a PreToolUse
//! and a PostToolUse hook that run `true`. The difference between the
//! rows is the hooks' cost (spawning `sh -c true` supervised, the JSON
//! in, the verdict out).
//!
//! `cargo bench --bench hooks`

use cogni::agent::{start_session_with_provider, Session, SessionConfig};
use cogni::protocol::EditTool;
use cogni::provider::scripted::{Script, ScriptedProvider};
use cogni::provider::{ProviderInfo, WireApi};
use cogni::spec::hooks::{HookEvent, HookSpec, OnFailure, DEFAULT_TIMEOUT};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::path::Path;
use std::sync::Arc;

const SCRIPT: &str = r#"
[[turns]]
usage = { input_tokens = 1000, output_tokens = 10 }
[[turns.tool_calls]]
name = "read_file"
arguments = { path = "notes.txt" }
[[turns]]
text = "done"
usage = { input_tokens = 1100, output_tokens = 5 }
"#;

fn hook(event: HookEvent) -> HookSpec {
    HookSpec {
        event,
        matcher: Some("read_file".into()),
        command: "true".into(),
        timeout: DEFAULT_TIMEOUT,
        on_failure: OnFailure::Allow,
    }
}

fn session(dir: &Path, hooks: &[HookSpec]) -> Session {
    let mut info = ProviderInfo::new("scripted", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    let mut config = SessionConfig::new(info, dir.to_path_buf());
    config.tool_config.enabled = vec!["read_file".into()];
    config.tool_config.edit_tool = Some(EditTool::None);
    config.hooks = hooks.to_vec();
    let script = Script::parse(SCRIPT).expect("script");
    start_session_with_provider(config, Arc::new(ScriptedProvider::new(script))).expect("session")
}

fn bench_hooks(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), "a few notes\n").expect("notes");
    let sink = |_: cogni::protocol::AgentEvent| {};
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
                || session(dir.path(), &hooks),
                |mut s| {
                    rt.block_on(async {
                        let r = s.run_turn("read the notes", &sink).await.expect("turn");
                        assert_eq!(r.tool_calls.len(), 1);
                    })
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_hooks);
criterion_main!(benches);
