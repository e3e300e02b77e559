//! `cogni trust`: record that a directory's own files (cogni.toml in full,
//! hooks, MCP servers, skills, cards, commands) apply; list or revoke
//! trust; show what an untrusted directory may set. Both spellings work:
//! `cogni trust list` and `cogni trust --list`.

use crate::config::{self, TrustStore};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct TrustArgs {
    #[command(subcommand)]
    pub command: Option<TrustCommand>,

    /// The directory (default: the current one; `./list` for a directory
    /// named like a subcommand).
    pub dir: Option<PathBuf>,

    /// List the trusted directories.
    #[arg(long, conflicts_with_all = ["dir", "revoke"])]
    pub list: bool,

    /// List the keys an untrusted directory's cogni.toml may set, and why.
    #[arg(long, conflicts_with_all = ["dir", "revoke", "list"])]
    pub allowlist: bool,

    /// Remove the directory from the trusted ones.
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// List the trusted directories (also `--list`).
    List,
    /// Remove a directory (default: the current one) from the trusted ones
    /// (also `--revoke [DIR]`).
    Revoke {
        /// The directory (default: the current one).
        dir: Option<PathBuf>,
    },
    /// List the keys an untrusted directory's cogni.toml may set, and why
    /// (also `--allowlist`).
    Allowlist,
}

pub fn run(mut args: TrustArgs) -> u8 {
    // The subcommands are the flags by another spelling.
    match args.command.take() {
        Some(TrustCommand::List) => args.list = true,
        Some(TrustCommand::Allowlist) => args.allowlist = true,
        Some(TrustCommand::Revoke { dir }) => {
            args.revoke = true;
            args.dir = dir;
        }
        None => {}
    }
    match trust(args) {
        Ok(()) => super::exit::DONE,
        Err(message) => {
            eprintln!("cogni: {message}");
            super::exit::USAGE
        }
    }
}

fn trust(args: TrustArgs) -> Result<(), String> {
    let home = config::cogni_home(&|k| std::env::var(k).ok());
    let mut store = TrustStore::load(&home).map_err(|e| e.to_string())?;
    if args.allowlist {
        for (key, why) in config::untrusted_allowlist() {
            println!("{key:<40} {why}");
        }
        return Ok(());
    }
    if args.list {
        for dir in store.dirs() {
            println!("{}", dir.display());
        }
        return Ok(());
    }
    let dir = match args.dir {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let dir =
        crate::sandbox::sys::canonicalize(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if args.revoke {
        if !store.revoke(&dir) {
            return Err(format!("{} was not trusted", dir.display()));
        }
        store.save().map_err(|e| e.to_string())?;
        println!("no longer trusted: {}", dir.display());
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    store.trust(dir.clone());
    store.save().map_err(|e| e.to_string())?;
    println!(
        "trusted: {} (its cogni.toml in full, its hooks, MCP servers, skills, agent cards and commands now apply)",
        dir.display()
    );
    Ok(())
}
