//! What the wire API unit tests share: history items, tools and a request
//! to build bodies from, SSE frames to feed parsers, and decoding captured
//! wire streams through the real SSE / NDJSON decoder and a parser.

use super::http::{Framing, WireParser};
use super::sse::SseEvent;
use super::{ndjson, sse, ModelRequest, ResponseEvent};
use cogni_protocol::{
    Content, HistoryItem, Role, ToolCall, ToolCallKind, ToolFormat, ToolOutput, ToolSpec,
};
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

pub(crate) fn tool_call(id: &str, name: &str, arguments: &str, kind: ToolCallKind) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        kind,
    }
}

/// A function call.
pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    tool_call(id, name, arguments, ToolCallKind::Function)
}

pub(crate) fn tool_output(id: &str, content: &str, is_error: bool) -> HistoryItem {
    HistoryItem::tool_output(ToolOutput {
        call_id: id.into(),
        content: content.into(),
        is_error,
        command: None,
        images: Vec::new(),
    })
}

/// An image (a 1×1 PNG's worth of base64, not a real one) named `name`.
pub(crate) fn image(name: &str) -> cogni_protocol::Image {
    cogni_protocol::Image {
        media_type: "image/png".into(),
        hash: format!("hash-{name}"),
        width: 1,
        height: 1,
        name: name.into(),
        data: std::sync::Arc::from(format!("BASE64-{name}")),
    }
}

/// A conversation with an image attached to the user's message and one
/// returned by a tool.
pub(crate) fn with_images() -> Vec<HistoryItem> {
    let mut shown = tool_output("c1", "viewed", false);
    if let Content::ToolOutput(output) = &mut shown.content {
        output.images.push(image("tool.png"));
    }
    vec![
        HistoryItem::text(Role::User, "look"),
        HistoryItem {
            role: Role::User,
            content: Content::Image(image("shot.png")),
        },
        HistoryItem::tool_call(call("c1", "view_image", r#"{"path":"tool.png"}"#)),
        shown,
        HistoryItem::text(Role::Assistant, "seen"),
    ]
}

/// A successful tool output.
pub(crate) fn output(id: &str, content: &str) -> HistoryItem {
    tool_output(id, content, false)
}

/// A read-only function tool described as "`name` things".
pub(crate) fn function_tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} things"),
        format: ToolFormat::Function {
            parameters: json!({"type": "object", "properties": {}}),
        },
        read_only: true,
    }
}

/// `apply_patch` as a freeform (lark grammar) tool.
pub(crate) fn patch_tool() -> ToolSpec {
    ToolSpec {
        name: "apply_patch".into(),
        description: "Edit files".into(),
        format: ToolFormat::Freeform {
            syntax: "lark".into(),
            definition: "start: patch".into(),
        },
        read_only: false,
    }
}

/// A request for model `m1` ("Be brief.", a 128k window) with nothing
/// optional set; tests change the fields they are about.
pub(crate) fn request<'a>(input: &'a [HistoryItem], tools: &'a [ToolSpec]) -> ModelRequest<'a> {
    ModelRequest {
        model: "m1",
        instructions: "Be brief.",
        input,
        tools,
        parallel_tool_calls: true,
        output_schema: None,
        temperature: None,
        max_tokens: None,
        reasoning_effort: None,
        context_window: 128_000,
        context_window_is_default: false,
        web_search: false,
        max_tokens_param: super::MaxTokensParam::MaxTokens,
    }
}

pub(crate) fn started(id: &str, name: &str) -> ResponseEvent {
    ResponseEvent::ToolCallStarted {
        id: id.into(),
        name: name.into(),
    }
}

/// `data` as an SSE frame named by its `type`.
pub(crate) fn frame(data: &Value) -> SseEvent {
    SseEvent {
        event: data["type"].as_str().unwrap_or("message").to_string(),
        data: data.to_string(),
    }
}

/// The events `parser` makes of a body delivered as `reads`, decoded by the
/// real decoder for `framing`, up to the terminal event.
pub(crate) async fn decode_reads(
    framing: Framing,
    mut parser: impl WireParser,
    reads: Vec<Vec<u8>>,
) -> Vec<ResponseEvent> {
    let bytes = futures::stream::iter(reads.into_iter().map(Ok::<_, Infallible>));
    let idle = Duration::from_secs(30);
    let mut frames: BoxStream<'_, _> = match framing {
        Framing::Sse => Box::pin(sse::decode(bytes, idle)),
        Framing::Ndjson => Box::pin(ndjson::decode(bytes, idle)),
    };
    let mut out = VecDeque::new();
    while let Some(frame) = frames.next().await {
        if parser
            .on_frame(&frame.expect("frame"), &mut out)
            .expect("event")
        {
            break;
        }
    }
    out.into_iter().collect()
}

/// Each of `wires` decodes (see [`decode_reads`]) to events that end with
/// `Completed`, and to the same events when it arrives split in two at any
/// byte. With `made_up_ids`, tool call ids that are not in the wire (made
/// up by the parser, so different each time) compare as `<made-up>`.
pub(crate) async fn assert_split_anywhere_decodes_alike<P: WireParser>(
    framing: Framing,
    parser: impl Fn() -> P,
    wires: &[&str],
    made_up_ids: bool,
) {
    let parser = &parser;
    for wire in wires {
        let decode = move |reads| async move {
            let events = decode_reads(framing, parser(), reads).await;
            if made_up_ids {
                events.into_iter().map(|e| made_up(e, wire)).collect()
            } else {
                events
            }
        };
        let bytes = wire.as_bytes();
        let whole = decode(vec![bytes.to_vec()]).await;
        assert!(
            matches!(whole.last(), Some(ResponseEvent::Completed { .. })),
            "{whole:?}"
        );
        for at in 0..=bytes.len() {
            let split = decode(vec![bytes[..at].to_vec(), bytes[at..].to_vec()]).await;
            assert_eq!(split, whole, "split at byte {at}");
        }
    }
}

/// `event` with a tool call id that `wire` does not contain replaced by
/// `<made-up>`.
fn made_up(event: ResponseEvent, wire: &str) -> ResponseEvent {
    let stable = |id: String| {
        if wire.contains(&id) {
            id
        } else {
            "<made-up>".to_string()
        }
    };
    match event {
        ResponseEvent::ToolCallStarted { id, name } => ResponseEvent::ToolCallStarted {
            id: stable(id),
            name,
        },
        ResponseEvent::ToolCall(mut call) => {
            call.id = stable(call.id);
            ResponseEvent::ToolCall(call)
        }
        other => other,
    }
}
