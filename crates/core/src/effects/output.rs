//! `--output-schema` as an effect: when the model gives its final answer,
//! it must be JSON valid against the schema, or the turn ends with
//! `invalid_output`.

use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point, Stop};
use crate::output::OutputSchema;
use cogni_protocol::TurnOutcome;
use futures::future::BoxFuture;
use std::sync::Arc;

pub const KIND: &str = "output_schema";

#[derive(Debug, Clone)]
pub struct OutputSchemaEffect(pub Arc<OutputSchema>);

impl Effect for OutputSchemaEffect {
    fn name(&self) -> &str {
        KIND
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::TurnEnd]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let decision = match cx.point {
            Point::TurnEnd { text } => match self.0.check(text) {
                Ok(()) => Decision::Continue,
                Err(problem) => Decision::Stop(Stop::by(KIND, TurnOutcome::InvalidOutput, problem)),
            },
            _ => Decision::Continue,
        };
        Box::pin(async move { Ok(decision.into()) })
    }
}
