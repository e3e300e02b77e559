//! Neutral data shared by every layer: history items, tool calls and outputs,
//! usage, policies and the events the engine emits.
//!
//! Nothing here does I/O. Providers translate wire formats to and from these
//! types; tools consume and produce them; front doors render [`AgentEvent`]s.
//! history.rs holds what a conversation is made of (items, calls, outputs,
//! plans, tool specs, usage and prices), policy.rs what a session may do
//! (approval and sandbox policies), checkpoint.rs what is kept of the
//! workspace around a turn, question.rs the model's questions to the user
//! (`ask_user`), web.rs the provider's own web searches, events.rs what the engine reports (outcomes, events,
//! approvals, sinks and observers).

#![deny(missing_docs)]

mod checkpoint;
mod events;
mod history;
mod image;
pub mod layer;
mod policy;
mod question;
mod web;

pub use checkpoint::*;
pub use events::*;
pub use history::*;
pub use image::*;
pub use policy::*;
pub use question::*;
pub use web::*;

/// `error` and its causes, each said once, joined by `: ` (an HTTP
/// client's own message names the kind of failure, its causes what
/// failed).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The UTC date (`YYYY-MM-DD`) and time of day (hours, minutes, seconds)
/// of `secs` seconds after 1970-01-01 (session listings, run ids and
/// result timestamps).
pub fn utc_date_time(secs: u64) -> (String, (u64, u64, u64)) {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil, for days since 1970-01-01 (>= 0).
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        (rem / 3600, rem % 3600 / 60, rem % 60),
    )
}
