//! Effects in TOML: `effects = [{ kind = "compact", threshold = 0.8 },
//! { kind = "cost_limit", usd = 2.0 }]`, globally (cogni.toml) and per
//! agent (task files, agent cards): parsed and checked here, every problem
//! an error naming the key path (`effects[1].usd`); an unknown kind lists
//! the known ones. The engine builds the effects from these specs
//! (`agent::effects::config`).

use regex::Regex;
use serde::Deserialize;

/// The kinds an `effects` entry may name.
pub const KINDS: &[&str] = &[
    "compact",
    "token_limit",
    "cost_limit",
    "time_limit",
    "step_limit",
    "tool_call_limit",
    "repeated_failure",
    "guardrail",
];

/// One configured effect, validated.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum EffectSpec {
    /// Compact at `threshold` of the context window, or at `token_limit` tokens.
    Compact {
        /// `threshold`: the fraction of the context window, in (0, 1].
        threshold: Option<f64>,
        /// `token_limit`: an absolute size in tokens (not with `threshold`).
        token_limit: Option<u64>,
    },
    /// `token_limit`: a budget of input plus output tokens per turn.
    TokenLimit {
        /// `tokens`: the budget, greater than 0.
        tokens: u64,
    },
    /// `cost_limit`: a budget in USD per turn.
    CostLimit {
        /// `usd`: the budget, greater than 0.
        usd: f64,
    },
    /// `time_limit`: a wall-time budget per turn.
    TimeLimit {
        /// `seconds`: the budget, greater than 0.
        seconds: f64,
    },
    /// `step_limit`: a budget of model requests per turn.
    StepLimit {
        /// `steps`: the budget, greater than 0.
        steps: u32,
    },
    /// `tool_call_limit`: a budget of tool calls per turn.
    ToolCallLimit {
        /// `calls`: the budget, greater than 0.
        calls: u32,
    },
    /// `repeated_failure`: after `limit` identical failing calls in a row
    /// the model is told to change approach; the same call once more ends
    /// the turn.
    RepeatedFailure {
        /// `limit`: identical failing calls in a row before the model is
        /// told, greater than 0.
        limit: u32,
    },
    /// `guardrail`: checks a tool call before it runs or a model reply,
    /// by regex or by running a command, and blocks it.
    Guardrail {
        /// `on`: what it checks.
        on: GuardrailOn,
        /// `tools`: with `on = "tool_call"`, a regex over the whole tool
        /// name; `None`: every tool.
        tools: Option<String>,
        /// `pattern`: a regex; blocks when it matches the call's arguments
        /// (as JSON) or the reply's text.
        pattern: Option<String>,
        /// `command`: run outside the sandbox with the call or reply as JSON
        /// on stdin; any exit but 0 blocks, with its stderr as the reason.
        command: Option<String>,
        /// `timeout_ms`: how long `command` may run before it is killed and
        /// blocks; `None`: 30 s.
        timeout_ms: Option<u64>,
        /// `reason`: what the model is told instead of the default.
        reason: Option<String>,
    },
}

/// What a guardrail checks (`on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailOn {
    /// `tool_call`: a tool call, before it runs.
    ToolCall,
    /// `reply`: a model reply; a blocked reply ends the turn.
    Reply,
}

impl EffectSpec {
    /// The kind, as written in config.
    pub fn kind(&self) -> &'static str {
        match self {
            EffectSpec::Compact { .. } => "compact",
            EffectSpec::TokenLimit { .. } => "token_limit",
            EffectSpec::CostLimit { .. } => "cost_limit",
            EffectSpec::TimeLimit { .. } => "time_limit",
            EffectSpec::StepLimit { .. } => "step_limit",
            EffectSpec::ToolCallLimit { .. } => "tool_call_limit",
            EffectSpec::RepeatedFailure { .. } => "repeated_failure",
            EffectSpec::Guardrail { .. } => "guardrail",
        }
    }

    /// A limit's value, for the kinds that are limits (smaller is tighter).
    fn limit(&self) -> Option<f64> {
        Some(match *self {
            EffectSpec::TokenLimit { tokens } => tokens as f64,
            EffectSpec::CostLimit { usd } => usd,
            EffectSpec::TimeLimit { seconds } => seconds,
            EffectSpec::StepLimit { steps } => f64::from(steps),
            EffectSpec::ToolCallLimit { calls } => f64::from(calls),
            EffectSpec::RepeatedFailure { limit } => f64::from(limit),
            _ => return None,
        })
    }

    /// The effects of several config layers, in order, as one list: a
    /// limit given more than once keeps its tightest value, at the first
    /// one's place, so a later layer adds limits but never loosens an
    /// earlier layer's. Everything else is kept as it is.
    pub fn combine_layers(specs: Vec<EffectSpec>) -> Vec<EffectSpec> {
        let mut out: Vec<EffectSpec> = Vec::with_capacity(specs.len());
        for spec in specs {
            let Some(value) = spec.limit() else {
                out.push(spec);
                continue;
            };
            match out.iter_mut().find(|s| s.kind() == spec.kind()) {
                Some(earlier) if earlier.limit().is_some_and(|v| v <= value) => {}
                Some(earlier) => *earlier = spec,
                None => out.push(spec),
            }
        }
        out
    }

    /// Parse `effects` entries; `path` names the array (`effects`,
    /// `agents.coder.effects`, ...).
    pub fn parse_all(values: &[toml::Value], path: &str) -> Result<Vec<EffectSpec>, String> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| EffectSpec::parse(v, &format!("{path}[{i}]")))
            .collect()
    }

    /// Parse and check one entry at `path` (`effects[1]`).
    pub fn parse(value: &toml::Value, path: &str) -> Result<EffectSpec, String> {
        let table = value
            .as_table()
            .ok_or_else(|| format!("{path}: expected a table like {{ kind = \"compact\" }}"))?;
        let kind = match table.get("kind") {
            Some(toml::Value::String(k)) => k.as_str(),
            Some(_) => return Err(format!("{path}.kind: expected a string")),
            None => {
                return Err(format!(
                    "{path}: missing `kind` (one of {})",
                    KINDS.join(", ")
                ))
            }
        };
        if !KINDS.contains(&kind) {
            return Err(format!(
                "{path}.kind: unknown effect kind `{kind}`; known kinds: {}",
                KINDS.join(", ")
            ));
        }
        let spec: EffectSpec = value.clone().try_into().map_err(|e: toml::de::Error| {
            format!("{path}: {}", super::plain_message(e.message()))
        })?;
        spec.check(path)?;
        Ok(spec)
    }

    /// Values that parse but make no sense.
    fn check(&self, path: &str) -> Result<(), String> {
        let positive = |field: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(format!("{path}.{field}: must be greater than 0"))
            }
        };
        match self {
            EffectSpec::Compact {
                threshold,
                token_limit,
            } => {
                if threshold.is_some() && token_limit.is_some() {
                    return Err(format!(
                        "{path}: set either `threshold` or `token_limit`, not both"
                    ));
                }
                if let Some(t) = threshold {
                    if !(*t > 0.0 && *t <= 1.0) {
                        return Err(format!(
                            "{path}.threshold: must be a fraction of the context window in (0, 1], got {t}"
                        ));
                    }
                }
                positive("token_limit", token_limit.is_none_or(|n| n > 0))
            }
            EffectSpec::TokenLimit { tokens } => positive("tokens", *tokens > 0),
            EffectSpec::CostLimit { usd } => positive("usd", usd.is_finite() && *usd > 0.0),
            EffectSpec::TimeLimit { seconds } => {
                positive("seconds", seconds.is_finite() && *seconds > 0.0)
            }
            EffectSpec::StepLimit { steps } => positive("steps", *steps > 0),
            EffectSpec::ToolCallLimit { calls } => positive("calls", *calls > 0),
            EffectSpec::RepeatedFailure { limit } => positive("limit", *limit > 0),
            EffectSpec::Guardrail {
                on,
                tools,
                pattern,
                command,
                timeout_ms,
                ..
            } => {
                if pattern.is_none() && command.is_none() {
                    return Err(format!(
                        "{path}: a guardrail needs a `pattern` (regex) or a `command`"
                    ));
                }
                if tools.is_some() && *on == GuardrailOn::Reply {
                    return Err(format!("{path}.tools: only for on = \"tool_call\""));
                }
                for (field, re) in [("tools", tools), ("pattern", pattern)] {
                    if let Some(re) = re {
                        Regex::new(re)
                            .map_err(|e| format!("{path}.{field}: not a valid regex: {e}"))?;
                    }
                }
                if let Some(command) = command {
                    if command.trim().is_empty() {
                        return Err(format!("{path}.command: is empty"));
                    }
                }
                positive("timeout_ms", timeout_ms.is_none_or(|t| t > 0))
            }
        }
    }
}

/// serde's message for a bad field.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_combine_to_the_tightest_limit_and_keep_every_guardrail() {
        let specs = parse(
            r#"effects = [
                { kind = "cost_limit", usd = 2.0 },
                { kind = "guardrail", on = "tool_call", pattern = "rm" },
                { kind = "step_limit", steps = 10 },
                { kind = "cost_limit", usd = 1000.0 },
                { kind = "guardrail", on = "tool_call", pattern = "curl" },
                { kind = "step_limit", steps = 5 },
            ]"#,
        )
        .unwrap();
        let combined = EffectSpec::combine_layers(specs);
        assert_eq!(combined.len(), 4, "{combined:?}");
        assert_eq!(combined[0], EffectSpec::CostLimit { usd: 2.0 });
        assert_eq!(combined[2], EffectSpec::StepLimit { steps: 5 });
        assert_eq!(
            combined.iter().filter(|s| s.kind() == "guardrail").count(),
            2
        );
    }

    fn parse(text: &str) -> Result<Vec<EffectSpec>, String> {
        let doc: toml::Table = toml::from_str(text).unwrap();
        let values = doc["effects"].as_array().unwrap().clone();
        EffectSpec::parse_all(&values, "effects")
    }

    #[test]
    fn the_issue_example_parses() {
        let specs = parse(
            r#"effects = [{ kind = "compact", threshold = 0.8 }, { kind = "cost_limit", usd = 2.0 }]"#,
        )
        .unwrap();
        assert_eq!(
            specs,
            vec![
                EffectSpec::Compact {
                    threshold: Some(0.8),
                    token_limit: None
                },
                EffectSpec::CostLimit { usd: 2.0 }
            ]
        );
    }

    #[test]
    fn problems_name_the_key_path() {
        let cases = [
            (
                r#"effects = [{ kind = "nope" }]"#,
                "effects[0].kind: unknown effect kind `nope`; known kinds: compact, ",
            ),
            (r#"effects = [{ usd = 1.0 }]"#, "effects[0]: missing `kind`"),
            (
                r#"effects = [{ kind = "compact" }, { kind = "cost_limit", usd = "two" }]"#,
                "effects[1]: ",
            ),
            (
                r#"effects = [{ kind = "cost_limit", usd = -1.0 }]"#,
                "effects[0].usd: must be greater than 0",
            ),
            (
                r#"effects = [{ kind = "cost_limit", usd = 1.0, extra = 1 }]"#,
                "effects[0]: unknown field `extra`",
            ),
            (
                r#"effects = [{ kind = "compact", threshold = 1.5 }]"#,
                "effects[0].threshold: must be a fraction",
            ),
            (
                r#"effects = [{ kind = "compact", threshold = 0.5, token_limit = 9 }]"#,
                "effects[0]: set either",
            ),
            (
                r#"effects = [{ kind = "guardrail", on = "tool_call" }]"#,
                "effects[0]: a guardrail needs",
            ),
            (
                r#"effects = [{ kind = "guardrail", on = "tool_call", pattern = "(" }]"#,
                "effects[0].pattern: not a valid regex",
            ),
            (
                r#"effects = [{ kind = "guardrail", on = "reply", tools = "shell", pattern = "x" }]"#,
                "effects[0].tools: only for",
            ),
            (
                r#"effects = [{ kind = "guardrail", on = "sometimes", pattern = "x" }]"#,
                "effects[0]: unknown variant `sometimes`",
            ),
            (r#"effects = [3]"#, "effects[0]: expected a table"),
        ];
        for (text, needle) in cases {
            let err = parse(text).unwrap_err();
            assert!(
                err.starts_with(needle) || err.contains(needle),
                "{text}\n{err}"
            );
        }
        let missing = parse(r#"effects = [{ kind = "cost_limit" }]"#).unwrap_err();
        assert!(missing.contains("missing field `usd`"), "{missing}");
    }
}
