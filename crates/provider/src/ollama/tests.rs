use super::*;
use crate::test_support::{
    self, assert_split_anywhere_decodes_alike, call, decode_reads, output, patch_tool, tool_call,
};
use cogni_protocol::{MessageTag, ToolCallKind, ToolFormat, ToolSpec};

fn reasoning(text: &str, source: &str) -> HistoryItem {
    HistoryItem {
        role: Role::Assistant,
        content: Content::Reasoning(Reasoning {
            id: None,
            text: text.into(),
            encrypted: (source != SOURCE).then(|| "opaque".to_string()),
            source: source.into(),
        }),
    }
}

fn request<'a>(input: &'a [HistoryItem], tools: &'a [ToolSpec]) -> ModelRequest<'a> {
    ModelRequest {
        model: "qwen2.5-coder:7b",
        instructions: "You are a coding agent.",
        context_window: 32_768,
        ..test_support::request(input, tools)
    }
}

fn body_json(request: &ModelRequest<'_>) -> Value {
    serde_json::from_slice(&build_body(request).expect("encode")).expect("json")
}

#[test]
fn ollama_overflow_errors_are_recognised_in_a_status_and_in_the_stream() {
    // `truncate: false`: the runner's llama.cpp error, quoted in `error`.
    let runner = json!({"error": "{\"error\":{\"code\":400,\"message\":\"request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":8889,\"n_ctx\":4096}}"});
    // `shift: false`, and the older wording.
    let shift = json!({"error": "the prompt is longer than the context length currently available to the model; increase num_ctx"});
    let input = json!({"error": "the input length exceeds the context length"});
    for body in [&runner, &shift, &input] {
        let text = body.to_string();
        assert!(
            is_context_overflow(&ServerError::parse(Some(400), &text)),
            "{text}"
        );
        let err = LineParser::new(Vec::new())
            .on_line(&text, &mut VecDeque::new())
            .expect_err("error line");
        assert!(err.context_overflow && !err.retryable, "{err:?}");
    }
    let missing = json!({"error": "model \"llama3\" not found, try pulling it first"});
    assert!(!is_context_overflow(&ServerError::parse(
        Some(404),
        &missing.to_string()
    )));
}

#[test]
fn request_payload_matches_the_snapshot() {
    let tools = [
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            format: ToolFormat::Function {
                parameters: json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                }),
            },
            read_only: true,
        },
        patch_tool(),
    ];
    let input = [
        HistoryItem::tagged(
            Role::Developer,
            MessageTag::DeveloperInstructions,
            "Run the tests before you finish.",
        ),
        HistoryItem::text(Role::User, "Fix the bug in src/lib.rs"),
        reasoning("I should read the file first.", SOURCE),
        reasoning("another API's thinking", "anthropic"),
        HistoryItem::text(Role::Assistant, "Reading it."),
        HistoryItem::tool_call(call("call_1", "read_file", "{\"path\":\"src/lib.rs\"}")),
        output("call_1", "pub fn add(a: i32, b: i32) -> i32 { a - b }"),
        HistoryItem::tool_call(tool_call(
            "call_2",
            "apply_patch",
            "*** Begin Patch\n*** End Patch\n",
            ToolCallKind::Freeform,
        )),
        output("call_2", "Done!"),
        HistoryItem::text(Role::Assistant, "Fixed."),
        HistoryItem::text(Role::User, "Summarise as JSON."),
    ];
    let schema = json!({
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    });
    let mut req = request(&input, &tools);
    req.output_schema = Some(&schema);
    req.temperature = Some(0.2);
    req.max_tokens = Some(2048);
    req.reasoning_effort = Some("high");
    req.context_window = 65_536;
    let expected: Value = serde_json::from_str(include_str!(
        "../../../../tests/fixtures/ollama/request.json"
    ))
    .expect("fixture is JSON");
    let body = body_json(&req);
    assert_eq!(
        body,
        expected,
        "got:\n{}",
        serde_json::to_string_pretty(&body).unwrap_or_default()
    );
}

#[test]
fn minimal_body_sends_the_window_and_nothing_optional() {
    let input = [HistoryItem::text(Role::User, "hi")];
    assert_eq!(
        body_json(&request(&input, &[])),
        json!({
            "model": "qwen2.5-coder:7b",
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "hi"},
            ],
            "stream": true,
            "truncate": false,
            "options": {"num_ctx": 32768},
            "keep_alive": "10m",
        })
    );
}

#[test]
fn reasoning_effort_maps_to_think_levels() {
    let input = [HistoryItem::text(Role::User, "hi")];
    for (effort, think) in [
        ("minimal", Some("low")),
        ("low", Some("low")),
        ("medium", Some("medium")),
        ("high", Some("high")),
        ("extreme", None),
    ] {
        let mut req = request(&input, &[]);
        req.reasoning_effort = Some(effort);
        let body = body_json(&req);
        assert_eq!(body.get("think").and_then(Value::as_str), think, "{effort}");
    }
}

#[test]
fn messages_group_calls_and_name_tool_outputs() {
    let input = [
        HistoryItem::text(Role::User, "go"),
        // Calls without text open their own assistant message.
        HistoryItem::tool_call(call("a", "list_dir", "{}")),
        HistoryItem::tool_call(call("b", "shell", "")),
        output("a", "src"),
        output("b", "ok"),
        // Arguments that are not a JSON object travel as `input`.
        HistoryItem::tool_call(call("c", "shell", "[\"ls\"]")),
        output("c", "x"),
        output("orphan", "who called me?"),
        HistoryItem::text(Role::Assistant, "one"),
        HistoryItem::text(Role::Assistant, "two"),
        // Reasoning after text starts a new assistant message.
        reasoning("hmm", SOURCE),
        HistoryItem::tool_call(call("d", "shell", "{\"a\":1}")),
        output("d", "done"),
        HistoryItem::text(Role::Tool, "tool text is a user message"),
    ];
    let body = body_json(&request(&input, &[]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "list_dir", "arguments": {}}},
                {"function": {"name": "shell", "arguments": {}}},
            ]},
            {"role": "tool", "content": "src", "tool_name": "list_dir"},
            {"role": "tool", "content": "ok", "tool_name": "shell"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "shell", "arguments": {"input": "[\"ls\"]"}}},
            ]},
            {"role": "tool", "content": "x", "tool_name": "shell"},
            {"role": "tool", "content": "who called me?"},
            {"role": "assistant", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "assistant", "content": "", "thinking": "hmm", "tool_calls": [
                {"function": {"name": "shell", "arguments": {"a": 1}}},
            ]},
            {"role": "tool", "content": "done", "tool_name": "shell"},
            {"role": "user", "content": "tool text is a user message"},
        ])
    );
}

#[test]
fn num_ctx_is_replaced_in_an_encoded_body() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let mut req = request(&input, &[]);
    req.temperature = Some(0.1);
    let body = build_body(&req).expect("encode");
    let patched: Value =
        serde_json::from_slice(&with_num_ctx(&body, 131_072).expect("patch")).expect("json");
    assert_eq!(
        patched["options"],
        json!({"num_ctx": 131072, "temperature": 0.1})
    );
    assert_eq!(patched["messages"], body_json(&req)["messages"]);
}

// --- /api/show, /api/tags, hints ----------------------------------------

#[test]
fn window_comes_from_the_modelfile_then_the_architecture() {
    let show = json!({
        "parameters": "stop                           \"<|im_end|>\"\nnum_ctx                        16384\ntemperature                    0.7",
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
    });
    assert_eq!(window_from_show(&show), Some(16_384));
    let show = json!({
        "parameters": "temperature 0.7",
        "model_info": {
            "general.architecture": "llama",
            "llama.context_length": 131072,
            "llama.embedding_length": 3072,
        },
    });
    assert_eq!(window_from_show(&show), Some(131_072));
    let show = json!({"model_info": {"gemma3.context_length": 8192}});
    assert_eq!(window_from_show(&show), Some(8192), "no architecture key");
    for show in [
        json!({}),
        json!({"parameters": "num_ctx lots", "model_info": {"general.architecture": "x"}}),
        json!({"model_info": {"general.architecture": "x", "x.context_length": 0}}),
    ] {
        assert_eq!(window_from_show(&show), None, "{show}");
    }
}

#[test]
fn model_names_come_from_the_tags_list() {
    let tags = json!({"models": [
        {"name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b", "size": 4683087332u64},
        {"model": "llama3.2:latest"},
        {"size": 1},
    ]});
    assert_eq!(
        model_names(&tags),
        Some(vec!["qwen2.5-coder:7b".into(), "llama3.2:latest".into()])
    );
    assert_eq!(model_names(&json!({"models": []})), Some(vec![]));
    assert_eq!(model_names(&json!({"error": "x"})), None);
}

#[test]
fn hints_name_the_fix() {
    let mut error = ProviderError::Unreachable {
        provider: "ollama".into(),
        url: "http://localhost:11434/api/chat".into(),
        message: "error sending request: Connection refused".into(),
    };
    advise(&mut error);
    let text = error.to_string();
    assert!(
        text.contains("`ollama serve`") && text.contains("OLLAMA_HOST"),
        "{text}"
    );

    let http = |message: &str, model: &str| ProviderError::Http {
        provider: "ollama".into(),
        model: model.into(),
        status: 404,
        message: message.into(),
    };
    let mut error = http(
        "model \"qwen3:8b\" not found, try pulling it first",
        "qwen3:8b",
    );
    advise(&mut error);
    assert!(
        error.to_string().contains("`ollama pull qwen3:8b`"),
        "{error}"
    );
    let mut error = http("404 page not found", "qwen3:8b");
    advise(&mut error);
    let text = error.to_string();
    assert!(
        !text.contains("ollama pull") && text.contains("without /v1"),
        "{text}"
    );

    let mut error = ProviderError::Http {
        provider: "ollama".into(),
        model: "m".into(),
        status: 500,
        message: "boom".into(),
    };
    advise(&mut error);
    assert_eq!(
        error.to_string(),
        "ollama: request for model `m` failed with HTTP 500: boom"
    );
}

// --- stream parsing ---------------------------------------------------

fn parse(freeform: &[&str], lines: &[&str]) -> Result<Vec<ResponseEvent>, FrameError> {
    let mut parser = LineParser::new(freeform.iter().map(|s| s.to_string()).collect());
    let mut out = VecDeque::new();
    for line in lines {
        if parser.on_line(line, &mut out)? {
            break;
        }
    }
    Ok(out.into_iter().collect())
}

fn text_line(text: &str) -> String {
    json!({"model": "m", "message": {"role": "assistant", "content": text}, "done": false})
        .to_string()
}

fn done_line(reason: &str, prompt: u64, eval: u64) -> String {
    json!({
        "model": "m",
        "message": {"role": "assistant", "content": ""},
        "done": true,
        "done_reason": reason,
        "prompt_eval_count": prompt,
        "eval_count": eval,
    })
    .to_string()
}

fn completed(stop: StopReason, usage: Option<(u64, u64)>) -> ResponseEvent {
    ResponseEvent::Completed {
        usage: usage.map(|(input, output)| Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }),
        stop_reason: stop,
        incomplete_tool_call: None,
    }
}

#[test]
fn text_and_usage_from_the_done_line() {
    let events = parse(
        &[],
        &[
            &text_line("Hel"),
            "",
            &text_line(""),
            &text_line("lo"),
            &done_line("stop", 26, 2),
        ],
    )
    .expect("parse");
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("Hel".into()),
            ResponseEvent::TextDelta("lo".into()),
            completed(StopReason::Stop, Some((26, 2))),
        ]
    );
}

#[test]
fn whole_tool_calls_get_ids_and_stop_means_tool_calls() {
    let events = parse(
            &["apply_patch"],
            &[
                r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"read_file","arguments":{"path":"a.rs"}}},{"id":"call_x","function":{"index":1,"name":"apply_patch","arguments":{"input":"*** Begin Patch\n"}}}]},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"shell"}}]},"done":false}"#,
                &done_line("stop", 10, 5),
            ],
        )
        .expect("parse");
    assert_eq!(events.len(), 7, "{events:?}");
    let ResponseEvent::ToolCall(first) = &events[1] else {
        panic!("expected a call: {events:?}");
    };
    assert!(first.id.starts_with("call_"), "{}", first.id);
    assert_eq!(
        events[0],
        ResponseEvent::ToolCallStarted {
            id: first.id.clone(),
            name: "read_file".into()
        }
    );
    assert_eq!(first.arguments, "{\"path\":\"a.rs\"}");
    assert_eq!(first.kind, ToolCallKind::Function);
    assert_eq!(
        events[3],
        ResponseEvent::ToolCall(ToolCall {
            id: "call_x".into(),
            name: "apply_patch".into(),
            arguments: "*** Begin Patch\n".into(),
            kind: ToolCallKind::Freeform,
        })
    );
    let ResponseEvent::ToolCall(third) = &events[5] else {
        panic!("expected a call: {events:?}");
    };
    assert_eq!(third.arguments, "{}");
    assert_ne!(third.id, first.id, "made-up ids are unique");
    assert_eq!(events[6], completed(StopReason::ToolCalls, Some((10, 5))));
}

#[test]
fn thinking_becomes_one_reasoning_item_before_what_follows() {
    let events = parse(
            &[],
            &[
                r#"{"message":{"role":"assistant","content":"","thinking":"Let me "},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","thinking":"think."},"done":false}"#,
                &text_line("Answer"),
                r#"{"message":{"role":"assistant","content":"","thinking":"More."},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"shell","arguments":{}}}]},"done":false}"#,
                r#"{"message":{"role":"assistant","content":"","thinking":"Last."},"done":true,"done_reason":"stop"}"#,
            ],
        )
        .expect("parse");
    let thought = |text: &str| {
        ResponseEvent::Reasoning(Reasoning {
            id: None,
            text: text.into(),
            encrypted: None,
            source: "ollama".into(),
        })
    };
    assert_eq!(
        events,
        vec![
            thought("Let me think."),
            ResponseEvent::TextDelta("Answer".into()),
            thought("More."),
            ResponseEvent::ToolCallStarted {
                id: "c".into(),
                name: "shell".into()
            },
            ResponseEvent::ToolCall(ToolCall {
                id: "c".into(),
                name: "shell".into(),
                arguments: "{}".into(),
                kind: ToolCallKind::Function,
            }),
            thought("Last."),
            completed(StopReason::ToolCalls, None),
        ]
    );
}

#[test]
fn done_reasons_and_missing_counts() {
    let length = parse(&[], &[&text_line("cut"), &done_line("length", 5, 1)]).expect("parse");
    assert_eq!(length[1], completed(StopReason::Length, Some((5, 1))));
    let bare = parse(&[], &[r#"{"done":true}"#]).expect("parse");
    assert_eq!(bare, vec![completed(StopReason::Stop, None)]);
    let empty_reason =
        parse(&[], &[r#"{"done":true,"done_reason":"","eval_count":3}"#]).expect("parse");
    assert_eq!(empty_reason, vec![completed(StopReason::Stop, None)]);
    // Text on the done line itself still counts.
    let last = parse(
            &[],
            &[r#"{"message":{"role":"assistant","content":"end"},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":1}"#],
        )
        .expect("parse");
    assert_eq!(last[0], ResponseEvent::TextDelta("end".into()));
}

#[test]
fn error_lines_are_errors_retryable_when_busy() {
    let fatal = parse(
        &[],
        &[
            &text_line("so far"),
            r#"{"error":"model requires more system memory (12 GiB) than is available"}"#,
        ],
    )
    .expect_err("error line");
    assert!(!fatal.retryable);
    assert!(
        fatal.message.contains("more system memory"),
        "{}",
        fatal.message
    );
    let busy = parse(
        &[],
        &[r#"{"error":"server busy, please try again.  maximum pending requests exceeded"}"#],
    )
    .expect_err("error line");
    assert!(busy.retryable, "{}", busy.message);
    let nested =
        parse(&[], &[r#"{"error":{"message":"upstream overloaded"}}"#]).expect_err("error line");
    assert!(nested.retryable && nested.message.contains("upstream overloaded"));
}

#[test]
fn malformed_lines_are_fatal_and_named() {
    for line in [
        r#"{"message":{"content":"x"}"#,
        "data: {}",
        r#"{"done":"yes"}"#,
        r#"{"message":{"tool_calls":[{"function":{}}]},"done":false}"#,
    ] {
        let error = parse(&[], &[line]).expect_err(line);
        assert!(!error.retryable);
        assert!(
            error.message.starts_with("malformed line"),
            "{}",
            error.message
        );
        assert!(error.message.contains(line), "{}", error.message);
    }
}

#[tokio::test]
async fn captures_split_at_every_byte_give_identical_events() {
    assert_split_anywhere_decodes_alike(
        Framing::Ndjson,
        || LineParser::new(Vec::new()),
        &[
            include_str!("../../../../tests/fixtures/ollama/text_llama.ndjson"),
            include_str!("../../../../tests/fixtures/ollama/tool_calls_qwen.ndjson"),
            include_str!("../../../../tests/fixtures/ollama/thinking_tool_call_qwen3.ndjson"),
            include_str!("../../../../tests/fixtures/ollama/length_gpt_oss.ndjson"),
        ],
        true,
    )
    .await;
}

#[tokio::test]
async fn a_character_split_across_reads_arrives_whole() {
    let wire = format!("{}\n{}\n", text_line("naïve 🦀"), done_line("stop", 1, 2));
    let bytes = wire.as_bytes();
    let crab = wire.find('🦀').expect("crab");
    // Cut inside the 4-byte crab and inside the 2-byte ï, in three reads.
    let i = wire.find('ï').expect("i");
    let reads = vec![
        bytes[..i + 1].to_vec(),
        bytes[i + 1..crab + 2].to_vec(),
        bytes[crab + 2..].to_vec(),
    ];
    let events = decode_reads(Framing::Ndjson, LineParser::new(Vec::new()), reads).await;
    assert_eq!(events[0], ResponseEvent::TextDelta("naïve 🦀".into()));
}

#[test]
fn bad_config_fails_at_construction() {
    let info = ProviderInfo::new("ollama", "not a url", super::super::WireApi::Ollama);
    assert!(Ollama::new(info).is_err());
}

#[test]
fn images_are_the_messages_images_arrays() {
    let input = crate::test_support::with_images();
    let body = body_json(&request(&input, &[]));
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"], "look");
    assert_eq!(messages[1]["images"], json!(["BASE64-shot.png"]));
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["images"], json!(["BASE64-tool.png"]));
}
