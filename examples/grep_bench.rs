//! Drive cogni's grep tool from the command line, for `scripts/bench_grep.sh`.
//!
//! ```text
//! grep_bench gen DIR FILES    write the benchmark tree
//! grep_bench pattern          print the regex the benchmark searches for
//! grep_bench search DIR RUNS  run the grep tool RUNS times, print the best ms
//! ```

#[path = "../benches/support/tree.rs"]
mod tree;

use cogni::protocol::SandboxPolicy;
use cogni::tools::grep::GrepTool;
use cogni::tools::{Tool, ToolConfig, ToolContext, ToolInput};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["gen", dir, files] => match files.parse() {
            Ok(files) => match tree::generate(&PathBuf::from(dir), files) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&format!("cannot generate tree: {e}")),
            },
            Err(_) => fail("FILES must be a number"),
        },
        ["pattern"] => {
            println!("{}", tree::NEEDLE_PATTERN);
            ExitCode::SUCCESS
        }
        ["search", dir, runs] => match runs.parse() {
            Ok(runs) => search(PathBuf::from(dir), tree::NEEDLE_PATTERN, runs),
            Err(_) => fail("RUNS must be a number"),
        },
        _ => fail("usage: grep_bench gen DIR FILES | pattern | search DIR RUNS"),
    }
}

fn search(dir: PathBuf, pattern: &str, runs: u32) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start runtime: {e}")),
    };
    let ctx = ToolContext::new(
        dir,
        SandboxPolicy::default(),
        Arc::new(ToolConfig::default()),
    );
    let tool = GrepTool::new(&ctx.config);
    let mut best = Duration::MAX;
    let mut summary = String::new();
    for _ in 0..runs.max(1) {
        let input = ToolInput::Json(serde_json::json!({ "pattern": pattern }));
        let start = Instant::now();
        let result = rt.block_on(tool.run(input, &ctx));
        best = best.min(start.elapsed());
        if result.is_error {
            return fail(&result.content);
        }
        summary = result
            .content
            .lines()
            .last()
            .unwrap_or_default()
            .to_string();
    }
    eprintln!("{summary}");
    println!("{:.1}", best.as_secs_f64() * 1000.0);
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("grep_bench: {message}");
    ExitCode::FAILURE
}
