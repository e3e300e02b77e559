//! `[tools] web_search` through the real binary against the loopback mock:
//! the provider's own search is offered in each API's shape, its result
//! blocks come back in the next request exactly as the API sent them (the
//! mock rejects a request that drops or alters them, as the real APIs
//! do), searches and citations are reported as events and on the
//! terminal, each search is priced, Anthropic's `pause_turn` is continued,
//! and an API without a search of its own is refused before any request.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::mock::{MockResponse, MockServer};
use crate::common::web_search::{self as web, Page};
use crate::common::{wire_anthropic, wire_responses};
use serde_json::{json, Value};

const PAGES: &[Page] = &[
    Page {
        url: "https://blog.rust-lang.org/2026/10/30/Rust-1.91.0/",
        title: "Announcing Rust 1.91.0",
    },
    Page {
        url: "https://doc.rust-lang.org/releases.html",
        title: "Rust release notes",
    },
];

const QUERY: &str = "latest stable Rust release";
const ANSWER: &str = "Rust 1.91.0 is the latest stable release.";
const READ: (&str, &str, &str) = ("call_1", "read_file", "{\"path\":\"notes.txt\"}");

/// Anthropic's answer with the one search of these tests (`srvtoolu_1`,
/// [`QUERY`], [`PAGES`]): `answer`, then `call`, stopping for `stop`.
fn anthropic_search(answer: &str, call: web::Call<'_>, stop: &str) -> MockResponse {
    web::anthropic_search_response("srvtoolu_1", QUERY, PAGES, answer, call, stop)
}

/// A workspace whose provider is the mock speaking `wire`, web search on.
fn env_for(server: &MockServer, wire: &str, model: &str, extra: &str) -> Env {
    let env = Env::new();
    std::fs::write(env.work().join("notes.txt"), "pinned to 1.89\n").unwrap();
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "provider = \"mock\"\nmodel = \"{model}\"\napproval_policy = \"never\"\n\
             [tools]\nweb_search = true\n\
             [model_providers.mock]\nbase_url = \"{}\"\nwire_api = \"{wire}\"\n\
             env_key = \"MOCK_KEY\"\nretry_base_ms = 10\n{extra}",
            server.base_url()
        ),
    )
    .unwrap();
    env
}

fn run(env: &Env, args: &[&str]) -> std::process::Output {
    env.cmd()
        .env("MOCK_KEY", "sk-mock")
        .args(["run", "--no-sandbox"])
        .args(args)
        .output()
        .unwrap()
}

/// The JSON events of a `--json` run.
fn events(out: &std::process::Output) -> Vec<Value> {
    stdout_of(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// What both APIs report of the search: one `web_search` event with the
/// query and pages, a citation of the first page, and the search counted
/// in the usage and priced into the cost.
fn assert_reported(out: &std::process::Output) {
    assert!(out.status.success(), "{}", stderr_of(out));
    let events = events(out);
    let searches = of_type(&events, "web_search");
    assert_eq!(searches.len(), 1, "{events:?}");
    assert_eq!(searches[0]["query"], QUERY);
    assert_eq!(searches[0]["results"][0]["url"], PAGES[0].url);
    assert_eq!(searches[0]["results"].as_array().unwrap().len(), 2);
    let citations = of_type(&events, "citation");
    assert_eq!(citations.len(), 1, "{events:?}");
    assert_eq!(citations[0]["url"], PAGES[0].url);
    assert_eq!(citations[0]["title"], PAGES[0].title);
    let first = of_type(&events, "model.response")[0];
    assert_eq!(first["usage"]["web_searches"], 1, "{first}");
    let turn = of_type(&events, "turn.completed")[0];
    assert_eq!(turn["usage"]["web_searches"], 1, "{turn}");
}

#[test]
fn responses_search_is_offered_reported_and_sent_back_without_its_id() {
    let server = MockServer::start();
    server.enqueue(web::responses_search_response(
        "ws_1",
        QUERY,
        PAGES,
        ANSWER,
        Some(READ),
    ));
    server.enqueue(wire_responses::text_response("Bump it to 1.91."));
    let env = env_for(&server, "responses", "gpt-4.1", "");
    let out = run(&env, &["--json", "which Rust should we pin?"]);
    assert_reported(&out);
    server.assert_invariants();

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].body_json();
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "web_search"})),
        "{}",
        first["tools"]
    );
    assert!(first["include"]
        .as_array()
        .unwrap()
        .contains(&json!("web_search_call.action.sources")));
    // The search, as it came but for its id, before the answer it led to.
    let input = requests[1].body_json()["input"].as_array().unwrap().clone();
    let at = input
        .iter()
        .position(|i| i["type"] == "web_search_call")
        .expect("the search is sent back");
    let mut expected = web::responses_item("ws_1", QUERY, PAGES);
    expected.as_object_mut().unwrap().remove("id");
    assert_eq!(input[at], expected);
    assert_eq!(input[at + 1]["role"], "assistant");
}

#[test]
fn anthropic_search_blocks_come_back_verbatim_and_the_terminal_lists_sources() {
    let server = MockServer::start();
    server.enqueue(anthropic_search(ANSWER, Some(READ), "end_turn"));
    server.enqueue(wire_anthropic::text_response("Bump it to 1.91."));
    let env = env_for(&server, "anthropic", "claude-sonnet-4-5", "");
    let out = run(&env, &["--json", "which Rust should we pin?"]);
    assert_reported(&out);
    server.assert_invariants();

    let requests = server.requests();
    let first = requests[0].body_json();
    assert_eq!(
        first["tools"][0],
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
    );
    // The cache breakpoint stays on the last of cogni's own tools.
    let last = first["tools"].as_array().unwrap().last().unwrap().clone();
    assert!(last.get("cache_control").is_some(), "{last}");
    let messages = requests[1].body_json()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let assistant = &messages[messages.len() - 2]["content"];
    let blocks = web::anthropic_blocks("srvtoolu_1", QUERY, PAGES);
    let kinds: Vec<&str> = assistant
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "server_tool_use",
            "web_search_tool_result",
            "text",
            "tool_use"
        ]
    );
    assert_eq!(assistant[0], blocks[0]);
    assert_eq!(assistant[1], blocks[1]);

    // People see the search and, after the answer, the page it cites.
    let server = MockServer::start();
    server.enqueue(anthropic_search(ANSWER, None, "end_turn"));
    let env = env_for(&server, "anthropic", "claude-sonnet-4-5", "");
    let out = run(&env, &["which Rust is current?"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains(
            "⌕ web search \"latest stable Rust release\": 2 results · blog.rust-lang.org, doc.rust-lang.org"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "sources:\n  [1] Announcing Rust 1.91.0 · {}",
            PAGES[0].url
        )),
        "{stderr}"
    );
    assert!(stdout_of(&out).contains(ANSWER));
}

#[test]
fn a_paused_anthropic_turn_is_sent_again_to_go_on() {
    let server = MockServer::start();
    server.enqueue(anthropic_search("Still looking.", None, "pause_turn"));
    server.enqueue(wire_anthropic::text_response(ANSWER));
    let env = env_for(&server, "anthropic", "claude-sonnet-4-5", "");
    let out = run(&env, &["--json", "which Rust is current?"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    server.assert_invariants();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The paused response is the last message: the API continues it.
    let messages = requests[1].body_json()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"][0]["type"], "server_tool_use");
    let events = events(&out);
    let turn = of_type(&events, "turn.completed")[0];
    assert_eq!(turn["outcome"], "done");
    assert_eq!(turn["final_text"], ANSWER);
}

#[test]
fn each_search_counts_against_the_cost_budget() {
    let server = MockServer::start();
    server.enqueue(anthropic_search(ANSWER, None, "end_turn"));
    // Free tokens, a dollar a search: the one search is the whole cost.
    let env = env_for(
        &server,
        "anthropic",
        "claude-sonnet-4-5",
        "[model_families.\"claude-sonnet-4-5\"]\ninherit = \"claude\"\ninput_price = 0\n\
         output_price = 0\ncached_input_price = 0\ncache_write_price = 0\nweb_search_price = 1.0\n",
    );
    let out = run(&env, &["--json", "which Rust is current?"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let events = events(&out);
    let metrics = of_type(&events, "metrics");
    let cost = metrics.last().unwrap()["snapshot"]["session"]["cost_usd"]
        .as_f64()
        .unwrap();
    assert!((cost - 1.0).abs() < 1e-9, "{cost}");
}

#[test]
fn the_mock_rejects_a_search_sent_back_altered_or_dropped() {
    let blocks = web::anthropic_blocks("srvtoolu_1", QUERY, PAGES);
    let body = |content: Vec<Value>| {
        json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": content},
            {"role": "user", "content": "more"},
        ]})
    };
    let text = json!({"type": "text", "text": "answer"});
    let sent = body(vec![blocks[0].clone(), blocks[1].clone(), text.clone()]);
    assert_eq!(wire_anthropic::rule_broken(&sent), None);
    assert_eq!(web::dropped(&sent, &blocks[1]), None);

    let mut altered = blocks[1].clone();
    altered["content"][0]["encrypted_content"] = json!("EqSomethingElse");
    let broken = wire_anthropic::rule_broken(&body(vec![blocks[0].clone(), altered, text.clone()]));
    assert!(
        broken
            .as_deref()
            .is_some_and(|b| b.contains("encrypted_content")),
        "{broken:?}"
    );
    let orphan = wire_anthropic::rule_broken(&body(vec![blocks[0].clone(), text.clone()]));
    assert!(
        orphan.as_deref().is_some_and(|b| b.contains("srvtoolu_1")),
        "{orphan:?}"
    );
    let dropped = body(vec![text]);
    assert!(web::dropped(&dropped, &blocks[1]).is_some());

    let mut item = web::responses_item("ws_1", QUERY, PAGES);
    let with_id = json!({"input": [item.clone()]});
    let (message, _, _) = wire_responses::rule_broken(&with_id).expect("an id is refused");
    assert!(message.contains("not persisted"), "{message}");
    item.as_object_mut().unwrap().remove("id");
    assert_eq!(wire_responses::rule_broken(&json!({"input": [item]})), None);
}

#[test]
fn an_api_without_a_search_of_its_own_is_refused_before_any_request() {
    for wire in ["chat", "ollama"] {
        let server = MockServer::start();
        server.enqueue(MockResponse::error(500, "no request should be made"));
        let env = env_for(&server, wire, "gpt-4.1", "");
        let out = run(&env, &["hello"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
        let stderr = stderr_of(&out);
        assert!(
            stderr.contains("[tools] web_search = true")
                && stderr.contains("has no web search of its own"),
            "{stderr}"
        );
        assert_eq!(server.request_count(), 0);
    }
}
