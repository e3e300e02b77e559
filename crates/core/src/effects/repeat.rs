//! The repeated-failure rule: after `limit` identical failing calls in a
//! row the model is told (in that call's output) to change approach; if it
//! sends the same call again, that call is not run and the turn ends once
//! the reply's other calls have run.

use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point, Stop};
use crate::approval::call_key;
use cogni_protocol::{AgentEvent, TurnOutcome};
use futures::future::BoxFuture;

/// Identical failing calls in a row before the model is told to change approach.
pub const DEFAULT_LIMIT: u32 = 3;

/// What the model is told instead of running a call that already failed
/// `limit` times in a row.
pub fn refusal(limit: u32) -> String {
    format!(
        "Not run: this exact call already failed {limit} times in a row. The turn ends here; try a different approach next time."
    )
}

/// The kind in config.
pub const KIND: &str = "repeated_failure";

#[derive(Debug)]
pub struct RepeatEffect {
    limit: u32,
    /// The key of the last failing call and how many times in a row it failed.
    failures: Option<(String, u32)>,
}

impl RepeatEffect {
    pub fn new(limit: u32) -> Self {
        RepeatEffect {
            limit,
            failures: None,
        }
    }

    fn change_approach(&self) -> String {
        format!(
            "\n\n[cogni] This exact call has now failed {} times in a row. Do not send it again: change the command or its arguments, or take a different approach. Repeating it ends the turn.",
            self.limit
        )
    }
}

impl Effect for RepeatEffect {
    fn name(&self) -> &str {
        KIND
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::TurnStart, Phase::BeforeTool, Phase::AfterTool]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let decision = match cx.point {
            Point::TurnStart { .. } => {
                self.failures = None;
                Decision::Continue
            }
            Point::BeforeTool { call } => match &self.failures {
                Some((key, n)) if *n >= self.limit && *key == call_key(call) => {
                    Decision::Stop(Stop {
                        outcome: TurnOutcome::RepeatedFailure,
                        reason: format!(
                            "stopped: the model repeated a call that had failed {} times in a row",
                            self.limit
                        ),
                        limit: None,
                        call_output: refusal(self.limit),
                        now: false,
                    })
                }
                _ => Decision::Continue,
            },
            Point::AfterTool { call, result } => {
                if !result.is_error {
                    self.failures = None;
                    Decision::Continue
                } else {
                    let key = call_key(call);
                    let count = match &self.failures {
                        Some((last, n)) if *last == key => n + 1,
                        _ => 1,
                    };
                    self.failures = Some((key, count));
                    if count == self.limit {
                        cx.sink.emit(AgentEvent::Warning {
                            message: format!(
                                "`{}` failed {} times in a row with the same arguments; the model was told to change approach",
                                call.name, self.limit
                            ),
                        });
                        let mut told = result.clone();
                        told.content.push_str(&self.change_approach());
                        Decision::ReplaceOutput(told)
                    } else {
                        Decision::Continue
                    }
                }
            }
            _ => Decision::Continue,
        };
        Box::pin(async move { Ok(decision.into()) })
    }
}
