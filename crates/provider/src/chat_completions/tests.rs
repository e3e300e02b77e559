use super::*;
use crate::test_support::{
    assert_split_anywhere_decodes_alike, call, function_tool, output, patch_tool, request, started,
};

fn body_json(request: &ModelRequest<'_>) -> Value {
    serde_json::from_slice(&build_body(request.max_tokens_param, request).expect("encode"))
        .expect("json")
}

#[test]
fn overflow_errors_of_openai_and_compatible_servers_are_recognised() {
    let overflows = [
        // OpenAI
        (
            400,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        ),
        // vLLM
        (
            400,
            json!({"object": "error", "message": "This model's maximum context length is 32768 tokens. However, you requested 33792 tokens (25600 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "param": null, "code": 400}),
        ),
        // llama.cpp server
        (
            400,
            json!({"error": {"code": 400, "message": "request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 4390, "n_ctx": 4096}}),
        ),
        (
            500,
            json!({"error": {"code": 500, "message": "the request exceeds the available context size. try increasing the context size or enable context shift", "type": "exceed_context_size_error", "n_prompt_tokens": 1407, "n_ctx": 256}}),
        ),
        // LiteLLM
        (
            400,
            json!({"error": {"message": "litellm.ContextWindowExceededError: litellm.BadRequestError: prompt is too long: 201234 tokens > 200000 maximum", "type": null, "param": null, "code": "400"}}),
        ),
        // OpenRouter
        (
            400,
            json!({"error": {"message": "This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (132000 of text input, 8000 in the output). Please reduce the length of either one.", "code": 400}}),
        ),
    ];
    for (status, body) in &overflows {
        let text = body.to_string();
        assert!(
            is_context_overflow(&ServerError::parse(Some(*status), &text)),
            "{text}"
        );
    }
    for (status, body) in [
        (
            400,
            json!({"error": {"message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "type": "invalid_request_error", "param": "messages.[2].role", "code": null}}),
        ),
        (
            400,
            json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}),
        ),
        (
            503,
            json!({"error": {"message": "maximum context length is busy", "type": "server_error"}}),
        ),
    ] {
        let text = body.to_string();
        assert!(
            !is_context_overflow(&ServerError::parse(Some(status), &text)),
            "{text}"
        );
    }
    // In the stream, the same words end it as an overflow, not a retry.
    let chunk = json!({"error": {"message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "code": 400}}).to_string();
    let event = SseEvent {
        event: "message".into(),
        data: chunk,
    };
    let err = ChunkParser::new(Vec::new())
        .on_event(&event, &mut VecDeque::new())
        .expect_err("error chunk");
    assert!(err.context_overflow && !err.retryable, "{err:?}");
}

#[test]
fn minimal_body_has_no_nulls_and_no_tool_fields() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let body = body_json(&request(&input, &[]));
    assert_eq!(
        body,
        json!({
            "model": "m1",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[test]
fn messages_merge_assistant_text_with_following_tool_calls() {
    let mut patch_call = call("c3", "apply_patch", "*** Begin Patch\n");
    patch_call.kind = ToolCallKind::Freeform;
    let input = [
        HistoryItem::text(Role::Developer, "dev note"),
        HistoryItem::text(Role::User, "do it"),
        HistoryItem::text(Role::Assistant, "Looking."),
        HistoryItem::tool_call(call("c1", "read", "{\"p\":1}")),
        HistoryItem::tool_call(call("c2", "list", "{}")),
        output("c1", "one"),
        output("c2", "two"),
        HistoryItem::tool_call(patch_call),
        output("c3", "done"),
        HistoryItem::text(Role::Assistant, "Finished."),
    ];
    let body = body_json(&request(&input, &[]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "dev note"},
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"p\":1}"}},
                {"id": "c2", "type": "function", "function": {"name": "list", "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "one"},
            {"role": "tool", "tool_call_id": "c2", "content": "two"},
            {"role": "assistant", "tool_calls": [
                {"id": "c3", "type": "function", "function": {
                    "name": "apply_patch",
                    "arguments": "{\"input\":\"*** Begin Patch\\n\"}",
                }},
            ]},
            {"role": "tool", "tool_call_id": "c3", "content": "done"},
            {"role": "assistant", "content": "Finished."},
        ])
    );
}

#[test]
fn consecutive_assistant_texts_stay_separate() {
    let input = [
        HistoryItem::text(Role::Assistant, "a"),
        HistoryItem::text(Role::Assistant, "b"),
    ];
    let body = body_json(&request(&input, &[]));
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
}

#[test]
fn tools_options_and_limits() {
    let input = [HistoryItem::text(Role::User, "hi")];
    let tools = [function_tool("read"), patch_tool()];
    let schema = json!({"type": "object"});
    let mut req = request(&input, &tools);
    req.parallel_tool_calls = false;
    req.temperature = Some(0.5);
    req.max_tokens = Some(100);
    req.output_schema = Some(&schema);

    let body = body_json(&req);
    assert_eq!(body["parallel_tool_calls"], json!(false));
    assert_eq!(body["temperature"], json!(0.5));
    assert_eq!(body["max_tokens"], json!(100));
    assert!(body.get("max_completion_tokens").is_none());
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "output", "schema": {"type": "object"}, "strict": false}})
    );
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {
            "name": "read",
            "description": "read things",
            "parameters": {"type": "object", "properties": {}},
        }})
    );
    let freeform = &body["tools"][1]["function"];
    assert_eq!(freeform["name"], json!("apply_patch"));
    assert_eq!(freeform["parameters"]["required"], json!(["input"]));
    assert_eq!(
        freeform["parameters"]["properties"]["input"]["type"],
        json!("string")
    );

    req.max_tokens_param = MaxTokensParam::MaxCompletionTokens;
    let body = body_json(&req);
    assert_eq!(body["max_completion_tokens"], json!(100));
    assert!(body.get("max_tokens").is_none());
}

// --- stream parsing ---------------------------------------------------

fn parse(freeform: &[&str], datas: &[&str]) -> Result<Vec<ResponseEvent>, String> {
    let mut parser = ChunkParser::new(freeform.iter().map(|s| s.to_string()).collect());
    let mut out = VecDeque::new();
    for data in datas {
        let event = SseEvent {
            event: "message".into(),
            data: data.to_string(),
        };
        if parser.on_event(&event, &mut out).map_err(|e| e.message)? {
            break;
        }
    }
    Ok(out.into_iter().collect())
}

fn tc(index: usize, id: Option<&str>, name: Option<&str>, args: Option<&str>) -> String {
    let mut piece = json!({"index": index, "function": {}});
    if let Some(id) = id {
        piece["id"] = json!(id);
        piece["type"] = json!("function");
    }
    if let Some(name) = name {
        piece["function"]["name"] = json!(name);
    }
    if let Some(args) = args {
        piece["function"]["arguments"] = json!(args);
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": null}]})
        .to_string()
}

fn finish(reason: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string()
}

fn completed(stop: StopReason) -> ResponseEvent {
    ResponseEvent::Completed {
        usage: None,
        stop_reason: stop,
        incomplete_tool_call: None,
    }
}

#[test]
fn text_deltas_and_ignored_reasoning() {
    let events = parse(
            &[],
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
                r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm","content":null}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
                &finish("stop"),
                "[DONE]",
            ],
        )
        .expect("parse");
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("Hel".into()),
            ResponseEvent::TextDelta("lo".into()),
            completed(StopReason::Stop),
        ]
    );
}

#[test]
fn interleaved_parallel_calls_are_assembled_by_index() {
    let events = parse(
            &[],
            &[
                &tc(0, Some("a"), Some("read"), Some("")),
                &tc(1, Some("b"), Some("list"), None),
                &tc(0, None, None, Some("{\"p\":")),
                &tc(1, Some("b"), None, Some("{}")),
                &tc(0, None, None, Some("1}")),
                &finish("tool_calls"),
                r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}"#,
                "[DONE]",
            ],
        )
        .expect("parse");
    assert_eq!(
        events,
        vec![
            started("a", "read"),
            started("b", "list"),
            ResponseEvent::ToolCall(call("a", "read", "{\"p\":1}")),
            ResponseEvent::ToolCall(call("b", "list", "{}")),
            ResponseEvent::Completed {
                usage: Some(Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                    cached_input_tokens: 4,
                    estimated: false,
                    cache_write_tokens: 0,
                    web_searches: 0,
                }),
                stop_reason: StopReason::ToolCalls,
                incomplete_tool_call: None,
            },
        ]
    );
}

#[test]
fn whole_calls_in_one_piece_and_stop_means_tool_calls() {
    let events = parse(
            &[],
            &[
                &tc(0, Some("a"), Some("read"), Some("{}")),
                &tc(1, Some("b"), Some("read"), Some("{\"x\":2}")),
                // Usage on the same chunk as finish_reason.
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
                "[DONE]",
            ],
        )
        .expect("parse");
    assert_eq!(events.len(), 5);
    // The first call is whole when the second begins: it is emitted then,
    // before the choice finishes.
    assert_eq!(events[1], ResponseEvent::ToolCall(call("a", "read", "{}")));
    assert_eq!(events[2], started("b", "read"));
    assert_eq!(
        events[4],
        ResponseEvent::Completed {
            usage: Some(Usage {
                input_tokens: 3,
                output_tokens: 2,
                cached_input_tokens: 0,
                estimated: false,
                cache_write_tokens: 0,
                web_searches: 0,
            }),
            stop_reason: StopReason::ToolCalls,
            incomplete_tool_call: None,
        }
    );
}

#[test]
fn same_index_with_a_new_id_is_a_new_call() {
    let events = parse(
        &[],
        &[
            &tc(0, Some("a"), Some("read"), Some("{}")),
            &tc(0, Some("b"), Some("list"), Some("{}")),
            &finish("tool_calls"),
            "[DONE]",
        ],
    )
    .expect("parse");
    assert_eq!(
        events,
        vec![
            started("a", "read"),
            ResponseEvent::ToolCall(call("a", "read", "{}")),
            started("b", "list"),
            ResponseEvent::ToolCall(call("b", "list", "{}")),
            completed(StopReason::ToolCalls),
        ]
    );
}

#[test]
fn missing_index_and_missing_id_are_tolerated() {
    let events = parse(
            &[],
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"read","arguments":"{\"a\""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}"#,
                &finish("tool_calls"),
                "[DONE]",
            ],
        )
        .expect("parse");
    assert_eq!(events.len(), 3);
    let ResponseEvent::ToolCall(made) = &events[1] else {
        panic!("expected a tool call, got {events:?}");
    };
    assert!(made.id.starts_with("call_"), "synthesised id {}", made.id);
    assert_eq!(made.arguments, "{\"a\":1}");
    assert_eq!(events[0], started(&made.id, "read"));
}

#[test]
fn many_calls_are_assembled_in_linear_time() {
    // Found while fuzzing the wire parsers, by a scaling check (fuzz
    // inputs are too small to show it): every delta looked its call up
    // by scanning all calls so far, 31 s for 40,000 calls in a debug
    // build, minutes for what fits in the 16 MiB response cap. Calls
    // by index, then continued by id alone and by nothing (deltas
    // built directly: parsing JSON would be most of the time).
    let delta = |index: Option<usize>, id: Option<String>, name: Option<&str>, args: &str| {
        WireToolCallDelta {
            index,
            id,
            function: Some(WireFunctionDelta {
                name: name.map(str::to_string),
                arguments: Some(args.to_string()),
            }),
        }
    };
    let n = 50_000;
    let mut parser = ChunkParser::new(Vec::new());
    let mut out = VecDeque::new();
    let started = std::time::Instant::now();
    for i in 0..n {
        let piece = delta(Some(i), Some(format!("c{i}")), Some("f"), "{");
        parser.on_tool_call_delta(piece, &mut out);
    }
    for i in 0..n {
        parser.on_tool_call_delta(delta(None, Some(format!("c{i}")), None, "}"), &mut out);
    }
    parser.on_tool_call_delta(delta(None, None, None, " "), &mut out);
    parser.finish("tool_calls", &mut out);
    let took = started.elapsed();
    let calls: Vec<ToolCall> = out
        .into_iter()
        .filter_map(|e| match e {
            ResponseEvent::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), n);
    assert_eq!(
        (calls[7].id.as_str(), calls[7].arguments.as_str()),
        ("c7", "{}")
    );
    assert_eq!(calls[n - 1].arguments, "{} ");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
}

#[test]
fn the_largest_index_then_one_without_an_index() {
    // Found while fixing the above: the next index after the largest
    // one overflowed (a panic in debug builds).
    let events = parse(
            &[],
            &[
                &tc(usize::MAX, Some("a"), Some("f"), Some("{}")),
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
                &finish("tool_calls"),
                "[DONE]",
            ],
        )
        .expect("parse");
    let names: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::ToolCall(call) => Some(call.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["f", "g"]);
}

#[test]
fn length_mid_tool_call_reports_the_partial_call() {
    let events = parse(
        &[],
        &[
            &tc(0, Some("a"), Some("read"), Some("{}")),
            &tc(1, Some("b"), Some("write"), Some("{\"text\":\"abc")),
            &finish("length"),
            "[DONE]",
        ],
    )
    .expect("parse");
    assert_eq!(
        events,
        vec![
            started("a", "read"),
            ResponseEvent::ToolCall(call("a", "read", "{}")),
            started("b", "write"),
            ResponseEvent::Completed {
                usage: None,
                stop_reason: StopReason::Length,
                incomplete_tool_call: Some("write".into()),
            },
        ]
    );
}

#[test]
fn freeform_calls_are_unwrapped() {
    let events = parse(
        &["apply_patch"],
        &[
            &tc(
                0,
                Some("p"),
                Some("apply_patch"),
                Some("{\"input\":\"*** Begin Patch\\n\"}"),
            ),
            &finish("tool_calls"),
            "[DONE]",
        ],
    )
    .expect("parse");
    assert_eq!(
        events[1],
        ResponseEvent::ToolCall(ToolCall {
            id: "p".into(),
            name: "apply_patch".into(),
            arguments: "*** Begin Patch\n".into(),
            kind: ToolCallKind::Freeform,
        })
    );
}

#[test]
fn done_without_finish_reason_still_completes() {
    let events = parse(
        &[],
        &[
            r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#,
            "[DONE]",
        ],
    )
    .expect("parse");
    assert_eq!(
        events,
        vec![
            ResponseEvent::TextDelta("x".into()),
            completed(StopReason::Stop)
        ]
    );
}

#[test]
fn choices_null_and_other_choice_indexes_are_ignored() {
    let events = parse(
        &[],
        &[
            r#"{"choices":null,"usage":null}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"other"}}]}"#,
            &finish("stop"),
            "[DONE]",
        ],
    )
    .expect("parse");
    assert_eq!(events, vec![completed(StopReason::Stop)]);
}

#[test]
fn error_payload_is_an_error() {
    let err = parse(
        &[],
        &[r#"{"error":{"message":"Rate limit in stream","code":429}}"#],
    )
    .expect_err("error payload");
    assert!(err.contains("Rate limit in stream"), "{err}");
}

#[test]
fn malformed_chunk_names_the_problem() {
    let err = parse(&[], &[r#"{"choices":[{"delta":"#]).expect_err("malformed");
    assert!(err.contains("malformed chunk"), "{err}");
    assert!(err.contains(r#"{"choices":[{"delta":"#), "{err}");
}

#[tokio::test]
async fn wire_captures_split_at_every_byte_give_identical_events() {
    assert_split_anywhere_decodes_alike(
        Framing::Sse,
        || ChunkParser::new(Vec::new()),
        &[
            include_str!("../../../../tests/fixtures/sse/openai_usage.txt"),
            include_str!("../../../../tests/fixtures/sse/openrouter.txt"),
        ],
        false,
    )
    .await;
}

#[test]
fn bad_config_fails_at_construction() {
    let mut info = ProviderInfo::new("x", "not a url", super::super::WireApi::Chat);
    assert!(ChatCompletions::new(info.clone()).is_err());
    info.base_url = "http://127.0.0.1:1/v1".into();
    info.http_headers.insert("bad header".into(), "v".into());
    let err = ChatCompletions::new(info).err().expect("bad header");
    assert!(err.to_string().contains("bad header"), "{err}");
}

#[test]
fn a_call_is_emitted_when_the_next_begins_and_only_when_it_is_whole() {
    let events = parse(
        &[],
        &[
            // `a` in two pieces, then `b` begins: `a` is whole, out it goes.
            &tc(0, Some("a"), Some("read"), Some("{\"path\":")),
            &tc(0, None, None, Some("\"x\"}")),
            &tc(1, Some("b"), Some("read"), Some("{\"path\":\"y\"")),
            // `b` is not whole when `c` begins (a server that left it
            // open): it and everything after it wait for the finish.
            &tc(2, Some("c"), Some("read"), Some("{}")),
            &tc(1, None, None, Some("}")),
            &finish("tool_calls"),
            "[DONE]",
        ],
    )
    .expect("parse");
    assert_eq!(
        events,
        vec![
            started("a", "read"),
            ResponseEvent::ToolCall(call("a", "read", "{\"path\":\"x\"}")),
            started("b", "read"),
            started("c", "read"),
            ResponseEvent::ToolCall(call("b", "read", "{\"path\":\"y\"}")),
            ResponseEvent::ToolCall(call("c", "read", "{}")),
            completed(StopReason::ToolCalls),
        ]
    );
}

#[test]
fn images_are_data_url_parts_of_user_messages() {
    let input = crate::test_support::with_images();
    let body = body_json(&request(&input, &[]));
    let messages = body["messages"].as_array().unwrap();
    // system, user (text + image), assistant call, tool, user (tool's image), assistant
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,BASE64-shot.png"}},
        ])
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(
        messages[3]["content"], "viewed",
        "a tool message holds text only"
    );
    assert_eq!(messages[4]["role"], "user");
    assert_eq!(
        messages[4]["content"][1]["image_url"]["url"],
        "data:image/png;base64,BASE64-tool.png"
    );
    assert_eq!(messages[5]["role"], "assistant");
}
