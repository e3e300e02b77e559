//! The Ollama /api/chat request body.

use super::*;

#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    /// Always false: a prompt longer than `num_ctx` is refused (a context
    /// overflow, which compaction handles) instead of silently losing its
    /// oldest messages.
    truncate: bool,
    options: Options,
    keep_alive: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<&'static str>,
}

#[derive(Serialize)]
pub(super) struct Options {
    num_ctx: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    num_predict: Option<u32>,
}

#[derive(Serialize)]
pub(super) struct Message<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
    /// Images as bare base64.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    images: Vec<&'a str>,
}

impl<'a> Message<'a> {
    fn new(role: &'static str, content: &'a str) -> Self {
        Message {
            role,
            content,
            thinking: None,
            tool_calls: Vec::new(),
            tool_name: None,
            images: Vec::new(),
        }
    }
}

#[derive(Serialize)]
struct WireCallOut<'a> {
    function: WireFunctionOut<'a>,
}

#[derive(Serialize)]
struct WireFunctionOut<'a> {
    name: &'a str,
    arguments: Value,
}

/// Serialise `request` as an `/api/chat` body.
pub(super) fn build_body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let body = Body {
        model: request.model,
        messages: build_messages(request.instructions, request.input),
        tools: request
            .tools
            .iter()
            .map(chat_completions::wire_tool)
            .collect(),
        stream: true,
        truncate: false,
        options: Options {
            num_ctx: request.context_window,
            temperature: request.temperature,
            num_predict: request.max_tokens,
        },
        keep_alive: KEEP_ALIVE,
        format: request.output_schema,
        think: request.reasoning_effort.and_then(think_level),
    };
    serde_json::to_vec(&body)
}

/// The `think` value for a reasoning effort; `None` for one Ollama rejects.
fn think_level(effort: &str) -> Option<&'static str> {
    match effort {
        "minimal" | "low" => Some("low"),
        "medium" => Some("medium"),
        "high" => Some("high"),
        _ => None,
    }
}

pub(super) fn build_messages<'a>(
    instructions: &'a str,
    input: &'a [HistoryItem],
) -> Vec<Message<'a>> {
    let mut messages = Vec::with_capacity(input.len() + 1);
    if !instructions.is_empty() {
        messages.push(Message::new("system", instructions));
    }
    // Tool names by call id: a tool message names its tool, not its call.
    let mut names: HashMap<&str, &str> = HashMap::new();
    // The assistant message the following reasoning, text and calls join.
    let mut open: Option<usize> = None;
    for item in input {
        match &item.content {
            // Another API's web search: what it found lives on in the answer.
            Content::WebSearch(_) => continue,
            Content::Reasoning(reasoning) => {
                // Reasoning from other APIs means nothing to this one.
                if reasoning.source != SOURCE || reasoning.text.is_empty() {
                    continue;
                }
                let mut message = Message::new("assistant", "");
                message.thinking = Some(&reasoning.text);
                messages.push(message);
                open = Some(messages.len() - 1);
            }
            Content::Text { text, .. } if item.role == Role::Assistant => {
                match open.map(|at| &mut messages[at]) {
                    Some(message)
                        if message.content.is_empty() && message.tool_calls.is_empty() =>
                    {
                        message.content = text;
                    }
                    _ => {
                        messages.push(Message::new("assistant", text));
                        open = Some(messages.len() - 1);
                    }
                }
            }
            Content::Text { text, .. } => {
                let role = match item.role {
                    Role::Developer => "system",
                    _ => "user",
                };
                messages.push(Message::new(role, text));
                open = None;
            }
            Content::ToolCall(call) => {
                names.insert(&call.id, &call.name);
                let at = match open {
                    Some(at) => at,
                    None => {
                        messages.push(Message::new("assistant", ""));
                        messages.len() - 1
                    }
                };
                messages[at].tool_calls.push(WireCallOut {
                    function: WireFunctionOut {
                        name: &call.name,
                        arguments: freeform::input_object(call),
                    },
                });
                open = Some(at);
            }
            Content::ToolOutput(output) => {
                let mut message = Message::new("tool", &output.content);
                message.tool_name = names.get(output.call_id.as_str()).copied();
                message.images = output.images.iter().map(crate::images::base64).collect();
                messages.push(message);
                open = None;
            }
            Content::Image(image) => {
                let image = crate::images::base64(image);
                match messages.last_mut() {
                    Some(last) if last.role == "user" => last.images.push(image),
                    _ => {
                        let mut message = Message::new("user", "");
                        message.images.push(image);
                        messages.push(message);
                    }
                }
                open = None;
            }
        }
    }
    messages
}
