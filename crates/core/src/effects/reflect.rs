//! Reflection (`[agent] enable_reflect`; docs/reflection.md): after each
//! step the same model critiques it as JSON `{quality, issues[],
//! recommendations[], block_apply, notes}`. The raw text streams as
//! `reflect.delta` events; the critique is a `reflect` event and goes into
//! history for the next request. Under `block_on_critical` a critique that
//! sets `block_apply` ends the run (`blocked_by_reflect`).

use super::test_run::TestLog;
use super::{Decision, Effect, EffectError, IterationContext, Outcome, Phase, Point, Stop};
use crate::outcome::ToolCallRecord;
use crate::prompt::build_prompt;
use cogni_process::truncate::{self, Limits};
use cogni_protocol::{AgentEvent, HistoryItem, MessageTag, Reflection, Role, TestRun, TurnOutcome};
pub use cogni_spec::strategies::{ReflectionPlacement, ReflectionPolicy};
use futures::future::BoxFuture;
use serde_json::Value;
use std::fmt::Write as _;

pub(crate) const KIND: &str = "reflect";

/// Bytes of each tool output in the reflection prompt (head and tail).
const OUTPUT_BYTES: usize = 2 * 1024;
/// Bytes of all tool outputs together.
const OUTPUTS_BYTES: usize = 16 * 1024;
/// Bytes of the self-diff.
const DIFF_BYTES: usize = 4 * 1024;
/// Bytes of an unparsable critique kept in history.
const RAW_BYTES: usize = 2 * 1024;

/// `[agent]` reflection settings, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReflectConfig {
    /// `[agent] reflection_policy`: what a critique that sets
    /// `block_apply` does.
    pub policy: ReflectionPolicy,
    /// Show the model a diff of its previous and current response.
    pub self_diff: bool,
    /// `[agent] reflection_placement`: where the latest critique sits in
    /// the next request.
    pub placement: ReflectionPlacement,
}

/// The request's `items` (history, or the window's view of it) with the
/// critiques out of their places and the latest one in `history` (even
/// one the window left out) right after the initial context (`initial`
/// items), as `ReflectionPlacement::Front` asks. History itself keeps
/// every critique where it happened; sessions save them there.
pub fn place_front(
    history: &[HistoryItem],
    items: &[HistoryItem],
    initial: usize,
) -> Option<Vec<HistoryItem>> {
    let is_reflection = |i: &HistoryItem| i.tag() == Some(MessageTag::Reflection);
    let latest = history.iter().rev().find(|i| is_reflection(i))?;
    let mut out = Vec::with_capacity(items.len() + 1);
    out.extend_from_slice(&items[..initial]);
    out.push(latest.clone());
    out.extend(
        items[initial..]
            .iter()
            .filter(|i| !is_reflection(i))
            .cloned(),
    );
    Some(out)
}

/// What the model is asked, after the step.
pub const REFLECT_REQUEST: &str = "Critique the step above as a strict reviewer of your own work: is it correct, complete, safe? Reply with one JSON object only, no prose: {\"quality\": \"good\" | \"fair\" | \"poor\", \"issues\": [\"...\"], \"recommendations\": [\"...\"], \"block_apply\": false, \"notes\": \"...\"}. Set block_apply to true only when the step did something wrong or harmful that must not stand.";

pub(crate) struct ReflectEffect {
    config: ReflectConfig,
    tests: Option<TestLog>,
    /// The previous response reflected on (for the self-diff).
    previous: Option<String>,
}

impl ReflectEffect {
    pub fn new(config: ReflectConfig, tests: Option<TestLog>) -> Self {
        ReflectEffect {
            config,
            tests,
            previous: None,
        }
    }

    /// The step described for the reviewer.
    fn describe_step(&self, text: &str, calls: &[ToolCallRecord]) -> String {
        let mut out = String::from("# The step to critique\n");
        if text.trim().is_empty() {
            out.push_str("The response had no text.\n");
        } else {
            let _ = writeln!(out, "The response:\n{}", text.trim_end());
        }
        let mut budget = OUTPUTS_BYTES;
        for call in calls {
            let output = head_tail(&call.result, OUTPUT_BYTES.min(budget));
            budget = budget.saturating_sub(output.len());
            let _ = writeln!(
                out,
                "\nTool call `{}` {}{}:\n{}",
                call.name,
                head_tail(&call.input, 512),
                if call.is_error { " (failed)" } else { "" },
                output.trim_end()
            );
        }
        if let Some(run) = self.latest_test() {
            let _ = writeln!(out, "\n# The latest test run\n{}", describe_test(&run));
        }
        if self.config.self_diff {
            if let Some(previous) = &self.previous {
                let diff = similar::TextDiff::from_lines(previous.as_str(), text)
                    .unified_diff()
                    .context_radius(2)
                    .header("previous response", "this response")
                    .to_string();
                if !diff.trim().is_empty() {
                    let _ = writeln!(
                        out,
                        "\n# What changed since the previous response\n```diff\n{}\n```",
                        head_tail(&diff, DIFF_BYTES).trim_end()
                    );
                }
            }
        }
        out
    }

    fn latest_test(&self) -> Option<TestRun> {
        self.tests.as_ref()?.lock().ok()?.last().cloned()
    }

    async fn reflect(
        &mut self,
        cx: &IterationContext<'_>,
        text: &str,
        calls: &[ToolCallRecord],
        at_end: bool,
    ) -> Result<Outcome, EffectError> {
        let step = self.describe_step(text, calls);
        self.previous = Some(text.to_string());
        // A bounded input: the initial context (instructions, environment,
        // plan) and the turn's task, then the step; the request keeps the
        // session's instructions and tools, so their cached prefix is reused.
        let initial = crate::history::initial_len(cx.history);
        let mut input: Vec<HistoryItem> = cx.history[..initial].to_vec();
        if let Some(task) = cx
            .history
            .iter()
            .rev()
            .find(|i| i.role == Role::User && i.tag().is_none() && i.as_text().is_some())
        {
            input.push(task.clone());
        }
        let question = format!("{step}\n{REFLECT_REQUEST}");
        let answer = {
            let prompt = build_prompt(cx.ctx, &[]);
            let request = prompt.request(cx.ctx);
            let sink = cx.sink;
            crate::request::ask_streaming(
                &**cx.provider,
                &request,
                input,
                &question,
                &mut |delta| {
                    sink.emit(AgentEvent::ReflectDelta {
                        delta: delta.to_string(),
                    })
                },
            )
            .await
        };
        let (raw, usage) = match answer {
            Ok((raw, usage, _)) => (raw, usage),
            Err(e) => return Err(EffectError(format!("the reflection request failed: {e}"))),
        };
        let parsed = parse_reflection(&raw);
        let (reflection, error) = match parsed {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        if let Some(e) = &error {
            cx.sink.emit(AgentEvent::Warning {
                message: format!("the reflection is not the JSON asked for ({e}); kept as text"),
            });
        }
        let wants_block = reflection.as_ref().is_some_and(|r| r.block_apply);
        let blocked = wants_block && self.config.policy == ReflectionPolicy::BlockOnCritical;
        cx.sink.emit(AgentEvent::Reflect {
            step: cx.iteration,
            text: raw.clone(),
            reflection: reflection.clone(),
            error,
            blocked,
        });
        let usage: Vec<_> = usage.into_iter().collect();
        if blocked {
            let why = reflection
                .as_ref()
                .map(|r| r.issues.join("; "))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "block_apply was set".into());
            let stop = Stop::by(
                KIND,
                TurnOutcome::BlockedByReflect,
                format!("stopped: a reflection blocked the step: {why}"),
            );
            return Ok(Outcome {
                decision: Decision::Stop(stop),
                usage,
            });
        }
        if wants_block && self.config.policy == ReflectionPolicy::WarnOnly {
            cx.sink.emit(AgentEvent::Warning {
                message: "a reflection asked to block the step (reflection_policy = \"warn_only\": going on)".into(),
            });
        }
        let note = HistoryItem::tagged(
            Role::User,
            MessageTag::Reflection,
            match &reflection {
                Some(r) => for_history(r),
                None => format!(
                    "Reflection on the last step (not valid JSON):\n{}",
                    head_tail(raw.trim(), RAW_BYTES)
                ),
            },
        );
        let decision = if at_end {
            // Kept for the next prompt; it does not keep the turn going.
            Decision::Note(vec![note])
        } else {
            Decision::AddItems(vec![note])
        };
        Ok(Outcome { decision, usage })
    }
}

impl Effect for ReflectEffect {
    fn name(&self) -> &str {
        KIND
    }

    /// A critique that could not be made leaves the work as it is.
    fn advisory(&self) -> bool {
        true
    }

    fn phases(&self) -> &'static [Phase] {
        &[Phase::StepEnd, Phase::TurnEnd]
    }

    fn eval<'a>(
        &'a mut self,
        cx: &'a IterationContext<'a>,
    ) -> BoxFuture<'a, Result<Outcome, EffectError>> {
        Box::pin(async move {
            match cx.point {
                Point::StepEnd { reply, calls } => {
                    self.reflect(cx, &reply.text, calls, false).await
                }
                Point::TurnEnd { text } => self.reflect(cx, text, &[], true).await,
                _ => Ok(Decision::Continue.into()),
            }
        })
    }
}

/// A test run in a few lines.
fn describe_test(run: &TestRun) -> String {
    let status = if run.passed { "passed" } else { "failed" };
    let mut out = format!("`{}` {status}", run.command);
    if !run.test_summary.is_empty() {
        let _ = write!(out, ": {}", run.test_summary);
    }
    if !run.failing_tests.is_empty() {
        let names: Vec<&str> = run
            .failing_tests
            .iter()
            .take(20)
            .map(String::as_str)
            .collect();
        let _ = write!(out, "\nFailing: {}", names.join(", "));
    }
    out
}

/// The critique as the model reads it in later requests.
fn for_history(r: &Reflection) -> String {
    let mut out = format!("Reflection on the last step (quality: {})", r.quality);
    let list = |out: &mut String, title: &str, items: &[String]| {
        if !items.is_empty() {
            let _ = write!(out, "\n{title}:");
            for item in items {
                let _ = write!(out, "\n- {item}");
            }
        }
    };
    list(&mut out, "Issues", &r.issues);
    list(&mut out, "Recommendations", &r.recommendations);
    if !r.notes.trim().is_empty() {
        let _ = write!(out, "\nNotes: {}", r.notes.trim());
    }
    out
}

/// `text` cut to `max` bytes: its head and tail, the middle marked.
fn head_tail(text: &str, max: usize) -> String {
    truncate::head_tail(
        text,
        Limits {
            max_bytes: max,
            max_lines: usize::MAX,
        },
    )
}

/// The critique in `text`: the first JSON object in it, in a code fence
/// or not, with prose before or after it. Fields may be missing; lists
/// may be given as one string; `quality` may be a number.
pub fn parse_reflection(text: &str) -> Result<Reflection, String> {
    let mut last_error = "no JSON object found".to_string();
    for (at, _) in text.match_indices('{').take(16) {
        let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(Value::Object(map))) => return Ok(from_object(&map)),
            Some(Ok(_)) => {}
            Some(Err(e)) => last_error = format!("invalid JSON: {e}"),
            None => {}
        }
    }
    Err(last_error)
}

fn from_object(map: &serde_json::Map<String, Value>) -> Reflection {
    let string = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let list = |v: Option<&Value>| match v {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .filter(|s| !s.trim().is_empty())
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
        _ => Vec::new(),
    };
    let block_apply = match map.get("block_apply") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    };
    Reflection {
        quality: string(map.get("quality")),
        issues: list(map.get("issues")),
        recommendations: list(map.get("recommendations")),
        block_apply,
        notes: string(map.get("notes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_in_fences_and_prose_is_found() {
        let text = "Here is my critique:\n```json\n{\"quality\": \"fair\", \"issues\": [\"no test\"], \"recommendations\": \"add one\", \"block_apply\": false, \"notes\": \"ok\"}\n```\nThat is all {not json}.";
        let r = parse_reflection(text).unwrap();
        assert_eq!(r.quality, "fair");
        assert_eq!(r.issues, ["no test"]);
        assert_eq!(r.recommendations, ["add one"]);
        assert!(!r.block_apply);
        assert_eq!(r.notes, "ok");
    }

    #[test]
    fn a_number_quality_and_missing_fields_are_tolerated() {
        let r = parse_reflection("{\"quality\": 7, \"block_apply\": \"true\"}").unwrap();
        assert_eq!(r.quality, "7");
        assert!(r.block_apply);
        assert!(r.issues.is_empty() && r.notes.is_empty());
    }

    #[test]
    fn braces_in_prose_before_the_object_are_skipped() {
        let r = parse_reflection("The {step} was fine. {\"quality\": \"good\"}").unwrap();
        assert_eq!(r.quality, "good");
    }

    #[test]
    fn text_without_an_object_is_an_error() {
        assert!(parse_reflection("looks good to me").is_err());
        let e = parse_reflection("{\"quality\": ").unwrap_err();
        assert!(e.starts_with("invalid JSON"), "{e}");
    }

    #[test]
    fn the_self_diff_shows_what_changed() {
        let mut effect = ReflectEffect::new(
            ReflectConfig {
                self_diff: true,
                ..ReflectConfig::default()
            },
            None,
        );
        assert!(!effect.describe_step("a\nb\n", &[]).contains("```diff"));
        effect.previous = Some("a\nb\n".into());
        let step = effect.describe_step("a\nc\n", &[]);
        assert!(step.contains("-b\n+c"), "{step}");
    }

    #[test]
    fn long_text_keeps_its_head_and_tail() {
        let text = format!("{}{}", "a".repeat(5000), "é".repeat(3000));
        let cut = head_tail(&text, 1000);
        assert!(cut.len() < 1100, "{}", cut.len());
        assert!(cut.starts_with("aaa") && cut.ends_with('é'));
        assert!(cut.contains("omitted"), "{cut}");
    }
}
