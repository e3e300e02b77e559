//! Sandbox set-up cost per command: `/bin/true` spawned through
//! `tools::exec` bare and confined (user/mount/pid namespaces, read-only
//! binds, Landlock, seccomp), in one run so the ratio is meaningful on a
//! noisy machine. After criterion's figures, an interleaved comparison
//! prints the median added time and the ratio.
//!
//! `cargo bench --bench sandbox`

use cogni::protocol::{SandboxMode, SandboxPolicy};
use cogni::sandbox::{self, Confinement};
use cogni::tools::exec::{self, ExecRequest, DEFAULT_IO_DRAIN, DEFAULT_KILL_GRACE};
use criterion::{criterion_group, criterion_main, Criterion};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn request(cwd: &std::path::Path, sandbox: Option<Arc<Confinement>>) -> ExecRequest {
    ExecRequest {
        argv: vec!["/bin/true".into()],
        cwd: cwd.to_path_buf(),
        env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
        timeout: Duration::from_secs(10),
        capture_limit_bytes: 64 * 1024,
        kill_grace: DEFAULT_KILL_GRACE,
        io_drain: DEFAULT_IO_DRAIN,
        sandbox,
    }
}

/// A workspace like a real one: a repository with a nested one, so the
/// confinement binds two `.git` directories read-only.
fn workspace() -> (tempfile::TempDir, tempfile::TempDir, Arc<Confinement>) {
    let work = tempfile::tempdir().expect("temp dir");
    for dir in [".git/hooks", "vendor/x/.git", "src"] {
        std::fs::create_dir_all(work.path().join(dir)).expect("mkdir");
    }
    let temp = tempfile::tempdir().expect("temp dir");
    let policy = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        ..SandboxPolicy::default()
    };
    let confinement = Confinement::new(&policy, work.path(), temp.path()).expect("sandbox backend");
    (work, temp, Arc::new(confinement))
}

fn spawn(c: &mut Criterion) {
    if let Err(e) = sandbox::probe().backend() {
        eprintln!("skipped: no sandbox backend: {e}");
        return;
    }
    let rt = runtime();
    let (work, _temp, confinement) = workspace();
    let mut group = c.benchmark_group("sandbox_spawn_true");
    group.bench_function("bare", |b| {
        b.iter(|| {
            rt.block_on(exec::run(request(work.path(), None)))
                .expect("run")
        })
    });
    group.bench_function("confined", |b| {
        b.iter(|| {
            rt.block_on(exec::run(request(work.path(), Some(confinement.clone()))))
                .expect("run")
        })
    });
    group.finish();

    // Interleaved pairs: drift on the machine hits both sides alike.
    let rounds = 300;
    let mut bare = Vec::with_capacity(rounds);
    let mut confined = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        rt.block_on(exec::run(request(work.path(), None)))
            .expect("run");
        bare.push(t.elapsed());
        let t = Instant::now();
        rt.block_on(exec::run(request(work.path(), Some(confinement.clone()))))
            .expect("run");
        confined.push(t.elapsed());
    }
    bare.sort();
    confined.sort();
    let (b, s) = (bare[rounds / 2], confined[rounds / 2]);
    println!(
        "sandbox set-up, median of {rounds} interleaved pairs: bare {:.3} ms, confined {:.3} ms, added {:.3} ms, ratio {:.2}",
        b.as_secs_f64() * 1e3,
        s.as_secs_f64() * 1e3,
        (s.as_secs_f64() - b.as_secs_f64()) * 1e3,
        s.as_secs_f64() / b.as_secs_f64()
    );
}

criterion_group!(benches, spawn);
criterion_main!(benches);
