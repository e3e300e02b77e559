//! Where attempts run: up to `jobs` at once, on one or more threads, each
//! with a single-threaded runtime of its own.
//!
//! Starting a command blocks the thread that starts it until the child has
//! set up its sandbox and called exec, so on one thread every attempt
//! waits for every other attempt's commands to start. A large `--jobs`
//! therefore spreads over a few threads (one per 8 attempts at once, at
//! most one per core): each pulls the next attempt from one shared queue
//! when one of its slots frees, so the threads share the work however long
//! each attempt takes. Commands are started by the thread that runs their
//! attempt, which lives until its last attempt ended (a command's
//! parent-death signal is tied to that thread).

use super::attempt::Attempt;
use super::results::{AttemptResult, FailureReason, Status};
use super::workspace::Removal;
use super::{Plan, Progress, RunControl};
use cogni_spec::tasks::WorkspaceMode;
use futures::StreamExt;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Attempts running at once per thread before another thread helps.
const JOBS_PER_THREAD: usize = 8;

/// How many threads run `jobs` attempts at once.
fn threads_for(jobs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    jobs.div_ceil(JOBS_PER_THREAD).clamp(1, cores)
}

/// What every thread shares.
struct Shared {
    plan: Arc<Plan>,
    progress: Arc<dyn Progress>,
    control: RunControl,
    scratch: PathBuf,
    /// Attempts in the source itself take turns.
    locks: HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>,
    /// An attempt did not pass (for `--fail-fast`).
    failed: AtomicBool,
    /// The next attempt to start.
    next: AtomicUsize,
}

/// Run every attempt of `plan`; each result with the attempt's index.
pub(super) async fn run_all(
    plan: Arc<Plan>,
    progress: Arc<dyn Progress>,
    control: &RunControl,
    scratch: PathBuf,
) -> Vec<(usize, AttemptResult)> {
    let mut locks = HashMap::new();
    for p in &plan.attempts {
        if plan.file.tasks[p.task].workspace == WorkspaceMode::InPlace {
            locks.entry(p.source.clone()).or_default();
        }
    }
    let jobs = plan.options.jobs;
    let count = plan.attempts.len();
    let shared = Arc::new(Shared {
        plan,
        progress,
        control: control.clone(),
        scratch,
        locks,
        failed: AtomicBool::new(false),
        next: AtomicUsize::new(0),
    });
    let threads = threads_for(jobs);
    let mut runs = if threads == 1 {
        shared.work(jobs).await
    } else {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut started = 0;
        for t in 0..threads {
            let slots = jobs / threads + usize::from(t < jobs % threads);
            let (shared, tx) = (shared.clone(), tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("cogni-runner-{t}"))
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    // Without a runtime the others take this thread's share.
                    if let Ok(runtime) = runtime {
                        let _ = tx.send(runtime.block_on(shared.work(slots)));
                    }
                });
            started += usize::from(spawned.is_ok());
        }
        drop(tx);
        let mut runs = Vec::with_capacity(count);
        while let Some(part) = rx.recv().await {
            runs.extend(part);
        }
        if started == 0 {
            runs = shared.work(jobs).await;
        }
        runs
    };
    // An attempt whose thread died (a panic outside the engine's own
    // recovery) still has a result.
    let mut seen = vec![false; count];
    for (index, _) in &runs {
        seen[*index] = true;
    }
    for (index, _) in seen.iter().enumerate().filter(|(_, s)| !**s) {
        let mut result = AttemptResult::new(shared.plan.attempts[index].attempt);
        result.fail(
            FailureReason::SetupFailed,
            "the thread running this attempt failed".into(),
        );
        runs.push((index, result));
    }
    runs
}

impl Shared {
    /// Run attempts from the queue, `slots` at a time, until it is empty;
    /// then wait for the copies being removed.
    async fn work(&self, slots: usize) -> Vec<(usize, AttemptResult)> {
        let count = self.plan.attempts.len();
        let removals: Mutex<Vec<Removal>> = Mutex::new(Vec::new());
        let queue = std::iter::from_fn(|| {
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            (index < count).then_some(index)
        });
        let runs = futures::stream::iter(queue)
            .map(|index| self.attempt(index, &removals))
            .buffer_unordered(slots.max(1))
            .collect::<Vec<_>>()
            .await;
        let removals = std::mem::take(&mut *removals.lock().unwrap_or_else(|e| e.into_inner()));
        for removal in removals {
            let _ = removal.await;
        }
        runs
    }

    async fn attempt(
        &self,
        index: usize,
        removals: &Mutex<Vec<Removal>>,
    ) -> (usize, AttemptResult) {
        let plan = &*self.plan;
        let planned = &plan.attempts[index];
        let result = if self.control.is_interrupted() {
            AttemptResult::not_run(
                planned.attempt,
                Status::Skipped,
                "not run: the run was interrupted".into(),
            )
        } else if plan.options.fail_fast && self.failed.load(Ordering::SeqCst) {
            AttemptResult::not_run(
                planned.attempt,
                Status::Skipped,
                "not run: --fail-fast stopped the run after a failure".into(),
            )
        } else {
            let lock = self.locks.get(&planned.source).cloned();
            Attempt {
                plan,
                planned,
                scratch: &self.scratch,
                progress: &*self.progress,
                control: &self.control,
                removals,
            }
            .run(lock)
            .await
        };
        if result.status != Status::Passed {
            self.failed.store(true, Ordering::SeqCst);
        }
        (index, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_jobs_spread_over_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads_for(1), 1);
        assert_eq!(threads_for(8), 1);
        assert_eq!(threads_for(32), 4.min(cores));
        assert_eq!(threads_for(10_000), cores);
    }
}
