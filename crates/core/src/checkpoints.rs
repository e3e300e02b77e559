//! Checkpoints: the workspace snapshot before and after each turn (with
//! `[run] checkpoints` on), and taking turns back: the files, the
//! conversation, or both (`/undo`, `/rewind`, `cogni undo`).
//!
//! The snapshots are `cogni_tools::checkpoint`'s. What the user changed
//! by hand is told apart from what the turns did: between one turn's end
//! and the next one's start (and since the last turn) the changes are the
//! user's, and restoring a path they changed is a conflict the caller must
//! settle (`overwrite`), never a silent overwrite.

use super::outcome::{AgentError, TurnResult};
use super::run::{Middleware, Next};
use super::session::Session;
use cogni_protocol::{AgentEvent, EventSink, TurnCheckpoint};
use cogni_tools::checkpoint::{Change, Location, Snapshots};
use futures::future::BoxFuture;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// A session's checkpoints: the snapshots (opened at the first turn) and
/// the turns' records.
#[derive(Default)]
pub(crate) struct Checkpoints {
    /// `None` while a snapshot is being taken (`pending` has them).
    snapshots: Option<Snapshots>,
    /// The snapshot before the running turn, taken while the model is
    /// asked (tools wait for it), with the turn's record to complete.
    pending: Option<(Pending, TurnCheckpoint)>,
    /// Why snapshots cannot be taken (said once, then no more tries).
    unavailable: Option<String>,
    /// The turns not taken back, oldest first.
    pub(crate) list: Vec<TurnCheckpoint>,
}

/// A snapshot being taken on its own task (the snapshots opened first,
/// at the first turn): the snapshots come back with it, or why they could
/// not be opened.
type Pending = tokio::task::JoinHandle<Result<(Snapshots, Result<String, String>), String>>;

/// Where a session's snapshots are opened: those of its last checkpoint
/// when it has one (resumed), else the workspace's.
enum Opening {
    Resumed(Location),
    New {
        workspace: PathBuf,
        shadow_root: PathBuf,
        id: String,
    },
}

impl Opening {
    /// Open the snapshots and watch the workspace for what changes.
    async fn open(self) -> Result<Snapshots, String> {
        let mut snapshots = match self {
            Opening::Resumed(location) => Snapshots::at(location).await?,
            Opening::New {
                workspace,
                shadow_root,
                id,
            } => Snapshots::open(&workspace, &shadow_root, &id).await?,
        };
        snapshots.watch().await;
        Ok(snapshots)
    }
}

/// Why taking turns back failed (nothing was changed).
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// No checkpoint of that turn (or none at all).
    #[error("{0}")]
    NoTurn(String),
    /// The snapshots could not be read or written.
    #[error("checkpoints: {0}")]
    Snapshots(String),
}

/// What taking turns back would do, for the user to confirm.
#[derive(Debug, Clone)]
pub struct RewindPlan {
    /// The first turn taken back: the workspace goes back to before it.
    pub turn: u32,
    /// The snapshot of the workspace when the plan was made.
    pub now: String,
    /// Paths the turns changed that differ from before the first of them,
    /// as from then to now (`A`: made since, so removed; `D`: deleted
    /// since, so written back). What only the user changed is not here.
    pub changes: Vec<Change>,
    /// Of those, the paths someone changed by hand after the turn
    /// started (between turns, or since the last one).
    pub conflicts: Vec<String>,
    /// The conversation can be cut back to before the turn (it was not
    /// rewritten below that point since).
    pub conversation: bool,
}

/// What to take back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewind {
    /// Restore the files.
    pub files: bool,
    /// Cut the conversation back.
    pub conversation: bool,
    /// Restore the conflicting paths too (else they are left as they are).
    pub overwrite: bool,
}

/// What a rewind did.
#[derive(Debug, Clone, Default)]
pub struct RewindReport {
    /// Paths restored (written back or removed).
    pub restored: Vec<String>,
    /// Conflicting paths left as they were.
    pub kept: Vec<String>,
    /// History items removed.
    pub removed_items: usize,
}

/// The plan for going back to before `turn`, of `list` (the session's
/// checkpoints), with the workspace snapshot `now`.
pub async fn plan_rewind(
    snapshots: &mut Snapshots,
    list: &[TurnCheckpoint],
    turn: u32,
    now: String,
) -> Result<RewindPlan, CheckpointError> {
    let position = list.iter().position(|c| c.turn == turn).ok_or_else(|| {
        CheckpointError::NoTurn(match list.first() {
            Some(first) => format!(
                "no checkpoint of turn {turn}; turns {}..{} have one",
                first.turn,
                list.last().map_or(first.turn, |l| l.turn)
            ),
            None => "no checkpoints yet: nothing to undo".to_string(),
        })
    })?;
    let target = &list[position];
    let error = CheckpointError::Snapshots;
    let changes = snapshots
        .changes(&target.before, &now)
        .await
        .map_err(error)?;
    // What the turns did (before to after; to the next start when the
    // snapshot after is missing), and what the user did in between: from
    // each turn's end to the next one's start, and from the last one's
    // end to now.
    let mut by_turns = BTreeSet::new();
    let mut by_hand = BTreeSet::new();
    for (i, checkpoint) in list.iter().enumerate().skip(position) {
        let next = list.get(i + 1).map_or(&now, |n| &n.before);
        let end = checkpoint.after.as_ref().unwrap_or(next);
        for change in snapshots
            .changes(&checkpoint.before, end)
            .await
            .map_err(error)?
        {
            by_turns.insert(change.path);
        }
        if end != next {
            for change in snapshots.changes(end, next).await.map_err(error)? {
                by_hand.insert(change.path);
            }
        }
    }
    // Only what the turns changed goes back; of that, what was changed
    // by hand since is a conflict.
    let changes: Vec<Change> = changes
        .into_iter()
        .filter(|c| by_turns.contains(&c.path))
        .collect();
    let conflicts = changes
        .iter()
        .filter(|c| by_hand.contains(&c.path))
        .map(|c| c.path.clone())
        .collect();
    Ok(RewindPlan {
        turn,
        now,
        changes,
        conflicts,
        conversation: target.history_len.is_some(),
    })
}

/// Restore the files `plan` names to before its turn (the conflicting
/// ones only with `overwrite`).
pub async fn restore_files(
    snapshots: &mut Snapshots,
    target: &TurnCheckpoint,
    plan: &RewindPlan,
    overwrite: bool,
) -> Result<RewindReport, CheckpointError> {
    let (kept, restored): (Vec<String>, Vec<String>) = plan
        .changes
        .iter()
        .map(|c| c.path.clone())
        .partition(|p| !overwrite && plan.conflicts.contains(p));
    snapshots
        .restore(&target.before, &restored)
        .await
        .map_err(CheckpointError::Snapshots)?;
    Ok(RewindReport {
        restored,
        kept,
        removed_items: 0,
    })
}

/// Where `checkpoint`'s snapshots are kept (for a session of `id`).
pub fn location(checkpoint: &TurnCheckpoint, id: &str) -> Location {
    Location {
        workspace: checkpoint.workspace.clone(),
        shadow: checkpoint.shadow.clone(),
        reference: format!("refs/cogni/checkpoints/{id}"),
    }
}

/// The first line of `prompt`, shortened to `max` characters.
fn headline(prompt: &str, max: usize) -> String {
    let line = prompt.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &line[..end]),
        None => line.to_string(),
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Session {
    /// The checkpoints of the turns not taken back, oldest first.
    pub fn turn_checkpoints(&self) -> &[TurnCheckpoint] {
        &self.conversation.checkpoints.list
    }

    /// Continue a saved session's checkpoints (resume).
    pub fn restore_checkpoints(&mut self, list: Vec<TurnCheckpoint>) {
        self.conversation.checkpoints.list = list;
    }

    /// Where this session's snapshots are opened; `None` when checkpoints
    /// are off or unavailable.
    fn opening(&self) -> Option<Opening> {
        let state = &self.conversation.checkpoints;
        if state.unavailable.is_some() {
            return None;
        }
        let shadow_root = self.extensions.run.checkpoints.clone()?;
        Some(match state.list.last() {
            // Resumed: the same snapshots as before.
            Some(last) => Opening::Resumed(location(last, &self.id)),
            None => Opening::New {
                workspace: self.ctx.cwd.clone(),
                shadow_root,
                id: self.id.clone(),
            },
        })
    }

    /// Checkpoints are off for this session: say why, once.
    fn unavailable(&mut self, why: &str, sink: &dyn EventSink) {
        let message = format!("checkpoints are off for this session: {why}");
        sink.emit(AgentEvent::Warning {
            message: message.clone(),
        });
        self.conversation.checkpoints.unavailable = Some(message);
    }

    /// The snapshots, opened for this session's workspace at first use;
    /// `None` (said once as a warning) when they cannot be.
    async fn snapshots(&mut self, sink: &dyn EventSink) -> Option<&mut Snapshots> {
        let state = &self.conversation.checkpoints;
        if state.snapshots.is_none() && state.pending.is_none() {
            match self.opening()?.open().await {
                Ok(snapshots) => self.conversation.checkpoints.snapshots = Some(snapshots),
                Err(e) => self.unavailable(&e, sink),
            }
        }
        self.conversation.checkpoints.snapshots.as_mut()
    }

    /// Start the snapshot of the workspace before the turn for `prompt`
    /// (opening the snapshots at the first turn): it is taken while the
    /// model is asked, and the turn's tools wait for it
    /// ([`Session::settle_checkpoint`]). The turn's number, when one is
    /// taken.
    fn checkpoint_before(&mut self, prompt: &str) -> Option<u32> {
        let turn = self
            .conversation
            .checkpoints
            .list
            .last()
            .map_or(1, |c| c.turn + 1);
        let message = format!("cogni: before turn {turn}: {}", headline(prompt, 60));
        if self.conversation.checkpoints.pending.is_some() {
            return None;
        }
        let opened = match self.conversation.checkpoints.snapshots.take() {
            Some(snapshots) => Ok(snapshots),
            None => Err(self.opening()?),
        };
        let record = TurnCheckpoint {
            turn,
            prompt: prompt.to_string(),
            at: now_secs(),
            history_len: Some(self.history.len()),
            before: String::new(),
            after: None,
            files: Vec::new(),
            workspace: PathBuf::new(),
            shadow: None,
        };
        let task = tokio::spawn(async move {
            let mut snapshots = match opened {
                Ok(snapshots) => snapshots,
                Err(opening) => opening.open().await?,
            };
            let taken = snapshots.take(&message).await;
            Ok((snapshots, taken))
        });
        self.conversation.checkpoints.pending = Some((task, record));
        Some(turn)
    }

    /// Wait for the snapshot before the running turn, if one is being
    /// taken, and record it: before a tool of the turn runs, and when the
    /// turn ends.
    pub(crate) async fn settle_checkpoint(&mut self, sink: &dyn EventSink) {
        let Some((task, mut record)) = self.conversation.checkpoints.pending.take() else {
            return;
        };
        let taken = match task.await {
            Ok(Ok((snapshots, taken))) => {
                let location = snapshots.location();
                record.workspace = location.workspace.clone();
                record.shadow = location.shadow.clone();
                self.conversation.checkpoints.snapshots = Some(snapshots);
                taken
            }
            Ok(Err(e)) => return self.unavailable(&e, sink),
            Err(e) => {
                let message = format!("the checkpoint's task ended: {e}");
                self.conversation.checkpoints.unavailable = Some(message.clone());
                Err(message)
            }
        };
        match taken {
            Ok(before) => {
                record.before = before;
                if let Some(observer) = self.history.observer() {
                    observer.checkpoint(&record);
                }
                self.conversation.checkpoints.list.push(record);
            }
            Err(e) => sink.emit(AgentEvent::Warning {
                message: format!("no checkpoint before this turn (it cannot be undone): {e}"),
            }),
        }
    }

    /// Snapshot the workspace after the turn `checkpoint_before` recorded,
    /// and complete its record.
    async fn checkpoint_after(&mut self, turn: u32, sink: &dyn EventSink) {
        self.settle_checkpoint(sink).await;
        let Some(before) = self
            .conversation
            .checkpoints
            .list
            .last()
            .filter(|c| c.turn == turn)
            .map(|c| c.before.clone())
        else {
            return;
        };
        let Some(snapshots) = self.snapshots(sink).await else {
            return;
        };
        let taken = match snapshots.take(&format!("cogni: after turn {turn}")).await {
            Ok(after) => snapshots
                .changes(&before, &after)
                .await
                .map(|changes| (after, changes)),
            Err(e) => Err(e),
        };
        let (after, changes) = match taken {
            Ok(taken) => taken,
            Err(e) => {
                sink.emit(AgentEvent::Warning {
                    message: format!("no checkpoint after this turn: {e}"),
                });
                return;
            }
        };
        let files: Vec<String> = changes.into_iter().map(|c| c.path).collect();
        let Some(checkpoint) = self.conversation.checkpoints.list.last_mut() else {
            return;
        };
        checkpoint.after = Some(after.clone());
        checkpoint.files = files.clone();
        if let Some(observer) = self.history.observer() {
            observer.checkpoint(checkpoint);
        }
        sink.emit(AgentEvent::Checkpoint {
            turn,
            before,
            after,
            files,
        });
    }

    /// What going back to before `turn` would do (a snapshot of now is
    /// taken to find out).
    pub async fn plan_rewind(
        &mut self,
        turn: u32,
        sink: &dyn EventSink,
    ) -> Result<RewindPlan, CheckpointError> {
        let Some(snapshots) = self.snapshots(sink).await else {
            let why = self.conversation.checkpoints.unavailable.clone();
            return Err(CheckpointError::NoTurn(why.unwrap_or_else(|| {
                "checkpoints are off ([run] checkpoints): nothing to undo".to_string()
            })));
        };
        let now = snapshots
            .take("cogni: before a rewind")
            .await
            .map_err(CheckpointError::Snapshots)?;
        let state = &mut self.conversation.checkpoints;
        let snapshots = state.snapshots.as_mut().expect("opened above");
        plan_rewind(snapshots, &state.list, turn, now).await
    }

    /// Take the turns from `plan.turn` on back: the files, the
    /// conversation (cut to before the turn), or both.
    pub async fn rewind(
        &mut self,
        plan: &RewindPlan,
        what: Rewind,
    ) -> Result<RewindReport, CheckpointError> {
        let state = &mut self.conversation.checkpoints;
        let position = state
            .list
            .iter()
            .position(|c| c.turn == plan.turn)
            .ok_or_else(|| {
                CheckpointError::NoTurn(format!("no checkpoint of turn {}", plan.turn))
            })?;
        let target = state.list[position].clone();
        let mut report = RewindReport::default();
        if what.files {
            let snapshots = state.snapshots.as_mut().ok_or_else(|| {
                CheckpointError::Snapshots("the snapshots are not open".to_string())
            })?;
            report = restore_files(snapshots, &target, plan, what.overwrite).await?;
        }
        if what.conversation {
            let len = target.history_len.ok_or_else(|| {
                CheckpointError::NoTurn(format!(
                    "the conversation was rewritten since turn {} (compaction or /context): only its files can go back",
                    plan.turn
                ))
            })?;
            let before = self.history.len();
            self.cut_history(len);
            report.removed_items = before.saturating_sub(len);
            self.conversation.checkpoints.list.truncate(position);
            if let Some(observer) = self.history.observer() {
                observer.rewound(plan.turn);
            }
        }
        Ok(report)
    }

    /// Everything changed since the first turn with a checkpoint, as a
    /// unified diff (by the turns and by hand).
    pub async fn checkpoint_diff(
        &mut self,
        sink: &dyn EventSink,
    ) -> Result<String, CheckpointError> {
        let first = self
            .conversation
            .checkpoints
            .list
            .first()
            .map(|c| c.before.clone())
            .ok_or_else(|| CheckpointError::NoTurn("no checkpoints yet: nothing changed".into()))?;
        let Some(snapshots) = self.snapshots(sink).await else {
            return Err(CheckpointError::NoTurn("checkpoints are off".into()));
        };
        let now = snapshots
            .take("cogni: diff")
            .await
            .map_err(CheckpointError::Snapshots)?;
        snapshots
            .diff(&first, &now)
            .await
            .map_err(CheckpointError::Snapshots)
    }

    /// History was replaced as a whole: the cuts of checkpoints above what
    /// stayed are gone.
    pub(crate) fn history_rewritten(&mut self, kept: usize) {
        for checkpoint in &mut self.conversation.checkpoints.list {
            checkpoint.history_replaced(kept);
        }
    }
}

/// The middleware that snapshots the workspace around each run (with
/// `[run] checkpoints`). Outermost, so a turn that panicked is snapshot
/// after as well. The snapshot before overlaps the first model request;
/// the turn's tools wait for it.
pub(crate) struct Checkpointing;

impl Middleware for Checkpointing {
    fn name(&self) -> &str {
        "checkpoints"
    }

    fn call<'a>(
        &'a self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>> {
        Box::pin(async move {
            let turn = session.checkpoint_before(&input);
            let result = next.run(session, input, sink).await;
            if let Some(turn) = turn {
                session.checkpoint_after(turn, sink).await;
            }
            result
        })
    }
}

/// The directory shadow repositories are kept in, under cogni's home.
pub fn shadow_root(home: &std::path::Path) -> PathBuf {
    home.join("checkpoints")
}

// Unix: they run git and sh.
#[cfg(all(test, unix))]
mod tests;
