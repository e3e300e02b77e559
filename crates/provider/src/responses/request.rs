//! The Responses request body.

use super::*;
use crate::images::{DataUrl, TOOL_IMAGES_NOTE};
use cogni_protocol::Image;

#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningSettings<'a>>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
}

#[derive(Serialize)]
struct ReasoningSettings<'a> {
    effort: &'a str,
    summary: &'static str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Vec<MessagePart<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
    CustomToolCall {
        call_id: &'a str,
        name: &'a str,
        input: &'a str,
    },
    CustomToolCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
    Reasoning {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        summary: Vec<Part<'a>>,
        encrypted_content: &'a str,
    },
    /// An item the API sent (a `web_search_call`), sent back as it came
    /// but for its id: with `store: false` the server keeps no items, and
    /// rejects an id it cannot find.
    #[serde(untagged)]
    Verbatim(Value),
}

/// What a message holds: typed text, or (from the user) an image.
#[derive(Serialize)]
#[serde(untagged)]
enum MessagePart<'a> {
    Text(Part<'a>),
    Image {
        #[serde(rename = "type")]
        kind: &'static str,
        image_url: DataUrl<'a>,
    },
}

impl<'a> MessagePart<'a> {
    fn image(image: &'a Image) -> Self {
        MessagePart::Image {
            kind: "input_image",
            image_url: DataUrl(image),
        }
    }
}

/// A typed text: message content (`input_text`, `output_text`) or a
/// reasoning summary (`summary_text`).
#[derive(Serialize)]
pub(super) struct Part<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireTool<'a> {
    Function {
        name: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        description: &'a str,
        parameters: &'a Value,
        strict: bool,
    },
    Custom {
        name: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        description: &'a str,
        format: Value,
    },
    /// The API's own web search (`[tools] web_search`).
    WebSearch,
}

/// Serialise `request` as a Responses body.
pub(super) fn build_body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let reasons = request.reasoning_effort.is_some();
    let has_tools = !request.tools.is_empty();
    let body = Body {
        model: request.model,
        instructions: request.instructions,
        input: build_input(request.input),
        tools: request
            .tools
            .iter()
            .map(wire_tool)
            .chain(request.web_search.then_some(WireTool::WebSearch))
            .collect(),
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(request.parallel_tool_calls),
        reasoning: request.reasoning_effort.map(|effort| ReasoningSettings {
            effort,
            summary: "auto",
        }),
        store: false,
        stream: true,
        // With `store: false` the server forgets reasoning; this is how the
        // next request can carry it back.
        include: [
            (reasons, "reasoning.encrypted_content"),
            // The pages each search found, for the `web_search` event.
            (request.web_search, "web_search_call.action.sources"),
        ]
        .into_iter()
        .filter_map(|(wanted, what)| wanted.then_some(what))
        .collect(),
        text: request.output_schema.map(|schema| {
            json!({"format": {"type": "json_schema", "name": "output", "schema": schema, "strict": false}})
        }),
        // Reasoning models reject a temperature.
        temperature: request.temperature.filter(|_| !reasons),
        max_output_tokens: request.max_tokens,
    };
    serde_json::to_vec(&body)
}

fn build_input(history: &[HistoryItem]) -> Vec<InputItem<'_>> {
    // How each call was made, so its output gets the matching item type.
    let mut kinds: HashMap<&str, ToolCallKind> = HashMap::new();
    let mut input = Vec::with_capacity(history.len());
    // Images of the tool outputs just sent: they follow the outputs in a
    // user message.
    let mut tool_images: Vec<MessagePart<'_>> = Vec::new();
    for item in history {
        if !matches!(item.content, Content::ToolOutput(_)) {
            flush_tool_images(&mut input, &mut tool_images);
        }
        match &item.content {
            Content::Text { text, .. } => {
                let (role, kind) = match item.role {
                    Role::Assistant => ("assistant", "output_text"),
                    Role::Developer => ("developer", "input_text"),
                    Role::User | Role::Tool => ("user", "input_text"),
                };
                input.push(InputItem::Message {
                    role,
                    content: vec![MessagePart::Text(Part { kind, text })],
                });
            }
            Content::Image(image) => match input.last_mut() {
                Some(InputItem::Message {
                    role: "user",
                    content,
                }) => content.push(MessagePart::image(image)),
                _ => input.push(InputItem::Message {
                    role: "user",
                    content: vec![MessagePart::image(image)],
                }),
            },
            Content::ToolCall(call) => {
                kinds.insert(&call.id, call.kind);
                input.push(match call.kind {
                    ToolCallKind::Function => InputItem::FunctionCall {
                        call_id: &call.id,
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                    ToolCallKind::Freeform => InputItem::CustomToolCall {
                        call_id: &call.id,
                        name: &call.name,
                        input: &call.arguments,
                    },
                });
            }
            Content::ToolOutput(output) => {
                tool_images.extend(output.images.iter().map(MessagePart::image));
                let call_id = output.call_id.as_str();
                let output = output.content.as_str();
                input.push(match kinds.get(call_id) {
                    Some(ToolCallKind::Freeform) => {
                        InputItem::CustomToolCallOutput { call_id, output }
                    }
                    _ => InputItem::FunctionCallOutput { call_id, output },
                });
            }
            Content::Reasoning(reasoning) => {
                if let Some(item) = reasoning_item(reasoning) {
                    input.push(item);
                }
            }
            Content::WebSearch(search) if search.source == REASONING_SOURCE => {
                input.extend(search.blocks.iter().map(|item| {
                    let mut item = item.clone();
                    if let Some(fields) = item.as_object_mut() {
                        fields.remove("id");
                    }
                    InputItem::Verbatim(item)
                }));
            }
            // Another API's search: what it found lives on in the answer.
            Content::WebSearch(_) => {}
        }
    }
    flush_tool_images(&mut input, &mut tool_images);
    input
}

/// The images of the tool outputs just sent, as a user message after them.
fn flush_tool_images<'a>(input: &mut Vec<InputItem<'a>>, images: &mut Vec<MessagePart<'a>>) {
    if images.is_empty() {
        return;
    }
    let mut content = vec![MessagePart::Text(Part {
        kind: "input_text",
        text: TOOL_IMAGES_NOTE,
    })];
    content.append(images);
    input.push(InputItem::Message {
        role: "user",
        content,
    });
}

/// Reasoning goes back only when it came from this API with its encrypted
/// content: with `store: false` the server cannot look an item up by id,
/// so an item without it would be rejected.
fn reasoning_item(reasoning: &Reasoning) -> Option<InputItem<'_>> {
    if reasoning.source != REASONING_SOURCE {
        return None;
    }
    let encrypted_content = reasoning.encrypted.as_deref()?;
    let summary = if reasoning.text.is_empty() {
        Vec::new()
    } else {
        vec![Part {
            kind: "summary_text",
            text: &reasoning.text,
        }]
    };
    Some(InputItem::Reasoning {
        id: reasoning.id.as_deref(),
        summary,
        encrypted_content,
    })
}

pub(super) fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    match &tool.format {
        ToolFormat::Function { parameters } => WireTool::Function {
            name: &tool.name,
            description: &tool.description,
            parameters,
            strict: false,
        },
        ToolFormat::Freeform { syntax, definition } => WireTool::Custom {
            name: &tool.name,
            description: &tool.description,
            format: if definition.is_empty() {
                json!({"type": "text"})
            } else {
                json!({"type": "grammar", "syntax": syntax, "definition": definition})
            },
        },
    }
}
