//! What a hook adds to a turn, measured in a process the size of cogni's
//! own (criterion's process is many times larger, and a hook is a fork):
//! 200 interleaved pairs of the same turn (one `read_file` call, scripted
//! model) without a hook and with a `PreToolUse` hook running `true`; the
//! medians and their difference.
//!
//! `cargo run --release --example bench_hook -- [--pairs N] [--command CMD]`

use cogni::agent::{start_session_with_provider, SessionConfig};
use cogni::protocol::EditTool;
use cogni::provider::scripted::{Script, ScriptedProvider};
use cogni::provider::{ProviderInfo, WireApi};
use cogni::spec::hooks::{HookEvent, HookSpec, OnFailure, DEFAULT_TIMEOUT};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCRIPT: &str = r#"
[[turns]]
[[turns.tool_calls]]
name = "read_file"
arguments = { path = "notes.txt" }
[[turns]]
text = "done"
"#;

fn turn(rt: &tokio::runtime::Runtime, dir: &Path, hooks: &[HookSpec]) -> Duration {
    let mut info = ProviderInfo::new("scripted", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    let mut config = SessionConfig::new(info, dir.to_path_buf());
    config.tool_config.enabled = vec!["read_file".into()];
    config.tool_config.edit_tool = Some(EditTool::None);
    config.hooks = hooks.to_vec();
    let script = Script::parse(SCRIPT).expect("script");
    let mut session = start_session_with_provider(config, Arc::new(ScriptedProvider::new(script)))
        .expect("session");
    let sink = |_: cogni::protocol::AgentEvent| {};
    let started = Instant::now();
    let result = rt
        .block_on(session.run_turn("read the notes", &sink))
        .expect("turn");
    assert_eq!(result.tool_calls.len(), 1);
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut pairs = 200;
    let mut command = "true".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--pairs" => pairs = args.next().and_then(|n| n.parse().ok()).expect("--pairs N"),
            "--command" => command = args.next().expect("--command CMD"),
            other => panic!("unknown argument {other}"),
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), "a few notes\n").expect("notes");
    let hook = HookSpec {
        event: HookEvent::PreToolUse,
        matcher: None,
        command: command.clone(),
        timeout: DEFAULT_TIMEOUT,
        on_failure: OnFailure::Allow,
    };
    let (mut bare, mut hooked) = (Vec::new(), Vec::new());
    for _ in 0..pairs {
        bare.push(turn(&rt, dir.path(), &[]));
        hooked.push(turn(&rt, dir.path(), std::slice::from_ref(&hook)));
    }
    let input = serde_json::json!({"hook_event_name": "PreToolUse"});
    let alone: Vec<Duration> = (0..pairs)
        .map(|_| {
            let started = Instant::now();
            rt.block_on(cogni::agent::effects::command::run(
                &command,
                &input,
                dir.path(),
                &[],
                DEFAULT_TIMEOUT,
            ))
            .expect("runs");
            started.elapsed()
        })
        .collect();
    let (b, h) = (median(bare), median(hooked));
    println!("turn without a hook:        {b:?} (median of {pairs})");
    println!("turn with `{command}` as PreToolUse: {h:?}");
    println!("the hook adds:              {:?}", h.saturating_sub(b));
    println!("the command alone:          {:?}", median(alone));
}
