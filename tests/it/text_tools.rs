//! Tool calls written as text (`tool_call_mode = "text"`) through the real
//! binary against the loopback mock: fenced, bare and several blocks run
//! like native calls with their outputs sent back as text; a malformed
//! block and an unknown tool get an answer that says what to fix; the
//! request carries no `tools`, the same tool section every time, and the
//! streamed text never shows a block.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{chat, MockServer};
use crate::common::wire_ollama as ollama;
use serde_json::Value;

/// A workspace whose config points the `local` provider (Chat Completions,
/// unless `wire` says otherwise) at `server` with model `tiny` writing its
/// tool calls as text.
fn text_env(server: &MockServer, wire: &str, extra: &str) -> Env {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "provider = \"local\"\nmodel = \"tiny\"\n{extra}\n\
             [model_providers.local]\nbase_url = \"{}\"\nwire_api = \"{wire}\"\nretry_base_ms = 10\n\
             [model_families.tiny]\ninherit = \"llama\"\ntool_call_mode = \"text\"\n",
            if wire == "ollama" {
                server.url()
            } else {
                server.base_url()
            }
        ),
    )
    .unwrap();
    std::fs::write(env.work().join("a.txt"), "alpha says hi\n").unwrap();
    std::fs::write(env.work().join("b.txt"), "beta says bye\n").unwrap();
    env
}

/// `cogni run --json TASK`, which must succeed: its events.
fn run_json(env: &Env, task: &str) -> Vec<Value> {
    let out = env.cmd().args(["run", "--json", task]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    stdout_of(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The tool calls the events report as completed: (name, status, output).
fn tool_calls(events: &[Value]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "tool_call")
        .map(|e| {
            let item = &e["item"];
            let s = |k: &str| item[k].as_str().unwrap_or_default().to_string();
            (s("name"), s("status"), s("output"))
        })
        .collect()
}

/// Everything the events streamed as the agent's text.
fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "item.updated")
        .filter_map(|e| e["delta"].as_str())
        .collect()
}

/// The system prompt and the other messages of a Chat Completions request
/// as (role, content).
fn chat_messages(server: &MockServer, n: usize) -> (String, Vec<(String, String)>) {
    let request = &server.requests()[n];
    let body = request.body_json();
    assert!(body.get("tools").is_none(), "no API tools: {body}");
    assert!(body.get("parallel_tool_calls").is_none(), "{body}");
    let mut messages: Vec<(String, String)> = request
        .messages()
        .iter()
        .map(|m| {
            assert!(m.get("tool_calls").is_none(), "no native calls: {m}");
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let (role, system) = messages.remove(0);
    assert_eq!(role, "system");
    (system, messages)
}

fn no_raw_block(text: &str) {
    assert!(
        !text.contains("```json") && !text.contains("\"tool\""),
        "the block was shown: {text:?}"
    );
}

#[test]
fn a_fenced_call_runs_and_its_output_comes_back_as_text() {
    let server = MockServer::start();
    server.enqueue(chat::text_response(
        "I'll read it.\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n",
    ));
    server.enqueue(chat::text_response("Alpha says hi."));
    let env = text_env(&server, "chat", "");
    let events = run_json(&env, "what does a.txt say?");

    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].0.as_str(), calls[0].1.as_str()),
        ("read_file", "completed")
    );
    assert!(calls[0].2.contains("alpha says hi"), "{}", calls[0].2);
    let text = streamed_text(&events);
    assert_eq!(text, "I'll read it.\nAlpha says hi.");
    no_raw_block(&text);
    let done = events.last().unwrap();
    assert_eq!(done["type"], "turn.completed", "{done}");

    let (first_system, _) = chat_messages(&server, 0);
    assert!(first_system.contains("\n# Tool calls\n"), "{first_system}");
    assert!(first_system.contains("## read_file\n"), "{first_system}");
    assert!(
        first_system
            .contains("{\"tool\": \"TOOL_NAME\", \"arguments\": {\"ARGUMENT\": \"VALUE\"}}"),
        "{first_system}"
    );
    let (system, messages) = chat_messages(&server, 1);
    assert_eq!(
        system, first_system,
        "the same instructions on every request"
    );
    let n = messages.len();
    assert_eq!(messages[n - 2].0, "assistant");
    assert_eq!(
        messages[n - 2].1,
        "I'll read it.\n\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\":\"a.txt\"}}\n```"
    );
    assert_eq!(messages[n - 1].0, "user");
    assert!(
        messages[n - 1].1.starts_with("Output of `read_file`:\n"),
        "{}",
        messages[n - 1].1
    );
    assert!(messages[n - 1].1.contains("alpha says hi"));
    server.assert_invariants();
}

#[test]
fn a_bare_call_over_ollama_runs_too() {
    let server = MockServer::start();
    // Ollama's mock streams the answer a word at a time.
    server.enqueue(ollama::text_response(
        "Listing.\n{\"tool\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n",
    ));
    server.enqueue(ollama::text_response("Two files."));
    let env = text_env(&server, "ollama", "");
    let events = run_json(&env, "what is here?");
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "list_dir");
    assert!(
        calls[0].2.contains("a.txt") && calls[0].2.contains("b.txt"),
        "{}",
        calls[0].2
    );
    let text = streamed_text(&events);
    assert_eq!(text, "Listing.\nTwo files.");

    let body = server.requests()[1].body_json().clone();
    assert!(body.get("tools").is_none(), "{body}");
    let messages = body["messages"].as_array().unwrap();
    assert!(messages.iter().all(|m| m["role"] != "tool"), "{body}");
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .starts_with("Output of `list_dir`:\n"),
        "{last}"
    );
    server.assert_invariants();
}

#[test]
fn several_blocks_in_one_reply_run_in_order() {
    let server = MockServer::start();
    server.enqueue(chat::text_response(
        "Both files:\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```\nand\n```\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b.txt\"}}\n```\n{\"tool\": \"list_dir\", \"arguments\": {}}\n",
    ));
    server.enqueue(chat::text_response("Hi and bye."));
    let env = text_env(&server, "chat", "");
    let events = run_json(&env, "read both");
    let calls = tool_calls(&events);
    let names: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["read_file", "read_file", "list_dir"]);
    assert!(calls[0].2.contains("alpha") && calls[1].2.contains("beta"));
    let text = streamed_text(&events);
    assert_eq!(text, "Both files:\nand\nHi and bye.");

    let (_, messages) = chat_messages(&server, 1);
    let outputs = &messages.last().unwrap().1;
    let at = |s: &str| {
        outputs
            .find(s)
            .unwrap_or_else(|| panic!("{s:?} not in {outputs}"))
    };
    assert!(at("Output of call 1 (`read_file`):\n") < at("alpha says hi"));
    assert!(at("alpha says hi") < at("Output of call 2 (`read_file`):\n"));
    assert!(at("beta says bye") < at("Output of call 3 (`list_dir`):\n"));
    server.assert_invariants();
}

#[test]
fn a_malformed_block_gets_a_correction_and_an_unknown_tool_the_list() {
    let server = MockServer::start();
    server.enqueue(chat::text_response(
        "```json\n{\"tool\": \"read_file\" \"arguments\": {\"path\": \"a.txt\"}}\n```\n",
    ));
    server.enqueue(chat::text_response(
        "```json\n{\"tool\": \"frobnicate\", \"arguments\": {}}\n```\n",
    ));
    server.enqueue(chat::text_response("I give up."));
    // Neither is asked about, even when everything that may change
    // something would be.
    let env = text_env(&server, "chat", "approval_policy = \"untrusted\"");
    let events = run_json(&env, "read a.txt");
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        (calls[0].0.as_str(), calls[0].1.as_str()),
        ("invalid_tool_call", "failed")
    );
    assert_eq!(
        (calls[1].0.as_str(), calls[1].1.as_str()),
        ("frobnicate", "failed")
    );
    assert!(
        !events.iter().any(|e| e["type"] == "approval"),
        "nothing to approve"
    );
    no_raw_block(&streamed_text(&events));

    let (_, messages) = chat_messages(&server, 1);
    let n = messages.len();
    assert_eq!(
        messages[n - 2].1,
        "```json\n{\"tool\": \"read_file\" \"arguments\": {\"path\": \"a.txt\"}}\n```\n",
        "the model sees the block as it wrote it"
    );
    let correction = &messages[n - 1].1;
    assert!(
        correction.starts_with(
            "Your tool call block could not be read: it is not valid JSON: expected `,` or `}` at line 1 column 22. Nothing was run."
        ),
        "{correction}"
    );
    assert!(
        correction.contains("{\"tool\": \"TOOL_NAME\""),
        "{correction}"
    );

    let (_, messages) = chat_messages(&server, 2);
    let answer = &messages.last().unwrap().1;
    assert!(
        answer.starts_with(
            "Output of `frobnicate` (failed):\nunknown tool `frobnicate`; available tools: shell, "
        ),
        "{answer}"
    );
    assert!(answer.contains("read_file"), "{answer}");
    server.assert_invariants();
}

#[test]
fn a_bad_tool_call_mode_is_a_config_error_naming_the_key() {
    let server = MockServer::start();
    let env = text_env(&server, "chat", "");
    let path = env.dir.path().join("home/config.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        config.replace("tool_call_mode = \"text\"", "tool_call_mode = \"json\""),
    )
    .unwrap();
    let out = env.cmd().args(["run", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("tool_call_mode"), "{err}");
    assert!(err.contains("`native`") && err.contains("`text`"), "{err}");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_fenced_call_runs_over_the_anthropic_and_responses_wires_too() {
    use crate::common::{wire_anthropic as anthropic, wire_responses as responses};
    let reply =
        "Reading.\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"b.txt\"}}\n```\n";
    for wire in ["anthropic", "responses"] {
        let server = MockServer::start();
        let (first, second) = match wire {
            "anthropic" => (
                anthropic::text_response(reply),
                anthropic::text_response("Beta says bye."),
            ),
            _ => (
                responses::text_response(reply),
                responses::text_response("Beta says bye."),
            ),
        };
        server.enqueue(first);
        server.enqueue(second);
        let env = text_env(&server, wire, "");
        let events = run_json(&env, "what does b.txt say?");
        let calls = tool_calls(&events);
        assert_eq!(calls.len(), 1, "{wire}: {calls:?}");
        assert_eq!(
            (calls[0].0.as_str(), calls[0].1.as_str()),
            ("read_file", "completed")
        );
        assert!(
            calls[0].2.contains("beta says bye"),
            "{wire}: {}",
            calls[0].2
        );
        let text = streamed_text(&events);
        assert_eq!(text, "Reading.\nBeta says bye.", "{wire}");
        no_raw_block(&text);

        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{wire}");
        let (a, b) = (requests[0].body_json(), requests[1].body_json());
        for body in [a, b] {
            assert!(body.get("tools").is_none(), "{wire}: no API tools: {body}");
        }
        // The tool section is in the instructions, the same both times.
        let instructions = |body: &Value| match wire {
            "anthropic" => body["system"].to_string(),
            _ => body["instructions"].to_string(),
        };
        assert!(instructions(a).contains("# Tool calls"), "{wire}: {a}");
        assert_eq!(instructions(a), instructions(b), "{wire}");
        // The output goes back as the user's text, not a tool result.
        let sent = b.to_string();
        assert!(sent.contains("Output of `read_file`:"), "{wire}: {sent}");
        assert!(sent.contains("beta says bye"), "{wire}");
        for native in ["tool_use", "tool_result", "function_call"] {
            assert!(!sent.contains(native), "{wire}: {native} in {sent}");
        }
        server.assert_invariants();
    }
}

#[test]
fn models_shows_the_mode_and_verbose_logs_the_request_as_sent() {
    let server = MockServer::start();
    server.enqueue(chat::text_response("Hello."));
    let env = text_env(&server, "chat", "verbose_max_bytes = 1000000");
    let out = env.cmd().args(["models", "--offline"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let table = stdout_of(&out);
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row: {table}"))
            .split_whitespace()
            .nth(4)
            .unwrap()
            .to_string()
    };
    assert!(table.lines().next().unwrap().contains(" calls "), "{table}");
    assert_eq!(row("tiny"), "text");
    assert_eq!(row("llama*"), "native");

    let out = env.cmd().args(["run", "--verbose", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    let logged: Vec<Value> = err
        .lines()
        .filter_map(|l| l.strip_prefix("[verbose] model request #1: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 1, "{err}");
    let prompt = &logged[0];
    assert_eq!(prompt["tools"], serde_json::json!([]), "{prompt}");
    let (sent, _) = chat_messages(&server, 0);
    assert!(sent.contains("# Tool calls"), "{sent}");
    assert_eq!(prompt["instructions"].as_str().unwrap(), sent);
}
