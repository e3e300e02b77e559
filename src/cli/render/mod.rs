//! Renderers for engine events: human-readable progress on stderr, or one
//! JSON object per line on stdout (`--json`). Verbose logs go to stderr in
//! both modes and never change what runs or what stdout holds.

use crate::process::truncate::clip;
use crate::protocol::{
    AgentEvent, ApprovalStatus, EventSink, Item, Plan, QuestionStatus, StepStatus, TestRun,
    ToolStatus,
};
use std::borrow::Cow;
use std::io::Write;
use std::sync::Mutex;

mod web;
pub(super) use web::Sources;

/// `text` without anything that would act on a terminal: escape sequences
/// (CSI such as screen clears and cursor moves, OSC such as clipboard
/// writes (52) and window titles (0, 2), DCS/SOS/PM/APC strings, their
/// 8-bit C1 forms) and control characters other than newline and tab.
/// What model and tool output may print goes through this; the colors
/// cogni adds itself are added afterwards.
pub(super) fn strip_terminal_controls(text: &str) -> Cow<'_, str> {
    let is_unsafe = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let introducer = match c {
            '\u{1b}' => chars.next_if(|n| "[]PX^_".contains(*n)),
            '\u{9b}' => Some('['),
            '\u{9d}' => Some(']'),
            '\u{90}' => Some('P'),
            '\u{98}' => Some('X'),
            '\u{9e}' => Some('^'),
            '\u{9f}' => Some('_'),
            _ => None,
        };
        match introducer {
            // CSI: parameters and intermediates up to a final byte.
            Some('[') => {
                for n in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&n) {
                        break;
                    }
                }
            }
            // Strings: up to BEL or ST (ESC \ or U+009C).
            Some(_) => {
                while let Some(n) = chars.next() {
                    if n == '\u{7}' || n == '\u{9c}' {
                        break;
                    }
                    if n == '\u{1b}' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            None if c == '\u{1b}' => {
                // A two-character sequence (ESC c resets the terminal).
                chars.next();
            }
            None if is_unsafe(c) => {}
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` with control characters (other than newline) shown as escapes
/// instead of acting on the terminal: for approval questions, where the
/// user must see exactly what would run.
pub(super) fn show_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[derive(Debug, Clone, Copy)]
pub struct RenderOptions {
    pub color: bool,
    /// Stream assistant text to stderr as it arrives (stderr is a terminal).
    pub stream_live: bool,
    pub stdout_is_terminal: bool,
    pub verbose: bool,
    pub verbose_max_bytes: usize,
}

pub(super) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    clip(flat.trim(), max)
}

/// `text` in the SGR color `code` when `color` is on.
pub(super) fn paint(color: bool, code: &str, text: &str) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// How a finished tool call went: a mark (✓ or ✗) and the detail
/// (a command's exit code, duration, the first line of a failure's
/// output).
pub(super) fn tool_result(color: bool, item: &Item) -> Option<(String, String)> {
    let Item::ToolCall {
        status,
        exit_code,
        duration_ms,
        output,
        ..
    } = item
    else {
        return None;
    };
    let ms = duration_ms.unwrap_or(0);
    let code = exit_code
        .map(|c| format!("exit {c} · "))
        .unwrap_or_default();
    Some(match status {
        ToolStatus::Failed => {
            let first = output
                .as_deref()
                .and_then(|o| o.lines().find(|l| !l.trim().is_empty()))
                .map(|l| format!(": {}", one_line(l, 100)))
                .unwrap_or_default();
            (paint(color, "31", "✗"), format!("{code}{ms} ms{first}"))
        }
        _ => (paint(color, "32", "✓"), format!("{code}{ms} ms")),
    })
}

/// The one-line report of a tool call, retry, approval decision, warning,
/// skill named, compaction or finished turn; `None` for other events. Shared by the
/// `cogni run` renderer and the REPL.
pub(super) fn status_line(color: bool, event: &AgentEvent) -> Option<String> {
    let paint = |code: &str, text: &str| paint(color, code, text);
    let text = match event {
        AgentEvent::ItemStarted {
            item: Item::ToolCall {
                name, arguments, ..
            },
        } => format!("{} {name} {}", paint("36", "→"), one_line(arguments, 100)),
        AgentEvent::ItemCompleted {
            item: item @ Item::ToolCall { name, .. },
        } => {
            let (mark, detail) = tool_result(color, item)?;
            format!("  {mark} {name} {detail}")
        }
        AgentEvent::Retry {
            attempt,
            delay_ms,
            reason,
        } => paint(
            "33",
            &format!(
                "↻ retry {attempt} in {:.1}s: {}",
                *delay_ms as f64 / 1000.0,
                one_line(reason, 160)
            ),
        ),
        AgentEvent::Approval {
            tool,
            summary,
            status,
            reason,
            ..
        } if *status != ApprovalStatus::Asked => {
            let mark = match status {
                ApprovalStatus::Denied => paint("31", "✗ denied"),
                ApprovalStatus::AutoApproved => paint("2", "✓ auto-approved"),
                _ => paint("32", "✓ approved"),
            };
            format!("  {mark} {tool} {} ({reason})", one_line(summary, 80))
        }
        AgentEvent::Question { record, .. } if record.status != QuestionStatus::Asked => {
            let answer = match (record.status, &record.answer, &record.text) {
                (QuestionStatus::Answered, Some(label), _) => label.clone(),
                (QuestionStatus::Answered, None, Some(text)) => format!("“{text}”"),
                (QuestionStatus::Unattended, Some(label), _) => {
                    format!("{label} (the default: no one to ask)")
                }
                (QuestionStatus::Unattended, ..) => "no answer (no one to ask)".into(),
                _ => "declined".into(),
            };
            paint(
                "35",
                &format!(
                    "  ? {} → {}",
                    one_line(&record.question, 100),
                    one_line(&answer, 100)
                ),
            )
        }
        AgentEvent::Warning { message } => paint("33", &format!("warning: {message}")),
        AgentEvent::WebSearch {
            query,
            results,
            error,
            ..
        } => web::search_line(color, query, results, error.as_deref()),
        AgentEvent::Checkpoint { turn, files, .. } => paint(
            "2",
            &format!(
                "checkpoint: turn {turn} changed {} file{}; `cogni undo` takes it back",
                files.len(),
                plural(files.len())
            ),
        ),
        AgentEvent::Skill { name, path } => paint(
            "36",
            &format!(
                "skill: {name} loaded ({})",
                strip_terminal_controls(&path.display().to_string())
            ),
        ),
        // Failures come as warnings; quiet runs are not shown.
        AgentEvent::Hook {
            hook,
            decision,
            reason,
            ..
        } if matches!(decision.as_str(), "block" | "ask" | "stop") => {
            let what = match decision.as_str() {
                "block" => "blocked",
                "ask" => "asks",
                _ => "stopped the turn",
            };
            let why = reason
                .as_deref()
                .map(|r| format!(": {}", one_line(r, 160)))
                .unwrap_or_default();
            paint("35", &format!("⚑ {hook} {what}{why}"))
        }
        AgentEvent::Compacted {
            items_before,
            items_after,
            tokens_before,
        } => paint(
            "2",
            &format!("compacted history: {items_before} → {items_after} items ({tokens_before} tokens before)"),
        ),
        AgentEvent::Plan { plan } => paint("36", &plan_lines(plan)),
        AgentEvent::Test { run } => test_line(color, run),
        AgentEvent::Reflect {
            reflection,
            error,
            blocked,
            ..
        } => {
            let text = match (reflection, error) {
                (Some(r), _) => {
                    let mut text = format!("reflection (quality: {})", one_line(&r.quality, 40));
                    if !r.issues.is_empty() {
                        text.push_str(&format!(": issues: {}", one_line(&r.issues.join("; "), 160)));
                    }
                    if !r.recommendations.is_empty() {
                        text.push_str(&format!(
                            " · recommends: {}",
                            one_line(&r.recommendations.join("; "), 160)
                        ));
                    }
                    text
                }
                (None, error) => format!(
                    "reflection (not parsed: {})",
                    one_line(error.as_deref().unwrap_or("no JSON"), 100)
                ),
            };
            let text = if *blocked {
                format!("{text} · blocked the step")
            } else {
                text
            };
            paint(if *blocked { "31" } else { "35" }, &format!("◆ {text}"))
        }
        AgentEvent::Context { files } => paint(
            "2",
            &format!(
                "context: {}",
                files
                    .iter()
                    .map(|f| match &f.detail {
                        Some(detail) => format!("{} ({detail})", f.path),
                        None => format!(
                            "{}{} ({} bytes{})",
                            f.path,
                            if f.kind == "directory" { "/" } else { "" },
                            f.bytes,
                            if f.truncated { ", truncated" } else { "" }
                        ),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        AgentEvent::ContextWindow {
            dropped_items,
            estimated_tokens,
            ..
        } => paint(
            "2",
            &format!("context window: the first {dropped_items} items are left out of requests now (~{estimated_tokens} tokens sent)"),
        ),
        AgentEvent::SubagentStarted { agent, task, .. } => format!(
            "{} {} started: {}",
            paint("36", "↳"),
            agent_name(agent),
            one_line(task, 100)
        ),
        AgentEvent::SubagentFinished {
            agent,
            outcome,
            usage,
            cost_usd,
            duration_ms,
            error,
            ..
        } => {
            let mark = if outcome == "done" {
                paint("32", "✓")
            } else {
                paint("31", "✗")
            };
            let cost = cost_usd
                .filter(|c| *c > 0.0)
                .map(|c| format!(" · ${c:.4}"))
                .unwrap_or_default();
            let why = error
                .as_deref()
                .map(|e| format!(": {}", one_line(e, 120)))
                .unwrap_or_default();
            format!(
                "{} {mark} {} {outcome} · {} tokens{cost} · {}{why}",
                paint("36", "↳"),
                agent_name(agent),
                usage.total(),
                crate::runner::report::format_ms(*duration_ms)
            )
        }
        // A delegated agent's questions and warnings, under its name.
        AgentEvent::Subagent { agent, event, .. }
            if matches!(
                **event,
                AgentEvent::Approval { .. } | AgentEvent::Question { .. } | AgentEvent::Warning { .. }
            ) =>
        {
            format!("  {} {}", agent_name(agent), status_line(color, event)?)
        }
        // No line for a turn whose model requests are unknown (an ACP
        // agent's) or that made none.
        AgentEvent::TurnCompleted {
            usage, iterations, ..
        } if *iterations > 0 => paint(
            "2",
            &format!(
                "tokens: {} in ({} cached) · {} out{} · {iterations} model requests",
                usage.input_tokens,
                usage.cached_input_tokens,
                usage.output_tokens,
                if usage.estimated { " (estimated)" } else { "" }
            ),
        ),
        _ => return None,
    };
    Some(text)
}

/// A delegated agent's name: the last part of its path.
pub(super) fn agent_name(path: &[String]) -> &str {
    path.last().map_or("agent", String::as_str)
}

/// A test run: its mark, status, summary, time, and the failing tests.
fn test_line(color: bool, run: &TestRun) -> String {
    let (mark, status) = match (run.passed, run.timed_out, run.exit_code) {
        (true, _, _) => (paint(color, "32", "✓"), "tests passed".to_string()),
        (false, true, _) => (paint(color, "31", "✗"), "tests timed out".to_string()),
        (false, false, Some(code)) => (
            paint(color, "31", "✗"),
            format!("tests failed (exit {code})"),
        ),
        (false, false, None) => (paint(color, "31", "✗"), "tests did not run".to_string()),
    };
    let retry = if run.attempt > 1 {
        format!(" · attempt {}", run.attempt)
    } else {
        String::new()
    };
    let summary = if run.test_summary.is_empty() {
        String::new()
    } else {
        format!(": {}", one_line(&run.test_summary, 160))
    };
    let mut text = format!(
        "{mark} {status}{summary} · {:.1} s{retry}",
        run.duration_ms as f64 / 1000.0
    );
    if !run.failing_tests.is_empty() {
        let shown: Vec<&str> = run
            .failing_tests
            .iter()
            .take(5)
            .map(String::as_str)
            .collect();
        let more = run.failing_tests.len() - shown.len();
        text.push_str(&format!(
            "\n    failing: {}{}",
            one_line(&shown.join(", "), 200),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    text
}

/// Verbose diagnostics shared by both renderers.
/// A plan as a checklist: `✓` completed, `▸` in progress, `○` pending.
pub fn plan_lines(plan: &Plan) -> String {
    let mut text = String::from("plan");
    if let Some(why) = plan.explanation.as_deref().filter(|e| !e.trim().is_empty()) {
        text.push_str(&format!(": {}", one_line(why, 160)));
    }
    for step in &plan.plan {
        let mark = match step.status {
            StepStatus::Completed => "✓",
            StepStatus::InProgress => "▸",
            StepStatus::Pending => "○",
        };
        text.push_str(&format!("\n  {mark} {}", one_line(&step.step, 160)));
    }
    text
}

fn verbose_line(options: &RenderOptions, event: &AgentEvent) -> Option<String> {
    if !options.verbose {
        return None;
    }
    let max = options.verbose_max_bytes;
    let line = match event {
        AgentEvent::ModelRequest { iteration, prompt } => format!(
            "[verbose] model request #{iteration}: {}",
            clip(&prompt.as_ref().map(|p| p.to_string()).unwrap_or_default(), max)
        ),
        AgentEvent::ModelResponse {
            iteration,
            usage,
            stop_reason,
            time_to_first_token_ms,
            duration_ms,
        } => format!(
            "[verbose] model response #{iteration}: stop={stop_reason:?} usage={} ttft={}ms took={duration_ms}ms",
            serde_json::to_string(usage).unwrap_or_default(),
            time_to_first_token_ms.map_or("-".into(), |t| t.to_string()),
        ),
        AgentEvent::ItemCompleted {
            item: Item::AgentMessage { text, .. },
        } => format!("[verbose] model output: {}", clip(text, max)),
        AgentEvent::ItemStarted {
            item: Item::ToolCall { name, arguments, .. },
        } => format!("[verbose] tool call {name}: {}", clip(arguments, max)),
        AgentEvent::ItemCompleted {
            item: Item::ToolCall {
                name,
                output,
                status,
                ..
            },
        } => format!(
            "[verbose] tool output {name} ({status:?}): {}",
            clip(output.as_deref().unwrap_or(""), max)
        ),
        AgentEvent::Metrics { snapshot } => format!("[verbose] metrics: {snapshot}"),
        _ => return None,
    };
    Some(line)
}

fn write_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// `--json`: every event as one line on stdout.
pub struct Jsonl {
    options: RenderOptions,
}

impl Jsonl {
    pub fn new(options: RenderOptions) -> Self {
        Jsonl { options }
    }
}

impl EventSink for Jsonl {
    fn emit(&self, event: AgentEvent) {
        if let Some(line) = verbose_line(&self.options, &event) {
            write_stderr(&format!("{}\n", strip_terminal_controls(&line)));
        }
        if let Ok(line) = serde_json::to_string(&event) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

#[derive(Default)]
struct HumanState {
    /// A completed message not yet shown; shown on stderr once a tool call
    /// follows it (then it was not the final answer).
    held_message: Option<String>,
    /// The cursor is in the middle of a live-streamed line.
    mid_line: bool,
    /// Text of the message being streamed live.
    streamed: String,
    /// Text already on screen from a message whose stream broke; the retry's
    /// text is only printed from where it differs.
    discarded: Option<String>,
    /// The pages the turn's answers cited, listed when it ends.
    sources: Sources,
}

/// What to print of a retried message's text `now`, given the text of the
/// broken attempt already on screen. `None` while `now` repeats it.
fn after_restart(shown: &str, now: &str) -> Option<String> {
    if shown.starts_with(now) {
        None
    } else if let Some(rest) = now.strip_prefix(shown) {
        Some(rest.to_string())
    } else {
        Some(format!("\n[the stream broke; the answer restarted]\n{now}"))
    }
}

/// Model and tool text in `event` with terminal controls stripped, for
/// the renderers that print it (this one and the REPL's).
pub(super) fn strip_event_controls(event: AgentEvent) -> AgentEvent {
    let strip = |t: &mut String| {
        if let Cow::Owned(clean) = strip_terminal_controls(t) {
            *t = clean;
        }
    };
    let mut event = event;
    match &mut event {
        AgentEvent::ItemUpdated { delta, .. } => strip(delta),
        AgentEvent::ItemStarted { item } | AgentEvent::ItemCompleted { item } => match item {
            Item::AgentMessage { text, .. } => strip(text),
            Item::ToolCall {
                name,
                arguments,
                output,
                diff,
                ..
            } => {
                strip(name);
                strip(arguments);
                if let Some(output) = output.as_mut() {
                    strip(output);
                }
                if let Some(diff) = diff.as_mut() {
                    strip(diff);
                }
            }
        },
        AgentEvent::Retry { reason, .. } => strip(reason),
        AgentEvent::Approval {
            tool,
            summary,
            reason,
            ..
        } => {
            strip(tool);
            strip(summary);
            strip(reason);
        }
        AgentEvent::Warning { message } => strip(message),
        // Pages of the web: anything may be in their titles.
        AgentEvent::WebSearch {
            query,
            results,
            error,
            ..
        } => {
            strip(query);
            for page in results {
                strip(&mut page.url);
                strip(&mut page.title);
            }
            error.iter_mut().for_each(strip);
        }
        AgentEvent::Citation { citation } => {
            strip(&mut citation.page.url);
            strip(&mut citation.page.title);
            citation.cited_text.iter_mut().for_each(strip);
        }
        AgentEvent::Skill { name, .. } => strip(name),
        AgentEvent::Hook {
            command, reason, ..
        } => {
            strip(command);
            if let Some(reason) = reason.as_mut() {
                strip(reason);
            }
        }
        AgentEvent::TurnCompleted { final_text, .. } => strip(final_text),
        AgentEvent::SubagentStarted { agent, task, .. } => {
            agent.iter_mut().for_each(strip);
            strip(task);
        }
        AgentEvent::SubagentFinished { agent, error, .. } => {
            agent.iter_mut().for_each(strip);
            if let Some(error) = error.as_mut() {
                strip(error);
            }
        }
        AgentEvent::Subagent { agent, event, .. } => {
            agent.iter_mut().for_each(strip);
            **event = strip_event_controls(std::mem::replace(
                &mut **event,
                AgentEvent::Warning {
                    message: String::new(),
                },
            ));
        }
        AgentEvent::TurnFailed { error, .. } => strip(error),
        AgentEvent::SessionStarted {
            model, provider, ..
        } => {
            strip(model);
            strip(provider);
        }
        _ => {}
    }
    event
}

/// Progress for people, on stderr; the final answer goes to stdout (see run.rs).
pub struct Human {
    options: RenderOptions,
    state: Mutex<HumanState>,
}

impl Human {
    pub fn new(options: RenderOptions) -> Self {
        Human {
            options,
            state: Mutex::new(HumanState::default()),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        paint(self.options.color, code, text)
    }

    fn line(&self, state: &mut HumanState, text: &str) {
        let prefix = if state.mid_line { "\n" } else { "" };
        state.mid_line = false;
        write_stderr(&format!("{prefix}{text}\n"));
    }
}

impl EventSink for Human {
    fn emit(&self, event: AgentEvent) {
        let event = strip_event_controls(event);
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Some(line) = verbose_line(&self.options, &event) {
            let line = self.paint("2", &line);
            self.line(&mut state, &line);
        }
        match event {
            AgentEvent::SessionStarted {
                model,
                provider,
                sandbox,
                ..
            } => {
                let text = self.paint(
                    "2",
                    &format!(
                        "cogni · {provider} · {model} · sandbox {}",
                        sandbox.as_str()
                    ),
                );
                self.line(&mut state, &text);
            }
            AgentEvent::ItemUpdated { delta, .. } if self.options.stream_live => {
                state.streamed.push_str(&delta);
                let text = match state.discarded.take() {
                    None => Some(delta),
                    Some(shown) => match after_restart(&shown, &state.streamed) {
                        None => {
                            state.discarded = Some(shown);
                            None
                        }
                        printed => printed,
                    },
                };
                if let Some(text) = text {
                    write_stderr(&text);
                    state.mid_line = !text.ends_with('\n');
                }
            }
            AgentEvent::ItemStarted {
                item: Item::AgentMessage { .. },
            } => state.streamed.clear(),
            AgentEvent::Citation { citation } => state.sources.add(&citation),
            AgentEvent::ItemDiscarded { .. } if self.options.stream_live => {
                let shown = std::mem::take(&mut state.streamed);
                state.discarded = Some(shown);
            }
            AgentEvent::ItemCompleted {
                item: Item::AgentMessage { text, .. },
            } => {
                if self.options.stream_live {
                    // A retry that ended inside the broken attempt's text.
                    if let Some(shown) = state.discarded.take().filter(|s| *s != text) {
                        let fix = format!("\n[the stream broke; the answer restarted]\n{text}");
                        debug_assert!(shown.starts_with(&text));
                        write_stderr(&fix);
                        state.mid_line = true;
                    }
                    if state.mid_line {
                        self.line(&mut state, "");
                    }
                } else {
                    state.held_message = Some(text);
                }
            }
            AgentEvent::ItemStarted {
                item: Item::ToolCall { .. },
            } => {
                if let Some(text) = state.held_message.take() {
                    self.line(&mut state, text.trim_end());
                }
                if let Some(text) = status_line(self.options.color, &event) {
                    self.line(&mut state, &text);
                }
            }
            event => {
                if matches!(event, AgentEvent::TurnCompleted { .. }) {
                    if let Some(sources) = state.sources.take(self.options.color) {
                        self.line(&mut state, &sources);
                    }
                }
                if let Some(text) = status_line(self.options.color, &event) {
                    self.line(&mut state, &text);
                }
            }
        }
    }
}

/// `"s"` unless `n` is 1.
pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restarted_answer_is_not_printed_twice() {
        assert_eq!(after_restart("Hello wor", "Hello"), None);
        assert_eq!(after_restart("Hello wor", "Hello wor"), None);
        assert_eq!(
            after_restart("Hello wor", "Hello world").as_deref(),
            Some("ld")
        );
        let diverged = after_restart("Hello wor", "Hi there").unwrap();
        assert!(diverged.contains("restarted") && diverged.ends_with("Hi there"));
    }

    #[test]
    fn terminal_controls_are_stripped() {
        let cases = [
            ("plain\ttext\nline", "plain\ttext\nline"),
            ("a\x1b]52;c;ZXZpbA==\x07b", "ab"),
            ("a\x1b]0;title\x1b\\b", "ab"),
            ("\x1b]2;title\x07x", "x"),
            ("x\x1b[2J\x1b[H\x1b[3;4Hy", "xy"),
            ("red \x1b[31mtext\x1b[0m", "red text"),
            ("c\x1bcd", "cd"),
            ("bell\x07 back\x08 cr\r", "bell back cr"),
            ("\u{9b}2Jz \u{9d}52;c;x\u{9c}w", "z w"),
            ("\x1bP+q\x1b\\ok", "ok"),
            ("unterminated \x1b]52;c;AAAA", "unterminated "),
            ("é ✓ 日本", "é ✓ 日本"),
        ];
        for (input, want) in cases {
            assert_eq!(strip_terminal_controls(input), want, "{input:?}");
        }
        assert!(matches!(
            strip_terminal_controls("nothing to do\n"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn controls_are_shown_in_questions() {
        assert_eq!(show_controls("rm -rf ~\r ls"), "rm -rf ~\\r ls");
        assert_eq!(show_controls("a\x1b[2Kb\nc"), "a\\u{1b}[2Kb\nc");
    }

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("héllo", 2), "h… [5 more bytes]");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(one_line("a\nb\tc", 10), "a b c");
    }
}
