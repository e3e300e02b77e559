//! Engine tests with a fake streaming provider and test tools.

use super::*;
use crate::limits::{Limit, TurnLimits};
use cogni_protocol::*;
use cogni_protocol::{ApprovalDecision, ApprovalRequest, Approver};
use cogni_provider::scripted::{Script, ScriptedProvider};
use cogni_provider::{
    ModelRequest, Provider, ProviderError, ProviderInfo, ResponseEvent, ResponseStream, WireApi,
};
use cogni_tools::{Tool, ToolContext, ToolInput, ToolRegistry, ToolResult};
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the fake provider saw in one request.
#[derive(Debug, Clone)]
struct Seen {
    instructions: String,
    input: Vec<HistoryItem>,
    tools: Vec<String>,
    parallel: bool,
    /// The whole request, as the provider got it.
    request: String,
}

/// Replays a script and records every request; asserts on each request
/// that every tool call in history has exactly one output.
struct Fake {
    inner: ScriptedProvider,
    seen: Mutex<Vec<Seen>>,
}

impl Fake {
    fn new(script: &str) -> Arc<Self> {
        Arc::new(Fake {
            inner: ScriptedProvider::new(Script::parse(script).unwrap()),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn assert_calls_answered(input: &[HistoryItem]) {
    for item in input {
        if let Content::ToolCall(call) = &item.content {
            let outputs = input
                .iter()
                .filter(|i| matches!(&i.content, Content::ToolOutput(o) if o.call_id == call.id))
                .count();
            assert_eq!(
                outputs, 1,
                "call {} has {outputs} outputs in {input:#?}",
                call.id
            );
        }
    }
}

impl Provider for Fake {
    fn id(&self) -> &str {
        "fake"
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        assert_calls_answered(request.input);
        self.seen.lock().unwrap().push(Seen {
            instructions: request.instructions.to_string(),
            input: request.input.to_vec(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            parallel: request.parallel_tool_calls,
            request: format!("{request:?}"),
        });
        self.inner.stream(request)
    }
}

/// A provider whose stream fails.
struct Broken;

impl Provider for Broken {
    fn id(&self) -> &str {
        "broken"
    }

    fn stream(&self, _request: &ModelRequest<'_>) -> ResponseStream {
        Box::pin(futures::stream::iter(vec![
            Ok(ResponseEvent::TextDelta("partial".into())),
            Err(ProviderError::Stream {
                provider: "broken".into(),
                model: "m".into(),
                message: "connection reset".into(),
            }),
        ]))
    }
}

/// Test tool: echoes its `text` argument; fails when `fail` is set. The
/// `sleep_ms` argument lets parallel tests overlap calls.
struct Echo {
    name: &'static str,
    read_only: bool,
    log: Arc<Mutex<Vec<String>>>,
}

impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "echo".into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({"type": "object"}),
            },
            read_only: self.read_only,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let ToolInput::Json(v) = input else {
                return ToolResult::error("expected json");
            };
            let text = v["text"]
                .as_str()
                .or(v["command"].as_str())
                .unwrap_or("")
                .to_string();
            // Fails the way a sandbox refusal looks unless run unsandboxed.
            if v["needs_full_access"] == true && ctx.sandbox.mode != SandboxMode::DangerFullAccess {
                self.log.lock().unwrap().push(format!("denied {text}"));
                return ToolResult::error("touch: cannot touch 'x': Permission denied");
            }
            self.log.lock().unwrap().push(format!("start {text}"));
            if let Some(ms) = v["sleep_ms"].as_u64() {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            }
            self.log.lock().unwrap().push(format!("end {text}"));
            if v["fail"].as_bool() == Some(true) {
                ToolResult::error(format!("failed: {text}"))
            } else {
                ToolResult::ok(format!("echo: {text}"))
            }
        })
    }
}

fn config() -> SessionConfig {
    let mut info = ProviderInfo::new("fake", "", WireApi::Scripted);
    info.default_model = Some("scripted".into());
    let mut c = SessionConfig::new(info, PathBuf::from(crate::tests_cwd()));
    c.tool_config.enabled = vec![];
    c.tool_config.edit_tool = Some(EditTool::None);
    c
}

struct Harness {
    session: Session,
    fake: Arc<Fake>,
    log: Arc<Mutex<Vec<String>>>,
    events: Arc<Mutex<Vec<AgentEvent>>>,
}

fn harness_with(script: &str, config: SessionConfig) -> Harness {
    let fake = Fake::new(script);
    let mut session = start_session_with_provider(config, fake.clone()).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(Echo {
        name: "shell",
        read_only: false,
        log: log.clone(),
    }));
    registry.register(Arc::new(Echo {
        name: "echo",
        read_only: false,
        log: log.clone(),
    }));
    registry.register(Arc::new(Echo {
        name: "look",
        read_only: true,
        log: log.clone(),
    }));
    session.set_tools(registry);
    Harness {
        session,
        fake,
        log,
        events: Arc::new(Mutex::new(Vec::new())),
    }
}

fn harness(script: &str) -> Harness {
    harness_with(script, config())
}

impl Harness {
    async fn run(&mut self, task: &str) -> Result<TurnResult, AgentError> {
        let events = self.events.clone();
        let sink = move |e: AgentEvent| events.lock().unwrap().push(e);
        self.session.run_turn(task, &sink).await
    }

    /// Run a task under `limits`, which must stop it with `limit`.
    async fn run_over_budget(&mut self, limits: TurnLimits, limit: Limit) -> TurnResult {
        self.session.set_limits(limits).unwrap();
        let r = self.run("x").await.unwrap();
        assert_eq!(
            (r.outcome.clone(), r.limit),
            (TurnOutcome::BudgetExceeded, Some(limit))
        );
        r
    }

    /// Tool calls that ran to their end.
    fn finished_tools(&self) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("end"))
            .count()
    }

    fn event_types(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// TurnContext::initial_context and environment diffs
// ---------------------------------------------------------------------------

#[cfg(unix)]
#[test]
fn initial_context_is_developer_then_agents_md_then_environment() {
    let mut c = config();
    c.developer_instructions = Some("dev rules".into());
    c.user_instructions = Some("use tabs".into());
    c.sandbox_policy.writable_roots = vec![PathBuf::from("/tmp/a")];
    let s = start_session_with_provider(c, Fake::new("")).unwrap();
    let h = s.history();
    assert_eq!(h.len(), 3);
    assert_eq!(
        (h[0].role, h[0].as_text()),
        (Role::Developer, Some("dev rules"))
    );
    assert_eq!(h[0].tag(), Some(MessageTag::DeveloperInstructions));
    assert_eq!(
        h[1].as_text().unwrap(),
        "# AGENTS.md instructions for /work/repo\n\n<INSTRUCTIONS>\nuse tabs\n</INSTRUCTIONS>"
    );
    assert_eq!(
        h[2].as_text().unwrap(),
        "<environment_context>\n  <cwd>/work/repo</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <writable_roots>/tmp/a</writable_roots>\n  <shell>/bin/bash</shell>\n</environment_context>"
    );
}

#[test]
fn initial_context_skips_missing_instructions() {
    let s = start_session_with_provider(config(), Fake::new("")).unwrap();
    assert_eq!(s.history().len(), 1);
    assert_eq!(s.history()[0].tag(), Some(MessageTag::Environment));
}

#[test]
fn environment_change_appends_a_diff_of_changed_fields_only() {
    let mut s = start_session_with_provider(config(), Fake::new("")).unwrap();
    assert!(!s.update_environment(Some(PathBuf::from(crate::tests_cwd())), None, None));
    assert_eq!(s.history().len(), 1);
    assert!(s.update_environment(
        Some(PathBuf::from("/work/other")),
        Some(ApprovalPolicy::Never),
        None
    ));
    assert_eq!(
        s.history().last().unwrap().as_text().unwrap(),
        "<environment_diff>\n  <cwd>/work/other</cwd>\n  <approval_policy>never</approval_policy>\n</environment_diff>"
    );
    let mut policy = s.context().sandbox_policy.clone();
    policy.network_access = true;
    assert!(s.update_environment(None, None, Some(policy)));
    assert_eq!(
        s.history().last().unwrap().as_text().unwrap(),
        "<environment_diff>\n  <network_access>enabled</network_access>\n</environment_diff>"
    );
}

// ---------------------------------------------------------------------------
// start_session validation
// ---------------------------------------------------------------------------

#[test]
fn start_session_fails_fast_on_invalid_config() {
    let check = |f: &dyn Fn(&mut SessionConfig), needle: &str| {
        let mut c = config();
        f(&mut c);
        let err = start_session_with_provider(c, Fake::new(""))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
    };
    check(
        &|c| c.model_override = Some("mystery-model".into()),
        "unknown model `mystery-model`",
    );
    check(&|c| c.cwd = PathBuf::from("relative"), "absolute");
    check(&|c| c.max_iterations = 0, "max_iterations");
    check(&|c| c.sampling.temperature = Some(3.0), "temperature");
    check(
        &|c| c.tool_config.enabled = vec!["nope".into()],
        "unknown tool `nope`",
    );
    check(
        &|c| c.output_schema = Some(serde_json::json!(1)),
        "output_schema",
    );
    check(
        &|c| {
            c.provider.env_key = Some("FAKE_KEY".into());
        },
        "$FAKE_KEY",
    );
}

#[test]
fn temperature_range_depends_on_the_wire_api() {
    let start = |wire: WireApi, temperature: f32, family: Option<f32>| {
        let mut c = config();
        c.provider.wire_api = wire;
        c.sampling.temperature = Some(temperature).filter(|_| family.is_none());
        if let Some(t) = family {
            c.model_families.insert(
                "scripted".into(),
                cogni_provider::model_family::FamilyOverride {
                    temperature: Some(t),
                    ..Default::default()
                },
            );
        }
        let checked = check_session_config(&c, &crate::limits::TurnLimits::default()).map(|_| ());
        let started = start_session_with_provider(c, Fake::new("")).map(|_| ());
        assert_eq!(
            checked.as_ref().err().map(ToString::to_string),
            started.as_ref().err().map(ToString::to_string),
            "check_session_config and start_session agree"
        );
        started
    };
    // Anthropic accepts 0..1, the OpenAI-style APIs 0..2.
    let err = start(WireApi::Anthropic, 1.5, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("between 0 and 1") && err.contains("wire_api = \"anthropic\""),
        "{err}"
    );
    assert!(start(WireApi::Anthropic, 1.0, None).is_ok());
    assert!(start(WireApi::Chat, 1.5, None).is_ok());
    assert!(start(WireApi::Responses, 1.5, None).is_ok());
    assert!(start(WireApi::Ollama, 1.5, None).is_ok());
    assert!(start(WireApi::Chat, 2.5, None).is_err());
    // A family's default temperature is checked the same way.
    let err = start(WireApi::Anthropic, 0.0, Some(1.2))
        .unwrap_err()
        .to_string();
    assert!(err.contains("between 0 and 1"), "{err}");
}

#[test]
fn model_override_wins_and_sampling_resolves_config_then_family() {
    let mut c = config();
    c.model = Some("gpt-4o".into());
    c.model_override = Some("claude-sonnet-4".into());
    c.model_families.insert(
        "claude-sonnet-4".into(),
        cogni_provider::model_family::FamilyOverride {
            temperature: Some(0.3),
            max_tokens: Some(1000),
            ..Default::default()
        },
    );
    c.sampling.max_tokens = Some(2000);
    let s = start_session_with_provider(c, Fake::new("")).unwrap();
    assert_eq!(s.context().model, "claude-sonnet-4");
    assert_eq!(s.context().sampling.temperature, Some(0.3));
    assert_eq!(s.context().sampling.max_tokens, Some(2000));
}

// ---------------------------------------------------------------------------
// build_prompt
// ---------------------------------------------------------------------------

fn ctx_with(f: impl FnOnce(&mut SessionConfig)) -> TurnContext {
    let mut c = config();
    f(&mut c);
    start_session_with_provider(c, Fake::new("")).unwrap().ctx
}

/// The identity section of the system prompt `build_prompt` sends, after
/// rebuilding it from `ctx` as it is now.
fn identity_sent(ctx: &mut TurnContext) -> String {
    ctx.rebuild_system_prompt();
    let instructions = build_prompt(ctx, &[]).instructions.into_owned();
    assert_eq!(instructions, ctx.system_prompt.text());
    let (name, identity) = ctx
        .system_prompt_builder(ctx.system_prompt.today())
        .sections()
        .remove(0);
    assert_eq!(name, "identity");
    assert!(instructions.starts_with(&format!("{identity}\n\n# Workspace\n")));
    identity
}

#[test]
fn prompt_instructions_override_wins_over_family_template() {
    let mut ctx = ctx_with(|c| c.base_instructions_override = Some("custom".into()));
    ctx.model_family.needs_special_apply_patch_instructions = false;
    assert_eq!(identity_sent(&mut ctx), "custom");
    let mut ctx = ctx_with(|_| {});
    ctx.model_family.needs_special_apply_patch_instructions = false;
    assert_eq!(
        identity_sent(&mut ctx),
        ctx.model_family.base_instructions_template.trim_end()
    );
}

#[test]
fn prompt_adds_apply_patch_instructions_only_when_needed() {
    let mut ctx = ctx_with(|c| c.base_instructions_override = Some("base".into()));
    ctx.tools.retain(|t| t.name != "apply_patch");
    ctx.model_family.needs_special_apply_patch_instructions = true;
    let with_extra = identity_sent(&mut ctx);
    assert!(with_extra.starts_with("base\n"), "{with_extra}");
    assert!(with_extra.contains("apply_patch <<'EOF'"), "{with_extra}");

    ctx.tools.push(ToolSpec {
        name: "apply_patch".into(),
        description: String::new(),
        format: ToolFormat::Function {
            parameters: serde_json::json!({}),
        },
        read_only: false,
    });
    assert_eq!(identity_sent(&mut ctx), "base");

    ctx.tools.clear();
    ctx.model_family.needs_special_apply_patch_instructions = false;
    assert_eq!(identity_sent(&mut ctx), "base");
}

#[test]
fn prompt_parallel_needs_family_support_and_feature() {
    for (family, feature, expected) in [
        (true, true, true),
        (true, false, false),
        (false, true, false),
    ] {
        let mut ctx = ctx_with(|c| c.features.parallel_tools = feature);
        ctx.model_family.supports_parallel_tool_calls = family;
        assert_eq!(build_prompt(&ctx, &[]).parallel_tool_calls, expected);
    }
}

#[test]
fn freeform_apply_patch_normalizes_shell_outputs_only() {
    let history = vec![
        call("s1", "shell"),
        output("s1", "exit code 0, 0.1s\nhi\n"),
        call("r1", "read_file"),
        output("r1", "exit code 0, 0.1s\nnot a shell output\n"),
    ];
    let mut ctx = ctx_with(|c| c.tool_config.edit_tool = Some(EditTool::ApplyPatch));
    assert!(matches!(
        build_prompt(&ctx, &history).input_items,
        std::borrow::Cow::Borrowed(_)
    ));
    ctx = ctx_with(|c| c.tool_config.edit_tool = Some(EditTool::ApplyPatchFreeform));
    let prompt = build_prompt(&ctx, &history);
    let outputs: Vec<&str> = prompt
        .input_items
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolOutput(o) => Some(o.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        outputs,
        [
            "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nhi\n",
            "exit code 0, 0.1s\nnot a shell output\n"
        ]
    );
}

#[test]
fn prompt_borrows_history_and_carries_schema() {
    let ctx = ctx_with(|c| c.output_schema = Some(serde_json::json!({"type": "object"})));
    let history = vec![HistoryItem::text(Role::User, "hi")];
    let p = build_prompt(&ctx, &history);
    assert!(matches!(p.input_items, std::borrow::Cow::Borrowed(_)));
    assert_eq!(p.output_schema, ctx.output_schema.as_ref());
    assert_eq!(p.tools.len(), ctx.tools.len());
}

// ---------------------------------------------------------------------------
// The turn loop
// ---------------------------------------------------------------------------

#[tokio::test]
async fn message_tool_call_tool_output_message() {
    let mut h = harness(
        r#"
[[turns]]
text = "Let me echo."
[[turns.tool_calls]]
name = "echo"
arguments = { text = "hi" }
[[turns]]
expect = "echo: hi"
text = "All done."
"#,
    );
    let r = h.run("say hi").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(r.final_text, "All done.");
    assert_eq!(r.iterations, 2);
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].name, "echo");
    assert_eq!(r.tool_calls[0].input, r#"{"text":"hi"}"#);
    assert_eq!(r.tool_calls[0].result, "echo: hi");
    assert!(!r.tool_calls[0].is_error);

    // History: env, user, assistant text, call, output, final text.
    let roles: Vec<Role> = h.session.history().iter().map(|i| i.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::User,
            Role::Assistant,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    let seen = h.fake.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].tools, ["shell", "echo", "look"]);
    assert_eq!(seen[1].input.len(), 5);

    let types = h.event_types();
    assert_eq!(types.first().unwrap(), "turn.started");
    assert_eq!(types.last().unwrap(), "turn.completed");
    for t in [
        "item.started",
        "item.updated",
        "item.completed",
        "model.request",
        "model.response",
        "metrics",
    ] {
        assert!(types.iter().any(|x| x == t), "{t} missing in {types:?}");
    }
    let completed_tool = h.events.lock().unwrap().iter().any(|e| {
        matches!(
            e,
            AgentEvent::ItemCompleted {
                item: Item::ToolCall {
                    status: ToolStatus::Completed,
                    duration_ms: Some(_),
                    ..
                }
            }
        )
    });
    assert!(completed_tool);
}

#[tokio::test]
async fn unknown_tool_and_bad_json_get_error_outputs_and_nothing_runs() {
    let mut h = harness(
        r#"
[[turns]]
[[turns.tool_calls]]
name = "nope"
arguments = { x = 1 }
[[turns.tool_calls]]
name = "echo"
arguments = "{not json"
[[turns]]
text = "ok"
"#,
    );
    // The freeform-looking string goes to a function tool: it must be JSON.
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert!(r.tool_calls[0].is_error);
    assert!(
        r.tool_calls[0].result.contains("unknown tool `nope`"),
        "{}",
        r.tool_calls[0].result
    );
    assert!(r.tool_calls[0].result.contains("shell, echo, look"));
    assert!(r.tool_calls[1].is_error);
    assert!(
        r.tool_calls[1].result.contains("not valid JSON"),
        "{}",
        r.tool_calls[1].result
    );
    assert!(h.log.lock().unwrap().is_empty(), "nothing may run");
    let failed = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::ItemCompleted {
                    item: Item::ToolCall {
                        status: ToolStatus::Failed,
                        ..
                    }
                }
            )
        })
        .count();
    assert_eq!(failed, 2);
}

#[tokio::test]
async fn tool_errors_are_returned_to_the_model() {
    let mut h = harness(
        r#"
[[turns]]
[[turns.tool_calls]]
name = "echo"
arguments = { text = "x", fail = true }
[[turns]]
expect = "failed: x"
text = "it failed"
"#,
    );
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    let out = h.fake.seen()[1]
        .input
        .iter()
        .find_map(|i| match &i.content {
            Content::ToolOutput(o) => Some(o.clone()),
            _ => None,
        });
    assert!(out.unwrap().is_error);
}

#[tokio::test]
async fn iteration_limit_ends_the_turn_with_limit_reached() {
    let mut turn = String::new();
    for _ in 0..5 {
        turn.push_str(
            "[[turns]]\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"again\" }\n",
        );
    }
    let mut c = config();
    c.max_iterations = 3;
    let mut h = harness_with(&turn, c);
    let r = h.run("loop").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::MaxSteps);
    assert_eq!(r.iterations, 3);
    assert_eq!(r.tool_calls.len(), 3);
    assert_eq!(h.fake.seen().len(), 3);
    // The last calls still got their outputs.
    assert_calls_answered(h.session.history());
}

#[tokio::test]
async fn empty_response_is_retried_once_then_reported() {
    let mut h = harness("[[turns]]\n[[turns]]\ntext = \"late answer\"\n");
    let r = h.run("x").await.unwrap();
    assert_eq!(
        (r.outcome, r.final_text.as_str(), r.iterations),
        (TurnOutcome::Done, "late answer", 2)
    );

    let mut h = harness("[[turns]]\n[[turns]]\n[[turns]]\ntext = \"never\"\n");
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::EmptyResponse);
    assert_eq!(h.fake.seen().len(), 2);

    // The retry is a request like any other: none past max_iterations.
    let mut c = config();
    c.max_iterations = 1;
    let mut h = harness_with("[[turns]]\n[[turns]]\ntext = \"over the limit\"\n", c);
    let r = h.run("x").await.unwrap();
    assert_eq!((r.outcome, r.iterations), (TurnOutcome::EmptyResponse, 1));
    assert_eq!(h.fake.seen().len(), 1, "no request past the step limit");
}

#[tokio::test]
async fn the_final_answer_is_checked_against_the_output_schema() {
    let schema = serde_json::json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
    let mut c = config();
    c.output_schema = Some(schema.clone());
    let mut h = harness_with("[[turns]]\ntext = '{\"n\": 3}'\n", c);
    assert_eq!(h.run("x").await.unwrap().outcome, TurnOutcome::Done);

    let mut c = config();
    c.output_schema = Some(schema);
    let mut h = harness_with("[[turns]]\ntext = '{\"n\": \"three\"}'\n", c);
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::InvalidOutput);
    let warned = h
        .events
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, AgentEvent::Warning { message } if message.contains("/n")));
    assert!(warned);
}

#[tokio::test]
async fn answer_cut_off_at_max_tokens_is_not_success() {
    let mut h = harness("[[turns]]\ntext = \"half an ans\"\nstop_reason = \"length\"\n");
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Truncated);
}

#[tokio::test]
async fn incomplete_tool_call_is_not_run_and_ends_the_turn() {
    struct Cut;
    impl Provider for Cut {
        fn id(&self) -> &str {
            "cut"
        }
        fn stream(&self, _r: &ModelRequest<'_>) -> ResponseStream {
            Box::pin(futures::stream::iter(vec![Ok(ResponseEvent::Completed {
                usage: None,
                stop_reason: StopReason::Length,
                incomplete_tool_call: Some("echo".into()),
            })]))
        }
    }
    let mut s = start_session_with_provider(config(), Arc::new(Cut)).unwrap();
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let w = warnings.clone();
    let sink = move |e: AgentEvent| {
        if let AgentEvent::Warning { message } = e {
            w.lock().unwrap().push(message);
        }
    };
    let r = s.run_turn("x", &sink).await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Truncated);
    assert!(r.tool_calls.is_empty());
    assert!(warnings.lock().unwrap()[0].contains("partial call was not run"));
    assert!(!s
        .history()
        .iter()
        .any(|i| matches!(i.content, Content::ToolCall(_))));
}

#[tokio::test]
async fn a_retried_stream_discards_the_partial_response() {
    struct Flaky;
    impl Provider for Flaky {
        fn id(&self) -> &str {
            "flaky"
        }
        fn stream(&self, _r: &ModelRequest<'_>) -> ResponseStream {
            let call = ToolCall {
                id: "half".into(),
                name: "echo".into(),
                arguments: "{}".into(),
                kind: ToolCallKind::Function,
            };
            Box::pin(futures::stream::iter(vec![
                Ok(ResponseEvent::TextDelta("Hel".into())),
                Ok(ResponseEvent::ToolCall(call)),
                Ok(ResponseEvent::Retrying {
                    attempt: 1,
                    delay: std::time::Duration::ZERO,
                    reason: "connection reset".into(),
                }),
                Ok(ResponseEvent::TextDelta("Hello".into())),
                Ok(ResponseEvent::Completed {
                    usage: None,
                    stop_reason: StopReason::Stop,
                    incomplete_tool_call: None,
                }),
            ]))
        }
    }
    let mut s = start_session_with_provider(config(), Arc::new(Flaky)).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let e2 = events.clone();
    let sink = move |e: AgentEvent| e2.lock().unwrap().push(e);
    let r = s.run_turn("x", &sink).await.unwrap();
    assert_eq!(r.final_text, "Hello");
    assert!(
        r.tool_calls.is_empty(),
        "the broken attempt's call is dropped"
    );
    assert_eq!(s.history().last().unwrap().as_text(), Some("Hello"));
    let events = events.lock().unwrap();
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::ItemDiscarded { id, .. } if id == "msg_1_1")));
    assert!(events.iter().any(|e| matches!(e, AgentEvent::ItemCompleted { item: Item::AgentMessage { id, text } } if id == "msg_1_1_retry1" && text == "Hello")));
}

/// How large a request the fake model takes.
#[derive(Clone, Copy)]
enum Window {
    /// Input items; summary requests always fit.
    Items(usize),
    /// Tokens as the local estimate counts them (instructions and tools
    /// included).
    Tokens(u64),
}

/// What the fake model was sent.
#[derive(Debug, Clone, Copy)]
struct Sent {
    items: usize,
    tokens: u64,
    summary: bool,
}

/// Answers like a model with a small context window: a larger request is a
/// context overflow; a summary request gets "summary"; anything else gets
/// "fits now". Records every request.
struct Overflowing {
    window: Window,
    requests: Mutex<Vec<Sent>>,
}

impl Overflowing {
    fn new(window: Window) -> Arc<Self> {
        Arc::new(Overflowing {
            window,
            requests: Mutex::new(Vec::new()),
        })
    }

    fn sent(&self) -> Vec<Sent> {
        self.requests.lock().unwrap().clone()
    }
}

impl Provider for Overflowing {
    fn id(&self) -> &str {
        "overflowing"
    }
    fn stream(&self, r: &ModelRequest<'_>) -> ResponseStream {
        use cogni_metrics::tokens;
        let sent = Sent {
            items: r.input.len(),
            tokens: tokens::count_items(r.input)
                + tokens::count(r.instructions)
                + tokens::count(&serde_json::to_string(r.tools).unwrap()),
            summary: is_summary_request(r.input),
        };
        self.requests.lock().unwrap().push(sent);
        let too_large = match self.window {
            Window::Items(max) => !sent.summary && sent.items > max,
            Window::Tokens(max) => sent.tokens > max,
        };
        let event = if too_large {
            Err(ProviderError::ContextOverflow {
                provider: "overflowing".into(),
                model: "m".into(),
                message: "context_length_exceeded".into(),
            })
        } else if sent.summary {
            Ok(ResponseEvent::TextDelta("summary".into()))
        } else {
            Ok(ResponseEvent::TextDelta("fits now".into()))
        };
        let done = Ok(ResponseEvent::Completed {
            usage: None,
            stop_reason: StopReason::Stop,
            incomplete_tool_call: None,
        });
        Box::pin(futures::stream::iter(vec![event, done]))
    }
}

fn overflowing_session(max_items: usize) -> (Session, Arc<Overflowing>) {
    let p = Overflowing::new(Window::Items(max_items));
    let mut c = config();
    c.tool_config.edit_tool = None;
    let mut s = start_session_with_provider(c, p.clone()).unwrap();
    let long: Vec<HistoryItem> = (0..20)
        .map(|i| HistoryItem::text(Role::Assistant, format!("old {i}")))
        .collect();
    s.history.append(long);
    (s, p)
}

#[tokio::test]
async fn context_overflow_compacts_once_and_retries() {
    let (mut s, p) = overflowing_session(10);
    let r = s.run_turn("x", &|_e: AgentEvent| {}).await.unwrap();
    assert_eq!(r.final_text, "fits now");
    let sent = p.sent();
    assert_eq!(sent.len(), 3, "request, summary, retried request: {sent:?}");
    assert!(sent[2].items <= 10, "{sent:?}");
    assert_eq!(s.metrics().snapshot().session.compactions, 1);
}

#[tokio::test]
async fn context_overflow_twice_is_an_error_not_a_loop() {
    let (mut s, p) = overflowing_session(0);
    let err = s.run_turn("x", &|_e: AgentEvent| {}).await.unwrap_err();
    assert!(err.to_string().contains("context window"), "{err}");
    assert_eq!(p.sent().len(), 3);
}

#[tokio::test]
async fn reasoning_is_kept_before_the_calls_and_model_info_sets_the_limit() {
    struct Thinker(Mutex<u32>);
    impl Provider for Thinker {
        fn id(&self) -> &str {
            "thinker"
        }
        fn stream(&self, _r: &ModelRequest<'_>) -> ResponseStream {
            let mut n = self.0.lock().unwrap();
            *n += 1;
            let done = |stop| {
                Ok(ResponseEvent::Completed {
                    usage: None,
                    stop_reason: stop,
                    incomplete_tool_call: None,
                })
            };
            let events = if *n == 1 {
                vec![
                    Ok(ResponseEvent::ModelInfo {
                        context_window: 10_000,
                    }),
                    Ok(ResponseEvent::Reasoning(Reasoning {
                        id: Some("rs_1".into()),
                        text: "think".into(),
                        encrypted: Some("opaque".into()),
                        source: "responses".into(),
                    })),
                    Ok(ResponseEvent::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "echo".into(),
                        arguments: r#"{"text":"a"}"#.into(),
                        kind: ToolCallKind::Function,
                    })),
                    done(StopReason::ToolCalls),
                ]
            } else {
                vec![
                    Ok(ResponseEvent::TextDelta("done".into())),
                    done(StopReason::Stop),
                ]
            };
            Box::pin(futures::stream::iter(events))
        }
    }
    let mut s = start_session_with_provider(config(), Arc::new(Thinker(Mutex::new(0)))).unwrap();
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(Echo {
        name: "echo",
        read_only: false,
        log: Arc::new(Mutex::new(Vec::new())),
    }));
    s.set_tools(registry);
    s.run_turn("x", &|_e: AgentEvent| {}).await.unwrap();
    let kinds: Vec<&str> = s
        .history()
        .iter()
        .map(|i| match &i.content {
            Content::Text { .. } => "text",
            Content::Reasoning(_) => "reasoning",
            Content::ToolCall(_) => "call",
            Content::ToolOutput(_) => "output",
            Content::Image(_) => "image",
            Content::WebSearch(_) => "web search",
        })
        .collect();
    assert_eq!(
        kinds,
        ["text", "text", "reasoning", "call", "output", "text"]
    );
    assert_eq!(s.context().model_family.context_window, 10_000);
    assert_eq!(s.compaction_limit(), 8_000);
}

#[tokio::test]
async fn stream_failure_stops_the_loop_with_an_error() {
    let mut s = start_session_with_provider(config(), Arc::new(Broken)).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let e2 = events.clone();
    let sink = move |e: AgentEvent| e2.lock().unwrap().push(e);
    let err = s.run_turn("x", &sink).await.unwrap_err();
    assert!(err.to_string().contains("connection reset"));
    assert!(matches!(
        events.lock().unwrap().last(),
        Some(AgentEvent::TurnFailed { .. })
    ));
    // Nothing of the broken response entered history.
    assert_eq!(s.history().last().unwrap().as_text(), Some("x"));
}

#[tokio::test]
async fn parallel_read_only_calls_overlap_and_outputs_keep_call_order() {
    let script = r#"
[[turns]]
[[turns.tool_calls]]
name = "look"
arguments = { text = "a", sleep_ms = 150 }
[[turns.tool_calls]]
name = "look"
arguments = { text = "b", sleep_ms = 10 }
[[turns.tool_calls]]
name = "echo"
arguments = { text = "c" }
[[turns.tool_calls]]
name = "echo"
arguments = { text = "d" }
[[turns]]
text = "done"
"#;
    let mut h = harness(script);
    let r = h.run("x").await.unwrap();
    let log = h.log.lock().unwrap().clone();
    // a and b overlap (b finishes first); c and d run after, one at a time.
    assert_eq!(
        log,
        ["start a", "start b", "end b", "end a", "start c", "end c", "start d", "end d"]
    );
    let results: Vec<&str> = r.tool_calls.iter().map(|t| t.result.as_str()).collect();
    assert_eq!(results, ["echo: a", "echo: b", "echo: c", "echo: d"]);
    let outputs: Vec<String> = h
        .session
        .history()
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolOutput(o) => Some(o.content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs, ["echo: a", "echo: b", "echo: c", "echo: d"]);
    assert!(h.fake.seen()[0].parallel);

    // Without parallel tools everything runs in order.
    let mut c = config();
    c.features.parallel_tools = false;
    let mut h = harness_with(script, c);
    h.run("x").await.unwrap();
    assert_eq!(
        h.log.lock().unwrap()[..4],
        ["start a", "end a", "start b", "end b"]
    );
    assert!(!h.fake.seen()[0].parallel);
}

#[tokio::test]
async fn pending_inputs_join_history_before_the_next_request() {
    let mut h = harness(
        r#"
[[turns]]
[[turns.tool_calls]]
name = "echo"
arguments = { text = "x" }
[[turns]]
text = "ok"
"#,
    );
    let pending = h.session.pending_inputs();
    pending.push("also do y");
    h.run("do x").await.unwrap();
    let first = &h.fake.seen()[0].input;
    assert_eq!(first.last().unwrap().as_text(), Some("also do y"));
}

#[tokio::test]
async fn usage_is_estimated_when_the_provider_reports_none() {
    let mut h = harness("[[turns]]\ntext = \"hello there\"\n");
    let r = h.run("hi").await.unwrap();
    assert!(r.usage.estimated);
    assert!(
        r.usage.input_tokens > 10 && r.usage.output_tokens >= 2,
        "{:?}",
        r.usage
    );

    let mut h = harness("[[turns]]\ntext = \"x\"\nusage = { input_tokens = 42, output_tokens = 7, cached_input_tokens = 40 }\n");
    let r = h.run("hi").await.unwrap();
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 42,
            output_tokens: 7,
            cached_input_tokens: 40,
            ..Default::default()
        }
    );
    let snap = h.session.metrics().snapshot();
    assert_eq!(snap.session.model_requests, 1);
}

// ---------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------

fn call(id: &str, name: &str) -> HistoryItem {
    HistoryItem::tool_call(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
        kind: ToolCallKind::Function,
    })
}

fn output(id: &str, text: &str) -> HistoryItem {
    HistoryItem::tool_output(ToolOutput {
        call_id: id.into(),
        content: text.into(),
        is_error: false,
        command: None,
        images: Vec::new(),
    })
}

#[test]
fn compaction_keeps_the_latest_requests_images_and_notes_the_others() {
    let image = |name: &str| cogni_protocol::Image {
        media_type: "image/png".into(),
        hash: name.into(),
        width: 4,
        height: 3,
        name: name.into(),
        data: std::sync::Arc::from("AAAA"),
    };
    let attached = |name: &str| HistoryItem {
        role: Role::User,
        content: Content::Image(image(name)),
    };
    let mut shown = output("w1", "viewed");
    if let Content::ToolOutput(o) = &mut shown.content {
        o.images.push(image("tool.png"));
    }
    let history = vec![
        HistoryItem::text(Role::User, "first request"),
        attached("old.png"),
        call("w1", "echo"),
        shown,
        HistoryItem::text(Role::User, "second request"),
        attached("new.png"),
        attached("newer.png"),
    ];
    let keep = compact::items_to_keep(&history, |c| c.name == "look");
    let out = compact::compacted_history(&history, &keep, "<env/>".into(), "S");
    let texts: Vec<String> = out
        .iter()
        .map(|i| match &i.content {
            Content::Text { text, .. } => text.clone(),
            Content::ToolCall(c) => format!("call {}", c.id),
            Content::ToolOutput(o) => format!("output {} ({} images)", o.content, o.images.len()),
            Content::Reasoning(r) => format!("reasoning {}", r.text),
            Content::Image(i) => format!("image {}", i.name),
            Content::WebSearch(w) => format!("web search {}", w.query),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "<env/>",
            "Summary of the conversation so far (earlier messages were compacted):\nS",
            "[images attached earlier, dropped by compaction: old.png (image/png, 4×3, 1 KB)]",
            "call w1",
            "output viewed\n[image tool.png (image/png, 4×3, 1 KB): dropped by compaction] (0 images)",
            "second request",
            "image new.png",
            "image newer.png",
        ]
    );
}

#[test]
fn compaction_keeps_instructions_env_latest_request_and_state_changes() {
    let history = vec![
        HistoryItem::tagged(Role::Developer, MessageTag::DeveloperInstructions, "dev"),
        HistoryItem::tagged(Role::User, MessageTag::UserInstructions, "agents"),
        HistoryItem::tagged(
            Role::User,
            MessageTag::Environment,
            "<environment_context>old</environment_context>",
        ),
        HistoryItem::text(Role::User, "first request"),
        HistoryItem::text(Role::Assistant, "looking"),
        call("r1", "look"),
        output("r1", "big file"),
        call("w1", "echo"),
        output("w1", "wrote"),
        HistoryItem::tagged(
            Role::User,
            MessageTag::Environment,
            "<environment_diff>x</environment_diff>",
        ),
        HistoryItem::text(Role::User, "second request"),
        call("w2", "echo"),
        output("w2", "wrote again"),
    ];
    let keep = compact::items_to_keep(&history, |c| c.name == "look");
    let out = compact::compacted_history(
        &history,
        &keep,
        "<environment_context>now</environment_context>".into(),
        "SUMMARY",
    );
    let texts: Vec<String> = out
        .iter()
        .map(|i| match &i.content {
            Content::Text { text, .. } => text.clone(),
            Content::ToolCall(c) => format!("call {}", c.id),
            Content::ToolOutput(o) => format!("output {}", o.call_id),
            Content::Reasoning(r) => format!("reasoning {}", r.text),
            Content::Image(i) => format!("image {}", i.name),
            Content::WebSearch(w) => format!("web search {}", w.query),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "dev",
            "agents",
            "<environment_context>now</environment_context>",
            "Summary of the conversation so far (earlier messages were compacted):\nSUMMARY",
            "call w1",
            "output w1",
            "second request",
            "call w2",
            "output w2",
        ]
    );
    assert_calls_answered(&out);
}

#[test]
fn compaction_keeps_the_skills_loaded_whole() {
    let body = format!("<skill name=\"pdf\">\n{}</skill>", "step\n".repeat(1000));
    let history = vec![
        HistoryItem::tagged(Role::User, MessageTag::Environment, "<env/>"),
        HistoryItem::text(Role::User, "fill the form with $lint"),
        HistoryItem::tagged(Role::User, MessageTag::Skill, "<skill name=\"lint\">"),
        call("s1", "skill"),
        output("s1", &body),
        call("s2", "skill"),
        HistoryItem::tool_output(ToolOutput {
            call_id: "s2".into(),
            content: "there is no skill `x`".into(),
            is_error: true,
            command: None,
            images: Vec::new(),
        }),
        call("r1", "look"),
        output("r1", "big file"),
        HistoryItem::text(Role::User, "next"),
    ];
    let keep = compact::items_to_keep(&history, |c| c.name == "look" || c.name == "skill");
    let out = compact::compacted_history(&history, &keep, "<env2/>".into(), "S");
    let kept: Vec<(Option<MessageTag>, &str)> = out
        .iter()
        .map(|i| (i.tag(), i.as_text().unwrap_or("(not text)")))
        .collect();
    assert_eq!(
        kept,
        [
            (Some(MessageTag::Environment), "<env2/>"),
            (
                Some(MessageTag::Summary),
                "Summary of the conversation so far (earlier messages were compacted):\nS"
            ),
            (Some(MessageTag::Skill), "<skill name=\"lint\">"),
            // The tool's output, whole, without its call.
            (Some(MessageTag::Skill), body.as_str()),
            (None, "next"),
        ]
    );
    assert_calls_answered(&out);
}

/// Whether `input` is a compaction's summary request.
fn is_summary_request(input: &[HistoryItem]) -> bool {
    input.last().and_then(HistoryItem::as_text) == Some(compact::SUMMARY_REQUEST)
}

/// A script turn that calls `tool` with `text` and reports 2500 tokens:
/// over the limit of [`limited`] sessions.
fn over_the_limit(tool: &str, text: &str) -> String {
    format!(
        "[[turns]]\nusage = {{ input_tokens = 2450, output_tokens = 50 }}\n[[turns.tool_calls]]\nname = \"{tool}\"\narguments = {{ text = \"{text}\" }}\n"
    )
}

/// A harness for `script` whose compaction limit is 2000 tokens.
fn limited(script: &str) -> Harness {
    let mut c = config();
    c.compaction.token_limit = Some(2000);
    harness_with(script, c)
}

#[tokio::test]
async fn the_summary_request_is_the_sessions_request_with_one_more_user_message() {
    // Turn 1 reports 2500 tokens (over the limit of 2000): the next request
    // is preceded by one summary request. The model calls a tool in its
    // summary; that call is ignored.
    let script = over_the_limit("look", "a")
        + r#"
[[turns]]
text = "the summary"
usage = { input_tokens = 2500, output_tokens = 10 }
[[turns.tool_calls]]
name = "echo"
arguments = { text = "never run" }
[[turns]]
text = "final"
usage = { input_tokens = 500, output_tokens = 5 }
"#;
    let mut h = limited(&script);
    let r = h.run("task").await.unwrap();
    assert_eq!(r.final_text, "final");
    let seen = h.fake.seen();
    assert_eq!(seen.len(), 3);
    // Same instructions and tools, the history as sent plus the new
    // items, then the request to summarise: the cached prefix is reused.
    let summary = &seen[1];
    assert_eq!(summary.instructions, seen[0].instructions);
    assert_eq!(summary.tools, seen[0].tools);
    assert!(!summary.tools.is_empty());
    assert_eq!(summary.input[..seen[0].input.len()], seen[0].input[..]);
    assert!(is_summary_request(&summary.input));
    assert_eq!(
        summary.input.len(),
        seen[0].input.len() + 3,
        "call, output, request"
    );
    assert!(
        !h.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("never run")),
        "a call in the summary is not run"
    );
    // The request after compaction holds the summary, not the read-only call.
    let after = &seen[2].input;
    assert!(after
        .iter()
        .any(|i| i.tag() == Some(MessageTag::Summary)
            && i.as_text().unwrap().contains("the summary")));
    assert!(!after
        .iter()
        .any(|i| matches!(i.content, Content::ToolCall(_))));
    assert!(after.iter().any(|i| i.as_text() == Some("task")));
    assert_eq!(
        h.event_types()
            .iter()
            .filter(|t| *t == "compaction")
            .count(),
        1
    );
    assert_eq!(h.session.metrics().snapshot().session.compactions, 1);

    // Under the limit: no compaction at all.
    let mut h =
        harness("[[turns]]\ntext = \"x\"\nusage = { input_tokens = 10, output_tokens = 1 }\n");
    h.run("t").await.unwrap();
    assert_eq!(h.fake.seen().len(), 1);
}

#[tokio::test]
async fn failed_summary_still_compacts() {
    let script = over_the_limit("echo", "a")
        + r#"
[[turns]]
expect = "this never matches"
text = "summary"
[[turns]]
text = "final"
usage = { input_tokens = 5, output_tokens = 1 }
"#;
    let mut h = limited(&script);
    let r = h.run("task").await.unwrap();
    assert_eq!(r.final_text, "final");
    let after = &h.fake.seen()[2].input;
    assert!(after.iter().any(|i| i
        .as_text()
        .is_some_and(|t| t.contains("no summary available"))));
    // The state-changing call survived.
    assert!(after
        .iter()
        .any(|i| matches!(&i.content, Content::ToolCall(c) if c.name == "echo")));
}

#[tokio::test]
async fn compaction_runs_again_at_the_next_crossing_of_the_same_turn() {
    // Each response reports more than the limit: every iteration after one
    // is preceded by a compaction, none is switched off.
    let summary = "[[turns]]\ntext = \"summary\"\n";
    let script = [
        over_the_limit("echo", "a"),
        summary.into(),
        over_the_limit("echo", "b"),
        summary.into(),
        "[[turns]]\ntext = \"done\"\nusage = { input_tokens = 100, output_tokens = 1 }\n".into(),
    ]
    .concat();
    let mut h = limited(&script);
    let r = h.run("task").await.unwrap();
    assert_eq!(r.final_text, "done");
    let summaries = h
        .fake
        .seen()
        .iter()
        .filter(|s| is_summary_request(&s.input))
        .count();
    assert_eq!(summaries, 2);
    assert_eq!(h.session.metrics().snapshot().session.compactions, 2);
}

#[tokio::test]
async fn compaction_that_cannot_fit_ends_the_turn_with_one_clear_error() {
    // The latest request alone is larger than the compaction limit: no
    // compaction can help, and the turn must not go on (or loop).
    let script = over_the_limit("echo", "a")
        + r#"
[[turns]]
text = "the summary"
[[turns]]
text = "never reached"
"#;
    let mut h = limited(&script);
    let huge = "word ".repeat(3000);
    let err = h.run(&huge).await.unwrap_err().to_string();
    assert!(
        err.contains("compaction cannot bring the history under 2000 tokens")
            && err.contains("context_window")
            && err.contains("token_limit"),
        "{err}"
    );
    let seen = h.fake.seen();
    assert_eq!(seen.len(), 2, "the request and one summary request");
    let failures = h
        .event_types()
        .iter()
        .filter(|t| t.as_str() == "turn.failed")
        .count();
    assert_eq!(failures, 1);
}

/// A session whose history holds `calls` state-changing calls, each with
/// an output of about 500 tokens, under a model that overflows at `window`.
fn windowed_session(window: u64, calls: usize) -> (Session, Arc<Overflowing>) {
    let p = Overflowing::new(Window::Tokens(window));
    let mut c = config();
    c.tool_config.edit_tool = None;
    let mut s = start_session_with_provider(c, p.clone()).unwrap();
    s.history
        .append(vec![HistoryItem::text(Role::User, "first task")]);
    for n in 0..calls {
        let id = format!("w{n}");
        s.history.append(vec![HistoryItem::tool_call(ToolCall {
            id: id.clone(),
            name: "shell".into(),
            arguments: format!(r#"{{"command":"make step{n}"}}"#),
            kind: ToolCallKind::Function,
        })]);
        s.history.append(vec![output(
            &id,
            &format!("line {n} of the build log\n").repeat(60),
        )]);
    }
    (s, p)
}

#[tokio::test]
async fn after_an_overflow_the_summary_request_is_smaller_than_what_overflowed() {
    let (mut s, p) = windowed_session(6000, 16);
    let r = s.run_turn("x", &|_e: AgentEvent| {}).await.unwrap();
    assert_eq!(r.final_text, "fits now");
    let sent = p.sent();
    assert_eq!(sent.len(), 3, "{sent:?}");
    let (overflowed, summary, retried) = (sent[0], sent[1], sent[2]);
    assert!(overflowed.tokens > 6000 && !overflowed.summary, "{sent:?}");
    assert!(summary.summary, "{sent:?}");
    assert!(
        summary.tokens <= overflowed.tokens * 3 / 4,
        "the summary request was fitted well below the overflow: {sent:?}"
    );
    assert!(retried.tokens <= 6000 && !retried.summary, "{sent:?}");
    // The summary made it into history (nothing was dropped unsummarised).
    assert!(s
        .history()
        .iter()
        .any(|i| i.tag() == Some(MessageTag::Summary)
            && i.as_text().is_some_and(|t| t.ends_with("summary"))));
    assert_calls_answered(s.history());
}

#[tokio::test]
async fn compaction_brings_a_session_of_shell_calls_under_the_limit() {
    // Sixteen `make` calls with long logs: none is read-only, so all are
    // kept, but their outputs are cut to head and tail and the oldest go
    // until the history is under the limit.
    let (mut s, p) = windowed_session(1_000_000, 16);
    let threshold = crate::effects::compact::Threshold::Tokens(3000);
    s.extensions.compaction = threshold;
    s.extensions
        .effects
        .replace(Box::new(crate::effects::compact::CompactEffect::new(
            threshold,
        )));
    s.history.tokens.stale = true;
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |e: AgentEvent| events.lock().unwrap().push(e)
    };
    let r = s.run_turn("x", &sink).await.unwrap();
    assert_eq!(r.final_text, "fits now");
    let sent = p.sent();
    assert_eq!(sent.len(), 2, "the summary request, then the turn's");
    assert!(sent[0].summary && !sent[1].summary, "{sent:?}");
    assert!(sent[1].tokens <= 3000, "{sent:?}");
    let kept: Vec<&ToolCall> = s
        .history()
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolCall(c) => Some(c),
            _ => None,
        })
        .collect();
    assert!(!kept.is_empty() && kept.len() < 16, "{}", kept.len());
    assert!(
        kept.last().is_some_and(|c| c.arguments.contains("step15")),
        "the newest calls stay"
    );
    assert!(!events
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, AgentEvent::Warning { .. })));
    assert_calls_answered(s.history());
}

#[test]
fn summary_input_trims_the_oldest_outputs_first_then_drops_the_oldest_items() {
    let count = |i: &HistoryItem| cogni_metrics::tokens::count_item(i);
    let long = "x\n".repeat(500);
    let history = vec![
        HistoryItem::tagged(
            Role::User,
            MessageTag::Environment,
            "<environment_context/>",
        ),
        HistoryItem::text(Role::User, "task"),
        call("a", "shell"),
        output("a", &long),
        call("b", "shell"),
        output("b", &long),
        HistoryItem::text(Role::Assistant, "done"),
    ];
    let total = cogni_metrics::tokens::count_items(&history);
    // Room for all but one long output: only the oldest one is cut.
    let room = total - 300;
    let fitted = compact::fit_summary_input(history.clone(), room, &count);
    assert_eq!(fitted.len(), history.len());
    assert!(
        fitted[3].content != history[3].content,
        "the oldest output is cut"
    );
    assert_eq!(fitted[5].content, history[5].content, "the newest is not");
    // Room for almost nothing: items go from the oldest, a call with its
    // output, the initial context stays.
    let fitted = compact::fit_summary_input(history.clone(), 30, &count);
    assert_eq!(fitted[0], history[0]);
    assert!(fitted.len() < history.len());
    assert!(cogni_metrics::tokens::count_items(&fitted) <= 30);
    assert_calls_answered(&fitted);
    assert_eq!(fitted.last(), history.last());
}

#[test]
fn the_compacted_history_drops_the_oldest_kept_responses_to_fit_or_says_it_cannot() {
    let count = |i: &HistoryItem| cogni_metrics::tokens::count_item(i);
    let mut items = vec![
        HistoryItem::tagged(
            Role::User,
            MessageTag::Environment,
            "<environment_context/>",
        ),
        HistoryItem::text(Role::User, "task"),
    ];
    for n in 0..10 {
        items.push(call(&format!("w{n}"), "echo"));
        items.push(call(&format!("v{n}"), "echo"));
        items.push(output(&format!("w{n}"), &"word ".repeat(100)));
        items.push(output(&format!("v{n}"), &"word ".repeat(100)));
    }
    let total = cogni_metrics::tokens::count_items(&items);
    let (fitted, tokens) =
        compact::fit_compacted(items.clone(), &count, 100, 100 + total / 2).unwrap();
    assert!(
        tokens <= 100 + total / 4 + 1,
        "under the soft limit: {tokens}"
    );
    assert!(fitted.len() < items.len());
    assert_eq!(fitted[..2], items[..2], "what must stay, stays");
    assert_eq!(fitted.last(), items.last(), "the newest response stays");
    assert_calls_answered(&fitted);
    // Parallel calls go together: no response is left half.
    assert_eq!(fitted.len() % 4, 2);
    let err = compact::fit_compacted(items, &count, 100, 105).unwrap_err();
    assert_eq!(err.limit, 105);
    assert!(err.needed > 105);
}

#[test]
fn kept_calls_keep_their_arguments_and_known_safe_shell_calls_go() {
    let shell = |id: &str, command: &str| {
        HistoryItem::tool_call(ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
            kind: ToolCallKind::Function,
        })
    };
    let big = "0123456789\n".repeat(2000);
    let history = vec![
        HistoryItem::text(Role::User, "task"),
        shell("ls", "ls -la src"),
        output("ls", &big),
        shell("rm", "rm -rf build && make"),
        output("rm", &big),
        HistoryItem::tool_call(ToolCall {
            id: "wf".into(),
            name: "write_file".into(),
            arguments: serde_json::json!({"path": "a.txt", "content": big}).to_string(),
            kind: ToolCallKind::Function,
        }),
        output("wf", "wrote a.txt"),
    ];
    let keep = compact::items_to_keep(&history, |c| {
        approval::only_reads(c, c.name == "read_file", "/bin/bash")
    });
    let out = compact::compacted_history(&history, &keep, "<env/>".into(), "S");
    let find = |id: &str| {
        out.iter().find_map(|i| match &i.content {
            Content::ToolCall(c) if c.id == id => Some(c.arguments.clone()),
            _ => None,
        })
    };
    assert_eq!(find("ls"), None, "a known-safe command only read");
    let Content::ToolCall(wf) = &history[5].content else {
        panic!("a call")
    };
    assert_eq!(
        find("wf"),
        Some(wf.arguments.clone()),
        "arguments stay whole"
    );
    let cut = out
        .iter()
        .find_map(|i| match &i.content {
            Content::ToolOutput(o) if o.call_id == "rm" => Some(o.content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(cut.len() < 3000 && cut.contains("omitted"), "{cut}");
    assert!(cut.starts_with("0123456789") && cut.ends_with("0123456789\n"));
    assert_calls_answered(&out);
}

#[test]
fn thinking_that_opens_a_kept_call_of_the_current_request_is_kept() {
    let thinking = |text: &str| HistoryItem {
        role: Role::Assistant,
        content: Content::Reasoning(Reasoning {
            id: None,
            text: text.into(),
            encrypted: Some(format!("sig-{text}")),
            source: "anthropic".into(),
        }),
    };
    let history = vec![
        HistoryItem::text(Role::User, "old task"),
        thinking("t0"),
        call("w0", "echo"),
        output("w0", "x"),
        HistoryItem::text(Role::User, "task"),
        thinking("t1"),
        call("r1", "look"),
        output("r1", "read"),
        thinking("t2"),
        HistoryItem::text(Role::Assistant, "\n\n"),
        call("w2", "echo"),
        call("r2", "look"),
        output("w2", "wrote"),
        output("r2", "read"),
    ];
    let keep = compact::items_to_keep(&history, |c| c.name == "look");
    let kept: Vec<String> = history
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(i, _)| match &i.content {
            Content::Reasoning(r) => format!("thinking {}", r.text),
            Content::ToolCall(c) => format!("call {}", c.id),
            Content::ToolOutput(o) => format!("output {}", o.call_id),
            Content::Text { text, .. } => text.clone(),
            Content::Image(i) => format!("image {}", i.name),
            Content::WebSearch(w) => format!("web search {}", w.query),
        })
        .collect();
    assert_eq!(
        kept,
        [
            "call w0",
            "output w0",
            "task",
            "thinking t2",
            "call w2",
            "output w2"
        ]
    );
}

// ---------------------------------------------------------------------------
// Approval policy and repeated failures
// ---------------------------------------------------------------------------

/// Answers from a list and counts the questions.
struct Answers {
    answers: Mutex<std::collections::VecDeque<ApprovalDecision>>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Answers {
    fn new(answers: Vec<ApprovalDecision>) -> Arc<Self> {
        Arc::new(Answers {
            answers: Mutex::new(answers.into()),
            asked: Mutex::new(Vec::new()),
        })
    }
}

impl Approver for Answers {
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        self.asked.lock().unwrap().push(request.clone());
        let answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(ApprovalDecision::Deny);
        Box::pin(async move { answer })
    }

    fn is_interactive(&self) -> bool {
        true
    }
}

fn approvals(h: &Harness) -> Vec<(String, &'static str)> {
    h.events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Approval {
                call_id, status, ..
            } => Some((call_id.clone(), status.as_str())),
            _ => None,
        })
        .collect()
}

const TWO_SHELL_CALLS: &str = r#"
[[turns]]
[[turns.tool_calls]]
id = "c1"
name = "shell"
arguments = { command = "make clean" }
[[turns]]
[[turns.tool_calls]]
id = "c2"
name = "shell"
arguments = { command = "make clean" }
[[turns]]
text = "done"
"#;

#[tokio::test]
async fn untrusted_without_a_terminal_answers_no_at_once_and_records_it() {
    let mut c = config();
    c.approval_policy = ApprovalPolicy::Untrusted;
    let mut h = harness_with(TWO_SHELL_CALLS, c);
    let r = h.run("x").await.unwrap();
    assert!(h.log.lock().unwrap().is_empty(), "nothing ran");
    assert!(r.tool_calls[0].is_error);
    assert!(
        r.tool_calls[0].result.contains("non-interactive"),
        "{}",
        r.tool_calls[0].result
    );
    assert_eq!(
        approvals(&h),
        [
            ("c1".into(), "asked"),
            ("c1".into(), "denied"),
            ("c2".into(), "asked"),
            ("c2".into(), "denied")
        ]
    );
    let metrics = h.session.metrics().snapshot().session;
    assert_eq!(
        (metrics.approvals["asked"], metrics.approvals["denied"]),
        (2, 2)
    );
}

#[tokio::test]
async fn approve_for_session_covers_the_same_call_later() {
    let mut c = config();
    c.approval_policy = ApprovalPolicy::Untrusted;
    let mut h = harness_with(TWO_SHELL_CALLS, c);
    let answers = Answers::new(vec![ApprovalDecision::ApproveForSession]);
    h.session.set_approver(answers.clone());
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(answers.asked.lock().unwrap().len(), 1, "asked once");
    assert_eq!(answers.asked.lock().unwrap()[0].summary, "make clean");
    assert_eq!(h.finished_tools(), 2);
    assert_eq!(
        approvals(&h),
        [
            ("c1".into(), "asked"),
            ("c1".into(), "approved"),
            ("c2".into(), "approved")
        ]
    );
}

/// Answers the model's questions one after another from a list, and
/// notes how many wait for their answer at once.
struct Chooser {
    answers: Mutex<std::collections::VecDeque<UserAnswer>>,
    waiting: std::sync::atomic::AtomicUsize,
    most_waiting: std::sync::atomic::AtomicUsize,
}

impl Approver for Chooser {
    fn ask<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async { ApprovalDecision::Deny })
    }

    fn is_interactive(&self) -> bool {
        true
    }

    fn question<'a>(
        &'a self,
        _call_id: &'a str,
        _question: &'a Question,
    ) -> BoxFuture<'a, UserAnswer> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            let now = self.waiting.fetch_add(1, SeqCst) + 1;
            self.most_waiting.fetch_max(now, SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            self.waiting.fetch_sub(1, SeqCst);
            self.answers
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(UserAnswer::Declined)
        })
    }
}

#[tokio::test]
async fn questions_are_asked_one_at_a_time_without_approval_and_recorded() {
    let script = r#"
[[turns]]
[[turns.tool_calls]]
id = "q1"
name = "ask_user"
arguments = { question = "Which one?", options = [{ label = "a" }, { label = "b" }], default = "a" }
[[turns.tool_calls]]
id = "r"
name = "look"
arguments = { text = "meanwhile", sleep_ms = 20 }
[[turns.tool_calls]]
id = "q2"
name = "ask_user"
arguments = { question = "And now?", options = [{ label = "x" }, { label = "y" }], allow_free_text = true }
[[turns.tool_calls]]
id = "q3"
name = "ask_user"
arguments = { question = "Broken?", options = [{ label = "only one" }] }
[[turns]]
text = "done"
"#;
    let mut c = config();
    // Even the strictest policy asks nothing before a question.
    c.approval_policy = ApprovalPolicy::Untrusted;
    let mut h = harness_with(script, c);
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(Echo {
        name: "look",
        read_only: true,
        log: h.log.clone(),
    }));
    registry.register(Arc::new(cogni_tools::ask_user::AskUserTool));
    h.session.set_tools(registry);
    let chooser = Arc::new(Chooser {
        answers: Mutex::new(vec![UserAnswer::Chosen(1), UserAnswer::Text("z".into())].into()),
        waiting: Default::default(),
        most_waiting: Default::default(),
    });
    h.session.set_approver(chooser.clone());
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    let results: Vec<&str> = r.tool_calls.iter().map(|t| t.result.as_str()).collect();
    assert_eq!(results[0], "The user chose: b");
    assert_eq!(results[1], "echo: meanwhile");
    assert_eq!(results[2], "The user answered in their own words: z");
    assert!(
        results[3].starts_with("nothing was asked: 1 options"),
        "{}",
        results[3]
    );
    assert!(r.tool_calls[3].is_error);
    assert_eq!(
        chooser
            .most_waiting
            .load(std::sync::atomic::Ordering::SeqCst),
        1,
        "two questions of one response never wait at once"
    );
    assert_eq!(
        approvals(&h),
        [("r".into(), "auto_approved")],
        "no question is approved"
    );
    let questions: Vec<(String, QuestionStatus, Option<String>)> = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Question { call_id, record } => {
                Some((call_id.clone(), record.status, record.answer.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        questions,
        [
            ("q1".into(), QuestionStatus::Asked, None),
            ("q1".into(), QuestionStatus::Answered, Some("b".into())),
            ("q2".into(), QuestionStatus::Asked, None),
            ("q2".into(), QuestionStatus::Answered, None),
        ]
    );
    let kept = h.session.questions();
    assert_eq!(kept.len(), 2);
    assert_eq!(
        (kept[0].default.as_deref(), kept[1].text.as_deref()),
        (Some("a"), Some("z"))
    );

    // Without anyone to ask, the default stands at once.
    let mut h = harness_with(script, config());
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(cogni_tools::ask_user::AskUserTool));
    registry.register(Arc::new(Echo {
        name: "look",
        read_only: true,
        log: h.log.clone(),
    }));
    h.session.set_tools(registry);
    let r = h.run("x").await.unwrap();
    assert!(r.tool_calls[0].result.ends_with("your default stands: a"));
    assert!(r.tool_calls[2]
        .result
        .starts_with("no answer: decide yourself"));
    let statuses: Vec<QuestionStatus> = h.session.questions().iter().map(|q| q.status).collect();
    assert_eq!(
        statuses,
        [QuestionStatus::Unattended, QuestionStatus::Unattended]
    );
}

#[tokio::test]
async fn deny_with_a_message_reaches_the_model_and_read_only_tools_are_auto_approved() {
    let script = r#"
[[turns]]
[[turns.tool_calls]]
id = "r"
name = "look"
arguments = { text = "a" }
[[turns.tool_calls]]
id = "w"
name = "echo"
arguments = { text = "b" }
[[turns]]
expect = "use the other script"
text = "ok"
"#;
    let mut c = config();
    c.approval_policy = ApprovalPolicy::Untrusted;
    let mut h = harness_with(script, c);
    h.session
        .set_approver(Answers::new(vec![ApprovalDecision::DenyWithMessage(
            "use the other script".into(),
        )]));
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(*h.log.lock().unwrap(), ["start a", "end a"]);
    assert_eq!(
        approvals(&h),
        [
            ("r".into(), "auto_approved"),
            ("w".into(), "asked"),
            ("w".into(), "denied")
        ]
    );
}

/// A call that fails the way a sandbox refusal looks, under `on-failure`.
fn on_failure_harness() -> Harness {
    let script = r#"
[[turns]]
[[turns.tool_calls]]
name = "echo"
arguments = { text = "touch", needs_full_access = true }
[[turns]]
text = "done"
"#;
    let mut c = config();
    c.approval_policy = ApprovalPolicy::OnFailure;
    harness_with(script, c)
}

#[tokio::test]
async fn on_failure_offers_a_retry_without_the_sandbox() {
    let mut h = on_failure_harness();
    h.session
        .set_approver(Answers::new(vec![ApprovalDecision::Approve]));
    let r = h.run("x").await.unwrap();
    assert!(!r.tool_calls[0].is_error, "{}", r.tool_calls[0].result);
    assert_eq!(
        *h.log.lock().unwrap(),
        ["denied touch", "start touch", "end touch"]
    );

    // The user says no: the model sees the failure and, truthfully, that
    // the call ran (in the sandbox) and was not run again.
    let mut h = on_failure_harness();
    h.session
        .set_approver(Answers::new(vec![ApprovalDecision::Deny]));
    let r = h.run("x").await.unwrap();
    let output = &r.tool_calls[0].result;
    assert!(r.tool_calls[0].is_error);
    assert!(
        output.starts_with("touch: cannot touch 'x': Permission denied\n\n"),
        "{output}"
    );
    assert!(
        output.contains("declined to run it again without the sandbox"),
        "{output}"
    );
    assert!(
        !output.contains("Not run") && !output.contains("nothing was run"),
        "{output}"
    );
    assert_eq!(*h.log.lock().unwrap(), ["denied touch"]);
    assert_eq!(
        approvals(&h),
        [("call_0".into(), "asked"), ("call_0".into(), "denied")]
    );
}

#[tokio::test]
async fn on_failure_without_anyone_to_ask_keeps_the_commands_own_output() {
    // A command that ran and printed "Permission denied" (e.g. a test
    // suite's output) in a run nobody can answer questions in.
    let mut h = on_failure_harness();
    let r = h.run("x").await.unwrap();
    assert!(r.tool_calls[0].is_error);
    assert_eq!(
        r.tool_calls[0].result,
        "touch: cannot touch 'x': Permission denied"
    );
    assert!(approvals(&h).is_empty(), "{:?}", approvals(&h));
    assert!(h.session.metrics().snapshot().session.approvals.is_empty());
    // The model got the same single output.
    let seen = h.fake.seen();
    let output = seen[1]
        .input
        .iter()
        .find_map(|i| match &i.content {
            Content::ToolOutput(o) => Some(o.content.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(output, "touch: cannot touch 'x': Permission denied");
}

#[tokio::test]
async fn on_request_asks_only_when_the_model_asks_to_escalate() {
    let script = r#"
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "plain", needs_full_access = false }
[[turns.tool_calls]]
name = "shell"
arguments = { command = "net", needs_full_access = true, escalate = true, justification = "needs the network" }
[[turns]]
text = "done"
"#;
    let mut c = config();
    c.approval_policy = ApprovalPolicy::OnRequest;
    let mut h = harness_with(script, c);
    let answers = Answers::new(vec![ApprovalDecision::Approve]);
    h.session.set_approver(answers.clone());
    let r = h.run("x").await.unwrap();
    assert!(
        r.tool_calls.iter().all(|t| !t.is_error),
        "{:?}",
        r.tool_calls
    );
    let asked = answers.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].reason.contains("needs the network"));
}

#[tokio::test]
async fn never_asks_nobody() {
    let mut c = config();
    c.approval_policy = ApprovalPolicy::Never;
    let mut h = harness_with(TWO_SHELL_CALLS, c);
    let answers = Answers::new(vec![]);
    h.session.set_approver(answers.clone());
    h.run("x").await.unwrap();
    assert!(answers.asked.lock().unwrap().is_empty());
    assert!(approvals(&h).is_empty());
}

#[tokio::test]
async fn three_identical_failures_warn_then_a_fourth_ends_the_turn() {
    let failing = "[[turns]]\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"x\", fail = true }\n";
    let mut h = harness(&failing.repeat(5));
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::RepeatedFailure);
    assert_eq!(r.iterations, 4);
    assert_eq!(
        h.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("start"))
            .count(),
        3,
        "the 4th is not run"
    );
    assert!(!r.tool_calls[1].result.contains("[cogni]"));
    assert!(
        r.tool_calls[2].result.contains("failed 3 times in a row"),
        "{}",
        r.tool_calls[2].result
    );
    assert!(r.tool_calls[3].result.starts_with("Not run"));
    // The model saw the note in the third output.
    let third_request = &h.fake.seen()[3].input;
    assert!(third_request.iter().any(|i| matches!(&i.content, Content::ToolOutput(o) if o.content.contains("Do not send it again"))));
    assert_calls_answered(h.session.history());
}

#[tokio::test]
async fn the_refusal_names_the_configured_limit() {
    let failing = "[[turns]]\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"x\", fail = true }\n";
    let mut c = config();
    c.effects = vec![cogni_spec::effects::EffectSpec::RepeatedFailure { limit: 2 }];
    let mut h = harness_with(&failing.repeat(4), c);
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::RepeatedFailure);
    assert!(
        r.tool_calls[2]
            .result
            .contains("already failed 2 times in a row"),
        "{}",
        r.tool_calls[2].result
    );
}

#[tokio::test]
async fn a_different_call_or_a_success_resets_the_failure_count() {
    let fail = "[[turns]]\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"x\", fail = true }\n";
    let other = "[[turns]]\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"y\", fail = true }\n";
    let script = format!("{fail}{fail}{other}{fail}{fail}[[turns]]\ntext = \"gave up\"\n");
    let mut h = harness(&script);
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert!(r.tool_calls.iter().all(|t| !t.result.contains("[cogni]")));
}

// ---------------------------------------------------------------------------
// Budgets and interrupts
// ---------------------------------------------------------------------------

fn tool_turns(n: usize, args: &str) -> String {
    format!(
        "[[turns]]\nusage = {{ input_tokens = 90, output_tokens = 10 }}\n[[turns.tool_calls]]\nname = \"echo\"\narguments = {args}\n"
    )
    .repeat(n)
}

#[tokio::test]
async fn tool_call_budget_runs_what_fits_and_answers_the_rest() {
    let script = "[[turns]]\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"a\" }\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"b\" }\n[[turns.tool_calls]]\nname = \"echo\"\narguments = { text = \"c\" }\n";
    let mut h = harness(script);
    let r = h
        .run_over_budget(
            TurnLimits {
                max_tool_calls: Some(2),
                ..Default::default()
            },
            Limit::ToolCalls,
        )
        .await;
    assert_eq!(h.finished_tools(), 2);
    assert!(
        r.tool_calls[2].result.contains("tool-call budget"),
        "{}",
        r.tool_calls[2].result
    );
    assert_calls_answered(h.session.history());
}

#[tokio::test]
async fn token_budget_stops_before_the_next_tools_run() {
    let mut h = harness(&tool_turns(3, "{ text = \"x\" }"));
    let r = h
        .run_over_budget(
            TurnLimits {
                max_tokens: Some(150),
                ..Default::default()
            },
            Limit::Tokens,
        )
        .await;
    assert_eq!(r.iterations, 2);
    // The first call ran; the second response's call did not.
    assert_eq!(h.finished_tools(), 1);
    assert!(r.tool_calls[1].result.contains("token budget"));
    assert_calls_answered(h.session.history());
}

#[tokio::test]
async fn step_budget_stops_before_another_request() {
    let mut h = harness(&tool_turns(5, "{ text = \"x\" }"));
    h.run_over_budget(
        TurnLimits {
            max_steps: Some(2),
            ..Default::default()
        },
        Limit::Steps,
    )
    .await;
    assert_eq!(h.fake.seen().len(), 2);
}

#[tokio::test]
async fn cost_budget_uses_the_model_price() {
    let mut c = config();
    c.model_families.insert(
        "scripted".into(),
        cogni_provider::model_family::FamilyOverride {
            input_price: Some(10_000.0),
            output_price: Some(10_000.0),
            ..Default::default()
        },
    );
    let mut h = harness_with(&tool_turns(3, "{ text = \"x\" }"), c);
    // 100 tokens at $10,000 per million = $1 per request.
    let r = h
        .run_over_budget(
            TurnLimits {
                max_cost_usd: Some(1.5),
                ..Default::default()
            },
            Limit::Cost,
        )
        .await;
    assert_eq!(r.iterations, 2);
    let cost = h.session.metrics().snapshot().turn.cost_usd.unwrap();
    assert!((cost - 2.0).abs() < 1e-9, "{cost}");
}

#[tokio::test]
async fn after_a_model_switch_cost_and_cost_budgets_use_the_new_models_price() {
    let mut c = config();
    c.provider.default_family = Some("generic".into());
    c.model_override = Some("cheap".into());
    for (model, price) in [("cheap", 10_000.0), ("dear", 30_000.0)] {
        c.model_families.insert(
            model.into(),
            cogni_provider::model_family::FamilyOverride {
                input_price: Some(price),
                output_price: Some(price),
                ..Default::default()
            },
        );
    }
    // Every response: 100 tokens, $1 at the cheap price, $3 at the dear one.
    let answer = "[[turns]]\ntext = \"ok\"\nusage = { input_tokens = 90, output_tokens = 10 }\n";
    let mut h = harness_with(
        &format!("{answer}{}", tool_turns(3, "{ text = \"x\" }")),
        c.clone(),
    );
    h.session
        .set_limits(TurnLimits {
            max_cost_usd: Some(2.5),
            ..Default::default()
        })
        .unwrap();
    h.run("first").await.unwrap();
    let cost = |h: &Harness| {
        let s = h.session.metrics().snapshot();
        let cents = |usd: Option<f64>| (usd.unwrap() * 100.0).round() as i64;
        (cents(s.turn.cost_usd), cents(s.session.cost_usd))
    };
    assert_eq!(cost(&h), (100, 100));

    // `/model dear`: the next turn's $2.5 budget is spent by one request.
    let mut dear = c.clone();
    dear.model_override = Some("dear".into());
    h.session.reconfigure(dear).unwrap();
    let r = h.run("second").await.unwrap();
    assert_eq!(
        (r.outcome, r.limit, r.iterations),
        (TurnOutcome::BudgetExceeded, Some(Limit::Cost), 1)
    );
    assert_eq!(cost(&h), (300, 400));

    // A model without a price cannot take over a cost budget.
    let mut unpriced = c;
    unpriced.model_override = Some("mystery".into());
    let err = h.session.reconfigure(unpriced).unwrap_err();
    assert!(err.to_string().contains("input_price"), "{err}");
    assert_eq!(h.session.context().model, "dear");
}

#[test]
fn a_cost_budget_without_a_price_is_refused() {
    let mut c = config();
    c.model_override = Some("mystery".into());
    c.provider.default_family = Some("generic".into());
    let mut s = start_session_with_provider(c, Fake::new("")).unwrap();
    let err = s
        .set_limits(TurnLimits {
            max_cost_usd: Some(1.0),
            ..Default::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("input_price"), "{err}");
}

#[tokio::test]
async fn time_budget_stops_a_running_tool_and_answers_its_call() {
    let mut h = harness(&tool_turns(1, "{ text = \"slow\", sleep_ms = 5000 }"));
    let started = std::time::Instant::now();
    let r = h
        .run_over_budget(
            TurnLimits {
                max_duration: Some(std::time::Duration::from_millis(200)),
                ..Default::default()
            },
            Limit::Seconds,
        )
        .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert!(r.tool_calls[0].result.contains("time budget"));
    assert_calls_answered(h.session.history());
}

/// A file tool like `write_file`: its work runs on a blocking thread that
/// goes on when the call is dropped, and makes its change only when the
/// commit gate admits it. The test decides when it gets there: with
/// `admit_first` it asks the gate, says so and then waits for `release`;
/// otherwise it says it started, waits, and only then asks.
struct GatedWrite {
    admit_first: bool,
    events: tokio::sync::mpsc::UnboundedSender<&'static str>,
    release: Arc<Mutex<std::sync::mpsc::Receiver<()>>>,
}

impl Tool for GatedWrite {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: "write".into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({"type": "object"}),
            },
            read_only: false,
        }
    }

    fn run<'a>(&'a self, _input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        let (admit_first, events, release) =
            (self.admit_first, self.events.clone(), self.release.clone());
        let commits = ctx.commits.clone();
        Box::pin(async move {
            let work = tokio::task::spawn_blocking(move || {
                let admitted = admit_first && commits.admit();
                let _ = events.send(if admit_first { "admitted" } else { "started" });
                let _ = release.lock().unwrap().recv();
                let admitted = admitted || (!admit_first && commits.admit());
                let _ = events.send(if admitted { "written" } else { "refused" });
                admitted
            });
            match work.await {
                Ok(true) => ToolResult::ok("wrote f"),
                _ => ToolResult::error("stopped; nothing was written"),
            }
        })
    }
}

/// Stop a turn whose only call is a [`GatedWrite`] once it reports its
/// first step; returns the turn and the tool's steps.
async fn stop_a_gated_write(admit_first: bool) -> (TurnResult, Vec<&'static str>) {
    let script = "[[turns]]\n[[turns.tool_calls]]\nname = \"write\"\narguments = {}\n";
    let mut h = harness(script);
    let (events, mut steps) = tokio::sync::mpsc::unbounded_channel();
    let (release, released) = std::sync::mpsc::channel();
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(GatedWrite {
        admit_first,
        events,
        release: Arc::new(Mutex::new(released)),
    }));
    h.session.set_tools(registry);
    let stop = h.session.stop_handle();
    let mut seen = Vec::new();
    let driver = async {
        seen.push(steps.recv().await.unwrap());
        stop.stop();
        if admit_first {
            // The turn waits for the admitted change.
            release.send(()).unwrap();
        }
    };
    let (turn, ()) = tokio::join!(h.run("x"), driver);
    if !admit_first {
        // The turn is over; the dropped call's thread goes on now.
        release.send(()).unwrap();
    }
    seen.push(steps.recv().await.unwrap());
    assert_calls_answered(h.session.history());
    (turn.unwrap(), seen)
}

#[tokio::test]
async fn a_file_change_admitted_before_a_stop_is_reported_as_made() {
    let (r, steps) = stop_a_gated_write(true).await;
    assert_eq!(steps, ["admitted", "written"]);
    assert_eq!(r.outcome, TurnOutcome::Interrupted);
    assert_eq!(r.tool_calls[0].result, "wrote f");
    assert!(!r.tool_calls[0].is_error);
}

#[tokio::test]
async fn a_file_change_not_yet_admitted_at_a_stop_is_never_made() {
    let (r, steps) = stop_a_gated_write(false).await;
    assert_eq!(steps, ["started", "refused"]);
    assert_eq!(r.outcome, TurnOutcome::Interrupted);
    assert!(r.tool_calls[0].is_error);
    assert!(
        r.tool_calls[0].result.contains("did not finish"),
        "{}",
        r.tool_calls[0].result
    );
}

#[tokio::test]
async fn an_interrupt_stops_the_turn_and_the_next_turn_works() {
    let script = format!(
        "{}[[turns]]\ntext = \"next answer\"\n",
        tool_turns(1, "{ text = \"slow\", sleep_ms = 5000 }")
    );
    let mut h = harness(&script);
    let stop = h.session.stop_handle();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        stop.stop();
    });
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Interrupted);
    assert!(r.tool_calls[0].result.contains("Interrupted by the user"));
    assert_calls_answered(h.session.history());
    // A stop between turns does not carry over.
    h.session.stop_handle().stop();
    let r = h.run("again").await.unwrap();
    assert_eq!(
        (r.outcome, r.final_text.as_str()),
        (TurnOutcome::Done, "next answer")
    );
}

mod effects;
// Unix: the hooks are sh scripts.
#[cfg(unix)]
mod hooks;
mod stream_tools;
mod text_tools;

#[tokio::test]
async fn the_plan_survives_reconfiguration_and_summaries() {
    let mut c = config();
    c.enable_plan = true;
    let script = r#"
[[turns]]
text = "1. read the code\n2. fix it"
[[turns]]
text = "first answer"
[[turns]]
text = "second answer"
[[turns]]
text = "the summary"
[[turns]]
text = "third answer"
"#;
    let mut h = harness_with(script, c.clone());
    h.run("go").await.unwrap();
    let has_plan = |items: &[HistoryItem]| items.iter().any(|i| i.tag() == Some(MessageTag::Plan));
    assert!(has_plan(h.session.history()));
    assert!(h.session.plan().is_some());

    // `/model`, `/agent` and mode changes reconfigure the session.
    let mut other = c;
    other.model_override = Some("gpt-4.1-mini".into());
    h.session.reconfigure(other).unwrap();
    assert!(has_plan(h.session.history()), "the plan item stays");
    assert!(h.session.plan().is_some(), "update_plan's store keeps it");
    h.run("again").await.unwrap();
    let seen = h.fake.seen();
    assert!(
        has_plan(&seen.last().unwrap().input),
        "the next request carries the plan"
    );

    // `/context summarize`.
    h.session.summarize().await.unwrap();
    assert!(has_plan(h.session.history()), "a summary keeps the plan");
    assert!(h.session.plan().is_some());
    h.run("more").await.unwrap();
    assert!(has_plan(&h.fake.seen().last().unwrap().input));
}

#[test]
fn reconfiguration_replaces_what_config_derives_and_keeps_the_conversation() {
    let mut c = config();
    c.enable_plan = true;
    let mut session = start_session_with_provider(c.clone(), Fake::new("")).unwrap();
    // What the conversation holds: an approval for the rest of the
    // session, the jobs, the files, a tool added from outside, a plan.
    session
        .conversation
        .approved
        .lock()
        .unwrap()
        .insert("shell:ls".into());
    let jobs = session.jobs().clone();
    struct Extra;
    impl cogni_tools::ToolBox for Extra {
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            vec![Arc::new(Echo {
                name: "echo",
                read_only: true,
                log: Arc::default(),
            })]
        }
    }
    session.add_toolbox(&Extra);
    *session.conversation.plan.lock().unwrap() = Some(Plan::default());
    let mut other = c;
    other.model_override = Some("gpt-4.1-mini".into());
    other.enable_plan = false;
    session.reconfigure(other).unwrap();
    assert_eq!(session.context().model, "gpt-4.1-mini", "derived: replaced");
    assert!(
        !session
            .context()
            .tools
            .iter()
            .any(|t| t.name == "update_plan"),
        "the new configuration has no plan tool"
    );
    assert!(session
        .conversation
        .approved
        .lock()
        .unwrap()
        .contains("shell:ls"));
    assert!(Arc::ptr_eq(session.jobs(), &jobs));
    assert!(
        Arc::ptr_eq(&session.toolset.shared.jobs, &jobs),
        "the tools run the session's jobs"
    );
    assert!(session.context().tools.iter().any(|t| t.name == "echo"));
    assert!(
        session.plan().is_some(),
        "the plan belongs to the conversation"
    );
}

#[test]
fn skills_reach_the_model_only_with_skills_enabled() {
    let mut c = config();
    c.prompt.skills = Some("- deploy: ships the app".into());
    let off = start_session_with_provider(c.clone(), Fake::new("")).unwrap();
    assert!(!off.context().system_prompt.text().contains("ships the app"));
    c.features.skills_enabled = true;
    let on = start_session_with_provider(c, Fake::new("")).unwrap();
    assert!(on.context().system_prompt.text().contains("ships the app"));
}

#[test]
fn auth_mode_decides_which_credentials_are_sent() {
    let mut info = ProviderInfo::new("p", "http://127.0.0.1:9", WireApi::Chat);
    info.api_key = Some("sk-key".into());
    info.auth_command = Some(vec!["print-token".into()]);
    let key = AuthMode::ApiKey.apply(info.clone());
    assert_eq!(
        (key.api_key.is_some(), key.auth_command.is_some()),
        (true, false)
    );
    let command = AuthMode::Command.apply(info.clone());
    assert_eq!(
        (command.api_key.is_some(), command.auth_command.is_some()),
        (false, true)
    );
    let none = AuthMode::None.apply(info);
    assert_eq!(
        (none.api_key.is_some(), none.auth_command.is_some()),
        (false, false)
    );
    // A mode whose credentials are missing is refused before any request.
    let mut c = config();
    c.auth_mode = AuthMode::Command;
    let e = match start_session_with_provider(c, Fake::new("")) {
        Ok(_) => panic!("a command mode without a command starts"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("auth_command"), "{e}");
}

/// A strategy of the embedding program's: the initial context and the
/// latest user message on; at the limit it makes room itself, noting each
/// time it was asked.
struct LatestPrompt(Arc<Mutex<Vec<bool>>>);

impl ContextStrategy for LatestPrompt {
    fn name(&self) -> &str {
        "latest_prompt"
    }

    fn view(&mut self, conversation: &mut Conversation<'_>) -> View {
        let start = conversation
            .items()
            .iter()
            .rposition(|i| i.role == Role::User && i.as_text().is_some())
            .unwrap_or(0);
        View::starting_at(conversation, start)
    }

    fn at_limit(&mut self, overflow: bool) -> AtLimit {
        self.0.lock().unwrap().push(overflow);
        AtLimit::Handled
    }
}

#[tokio::test]
async fn a_strategy_the_program_sets_wins_makes_room_at_the_limit_and_stays_when_reconfigured() {
    // The first response reports more than the limit: the strategy is
    // asked at the next request, and history is not summarized.
    let script =
        over_the_limit("echo", "a") + "[[turns]]\ntext = \"one\"\n[[turns]]\ntext = \"two\"\n";
    let mut h = limited(&script);
    let asked = Arc::new(Mutex::new(Vec::new()));
    h.session
        .set_context_strategy(Box::new(LatestPrompt(asked.clone())));
    assert_eq!(h.run("first task").await.unwrap().final_text, "one");
    assert_eq!(*asked.lock().unwrap(), [false]);
    h.session.reconfigure(config()).unwrap();
    assert_eq!(h.run("second task").await.unwrap().final_text, "two");
    let seen = h.fake.seen();
    assert_eq!(seen.len(), 3, "no summary request");
    let sent: Vec<String> = seen[2]
        .input
        .iter()
        .filter_map(|i| i.as_text().map(str::to_string))
        .collect();
    assert!(
        sent.iter().any(|t| t.contains("[4 earlier items")),
        "{sent:#?}"
    );
    assert!(!sent.iter().any(|t| t.contains("first task")), "{sent:#?}");
    assert_eq!(sent.last().map(String::as_str), Some("second task"));
    let usage = h.session.context_usage();
    assert_eq!(
        (usage.strategy.as_str(), usage.dropped),
        ("latest_prompt", 4)
    );
}
