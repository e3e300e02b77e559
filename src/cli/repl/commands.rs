//! The REPL's slash commands: built-ins (name, usage, one line of help, a
//! handler) in the shared registry ([`crate::cli::slash`]) beside user
//! commands, which may take a built-in's name (the built-in stays
//! reachable as `/cogni:name`).

use super::init::init;
use super::review::review;
use super::undo::{diff, rewind, undo};
use super::{Mode, Repl};
use crate::cli::render::plan_lines;
use crate::cli::slash;
use crate::metrics::tokens;
use crate::protocol::{Content, HistoryItem, Role};
use crate::spec::cards::AgentCard;
use crate::tools::memory::Scope;
use futures::future::BoxFuture;
use std::fmt::Write as _;
use std::path::Path;

/// What the REPL does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit,
    /// Send this as a user message.
    Submit(String),
}

type Handler = for<'a> fn(&'a mut Repl, &'a str) -> BoxFuture<'a, Flow>;

pub type Builtin = slash::Builtin<Handler>;

pub type Registry = slash::Registry<Handler>;

/// The built-ins and the user commands found for `cwd` (when trusted) and
/// `home`, with problems to report.
pub fn load(cwd: &Path, home: &Path, project_trusted: bool) -> (Registry, Vec<String>) {
    Registry::load(builtins(), cwd, home, project_trusted)
}

macro_rules! handler {
    ($f:ident) => {
        |r, a| Box::pin($f(r, a))
    };
}

fn builtins() -> Vec<Builtin> {
    let mut list = vec![
        Builtin {
            name: "help",
            usage: "",
            help: "list every command",
            run: handler!(help),
        },
        Builtin {
            name: "exit",
            usage: "",
            help: "leave (also /quit, Ctrl-D)",
            run: handler!(exit),
        },
        Builtin {
            name: "quit",
            usage: "",
            help: "leave",
            run: handler!(exit),
        },
        Builtin {
            name: "clear",
            usage: "",
            help: "clear the screen",
            run: handler!(clear),
        },
        Builtin {
            name: "review",
            usage: crate::cli::review::SLASH_USAGE,
            help: "review the uncommitted changes (or a branch, a commit, files) read-only; findings by file",
            run: handler!(review),
        },
        Builtin {
            name: "init",
            usage: "[--force]",
            help: "write an AGENTS.md for this repository: the model studies it and writes the text",
            run: handler!(init),
        },
        Builtin {
            name: "expand",
            usage: "[N]",
            help: "show a folded diff or command output in full (the last one, or number N)",
            run: handler!(expand),
        },
        Builtin {
            name: "model",
            usage: "[NAME]",
            help: "show or switch the model (the conversation is kept)",
            run: handler!(model),
        },
        Builtin {
            name: "provider",
            usage: "",
            help: "the provider, its endpoint and wire API",
            run: handler!(provider),
        },
        Builtin {
            name: "tools",
            usage: "",
            help: "the tools the model can call",
            run: handler!(tools),
        },
        Builtin {
            name: "mcp",
            usage: "",
            help: "MCP servers: status and tools",
            run: handler!(mcp),
        },
        Builtin {
            name: "jobs",
            usage: "[kill N]",
            help: "background shell jobs; `kill N` stops one",
            run: handler!(jobs),
        },
        Builtin {
            name: "metrics",
            usage: "",
            help: "tokens, cost and timings so far",
            run: handler!(metrics),
        },
        Builtin {
            name: "status",
            usage: "",
            help: "model, mode, sandbox, cwd, context used of the window",
            run: handler!(status),
        },
        Builtin {
            name: "cost",
            usage: "",
            help: "tokens and cost of the session, the last turn and each delegated agent",
            run: handler!(cost),
        },
        Builtin {
            name: "mode",
            usage: "[plan|act|auto]",
            help: "plan: read-only, plan only; act: edit and run in the sandbox, asking as your approval policy says; auto: never ask (/mode shows each)",
            run: handler!(mode),
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
            name: "plan",
            usage: "",
            help: "show the model's plan (with [agent] enable_plan)",
            run: handler!(plan),
        },
        Builtin {
            name: "memory",
            usage: "[add NOTE|forget N]",
            help: "show the memory notes, add one, or forget one",
            run: handler!(memory),
        },
        Builtin {
            name: "skills",
            usage: "",
            help: "the skills found, their problems, what the listing leaves out",
            run: handler!(skills),
        },
        Builtin {
            name: "agent",
            usage: "[NAME]",
            help: "list agent cards or switch to one",
            run: handler!(agent),
        },
    ];
    // /undo, /rewind, /diff: the same in `cogni acp`.
    list.extend(crate::cli::undo::builtins(
        handler!(undo) as Handler,
        handler!(rewind),
        handler!(diff),
    ));
    list.extend([
        Builtin {
            name: "sessions",
            usage: "",
            help: "list saved sessions",
            run: handler!(sessions),
        },
        Builtin {
            name: "resume",
            usage: "[ID]",
            help: "reopen a saved session (no ID: pick one)",
            run: handler!(resume),
        },
    ]);
    list
}

async fn help(r: &mut Repl, _: &str) -> Flow {
    let mut text = String::from("commands:\n");
    for line in r.registry.help_lines() {
        let _ = writeln!(text, "  {line}");
    }
    text.push_str("input: @path attaches a file or directory listing · a line ending in \\ continues · Tab completes · Ctrl-C stops a turn");
    r.sink.say(&text);
    Flow::Continue
}

async fn exit(_: &mut Repl, _: &str) -> Flow {
    Flow::Exit
}

async fn clear(r: &mut Repl, _: &str) -> Flow {
    if r.sink.caps().ansi {
        r.sink.say("\x1b[2J\x1b[H");
    }
    Flow::Continue
}

async fn expand(r: &mut Repl, args: &str) -> Flow {
    match args.parse::<usize>() {
        _ if args.is_empty() => r.sink.expand(None),
        Ok(n) => r.sink.expand(Some(n)),
        Err(_) => r
            .sink
            .error("usage: /expand [N] (N: the number a fold shows)"),
    }
    Flow::Continue
}

async fn model(r: &mut Repl, args: &str) -> Flow {
    if args.is_empty() {
        let ctx = r.session.context();
        r.sink.say(&format!(
            "model: {} (family {}, context window {} tokens)",
            ctx.model, ctx.model_family.family, ctx.model_family.context_window
        ));
        return Flow::Continue;
    }
    match slash::switch_model(&mut r.session, &mut r.current, args) {
        Ok(()) => r.sink.note(&format!("model: {args}")),
        Err(e) => r.sink.error(&e),
    }
    Flow::Continue
}

async fn provider(r: &mut Repl, _: &str) -> Flow {
    let p = &r.current.provider;
    r.sink.say(&format!(
        "provider: {} ({}) · {} · wire API {:?}",
        p.id,
        p.name,
        if p.base_url.is_empty() {
            "-"
        } else {
            &p.base_url
        },
        p.wire_api
    ));
    Flow::Continue
}

async fn tools(r: &mut Repl, _: &str) -> Flow {
    let mut text = String::from("tools:\n");
    for t in &r.session.context().tools {
        let first = t.description.split(['.', '\n']).next().unwrap_or("");
        let ro = if t.read_only { " (read-only)" } else { "" };
        let _ = writeln!(text, "  {:<14} {}{ro}", t.name, first.trim());
    }
    r.sink.say(text.trim_end());
    Flow::Continue
}

async fn mcp(r: &mut Repl, _: &str) -> Flow {
    let Some(servers) = &r.mcp else {
        r.sink.say(crate::cli::mcp::render(&[]).trim_end());
        return Flow::Continue;
    };
    let mut text = crate::cli::mcp::render(&servers.reports().await);
    let held_back = servers.tools().deferred.len();
    if held_back > 0 {
        let _ = writeln!(
            text,
            "{held_back} tools are offered through search_tools (more than [mcp] max_eager_tools)"
        );
    }
    r.sink.say(text.trim_end());
    Flow::Continue
}

async fn jobs(r: &mut Repl, arg: &str) -> Flow {
    let table = r.session.jobs().clone();
    let words: Vec<&str> = arg.split_whitespace().collect();
    match words.as_slice() {
        [] => {
            let jobs = table.list();
            if jobs.is_empty() {
                r.sink.say("no background jobs");
                return Flow::Continue;
            }
            let mut text = String::from("background jobs:\n");
            for mut j in jobs {
                j.command = crate::cli::render::strip_terminal_controls(&j.command).into_owned();
                let _ = writeln!(
                    text,
                    "  {:>3}  {:<24} {:>7.1}s  {}",
                    j.id,
                    j.status,
                    j.elapsed.as_secs_f64(),
                    j.command
                );
            }
            r.sink.say(text.trim_end());
        }
        ["kill", id] => match id.parse::<u32>() {
            Ok(id) => {
                let limits = crate::process::truncate::Limits {
                    max_bytes: 4096,
                    max_lines: 40,
                };
                let result = table.stop(id, limits).await;
                // Command output: no terminal controls reach the screen.
                let clean = crate::cli::render::strip_terminal_controls(&result.content);
                r.sink.say(clean.trim_end());
            }
            Err(_) => r
                .sink
                .say(&format!("`{id}` is not a job number; /jobs lists them")),
        },
        _ => r.sink.say("usage: /jobs, or /jobs kill N"),
    }
    Flow::Continue
}

async fn metrics(r: &mut Repl, _: &str) -> Flow {
    let snapshot = r.session.metrics().snapshot();
    let s = snapshot.session;
    let mut text = format!(
        "tokens: {} in ({} cached) · {} out{}\nmodel requests: {} · model time {} ms · retries {} · compactions {}",
        s.usage.input_tokens,
        s.usage.cached_input_tokens,
        s.usage.output_tokens,
        if s.usage.estimated { " (estimated)" } else { "" },
        s.model_requests,
        s.model_ms,
        s.retries,
        s.compactions
    );
    if let Some(cost) = s.cost_usd {
        let _ = write!(text, "\ncost: ${cost:.4}");
    }
    if !s.time_to_first_token_ms.is_empty() {
        let n = s.time_to_first_token_ms.len() as u64;
        let mean = s.time_to_first_token_ms.iter().sum::<u64>() / n;
        let _ = write!(text, "\ntime to first token: {mean} ms on average");
    }
    for (name, t) in &s.tools {
        let _ = write!(
            text,
            "\n  {name}: {} calls, {} failed, {} ms total, {} ms max",
            t.calls, t.failures, t.total_ms, t.max_ms
        );
    }
    if !snapshot.agents.is_empty() {
        text.push_str("\nby agent:");
        for (path, a) in &snapshot.agents {
            let _ = write!(
                text,
                "\n  {}",
                spend(path, &a.usage, a.model_requests, a.cost_usd)
            );
        }
    }
    r.sink.say(&text);
    Flow::Continue
}

/// Tokens of each item, off the runtime.
async fn item_tokens(items: Vec<HistoryItem>) -> Vec<u64> {
    tokio::task::spawn_blocking(move || {
        items
            .iter()
            .map(|i| tokens::count_items(std::iter::once(i)))
            .collect()
    })
    .await
    .unwrap_or_default()
}

async fn status(r: &mut Repl, _: &str) -> Flow {
    let usage = r.session.context_usage();
    let ctx = r.session.context();
    let file = r
        .file
        .as_ref()
        .map_or("not saved".to_string(), |f| f.path().display().to_string());
    r.sink.say(&format!(
        "model: {} · provider {}\nmode: {} · sandbox {} · approval {}{}\ncwd: {}\ncontext: {usage} · {} items\nsession: {} ({file})",
        ctx.model,
        r.session.provider_id(),
        r.mode.name(),
        ctx.sandbox_policy.mode.as_str(),
        ctx.approval_policy.as_str(),
        r.agent.as_ref().map(|a| format!(" · agent {a}")).unwrap_or_default(),
        ctx.cwd.display(),
        r.session.history().len(),
        r.session.id,
    ));
    Flow::Continue
}

async fn cost(r: &mut Repl, _: &str) -> Flow {
    let snapshot = r.session.metrics().snapshot();
    let mut lines = vec![
        spend(
            "session",
            &snapshot.session.usage,
            snapshot.session.model_requests,
            snapshot.session.cost_usd,
        ),
        spend(
            "last turn",
            &snapshot.turn.usage,
            snapshot.turn.model_requests,
            snapshot.turn.cost_usd,
        ),
    ];
    if snapshot.agents.len() > 1 {
        for (agent, totals) in &snapshot.agents {
            lines.push(spend(
                agent,
                &totals.usage,
                totals.model_requests,
                totals.cost_usd,
            ));
        }
    }
    r.sink.say(&lines.join("\n"));
    Flow::Continue
}

/// `NAME: N requests · IN tokens in (CACHED cached) · OUT out · $COST`.
fn spend(name: &str, usage: &crate::protocol::Usage, requests: u32, cost: Option<f64>) -> String {
    use crate::runner::report::{format_cost, format_count};
    let cached = match usage.cached_input_tokens {
        0 => String::new(),
        n => format!(" ({} cached)", format_count(n)),
    };
    format!(
        "{name}: {requests} request{} · {} tokens in{cached} · {} out · {}{}",
        if requests == 1 { "" } else { "s" },
        format_count(usage.input_tokens),
        format_count(usage.output_tokens),
        match cost {
            Some(_) => format_cost(cost),
            None if usage.total() == 0 => format_cost(Some(0.0)),
            None =>
                "cost unknown (the model has no price: [model_families] input_price, output_price)"
                    .into(),
        },
        if usage.estimated {
            " (tokens estimated)"
        } else {
            ""
        },
    )
}

async fn mode(r: &mut Repl, args: &str) -> Flow {
    match Mode::parse(args) {
        Some(mode) => {
            r.set_mode(mode);
            r.sink.note(&crate::cli::mode::switched(mode, r.modes));
        }
        None if args.is_empty() => r.sink.say(&crate::cli::mode::listing(r.mode, r.modes)),
        None => r.sink.error("usage: /mode plan|act|auto"),
    }
    Flow::Continue
}

async fn compact(r: &mut Repl, _: &str) -> Flow {
    let sink = r.sink.clone();
    if let Err(e) = r.session.compact(&sink).await {
        r.sink.error(&e.to_string());
    }
    Flow::Continue
}

fn describe(item: &HistoryItem) -> String {
    let text = match &item.content {
        Content::Text { text, .. } => text.clone(),
        Content::ToolCall(c) => format!("{} {}", c.name, c.arguments),
        Content::ToolOutput(o) => o.content.clone(),
        Content::Reasoning(r) => format!("(reasoning) {}", r.text),
        Content::Image(image) => format!("(image) {}", image.describe()),
        Content::WebSearch(search) => format!("({})", search.describe()),
    };
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(70)
        .collect();
    flat.trim().to_string()
}

fn role(item: &HistoryItem) -> &'static str {
    match (&item.content, item.role) {
        (Content::ToolCall(_), _) => "call",
        (Content::ToolOutput(_), _) => "output",
        (Content::Reasoning(_), _) => "reasoning",
        (_, Role::User) if item.tag().is_some() => "context",
        (_, Role::User) => "user",
        (_, Role::Assistant) => "assistant",
        (_, Role::Developer) => "developer",
        (_, Role::Tool) => "tool",
    }
}

async fn context(r: &mut Repl, args: &str) -> Flow {
    if args.is_empty() {
        show_context(r).await;
        return Flow::Continue;
    }
    match slash::context_op(&mut r.session, args).await {
        Ok(done) => r.sink.note(&done),
        Err(e) => r.sink.error(&e),
    }
    Flow::Continue
}

async fn show_context(r: &mut Repl) {
    let history = r.session.history().to_vec();
    let counts = item_tokens(history.clone()).await;
    let initial = r.session.initial_len();
    let initial_tokens: u64 = counts[..initial.min(counts.len())].iter().sum();
    let mut text = format!("  initial context: {initial} items, {initial_tokens} tokens\n");
    for (i, (item, n)) in history.iter().zip(&counts).enumerate().skip(initial) {
        let _ = writeln!(
            text,
            "  {i:>4} {:<9} {n:>6}  {}",
            role(item),
            describe(item)
        );
    }
    let total: u64 = counts.iter().sum();
    let usage = r.session.context_usage();
    let checkpoints: Vec<&str> = r.session.checkpoints().collect();
    let _ = write!(text, "  history: {total} tokens · context: {usage}");
    if !checkpoints.is_empty() {
        let _ = write!(text, " · checkpoints: {}", checkpoints.join(", "));
    }
    r.sink.say(&text);
}

async fn plan(r: &mut Repl, _: &str) -> Flow {
    match r.session.plan() {
        Some(plan) => r.sink.say(&plan_lines(&plan)),
        None if r.current.enable_plan => r.sink.say("no plan yet"),
        None => r
            .sink
            .say("planning is off: set `[agent] enable_plan = true` in cogni.toml (docs/plan.md)"),
    }
    Flow::Continue
}

async fn skills(r: &mut Repl, _: &str) -> Flow {
    match &r.current.tool_config.skills {
        Some(skills) => {
            let text = crate::cli::skills::report(skills, true, &r.session.context().cwd);
            r.sink.say(text.trim_end());
        }
        None => r.sink.say(
            "skills are off: set `skills_enabled = true` under [features] in cogni.toml (docs/skills.md); `cogni skills` lists the skills found",
        ),
    }
    Flow::Continue
}

async fn memory(r: &mut Repl, args: &str) -> Flow {
    let Some(files) = r.current.prompt.memory_files.clone() else {
        r.sink
            .say("memory is off: set `[memory] enabled = true` in cogni.toml (docs/memory.md)");
        return Flow::Continue;
    };
    let (sub, rest) = args.split_once(' ').unwrap_or((args, ""));
    let rest = rest.trim();
    let today = r.session.context().system_prompt.today().date.clone();
    let result = match sub {
        "" => {
            let mut text = String::new();
            for (path, scope) in [(&files.project, Scope::Project), (&files.user, Scope::User)] {
                let _ = writeln!(text, "{}:", path.display());
                let notes: Vec<_> = files
                    .notes()
                    .into_iter()
                    .filter(|n| n.scope == scope)
                    .collect();
                if notes.is_empty() {
                    let _ = writeln!(text, "  (no notes)");
                }
                for (i, note) in notes.iter().enumerate() {
                    let mark = if scope == Scope::Project {
                        format!("{:>3}", i + 1)
                    } else {
                        "  -".into()
                    };
                    let _ = writeln!(text, "{mark} {}", note.text);
                }
            }
            r.sink.say(text.trim_end());
            Ok(())
        }
        "add" if !rest.is_empty() => files
            .remember(rest, &today)
            .map(|()| {
                r.sink
                    .note(&format!("remembered in {}", files.project.display()))
            })
            .map_err(|e| e.to_string()),
        "forget" => match rest.parse::<usize>() {
            Ok(n) if n >= 1 => files
                .forget(n)
                .map(|gone| r.sink.note(&format!("forgot: {gone}"))),
            _ => Err("usage: /memory forget N (the number /memory shows)".into()),
        },
        _ => Err("usage: /memory [add NOTE|forget N]".into()),
    };
    if let Err(e) = result {
        r.sink.error(&e);
    }
    Flow::Continue
}

async fn agent(r: &mut Repl, args: &str) -> Flow {
    let cards = r.agents.clone();
    if args.is_empty() {
        if cards.is_empty() {
            r.sink.say(
                "no agents (add cards to .cogni/agents/ or $COGNI_HOME/agents/, or [agents.NAME] to config)",
            );
        }
        for c in &cards {
            let mark = if r.agent.as_deref() == Some(c.name.as_str()) {
                "*"
            } else {
                " "
            };
            let extra: Vec<String> = [c.model.clone(), c.mode.clone()]
                .into_iter()
                .flatten()
                .collect();
            r.sink.say(&format!(
                "{mark} {:<16} {}{}",
                c.name,
                c.description,
                if extra.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", extra.join(", "))
                }
            ));
        }
        return Flow::Continue;
    }
    match cards.iter().find(|c| c.name == args) {
        Some(card) => match switch_agent(r, card) {
            Ok(()) => r.sink.note(&format!(
                "agent: {} · model {}",
                card.name,
                r.session.context().model
            )),
            Err(e) => r.sink.error(&e),
        },
        None => r
            .sink
            .error(&format!("no agent card named `{args}`; /agent lists them")),
    }
    Flow::Continue
}

/// The session as the card says: its model, instructions and tools, then
/// its mode.
fn switch_agent(r: &mut Repl, card: &AgentCard) -> Result<(), String> {
    let mut config = r.original.clone();
    config.approval_policy = r.current.approval_policy;
    config.sandbox_policy = r.current.sandbox_policy.clone();
    crate::cli::agents::apply_card(&mut config, card, r.model_typed);
    r.session
        .reconfigure(config.clone())
        .map_err(|e| format!("agent {}: {e}", card.name))?;
    r.current = config;
    r.agent = Some(card.name.clone());
    if let Some(mode) = card.mode.as_deref().and_then(Mode::parse) {
        r.set_mode(mode);
    }
    Ok(())
}

async fn sessions(r: &mut Repl, _: &str) -> Flow {
    match r.store.list() {
        Ok(list) if list.is_empty() => r.sink.say("no saved sessions"),
        Ok(list) => {
            for s in &list {
                let mark = if s.id == r.session.id { "*" } else { " " };
                r.sink
                    .say(&format!("{mark} {}", crate::cli::persist::summary_line(s)));
            }
        }
        Err(e) => r.sink.error(&e.to_string()),
    }
    Flow::Continue
}

async fn resume(r: &mut Repl, args: &str) -> Flow {
    let id = if args.is_empty() {
        // The picker of `cogni resume`, while the prompt is not reading.
        let (home, cwd, color) = (
            r.home.clone(),
            r.session.context().cwd.clone(),
            r.sink.caps().color,
        );
        match tokio::task::spawn_blocking(move || super::picker::pick(&home, &cwd, color)).await {
            Ok(Ok(Some(id))) => id,
            Ok(Ok(None)) => return Flow::Continue,
            Ok(Err(e)) => {
                r.sink
                    .error(&format!("{e}; /resume ID opens one (see /sessions)"));
                return Flow::Continue;
            }
            Err(_) => return Flow::Continue,
        }
    } else {
        args.to_string()
    };
    match r.resume(&id).await {
        Ok(()) => {
            r.sink.note(&format!(
                "resumed session {} ({} items)",
                r.session.id,
                r.session.history().len()
            ));
            r.show_earlier();
        }
        Err(e) => r.sink.error(&e),
    }
    Flow::Continue
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_has_help_and_a_unique_name() {
        let list = builtins();
        for b in &list {
            assert!(!b.help.is_empty(), "{}", b.name);
            assert_eq!(list.iter().filter(|x| x.name == b.name).count(), 1);
        }
        for name in slash::RESERVED {
            assert!(list.iter().any(|b| b.name == *name));
        }
    }
}
