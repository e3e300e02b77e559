//! Embed an agent that delegates to another.
//!
//! A `reviewer` agent is registered with a factory that builds its
//! configuration (its own instructions, the same model here); the main
//! session gets the registry and offers the model `list_agents`,
//! `delegate_to_agent` and `spawn_agents`. The reviewer runs as a child
//! session with its own history; its answer comes back as the tool's
//! output. Both talk to an OpenAI-compatible Chat Completions server (the
//! base URL is the first argument, for example the tests' loopback mock).
//!
//! cargo run -p cogni-core --example delegating_agent -- http://127.0.0.1:PORT/v1 [DIR]

use cogni_core::delegate::{AgentOptions, AgentRegistry, DelegationLimits};
use cogni_core::protocol::{AgentEvent, Item};
use cogni_core::provider::{ProviderInfo, WireApi};
use cogni_core::{start_session, SessionConfig};
use std::path::PathBuf;
use std::sync::Arc;

fn config(base_url: &str, dir: PathBuf) -> SessionConfig {
    let mut provider = ProviderInfo::new("local", base_url, WireApi::Chat);
    provider.default_model = Some("gpt-4.1".into());
    SessionConfig::new(provider, dir)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args
        .next()
        .ok_or("usage: delegating_agent BASE_URL [DIR]")?;
    let dir: PathBuf = args
        .next()
        .map_or_else(std::env::current_dir, |d| Ok(d.into()))?;

    let registry = Arc::new(AgentRegistry::default());
    let (url, root) = (base_url.clone(), dir.clone());
    registry.register(
        "reviewer",
        "Reviews a change and says whether it is correct.",
        "example",
        AgentOptions::default(),
        Arc::new(move || {
            let mut child = config(&url, root.clone());
            child.developer_instructions =
                Some("You review changes. Answer with a verdict and one sentence.".into());
            Ok(child)
        }),
    );

    let mut session = start_session(config(&base_url, dir))?;
    session.set_delegation(registry, DelegationLimits::default());

    let sink = |event: AgentEvent| {
        if let AgentEvent::ItemCompleted {
            item:
                Item::ToolCall {
                    name,
                    output: Some(output),
                    ..
                },
        } = &event
        {
            println!("tool output: {name} -> {output}");
        }
    };
    let result = session
        .run_turn(
            "Ask the reviewer whether renaming `run` to `start` is safe.",
            &sink,
        )
        .await?;
    println!("answer: {}", result.final_text);
    Ok(())
}
