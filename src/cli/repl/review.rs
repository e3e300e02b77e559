//! `/review [--base BRANCH | --commit SHA | --files PATH...] [FOCUS]`: a
//! review in a session of its own (read-only whatever the mode, with
//! `report_finding`; see [`crate::cli::review`]), streamed like a turn,
//! stopped like one (Ctrl-C, Esc), and its report shown. The report is
//! then told to the conversation, so that the next message can ask for
//! the fixes.

use super::commands::Flow;
use super::{keys, stop_turn, term, Repl};
use crate::agent::EndReason;
use crate::cli::review::{parse_slash, terminal_report, Job};
use crate::protocol::Role;
use crate::runner::review as job;

/// `/review ARGS`.
pub async fn review(r: &mut Repl, args: &str) -> Flow {
    let (scope, focus) = match parse_slash(args) {
        Ok(parsed) => parsed,
        Err(usage) => {
            r.sink.error(&usage);
            return Flow::Continue;
        }
    };
    let cwd = r.session.context().cwd.clone();
    let job = match Job::read(&cwd, scope, focus).await {
        Ok(job) => job,
        Err(e) => {
            r.sink.error(&e);
            return Flow::Continue;
        }
    };
    if let Some(nothing) = job.nothing() {
        r.sink.note(&nothing.explanation);
        return Flow::Continue;
    }
    let stop = r.session.stop_handle();
    let (mut session, findings, prompt) = match job.session(&r.current, !r.modes.unconfined, stop) {
        Ok(opened) => opened,
        Err(e) => {
            r.sink.error(&e);
            return Flow::Continue;
        }
    };
    r.sink.note(&format!(
        "reviewing {} (read-only, in a session of its own)",
        job.scope.describe()
    ));
    let spinner = r.sink.spawn_spinner();
    let keys = keys::TurnKeys::start(stop_turn(r.stop.clone()), r.notices.follow_focus());
    let turn = session.run_turn(&prompt, &r.sink).await;
    if let Some(keys) = keys {
        r.ahead = keys.finish();
    }
    if let Some(spinner) = spinner {
        spinner.abort();
    }
    session.end(EndReason::after(&turn), &r.sink).await;
    let report = job.report(&findings, &turn);
    let finished = matches!(&turn, Ok(t) if job::reported(t));
    if !finished {
        r.sink.error("the review did not finish");
    }
    r.sink.say(&terminal_report(
        &report,
        r.sink.caps().color,
        Some(term::width()),
    ));
    r.session.append_note(Role::Developer, job.note(&report));
    Flow::Continue
}
