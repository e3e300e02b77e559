//! The tools of a session and who approves their calls.

use cogni_protocol::Approver;
use cogni_tools::{ExtraTools, ToolContext, ToolRegistry};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The tools of a session: what they are, what they see, and who approves
/// their calls.
pub(crate) struct Toolset {
    pub(crate) registry: ToolRegistry,
    pub(crate) ctx: ToolContext,
    /// Who answers approval questions.
    pub(crate) approver: Arc<dyn Approver>,
    /// Calls the user approved for the rest of the session, by call key.
    pub(crate) approved: Mutex<HashSet<String>>,
    /// Tools added after the start (MCP servers'), kept when the session
    /// is reconfigured.
    pub(crate) extra: ExtraTools,
    /// Held-back tools found so far that the offered list shows.
    pub(crate) found_shown: usize,
}
