//! What a hook adds to a turn, measured in a process the size of cogni's
//! own (criterion's process is many times larger, and a hook is a fork):
//! 200 interleaved rounds of the same turn (one `read_file` call, scripted
//! model) without a hook, with a `PreToolUse` hook running `true` started
//! by the fork server, and with the same hook started by forking this
//! process (the fork server off); the medians and their differences. Then
//! the command alone, both ways, and spawned bare by tokio (the floor; the
//! command must then be a program's name), interleaved; and the first
//! command of all, which starts the fork server.
//!
//! `cargo run --profile dist --example bench_hook -- [--pairs N] [--command CMD]`

#[path = "../benches/support/turn.rs"]
mod turn;

use cogni::sandbox::fork_server;
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
    // This binary serves as the fork server too, like cogni's.
    fork_server::serve_if_asked().expect("the fork server");
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
    let hooks = std::slice::from_ref(&hook);
    let input = serde_json::json!({"hook_event_name": "PreToolUse"});
    // As a session has them: the command's words are checked each time.
    let pins = cogni::sandbox::pinned::pin(&[], &[dir.path().to_path_buf()]);
    let run_alone = |served: bool| {
        fork_server::set_enabled(served);
        let started = Instant::now();
        rt.block_on(cogni::agent::effects::command::run(
            &command,
            &input,
            dir.path(),
            &[],
            DEFAULT_TIMEOUT,
            &pins,
        ))
        .expect("runs");
        started.elapsed()
    };
    // The server starts with the first command that asks for it.
    let first = run_alone(true);
    let (mut bare, mut served, mut forked) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        bare.push(timed_turn(&rt, dir.path(), &[]));
        fork_server::set_enabled(true);
        served.push(timed_turn(&rt, dir.path(), hooks));
        fork_server::set_enabled(false);
        forked.push(timed_turn(&rt, dir.path(), hooks));
    }
    // The floor: the same program spawned bare (no supervisor, no stdin).
    let run_bare = || {
        let started = Instant::now();
        rt.block_on(async { tokio::process::Command::new(&command).status().await })
            .expect("runs");
        started.elapsed()
    };
    let (mut alone_served, mut alone_forked, mut bare_spawn) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        alone_served.push(run_alone(true));
        alone_forked.push(run_alone(false));
        bare_spawn.push(run_bare());
    }
    let (b, s, f) = (median(bare), median(served), median(forked));
    println!("turn without a hook:          {b:?} (median of {pairs})");
    println!(
        "with `{command}` as PreToolUse, fork server: {s:?}, adds {:?}",
        s.saturating_sub(b)
    );
    println!(
        "with `{command}` as PreToolUse, forking cogni: {f:?}, adds {:?}",
        f.saturating_sub(b)
    );
    println!(
        "the command alone:            {:?} fork server, {:?} forking cogni",
        median(alone_served),
        median(alone_forked)
    );
    println!(
        "`{command}` spawned bare:       {:?} (no supervisor)",
        median(bare_spawn)
    );
    println!("the first command, starting the server: {first:?}");
}
