//! `cogni merge`: the results of a run's shards (`--shard K/N`) as one
//! run. Every planned attempt must be there exactly once; what is missing
//! or doubled is named, with the shard it belongs to.

use super::results::{
    AgentInfo, AttemptResult, PlannedTask, RunResults, ShardInfo, Summary, TaskResult,
    SCHEMA_VERSION,
};
use super::shard::{self, Shard};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One results file to merge, with where it came from (for messages).
pub struct Part {
    /// Where it was read from (the shard's directory or file).
    pub source: String,
    /// The shard's results.json.
    pub results: RunResults,
}

impl Part {
    /// Every part, read on as many threads as there are cores (parsing
    /// the shards of a large run is most of a merge's work); the first
    /// failure in the given order.
    pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Part>, String> {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(paths.len())
            .max(1);
        let chunk = paths.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let loaders: Vec<_> = paths
                .chunks(chunk)
                .map(|chunk| {
                    scope.spawn(move || chunk.iter().map(|p| Part::load(p)).collect::<Vec<_>>())
                })
                .collect();
            loaders
                .into_iter()
                .flat_map(|l| l.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    /// A shard's results.json (or the one in a run directory), with the
    /// transcripts beside it.
    pub fn load(path: &Path) -> Result<Part, String> {
        let mut results = super::compare::load(path)?;
        let dir = if path.is_dir() {
            path
        } else {
            path.parent().unwrap_or(Path::new("."))
        };
        super::report::attach_transcripts(dir, &mut results)?;
        Ok(Part {
            source: path.display().to_string(),
            results,
        })
    }
}

/// Most problems listed in one error.
const MAX_LISTED: usize = 20;

/// Merge `parts` (any order) into one run. The result does not depend on
/// the order of `parts`.
pub fn merge(mut parts: Vec<Part>) -> Result<RunResults, String> {
    if parts.is_empty() {
        return Err("nothing to merge: give the shards' result directories".into());
    }
    for part in &parts {
        if part.results.shards.is_empty() || part.results.planned.is_empty() {
            return Err(format!(
                "{}: not the result of a sharded run (results.json has no `shards`); run each \
                 part with --shard K/N (or --shard auto) and merge those",
                part.source
            ));
        }
    }
    parts.sort_by_key(|p| p.results.shards.iter().map(|s| s.index).min());
    // The attempts move into the merged run.
    let taken: Vec<Vec<TaskResult>> = parts
        .iter_mut()
        .map(|p| std::mem::take(&mut p.results.tasks))
        .collect();
    let first = &parts[0];
    let total = first.results.shards[0].total;
    let planned = &first.results.planned;
    let commit = |p: &Part| p.results.repository.as_ref().map(|r| r.commit.clone());
    let mut given: BTreeMap<u32, &str> = BTreeMap::new();
    for part in &parts {
        let r = &part.results;
        if let Some(s) = r.shards.iter().find(|s| s.total != total) {
            return Err(format!(
                "{} is shard {}/{}, but {} is of {total} shards: merge the shards of one run",
                part.source, s.index, s.total, first.source
            ));
        }
        if &r.planned != planned {
            return Err(format!(
                "{} planned other tasks than {} (a different task file, selectors, --agent or \
                 --repeat): merge the shards of one run",
                part.source, first.source
            ));
        }
        if let (Some(a), Some(b)) = (commit(first), commit(part)) {
            if a != b {
                return Err(format!(
                    "{} ran on commit {b}, but {} on {a}: merge the shards of one run",
                    part.source, first.source
                ));
            }
        }
        for s in &r.shards {
            if let Some(other) = given.insert(s.index, &part.source) {
                return Err(format!(
                    "shard {}/{total} is given twice: in {other} and in {}",
                    s.index, part.source
                ));
            }
        }
    }

    let attempts = Attempts::collect(&parts, taken)?;
    let tasks = attempts.into_tasks(planned, total, &given)?;

    let mut agents: BTreeMap<String, AgentInfo> = BTreeMap::new();
    for part in &parts {
        for agent in &part.results.agents {
            agents
                .entry(agent.id.clone())
                .or_insert_with(|| agent.clone());
        }
    }
    let mut shards: Vec<ShardInfo> = parts
        .iter()
        .flat_map(|p| p.results.shards.iter().cloned())
        .collect();
    shards.sort_by_key(|s| s.index);
    let started_at = shards.iter().map(|s| &s.started_at).min().cloned();
    let finished_at = shards.iter().map(|s| &s.finished_at).max().cloned();
    let wall = shards.iter().map(|s| s.wall_ms).max().unwrap_or(0);
    let started_at = started_at.unwrap_or_else(|| first.results.started_at.clone());
    let run_ids: Vec<&str> = shards.iter().map(|s| s.run_id.as_str()).collect();
    let run_id = format!(
        "{}-{:04x}",
        started_at.replace(['-', ':'], ""),
        shard::attempt_hash(&run_ids.join(","), "merge", total) & 0xffff
    );
    let mut repository = first.results.repository.clone();
    if let Some(repo) = &mut repository {
        repo.dirty = parts
            .iter()
            .any(|p| p.results.repository.as_ref().is_some_and(|r| r.dirty));
    }
    Ok(RunResults {
        schema_version: SCHEMA_VERSION,
        run_id,
        started_at,
        finished_at: finished_at.unwrap_or_else(|| first.results.finished_at.clone()),
        cogni_version: first.results.cogni_version.clone(),
        tasks_file: first.results.tasks_file.clone(),
        repository,
        settings: first.results.settings.clone(),
        agents: agents.into_values().collect(),
        summary: Summary::of(&tasks, Duration::from_millis(wall)),
        tasks,
        shards,
        planned: planned.clone(),
    })
}

/// `task@agent #n`, as messages name an attempt.
fn name(task: &str, agent: &str, n: u32) -> String {
    format!("`{task}@{agent} #{n}`")
}

type Key = (String, String, u32);

/// Every attempt found, by key, with its task entry (attempts taken out)
/// and source.
struct Attempts {
    tasks: Vec<TaskResult>,
    found: HashMap<Key, (usize, AttemptResult)>,
}

impl Attempts {
    /// `taken`: each part's tasks, in the order of `parts`.
    fn collect(parts: &[Part], taken: Vec<Vec<TaskResult>>) -> Result<Self, String> {
        let mut tasks = Vec::new();
        let mut found = HashMap::new();
        let mut from: HashMap<Key, &str> = HashMap::new();
        let mut problems = Vec::new();
        for (part, part_tasks) in parts.iter().zip(taken) {
            for mut task in part_tasks {
                for a in std::mem::take(&mut task.attempts) {
                    let key = (task.id.clone(), task.agent.clone(), a.attempt);
                    if let Some(other) = from.insert(key.clone(), &part.source) {
                        problems.push(format!(
                            "attempt {} is in both {other} and {}",
                            name(&task.id, &task.agent, a.attempt),
                            part.source
                        ));
                    }
                    found.insert(key, (tasks.len(), a));
                }
                tasks.push(task);
            }
        }
        if problems.is_empty() {
            Ok(Attempts { tasks, found })
        } else {
            Err(listed("duplicated attempts", problems))
        }
    }

    /// The task entries in planned order; every planned attempt must be
    /// found, and nothing else.
    fn into_tasks(
        mut self,
        planned: &[PlannedTask],
        total: u32,
        given: &BTreeMap<u32, &str>,
    ) -> Result<Vec<TaskResult>, String> {
        let keys: Vec<(&str, &str, u32)> = planned
            .iter()
            .flat_map(|p| (1..=p.attempts).map(move |n| (p.task.as_str(), p.agent.as_str(), n)))
            .collect();
        let shard_of: HashMap<(&str, &str, u32), u32> = keys
            .iter()
            .copied()
            .zip(shard::partition(&keys, total))
            .collect();
        let mut problems = Vec::new();
        let mut tasks = Vec::with_capacity(planned.len());
        for p in planned {
            let mut attempts = Vec::with_capacity(p.attempts as usize);
            let mut entry: Option<usize> = None;
            for n in 1..=p.attempts {
                let key = (p.task.clone(), p.agent.clone(), n);
                match self.found.remove(&key) {
                    Some((task, a)) => {
                        entry.get_or_insert(task);
                        attempts.push(a);
                    }
                    None => {
                        let index = shard_of
                            .get(&(p.task.as_str(), p.agent.as_str(), n))
                            .copied()
                            .unwrap_or(0);
                        let shard = Shard { index, total };
                        let why = match given.get(&index) {
                            Some(source) => format!("shard {shard} ({source}) does not have it"),
                            None => format!("it belongs to shard {shard}, which was not given"),
                        };
                        problems.push(format!(
                            "attempt {} is missing: {why}",
                            name(&p.task, &p.agent, n)
                        ));
                    }
                }
            }
            if let Some(task) = entry.map(|i| &self.tasks[i]) {
                tasks.push(TaskResult {
                    id: p.task.clone(),
                    agent: p.agent.clone(),
                    tags: task.tags.clone(),
                    workspace: task.workspace.clone(),
                    status: TaskResult::status_of(&attempts),
                    attempts,
                });
            }
        }
        let mut extra: Vec<&Key> = self.found.keys().collect();
        extra.sort();
        for (task, agent, n) in extra {
            problems.push(format!(
                "attempt {} was not planned for this run",
                name(task, agent, *n)
            ));
        }
        if problems.is_empty() {
            Ok(tasks)
        } else {
            Err(listed("the shards do not add up to the run", problems))
        }
    }
}

fn listed(what: &str, problems: Vec<String>) -> String {
    let count = problems.len();
    let mut text = format!("{what} ({count}):");
    for p in problems.iter().take(MAX_LISTED) {
        text.push_str("\n  ");
        text.push_str(p);
    }
    if count > MAX_LISTED {
        text.push_str(&format!("\n  ... and {} more", count - MAX_LISTED));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Status;

    /// The parts of a run of `tasks` (id, attempts) cut into `total` shards.
    fn shards(tasks: &[(&str, u32)], total: u32) -> Vec<Part> {
        let planned: Vec<PlannedTask> = tasks
            .iter()
            .map(|(id, n)| PlannedTask {
                task: id.to_string(),
                agent: "a".into(),
                attempts: *n,
            })
            .collect();
        let keys: Vec<(&str, &str, u32)> = tasks
            .iter()
            .flat_map(|(id, n)| (1..=*n).map(move |i| (*id, "a", i)))
            .collect();
        let of = shard::partition(&keys, total);
        (1..=total)
            .map(|index| {
                let mut by_task: Vec<TaskResult> = Vec::new();
                for (key, _) in keys.iter().zip(&of).filter(|(_, s)| **s == index) {
                    let mut a = AttemptResult::new(key.2);
                    a.status = if key.2 == 2 {
                        Status::Failed
                    } else {
                        Status::Passed
                    };
                    match by_task.iter_mut().find(|t| t.id == key.0) {
                        Some(t) => t.attempts.push(a),
                        None => by_task.push(TaskResult {
                            id: key.0.into(),
                            agent: "a".into(),
                            tags: vec![],
                            workspace: "copy".into(),
                            status: Status::Passed,
                            attempts: vec![a],
                        }),
                    }
                }
                Part {
                    source: format!("dir{index}"),
                    results: RunResults {
                        schema_version: 1,
                        run_id: format!("r{index}"),
                        started_at: format!("2026-01-01T00:00:0{index}Z"),
                        finished_at: "2026-01-01T00:01:00Z".into(),
                        summary: Summary::of(&by_task, Duration::ZERO),
                        tasks: by_task,
                        shards: vec![ShardInfo {
                            index,
                            total,
                            run_id: format!("r{index}"),
                            started_at: String::new(),
                            finished_at: String::new(),
                            attempts: 0,
                            wall_ms: 10 * u64::from(index),
                        }],
                        planned: planned.clone(),
                        ..RunResults::default()
                    },
                }
            })
            .collect()
    }

    #[test]
    fn shards_merge_into_the_planned_order_whatever_the_order_given() {
        let tasks = [("x", 3), ("y", 1), ("z", 2)];
        let mut parts = shards(&tasks, 3);
        parts.reverse();
        let merged = merge(parts).unwrap();
        let order: Vec<(&str, Vec<u32>)> = merged
            .tasks
            .iter()
            .map(|t| {
                (
                    t.id.as_str(),
                    t.attempts.iter().map(|a| a.attempt).collect(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [("x", vec![1, 2, 3]), ("y", vec![1]), ("z", vec![1, 2])]
        );
        assert_eq!(merged.summary.attempts, 6);
        assert_eq!(merged.summary.failed, 2);
        assert_eq!(merged.tasks[0].status, Status::Failed);
        assert_eq!(merged.summary.totals.wall_ms, 30);
        assert_eq!(merged.shards.len(), 3);
        let again = merge(shards(&tasks, 3)).unwrap();
        assert_eq!(again.run_id, merged.run_id);
    }

    #[test]
    fn a_missing_shard_or_attempt_is_named() {
        let tasks = [("x", 3), ("y", 1), ("z", 2)];
        let mut parts = shards(&tasks, 3);
        let gone = parts.remove(1);
        let err = merge(parts).err().unwrap();
        let first = &gone.results.tasks[0];
        let expected = format!(
            "attempt `{}@a #{}` is missing: it belongs to shard 2/3, which was not given",
            first.id, first.attempts[0].attempt
        );
        assert!(err.contains(&expected), "{err}");

        let mut parts = shards(&tasks, 3);
        let dropped = parts[0].results.tasks[0].attempts.remove(0);
        let id = parts[0].results.tasks[0].id.clone();
        let err = merge(parts).err().unwrap();
        assert!(
            err.contains(&format!(
                "attempt `{id}@a #{}` is missing: shard 1/3 (dir1) does not have it",
                dropped.attempt
            )),
            "{err}"
        );
    }

    #[test]
    fn a_doubled_shard_or_attempt_is_named() {
        let tasks = [("x", 3), ("y", 1), ("z", 2)];
        let mut parts = shards(&tasks, 2);
        let mut copy = shards(&tasks, 2).remove(0);
        copy.source = "again".into();
        parts.push(copy);
        let err = merge(parts).err().unwrap();
        assert_eq!(err, "shard 1/2 is given twice: in dir1 and in again");

        let mut parts = shards(&tasks, 2);
        let stolen = parts[0].results.tasks[0].clone();
        parts[1].results.tasks.push(stolen.clone());
        let err = merge(parts).err().unwrap();
        assert!(
            err.contains(&format!(
                "attempt `{}@a #{}` is in both dir1 and dir2",
                stolen.id, stolen.attempts[0].attempt
            )),
            "{err}"
        );
    }

    #[test]
    fn parts_of_different_runs_are_refused() {
        let mut parts = shards(&[("x", 2)], 2);
        parts[1].results.shards[0].total = 3;
        assert!(merge(parts).err().unwrap().contains("of 2 shards"));
        let mut parts = shards(&[("x", 2)], 2);
        parts[1].results.planned[0].attempts = 3;
        assert!(merge(parts).err().unwrap().contains("planned other tasks"));
        let mut parts = shards(&[("x", 2)], 2);
        parts[1].results.shards.clear();
        assert!(merge(parts)
            .err()
            .unwrap()
            .contains("not the result of a sharded run"));
    }
}
