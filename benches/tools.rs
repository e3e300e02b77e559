//! Tool benchmarks: shell overhead over a bare spawn (in the default
//! workspace-write sandbox, and unconfined to show the tool's own share),
//! grep over a tree.
//!
//! `cargo bench --bench tools`

#[path = "support/tree.rs"]
mod tree;

use cogni::protocol::{SandboxMode, SandboxPolicy};
use cogni::tools::grep::GrepTool;
use cogni::tools::shell::ShellTool;
use cogni::tools::{Tool, ToolConfig, ToolContext, ToolInput};
use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::Arc;
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn context(cwd: &std::path::Path, sandbox: SandboxPolicy) -> ToolContext {
    ToolContext::new(cwd.to_path_buf(), sandbox, Arc::new(ToolConfig::default()))
}

fn shell_overhead(c: &mut Criterion) {
    let rt = runtime();
    let ctx = context(&std::env::temp_dir(), SandboxPolicy::default());
    let unconfined = context(
        &std::env::temp_dir(),
        SandboxPolicy {
            mode: SandboxMode::DangerFullAccess,
            ..SandboxPolicy::default()
        },
    );
    let tool = ShellTool::new(&ctx.config);
    let mut group = c.benchmark_group("spawn_true");
    group.bench_function("bare_tokio_command", |b| {
        b.iter(|| {
            rt.block_on(async {
                tokio::process::Command::new("true")
                    .output()
                    .await
                    .expect("spawn true")
            })
        })
    });
    group.bench_function("shell_tool_argv", |b| {
        b.iter(|| {
            rt.block_on(tool.run(
                ToolInput::Json(serde_json::json!({"command": ["true"]})),
                &ctx,
            ))
        })
    });
    group.bench_function("shell_tool_argv_unconfined", |b| {
        b.iter(|| {
            rt.block_on(tool.run(
                ToolInput::Json(serde_json::json!({"command": ["true"]})),
                &unconfined,
            ))
        })
    });
    group.bench_function("shell_tool_string", |b| {
        b.iter(|| {
            rt.block_on(tool.run(
                ToolInput::Json(serde_json::json!({"command": "true"})),
                &ctx,
            ))
        })
    });
    group.finish();
}

fn grep_tree(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    tree::generate(dir.path(), 5_000).expect("generate tree");
    let ctx = context(dir.path(), SandboxPolicy::default());
    let tool = GrepTool::new(&ctx.config);
    let args = serde_json::json!({"pattern": tree::NEEDLE_PATTERN});
    let mut group = c.benchmark_group("grep");
    group.sample_size(20);
    group.bench_function("5000_files", |b| {
        b.iter(|| rt.block_on(tool.run(ToolInput::Json(args.clone()), &ctx)))
    });
    group.finish();
}

criterion_group!(benches, shell_overhead, grep_tree);
criterion_main!(benches);
