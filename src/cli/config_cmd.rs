//! `cogni config example`: the annotated example configuration, every key
//! with what it does, as built into this binary (errors about config keys
//! point here).

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the annotated example cogni.toml (every key, with what it does).
    Example,
}

pub fn run(args: ConfigArgs) -> u8 {
    match args.command {
        ConfigCommand::Example => {
            print!("{}", crate::config::example::EXAMPLE);
            super::exit::DONE
        }
    }
}
