use super::*;
use crate::test_support::{call, function_tool, output, patch_tool, request, tool_output};
use cogni_protocol::Usage;
use std::sync::Mutex;

/// What a request carried: instructions, input, how many API tools,
/// whether it had an output schema.
type Seen = (String, Vec<HistoryItem>, usize, bool);

/// A provider that replays `events` and keeps what it was asked.
struct Recording {
    events: Vec<ResponseEvent>,
    seen: Mutex<Vec<Seen>>,
}

impl Provider for Recording {
    fn id(&self) -> &str {
        "rec"
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        self.seen.lock().unwrap().push((
            request.instructions.to_string(),
            request.input.to_vec(),
            request.tools.len(),
            request.output_schema.is_some(),
        ));
        let events: Vec<Result<ResponseEvent, ProviderError>> =
            self.events.iter().cloned().map(Ok).collect();
        futures::stream::iter(events).boxed()
    }
}

fn deltas(texts: &[&str], stop: StopReason) -> Vec<ResponseEvent> {
    let mut events: Vec<ResponseEvent> = texts
        .iter()
        .map(|t| ResponseEvent::TextDelta(t.to_string()))
        .collect();
    events.push(ResponseEvent::Completed {
        usage: Some(Usage::default()),
        stop_reason: stop,
        incomplete_tool_call: None,
    });
    events
}

/// The events of `events` through the decorator, without the
/// `ToolCallStarted` before each call (checked here).
async fn run(events: Vec<ResponseEvent>, tools: &[ToolSpec]) -> Vec<ResponseEvent> {
    let inner = Arc::new(Recording {
        events,
        seen: Mutex::new(Vec::new()),
    });
    let provider = TextTools::new(inner);
    let input = [HistoryItem::text(Role::User, "go")];
    let all: Vec<ResponseEvent> = provider
        .stream(&request(&input, tools))
        .map(|e| e.unwrap())
        .collect()
        .await;
    for (i, event) in all.iter().enumerate() {
        if let ResponseEvent::ToolCall(call) = event {
            assert_eq!(
                all[i - 1],
                ResponseEvent::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone()
                }
            );
        }
    }
    all.into_iter()
        .filter(|e| !matches!(e, ResponseEvent::ToolCallStarted { .. }))
        .collect()
}

#[tokio::test]
async fn the_request_has_no_tools_and_the_same_tool_section_every_time() {
    let inner = Arc::new(Recording {
        events: deltas(&["ok"], StopReason::Stop),
        seen: Mutex::new(Vec::new()),
    });
    let provider = TextTools::new(inner.clone());
    let tools = [function_tool("read_file"), patch_tool()];
    let schema = serde_json::json!({"type": "object"});
    let input = [HistoryItem::text(Role::User, "go")];
    let mut req = request(&input, &tools);
    for _ in 0..2 {
        let _: Vec<_> = provider.stream(&req).collect().await;
    }
    req.output_schema = Some(&schema);
    let _: Vec<_> = provider.stream(&req).collect().await;
    let seen = inner.seen.lock().unwrap();
    assert_eq!(seen[0].0, seen[1].0, "byte-identical instructions");
    let text = &seen[0].0;
    assert!(text.starts_with("Be brief.\n\n# Tool calls\n"), "{text}");
    assert!(text.contains(CALL_FORMAT), "{text}");
    assert!(
        text.contains("## read_file\nread_file things\nArguments (JSON schema): {\"type\":\"object\",\"properties\":{}}"),
        "{text}"
    );
    assert!(
        text.contains("## apply_patch\nEdit files\nArguments (JSON schema): {\"type\":\"object\",\"properties\":{\"input\""),
        "freeform tools take their text as `input`: {text}"
    );
    assert_eq!((seen[0].2, seen[0].3), (0, false), "no API tools");
    assert!(seen[2].0.starts_with(text.as_str()));
    assert!(
        seen[2].0.ends_with("\n{\"type\":\"object\"}"),
        "{}",
        seen[2].0
    );
    assert!(!seen[2].3, "the schema is in the instructions instead");
    assert_eq!(
        instructions("Be brief.", &[], None),
        "Be brief.",
        "no tools, no section"
    );
}

#[test]
fn history_is_plain_text_blocks_and_outputs() {
    let invalid = ToolCall {
        arguments: serde_json::json!({"error": "fix it", "block": "```json\n{oops}\n```\n"})
            .to_string(),
        ..call("c3", INVALID_CALL, "")
    };
    let history = vec![
        HistoryItem::text(Role::User, "go"),
        HistoryItem::text(Role::Assistant, "Looking."),
        HistoryItem::tool_call(call("c1", "read_file", r#"{"path":"a.rs"}"#)),
        HistoryItem::tool_call(call("c2", "shell", r#"{"command":"ls"}"#)),
        output("c1", "fn main() {}"),
        tool_output("c2", "exit 1", true),
        HistoryItem::tool_call(invalid),
        output("c3", "fix it"),
        HistoryItem::text(Role::Assistant, "Done."),
    ];
    let text = history_as_text(&history);
    let texts: Vec<(Role, &str)> = text
        .iter()
        .map(|i| (i.role, i.as_text().expect("all text")))
        .collect();
    assert_eq!(
        texts,
        vec![
            (Role::User, "go"),
            (
                Role::Assistant,
                "Looking.\n\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\":\"a.rs\"}}\n```\n\n```json\n{\"tool\": \"shell\", \"arguments\": {\"command\":\"ls\"}}\n```"
            ),
            (
                Role::User,
                "Output of call 1 (`read_file`):\nfn main() {}\n\nOutput of call 2 (`shell`) (failed):\nexit 1"
            ),
            (Role::Assistant, "```json\n{oops}\n```\n"),
            (Role::User, "fix it"),
            (Role::Assistant, "Done."),
        ]
    );
    assert_eq!(history_as_text(&history), text, "the same every time");
}

#[tokio::test]
async fn blocks_become_calls_and_the_text_streams_without_them() {
    let events = run(
        deltas(
            &[
                "Let me look.\n```js",
                "on\n{\"tool\": \"read_file\", \"argu",
                "ments\": {\"path\": \"a.rs\"}}\n```\n",
                "{\"tool\": \"nope\"}",
            ],
            StopReason::Stop,
        ),
        &[function_tool("read_file")],
    )
    .await;
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[0], ResponseEvent::TextDelta("Let me look.\n".into()));
    let ResponseEvent::ToolCall(first) = &events[1] else {
        panic!("{events:?}")
    };
    assert_eq!(
        (first.name.as_str(), first.arguments.as_str()),
        ("read_file", r#"{"path":"a.rs"}"#)
    );
    assert!(first.id.starts_with("text_call_"), "{}", first.id);
    let ResponseEvent::ToolCall(second) = &events[2] else {
        panic!("{events:?}")
    };
    assert_eq!(
        second.name, "nope",
        "unknown tools are the registry's to answer"
    );
    assert_ne!(first.id, second.id);
    assert!(matches!(
        events[3],
        ResponseEvent::Completed {
            stop_reason: StopReason::ToolCalls,
            ..
        }
    ));
}

#[tokio::test]
async fn a_malformed_block_is_a_call_answered_with_the_correction() {
    let events = run(
        deltas(
            &["```json\n{\"tool\": \"shell\", \"arguments\": [1]}\n```"],
            StopReason::Stop,
        ),
        &[function_tool("shell")],
    )
    .await;
    let ResponseEvent::ToolCall(call) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(call.name, INVALID_CALL);
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(
        args["error"].as_str().unwrap(),
        correction("the arguments of `shell` must be a JSON object, not an array")
    );
    assert!(args["error"].as_str().unwrap().contains(CALL_FORMAT));
    assert_eq!(
        args["block"],
        "```json\n{\"tool\": \"shell\", \"arguments\": [1]}\n```"
    );
    // Rendered back, the model sees what it wrote.
    assert_eq!(
        call_block(call),
        "```json\n{\"tool\": \"shell\", \"arguments\": [1]}\n```"
    );
}

#[tokio::test]
async fn a_block_cut_off_at_the_token_limit_is_an_incomplete_call() {
    let events = run(
        deltas(
            &["Patching.\n{\"tool\": \"shell\", \"arguments\": {\"comm"],
            StopReason::Length,
        ),
        &[function_tool("shell")],
    )
    .await;
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("Patching.\n".into()),
            ResponseEvent::Completed {
                usage: Some(Usage::default()),
                stop_reason: StopReason::Length,
                incomplete_tool_call: Some("shell".into()),
            }
        ]
    );
}

#[tokio::test]
async fn blanks_around_blocks_go_with_them() {
    let block = "```json\n{\"tool\": \"a\"}\n```\n";
    let events = run(
        deltas(&["\n", block, "\n\n", block, "\n"], StopReason::Stop),
        &[],
    )
    .await;
    let texts: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, ResponseEvent::TextDelta(_)))
        .collect();
    assert!(texts.is_empty(), "{events:?}");
    let events = run(deltas(&["Done.", "\n"], StopReason::Stop), &[]).await;
    assert_eq!(
        events[..2],
        [
            ResponseEvent::TextDelta("Done.".into()),
            ResponseEvent::TextDelta("\n".into())
        ],
        "a reply without calls keeps them"
    );
}

#[tokio::test]
async fn a_retry_starts_the_reply_over() {
    let mut events = vec![
        ResponseEvent::TextDelta("```json\n{\"tool\": \"a\"".into()),
        ResponseEvent::Retrying {
            attempt: 1,
            delay: std::time::Duration::ZERO,
            reason: "reset".into(),
        },
    ];
    events.extend(deltas(&["Plain answer."], StopReason::Stop));
    let events = run(events, &[]).await;
    assert!(matches!(events[0], ResponseEvent::Retrying { .. }));
    assert_eq!(events[1], ResponseEvent::TextDelta("Plain answer.".into()));
    assert!(matches!(
        events[2],
        ResponseEvent::Completed {
            stop_reason: StopReason::Stop,
            ..
        }
    ));
}
