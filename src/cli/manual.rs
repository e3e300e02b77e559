//! `cogni completions SHELL` and `cogni man [COMMAND...]`: shell
//! completion scripts and manual pages, both generated from the clap
//! definitions, so they always match the binary.

use super::{exit, Cli};
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, powershell (or elvish).
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (e.g. `run`, `sandbox check`);
    /// cogni's own page when none.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,

    /// Write every page (cogni.1, cogni-run.1, ...) into DIR instead.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub out_dir: Option<PathBuf>,
}

/// The completion script on stdout.
pub fn completions(args: CompletionsArgs) -> u8 {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "cogni", &mut script);
    print_bytes(&script)
}

/// A manual page (roff) on stdout, or every page into a directory.
pub fn man(args: ManArgs) -> u8 {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = args.out_dir {
        let written =
            std::fs::create_dir_all(&dir).and_then(|()| clap_mangen::generate_to(cmd, &dir));
        return match written {
            Ok(()) => {
                println!("{}", dir.display());
                exit::DONE
            }
            Err(e) => {
                eprintln!(
                    "cogni man: cannot write the pages to {}: {e}",
                    dir.display()
                );
                exit::TASK_FAILED
            }
        };
    }
    let mut page = &cmd;
    for (i, name) in args.command.iter().enumerate() {
        let Some(sub) = page.find_subcommand(name) else {
            let known: Vec<&str> = page
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| s.get_name())
                .collect();
            let path = args.command[..i].join(" ");
            let under = if path.is_empty() {
                "cogni".to_string()
            } else {
                format!("cogni {path}")
            };
            eprintln!(
                "cogni man: `{under}` has no command `{name}`; it has: {}",
                if known.is_empty() {
                    "(none)".to_string()
                } else {
                    known.join(", ")
                }
            );
            return exit::USAGE;
        };
        page = sub;
    }
    let mut roff = Vec::new();
    if let Err(e) = clap_mangen::Man::new(page.clone()).render(&mut roff) {
        eprintln!("cogni man: {e}");
        return exit::TASK_FAILED;
    }
    print_bytes(&roff)
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
fn print_bytes(bytes: &[u8]) -> u8 {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => exit::DONE,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit::DONE,
        Err(e) => {
            eprintln!("cogni: cannot write to stdout: {e}");
            exit::TASK_FAILED
        }
    }
}
