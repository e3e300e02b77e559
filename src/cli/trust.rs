//! `cogni trust`: record that a directory's own cogni.toml may redirect
//! providers and keys and loosen the sandbox.

use crate::config::{self, TrustStore};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The directory (default: the current one).
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

pub fn run(args: TrustArgs) -> u8 {
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
    let dir = std::fs::canonicalize(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
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
