//! `--output-schema`: the final message must be JSON valid against the
//! schema. The schema is compiled when the session starts (a bad schema is
//! a config error), and the final message is checked when a turn ends.

use serde_json::Value;

/// Most validation errors listed in a mismatch message.
const MAX_ERRORS: usize = 5;

/// A compiled JSON Schema the final answer is checked against
/// (`--output-schema`, an output guardrail's `schema`).
pub struct OutputSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSchema")
    }
}

impl OutputSchema {
    /// Compile `schema`; `Err` says why it is not a valid JSON Schema.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|validator| OutputSchema { validator })
            .map_err(|e| format!("output_schema is not a valid JSON Schema: {e}"))
    }

    /// Check the final message; `Err` says what is wrong with it.
    pub fn check(&self, text: &str) -> Result<(), String> {
        let payload = strip_fence(text);
        let value: Value = serde_json::from_str(payload)
            .map_err(|e| format!("the final message is not JSON ({e})"))?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(MAX_ERRORS)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the final message does not match the output schema: {}",
                errors.join("; ")
            ))
        }
    }
}

/// The JSON inside a Markdown code fence, if the model wrapped it in one
/// (the text trimmed otherwise).
pub fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> OutputSchema {
        OutputSchema::compile(&json!({
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn valid_json_passes_also_inside_a_fence() {
        assert_eq!(schema().check(r#"{"answer": 42}"#), Ok(()));
        assert_eq!(schema().check("```json\n{\"answer\": 42}\n```"), Ok(()));
    }

    #[test]
    fn mismatches_say_where_and_why() {
        let err = schema()
            .check(r#"{"answer": "42", "extra": 1}"#)
            .unwrap_err();
        assert!(err.contains("does not match"), "{err}");
        assert!(err.contains("/answer"), "{err}");
        let err = schema().check("forty-two").unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
    }

    #[test]
    fn a_bad_schema_is_rejected() {
        let err = OutputSchema::compile(&json!({"type": "no-such-type"})).unwrap_err();
        assert!(err.contains("not a valid JSON Schema"), "{err}");
    }
}
