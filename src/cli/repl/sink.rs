//! The REPL's view of engine events, on stdout: a spinner until the first
//! token, answers as terminal markdown line by line (the line still
//! streaming drawn as it comes), one status line per tool call with the
//! diff it made or a command's last lines under it, warnings, retries and
//! the turn's tokens.

use super::fold::{self, Folds};
use super::markdown::MarkdownStream;
use super::term::{self, Caps};
use crate::cli::render::{
    agent_name, one_line, paint, plan_lines, plural, status_line, strip_event_controls,
    strip_terminal_controls, tool_result, Sources,
};
use crate::protocol::{AgentEvent, ApprovalStatus, EventSink, Item};
use crate::tools::ask_user;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

struct Screen {
    markdown: MarkdownStream,
    /// Waiting for the model since this instant: the spinner shows.
    waiting: Option<Instant>,
    /// The spinner is on screen and must be erased before other output.
    spinner_drawn: bool,
    frame: usize,
    /// The last line on screen is the "started" line of this call: its
    /// result can replace it, so each call takes one line.
    open_call: Option<String>,
    /// The last lines on screen are the plan's checklist, this many: the
    /// next plan replaces it.
    plan_lines: Option<usize>,
    /// The line of the answer still streaming is drawn on the cursor's
    /// row (as far as it fits) and must be erased before other output.
    partial_drawn: bool,
    /// Long diffs and command outputs shown folded, for `/expand`.
    folds: Folds,
    /// Tokens of the last model request and its answer (the context the
    /// status line shows), once one was made.
    context: Option<u64>,
    /// The pages the answer being written cites, listed after it.
    sources: Sources,
}

/// Renders events for the REPL. Cheap to clone (shared state).
#[derive(Clone)]
pub struct ReplSink {
    caps: Caps,
    screen: Arc<Mutex<Screen>>,
}

fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

impl ReplSink {
    pub fn new(caps: Caps) -> Self {
        ReplSink {
            caps,
            screen: Arc::new(Mutex::new(Screen {
                markdown: MarkdownStream::new(caps.color, term::width()),
                waiting: None,
                spinner_drawn: false,
                frame: 0,
                open_call: None,
                plan_lines: None,
                partial_drawn: false,
                folds: Folds::default(),
                context: None,
                sources: Sources::default(),
            })),
        }
    }

    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// Draw the spinner while waiting for the model (on a terminal only).
    /// Runs until the returned task is aborted.
    pub fn spawn_spinner(&self) -> Option<tokio::task::JoinHandle<()>> {
        if !self.caps.ansi {
            return None;
        }
        let sink = self.clone();
        Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(80));
            loop {
                tick.tick().await;
                sink.draw_spinner();
            }
        }))
    }

    fn draw_spinner(&self) {
        let Ok(mut s) = self.screen.lock() else {
            return;
        };
        let Some(since) = s.waiting else {
            return;
        };
        // Not for quick answers: only after a moment of silence.
        if since.elapsed() < Duration::from_millis(80) {
            return;
        }
        s.frame = (s.frame + 1) % FRAMES.len();
        let text = format!(
            "\r{} {}",
            paint(self.caps.color, "36", FRAMES[s.frame]),
            paint(
                self.caps.color,
                "2",
                &format!("thinking… {}s", since.elapsed().as_secs())
            )
        );
        s.spinner_drawn = true;
        write_out(&text);
    }

    /// A line for the user outside of a turn (slash commands).
    pub fn say(&self, text: &str) {
        let Ok(mut s) = self.screen.lock() else {
            return;
        };
        self.clear_spinner(&mut s);
        s.plan_lines = None;
        let width = term::width();
        let mut out = String::new();
        for line in text.lines() {
            out.push_str(&term::fit(line, width));
            out.push('\n');
        }
        write_out(&out);
    }

    /// The same, dimmed.
    pub fn note(&self, text: &str) {
        self.say(&paint(self.caps.color, "2", text));
    }

    pub fn error(&self, text: &str) {
        self.say(&paint(self.caps.color, "31", text));
    }

    /// The turn is over: the spinner goes (a turn of cogni's own engine
    /// ends with a model response, which does this; an ACP agent's may
    /// end with a tool call).
    pub fn idle(&self) {
        if let Ok(mut s) = self.screen.lock() {
            self.stop_waiting(&mut s);
        }
    }

    /// Tokens of the last model request and its answer, once one was made.
    pub fn context_used(&self) -> Option<u64> {
        self.screen.lock().ok()?.context
    }

    /// Forget the last request's tokens (another session was opened).
    pub fn forget_context(&self) {
        if let Ok(mut s) = self.screen.lock() {
            s.context = None;
        }
    }

    /// Print folded text `number` (the last one without) in full.
    pub fn expand(&self, number: Option<usize>) {
        let Ok(mut s) = self.screen.lock() else {
            return;
        };
        self.clear_spinner(&mut s);
        s.plan_lines = None;
        match s.folds.get(number) {
            Ok(lines) => write_out(&format!("{}\n", lines.join("\n"))),
            Err(e) => write_out(&format!("{}\n", paint(self.caps.color, "31", &e))),
        }
    }

    /// Erase what is drawn on the cursor's row for now (the spinner, the
    /// line of the answer still streaming).
    fn clear_spinner(&self, s: &mut Screen) {
        if s.spinner_drawn || s.partial_drawn {
            write_out("\r\x1b[K");
            s.spinner_drawn = false;
            s.partial_drawn = false;
        }
    }

    /// The lines under a finished call (its diff, a command's last
    /// output), cut to the terminal's width.
    fn call_block(&self, s: &mut Screen, item: &Item) {
        let width = term::width();
        let lines = fold::block(item, self.caps.color, &mut s.folds);
        if !lines.is_empty() {
            let lines: Vec<String> = lines.iter().map(|l| term::fit(l, width)).collect();
            write_out(&format!("{}\n", lines.join("\n")));
        }
    }

    /// Stop waiting (the spinner goes away).
    fn stop_waiting(&self, s: &mut Screen) {
        s.waiting = None;
        self.clear_spinner(s);
    }
}

impl EventSink for ReplSink {
    fn emit(&self, event: AgentEvent) {
        // Model and tool text never acts on the terminal. Streamed text is
        // cleaned line by line by the markdown renderer instead, since an
        // escape sequence may be split across deltas.
        let event = match event {
            delta @ AgentEvent::ItemUpdated { .. } => delta,
            other => strip_event_controls(other),
        };
        let Ok(mut s) = self.screen.lock() else {
            return;
        };
        // `update_plan` calls are shown as the checklist they produce.
        if let AgentEvent::ItemStarted {
            item: Item::ToolCall { name, .. },
        }
        | AgentEvent::ItemCompleted {
            item: Item::ToolCall { name, .. },
        } = &event
        {
            if name == "update_plan" {
                return;
            }
        }
        // An `ask_user` call starts as its question and the menu of its
        // options (the approver draws them), and its answer is shown there:
        // nothing may draw over them.
        match &event {
            AgentEvent::ItemStarted {
                item: Item::ToolCall { name, .. },
            } if name == ask_user::NAME => {
                self.clear_spinner(&mut s);
                s.open_call = None;
                return;
            }
            AgentEvent::Question { .. } => {
                s.open_call = None;
                return;
            }
            _ => {}
        }
        if let AgentEvent::Plan { plan } = &event {
            self.clear_spinner(&mut s);
            let text = paint(self.caps.color, "36", &plan_lines(plan));
            let width = term::width();
            let block: Vec<String> = text.lines().map(|l| term::fit(l, width)).collect();
            if let (true, Some(n)) = (self.caps.ansi, s.plan_lines) {
                // Up to the previous checklist and over it.
                write_out(&format!("\x1b[{n}A\r\x1b[J"));
            }
            write_out(&format!("{}\n", block.join("\n")));
            s.plan_lines = Some(block.len());
            s.open_call = None;
            return;
        }
        let prints = matches!(
            event,
            AgentEvent::ItemUpdated { .. }
                | AgentEvent::ItemCompleted { .. }
                | AgentEvent::ItemDiscarded { .. }
                | AgentEvent::TurnFailed { .. }
        ) || status_line(false, &event).is_some();
        if prints {
            s.plan_lines = None;
        }
        let open_call = if prints {
            s.open_call.take()
        } else {
            s.open_call.clone()
        };
        match &event {
            AgentEvent::TurnStarted { .. } | AgentEvent::ModelRequest { .. } => {
                s.waiting = Some(Instant::now());
            }
            AgentEvent::ItemStarted {
                item: Item::AgentMessage { .. },
            } => {
                self.stop_waiting(&mut s);
                s.markdown.reset();
            }
            AgentEvent::ItemUpdated { delta, .. } => {
                s.waiting = None;
                let done = s.markdown.push(delta);
                // One write: what was drawn for now goes, the lines now
                // complete, then the line still streaming (as far as it
                // fits on the row), so a long paragraph shows as it comes.
                let mut out = String::new();
                if s.spinner_drawn || s.partial_drawn {
                    out.push_str("\r\x1b[K");
                    s.spinner_drawn = false;
                    s.partial_drawn = false;
                }
                out.push_str(&done);
                if self.caps.ansi {
                    if let Some(partial) = partial_row(s.markdown.pending(), term::width()) {
                        out.push_str(&partial);
                        s.partial_drawn = true;
                    }
                }
                if !out.is_empty() {
                    write_out(&out);
                }
            }
            AgentEvent::ItemCompleted {
                item: Item::AgentMessage { .. },
            } => {
                self.clear_spinner(&mut s);
                let text = s.markdown.finish();
                write_out(&text);
                if let Some(sources) = s.sources.take(self.caps.color) {
                    write_out(&format!("{sources}\n"));
                }
            }
            AgentEvent::Citation { citation } => s.sources.add(citation),
            AgentEvent::ItemDiscarded { .. } => {
                self.clear_spinner(&mut s);
                s.markdown.reset();
                let text = paint(
                    self.caps.color,
                    "33",
                    "[the stream broke; the answer starts over]",
                );
                write_out(&format!("\n{text}\n"));
            }
            AgentEvent::ModelResponse { usage, .. } => {
                self.stop_waiting(&mut s);
                if let Some(usage) = usage {
                    s.context = Some(usage.input_tokens + usage.output_tokens);
                }
            }
            AgentEvent::Approval {
                status: ApprovalStatus::Asked,
                ..
            } => self.stop_waiting(&mut s),
            AgentEvent::TurnFailed { error, .. } => {
                self.stop_waiting(&mut s);
                flush_partial(&mut s);
                let text = paint(self.caps.color, "31", &format!("error: {error}"));
                write_out(&format!("{}\n", term::fit(&text, term::width())));
            }
            AgentEvent::ItemStarted {
                item: Item::ToolCall { id, .. },
            } => {
                self.clear_spinner(&mut s);
                if let Some(text) = status_line(self.caps.color, &event) {
                    write_out(&format!("{}\n", term::fit(&text, term::width())));
                }
                s.open_call = Some(id.clone());
            }
            AgentEvent::ItemCompleted {
                item:
                    item @ Item::ToolCall {
                        id,
                        name,
                        arguments,
                        ..
                    },
            } => {
                self.clear_spinner(&mut s);
                if self.caps.ansi && open_call.as_deref() == Some(id.as_str()) {
                    // Replace the call's "started" line with its result.
                    if let Some((mark, detail)) = tool_result(self.caps.color, item) {
                        let text = format!("{mark} {name} {} · {detail}", one_line(arguments, 60));
                        write_out(&format!(
                            "\x1b[1A\r\x1b[K{}\n",
                            term::fit(&text, term::width())
                        ));
                    }
                } else if let Some(text) = status_line(self.caps.color, &event) {
                    write_out(&format!("{}\n", term::fit(&text, term::width())));
                }
                self.call_block(&mut s, item);
            }
            // A delegated agent's tool calls, indented under its name.
            AgentEvent::Subagent {
                agent,
                event: inner,
                ..
            } if matches!(
                **inner,
                AgentEvent::ItemStarted {
                    item: Item::ToolCall { .. }
                } | AgentEvent::ItemCompleted {
                    item: Item::ToolCall { .. }
                }
            ) =>
            {
                if let Some(text) = status_line(self.caps.color, inner) {
                    self.clear_spinner(&mut s);
                    let text = format!("    │ {} {}", agent_name(agent), text.trim_start());
                    write_out(&format!("{}\n", term::fit(&text, term::width())));
                }
            }
            // A turn that changed nothing says nothing about it.
            AgentEvent::Checkpoint { files, .. } if files.is_empty() => {}
            AgentEvent::Checkpoint { files, .. } => {
                self.clear_spinner(&mut s);
                let n = files.len();
                let text = format!("{n} file{} changed · /undo takes the turn back", plural(n));
                write_out(&format!("{}\n", paint(self.caps.color, "2", &text)));
            }
            event => {
                if let Some(text) = status_line(self.caps.color, event) {
                    self.clear_spinner(&mut s);
                    // A stopped turn: show the unfinished line of its answer.
                    if matches!(
                        event,
                        AgentEvent::Warning { .. } | AgentEvent::TurnCompleted { .. }
                    ) {
                        flush_partial(&mut s);
                    }
                    write_out(&format!("{}\n", term::fit(&text, term::width())));
                }
            }
        }
    }
}

/// The part of a message still waiting for its line to end, shown as it
/// is because the message will not go on.
fn flush_partial(s: &mut Screen) {
    let rest = s.markdown.finish();
    if !rest.is_empty() {
        write_out(&rest);
    }
}

/// The row that shows `pending`, the start of a line still streaming, on
/// a terminal `width` columns wide: its text without terminal controls (an
/// escape sequence cut off at its end is dropped whole), tabs as spaces,
/// and when it is longer than the row its end after `…`. `None` when
/// there is nothing to show.
fn partial_row(pending: &str, width: usize) -> Option<String> {
    let clean = strip_terminal_controls(pending).replace('\t', " ");
    if clean.trim().is_empty() {
        return None;
    }
    // One column free, so the row never wraps.
    let room = width.max(8) - 1;
    let count = clean.chars().count();
    if count <= room {
        return Some(clean);
    }
    let tail: String = clean.chars().skip(count - (room - 1)).collect();
    Some(format!("…{tail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streaming_line_fits_its_row() {
        assert_eq!(partial_row("", 80), None);
        assert_eq!(partial_row("  ", 80), None);
        assert_eq!(partial_row("Hello, wor", 80).as_deref(), Some("Hello, wor"));
        let long = "word ".repeat(40);
        let row = partial_row(&long, 40).unwrap();
        assert_eq!(row.chars().count(), 39, "one column stays free: {row:?}");
        assert!(row.starts_with('…') && row.ends_with("word "), "{row:?}");
        // An escape sequence cut off at the end is dropped, not half drawn.
        assert_eq!(partial_row("a\tb\x1b]0;tit", 80).as_deref(), Some("a b"));
    }
}
