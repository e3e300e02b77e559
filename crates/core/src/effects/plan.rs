//! The plan strategy's effect: every successful `update_plan` call is
//! reported as a `plan` event (the REPL's checklist, `cogni run`'s stderr,
//! `--json`).

use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point};
use cogni_protocol::AgentEvent;
use cogni_tools::plan::PlanStore;
use futures::future::BoxFuture;

pub const KIND: &str = "plan";

pub struct PlanEffect {
    store: PlanStore,
}

impl PlanEffect {
    pub fn new(store: PlanStore) -> Self {
        PlanEffect { store }
    }
}

impl Effect for PlanEffect {
    fn name(&self) -> &str {
        KIND
    }

    /// A plan event that could not be made changes no work.
    fn advisory(&self) -> bool {
        true
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::AfterTool]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        if let Point::AfterTool { call, result } = &cx.point {
            if call.name == "update_plan" && !result.is_error {
                let plan = self.store.lock().ok().and_then(|p| p.clone());
                if let Some(plan) = plan {
                    cx.sink.emit(AgentEvent::Plan { plan });
                }
            }
        }
        Box::pin(async { Ok(Decision::Continue.into()) })
    }
}
