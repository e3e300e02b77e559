//! A child's events, nested under the parent's call in the parent's
//! stream. Events of deeper agents already carry their full path and pass
//! through unchanged.

use cogni_protocol::{AgentEvent, EventSink};

pub(crate) struct Nested<'a> {
    pub(crate) parent: &'a dyn EventSink,
    /// The child's path from the root.
    pub(crate) agent: Vec<String>,
    /// The parent's call that started the child.
    pub(crate) call_id: String,
}

impl EventSink for Nested<'_> {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::Subagent { .. }
            | AgentEvent::SubagentStarted { .. }
            | AgentEvent::SubagentFinished { .. } => self.parent.emit(event),
            event => self.parent.emit(AgentEvent::Subagent {
                agent: self.agent.clone(),
                call_id: self.call_id.clone(),
                event: Box::new(event),
            }),
        }
    }
}
