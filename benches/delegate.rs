//! What delegation costs: from the parent's `delegate_to_agent` call (its
//! `item.started` event) to the child's first model request, against the
//! child's own start (its session and system prompt), which is part of
//! that span and the child's own cost.
//!
//! `cargo bench --bench delegate`

use cogni::agent::delegate::{AgentOptions, AgentRegistry, DelegationLimits, Factory};
use cogni::agent::{start_session_with_provider, Session, SessionConfig};
use cogni::protocol::{AgentEvent, EditTool, Item};
use cogni::provider::scripted::{Script, ScriptedProvider};
use cogni::provider::{ModelRequest, Provider, ProviderInfo, ResponseStream, WireApi};
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SCRIPT: &str = r#"
[[turns]]
[[turns.tool_calls]]
name = "delegate_to_agent"
arguments = { agent = "helper", task = "say done" }
[[turns]]
text = "done"
[[turns]]
text = "ok"
"#;

/// The scripted model, noting when each request starts.
struct Timed {
    inner: ScriptedProvider,
    requests: Mutex<Vec<Instant>>,
}

impl Provider for Timed {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        if let Ok(mut r) = self.requests.lock() {
            r.push(Instant::now());
        }
        self.inner.stream(request)
    }
}

fn config(dir: &Path) -> SessionConfig {
    let mut info = ProviderInfo::new("scripted", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    let mut config = SessionConfig::new(info, dir.to_path_buf());
    config.tool_config.enabled = vec!["read_file".into(), "shell".into()];
    config.tool_config.edit_tool = Some(EditTool::None);
    config
}

fn session(dir: &Path) -> (Session, Arc<Timed>) {
    let provider = Arc::new(Timed {
        inner: ScriptedProvider::new(Script::parse(SCRIPT).expect("script")),
        requests: Mutex::default(),
    });
    let mut session = start_session_with_provider(config(dir), provider.clone()).expect("session");
    let registry = AgentRegistry::default();
    let base = config(dir);
    let factory: Factory = Arc::new(move || {
        let mut c = base.clone();
        c.agent = "helper".into();
        Ok(c)
    });
    registry.register("helper", "helps", "bench", AgentOptions::default(), factory);
    session.set_delegation(Arc::new(registry), DelegationLimits::default());
    (session, provider)
}

/// One delegation: the time from the call's start to the child's first
/// request.
fn delegate_once(rt: &tokio::runtime::Runtime, dir: &Path) -> Duration {
    let (mut s, provider) = session(dir);
    let called: Mutex<Option<Instant>> = Mutex::default();
    let sink = |e: AgentEvent| {
        if let AgentEvent::ItemStarted {
            item: Item::ToolCall { name, .. },
        } = &e
        {
            if name == "delegate_to_agent" {
                *called.lock().unwrap() = Some(Instant::now());
            }
        }
    };
    let result = rt.block_on(s.run_turn("delegate", &sink)).expect("turn");
    assert_eq!(result.final_text, "ok");
    let requests = provider.requests.lock().unwrap();
    let called = called.lock().unwrap().expect("the call started");
    requests[1].duration_since(called)
}

fn bench_delegate(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("delegation");
    group.bench_function("call_to_childs_first_request", |b| {
        b.iter_custom(|n| (0..n).map(|_| delegate_once(&rt, dir.path())).sum())
    });
    group.bench_function("childs_own_start", |b| {
        let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(
            Script::parse(SCRIPT).expect("script"),
        ));
        b.iter(|| {
            let mut c = config(dir.path());
            c.agent = "helper".into();
            start_session_with_provider(c, provider.clone()).expect("child")
        })
    });
    group.finish();
}

criterion_group!(benches, bench_delegate);
criterion_main!(benches);
