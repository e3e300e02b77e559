//! Read-only calls that start while the response still streams
//! (`agent/early.rs`): when they start, that their effects decide the same
//! and history and the next request stay exactly as without early start,
//! and that a response that fails, is interrupted or restarts cancels or
//! adopts them cleanly.

use super::*;
use crate::effects::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point};
use crate::limits::Halt;
use std::collections::VecDeque;
use std::time::Duration;

/// Three read-only calls, the first the slowest, with 40 ms between the
/// streamed events, then an answer.
const THREE_READS: &str = r#"
[[turns]]
text = "Reading three."
delay_ms = 40
[[turns.tool_calls]]
id = "a"
name = "look"
arguments = { text = "a", sleep_ms = 60 }
[[turns.tool_calls]]
id = "b"
name = "look"
arguments = { text = "b", sleep_ms = 5 }
[[turns.tool_calls]]
id = "c"
name = "look"
arguments = { text = "c" }
[[turns]]
text = "done"
"#;

fn early_off() -> SessionConfig {
    let mut c = config();
    c.features.early_tools = false;
    c
}

/// Runs a turn; returns its result and the tool log as it was when the
/// first response's stream had ended.
async fn run_noting_stream_end(h: &mut Harness) -> (TurnResult, Vec<String>) {
    let events = h.events.clone();
    let log = h.log.clone();
    let at_end = Arc::new(Mutex::new(None));
    let noted = at_end.clone();
    let sink = move |e: AgentEvent| {
        if matches!(e, AgentEvent::ModelResponse { iteration: 1, .. }) {
            *noted.lock().unwrap() = Some(log.lock().unwrap().clone());
        }
        events.lock().unwrap().push(e);
    };
    let r = h.session.run_turn("x", &sink).await.unwrap();
    let at_end = at_end.lock().unwrap().take().unwrap();
    (r, at_end)
}

/// The events as `type id` (tool calls and messages), `response` for the
/// end of each model response.
fn timeline(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemStarted {
                item: Item::ToolCall { id, .. },
            } => Some(format!("started {id}")),
            AgentEvent::ItemCompleted {
                item: Item::ToolCall { id, status, .. },
            } => Some(format!("completed {id} {status:?}")),
            AgentEvent::ItemDiscarded { id, .. } => Some(format!("discarded {id}")),
            AgentEvent::ItemStarted {
                item: Item::AgentMessage { id, .. },
            } => Some(format!("message {id}")),
            AgentEvent::ItemCompleted {
                item: Item::AgentMessage { id, text },
            } => Some(format!("message {id} done: {text}")),
            AgentEvent::ModelResponse { .. } => Some("response".into()),
            _ => None,
        })
        .collect()
}

fn outputs(session: &Session) -> Vec<(String, String)> {
    session
        .history()
        .iter()
        .filter_map(|i| match &i.content {
            Content::ToolOutput(o) => Some((o.call_id.clone(), o.content.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn read_only_calls_start_and_finish_while_the_response_streams() {
    let mut h = harness(THREE_READS);
    let (r, at_end) = run_noting_stream_end(&mut h).await;
    assert_eq!(r.outcome, TurnOutcome::Done);
    // Every output was ready before the stream ended.
    for call in ["a", "b", "c"] {
        assert!(at_end.contains(&format!("end {call}")), "{at_end:?}");
    }
    // The text before the calls is complete before the first call starts;
    // the calls complete (after_tool effects and all) once it ended, in
    // call order.
    assert_eq!(
        timeline(&h.events.lock().unwrap())[..11],
        [
            "message msg_1_1",
            "message msg_1_1 done: Reading three.",
            "started a",
            "started b",
            "started c",
            "response",
            "completed a Completed",
            "completed b Completed",
            "completed c Completed",
            "message msg_1_2",
            "message msg_1_2 done: done",
        ]
    );
    assert_eq!(
        outputs(&h.session),
        [
            ("a".into(), "echo: a".into()),
            ("b".into(), "echo: b".into()),
            ("c".into(), "echo: c".into())
        ]
    );

    // Without early start nothing runs before the stream ends.
    let mut h = harness_with(THREE_READS, early_off());
    let (_, at_end) = run_noting_stream_end(&mut h).await;
    assert!(at_end.is_empty(), "{at_end:?}");
    assert_eq!(
        timeline(&h.events.lock().unwrap())[..3],
        [
            "message msg_1_1",
            "message msg_1_1 done: Reading three.",
            "response"
        ]
    );
}

/// Records where it runs, blocks calls whose arguments say "blocked" and
/// replaces the output of calls that say "replace".
struct Judge {
    log: Arc<Mutex<Vec<String>>>,
}

impl Effect for Judge {
    fn name(&self) -> &str {
        "judge"
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::BeforeTool, Phase::AfterTool]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        let decision = match cx.point {
            Point::BeforeTool { call } => {
                self.log.lock().unwrap().push(format!("before {}", call.id));
                if call.arguments.contains("blocked") {
                    Decision::Block("blocked by the judge".into())
                } else {
                    Decision::Continue
                }
            }
            Point::AfterTool { call, result } => {
                self.log.lock().unwrap().push(format!("after {}", call.id));
                if call.arguments.contains("replace") {
                    Decision::ReplaceOutput(ToolResult::ok(format!("judged: {}", result.content)))
                } else {
                    Decision::Continue
                }
            }
            _ => Decision::Continue,
        };
        Box::pin(async move { Ok(decision.into()) })
    }
}

/// Read-only calls finishing out of order, one blocked, one whose output
/// an effect replaces, then a write and a read after it.
const MIXED: &str = r#"
[[turns]]
text = "Looking."
delay_ms = 15
[[turns.tool_calls]]
id = "r1"
name = "look"
arguments = { text = "slow", sleep_ms = 120 }
[[turns.tool_calls]]
id = "r2"
name = "look"
arguments = { text = "blocked" }
[[turns.tool_calls]]
id = "r3"
name = "look"
arguments = { text = "replace", sleep_ms = 1 }
[[turns.tool_calls]]
id = "w1"
name = "echo"
arguments = { text = "write" }
[[turns.tool_calls]]
id = "r4"
name = "look"
arguments = { text = "after the write" }
[[turns]]
text = "done"
"#;

#[tokio::test]
async fn early_start_keeps_the_effects_decisions_and_the_next_request_byte_identical() {
    let run = |config: SessionConfig| async move {
        let mut h = harness_with(MIXED, config);
        let judged = Arc::new(Mutex::new(Vec::new()));
        h.session.extensions.effects.push(Box::new(Judge {
            log: judged.clone(),
        }));
        let (r, at_end) = run_noting_stream_end(&mut h).await;
        let judged = judged.lock().unwrap().clone();
        (h, r, at_end, judged)
    };
    let (early, r_early, at_end, judged_early) = run(config()).await;
    let (plain, r_plain, _, judged_plain) = run(early_off()).await;

    // Two reads ran while the response streamed (the blocked one never
    // runs); the write and the read after it waited for the end.
    for ran in ["start slow", "start replace", "end replace"] {
        assert!(at_end.iter().any(|l| l == ran), "{at_end:?}");
    }
    for waited in ["blocked", "write"] {
        assert!(!at_end.iter().any(|l| l.contains(waited)), "{at_end:?}");
    }
    // The effects saw the same points in the same order, and decided the same.
    assert_eq!(judged_early, judged_plain);
    assert_eq!(
        judged_early,
        [
            "before r1",
            "before r2",
            "before r3",
            "after r1",
            "after r3",
            "before w1",
            "after w1",
            "before r4",
            "after r4",
        ]
    );
    assert_eq!(r_early.tool_calls, {
        // Durations differ; everything else is the same.
        let mut plain = r_plain.tool_calls.clone();
        for (p, e) in plain.iter_mut().zip(&r_early.tool_calls) {
            p.duration = e.duration;
        }
        plain
    });
    assert_eq!(
        outputs(&early.session),
        [
            ("r1".into(), "echo: slow".into()),
            ("r2".into(), "blocked by the judge".into()),
            ("r3".into(), "judged: echo: replace".into()),
            ("w1".into(), "echo: write".into()),
            ("r4".into(), "echo: after the write".into()),
        ]
    );
    // The request after the calls, as the provider got it, byte for byte.
    let (seen_early, seen_plain) = (early.fake.seen(), plain.fake.seen());
    assert_eq!(seen_early.len(), 2);
    assert_eq!(seen_early[1].request, seen_plain[1].request);
    assert_eq!(early.session.history(), plain.session.history());
}

#[tokio::test]
async fn a_call_that_needs_approval_waits_for_the_end_of_the_stream() {
    let script = r#"
[[turns]]
delay_ms = 20
[[turns.tool_calls]]
id = "r1"
name = "look"
arguments = { text = "first" }
[[turns.tool_calls]]
id = "w1"
name = "echo"
arguments = { text = "change" }
[[turns.tool_calls]]
id = "r2"
name = "look"
arguments = { text = "second" }
[[turns]]
text = "done"
"#;
    let mut c = config();
    c.approval_policy = ApprovalPolicy::Untrusted;
    let mut h = harness_with(script, c);
    let answers = Answers::new(vec![ApprovalDecision::Approve]);
    h.session.set_approver(answers.clone());
    let (r, at_end) = run_noting_stream_end(&mut h).await;
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(at_end, ["start first", "end first"]);
    assert_eq!(answers.asked.lock().unwrap().len(), 1);
    let events = h.events.lock().unwrap().clone();
    let order: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Approval {
                call_id, status, ..
            } => Some(format!("{call_id} {}", status.as_str())),
            other => timeline(std::slice::from_ref(other)).pop(),
        })
        .collect();
    assert_eq!(
        order[..10],
        [
            "started r1",
            "r1 auto_approved",
            "response",
            "completed r1 Completed",
            "started w1",
            "w1 asked",
            "w1 approved",
            "completed w1 Completed",
            "started r2",
            "r2 auto_approved",
        ]
    );
    assert_eq!(
        *h.log.lock().unwrap(),
        [
            "start first",
            "end first",
            "start change",
            "end change",
            "start second",
            "end second"
        ]
    );
}

// ---------------------------------------------------------------------------
// Streams that fail, stop or restart
// ---------------------------------------------------------------------------

/// One step of a scripted stream.
enum Step {
    Send(ResponseEvent),
    Sleep(u64),
    Fail(&'static str),
    /// Never ends.
    Stall,
}

/// Streams its steps, one response per request; checks every request like
/// the fake provider does.
struct Steps {
    responses: Mutex<VecDeque<Vec<Step>>>,
    seen: Mutex<Vec<Vec<HistoryItem>>>,
}

impl Steps {
    fn new(responses: Vec<Vec<Step>>) -> Arc<Self> {
        Arc::new(Steps {
            responses: Mutex::new(responses.into()),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Provider for Steps {
    fn id(&self) -> &str {
        "steps"
    }

    fn stream(&self, request: &ModelRequest<'_>) -> ResponseStream {
        assert_calls_answered(request.input);
        self.seen.lock().unwrap().push(request.input.to_vec());
        let steps = self
            .responses
            .lock()
            .unwrap()
            .pop_front()
            .expect("a response");
        Box::pin(futures::stream::unfold(
            steps.into_iter(),
            |mut steps| async move {
                loop {
                    match steps.next()? {
                        Step::Send(event) => return Some((Ok(event), steps)),
                        Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                        Step::Fail(message) => {
                            let error = ProviderError::Stream {
                                provider: "steps".into(),
                                model: "m".into(),
                                message: message.into(),
                            };
                            return Some((Err(error), steps));
                        }
                        Step::Stall => std::future::pending::<()>().await,
                    }
                }
            },
        ))
    }
}

fn look(id: &str, text: &str, sleep_ms: u64) -> Step {
    Step::Send(ResponseEvent::ToolCall(ToolCall {
        id: id.into(),
        name: "look".into(),
        arguments: serde_json::json!({ "text": text, "sleep_ms": sleep_ms }).to_string(),
        kind: ToolCallKind::Function,
    }))
}

fn completed() -> Step {
    Step::Send(ResponseEvent::Completed {
        usage: None,
        stop_reason: StopReason::ToolCalls,
        incomplete_tool_call: None,
    })
}

fn answer(text: &str) -> Vec<Step> {
    vec![
        Step::Send(ResponseEvent::TextDelta(text.into())),
        Step::Send(ResponseEvent::Completed {
            usage: None,
            stop_reason: StopReason::Stop,
            incomplete_tool_call: None,
        }),
    ]
}

fn retrying() -> Step {
    Step::Send(ResponseEvent::Retrying {
        attempt: 1,
        delay: Duration::ZERO,
        reason: "the stream broke".into(),
    })
}

/// A session over `provider` with the harness's tools.
fn steps_harness(provider: Arc<Steps>) -> Harness {
    let mut h = harness("");
    let tools = h.session.toolset.registry.clone();
    h.session = start_session_with_provider(config(), provider).unwrap();
    h.session.set_tools(tools);
    h
}

/// Lets the runtime run what is still scheduled, long enough for a call
/// of 300 ms that was not aborted to end.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(400)).await;
}

#[tokio::test]
async fn a_stream_that_fails_after_an_early_call_cancels_it() {
    let provider = Steps::new(vec![vec![
        look("a", "slow", 300),
        Step::Sleep(30),
        Step::Fail("connection reset"),
    ]]);
    let mut h = steps_harness(provider);
    let err = h.run("x").await.unwrap_err();
    assert!(err.to_string().contains("connection reset"), "{err}");
    settle().await;
    // It started and was aborted: it never ended.
    assert_eq!(*h.log.lock().unwrap(), ["start slow"]);
    let events = h.events.lock().unwrap().clone();
    assert_eq!(timeline(&events), ["started a", "completed a Failed"]);
    let output = events.iter().find_map(|e| match e {
        AgentEvent::ItemCompleted {
            item: Item::ToolCall { output, .. },
        } => output.clone(),
        _ => None,
    });
    assert!(output.unwrap().contains("response broke off"));
    assert!(matches!(events.last(), Some(AgentEvent::TurnFailed { .. })));
    // Nothing of the broken response entered history.
    assert_eq!(h.session.history().last().unwrap().as_text(), Some("x"));
}

#[tokio::test]
async fn an_interrupt_while_streaming_answers_the_early_calls() {
    let provider = Steps::new(vec![vec![
        look("a", "slow", 300),
        look("b", "quick", 0),
        Step::Stall,
    ]]);
    let mut h = steps_harness(provider);
    let stop = h.session.stop_handle();
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.stop();
    });
    let r = h.run("x").await.unwrap();
    stopper.await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Interrupted);
    settle().await;
    assert_eq!(
        *h.log.lock().unwrap(),
        ["start slow", "start quick", "end quick"]
    );
    // Every call that started has its answer, in call order.
    let answered: Vec<(&str, &str)> = r
        .tool_calls
        .iter()
        .map(|t| (t.id.as_str(), t.result.as_str()))
        .collect();
    let interrupted = Halt::Interrupted.call_output();
    assert_eq!(answered, [("a", &*interrupted), ("b", &*interrupted)]);
    assert_eq!(
        timeline(&h.events.lock().unwrap()),
        [
            "started a",
            "started b",
            "completed a Failed",
            "completed b Failed"
        ]
    );
}

#[tokio::test]
async fn a_restarted_stream_adopts_the_same_call_instead_of_running_it_twice() {
    let provider = Steps::new(vec![
        vec![
            look("a1", "a", 60),
            Step::Sleep(20),
            retrying(),
            // The restarted response sends the same call under a new id.
            look("a2", "a", 60),
            look("b", "b", 0),
            completed(),
        ],
        answer("done"),
    ]);
    let mut h = steps_harness(provider.clone());
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    assert_eq!(
        *h.log.lock().unwrap(),
        ["start a", "start b", "end b", "end a"]
    );
    assert_eq!(
        timeline(&h.events.lock().unwrap())[..6],
        [
            "started a1",
            "completed a1 Failed",
            "started a2",
            "started b",
            "response",
            "completed a2 Completed",
        ]
    );
    let ids: Vec<&str> = r.tool_calls.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["a2", "b"]);
    assert_eq!(
        outputs(&h.session),
        [
            ("a2".into(), "echo: a".into()),
            ("b".into(), "echo: b".into())
        ]
    );
    assert_eq!(h.session.metrics().snapshot().session.tool_calls(), 2);
}

#[tokio::test]
async fn a_restarted_stream_with_other_calls_aborts_the_parked_ones() {
    let provider = Steps::new(vec![
        vec![
            look("a", "gone", 300),
            Step::Sleep(20),
            retrying(),
            look("c", "c", 0),
            look("d", "d", 0),
            completed(),
        ],
        answer("done"),
    ]);
    let mut h = steps_harness(provider);
    // The call of the void attempt does not count against the limit.
    h.session
        .set_limits(TurnLimits {
            max_tool_calls: Some(2),
            ..TurnLimits::default()
        })
        .unwrap();
    let r = h.run("x").await.unwrap();
    assert_eq!(r.outcome, TurnOutcome::Done);
    settle().await;
    // The parked call never ended; c and d ran.
    let mut log = h.log.lock().unwrap().clone();
    log.sort();
    assert_eq!(log, ["end c", "end d", "start c", "start d", "start gone"]);
    assert_eq!(
        timeline(&h.events.lock().unwrap())[..4],
        ["started a", "completed a Failed", "started c", "started d"]
    );
    assert_eq!(
        outputs(&h.session),
        [
            ("c".into(), "echo: c".into()),
            ("d".into(), "echo: d".into())
        ]
    );
}

#[tokio::test]
async fn a_tool_that_panics_early_fails_the_turn_like_any_other() {
    struct Panics;
    impl Tool for Panics {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "boom".into(),
                description: "panics".into(),
                format: ToolFormat::Function {
                    parameters: serde_json::json!({"type": "object"}),
                },
                read_only: true,
            }
        }

        fn run<'a>(&'a self, _: ToolInput, _: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
            Box::pin(async { panic!("tool bug") })
        }
    }
    let script = r#"
[[turns]]
[[turns.tool_calls]]
name = "boom"
arguments = {}
"#;
    let mut h = harness(script);
    let mut registry = ToolRegistry::default();
    registry.register(Arc::new(Panics));
    h.session.set_tools(registry);
    let err = h.run("x").await.unwrap_err();
    assert!(err.to_string().contains("tool bug"), "{err}");
}

#[tokio::test]
async fn no_more_calls_start_early_than_dispatch_runs_at_once() {
    let mut script = String::from("[[turns]]\ndelay_ms = 2\n");
    for n in 0..10 {
        script.push_str(&format!(
            "[[turns.tool_calls]]\nid = \"c{n}\"\nname = \"look\"\narguments = {{ text = \"{n}\", sleep_ms = 150 }}\n"
        ));
    }
    script.push_str("[[turns]]\ntext = \"done\"\n");
    let mut h = harness(&script);
    let (r, at_end) = run_noting_stream_end(&mut h).await;
    assert_eq!(r.outcome, TurnOutcome::Done);
    // Eight started while the response streamed; the other two once it
    // ended, as dispatch's limit lets them.
    assert_eq!(at_end.len(), 8, "{at_end:?}");
    let answered: Vec<String> = outputs(&h.session).into_iter().map(|(_, o)| o).collect();
    let expected: Vec<String> = (0..10).map(|n| format!("echo: {n}")).collect();
    assert_eq!(answered, expected);
}

#[tokio::test]
async fn a_budget_that_stops_an_early_call_stops_the_turn_as_it_would_without() {
    let run = |config: SessionConfig| async move {
        let mut h = harness_with(THREE_READS, config);
        h.session
            .set_limits(TurnLimits {
                max_tool_calls: Some(1),
                ..TurnLimits::default()
            })
            .unwrap();
        let (r, at_end) = run_noting_stream_end(&mut h).await;
        (h, r, at_end)
    };
    let (early, r_early, at_end) = run(config()).await;
    let (plain, r_plain, _) = run(early_off()).await;
    assert_eq!(r_early.outcome, TurnOutcome::BudgetExceeded);
    assert_eq!(
        (
            r_early.outcome.clone(),
            r_early.limit,
            r_early.reason.clone()
        ),
        (r_plain.outcome, r_plain.limit, r_plain.reason)
    );
    // The first call ran while the response streamed; the rest never ran.
    assert_eq!(at_end, ["start a", "end a"]);
    assert_eq!(*early.log.lock().unwrap(), *plain.log.lock().unwrap());
    assert_eq!(early.session.history(), plain.session.history());
}
