//! `cogni merge DIR... --output-dir OUT`: the shards of a run
//! (`cogni run --tasks FILE --shard K/N`) as one run: results.json,
//! junit.xml and report.html, with the exit code of a whole run.

use super::exit;
use super::tasks::summarize;
use crate::runner::merge::{merge, Part};
use crate::runner::{report, Verdict};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' result directories (or their results.json files).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Where the merged results.json, junit.xml and report.html go.
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
}

/// 0, 1 or 4 as for the whole run; 2 when the shards do not add up.
pub fn run(args: MergeArgs) -> u8 {
    let parts = match Part::load_all(&args.dirs) {
        Ok(parts) => parts,
        Err(message) => {
            eprintln!("cogni merge: {message}");
            return exit::USAGE;
        }
    };
    let merged = match merge(parts) {
        Ok(merged) => merged,
        Err(message) => {
            eprintln!("cogni merge: {message}");
            return exit::USAGE;
        }
    };
    if let Err(e) = report::write_all(&args.output_dir, &merged) {
        eprintln!(
            "cogni merge: cannot write the results to {}: {e}",
            args.output_dir.display()
        );
        return exit::TASK_FAILED;
    }
    eprintln!(
        "cogni merge: {} shard{} of {}",
        merged.shards.len(),
        if merged.shards.len() == 1 { "" } else { "s" },
        merged.shards.first().map_or(0, |s| s.total)
    );
    summarize(&merged);
    println!("{}", args.output_dir.join(report::RESULTS_FILE).display());
    match merged.verdict() {
        Verdict::Passed => exit::DONE,
        Verdict::Failed => exit::TASK_FAILED,
        Verdict::BudgetExceeded => exit::BUDGET_EXCEEDED,
    }
}
