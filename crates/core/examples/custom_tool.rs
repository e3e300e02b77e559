//! Embed the engine with a tool of your own.
//!
//! A `word_count` tool, offered to the model through a [`ToolBox`] beside
//! the built-in tools; one turn runs against an OpenAI-compatible Chat
//! Completions server (the base URL is the first argument, for example
//! the tests' loopback mock), and what the tool returned and the model's
//! answer are printed.
//!
//! cargo run -p cogni-core --example custom_tool -- http://127.0.0.1:PORT/v1 [DIR]

use cogni_core::protocol::{AgentEvent, Item, ToolFormat, ToolSpec};
use cogni_core::provider::{ProviderInfo, WireApi};
use cogni_core::tools::{Tool, ToolBox, ToolContext, ToolInput, ToolResult};
use cogni_core::{start_session, SessionConfig};
use futures::future::BoxFuture;
use std::sync::Arc;

/// Counts the words of a text.
struct WordCount;

impl Tool for WordCount {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "word_count".into(),
            description: "Count the words of a text.".into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                    "additionalProperties": false
                }),
            },
            // It changes nothing, so it may run beside other calls.
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let ToolInput::Json(args) = input else {
                return ToolResult::error("word_count takes JSON arguments");
            };
            match args["text"].as_str() {
                Some(text) => ToolResult::ok(text.split_whitespace().count().to_string()),
                None => ToolResult::error("`text` must be a string"),
            }
        })
    }
}

/// The example's tools as one group.
struct TextTools;

impl ToolBox for TextTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(WordCount)]
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args.next().ok_or("usage: custom_tool BASE_URL [DIR]")?;
    let dir = args
        .next()
        .map_or_else(std::env::current_dir, |d| Ok(d.into()))?;

    let mut provider = ProviderInfo::new("local", &base_url, WireApi::Chat);
    provider.default_model = Some("gpt-4.1".into());
    let mut session = start_session(SessionConfig::new(provider, dir))?;
    session.add_toolbox(&TextTools);

    // Events as they happen; here, the tool's output.
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
        .run_turn("How many words are in 'the quick brown fox'?", &sink)
        .await?;
    println!("answer: {}", result.final_text);
    println!("outcome: {:?}", result.outcome);
    Ok(())
}
