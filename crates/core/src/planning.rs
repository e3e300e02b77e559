//! The plan written once per session, before its first step
//! (`enable_plan`; docs/plan.md): the same model, asked with the session's
//! instructions and tools, writes a short numbered plan. It is kept after
//! the initial context, so every later request carries it right after the
//! system prompt and the instructions, and compaction and the sliding
//! window keep it; it is the plan `update_plan` then keeps current.

use super::prompt::build_prompt;
use super::session::Session;
use cogni_protocol::{
    AgentEvent, EventSink, HistoryItem, MessageTag, Plan, PlanStep, Role, StepStatus,
};
use std::time::Instant;

/// What the model is asked for the plan.
pub const PLAN_REQUEST: &str = "Before you start, write a short plan for the task above: a numbered list of at most 7 steps, one line each. Reply with the list only; do not call any tool yet.";

/// The steps of a numbered list (`1. step`, `2) step`); other lines are
/// ignored.
pub fn numbered_steps(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                return None;
            }
            let rest = line[digits..].strip_prefix(['.', ')'])?.trim();
            (!rest.is_empty()).then(|| rest.to_string())
        })
        .collect()
}

impl Session {
    /// Before the session's first step, once: ask for the plan. A failed
    /// request or an answer without a numbered list is a warning, not an
    /// error: the session goes on without a plan.
    pub(crate) async fn write_first_plan(&mut self, task: &str, sink: &dyn EventSink) {
        if self
            .history
            .iter()
            .any(|i| i.tag() == Some(MessageTag::Plan))
        {
            return;
        }
        let mut input = self.history.to_vec();
        input.push(HistoryItem::text(Role::User, task));
        let started = Instant::now();
        let answer = {
            let prompt = build_prompt(&self.ctx, &self.history);
            let request = prompt.request(&self.ctx);
            super::request::ask(&*self.provider, &request, input, PLAN_REQUEST).await
        };
        let (text, usage) = match answer {
            Ok((text, usage, _)) => (text, usage),
            Err(e) => {
                sink.emit(AgentEvent::Warning {
                    message: format!("could not write a plan: {e}"),
                });
                return;
            }
        };
        if let Some(usage) = usage {
            // It counts against budgets like any request.
            self.meter
                .metrics
                .record_model_request(&usage, None, started.elapsed());
        }
        let steps = numbered_steps(&text);
        if steps.is_empty() {
            sink.emit(AgentEvent::Warning {
                message: "the model's plan had no numbered steps; going on without one".into(),
            });
            return;
        }
        let plan = Plan {
            explanation: None,
            plan: steps
                .into_iter()
                .map(|step| PlanStep {
                    step,
                    status: StepStatus::Pending,
                })
                .collect(),
        };
        let listed: Vec<String> = plan
            .plan
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {}", i + 1, s.step))
            .collect();
        self.append(vec![HistoryItem::tagged(
            Role::Developer,
            MessageTag::Plan,
            format!(
                "The plan for this task (keep it current with update_plan):\n{}",
                listed.join("\n")
            ),
        )]);
        if let Ok(mut store) = self.conversation.plan.lock() {
            *store = Some(plan.clone());
        }
        sink.emit(AgentEvent::Plan { plan });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_lines_are_the_steps() {
        let text = "Here is the plan:\n1. Read the failing test\n2) Fix **the parser**\n  3. Run the tests\n- not a step\n4.\n10. Tenth";
        assert_eq!(
            numbered_steps(text),
            [
                "Read the failing test",
                "Fix **the parser**",
                "Run the tests",
                "Tenth"
            ]
        );
        assert!(numbered_steps("no list here").is_empty());
    }
}
