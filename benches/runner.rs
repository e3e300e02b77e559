//! Task runner overhead: what an attempt costs beyond the agent's own work.
//!
//! - `runner/copy_5000_files`: a fresh copy of a generated 5,000-file
//!   repository, and its removal; `runner/cp_r_5000_files` does the same
//!   with `cp -r` and `rm -r`, as the reference for this machine. The
//!   `_tmpfs` variants copy to /dev/shm instead of the temp directory.
//! - `runner/attempt_in_place` and `runner/attempt_copy_5000_files`: one
//!   whole attempt in-process (plan, workspace, a setup command, the
//!   scripted agent answering at once, three checks: a command, a file, the
//!   answer; clean-up; results.json, junit.xml and report.html written),
//!   in the 5,000-file repository itself and in a fresh copy of it (in
//!   the temp directory, and on /dev/shm where there is one). The whole
//!   run is timed (the copy's removal, which runs in the background after
//!   the attempt, included); the attempt's own wall time is printed.
//! - `runner/cli_50_tasks_jobs_4`: the `cogni` binary running 50 tasks
//!   (each: a shell call, an answer, a command check) with `--jobs 4`.
//!
//! cargo bench --bench runner -- --warm-up-time 1 --measurement-time 5

// Shared with the grep benchmarks, whose needle constants this one does not use.
#[path = "support/tree.rs"]
#[allow(dead_code)]
mod tree;

use cogni::agent::SessionConfig;
use cogni::provider::{ProviderInfo, WireApi};
use cogni::runner::{self, report, Plan, RunControl, RunOptions};
use cogni::spec::tasks::TaskFile;
use criterion::{criterion_group, criterion_main, Criterion};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const FILES: usize = 5_000;

fn bench_copy(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("repo");
    tree::generate(&src, FILES).expect("generate tree");
    // The same copy to the temp directory's disk and, where there is one,
    // to a tmpfs.
    let shm = Path::new("/dev/shm");
    let tmpfs = shm
        .is_dir()
        .then(|| tempfile::tempdir_in(shm).expect("tmpfs dir"));
    let mut targets = vec![("", dir.path().join("copy"))];
    targets.extend(tmpfs.as_ref().map(|d| ("_tmpfs", d.path().join("copy"))));
    let mut group = c.benchmark_group("runner");
    group.sample_size(20);
    for (suffix, dst) in &targets {
        group.bench_function(format!("copy_5000_files{suffix}"), |b| {
            b.iter(|| {
                let copied = runner::workspace::copy_tree(&src, dst, &[]).expect("copy");
                assert_eq!(copied.files, FILES);
                std::fs::remove_dir_all(dst).expect("remove");
            })
        });
        group.bench_function(format!("cp_r_5000_files{suffix}"), |b| {
            b.iter(|| {
                let cp = Command::new("cp").arg("-r").arg(&src).arg(dst).status();
                let rm = Command::new("rm").arg("-r").arg(dst).status();
                assert!(cp.expect("cp").success() && rm.expect("rm").success());
            })
        });
    }
    group.finish();
}

fn scripted_config(script: &Path, cwd: &Path) -> SessionConfig {
    let mut info = ProviderInfo::new("scripted", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    info.script = Some(script.to_path_buf());
    SessionConfig::new(info, cwd.to_path_buf())
}

fn bench_attempt(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("repo");
    tree::generate(&src, FILES).expect("generate tree");
    let script = dir.path().join("answer.toml");
    std::fs::write(
        &script,
        "[[turns]]\ntext = \"done\"\nusage = { input_tokens = 10, output_tokens = 1 }\n",
    )
    .expect("script");
    let tasks = dir.path().join("tasks.toml");
    std::fs::write(
        &tasks,
        r#"
[[agents]]
id = "offline"
provider = "scripted"
script = "answer.toml"

[[tasks]]
id = "in_place"
prompt = "answer"
source = "repo"
workspace = "in_place"
setup = ["true"]
checks = [{ command = "test -f d000/s0/f0.rs" }, { file_exists = "d004/s9/f4999.rs" }, { answer_regex = "done" }]

[[tasks]]
id = "copy"
prompt = "answer"
source = "repo"
setup = ["true"]
checks = [{ command = "test -f d000/s0/f0.rs" }, { file_exists = "d004/s9/f4999.rs" }, { answer_regex = "done" }]
"#,
    )
    .expect("tasks");
    let file = TaskFile::load(&tasks).expect("task file");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let out = dir.path().join("out");
    let mut group = c.benchmark_group("runner");
    group.sample_size(20);
    let shm = Path::new("/dev/shm");
    let tmpfs = shm
        .is_dir()
        .then(|| tempfile::tempdir_in(shm).expect("tmpfs dir"));
    let mut cases = vec![
        ("in_place", "attempt_in_place", dir.path().join("scratch")),
        (
            "copy",
            "attempt_copy_5000_files",
            dir.path().join("scratch"),
        ),
    ];
    if let Some(tmpfs) = &tmpfs {
        cases.push((
            "copy",
            "attempt_copy_5000_files_tmpfs",
            tmpfs.path().join("scratch"),
        ));
    }
    for (task, name, scratch) in cases {
        let mut agent_ms = Vec::new();
        let mut wall_ms = Vec::new();
        group.bench_function(name, |b| {
            b.iter(|| {
                let selection = runner::select(&file, &[task.to_string()], None).expect("select");
                let configs =
                    BTreeMap::from([("offline".to_string(), scripted_config(&script, &src))]);
                let mut options = RunOptions::new(src.clone());
                options.scratch = Some(scratch.clone());
                let plan = Plan::new(file.clone(), selection, configs, options).expect("plan");
                let results = runtime.block_on(runner::run(
                    std::sync::Arc::new(plan),
                    None,
                    std::sync::Arc::new(|_: runner::ProgressEvent<'_>| {}),
                    &RunControl::default(),
                ));
                assert_eq!(results.summary.passed, 1, "{results:?}");
                agent_ms.push(results.tasks[0].attempts[0].agent_ms);
                wall_ms.push(results.tasks[0].attempts[0].wall_ms);
                report::write_all(&out, &results).expect("write results");
            })
        });
        agent_ms.sort_unstable();
        wall_ms.sort_unstable();
        if let (Some(agent), Some(wall)) = (
            agent_ms.get(agent_ms.len() / 2),
            wall_ms.get(wall_ms.len() / 2),
        ) {
            eprintln!(
                "runner/{name}: the attempt took {wall} ms, the agent's own turn {agent} ms (medians; the copy's removal runs after the attempt)"
            );
        }
    }
    group.finish();
}

fn bench_cli(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    tree::generate(&work, 20).expect("generate tree");
    std::fs::write(
        dir.path().join("script.toml"),
        r#"
[[turns]]
usage = { input_tokens = 100, output_tokens = 10 }
[[turns.tool_calls]]
name = "shell"
arguments = { command = "echo hello > out.txt" }
[[turns]]
text = "done"
usage = { input_tokens = 120, output_tokens = 5 }
"#,
    )
    .expect("script");
    let mut file = String::from(
        "[[agents]]\nid = \"offline\"\nprovider = \"scripted\"\nscript = \"script.toml\"\n",
    );
    for i in 0..50 {
        file.push_str(&format!(
            "[[tasks]]\nid = \"t{i}\"\nprompt = \"write hello\"\nchecks = [{{ command = \"grep -q hello out.txt\" }}]\n"
        ));
    }
    let tasks = dir.path().join("tasks.toml");
    std::fs::write(&tasks, file).expect("tasks");
    let home = dir.path().join("home");
    let mut group = c.benchmark_group("runner");
    group.sample_size(10);
    group.bench_function("cli_50_tasks_jobs_4", |b| {
        b.iter(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_cogni"))
                .current_dir(&work)
                .env("COGNI_HOME", &home)
                .args(["run", "--jobs", "4", "--tasks"])
                .arg(&tasks)
                .arg("--output-dir")
                .arg(dir.path().join("out"))
                .output()
                .expect("run cogni");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = bench_copy, bench_attempt, bench_cli
}
criterion_main!(benches);
