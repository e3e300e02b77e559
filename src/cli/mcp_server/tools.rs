//! The server's two tools: their schemas, their arguments checked, and
//! what a call returns.

use crate::protocol::{ApprovalPolicy, SandboxMode, TurnOutcome};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;

/// Run a task in a new session.
pub(super) const RUN: &str = "cogni";
/// Continue a session.
pub(super) const REPLY: &str = "cogni_reply";

/// Both tools, as `tools/list` shows them.
pub(super) fn list() -> Vec<Tool> {
    vec![
        Tool::new(
            RUN,
            "Delegate a coding task to cogni, a coding agent: it works in a directory with \
             its tools (shell commands in a sandbox, file edits, search) until the task is \
             done, then returns its final answer, the outcome and the tokens it used. \
             Continue the same session with cogni_reply and the session_id it returns.",
            object(run_schema()),
        )
        .with_title("Run a cogni task")
        .with_raw_output_schema(object(output_schema())),
        Tool::new(
            REPLY,
            "Continue a cogni session (the session_id a cogni call returned) with a new \
             prompt; the agent keeps the conversation so far. It runs with the settings of \
             the call that started the session.",
            object(reply_schema()),
        )
        .with_title("Continue a cogni session")
        .with_raw_output_schema(object(output_schema())),
    ]
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

fn run_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "The task, as you would give it to `cogni run`."
            },
            "cwd": {
                "type": "string",
                "description": "The directory to work in: absolute, or relative to the server's working directory (the default)."
            },
            "sandbox": {
                "type": "string",
                "enum": SandboxMode::VARIANTS,
                "description": "Where commands may write: read-only, workspace-write (the working directory and temporary files) or danger-full-access (unconfined). Default: the server's configuration. A server started with --sandbox refuses a looser mode."
            },
            "approval_policy": {
                "type": "string",
                "enum": ApprovalPolicy::VARIANTS,
                "description": "When the agent would ask before a tool call. Nobody is asked here: every question is answered no at once (and the agent is told). Default: the server's configuration. A server started with --approval refuses a looser policy (untrusted is the tightest, never the loosest, on-failure and on-request in between)."
            },
            "model": {
                "type": "string",
                "description": "The model (or an alias from [model_aliases]); default: the server's configuration."
            },
            "agent": {
                "type": "string",
                "description": "Run as this agent (a card or [agents.NAME]; `cogni agents` lists them)."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    })
}

fn reply_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "session_id": {
                "type": "string",
                "description": "The session_id a cogni call returned."
            },
            "prompt": {
                "type": "string",
                "description": "What to say next."
            }
        },
        "required": ["session_id", "prompt"],
        "additionalProperties": false
    })
}

fn output_schema() -> Value {
    let count = json!({ "type": "integer", "minimum": 0 });
    json!({
        "type": "object",
        "properties": {
            "session_id": { "type": "string", "description": "Continue it with cogni_reply." },
            "outcome": {
                "type": ["string", "null"],
                "description": "How the turn ended: done, max_steps, budget_exceeded, interrupted, ...; null when it failed with an error."
            },
            "exit_code": {
                "type": "integer",
                "description": "What `cogni run` would exit with: 0 done, 1 not finished, 2 a usage or config error, 3 a provider error, 4 a budget ran out, 130 interrupted."
            },
            "answer": { "type": "string", "description": "The agent's final answer (may be empty)." },
            "reason": { "type": "string", "description": "Why the task did not finish, when it did not." },
            "usage": {
                "type": "object",
                "properties": {
                    "input_tokens": count,
                    "output_tokens": count,
                    "cached_input_tokens": count,
                    "estimated": { "type": "boolean" },
                    "cost_usd": { "type": ["number", "null"] },
                    "model_requests": count,
                    "tool_calls": count,
                    "wall_ms": count
                },
                "required": ["input_tokens", "output_tokens", "cost_usd"]
            }
        },
        "required": ["session_id", "outcome", "exit_code", "answer", "usage"]
    })
}

/// A `cogni` call's arguments, checked.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Task {
    pub prompt: String,
    pub cwd: Option<String>,
    pub sandbox: Option<SandboxMode>,
    pub approval: Option<ApprovalPolicy>,
    pub model: Option<String>,
    pub agent: Option<String>,
}

/// A `cogni_reply` call's arguments, checked.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reply {
    pub session_id: String,
    pub prompt: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    prompt: String,
    cwd: Option<String>,
    sandbox: Option<String>,
    approval_policy: Option<String>,
    model: Option<String>,
    agent: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyArgs {
    session_id: String,
    prompt: String,
}

fn decode<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<JsonObject>,
) -> Result<T, String> {
    let arguments = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(arguments).map_err(|e| format!("invalid arguments to `{tool}`: {e}"))
}

fn prompt(tool: &str, prompt: String) -> Result<String, String> {
    if prompt.trim().is_empty() {
        return Err(format!("`{tool}`: `prompt` is empty; give the task"));
    }
    Ok(prompt)
}

/// A model or agent name given as "" is a mistake, not "the default".
fn name(tool: &str, key: &str, value: Option<String>) -> Result<Option<String>, String> {
    match value {
        Some(v) if v.trim().is_empty() => Err(format!(
            "`{tool}`: `{key}` is empty; leave it out for the default"
        )),
        other => Ok(other),
    }
}

impl Task {
    pub(super) fn parse(arguments: Option<JsonObject>) -> Result<Task, String> {
        let args: TaskArgs = decode(RUN, arguments)?;
        let sandbox = args
            .sandbox
            .map(|s| crate::config::parse_sandbox(&s))
            .transpose()
            .map_err(|e| format!("`{RUN}`: `sandbox`: {e}"))?;
        let approval = args
            .approval_policy
            .map(|s| crate::config::parse_approval(&s))
            .transpose()
            .map_err(|e| format!("`{RUN}`: `approval_policy`: {e}"))?;
        Ok(Task {
            prompt: prompt(RUN, args.prompt)?,
            cwd: name(RUN, "cwd", args.cwd)?,
            sandbox,
            approval,
            model: name(RUN, "model", args.model)?,
            agent: name(RUN, "agent", args.agent)?,
        })
    }
}

impl Reply {
    pub(super) fn parse(arguments: Option<JsonObject>) -> Result<Reply, String> {
        let args: ReplyArgs = decode(REPLY, arguments)?;
        let id = args.session_id.trim();
        // An id names a file in the sessions directory: nothing that
        // could reach outside it.
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!(
                "`{REPLY}`: `session_id` `{}` is not a session id; give the session_id a `{RUN}` call returned",
                args.session_id
            ));
        }
        Ok(Reply {
            session_id: id.to_string(),
            prompt: prompt(REPLY, args.prompt)?,
        })
    }
}

/// Tokens, cost and counts of one call's turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(super) struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// The counts were estimated: the provider reported none.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// `null` when the model's price is unknown.
    pub cost_usd: Option<f64>,
    pub model_requests: u32,
    pub tool_calls: u32,
    pub wall_ms: u64,
}

/// What a call that ran a turn returns (the structured content).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Report {
    pub session_id: String,
    /// `None` when the turn failed with an error.
    pub outcome: Option<TurnOutcome>,
    pub exit_code: u8,
    pub answer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub usage: Usage,
}

impl Report {
    /// The call's result: the answer (after why it did not finish, if it
    /// did not) and the report as structured content, also as JSON text
    /// for clients that read only text. An error unless the task is done.
    pub(super) fn into_result(self) -> CallToolResult {
        let text = match &self.reason {
            Some(reason) if self.answer.is_empty() => reason.clone(),
            Some(reason) => format!("{reason}\n\n{}", self.answer),
            None => self.answer.clone(),
        };
        let structured = serde_json::to_value(&self).unwrap_or_default();
        let mut result = if self.exit_code == 0 {
            CallToolResult::success(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::error(vec![ContentBlock::text(text)])
        };
        result
            .content
            .push(ContentBlock::text(structured.to_string()));
        result.structured_content = Some(structured);
        result
    }
}

/// A call that could not run: its reason, as an error result.
pub(super) fn failure(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Option<JsonObject> {
        match value {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    #[test]
    fn task_arguments_are_checked_and_each_mistake_is_named() {
        let task = Task::parse(args(json!({
            "prompt": "fix it",
            "sandbox": "read-only",
            "approval_policy": "never",
            "model": "gpt-4.1"
        })))
        .unwrap();
        assert_eq!(task.sandbox, Some(SandboxMode::ReadOnly));
        assert_eq!(task.approval, Some(ApprovalPolicy::Never));
        assert_eq!(task.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(task.cwd, None);

        let cases = [
            (json!({}), "missing field `prompt`"),
            (json!({ "prompt": "  " }), "`prompt` is empty"),
            (json!({ "prompt": 3 }), "invalid type: integer `3`, expected a string"),
            (
                json!({ "prompt": "x", "sandbox": "roomy" }),
                "`sandbox`: unknown sandbox mode `roomy`; use one of: read-only, workspace-write, danger-full-access",
            ),
            (
                json!({ "prompt": "x", "approval_policy": "maybe" }),
                "`approval_policy`: unknown approval policy `maybe`",
            ),
            (json!({ "prompt": "x", "model": "" }), "`model` is empty"),
            (json!({ "prompt": "x", "sandbx": "read-only" }), "unknown field `sandbx`"),
        ];
        for (value, expected) in cases {
            let error = Task::parse(args(value.clone())).unwrap_err();
            assert!(error.contains(expected), "{value}: {error}");
        }
        assert!(Task::parse(None)
            .unwrap_err()
            .contains("missing field `prompt`"));
    }

    #[test]
    fn a_reply_needs_a_plain_session_id() {
        let reply = Reply::parse(args(json!({ "session_id": " 18a-2f ", "prompt": "more" })));
        assert_eq!(
            reply.unwrap(),
            Reply {
                session_id: "18a-2f".into(),
                prompt: "more".into()
            }
        );
        for id in ["", "../../etc/passwd", "a/b", "a.jsonl"] {
            let error = Reply::parse(args(json!({ "session_id": id, "prompt": "x" }))).unwrap_err();
            assert!(error.contains("is not a session id"), "{id}: {error}");
        }
    }

    #[test]
    fn a_report_is_text_and_structured_content_and_an_error_unless_done() {
        let done = Report {
            session_id: "s1".into(),
            outcome: Some(TurnOutcome::Done),
            exit_code: 0,
            answer: "All good.".into(),
            reason: None,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
                ..Usage::default()
            },
        };
        let result = done.clone().into_result();
        assert_eq!(result.is_error, Some(false));
        let value = serde_json::to_value(&result).unwrap();
        assert_eq!(value["content"][0]["text"], "All good.");
        let structured = &value["structuredContent"];
        assert_eq!(structured["session_id"], "s1");
        assert_eq!(structured["outcome"], "done");
        assert_eq!(structured["usage"]["input_tokens"], 10);
        assert_eq!(structured["usage"]["cost_usd"], Value::Null);
        assert!(structured.get("reason").is_none());
        let text: Value =
            serde_json::from_str(value["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(&text, structured);

        let stopped = Report {
            outcome: Some(TurnOutcome::MaxSteps),
            exit_code: 1,
            reason: Some("the task did not finish: reached the limit".into()),
            ..done
        };
        let value = serde_json::to_value(stopped.into_result()).unwrap();
        assert_eq!(value["isError"], true);
        assert_eq!(
            value["content"][0]["text"],
            "the task did not finish: reached the limit\n\nAll good."
        );
        assert_eq!(value["structuredContent"]["exit_code"], 1);
    }
}
