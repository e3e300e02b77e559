//! Images through the real binary against the loopback mock, for each wire
//! API: `--image` on `cogni run` reaches the model in the API's own shape
//! (the mock rejects what the API rejects), a screenshot larger than the
//! APIs take is scaled down and says so, `view_image` returns an image
//! where the API takes one, and a model that takes no images is refused
//! before any request.

use crate::cli::{stderr_of, stdout_of, Env};
use crate::common::images::{b64, png};
use crate::common::mock::{chat, MockResponse, MockServer};
use crate::common::{wire_anthropic, wire_ollama, wire_responses};
use serde_json::{json, Value};

/// One wire API: its name in config, a model of it that takes images,
/// and its answers.
struct Api {
    wire: &'static str,
    model: &'static str,
    text: fn(&str) -> MockResponse,
    view_image: fn(&str) -> MockResponse,
}

const APIS: &[Api] = &[
    Api {
        wire: "chat",
        model: "gpt-4o",
        text: chat::text_response,
        view_image: |args| chat::tool_calls_response(&[("call_1", "view_image", args)]),
    },
    Api {
        wire: "responses",
        model: "gpt-4.1",
        text: wire_responses::text_response,
        view_image: |args| wire_responses::tool_calls_response(&[("call_1", "view_image", args)]),
    },
    Api {
        wire: "anthropic",
        model: "claude-sonnet-4-5",
        text: wire_anthropic::text_response,
        view_image: |args| wire_anthropic::tool_use_response(&[("toolu_1", "view_image", args)]),
    },
    Api {
        wire: "ollama",
        model: "llava:13b",
        text: wire_ollama::text_response,
        view_image: |args| {
            let args: Value = serde_json::from_str(args).unwrap();
            wire_ollama::tool_calls_response(&[("view_image", args)])
        },
    },
];

/// A workspace whose provider is the mock speaking `api`.
fn env_for(server: &MockServer, api: &Api, model: &str) -> Env {
    let env = Env::new();
    let base = if api.wire == "ollama" {
        server.url()
    } else {
        server.base_url()
    };
    std::fs::write(
        env.dir.path().join("home/config.toml"),
        format!(
            "provider = \"mock\"\nmodel = \"{model}\"\napproval_policy = \"never\"\n\
             [model_providers.mock]\nbase_url = \"{base}\"\nwire_api = \"{}\"\n\
             env_key = \"MOCK_KEY\"\nretry_base_ms = 10\n\
             [model_families.\"llava:13b\"]\ninherit = \"llama\"\nsupports_images = true\n\
             [model_families.\"llama3:8b\"]\ninherit = \"llama\"\n",
            api.wire
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

/// The base64 of every image the request carries, wherever the API puts it.
fn images_in(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect(body, &mut found);
    found
}

fn collect(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::String(s) if s.starts_with("data:image/") => {
            found.push(s.split_once(',').map_or("", |(_, d)| d).to_string());
        }
        Value::Object(map) => {
            if let Some(Value::Array(images)) = map.get("images") {
                found.extend(images.iter().filter_map(|i| i.as_str().map(String::from)));
            }
            if map.get("type") == Some(&json!("base64")) {
                found.extend(map.get("data").and_then(Value::as_str).map(String::from));
            }
            for (key, v) in map {
                if key != "images" {
                    collect(v, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
        _ => {}
    }
}

#[test]
fn an_attached_image_reaches_every_api_in_its_own_shape() {
    for api in APIS {
        let server = MockServer::start();
        server.enqueue((api.text)("a red square"));
        let env = env_for(&server, api, api.model);
        let shot = png(64, 48);
        std::fs::write(env.work().join("shot.png"), &shot).unwrap();
        let out = run(&env, &["--image", "shot.png", "what is in it?"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            api.wire,
            stderr_of(&out)
        );
        assert!(stdout_of(&out).contains("a red square"), "{}", api.wire);
        assert!(
            stderr_of(&out).contains("shot.png (image/png, 64×48, "),
            "{}: {}",
            api.wire,
            stderr_of(&out)
        );
        server.assert_invariants();
        let body = server.requests()[0].body_json().clone();
        assert_eq!(images_in(&body), [b64(&shot)], "{}: {body}", api.wire);
    }
}

#[test]
fn a_screenshot_larger_than_the_apis_take_is_scaled_down_and_says_so() {
    let api = &APIS[2];
    let server = MockServer::start();
    server.enqueue((api.text)("seen"));
    let env = env_for(&server, api, api.model);
    // About 17 MB of pixels that do not compress: over Anthropic's 5 MB.
    std::fs::write(env.work().join("big.png"), png(3000, 2000)).unwrap();
    let out = run(&env, &["--image", "big.png", "look"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("big.png (image/"), "{err}");
    assert!(err.contains("downscaled from 3000×2000"), "{err}");
    server.assert_invariants();
    let body = server.requests()[0].body_json().clone();
    let sent = images_in(&body);
    assert_eq!(sent.len(), 1);
    let bytes =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &sent[0]).unwrap();
    let (w, h) = image::load_from_memory(&bytes)
        .map(|i| (i.width(), i.height()))
        .unwrap();
    assert_eq!((w, h), (1568, 1045));
}

#[test]
fn view_image_shows_the_model_an_image_where_each_api_takes_one() {
    for api in APIS {
        let server = MockServer::start();
        server.enqueue((api.view_image)(r#"{"path":"diagram.png"}"#));
        server.enqueue((api.text)("it is a diagram"));
        let env = env_for(&server, api, api.model);
        let diagram = png(30, 20);
        std::fs::write(env.work().join("diagram.png"), &diagram).unwrap();
        let out = run(&env, &["--json", "describe diagram.png"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            api.wire,
            stderr_of(&out)
        );
        server.assert_invariants();
        let first = server.requests()[0].body_json().clone();
        let tools = first
            .get("tools")
            .map(|t| t.to_string())
            .unwrap_or_default();
        assert!(
            tools.contains("view_image"),
            "{}: offered: {tools}",
            api.wire
        );
        let body = server.requests()[1].body_json().clone();
        assert_eq!(images_in(&body), [b64(&diagram)], "{}: {body}", api.wire);
        let output = stdout_of(&out);
        assert!(
            output.contains("the image is attached: diagram.png (image/png, 30×20"),
            "{}: {output}",
            api.wire
        );
        if api.wire == "anthropic" {
            // Inside the tool result, as the API takes it.
            let result = &body["messages"][2]["content"][0];
            assert_eq!(result["type"], "tool_result", "{body}");
            assert_eq!(result["content"][1]["type"], "image", "{body}");
        }
    }
}

#[test]
fn a_model_that_takes_no_images_is_refused_before_any_request() {
    let api = &APIS[3];
    let server = MockServer::start();
    let env = env_for(&server, api, "llama3:8b");
    std::fs::write(env.work().join("shot.png"), png(8, 8)).unwrap();
    let out = run(&env, &["--image", "shot.png", "look"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("model `llama3:8b` does not take images"),
        "{err}"
    );
    assert!(err.contains("supports_images = true"), "{err}");
    assert_eq!(server.request_count(), 0);
    // Nor is it offered view_image.
    server.enqueue((api.text)("ok"));
    let out = run(&env, &["hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let body = server.requests()[0].body_json().to_string();
    assert!(!body.contains("view_image"), "{body}");
    // The catalog says which take images.
    let out = env.cmd().args(["models", "--offline"]).output().unwrap();
    let table = stdout_of(&out);
    let images = |name: &str| {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row: {table}"));
        row.split_whitespace().nth(5).unwrap().to_string()
    };
    assert!(
        table.lines().next().unwrap().contains(" images "),
        "{table}"
    );
    assert_eq!(images("claude-*"), "yes");
    assert_eq!(images("llama*"), "no");
    assert_eq!(images("llama3:8b"), "no");
    assert_eq!(images("llava:13b"), "yes");
}

#[test]
fn what_is_not_an_image_is_a_usage_error_naming_it() {
    let api = &APIS[0];
    let server = MockServer::start();
    let env = env_for(&server, api, api.model);
    std::fs::write(env.work().join("notes.png"), "just text\n").unwrap();
    let out = run(&env, &["--image", "notes.png", "look"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(err.contains("--image notes.png"), "{err}");
    assert!(err.contains("not a PNG, JPEG, GIF or WebP image"), "{err}");
    let out = run(&env, &["--image", "missing.png", "look"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--image missing.png"));
    assert_eq!(server.request_count(), 0);
}

#[test]
fn the_mock_rejects_images_where_the_apis_do() {
    use crate::common::{wire_anthropic as anthropic, wire_chat};
    let png = format!("data:image/png;base64,{}", b64(&png(2, 2)));
    let part = json!({"type": "image_url", "image_url": {"url": png}});
    let in_assistant = json!({"model": "gpt-4o", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [part]},
    ]});
    let (message, _, _) = wire_chat::rule_broken(&in_assistant).expect("refused");
    assert!(
        message.contains("only allowed for messages with role 'user'"),
        "{message}"
    );
    let not_data = json!({"model": "gpt-4o", "messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
    ]});
    assert!(wire_chat::rule_broken(&not_data).is_some());
    let mislabelled = json!({"model": "claude", "max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64(&crate::common::images::png(2, 2))}}]},
    ]});
    let message = anthropic::rule_broken(&mislabelled).expect("refused");
    assert!(
        message.contains("does not match the provided media type"),
        "{message}"
    );
    let bad = json!({"model": "x", "messages": [{"role": "user", "content": "", "images": ["not base64!"]}]});
    assert!(wire_ollama::rule_broken(&bad).is_some());
    let in_output = json!({"model": "gpt-4.1", "input": [
        {"role": "assistant", "content": [{"type": "input_image", "image_url": png}]},
    ]});
    assert!(wire_responses::rule_broken(&in_output).is_some());
}
