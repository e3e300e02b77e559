//! What cogni keeps of the workspace around a turn, so the turn can be
//! undone (`/undo`, `/rewind`, `cogni undo`).

use crate::HistoryItem;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The workspace before and after one turn, as snapshots (git commit ids;
/// see `cogni_tools::checkpoint`), with what the turn was and changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnCheckpoint {
    /// The turn's number in the session, from 1.
    pub turn: u32,
    /// The user's message that started the turn.
    pub prompt: String,
    /// When the turn started, seconds since the Unix epoch.
    pub at: u64,
    /// History items before the turn: where the conversation is cut to
    /// take the turn back; `None` once history was rewritten below that
    /// point (compaction, `/context`), when only the files can go back.
    pub history_len: Option<usize>,
    /// The workspace before the turn.
    pub before: String,
    /// The workspace after it (missing when the snapshot after failed or
    /// the turn was stopped before it could be taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The paths (relative to the workspace) the turn changed.
    #[serde(default)]
    pub files: Vec<String>,
    /// The workspace the snapshots are of.
    pub workspace: PathBuf,
    /// The shadow repository's git directory, when the workspace is in no
    /// repository of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<PathBuf>,
}

impl TurnCheckpoint {
    /// History was replaced with its first `kept` items unchanged: a cut
    /// above them no longer exists.
    pub fn history_replaced(&mut self, kept: usize) {
        if self.history_len.is_some_and(|len| len > kept) {
            self.history_len = None;
        }
    }
}

/// How many items at the start of `old` and `new` are the same.
pub fn unchanged_prefix(old: &[HistoryItem], new: &[HistoryItem]) -> usize {
    old.iter().zip(new).take_while(|(a, b)| a == b).count()
}
