//! The system prompt on the wire: on every wire API, the system part of
//! every request of a session (tool calls included) is byte-identical, so
//! the provider's prompt cache keeps working; an environment change
//! changes it once, and it stays stable after that.

use crate::common::mock::{chat, MockResponse, MockServer};
use crate::common::{wire_anthropic, wire_ollama, wire_responses};
use cogni::agent::{start_session, SessionConfig};
use cogni::protocol::AgentEvent;
use cogni::provider::{ProviderInfo, WireApi};
use serde_json::{json, Value};

/// One wire API as this test drives it.
struct Wire {
    wire: WireApi,
    model: &'static str,
    /// `base_url` is the server root (Ollama), not `/v1`.
    at_root: bool,
    /// A response calling `read_file` on `path` (call id `id`).
    read_call: fn(id: &str, path: &str) -> MockResponse,
    text: fn(&str) -> MockResponse,
    /// The system part of a request body, as the provider caches it.
    system: fn(&Value) -> Value,
}

fn read_args(path: &str) -> String {
    json!({ "path": path }).to_string()
}

const WIRES: [Wire; 4] = [
    Wire {
        wire: WireApi::Chat,
        model: "gpt-4.1",
        at_root: false,
        read_call: |id, path| chat::tool_calls_response(&[(id, "read_file", &read_args(path))]),
        text: chat::text_response,
        system: |body| body["messages"][0].clone(),
    },
    Wire {
        wire: WireApi::Responses,
        model: "gpt-4.1",
        at_root: false,
        read_call: |id, path| {
            wire_responses::tool_calls_response(&[(id, "read_file", &read_args(path))])
        },
        text: wire_responses::text_response,
        system: |body| body["instructions"].clone(),
    },
    Wire {
        wire: WireApi::Anthropic,
        model: "claude-sonnet-4-5",
        at_root: false,
        read_call: |id, path| {
            wire_anthropic::tool_use_response(&[(id, "read_file", &read_args(path))])
        },
        text: wire_anthropic::text_response,
        system: |body| body["system"].clone(),
    },
    Wire {
        wire: WireApi::Ollama,
        model: "qwen2.5-coder:7b",
        at_root: true,
        read_call: |_, path| {
            wire_ollama::tool_calls_response(&[("read_file", json!({ "path": path }))])
        },
        text: wire_ollama::text_response,
        system: |body| body["messages"][0].clone(),
    },
];

#[tokio::test]
async fn the_system_prompt_is_byte_identical_across_requests_on_every_wire_api() {
    for api in &WIRES {
        let server = MockServer::start();
        // Turn 1: two tool calls, then an answer.
        server.enqueue((api.read_call)("call_1", "a.txt"));
        server.enqueue((api.read_call)("call_2", "b.txt"));
        server.enqueue((api.text)("read both"));
        // Turn 2 (after the environment changed): a call and an answer.
        server.enqueue((api.read_call)("call_3", "a.txt"));
        server.enqueue((api.text)("read again"));
        // Turn 3: an answer.
        server.enqueue((api.text)("done"));

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
        let base = if api.at_root {
            server.url()
        } else {
            server.base_url()
        };
        let info = ProviderInfo::new("mock", &base, api.wire);
        let mut config = SessionConfig::new(info, dir.path().to_path_buf());
        config.model = Some(api.model.into());
        let mut session = start_session(config).unwrap();
        let sink = |_: AgentEvent| {};

        session.run_turn("read both files", &sink).await.unwrap();
        let mut policy = session.context().sandbox_policy.clone();
        policy.network_access = true;
        assert!(session.update_environment(None, None, Some(policy)));
        session.run_turn("read a.txt again", &sink).await.unwrap();
        session.run_turn("thanks", &sink).await.unwrap();
        server.assert_invariants();
        assert_eq!(server.pending_responses(), 0, "{:?}", api.wire);

        let systems: Vec<Value> = server
            .requests()
            .iter()
            .map(|r| (api.system)(r.body_json()))
            .collect();
        assert_eq!(systems.len(), 6, "{:?}", api.wire);
        let before = systems[0].to_string();
        let after = systems[3].to_string();
        assert!(
            before.contains("# Runtime") && before.contains("Network: off"),
            "{:?}: the system part carries the system prompt: {before}",
            api.wire
        );
        assert!(after.contains("Network: on"), "{:?}: {after}", api.wire);
        for (n, system) in systems.iter().enumerate() {
            let expected = if n < 3 { &before } else { &after };
            assert_eq!(
                &system.to_string(),
                expected,
                "{:?}: request {n} changed the system part",
                api.wire
            );
        }
        assert!(
            holds(&systems[3], session.context().system_prompt.text()),
            "{:?}: the prompt as built is the one sent: {after}",
            api.wire
        );
    }
}

/// Whether `text` is one of the strings in `value`.
fn holds(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s == text,
        Value::Array(items) => items.iter().any(|v| holds(v, text)),
        Value::Object(map) => map.values().any(|v| holds(v, text)),
        _ => false,
    }
}
