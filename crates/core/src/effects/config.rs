//! Building effects from their configured specs ([`cogni_spec::effects`]).

use super::budget::{Budget, BudgetEffect};
use super::compact::{CompactEffect, Threshold};
use super::guardrail::{Guardrail, On};
use super::repeat::RepeatEffect;
use super::Effect;
use cogni_spec::effects::{EffectSpec, GuardrailOn};
use regex::Regex;
use std::time::Duration;

/// Default timeout of a guardrail command.
const GUARDRAIL_TIMEOUT: Duration = Duration::from_secs(30);

/// A budget, when `spec` is one.
pub fn budget(spec: &EffectSpec) -> Option<Budget> {
    Some(match *spec {
        EffectSpec::TokenLimit { tokens } => Budget::Tokens(tokens),
        EffectSpec::CostLimit { usd } => Budget::CostUsd(usd),
        EffectSpec::TimeLimit { seconds } => Budget::Time(Duration::from_secs_f64(seconds)),
        EffectSpec::StepLimit { steps } => Budget::Steps(steps),
        EffectSpec::ToolCallLimit { calls } => Budget::ToolCalls(calls),
        _ => return None,
    })
}

/// The compaction threshold `spec` sets, when it is a `compact` spec.
pub fn threshold(spec: &EffectSpec) -> Option<Threshold> {
    match *spec {
        EffectSpec::Compact {
            token_limit: Some(n),
            ..
        } => Some(Threshold::Tokens(n)),
        EffectSpec::Compact {
            threshold: Some(t), ..
        } => Some(Threshold::Window(t)),
        EffectSpec::Compact { .. } => {
            Some(Threshold::Window(super::compact::DEFAULT_COMPACT_FRACTION))
        }
        _ => None,
    }
}

/// The effect of `spec`. Specs are checked when parsed, so this cannot fail.
pub fn build(spec: &EffectSpec) -> Box<dyn Effect> {
    if let Some(budget) = budget(spec) {
        return Box::new(BudgetEffect(budget));
    }
    if let Some(threshold) = threshold(spec) {
        return Box::new(CompactEffect::new(threshold));
    }
    match spec {
        EffectSpec::Guardrail {
            on,
            tools,
            pattern,
            command,
            timeout_ms,
            reason,
        } => {
            // Whole-name matches for tools: `shell` must not match `shell_kill`.
            let anchored = |re: &str| Regex::new(&format!("^(?:{re})$")).ok();
            Box::new(Guardrail {
                on: match on {
                    GuardrailOn::ToolCall => On::ToolCall,
                    GuardrailOn::Reply => On::Reply,
                },
                tools: tools.as_deref().and_then(anchored),
                pattern: pattern.as_deref().and_then(|p| Regex::new(p).ok()),
                command: command.clone(),
                timeout: timeout_ms.map_or(GUARDRAIL_TIMEOUT, Duration::from_millis),
                reason: reason.clone(),
            })
        }
        EffectSpec::RepeatedFailure { limit } => Box::new(RepeatEffect::new(*limit)),
        // Budgets and compaction returned above.
        _ => Box::new(RepeatEffect::new(super::repeat::DEFAULT_LIMIT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cogni_spec::effects::KINDS;

    #[test]
    fn every_kind_builds_an_effect_of_its_name() {
        let text = r#"effects = [
            { kind = "compact", token_limit = 1000 },
            { kind = "token_limit", tokens = 10 },
            { kind = "cost_limit", usd = 1.0 },
            { kind = "time_limit", seconds = 2.5 },
            { kind = "step_limit", steps = 3 },
            { kind = "tool_call_limit", calls = 4 },
            { kind = "repeated_failure", limit = 2 },
            { kind = "guardrail", on = "tool_call", tools = "shell", pattern = "rm -rf" },
        ]"#;
        let doc: toml::Table = toml::from_str(text).unwrap();
        let specs = EffectSpec::parse_all(doc["effects"].as_array().unwrap(), "effects").unwrap();
        let names: Vec<String> = specs.iter().map(|s| build(s).name().to_string()).collect();
        assert_eq!(names, KINDS);
        assert_eq!(
            build(&specs[3]).deadline(),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(budget(&specs[2]), Some(Budget::CostUsd(1.0)));
        assert_eq!(threshold(&specs[0]), Some(Threshold::Tokens(1000)));
    }
}
