//! What a hook adds to a turn, measured in a process the size of cogni's
//! own (criterion's process is many times larger, and a hook is a fork):
//! 200 interleaved pairs of the same turn (one `read_file` call, scripted
//! model) without a hook and with a `PreToolUse` hook running `true`; the
//! medians and their difference.
//!
//! `cargo run --release --example bench_hook -- [--pairs N] [--command CMD]`

#[path = "../benches/support/turn.rs"]
mod turn;

use cogni::spec::hooks::{HookEvent, HookSpec, OnFailure, DEFAULT_TIMEOUT};
use std::time::{Duration, Instant};

/// One turn's wall time, the session made beforehand.
fn timed_turn(rt: &tokio::runtime::Runtime, dir: &std::path::Path, hooks: &[HookSpec]) -> Duration {
    let mut session = turn::session(dir, hooks, Vec::new());
    let started = Instant::now();
    rt.block_on(turn::read_notes(&mut session));
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
    turn::workspace(dir.path());
    let hook = HookSpec {
        event: HookEvent::PreToolUse,
        matcher: None,
        command: command.clone(),
        timeout: DEFAULT_TIMEOUT,
        on_failure: OnFailure::Allow,
    };
    let (mut bare, mut hooked) = (Vec::new(), Vec::new());
    for _ in 0..pairs {
        bare.push(timed_turn(&rt, dir.path(), &[]));
        hooked.push(timed_turn(&rt, dir.path(), std::slice::from_ref(&hook)));
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
