//! The Chat Completions request body.

use super::*;
use crate::images::{DataUrl, TOOL_IMAGES_NOTE};
use cogni_protocol::Image;

#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
pub(super) struct Message<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<MessageContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// A message's content: a string, or parts when it holds images.
#[derive(Serialize, PartialEq)]
#[serde(untagged)]
enum MessageContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

impl PartialEq for ImageUrl<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.url.0, other.url.0)
    }
}

impl<'a> Part<'a> {
    fn image(image: &'a Image) -> Self {
        Part::ImageUrl {
            image_url: ImageUrl {
                url: DataUrl(image),
            },
        }
    }
}

impl<'a> Message<'a> {
    fn text(role: &'static str, content: &'a str) -> Self {
        Message {
            role,
            content: Some(MessageContent::Text(content)),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    fn parts(role: &'static str, parts: Vec<Part<'a>>) -> Self {
        Message {
            role,
            content: Some(MessageContent::Parts(parts)),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// Add `image` to this user message (its text becomes a part).
    fn push_image(&mut self, image: &'a Image) {
        let parts = match self.content.take() {
            Some(MessageContent::Parts(parts)) => parts,
            Some(MessageContent::Text(text)) => vec![Part::Text { text }],
            None => Vec::new(),
        };
        let mut parts = parts;
        parts.push(Part::image(image));
        self.content = Some(MessageContent::Parts(parts));
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

#[derive(Serialize)]
pub(crate) struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    parameters: Cow<'a, Value>,
}

/// Serialise `request` as a Chat Completions body, with the output limit
/// in `limit_field`.
pub(super) fn build_body(
    limit_field: MaxTokensParam,
    request: &ModelRequest<'_>,
) -> serde_json::Result<Vec<u8>> {
    let uses_completion_tokens = limit_field == MaxTokensParam::MaxCompletionTokens;
    let body = Body {
        model: request.model,
        messages: build_messages(request.instructions, request.input),
        tools: request.tools.iter().map(wire_tool).collect(),
        parallel_tool_calls: (!request.tools.is_empty()).then_some(request.parallel_tool_calls),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        temperature: request.temperature,
        max_tokens: request.max_tokens.filter(|_| !uses_completion_tokens),
        max_completion_tokens: request.max_tokens.filter(|_| uses_completion_tokens),
        response_format: request.output_schema.map(|schema| {
            json!({
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": schema, "strict": false},
            })
        }),
    };
    serde_json::to_vec(&body)
}

pub(super) fn build_messages<'a>(
    instructions: &'a str,
    input: &'a [HistoryItem],
) -> Vec<Message<'a>> {
    let mut messages = Vec::with_capacity(input.len() + 1);
    if !instructions.is_empty() {
        messages.push(Message::text("system", instructions));
    }
    // The assistant message that following tool calls join, if any.
    let mut open_assistant: Option<usize> = None;
    // Images of the tool outputs just sent: a tool message takes only
    // text, so they follow the outputs in a user message.
    let mut tool_images: Vec<Part<'a>> = Vec::new();
    for item in input {
        if !matches!(item.content, Content::ToolOutput(_)) {
            flush_tool_images(&mut messages, &mut tool_images);
        }
        match &item.content {
            // Chat Completions has no place for another API's reasoning
            // or web searches (what they found lives on in the answer).
            Content::Reasoning(_) | Content::WebSearch(_) => {}
            Content::Text { text, .. } => {
                let role = match item.role {
                    Role::Assistant => "assistant",
                    Role::Developer => "system",
                    Role::User | Role::Tool => "user",
                };
                messages.push(Message::text(role, text));
                open_assistant = (item.role == Role::Assistant).then(|| messages.len() - 1);
            }
            Content::ToolCall(call) => {
                let arguments = match call.kind {
                    ToolCallKind::Function => Cow::Borrowed(call.arguments.as_str()),
                    // Freeform tools are offered as functions taking `input`.
                    ToolCallKind::Freeform => {
                        Cow::Owned(json!({ "input": call.arguments }).to_string())
                    }
                };
                let wire = WireToolCall {
                    id: &call.id,
                    kind: "function",
                    function: WireFunctionCall {
                        name: &call.name,
                        arguments,
                    },
                };
                let index = match open_assistant {
                    Some(index) => index,
                    None => {
                        messages.push(Message {
                            role: "assistant",
                            content: None,
                            tool_calls: Vec::new(),
                            tool_call_id: None,
                        });
                        messages.len() - 1
                    }
                };
                let message = &mut messages[index];
                if message.content == Some(MessageContent::Text("")) {
                    message.content = None;
                }
                message.tool_calls.push(wire);
                open_assistant = Some(index);
            }
            Content::ToolOutput(output) => {
                messages.push(Message {
                    role: "tool",
                    content: Some(MessageContent::Text(&output.content)),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(&output.call_id),
                });
                tool_images.extend(output.images.iter().map(Part::image));
                open_assistant = None;
            }
            Content::Image(image) => {
                match messages.last_mut() {
                    Some(last) if last.role == "user" => last.push_image(image),
                    _ => messages.push(Message::parts("user", vec![Part::image(image)])),
                }
                open_assistant = None;
            }
        }
    }
    flush_tool_images(&mut messages, &mut tool_images);
    messages
}

/// The images of the tool outputs just sent, as a user message after them.
fn flush_tool_images<'a>(messages: &mut Vec<Message<'a>>, images: &mut Vec<Part<'a>>) {
    if images.is_empty() {
        return;
    }
    let mut parts = vec![Part::Text {
        text: TOOL_IMAGES_NOTE,
    }];
    parts.append(images);
    messages.push(Message::parts("user", parts));
}

/// A tool as a Chat Completions function (Ollama's `/api/chat` takes the
/// same shape); a freeform tool becomes a function taking a string `input`.
pub(crate) fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    let parameters = match &tool.format {
        ToolFormat::Function { parameters } => Cow::Borrowed(parameters),
        ToolFormat::Freeform { syntax, definition } => {
            Cow::Owned(freeform::parameters(syntax, definition))
        }
    };
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &tool.name,
            description: &tool.description,
            parameters,
        },
    }
}
