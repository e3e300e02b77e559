//! Effects and middleware in the loop: the points each phase is called
//! at, registration order, every decision at every phase, failures and
//! panics, history edits that never orphan a call, and the built-in
//! middleware (recovery, timeout, output guardrail).

use super::*;
use crate::effects::{
    Decision, Effect, EffectError, HistoryEdit, IterationContext, Outcome, Phase, Point, Stop,
};
use crate::run::{OutputGuardrail, RunConfig};
use std::time::Duration;

const ALL: &[Phase] = &[
    Phase::TurnStart,
    Phase::BeforeModel,
    Phase::AfterModel,
    Phase::BeforeTool,
    Phase::AfterTool,
    Phase::TurnEnd,
];

/// Records each point it sees as `phase@iteration` (and the call's
/// arguments before a tool).
struct Recorder {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

impl Effect for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    fn phases(&self) -> &'static [Phase] {
        ALL
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let entry = match cx.point {
            Point::BeforeTool { call } => format!("{}:before_tool {}", self.name, call.arguments),
            Point::AfterTool { result, .. } => {
                format!("{}:after_tool {}", self.name, result.content)
            }
            p => format!("{}:{}@{}", self.name, p.phase().as_str(), cx.iteration),
        };
        self.log.lock().unwrap().push(entry);
        Box::pin(async { Ok(Decision::Continue.into()) })
    }
}

/// Answers with the given decisions at one phase, in order (then goes on).
struct Scripted {
    phase: Phase,
    decisions: Vec<Decision>,
}

impl Scripted {
    fn new(phase: Phase, decisions: Vec<Decision>) -> Box<Self> {
        Box::new(Scripted { phase, decisions })
    }
}

impl Effect for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn phases(&self) -> &'static [Phase] {
        ALL
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let decision = if cx.phase() == self.phase && !self.decisions.is_empty() {
            self.decisions.remove(0)
        } else {
            Decision::Continue
        };
        Box::pin(async move { Ok(decision.into()) })
    }
}

/// Fails, or panics, at every point; advisory or not.
struct Faulty {
    panic: bool,
    advisory: bool,
}

impl Effect for Faulty {
    fn name(&self) -> &str {
        if self.panic {
            "panicky"
        } else {
            "failing"
        }
    }

    fn phases(&self) -> &'static [Phase] {
        ALL
    }

    fn advisory(&self) -> bool {
        self.advisory
    }

    fn eval<'a>(
        &'a mut self,
        _: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let panic = self.panic;
        Box::pin(async move {
            if panic {
                panic!("effect bug");
            }
            Err(EffectError("no luck".into()))
        })
    }
}

/// A guard that panics at `phase`.
struct BrokenGuard(&'static [Phase]);

impl Effect for BrokenGuard {
    fn name(&self) -> &str {
        "broken_guard"
    }

    fn phases(&self) -> &'static [Phase] {
        self.0
    }

    fn guards(&self) -> bool {
        true
    }

    fn eval<'a>(
        &'a mut self,
        _: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        Box::pin(async { panic!("guard bug") })
    }
}

/// One echo call, then an answer.
const ONE_CALL: &str = r#"
[[turns]]
text = "Calling."
[[turns.tool_calls]]
name = "echo"
arguments = { text = "hi" }
[[turns]]
text = "Done."
"#;

fn stop(reason: &str) -> Decision {
    Decision::Stop(Stop::by("scripted", TurnOutcome::Blocked, reason))
}

fn warnings(h: &Harness) -> Vec<String> {
    h.events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_phase_is_called_in_order_and_effects_in_registration_order() {
    let mut h = harness(ONE_CALL);
    let log = Arc::new(Mutex::new(Vec::new()));
    for name in ["a", "b"] {
        h.session.extensions.effects.push(Box::new(Recorder {
            name,
            log: log.clone(),
        }));
    }
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    let got = log.lock().unwrap().clone();
    let expected: Vec<String> = [
        "turn_start@0",
        "before_model@0",
        "after_model@1",
        "before_tool {\"text\":\"hi\"}",
        "after_tool echo: hi",
        "before_model@1",
        "after_model@2",
        "turn_end@2",
    ]
    .iter()
    .flat_map(|p| ["a", "b"].map(|n| format!("{n}:{p}")))
    .collect();
    assert_eq!(got, expected);
}

#[tokio::test]
async fn later_effects_see_what_earlier_ones_decided() {
    let mut h = harness(ONE_CALL);
    let log = Arc::new(Mutex::new(Vec::new()));
    h.session.extensions.effects.push(Scripted::new(
        Phase::BeforeTool,
        vec![Decision::ReplaceArgs(r#"{"text":"changed"}"#.into())],
    ));
    h.session.extensions.effects.push(
        Recorder {
            name: "r",
            log: log.clone(),
        }
        .into_box(),
    );
    h.session.extensions.effects.push(Scripted::new(
        Phase::AfterTool,
        vec![Decision::ReplaceOutput(ToolResult::ok("replaced output"))],
    ));
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    let got = log.lock().unwrap().clone();
    assert!(
        got.contains(&r#"r:before_tool {"text":"changed"}"#.to_string()),
        "{got:?}"
    );
    // The call ran with the new arguments; the model saw the new output,
    // and history records the call as it ran.
    assert_eq!(h.log.lock().unwrap()[0], "start changed");
    assert_eq!(r.tool_calls[0].input, r#"{"text":"changed"}"#);
    let second = &h.fake.seen()[1].input;
    assert!(second.iter().any(|i| matches!(&i.content,
        Content::ToolOutput(o) if o.content == "replaced output")));
    assert!(second.iter().any(|i| matches!(&i.content,
        Content::ToolCall(c) if c.arguments == r#"{"text":"changed"}"#)));
    let effects: Vec<_> = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Effect {
                phase, decision, ..
            } => Some(format!("{phase} {decision}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        effects,
        ["before_tool replace_args", "after_tool replace_output"]
    );
}

impl Recorder {
    fn into_box(self) -> Box<dyn Effect> {
        Box::new(self)
    }
}

#[tokio::test]
async fn a_stop_at_any_phase_ends_the_turn_with_its_reason_and_every_call_answered() {
    for phase in ALL {
        let mut h = harness(ONE_CALL);
        h.session
            .extensions
            .effects
            .push(Scripted::new(*phase, vec![stop("policy says no")]));
        let r = h.run("go").await.unwrap();
        assert_eq!(r.outcome, TurnOutcome::Blocked, "{phase:?}");
        assert_eq!(r.reason.as_deref(), Some("policy says no"), "{phase:?}");
        assert_calls_answered(h.session.history());
        assert!(warnings(&h).contains(&"policy says no".to_string()));
        let ran = h.finished_tools();
        let requests = h.fake.seen().len();
        let (expect_ran, expect_requests) = match phase {
            Phase::TurnStart | Phase::BeforeModel => (0, 0),
            Phase::AfterModel | Phase::BeforeTool => (0, 1),
            Phase::AfterTool => (1, 1),
            _ => (1, 2),
        };
        assert_eq!((ran, requests), (expect_ran, expect_requests), "{phase:?}");
        if *phase == Phase::TurnStart {
            // A refused prompt never joins the history.
            assert!(!h
                .session
                .history()
                .iter()
                .any(|i| i.as_text() == Some("go")));
        }
        if matches!(phase, Phase::AfterModel | Phase::BeforeTool) {
            let output = h.session.history().iter().find_map(|i| match &i.content {
                Content::ToolOutput(o) => Some(o.content.clone()),
                _ => None,
            });
            assert_eq!(
                output.as_deref(),
                Some("Not run: stopped by scripted: policy says no"),
                "{phase:?}"
            );
        }
        // The next turn works.
        h.session.extensions.effects.remove("scripted");
        assert_calls_answered(h.session.history());
    }
}

#[tokio::test]
async fn a_block_answers_the_call_with_its_reason_and_the_turn_goes_on() {
    let mut h = harness(
        r#"
[[turns]]
[[turns.tool_calls]]
name = "echo"
arguments = { text = "rm -rf /" }
[[turns]]
expect = "no recursive deletes"
text = "Understood."
"#,
    );
    h.session.extensions.effects.push(Scripted::new(
        Phase::BeforeTool,
        vec![Decision::Block("no recursive deletes".into())],
    ));
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(h.finished_tools(), 0);
    assert!(r.tool_calls[0].is_error);
    assert_eq!(r.tool_calls[0].result, "no recursive deletes");
}

#[tokio::test]
async fn items_added_at_the_turn_end_keep_the_turn_going() {
    let mut h = harness(
        r#"
[[turns]]
text = "First answer."
[[turns]]
text = "Fixed answer."
"#,
    );
    h.session.extensions.effects.push(Scripted::new(
        Phase::TurnEnd,
        vec![Decision::AddItems(vec![HistoryItem::text(
            Role::User,
            "tests fail: fix them",
        )])],
    ));
    let r = h.run("go").await.unwrap();
    assert_eq!(
        (r.outcome, r.final_text.as_str()),
        (TurnOutcome::Done, "Fixed answer.")
    );
    assert_eq!(r.iterations, 2);
    let second = &h.fake.seen()[1].input;
    assert_eq!(
        second.last().and_then(|i| i.as_text()),
        Some("tests fail: fix them")
    );
}

#[tokio::test]
async fn a_failing_or_panicking_advisory_effect_is_reported_and_the_loop_goes_on() {
    for panic in [false, true] {
        let mut h = harness(ONE_CALL);
        h.session.extensions.effects.push(Box::new(Faulty {
            panic,
            advisory: true,
        }));
        let r = h.run("go").await.unwrap();
        assert_eq!(r.outcome, TurnOutcome::Done, "panic: {panic}");
        let w = warnings(&h);
        let needle = if panic {
            "effect `panicky` panicked at turn_start: effect bug"
        } else {
            "effect `failing` failed at turn_start: no luck"
        };
        assert!(w.iter().any(|m| m == needle), "{w:?}");
        // One report per point.
        assert_eq!(w.len(), 8, "{w:?}");
    }
}

#[tokio::test]
async fn a_failing_or_panicking_effect_that_is_not_advisory_ends_the_turn_naming_it() {
    for panic in [false, true] {
        let mut h = harness(ONE_CALL);
        h.session.extensions.effects.push(Box::new(Faulty {
            panic,
            advisory: false,
        }));
        let r = h.run("go").await.unwrap();
        assert_eq!(r.outcome, TurnOutcome::EffectFailed, "panic: {panic}");
        let reason = r.reason.unwrap_or_default();
        let name = if panic { "`panicky`" } else { "`failing`" };
        assert!(reason.contains(name), "{reason}");
        assert!(h.log.lock().unwrap().is_empty(), "nothing ran after it");
        assert_calls_answered(h.session.history());
    }
}

#[tokio::test]
async fn a_guard_that_cannot_answer_blocks_the_call_or_stops_the_turn() {
    let mut h = harness(ONE_CALL);
    h.session
        .extensions
        .effects
        .push(Box::new(BrokenGuard(&[Phase::BeforeTool])));
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(h.finished_tools(), 0, "the call did not run");
    assert_eq!(
        r.tool_calls[0].result,
        "Blocked: effect `broken_guard` panicked at before_tool: guard bug; \
         a guard that cannot give its answer blocks"
    );
    for phase in [Phase::TurnStart, Phase::AfterModel, Phase::TurnEnd] {
        let mut h = harness(ONE_CALL);
        h.session
            .extensions
            .effects
            .push(Box::new(BrokenGuard(match phase {
                Phase::TurnStart => &[Phase::TurnStart],
                Phase::AfterModel => &[Phase::AfterModel],
                _ => &[Phase::TurnEnd],
            })));
        let r = h.run("go").await.unwrap();
        assert_eq!(r.outcome, TurnOutcome::Blocked, "{phase:?}");
        assert!(
            r.reason.as_deref().unwrap().contains("guard bug"),
            "{:?}",
            r.reason
        );
    }
    // Where nothing can be blocked, it is reported and the session goes on.
    let mut h = harness(ONE_CALL);
    h.session
        .extensions
        .effects
        .push(Box::new(BrokenGuard(&[Phase::SessionStart])));
    assert_eq!(h.run("go").await.unwrap().outcome, TurnOutcome::Done);
}

#[tokio::test]
async fn a_history_edit_never_orphans_a_call() {
    let mut h = harness(
        r#"
[[turns]]
[[turns.tool_calls]]
name = "echo"
arguments = { text = "a" }
[[turns]]
[[turns.tool_calls]]
name = "echo"
arguments = { text = "b" }
[[turns]]
text = "Done."
"#,
    );
    // Before the second request, pop one item: the output goes with its call.
    h.session.extensions.effects.push(Scripted::new(
        Phase::BeforeModel,
        vec![Decision::Continue, Decision::Edit(HistoryEdit::Pop(1))],
    ));
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    let second = &h.fake.seen()[1].input;
    assert!(!second
        .iter()
        .any(|i| matches!(&i.content, Content::ToolCall(c) if c.arguments.contains("\"a\""))));
    assert_calls_answered(h.session.history());
}

/// A tiny deterministic generator for the random test.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Random decisions at random phases over many turns of calls.
struct Chaos(Lcg);

impl Effect for Chaos {
    fn name(&self) -> &str {
        "chaos"
    }

    fn phases(&self) -> &'static [Phase] {
        &[
            Phase::TurnStart,
            Phase::BeforeModel,
            Phase::AfterModel,
            Phase::BeforeTool,
            Phase::AfterTool,
            Phase::StepEnd,
            Phase::TurnEnd,
        ]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let roll = self.0.next(40);
        let decision = match (cx.phase(), roll) {
            (_, 0) => stop("chaos"),
            (Phase::BeforeTool, 1) => Decision::Block("blocked".into()),
            (Phase::BeforeTool, 2) => Decision::ReplaceArgs(r#"{"text":"z"}"#.into()),
            (Phase::AfterTool, 3) => Decision::ReplaceOutput(ToolResult::error("replaced")),
            (Phase::BeforeModel, 4) => Decision::Edit(HistoryEdit::Pop(3)),
            (Phase::AfterModel | Phase::AfterTool, 5) => {
                Decision::AddItems(vec![HistoryItem::text(Role::User, "note")])
            }
            (Phase::BeforeModel, 6) => Decision::Edit(HistoryEdit::Pop(1)),
            (Phase::StepEnd | Phase::TurnEnd, 7) => {
                Decision::Note(vec![HistoryItem::text(Role::User, "noted")])
            }
            (Phase::StepEnd, 8) => Decision::AddItems(vec![HistoryItem::text(Role::User, "more")]),
            _ => Decision::Continue,
        };
        Box::pin(async move { Ok(decision.into()) })
    }
}

#[tokio::test]
async fn random_decisions_over_many_turns_never_orphan_a_call() {
    let mut script = String::new();
    for i in 0..200 {
        script.push_str(&format!(
            "[[turns]]\n[[turns.tool_calls]]\nname = \"echo\"\narguments = {{ text = \"{i}\" }}\n[[turns.tool_calls]]\nname = \"look\"\narguments = {{ text = \"{i}\" }}\n"
        ));
    }
    let mut config = config();
    config.max_iterations = 3;
    let mut h = harness_with(&script, config);
    h.session.extensions.effects.push(Box::new(Chaos(Lcg(7))));
    let requests = |h: &Harness| h.fake.seen.lock().unwrap().len();
    let mut turns = 0;
    while requests(&h) < 150 && turns < 1000 {
        turns += 1;
        let _ = h.run("go").await.unwrap();
        // The fake checks every request; the history is checked here.
        assert_calls_answered(h.session.history());
    }
    assert!(requests(&h) >= 150, "only {} requests", requests(&h));
}

/// A tool that panics.
struct Panicky;

impl Tool for Panicky {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "panicky".into(),
            description: "panics".into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({"type": "object"}),
            },
            read_only: false,
        }
    }

    fn run<'a>(&'a self, _: ToolInput, _: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { panic!("tool bug: index out of range") })
    }
}

#[tokio::test]
async fn recovery_turns_a_panic_in_a_tool_into_an_error_and_the_session_goes_on() {
    let mut h = harness(
        r#"
[[turns]]
[[turns.tool_calls]]
name = "panicky"
arguments = {}
[[turns]]
text = "after"
"#,
    );
    let mut registry = h.session.toolset.registry.clone();
    registry.register(Arc::new(Panicky));
    h.session.set_tools(registry);
    let err = h.run("go").await.unwrap_err();
    assert!(
        matches!(err, AgentError::Panic(ref m) if m == "tool bug: index out of range"),
        "{err}"
    );
    assert!(h
        .events
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, AgentEvent::TurnFailed { error, .. } if error.contains("tool bug"))));
    // The call never entered history without its output.
    assert_calls_answered(h.session.history());
    let r = h.run("again").await.unwrap();
    assert_eq!(
        (r.outcome, r.final_text.as_str()),
        (TurnOutcome::Done, "after")
    );
}

fn with_run(script: &str, run: RunConfig) -> Harness {
    let mut config = config();
    config.run = run;
    harness_with(script, config)
}

#[tokio::test]
async fn the_timeout_stops_a_running_tool_and_answers_its_call() {
    let mut h = with_run(
        r#"
[[turns]]
[[turns.tool_calls]]
name = "echo"
arguments = { text = "slow", sleep_ms = 30000 }
"#,
        RunConfig {
            timeout: Some(Duration::from_millis(200)),
            ..RunConfig::default()
        },
    );
    let started = std::time::Instant::now();
    let r = h.run("go").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        (r.outcome, r.limit),
        (TurnOutcome::BudgetExceeded, Some(Limit::Seconds))
    );
    assert_calls_answered(h.session.history());
    assert!(
        r.tool_calls[0].result.contains("ran out"),
        "{}",
        r.tool_calls[0].result
    );
    // Only for the run: the next one has no deadline left behind.
    assert!(!h.session.effect_names().contains(&"run_timeout"));
}

fn guardrail(regex: &str) -> RunConfig {
    RunConfig {
        timeout: None,
        output_guardrails: vec![OutputGuardrail {
            schema: None,
            regex: Some(regex::Regex::new(regex).unwrap()),
            command: None,
            timeout: Duration::from_secs(5),
        }],
        ..RunConfig::default()
    }
}

#[tokio::test]
async fn the_output_guardrail_sends_the_reason_back_once_then_fails() {
    let mut h = with_run(
        r#"
[[turns]]
text = "maybe"
[[turns]]
text = "OK, done"
"#,
        guardrail("^OK"),
    );
    let r = h.run("go").await.unwrap();
    assert_eq!(
        (r.outcome, r.final_text.as_str()),
        (TurnOutcome::Done, "OK, done")
    );
    assert_eq!(r.iterations, 2);
    let second = &h.fake.seen()[1].input;
    let told = second.last().and_then(|i| i.as_text()).unwrap_or_default();
    assert!(told.contains("does not match /^OK/"), "{told}");

    let mut h = with_run(
        r#"
[[turns]]
text = "maybe"
[[turns]]
text = "still no"
"#,
        guardrail("^OK"),
    );
    let r = h.run("go").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::InvalidOutput);
    assert!(r.reason.unwrap().contains("rejected twice"));
    let completed = h.events.lock().unwrap().iter().any(|e| {
        matches!(
            e,
            AgentEvent::TurnCompleted {
                outcome: TurnOutcome::InvalidOutput,
                ..
            }
        )
    });
    assert!(completed, "turn.completed carries the outcome");
}

#[tokio::test]
async fn an_embedders_closure_effect_and_middleware_run_and_survive_a_reconfiguration() {
    use crate::effects::{effect_fn, Point};
    use crate::run::{Middleware, Next};
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Count(Arc<AtomicU32>);
    impl Middleware for Count {
        fn name(&self) -> &str {
            "count"
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

    let script = r#"
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "rm -rf build" }
[[turns]]
text = "blocked once"
[[turns]]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "rm -rf dist" }
[[turns]]
text = "blocked twice"
"#;
    let mut h = harness(script);
    h.session
        .add_effect(effect_fn("no-rm", &[Phase::BeforeTool], |cx| {
            match cx.point {
                Point::BeforeTool { call } if call.arguments.contains("rm ") => {
                    Decision::Block("no deletes".into())
                }
                _ => Decision::Continue,
            }
        }));
    let turns = Arc::new(AtomicU32::new(0));
    h.session.add_middleware(Arc::new(Count(turns.clone())));
    let r = h.run("clean").await.unwrap();
    assert_eq!(r.final_text, "blocked once");
    assert!(
        r.tool_calls[0].result.contains("no deletes"),
        "{:?}",
        r.tool_calls
    );

    // A switch of configuration (another model, an agent card) keeps what
    // the program added.
    h.session.reconfigure(config()).unwrap();
    let r = h.run("clean again").await.unwrap();
    assert_eq!(r.final_text, "blocked twice");
    assert!(
        r.tool_calls[0].result.contains("no deletes"),
        "{:?}",
        r.tool_calls
    );
    assert_eq!(turns.load(Ordering::Relaxed), 2);
}
