//! Taking turns back from the checkpoints (docs/checkpoints.md): `cogni
//! undo SESSION` after a `cogni run --checkpoint`, and what `/undo` and
//! `/rewind` show in the REPL and `cogni acp`.

use super::render::{plural, strip_terminal_controls};
use super::{exit, setup, slash, UndoArgs};
use crate::agent::checkpoints::{self, Rewind, RewindPlan};
use crate::agent::Session;
use crate::config::ConfigFile;
use crate::protocol::EventSink;
use crate::protocol::TurnCheckpoint;
use crate::store::{self, Store};
use crate::tools::checkpoint::Snapshots;

/// What will happen to each path of `plan`, one line each (`remove` what
/// the turns made, `write back` what they deleted, `restore` the rest),
/// conflicts marked.
pub fn describe(plan: &RewindPlan) -> Vec<String> {
    plan.changes
        .iter()
        .map(|c| {
            let what = match c.status {
                'A' => "remove",
                'D' => "write back",
                _ => "restore",
            };
            let path = strip_terminal_controls(&c.path);
            if plan.conflicts.contains(&c.path) {
                format!("  {what:<10} {path}  (changed by hand since: conflict)")
            } else {
                format!("  {what:<10} {path}")
            }
        })
        .collect()
}

/// One line per turn: number, time, files changed, prompt.
pub fn list_turns(list: &[TurnCheckpoint]) -> Vec<String> {
    list.iter()
        .map(|c| {
            let prompt: String =
                strip_terminal_controls(c.prompt.lines().next().unwrap_or_default())
                    .chars()
                    .take(60)
                    .collect();
            let n = c.files.len();
            format!(
                "  {:>3}  {}  {:>9}  {prompt}",
                c.turn,
                store::format_time(c.at),
                format!("{n} file{}", plural(n))
            )
        })
        .collect()
}

/// `/undo`, `/rewind` and `/diff` as built-ins of a front door's command
/// registry (the REPL's, `cogni acp`'s), run by its handlers.
pub fn builtins<H>(undo: H, rewind: H, diff: H) -> [slash::Builtin<H>; 3] {
    [
        slash::Builtin {
            name: "undo",
            usage: "[--force|--keep-mine]",
            help: "take the last turn back: its changes to the files and its place in the conversation",
            run: undo,
        },
        slash::Builtin {
            name: "rewind",
            usage: "[N [both|files|conversation] [--force|--keep-mine]]",
            help: "list the turns, or go back to before turn N (files, conversation or both)",
            run: rewind,
        },
        slash::Builtin {
            name: "diff",
            usage: "",
            help: "everything changed in the workspace since the session's first turn",
            run: diff,
        },
    ]
}

/// What to do with the paths changed by hand since the turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Restore them too.
    Overwrite,
    /// Leave them, restore the rest.
    KeepMine,
    /// Restore nothing.
    Cancel,
}

/// `/undo` or `/rewind N ...` as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The first turn taken back (`None`: the last one).
    turn: Option<u32>,
    what: Rewind,
    /// Given as `--force` or `--keep-mine`.
    settle: Option<Settle>,
}

/// The usage of `/rewind`.
const REWIND_USAGE: &str =
    "usage: /rewind [N [both|files|conversation] [--force|--keep-mine]] (no N: list the turns)";

/// `/undo ARGS` (`undo`) or `/rewind ARGS`: what is asked, or `None` for
/// `/rewind` alone (list the turns).
pub fn parse(args: &str, undo: bool) -> Result<Option<Asked>, String> {
    let usage = if undo {
        "usage: /undo [--force|--keep-mine]"
    } else {
        REWIND_USAGE
    };
    let mut asked = Asked {
        turn: None,
        what: Rewind {
            files: true,
            conversation: true,
            overwrite: false,
        },
        settle: None,
    };
    let words: Vec<&str> = args.split_whitespace().collect();
    if !undo && words.is_empty() {
        return Ok(None);
    }
    for (i, word) in words.iter().enumerate() {
        match *word {
            "--force" if asked.settle.is_none() => asked.settle = Some(Settle::Overwrite),
            "--keep-mine" if asked.settle.is_none() => asked.settle = Some(Settle::KeepMine),
            "both" if !undo && i == 1 => {}
            "files" if !undo && i == 1 => asked.what.conversation = false,
            "conversation" if !undo && i == 1 => asked.what.files = false,
            n if !undo && i == 0 => asked.turn = Some(n.parse().map_err(|_| usage.to_string())?),
            _ => return Err(usage.into()),
        }
    }
    Ok(Some(asked))
}

/// A rewind planned and described, waiting for the conflicts to be
/// settled.
pub struct Prepared {
    asked: Asked,
    plan: RewindPlan,
    /// What will happen, for the user.
    pub text: String,
}

impl Prepared {
    /// Paths changed by hand since (to ask about, unless `settled`).
    pub fn conflicts(&self) -> &[String] {
        if self.asked.what.files {
            &self.plan.conflicts
        } else {
            &[]
        }
    }

    /// How the conflicts were settled on the command line.
    pub fn settled(&self) -> Option<Settle> {
        self.asked.settle
    }
}

/// Plan what `asked` takes back in `session`.
pub async fn prepare(
    session: &mut Session,
    asked: Asked,
    sink: &dyn EventSink,
) -> Result<Prepared, String> {
    let turn = match asked.turn {
        Some(turn) => turn,
        None => session
            .turn_checkpoints()
            .last()
            .map(|c| c.turn)
            .ok_or("no checkpoints yet: nothing to undo")?,
    };
    let plan = session
        .plan_rewind(turn, sink)
        .await
        .map_err(|e| e.to_string())?;
    if asked.what.conversation && !plan.conversation {
        return Err(format!(
            "the conversation was rewritten since turn {turn} (compaction or /context): `/rewind {turn} files` takes back only its files"
        ));
    }
    let prompt = session
        .turn_checkpoints()
        .iter()
        .find(|c| c.turn == turn)
        .map(|c| strip_terminal_controls(c.prompt.lines().next().unwrap_or_default()).into_owned())
        .unwrap_or_default();
    let mut text = format!("back to before turn {turn} (\"{prompt}\")");
    let lines = describe(&plan);
    if asked.what.files {
        if lines.is_empty() {
            text.push_str("\n  no file to restore");
        }
        for line in lines {
            text.push('\n');
            text.push_str(&line);
        }
    }
    Ok(Prepared { asked, plan, text })
}

/// Carry out `prepared`, its conflicts settled by `settle`: what was done.
pub async fn finish(
    session: &mut Session,
    prepared: Prepared,
    settle: Settle,
) -> Result<String, String> {
    if settle == Settle::Cancel && !prepared.conflicts().is_empty() {
        return Ok("nothing was changed".into());
    }
    let what = Rewind {
        overwrite: settle == Settle::Overwrite,
        ..prepared.asked.what
    };
    let report = session
        .rewind(&prepared.plan, what)
        .await
        .map_err(|e| e.to_string())?;
    let mut done = Vec::new();
    if what.files {
        let n = report.restored.len();
        done.push(format!("restored {n} path{}", plural(n)));
        if !report.kept.is_empty() {
            done.push(format!("kept {} changed by hand", report.kept.len()));
        }
    }
    if what.conversation {
        done.push(format!(
            "removed turn {} and later from the conversation ({} items)",
            prepared.plan.turn, report.removed_items
        ));
    }
    Ok(done.join("; "))
}

/// `cogni undo [SESSION]`: put the workspace back to before the session's
/// turns (from `--turn N` on; default all), leaving what was changed by
/// hand since unless `--force`.
pub fn run(args: UndoArgs) -> u8 {
    match undo(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cogni: {e}");
            exit::USAGE
        }
    }
}

fn undo(args: &UndoArgs) -> Result<u8, String> {
    let (launch_dir, cwd) = setup::dirs(&args.common)?;
    let home = setup::load(
        &args.common,
        &launch_dir,
        cwd.clone(),
        ConfigFile::default(),
    )?
    .home;
    let store = Store::new(&home);
    let id = match &args.session {
        Some(query) => store.resolve(query).map_err(|e| e.to_string())?,
        None => last_here(&store, &cwd)?,
    };
    let loaded = store.load(&id).map_err(|e| e.to_string())?;
    let list = loaded.checkpoints;
    let Some(first) = list.first() else {
        return Err(format!(
            "session {id} has no checkpoints: run with `cogni run --checkpoint` (or [checkpoints] run = true) to be able to undo a run"
        ));
    };
    let turn = args.turn.unwrap_or(first.turn);
    let location = checkpoints::location(first, &id);
    let runtime = setup::runtime()?;
    runtime.block_on(async {
        let mut snapshots = Snapshots::at(location).await?;
        let now = snapshots.take("cogni: before `cogni undo`").await?;
        let plan = checkpoints::plan_rewind(&mut snapshots, &list, turn, now)
            .await
            .map_err(|e| e.to_string())?;
        let target = list
            .iter()
            .find(|c| c.turn == turn)
            .expect("plan_rewind found it");
        if plan.changes.is_empty() {
            println!("nothing to undo: the files are as they were before turn {turn} of session {id}");
            return Ok(exit::DONE);
        }
        println!(
            "session {id}, back to before turn {turn} ({}):",
            target.workspace.display()
        );
        for line in describe(&plan) {
            println!("{line}");
        }
        if args.dry_run {
            return Ok(exit::DONE);
        }
        if !plan.conflicts.is_empty() && !args.force && !args.keep_mine {
            eprintln!(
                "cogni: {} path(s) were changed by hand after the turn; nothing was restored. `--keep-mine` restores the others and leaves those, `--force` overwrites them too",
                plan.conflicts.len()
            );
            return Ok(exit::TASK_FAILED);
        }
        let report = checkpoints::restore_files(&mut snapshots, target, &plan, args.force)
            .await
            .map_err(|e| e.to_string())?;
        println!(
            "restored {} path(s){}",
            report.restored.len(),
            match report.kept.len() {
                0 => String::new(),
                n => format!("; kept {n} changed by hand"),
            }
        );
        Ok(exit::DONE)
    })
}

/// The newest session that ran in `cwd`.
fn last_here(store: &Store, cwd: &std::path::Path) -> Result<String, String> {
    store
        .list()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|s| s.cwd == cwd)
        .max_by_key(|s| s.started_at)
        .map(|s| s.id)
        .ok_or_else(|| {
            format!(
                "no saved session ran in {}; name one (`cogni sessions` lists them)",
                cwd.display()
            )
        })
}
