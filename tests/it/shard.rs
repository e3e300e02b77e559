//! `cogni run --tasks --shard K/N` and `cogni merge` through the binary:
//! every attempt in exactly one shard, shards stable when tasks are added,
//! `--shard auto` from CI variables, and merged results equal to one run.

use crate::runner::{assert_code, assert_valid, stderr, Tasks, OFFLINE_AGENT};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A task file of `count` tasks (each repeated `repeat` times) for the
/// offline agent; every fifth task fails its check.
fn task_file(t: &Tasks, count: usize, repeat: u32) {
    t.script("ok", "[[turns]]\ntext = \"ok\"\n");
    t.script("wrong", "[[turns]]\ntext = \"wrong\"\n");
    let mut file = OFFLINE_AGENT.to_string();
    for i in 0..count {
        let script = if i % 5 == 3 { "wrong" } else { "ok" };
        file.push_str(&format!(
            "\n[[tasks]]\nid = \"task-{i}\"\nprompt = \"answer ok\"\nscript = \"scripts/{script}.toml\"\n\
             workspace = \"in_place\"\nrepeat = {repeat}\nchecks = [{{ answer_equals = \"ok\" }}]\n"
        ));
    }
    t.file(&file);
}

fn shard_run(t: &Tasks, out: &Path, args: &[&str]) -> Output {
    t.env
        .cmd()
        .arg("run")
        .arg("--tasks")
        .arg(t.env.dir.path().join("tasks.toml"))
        .arg("--output-dir")
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

fn results_in(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_valid(&value);
    value
}

/// `task@agent #n` of every attempt in a results.json.
fn attempt_keys(results: &Value) -> Vec<String> {
    let mut keys = Vec::new();
    for task in results["tasks"].as_array().unwrap() {
        for a in task["attempts"].as_array().unwrap() {
            keys.push(format!(
                "{}@{} #{}",
                task["id"].as_str().unwrap(),
                task["agent"].as_str().unwrap(),
                a["attempt"]
            ));
        }
    }
    keys
}

#[test]
fn every_attempt_runs_in_exactly_one_shard_for_1_to_16_shards() {
    let t = Tasks::new();
    task_file(&t, 9, 2);
    let all: BTreeSet<String> = (0..9)
        .flat_map(|i| (1..=2).map(move |n| format!("task-{i}@offline #{n}")))
        .collect();
    for total in 1..=16u32 {
        let mut seen: BTreeMap<String, u32> = BTreeMap::new();
        let mut sizes = Vec::new();
        for index in 1..=total {
            let out_dir = t.env.dir.path().join(format!("s{total}-{index}"));
            let out = shard_run(&t, &out_dir, &["--shard", &format!("{index}/{total}")]);
            let code = out.status.code();
            assert!(matches!(code, Some(0 | 1)), "{}", stderr(&out));
            let err = stderr(&out);
            assert!(
                err.contains(&format!(
                    "cogni: shard {index}/{total} (--shard {index}/{total}):"
                )),
                "{err}"
            );
            let results = results_in(&out_dir);
            assert_eq!(results["shards"][0]["index"], index);
            assert_eq!(results["shards"][0]["total"], total);
            assert_eq!(results["planned"].as_array().unwrap().len(), 9);
            let keys = attempt_keys(&results);
            sizes.push(keys.len());
            for key in keys {
                if let Some(other) = seen.insert(key.clone(), index) {
                    panic!("{key} ran in shards {other} and {index} of {total}");
                }
            }
        }
        let seen: BTreeSet<String> = seen.into_keys().collect();
        assert_eq!(seen, all, "{total} shards");
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(max - min <= 1, "{total} shards of sizes {sizes:?}");
    }
}

/// The shard of each attempt, running every shard of `total`.
fn assignment(t: &Tasks, total: u32, tag: &str) -> BTreeMap<String, u32> {
    let mut map = BTreeMap::new();
    for index in 1..=total {
        let out_dir = t.env.dir.path().join(format!("{tag}-{index}"));
        shard_run(t, &out_dir, &["--shard", &format!("{index}/{total}")]);
        for key in attempt_keys(&results_in(&out_dir)) {
            map.insert(key, index);
        }
    }
    map
}

#[test]
fn shards_are_stable_when_the_file_is_reordered_or_tasks_are_added() {
    let t = Tasks::new();
    task_file(&t, 24, 1);
    let before = assignment(&t, 4, "before");
    // The same tasks in reverse order: the same shards.
    let text = std::fs::read_to_string(t.env.dir.path().join("tasks.toml")).unwrap();
    let (head, tasks) = text.split_once("\n[[tasks]]").unwrap();
    let mut blocks: Vec<&str> = tasks.split("\n[[tasks]]").collect();
    blocks.reverse();
    t.file(&format!("{head}\n[[tasks]]{}", blocks.join("\n[[tasks]]")));
    assert_eq!(assignment(&t, 4, "reversed"), before);
    // Two tasks more: the old attempts stay where they were, but for the
    // few next to the cuts between shards.
    task_file(&t, 26, 1);
    let after = assignment(&t, 4, "after");
    assert_eq!(after.len(), 26);
    let moved: Vec<&String> = before
        .iter()
        .filter(|(k, s)| after[*k] != **s)
        .map(|(k, _)| k)
        .collect();
    assert!(moved.len() <= 2 * 3, "moved: {moved:?}");
}

fn merge(t: &Tasks, dirs: &[PathBuf], out: &Path) -> Output {
    t.env
        .cmd()
        .arg("merge")
        .args(dirs)
        .arg("--output-dir")
        .arg(out)
        .output()
        .unwrap()
}

/// results.json without what differs between runs: ids, times, shards.
fn content(results: &Value) -> Value {
    let mut v = results.clone();
    for key in ["run_id", "started_at", "finished_at", "shards", "planned"] {
        v.as_object_mut().unwrap().remove(key);
    }
    v["summary"]["totals"]["wall_ms"] = Value::Null;
    v["summary"]["totals"]["agent_ms"] = Value::Null;
    for task in v["tasks"].as_array_mut().unwrap() {
        for a in task["attempts"].as_array_mut().unwrap() {
            a["wall_ms"] = Value::Null;
            a["agent_ms"] = Value::Null;
            for c in a["checks"].as_array_mut().unwrap() {
                c["duration_ms"] = Value::Null;
            }
        }
    }
    v
}

#[test]
fn merged_shards_equal_one_run_and_compare_works_on_them() {
    let t = Tasks::new();
    task_file(&t, 10, 2);
    let whole = t.env.dir.path().join("whole");
    assert_code(&shard_run(&t, &whole, &[]), 1);
    let dirs: Vec<PathBuf> = (1..=3)
        .map(|i| t.env.dir.path().join(format!("shard{i}")))
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        shard_run(&t, dir, &["--shard", &format!("{}/3", i + 1)]);
    }
    let merged = t.env.dir.path().join("merged");
    // Any order of the directories.
    let reversed: Vec<PathBuf> = dirs.iter().rev().cloned().collect();
    let out = merge(&t, &reversed, &merged);
    assert_code(&out, 1);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        merged.join("results.json").display().to_string()
    );
    let err = stderr(&out);
    assert!(err.contains("cogni merge: 3 shards of 3"), "{err}");
    assert!(err.contains("16 passed, 4 failed of 20 attempts"), "{err}");
    let m = results_in(&merged);
    let w = results_in(&whole);
    assert_eq!(content(&m), content(&w));
    let shards: Vec<u64> = m["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["index"].as_u64().unwrap())
        .collect();
    assert_eq!(shards, [1, 2, 3]);
    let junit = std::fs::read_to_string(merged.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 20);
    assert_eq!(junit.matches("<failure ").count(), 4);
    // The shards' transcripts come along, one per attempt.
    let transcripts = std::fs::read_to_string(merged.join("transcripts.jsonl")).unwrap();
    assert_eq!(transcripts.lines().count(), 20);
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert_eq!(html.matches("<details id=\"a").count(), 20);
    assert!(std::fs::read_to_string(merged.join("report.html"))
        .unwrap()
        .contains("task-3"));

    // compare reads merged runs like any other.
    let out = t
        .env
        .cmd()
        .arg("compare")
        .arg(&whole)
        .arg(&merged)
        .output()
        .unwrap();
    assert_code(&out, 0);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        table.contains("10 tasks compared: 0 regressed, 0 fixed"),
        "{table}"
    );
    assert!(table.contains("task-3@offline"), "{table}");
}

#[test]
fn merge_names_a_missing_or_doubled_shard_and_refuses_plain_runs() {
    let t = Tasks::new();
    task_file(&t, 6, 1);
    let dirs: Vec<PathBuf> = (1..=3)
        .map(|i| t.env.dir.path().join(format!("shard{i}")))
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        shard_run(&t, dir, &["--shard", &format!("{}/3", i + 1)]);
    }
    let out_dir = t.env.dir.path().join("merged");
    let missing = results_in(&dirs[1]);
    let out = merge(&t, &[dirs[0].clone(), dirs[2].clone()], &out_dir);
    assert_code(&out, 2);
    let err = stderr(&out);
    let first = &missing["tasks"][0];
    assert!(
        err.contains(&format!(
            "attempt `{}@offline #1` is missing: it belongs to shard 2/3, which was not given",
            first["id"].as_str().unwrap()
        )),
        "{err}"
    );
    assert!(!out_dir.join("results.json").exists());

    let out = merge(
        &t,
        &[
            dirs[0].clone(),
            dirs[1].clone(),
            dirs[2].clone(),
            dirs[1].clone(),
        ],
        &out_dir,
    );
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("shard 2/3 is given twice"),
        "{}",
        stderr(&out)
    );

    let plain = t.env.dir.path().join("plain");
    shard_run(&t, &plain, &[]);
    let out = merge(&t, &[plain], &out_dir);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("not the result of a sharded run"),
        "{}",
        stderr(&out)
    );

    let out = merge(&t, &[t.env.dir.path().join("nowhere")], &out_dir);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

#[test]
fn shard_auto_reads_the_ci_variables_and_refuses_unusable_ones() {
    let t = Tasks::new();
    task_file(&t, 4, 1);
    let run = |vars: &[(&str, &str)], shard: &str| {
        let mut cmd = t.env.cmd();
        cmd.envs(vars.iter().copied())
            .arg("run")
            .arg("--tasks")
            .arg(t.env.dir.path().join("tasks.toml"))
            .arg("--output-dir")
            .arg(t.env.dir.path().join("auto"))
            .args(["--shard", shard]);
        cmd.output().unwrap()
    };
    let out = run(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "2")], "auto");
    assert!(
        stderr(&out)
            .contains("cogni: shard 2/2 (GitLab CI_NODE_INDEX=2 CI_NODE_TOTAL=2): 2 of 4 attempts"),
        "{}",
        stderr(&out)
    );
    let out = run(
        &[
            ("BUILDKITE_PARALLEL_JOB", "0"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "4"),
        ],
        "auto",
    );
    assert!(
        stderr(&out).contains("cogni: shard 1/4 (Buildkite"),
        "{}",
        stderr(&out)
    );
    let out = run(&[("JOB_COMPLETION_INDEX", "3")], "auto/4");
    assert!(
        stderr(&out).contains(
            "cogni: shard 4/4 (Kubernetes JOB_COMPLETION_INDEX=3 (of 4)): 1 of 4 attempts"
        ),
        "{}",
        stderr(&out)
    );

    for (vars, shard, expected) in [
        (&[][..], "auto", "no CI shard variables are set"),
        (
            &[("CI_NODE_INDEX", "x"), ("CI_NODE_TOTAL", "2")][..],
            "auto",
            "CI_NODE_INDEX=\"x\"",
        ),
        (
            &[("CI_NODE_INDEX", "3"), ("CI_NODE_TOTAL", "2")][..],
            "auto",
            "out of range",
        ),
        (
            &[("JOB_COMPLETION_INDEX", "0")][..],
            "auto",
            "--shard auto/N",
        ),
        (&[][..], "0/2", "shards count from 1"),
        (&[][..], "3", "write it as K/N"),
    ] {
        let out = run(vars, shard);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(expected), "{vars:?} {shard}: {err}");
        assert!(!err.contains("at a time"), "nothing ran: {err}");
    }
}
