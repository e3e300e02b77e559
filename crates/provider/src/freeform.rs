//! Freeform tools (raw text input, like `apply_patch`'s patch) on wire APIs
//! that only know JSON tools (Chat Completions, Anthropic, Ollama): offered
//! as a function taking one string property, `input`, and their calls'
//! `{"input": "..."}` unwrapped back to the bare text (and wrapped again
//! when history goes back to an API that wants an object).

use cogni_protocol::{ToolCall, ToolCallKind, ToolFormat, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};

/// The JSON schema a freeform tool is offered with: one string property,
/// `input`.
pub(crate) fn parameters(syntax: &str, definition: &str) -> Value {
    let mut about = format!("The raw {syntax} text.");
    if !definition.is_empty() {
        about.push_str(" Definition:\n");
        about.push_str(definition);
    }
    json!({
        "type": "object",
        "properties": {"input": {"type": "string", "description": about}},
        "required": ["input"],
        "additionalProperties": false,
    })
}

/// The names of the request's freeform tools, for the parser.
pub(crate) fn names(tools: &[ToolSpec]) -> Vec<String> {
    tools
        .iter()
        .filter(|t| matches!(t.format, ToolFormat::Freeform { .. }))
        .map(|t| t.name.clone())
        .collect()
}

/// A call to `name` as cogni keeps it: freeform (its input unwrapped) when
/// `name` is one of the `freeform` tools, a function call otherwise.
pub(crate) fn call(freeform: &[String], name: &str, arguments: String) -> (ToolCallKind, String) {
    if freeform.iter().any(|f| f == name) {
        (ToolCallKind::Freeform, unwrap_input(arguments))
    } else {
        (ToolCallKind::Function, arguments)
    }
}

/// A call's arguments as the JSON object wire APIs with object inputs want
/// (Anthropic's `input`, Ollama's `arguments`): function arguments as they
/// are (none as `{}`); freeform text, and text that is not an object, as
/// `{"input": text}`.
pub(crate) fn input_object(call: &ToolCall) -> Value {
    if call.kind == ToolCallKind::Function {
        if call.arguments.trim().is_empty() {
            return json!({});
        }
        if let Ok(object @ Value::Object(_)) = serde_json::from_str(&call.arguments) {
            return object;
        }
    }
    json!({ "input": call.arguments })
}

/// `{"input": "..."}` becomes the bare text; anything else is kept as sent.
fn unwrap_input(arguments: String) -> String {
    #[derive(Deserialize)]
    struct Input {
        input: String,
    }
    match serde_json::from_str::<Input>(&arguments) {
        Ok(input) => input.input,
        Err(_) => arguments,
    }
}
