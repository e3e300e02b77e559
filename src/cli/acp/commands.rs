//! The slash commands of an ACP session: the built-ins that make sense in
//! an editor, beside the agent's commands (user commands and skills;
//! [`crate::cli::slash`] decides who gets a name). Each answers with text
//! the client shows as the agent's message.

use super::live::Live;
use crate::cli::mode::Mode;
use crate::cli::slash;
use crate::cli::undo::{self, Settle};
use agent_client_protocol::v1::schema as acp;
use futures::future::BoxFuture;
use std::fmt::Write as _;

type Handler = for<'a> fn(&'a mut Live, &'a str) -> BoxFuture<'a, String>;

pub type Builtin = slash::Builtin<Handler>;

pub type Registry = slash::Registry<Handler>;

macro_rules! handler {
    ($f:ident) => {
        |live, args| Box::pin($f(live, args))
    };
}

pub fn builtins() -> Vec<Builtin> {
    let mut list = vec![
        Builtin {
            name: "help",
            usage: "",
            help: "list every command",
            run: handler!(help),
        },
        Builtin {
            name: "mode",
            usage: "[plan|act|auto]",
            help: "show or switch the mode",
            run: handler!(mode),
        },
        Builtin {
            name: "model",
            usage: "[NAME]",
            help: "show or switch the model (the conversation is kept)",
            run: handler!(model),
        },
        Builtin {
            name: "compact",
            usage: "",
            help: "compact the history now",
            run: handler!(compact),
        },
        Builtin {
            name: "context",
            usage: "[pop [N]|checkpoint NAME|rollback NAME|reset|summarize]",
            help: "show or edit the context stack",
            run: handler!(context),
        },
        Builtin {
            name: "review",
            usage: crate::cli::review::SLASH_USAGE,
            help: "review the uncommitted changes (or a branch, a commit, files) read-only; findings by file",
            run: handler!(review),
        },
        Builtin {
            name: "plan",
            usage: "",
            help: "show the model's plan (with [agent] enable_plan)",
            run: handler!(plan),
        },
    ];
    list.extend(undo::builtins(
        handler!(undo) as Handler,
        handler!(rewind),
        handler!(diff),
    ));
    list
}

/// The commands as the client lists them.
pub fn available(registry: &Registry) -> Vec<acp::AvailableCommand> {
    let input = |hint: &str| {
        (!hint.is_empty()).then(|| {
            acp::AvailableCommandInput::Unstructured(acp::UnstructuredCommandInput::new(hint))
        })
    };
    let mut list: Vec<acp::AvailableCommand> = registry
        .builtins()
        .iter()
        .map(|b| acp::AvailableCommand::new(registry.builtin_name(b), b.help).input(input(b.usage)))
        .collect();
    list.extend(
        registry
            .user()
            .iter()
            .map(|u| acp::AvailableCommand::new(u.name.clone(), u.summary()).input(input("ARGS"))),
    );
    list
}

async fn help(live: &mut Live, _: &str) -> String {
    let mut text = String::from("Commands:\n");
    for b in live.commands.builtins() {
        let name = format!("/{} {}", live.commands.builtin_name(b), b.usage);
        let _ = writeln!(text, "- `{}`: {}", name.trim_end(), b.help);
    }
    for u in live.commands.user() {
        let _ = writeln!(text, "- `/{} [ARGS]`: {}", u.name, u.summary());
    }
    text
}

async fn mode(live: &mut Live, args: &str) -> String {
    if args.is_empty() {
        return crate::cli::mode::listing(live.mode, live.modes);
    }
    match Mode::parse(args) {
        Some(mode) => {
            live.switch_mode(mode);
            crate::cli::mode::switched(mode, live.modes)
        }
        None => "usage: /mode plan|act|auto".into(),
    }
}

async fn model(live: &mut Live, args: &str) -> String {
    if args.is_empty() {
        let ctx = live.session.context();
        return format!(
            "model: {} (family {}, context window {} tokens)",
            ctx.model, ctx.model_family.family, ctx.model_family.context_window
        );
    }
    match slash::switch_model(&mut live.session, &mut live.config, args) {
        Ok(()) => format!("model: {args}"),
        Err(e) => e,
    }
}

async fn compact(live: &mut Live, _: &str) -> String {
    let updates = live.updates.clone();
    match live.session.compact(&*updates).await {
        Ok(()) => format!("compacted: {} items", live.session.history().len()),
        Err(e) => e.to_string(),
    }
}

async fn context(live: &mut Live, args: &str) -> String {
    if args.is_empty() {
        let usage = live.session.context_usage();
        let checkpoints: Vec<&str> = live.session.checkpoints().collect();
        let mut text = format!("context: {usage} · {} items", live.session.history().len());
        if !checkpoints.is_empty() {
            let _ = write!(text, " · checkpoints: {}", checkpoints.join(", "));
        }
        return text;
    }
    slash::context_op(&mut live.session, args)
        .await
        .unwrap_or_else(|e| e)
}

async fn plan(live: &mut Live, _: &str) -> String {
    match live.session.plan() {
        Some(plan) => {
            live.updates.plan(&plan);
            plan.explanation
                .unwrap_or_else(|| "the plan is shown".into())
        }
        None if live.config.enable_plan => "no plan yet".into(),
        None => {
            "planning is off: set `[agent] enable_plan = true` in cogni.toml (docs/plan.md)".into()
        }
    }
}

/// `/review ARGS`: a read-only review in a session of its own, streamed
/// to the client like a turn (a cancel stops it), its report as Markdown;
/// the conversation is told the report.
async fn review(live: &mut Live, args: &str) -> String {
    use crate::cli::review::{parse_slash, Job};
    let (scope, focus) = match parse_slash(args) {
        Ok(parsed) => parsed,
        Err(usage) => return usage,
    };
    let job = match Job::read(&live.cwd, scope, focus).await {
        Ok(job) => job,
        Err(e) => return e,
    };
    if let Some(nothing) = job.nothing() {
        return nothing.explanation;
    }
    let stop = live.session.stop_handle();
    let (mut session, findings, prompt) =
        match job.session(&live.config, !live.modes.unconfined, stop) {
            Ok(opened) => opened,
            Err(e) => return e,
        };
    let updates = live.updates.clone();
    let turn = session.run_turn(&prompt, &*updates).await;
    session
        .end(crate::agent::EndReason::after(&turn), &*updates)
        .await;
    let report = job.report(&findings, &turn);
    live.session
        .append_note(crate::protocol::Role::Developer, job.note(&report));
    format!("\n\n{}", crate::runner::review::markdown::markdown(&report))
}

async fn undo(live: &mut Live, args: &str) -> String {
    take_back(live, args, true).await
}

async fn rewind(live: &mut Live, args: &str) -> String {
    take_back(live, args, false).await
}

/// `/undo` and `/rewind` in an editor: no key to ask with, so paths
/// changed by hand since stop the rewind unless `--force` or
/// `--keep-mine` says what to do with them.
async fn take_back(live: &mut Live, args: &str, last: bool) -> String {
    let asked = match undo::parse(args, last) {
        Ok(Some(asked)) => asked,
        Ok(None) => {
            let list = live.session.turn_checkpoints();
            if list.is_empty() {
                return "no checkpoints yet: nothing to rewind".into();
            }
            return format!(
                "Turns (`/rewind N` goes back to before one):\n```\n{}\n```",
                undo::list_turns(list).join("\n")
            );
        }
        Err(usage) => return usage,
    };
    let updates = live.updates.clone();
    let prepared = match undo::prepare(&mut live.session, asked, &*updates).await {
        Ok(prepared) => prepared,
        Err(e) => return e,
    };
    let text = format!("```\n{}\n```", prepared.text);
    let settle = match prepared.settled() {
        Some(settle) => settle,
        None if prepared.conflicts().is_empty() => Settle::Overwrite,
        None => {
            return format!(
                "{text}\n{} path(s) were changed by hand after the turn, so nothing was changed: add `--keep-mine` to restore the rest, or `--force` to overwrite them too.",
                prepared.conflicts().len()
            )
        }
    };
    match undo::finish(&mut live.session, prepared, settle).await {
        Ok(done) => format!("{text}\n{done}"),
        Err(e) => format!("{text}\n{e}"),
    }
}

async fn diff(live: &mut Live, _: &str) -> String {
    let updates = live.updates.clone();
    match live.session.checkpoint_diff(&*updates).await {
        Ok(diff) if diff.trim().is_empty() => "no changes since the session's first turn".into(),
        Ok(diff) => format!("```diff\n{}\n```", diff.trim_end()),
        Err(e) => e.to_string(),
    }
}
