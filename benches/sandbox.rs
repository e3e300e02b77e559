//! Set-up cost per command: `/bin/true` spawned raw (tokio, no
//! supervision), through `tools::exec` unconfined (the subreaper
//! supervisor), and confined (user/mount/pid namespaces, read-only binds,
//! Landlock, seccomp) with the network on and off (off adds the Unix-socket
//! guard), in one run so the ratios are meaningful on a noisy machine. A
//! confined command is measured as the shell tool runs it: the protected
//! paths scanned before it (and bound), and again after it. After
//! criterion's figures, an interleaved comparison prints the medians and
//! what each layer adds.
//!
//! `protected_scan` measures those scans alone in a repository of 10,000
//! files in 520 directories: the first (every directory read) and the
//! ones after it (only directories that changed are read again).
//!
//! `cargo bench --bench sandbox`

use cogni::process::{self as exec, ExecRequest, DEFAULT_IO_DRAIN, DEFAULT_KILL_GRACE};
use cogni::protocol::{SandboxMode, SandboxPolicy};
use cogni::sandbox::protected::Scanner;
use cogni::sandbox::{self, Confined, Confinement, Workspace};
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

fn request(cwd: &std::path::Path, sandbox: Option<Arc<Confined>>) -> ExecRequest {
    ExecRequest {
        argv: vec!["/bin/true".into()],
        cwd: cwd.to_path_buf(),
        env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
        timeout: Duration::from_secs(10),
        capture_limit_bytes: 64 * 1024,
        kill_grace: DEFAULT_KILL_GRACE,
        io_drain: DEFAULT_IO_DRAIN,
        sandbox,
        stdin: None,
    }
}

/// A workspace like a real one: a repository with a nested one, so the
/// confinement binds two `.git` directories read-only. The confinements
/// with the network off (the default) and on.
fn workspace() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    Arc<Confinement>,
    Arc<Confinement>,
) {
    let work = tempfile::tempdir().expect("temp dir");
    for dir in [".git/hooks", "vendor/x/.git", "src"] {
        std::fs::create_dir_all(work.path().join(dir)).expect("mkdir");
    }
    let temp = tempfile::tempdir().expect("temp dir");
    let policy = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        ..SandboxPolicy::default()
    };
    let workspace = Workspace::pin(work.path(), &[]);
    let confinement = Confinement::new(&policy, &workspace, temp.path()).expect("sandbox backend");
    let network = SandboxPolicy {
        network_access: true,
        ..policy
    };
    let networked = Confinement::new(&network, &workspace, temp.path()).expect("sandbox backend");
    (work, temp, Arc::new(confinement), Arc::new(networked))
}

/// `/bin/true` as the shell tool runs it: unconfined, or confined with the
/// protected paths scanned before (and bound) and after.
fn run_true(
    rt: &Runtime,
    cwd: &std::path::Path,
    sandbox: Option<&Arc<Confinement>>,
    scanner: &mut Scanner,
) {
    let Some(confinement) = sandbox else {
        rt.block_on(exec::run(request(cwd, None))).expect("run");
        return;
    };
    let roots = confinement.workspace_roots().to_vec();
    let before = scanner.scan(&roots);
    let confined = Arc::new(confinement.confine(&before).expect("confine"));
    rt.block_on(exec::run(request(cwd, Some(confined))))
        .expect("run");
    scanner.refuse_new(&roots, &before);
}

/// `/bin/true` spawned by tokio directly: the floor.
async fn raw(cwd: &std::path::Path) {
    tokio::process::Command::new("/bin/true")
        .current_dir(cwd)
        .output()
        .await
        .expect("spawn");
}

fn spawn(c: &mut Criterion) {
    if let Err(e) = sandbox::probe().backend() {
        eprintln!("skipped: no sandbox backend: {e}");
        return;
    }
    let rt = runtime();
    let (work, _temp, confinement, networked) = workspace();
    let variants: [(&str, Option<Arc<Confinement>>); 3] = [
        ("unconfined", None),
        ("confined_network_on", Some(networked)),
        ("confined", Some(confinement)),
    ];
    let mut scanner = Scanner::default();
    let mut group = c.benchmark_group("sandbox_spawn_true");
    group.bench_function("raw", |b| b.iter(|| rt.block_on(raw(work.path()))));
    for (name, sandbox) in &variants {
        group.bench_function(*name, |b| {
            b.iter(|| run_true(&rt, work.path(), sandbox.as_ref(), &mut scanner))
        });
    }
    group.finish();

    // Interleaved rounds: drift on the machine hits every variant alike.
    let rounds = 300;
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); variants.len() + 1];
    for _ in 0..rounds {
        let t = Instant::now();
        rt.block_on(raw(work.path()));
        times[0].push(t.elapsed());
        for (i, (_, sandbox)) in variants.iter().enumerate() {
            let t = Instant::now();
            run_true(&rt, work.path(), sandbox.as_ref(), &mut scanner);
            times[i + 1].push(t.elapsed());
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|t| {
            t.sort();
            t[rounds / 2].as_secs_f64() * 1e3
        })
        .collect();
    println!("median of {rounds} interleaved rounds (ms):");
    let names = ["raw", "unconfined", "confined_network_on", "confined"];
    for (i, name) in names.iter().enumerate() {
        let added = if i == 0 {
            String::new()
        } else {
            format!(
                ", +{:.3} over {}",
                medians[i] - medians[i - 1],
                names[i - 1]
            )
        };
        println!(
            "  {name:<20} {:.3} (x{:.2} raw{added})",
            medians[i],
            medians[i] / medians[0]
        );
    }
}

/// A repository of 10,000 files in 520 directories, with a nested one.
fn big_repository() -> tempfile::TempDir {
    let work = tempfile::tempdir().expect("temp dir");
    for d in 0..500 {
        let dir = work.path().join(format!("src/m{}/d{d}", d / 50));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..20 {
            std::fs::write(dir.join(format!("f{f}.rs")), "x").expect("write");
        }
    }
    for dir in [".git/hooks", "vendor/x/.git"] {
        std::fs::create_dir_all(work.path().join(dir)).expect("mkdir");
    }
    // Older than the scanner's one-second window for recent changes.
    std::thread::sleep(Duration::from_millis(1100));
    work
}

fn protected_scan(c: &mut Criterion) {
    let work = big_repository();
    let roots = [work.path().to_path_buf()];
    let mut group = c.benchmark_group("protected_scan_10k_files");
    group.bench_function("first", |b| b.iter(|| Scanner::default().scan(&roots)));
    let mut scanner = Scanner::default();
    scanner.scan(&roots);
    group.bench_function("again", |b| b.iter(|| scanner.scan(&roots)));
    group.finish();
}

criterion_group!(benches, spawn, protected_scan);
criterion_main!(benches);
