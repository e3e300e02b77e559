//! The points of a session outside its turns: `session_start` (once,
//! before the first turn), `session_end` ([`Session::end`], called by the
//! front doors), `before_compact` for a compaction the user asked for,
//! and the notices of Notification hooks ([`Session::notify`]).

use super::effects::hooks::contract;
use super::effects::hooks::notify::{About, Notice};
use super::effects::{EndReason, IterationContext, Phase, Point};
use super::outcome::{AgentError, TurnResult};
use super::session::Session;
use super::turn::TurnRun;
use cogni_protocol::{AgentEvent, EventSink, TurnOutcome};

impl EndReason {
    /// Why a session whose last turn came out as `turn` ends, for front
    /// doors that run one turn (`cogni run`, a task attempt).
    pub fn after(turn: &Result<TurnResult, AgentError>) -> EndReason {
        match turn {
            Err(_) => EndReason::Error,
            Ok(t) if t.outcome == TurnOutcome::Interrupted => EndReason::Interrupted,
            Ok(_) => EndReason::Done,
        }
    }
}

impl IterationContext<'_> {
    /// [`Session::notify`], from an effect (a PreToolUse hook's `ask`).
    pub(crate) fn notify(&self, notice: &Notice) {
        let about = About {
            session: contract::Session {
                id: self.session_id,
                transcript_path: self.transcript_path,
                cwd: self.cwd,
            },
            pins: &self.ctx.sandbox_policy.pins,
        };
        self.notifications.fire(about, notice);
    }
}

impl Session {
    /// Before the first turn, once: the writable roots left out of the
    /// workspace and what the skills found want the user to know (left out
    /// of the listing, untrusted, problems) as warnings, then the
    /// `session_start` effects. Items they add join history
    /// before the first prompt.
    pub(crate) async fn start_once(
        &mut self,
        run: &TurnRun,
        sink: &dyn EventSink,
    ) -> Result<(), AgentError> {
        if std::mem::replace(&mut self.conversation.lifecycle.started, true) {
            return Ok(());
        }
        for message in std::mem::take(&mut self.start_warnings) {
            sink.emit(AgentEvent::Warning { message });
        }
        if let Some(skills) = &self.toolset.shared.config.skills {
            for message in skills.warnings() {
                sink.emit(AgentEvent::Warning { message });
            }
        }
        if !self.extensions.effects.wants(Phase::SessionStart) {
            return Ok(());
        }
        let resumed = self.conversation.lifecycle.resumed;
        let applied = self
            .at_point(Point::SessionStart { resumed }, run, sink)
            .await?;
        self.append(applied.items);
        Ok(())
    }

    /// The session is over: run the `session_end` effects (SessionEnd
    /// hooks), once. Front doors call it when they are done with a
    /// session, also after errors and signals. A session that never
    /// started a turn has nothing to end.
    pub async fn end(&mut self, reason: EndReason, sink: &dyn EventSink) {
        if !self.conversation.lifecycle.started
            || std::mem::replace(&mut self.conversation.lifecycle.ended, true)
        {
            return;
        }
        if self.extensions.effects.wants(Phase::SessionEnd) {
            let run = TurnRun::new(self.turns);
            self.at_lifecycle_point(Point::SessionEnd { reason }, &run, sink)
                .await;
        }
        // Notices still being delivered are not cut short.
        self.conversation.notices.settle().await;
    }

    /// cogni wants the user's attention: the Notification hooks matching
    /// `notice` start in the background (nothing waits for them; the
    /// session's end does).
    pub fn notify(&self, notice: &Notice) {
        let about = About {
            session: contract::Session {
                id: &self.id,
                transcript_path: self.history.transcript_path(),
                cwd: &self.ctx.cwd,
            },
            pins: &self.ctx.sandbox_policy.pins,
        };
        self.extensions.notifications.fire(about, notice);
    }

    /// The `before_compact` effects of a compaction the user asked for.
    pub(crate) async fn before_manual_compact(&mut self, sink: &dyn EventSink) {
        if self.extensions.effects.wants(Phase::BeforeCompact) {
            let run = TurnRun::new(self.turns);
            let point = Point::BeforeCompact {
                overflow: false,
                manual: true,
            };
            self.at_lifecycle_point(point, &run, sink).await;
        }
    }

    /// Effects at a point outside a turn: nothing there can fail the
    /// session, so an error is a warning.
    async fn at_lifecycle_point(&mut self, point: Point<'_>, run: &TurnRun, sink: &dyn EventSink) {
        if let Err(e) = self.at_point(point, run, sink).await {
            sink.emit(AgentEvent::Warning {
                message: format!("{}: {e}", point.phase().as_str()),
            });
        }
    }
}
