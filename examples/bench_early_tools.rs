//! Benchmark of read-only calls that start while the response streams
//! (docs/performance.md, "Tools while the model streams").
//!
//! The engine runs in this process against the loopback mock (real HTTP
//! and SSE, TCP_NODELAY) speaking the Responses API. The first response
//! streams three `read_file` calls `--gap` ms apart (and ends `--gap` ms
//! after the last); the second answers "done". Each run measures, from the
//! moment the engine received the first call's item: when that call's
//! result was ready (the tool returned), when its `item.completed` event
//! came, and the whole turn. Runs alternate between early start on and
//! off (`Features::early_tools`, off = the behaviour before it), with the
//! plain `read_file` and with a `read_file` that takes `--slow` ms more
//! (a read from a network mount or an MCP server). Every pair of runs
//! checks that the request after the calls is byte for byte the same.
//!
//! cargo run --profile dist --example bench_early_tools -- [--runs N] [--gap MS] [--slow MS]

#[path = "../tests/it/common/images.rs"]
#[allow(dead_code)]
mod images;
#[path = "../tests/it/common/mock.rs"]
#[allow(dead_code)]
mod mock;
#[path = "../tests/it/common/web_search.rs"]
#[allow(dead_code)]
mod web_search;
#[path = "../tests/it/common/wire_anthropic.rs"]
#[allow(dead_code)]
mod wire_anthropic;
#[path = "../tests/it/common/wire_chat.rs"]
#[allow(dead_code)]
mod wire_chat;
#[path = "../tests/it/common/wire_ollama.rs"]
#[allow(dead_code)]
mod wire_ollama;
#[path = "../tests/it/common/wire_responses.rs"]
#[allow(dead_code)]
mod wire_responses;

use cogni::agent::{start_session_with_provider, SessionConfig};
use cogni::protocol::{AgentEvent, EditTool, Item};
use cogni::provider::{
    ModelRequest, Provider, ProviderInfo, ResponseEvent, ResponseStream, WireApi,
};
use cogni::tools::{Tool, ToolConfig, ToolContext, ToolInput, ToolRegistry, ToolResult};
use futures::future::BoxFuture;
use futures::StreamExt;
use mock::{MockResponse, MockServer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When things happened, by name.
type Marks = Arc<Mutex<HashMap<String, Instant>>>;

fn mark(marks: &Marks, name: String) {
    marks
        .lock()
        .unwrap()
        .entry(name)
        .or_insert_with(Instant::now);
}

/// The real provider, noting when each call's item arrives.
struct Noting {
    inner: Arc<dyn Provider>,
    marks: Marks,
}

impl Provider for Noting {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        let marks = self.marks.clone();
        Box::pin(self.inner.stream(request).inspect(move |event| {
            if let Ok(ResponseEvent::ToolCall(call)) = event {
                mark(&marks, format!("item {}", call.id));
            }
        }))
    }
}

/// A tool, `extra` slower, noting when each call (by its `path`) returned.
struct Timed {
    tool: Arc<dyn Tool>,
    extra: Duration,
    marks: Marks,
}

impl Tool for Timed {
    fn spec(&self) -> cogni::protocol::ToolSpec {
        self.tool.spec()
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let path = match &input {
                ToolInput::Json(v) => v["path"].as_str().unwrap_or("").to_string(),
                ToolInput::Text(_) => String::new(),
            };
            if !self.extra.is_zero() {
                tokio::time::sleep(self.extra).await;
            }
            let result = self.tool.run(input, ctx).await;
            mark(&self.marks, format!("result {path}"));
            result
        })
    }
}

struct Figures {
    ready: Duration,
    completed: Duration,
    turn: Duration,
    body: Vec<u8>,
}

async fn one_run(dir: &std::path::Path, early: bool, gap: Duration, slow: Duration) -> Figures {
    let server = MockServer::start();
    let mut first = MockResponse::sse([wire_responses::created()]);
    for (id, path) in [
        ("call_a", "a.txt"),
        ("call_b", "b.txt"),
        ("call_c", "c.txt"),
    ] {
        first = first
            .chunks(wire_responses::function_call(
                id,
                "read_file",
                &format!(r#"{{"path":"{path}"}}"#),
            ))
            .delay(gap);
    }
    server.enqueue(first.chunk(wire_responses::completed(10, 5, 0)));
    server.enqueue(wire_responses::text_response("done"));

    let mut info = ProviderInfo::new("openai", &server.base_url(), WireApi::Responses);
    info.default_model = Some("gpt-4.1".into());
    let mut config = SessionConfig::new(info.clone(), dir.to_path_buf());
    config.features.early_tools = early;
    let marks: Marks = Arc::default();
    let provider = Arc::new(Noting {
        inner: cogni::provider::create(&info).expect("provider"),
        marks: marks.clone(),
    });
    let mut session = start_session_with_provider(config, provider).expect("session");
    let builtins = ToolRegistry::from_config(&ToolConfig::default(), EditTool::None).unwrap();
    let read_file = builtins
        .entries()
        .find(|(spec, _)| spec.name == "read_file")
        .map(|(_, tool)| tool.clone())
        .expect("read_file");
    let mut tools = ToolRegistry::default();
    tools.register(Arc::new(Timed {
        tool: read_file,
        extra: slow,
        marks: marks.clone(),
    }));
    session.set_tools(tools);

    let events = marks.clone();
    let sink = move |event: AgentEvent| {
        if let AgentEvent::ItemCompleted {
            item: Item::ToolCall { id, .. },
        } = event
        {
            mark(&events, format!("completed {id}"));
        }
    };
    let started = Instant::now();
    session
        .run_turn("Read a, b and c.", &sink)
        .await
        .expect("turn");
    let turn = started.elapsed();
    server.assert_invariants();
    let marks = marks.lock().unwrap();
    let item = marks["item call_a"];
    Figures {
        ready: marks["result a.txt"] - item,
        completed: marks["completed call_a"] - item,
        turn,
        body: server.requests()[1].body.clone(),
    }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut runs = 10usize;
    let mut gap = 100u64;
    let mut slow = 150u64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok()).expect("a number");
        match arg.as_str() {
            "--runs" => runs = value as usize,
            "--gap" => gap = value,
            "--slow" => slow = value,
            other => panic!("unknown option {other}"),
        }
    }
    let gap = Duration::from_millis(gap);
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in [
        ("a.txt", "alpha\n"),
        ("b.txt", "beta\n"),
        ("c.txt", "gamma\n"),
    ] {
        std::fs::write(dir.path().join(name), text).expect("file");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "three read_file calls {} ms apart, {runs} runs each, medians in ms: from the first call's item to its result and to its item.completed, and the whole turn",
        gap.as_millis()
    );
    println!("| read_file | early start | to its result | to its item.completed | whole turn |");
    println!("|---|---|---|---|---|");
    for extra in [0, slow] {
        let extra = Duration::from_millis(extra);
        let mut figures: HashMap<bool, Vec<Figures>> = HashMap::new();
        for _ in 0..runs {
            for early in [false, true] {
                let run = runtime.block_on(one_run(dir.path(), early, gap, extra));
                figures.entry(early).or_default().push(run);
            }
            assert!(
                figures[&false].last().unwrap().body == figures[&true].last().unwrap().body,
                "the requests after the calls differ"
            );
        }
        for early in [false, true] {
            let f = &figures[&early];
            println!(
                "| {} | {} | {} | {} | {} |",
                if extra.is_zero() {
                    "as is".to_string()
                } else {
                    format!("+{} ms", extra.as_millis())
                },
                if early { "on" } else { "off (before)" },
                ms(median(f.iter().map(|f| f.ready).collect())),
                ms(median(f.iter().map(|f| f.completed).collect())),
                ms(median(f.iter().map(|f| f.turn).collect())),
            );
        }
    }
}
