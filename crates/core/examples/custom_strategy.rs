//! Embed the engine with a context strategy of your own.
//!
//! `NewestItems` sends the initial context (instructions, environment) and
//! only the newest few items of the conversation; a reply is left out or
//! kept together with its calls and their outputs, never split. Past the
//! compaction limit it lets the engine summarize. Four turns run against
//! an OpenAI-compatible Chat Completions server (the base URL is the first
//! argument, for example the tests' loopback mock) in a directory with a
//! `notes.txt` (the second argument, else the current one); each time a
//! request leaves other items out, the `context_window` event is printed,
//! and at the end the line `/context` shows.
//!
//! cargo run -p cogni-core --example custom_strategy -- http://127.0.0.1:PORT/v1 [DIR]

use cogni_core::protocol::{AgentEvent, Content};
use cogni_core::provider::{ProviderInfo, WireApi};
use cogni_core::{start_session, AtLimit, ContextStrategy, Conversation, SessionConfig, View};

/// Sends the initial context and about `keep` of the newest items.
struct NewestItems {
    keep: usize,
}

impl ContextStrategy for NewestItems {
    fn name(&self) -> &str {
        "newest_items"
    }

    fn view(&mut self, conversation: &mut Conversation<'_>) -> View {
        let (items, initial) = (conversation.items(), conversation.initial());
        let mut start = items.len().saturating_sub(self.keep).max(initial);
        // Never start among a reply's calls and outputs (a request with an
        // orphaned call or output is refused), nor right after a reasoning
        // item (it belongs to what follows it): keep a little more.
        while start > initial
            && (matches!(
                items[start].content,
                Content::ToolCall(_) | Content::ToolOutput(_)
            ) || matches!(items[start - 1].content, Content::Reasoning(_)))
        {
            start -= 1;
        }
        View::starting_at(conversation, start)
    }

    fn at_limit(&mut self, _overflow: bool) -> AtLimit {
        // Even the newest items are too large: the engine summarizes.
        AtLimit::Summarize
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args.next().ok_or("usage: custom_strategy BASE_URL [DIR]")?;
    let dir: std::path::PathBuf = args
        .next()
        .map_or_else(std::env::current_dir, |d| Ok(d.into()))?;
    std::fs::write(dir.join("notes.txt"), "1. tests\n2. docs\n3. release\n")?;

    let mut provider = ProviderInfo::new("local", &base_url, WireApi::Chat);
    provider.default_model = Some("gpt-4.1".into());
    let mut session = start_session(SessionConfig::new(provider, dir))?;
    session.set_context_strategy(Box::new(NewestItems { keep: 4 }));

    let sink = |event: AgentEvent| {
        if let AgentEvent::ContextWindow {
            dropped_items,
            kept_items,
            ..
        } = event
        {
            println!("context window: {dropped_items} items left out, {kept_items} kept");
        }
    };
    for prompt in [
        "Read notes.txt.",
        "Which task comes first?",
        "And the last one?",
        "How many are there?",
    ] {
        let result = session.run_turn(prompt, &sink).await?;
        println!("answer: {}", result.final_text);
    }
    println!("context: {}", session.context_usage());
    Ok(())
}
