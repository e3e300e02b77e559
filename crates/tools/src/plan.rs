//! `update_plan`: the model keeps its plan current, in the shape
//! Codex-trained models know (`{explanation?, plan: [{step, status}]}`),
//! with at most one step in progress. The plan is kept in a store the
//! session shares; the engine reports each update as a `plan` event.

use super::{parse_args, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{Plan, StepStatus, ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};

/// Most steps a plan may have.
pub const MAX_STEPS: usize = 50;

/// The session's current plan.
pub type PlanStore = Arc<Mutex<Option<Plan>>>;

/// The `update_plan` tool: the model replaces the whole plan, which is
/// checked and kept in the session's [`PlanStore`].
pub struct UpdatePlanTool {
    store: PlanStore,
}

impl UpdatePlanTool {
    /// The tool, keeping the plan in `store`.
    pub fn new(store: PlanStore) -> Self {
        UpdatePlanTool { store }
    }
}

/// Why `plan` cannot be the plan, if it cannot.
pub fn check(plan: &Plan) -> Result<(), String> {
    if plan.plan.is_empty() {
        return Err("the plan has no steps".into());
    }
    if plan.plan.len() > MAX_STEPS {
        return Err(format!(
            "the plan has {} steps; keep it to {MAX_STEPS}",
            plan.plan.len()
        ));
    }
    if let Some(i) = plan.plan.iter().position(|s| s.step.trim().is_empty()) {
        return Err(format!("step {} is empty", i + 1));
    }
    let in_progress = plan
        .plan
        .iter()
        .filter(|s| s.status == StepStatus::InProgress)
        .count();
    if in_progress > 1 {
        return Err(format!(
            "{in_progress} steps are in_progress; at most one step may be in progress"
        ));
    }
    Ok(())
}

impl Tool for UpdatePlanTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_plan".into(),
            description: "Update the task plan: the whole list of steps, each pending, \
                          in_progress or completed, at most one in_progress. Call it when a \
                          step starts or finishes, or when the plan changes."
                .into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "explanation": {"type": "string"},
                        "plan": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "step": {"type": "string"},
                                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                                },
                                "required": ["step", "status"],
                                "additionalProperties": false
                            }
                        }
                    },
                    "required": ["plan"],
                    "additionalProperties": false
                }),
            },
            // It changes nothing in the workspace.
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let plan: Plan = match parse_args("update_plan", input) {
                Ok(plan) => plan,
                Err(result) => return result,
            };
            if let Err(e) = check(&plan) {
                return ToolResult::error(format!("plan not updated: {e}"));
            }
            if let Ok(mut current) = self.store.lock() {
                *current = Some(plan);
            }
            ToolResult::ok("Plan updated")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_protocol::PlanStep;

    fn plan(statuses: &[StepStatus]) -> Plan {
        Plan {
            explanation: None,
            plan: statuses
                .iter()
                .enumerate()
                .map(|(i, s)| PlanStep {
                    step: format!("step {i}"),
                    status: *s,
                })
                .collect(),
        }
    }

    #[test]
    fn at_most_one_step_is_in_progress() {
        use StepStatus::*;
        assert!(check(&plan(&[Completed, InProgress, Pending])).is_ok());
        let e = check(&plan(&[InProgress, InProgress])).unwrap_err();
        assert!(e.contains("at most one step"), "{e}");
        assert!(check(&plan(&[])).unwrap_err().contains("no steps"));
        let mut empty = plan(&[Pending]);
        empty.plan[0].step = " ".into();
        assert!(check(&empty).unwrap_err().contains("step 1 is empty"));
    }
}
