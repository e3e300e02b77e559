//! Embed the engine with an effect written as a closure and a middleware.
//!
//! The effect runs before each tool call and blocks any `shell` command
//! that deletes (`rm`): the model gets the reason as the call's output.
//! The middleware counts the turns it sees. One turn runs against an
//! OpenAI-compatible Chat Completions server (the base URL is the first
//! argument, for example the tests' loopback mock).
//!
//! cargo run -p cogni-core --example closure_effect -- http://127.0.0.1:PORT/v1 [DIR]

use cogni_core::effects::Point;
use cogni_core::protocol::{AgentEvent, EventSink, Item};
use cogni_core::provider::{ProviderInfo, WireApi};
use cogni_core::run::Next;
use cogni_core::{
    effect_fn, start_session, AgentError, Decision, Middleware, Phase, Session, SessionConfig,
    TurnResult,
};
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Counts the turns that pass through it.
#[derive(Default)]
struct TurnCounter(AtomicU32);

impl Middleware for TurnCounter {
    fn name(&self) -> &str {
        "turn-counter"
    }

    fn call<'a>(
        &'a self,
        session: &'a mut Session,
        input: String,
        sink: &'a dyn EventSink,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<TurnResult, AgentError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        next.run(session, input, sink)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args.next().ok_or("usage: closure_effect BASE_URL [DIR]")?;
    let dir = args
        .next()
        .map_or_else(std::env::current_dir, |d| Ok(d.into()))?;

    let mut provider = ProviderInfo::new("local", &base_url, WireApi::Chat);
    provider.default_model = Some("gpt-4.1".into());
    let mut session = start_session(SessionConfig::new(provider, dir))?;

    session.add_effect(effect_fn(
        "no-deletes",
        &[Phase::BeforeTool],
        |cx| match cx.point {
            Point::BeforeTool { call }
                if call.name == "shell" && call.arguments.contains("rm ") =>
            {
                Decision::Block("deleting files is not allowed here".into())
            }
            _ => Decision::Continue,
        },
    ));
    let counter = Arc::new(TurnCounter::default());
    session.add_middleware(counter.clone());

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
        .run_turn("Clean up the build directory.", &sink)
        .await?;
    println!("answer: {}", result.final_text);
    println!("turns counted: {}", counter.0.load(Ordering::Relaxed));
    Ok(())
}
