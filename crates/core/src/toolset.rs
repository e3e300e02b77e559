//! The tools of a session as its configuration makes them (who approves
//! their calls belongs to the conversation: `session::Conversation`).

use cogni_tools::{ToolContext, ToolRegistry};

/// The tools of a session: what they are and what they see.
pub(crate) struct Toolset {
    pub(crate) registry: ToolRegistry,
    pub(crate) ctx: ToolContext,
    /// Held-back tools found so far that the offered list shows.
    pub(crate) found_shown: usize,
}
