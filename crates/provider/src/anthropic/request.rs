//! The Anthropic Messages request body: system blocks, alternating
//! messages, thinking, tools, the `final_answer` tool for an output schema,
//! cache breakpoints.

use super::*;
use cogni_protocol::Image;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<AnyTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    stream: bool,
}

#[derive(Serialize)]
pub(super) struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// `{"type": "ephemeral"}`
#[derive(Serialize, Clone, Copy)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CacheControl {
    Ephemeral,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ToolResultContent<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A block the API sent, sent back as it came (a web search's
    /// `server_tool_use` and `web_search_tool_result`).
    #[serde(untagged)]
    Verbatim(&'a Value),
}

/// A tool result's content: text, or text and images.
#[derive(Serialize)]
#[serde(untagged)]
enum ToolResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

/// `{"type": "base64", "media_type": ..., "data": ...}`
#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl<'a> Block<'a> {
    fn text(text: &'a str) -> Self {
        Block::Text {
            text,
            cache_control: None,
        }
    }

    fn image(image: &'a Image) -> Self {
        Block::Image {
            source: ImageSource {
                kind: "base64",
                media_type: &image.media_type,
                data: crate::images::base64(image),
            },
            cache_control: None,
        }
    }

    /// Where a cache breakpoint goes; thinking blocks cannot carry one.
    fn cache_slot(&mut self) -> Option<&mut Option<CacheControl>> {
        match self {
            Block::Text { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. }
            | Block::Image { cache_control, .. } => Some(cache_control),
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Verbatim(_) => None,
        }
    }
}

/// A tool of the request: one of cogni's, or the API's own web search.
#[derive(Serialize)]
#[serde(untagged)]
enum AnyTool<'a> {
    Custom(WireTool<'a>),
    Server(Value),
}

/// The server-side web search tool, with at most this many searches a
/// response.
pub(super) const WEB_SEARCH_MAX_USES: u32 = 5;

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// How the final-answer tool carries the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FinalAnswer {
    /// The schema is not an object schema, so the answer is the tool
    /// input's `value` property.
    wrapped: bool,
}

impl FinalAnswer {
    pub(super) fn for_schema(schema: &Value) -> Self {
        FinalAnswer {
            wrapped: schema.get("type").and_then(Value::as_str) != Some("object"),
        }
    }

    fn tool(self, schema: &Value) -> WireTool<'_> {
        let input_schema = if self.wrapped {
            Cow::Owned(json!({
                "type": "object",
                "properties": {"value": schema},
                "required": ["value"],
            }))
        } else {
            Cow::Borrowed(schema)
        };
        WireTool {
            name: FINAL_ANSWER_TOOL,
            description: FINAL_ANSWER_DESCRIPTION,
            input_schema,
            cache_control: None,
        }
    }

    /// The answer text from the tool's input JSON (kept as sent when it is
    /// not the expected JSON).
    pub(super) fn answer(self, input: String) -> String {
        let Ok(value) = serde_json::from_str::<Value>(&input) else {
            return input;
        };
        let answer = if self.wrapped {
            match value.get("value") {
                Some(inner) => inner,
                None => return input,
            }
        } else {
            &value
        };
        answer.to_string()
    }
}

/// `max_tokens` and the thinking budget (if thinking is enabled).
pub(super) fn token_limits(request: &ModelRequest<'_>) -> (u32, Option<u32>) {
    let Some(effort) = request.reasoning_effort else {
        return (request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS), None);
    };
    let wanted = match effort {
        "minimal" => 1_024,
        "low" => 4_096,
        "high" => 16_384,
        _ => 8_192,
    };
    match request.max_tokens {
        None => (DEFAULT_MAX_TOKENS + wanted, Some(wanted)),
        Some(max) => {
            // A quarter of the output stays for the answer.
            let budget = wanted.min(max - max / 4);
            (max, (budget >= MIN_THINKING_BUDGET).then_some(budget))
        }
    }
}

/// Serialise `request` as a Messages body.
pub(super) fn build_body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let (max_tokens, budget) = token_limits(request);
    let thinking = budget.is_some();

    let mut system: Vec<Block<'_>> = Vec::new();
    if !is_blank(request.instructions) {
        system.push(Block::text(request.instructions));
    }
    for item in request.input {
        if let (Role::Developer, Content::Text { text, .. }) = (item.role, &item.content) {
            if !is_blank(text) {
                system.push(Block::text(text));
            }
        }
    }
    if request.output_schema.is_some() {
        system.push(Block::text(FINAL_ANSWER_INSTRUCTION));
    }

    let mut tools: Vec<WireTool<'_>> = request.tools.iter().map(wire_tool).collect();
    if let Some(schema) = request.output_schema {
        tools.push(FinalAnswer::for_schema(schema).tool(schema));
    }
    let mut messages = build_messages(request.input, thinking);

    // Cache breakpoints: tools, system, the history before the newest
    // message, and the newest message.
    if let Some(tool) = tools.last_mut() {
        tool.cache_control = Some(CacheControl::Ephemeral);
    }
    if let Some(slot) = system.last_mut().and_then(Block::cache_slot) {
        *slot = Some(CacheControl::Ephemeral);
    }
    let recent = messages.len().saturating_sub(2);
    for message in &mut messages[recent..] {
        if let Some(slot) = message.content.iter_mut().rev().find_map(Block::cache_slot) {
            *slot = Some(CacheControl::Ephemeral);
        }
    }

    // The web search goes first, so the breakpoint stays on the last of
    // cogni's tools.
    let web_search = request.web_search.then(|| {
        AnyTool::Server(json!({
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": WEB_SEARCH_MAX_USES,
        }))
    });
    let tools: Vec<AnyTool<'_>> = web_search
        .into_iter()
        .chain(tools.into_iter().map(AnyTool::Custom))
        .collect();
    let body = Body {
        model: request.model,
        max_tokens,
        system,
        messages,
        tool_choice: (!request.parallel_tool_calls && !tools.is_empty())
            .then(|| json!({"type": "auto", "disable_parallel_tool_use": true})),
        tools,
        temperature: request.temperature.filter(|_| !thinking),
        thinking: budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
        stream: true,
    };
    serde_json::to_vec(&body)
}

/// The history as alternating messages (developer items are in `system`).
fn build_messages(input: &[HistoryItem], thinking: bool) -> Vec<Message<'_>> {
    let mut messages: Vec<Message<'_>> = Vec::new();
    for item in input {
        let (role, block) = match &item.content {
            Content::Text { text, .. } => {
                let role = match item.role {
                    Role::Developer => continue,
                    Role::Assistant => "assistant",
                    Role::User | Role::Tool => "user",
                };
                if is_blank(text) {
                    continue;
                }
                (role, Block::text(text))
            }
            Content::Reasoning(r) => match reasoning_block(r, thinking) {
                Some(block) => ("assistant", block),
                None => continue,
            },
            Content::ToolCall(call) => (
                "assistant",
                Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: freeform::input_object(call),
                    cache_control: None,
                },
            ),
            Content::ToolOutput(output) => {
                let text = if is_blank(&output.content) {
                    "(no output)"
                } else {
                    &output.content
                };
                let content = if output.images.is_empty() {
                    ToolResultContent::Text(text)
                } else {
                    let mut blocks = vec![Block::text(text)];
                    blocks.extend(output.images.iter().map(Block::image));
                    ToolResultContent::Blocks(blocks)
                };
                (
                    "user",
                    Block::ToolResult {
                        tool_use_id: &output.call_id,
                        content,
                        is_error: output.is_error,
                        cache_control: None,
                    },
                )
            }
            Content::Image(image) => ("user", Block::image(image)),
            // The API's own blocks, in their order, each as it came.
            Content::WebSearch(search) if search.source == SOURCE => {
                for block in &search.blocks {
                    push_block(&mut messages, "assistant", Block::Verbatim(block));
                }
                continue;
            }
            // Another API's search: its results live on in the answer.
            Content::WebSearch(_) => continue,
        };
        push_block(&mut messages, role, block);
    }
    messages
}

/// `block` at the end of the conversation: in the last message when it
/// is `role`'s, else in a new one.
fn push_block<'a>(messages: &mut Vec<Message<'a>>, role: &'static str, block: Block<'a>) {
    match messages.last_mut() {
        Some(last) if last.role == role => {
            if matches!(block, Block::ToolResult { .. }) {
                // Tool results come first in a user message.
                let at = last
                    .content
                    .iter()
                    .take_while(|b| matches!(b, Block::ToolResult { .. }))
                    .count();
                last.content.insert(at, block);
            } else {
                last.content.push(block);
            }
        }
        _ => messages.push(Message {
            role,
            content: vec![block],
        }),
    }
}

/// Empty or whitespace only: the API rejects such text blocks ("text
/// content blocks must contain non-whitespace text"), also when they were
/// only replayed from history.
fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// A thinking block to send back, if the API needs (and accepts) one.
fn reasoning_block(reasoning: &Reasoning, thinking: bool) -> Option<Block<'_>> {
    if !thinking || reasoning.source != SOURCE {
        return None;
    }
    // Unsigned thinking is rejected by the API.
    let data = reasoning.encrypted.as_deref().filter(|d| !d.is_empty())?;
    Some(if reasoning.text.is_empty() {
        Block::RedactedThinking { data }
    } else {
        Block::Thinking {
            thinking: &reasoning.text,
            signature: data,
        }
    })
}

fn wire_tool(tool: &ToolSpec) -> WireTool<'_> {
    let input_schema = match &tool.format {
        ToolFormat::Function { parameters } => Cow::Borrowed(parameters),
        ToolFormat::Freeform { syntax, definition } => {
            Cow::Owned(freeform::parameters(syntax, definition))
        }
    };
    WireTool {
        name: &tool.name,
        description: &tool.description,
        input_schema,
        cache_control: None,
    }
}
