//! `cogni models`: the built-in model catalog (with `[model_families.*]`
//! applied) and the models the provider serves.

use super::{exit, setup, ModelsArgs};
use crate::config::ConfigFile;
use crate::protocol::EditTool;
use crate::provider::model_family::{catalog, ToolCallMode};
use crate::provider::models::list_models;
use std::io::Write;

pub fn run(args: ModelsArgs) -> u8 {
    let loaded = match setup::dirs(&args.common)
        .and_then(|(launch, cwd)| setup::load(&args.common, &launch, cwd, ConfigFile::default()))
    {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    let session = &loaded.config.session;
    // A missing key fails first, naming the variable, before any request
    // (`--offline` asks no provider).
    if let (false, Some(missing)) = (args.offline, crate::agent::session::missing_key(session)) {
        eprintln!("cogni: {missing} (`cogni models --offline` lists the catalog alone)");
        return exit::USAGE;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:<34} {:>9} {:>8} {:<8} {:<6} {:<6} {:<22} reasoning",
        "catalog (name prefix)", "context", "output", "parallel", "calls", "images", "edit tool"
    );
    for (name, family) in catalog(&session.model_families) {
        let edit = match family.edit_tool {
            EditTool::ApplyPatch => "apply_patch",
            EditTool::ApplyPatchFreeform => "apply_patch (freeform)",
            EditTool::EditFile => "edit_file",
            EditTool::None => "-",
        };
        let reasoning = match (family.supports_reasoning, &family.reasoning_effort) {
            (false, _) => "-".to_string(),
            (true, Some(effort)) => format!("yes ({effort})"),
            (true, None) => "optional".to_string(),
        };
        let _ = writeln!(
            out,
            "{name:<34} {:>9} {:>8} {:<8} {:<6} {:<6} {edit:<22} {reasoning}",
            family.context_window,
            family
                .max_output_tokens
                .map_or("-".into(), |n| n.to_string()),
            if family.supports_parallel_tool_calls {
                "yes"
            } else {
                "no"
            },
            match family.tool_call_mode {
                ToolCallMode::Native => "native",
                ToolCallMode::Text => "text",
            },
            if family.supports_images { "yes" } else { "no" },
        );
    }
    if args.offline {
        return exit::DONE;
    }
    let provider = &session.provider;
    let runtime = match super::setup::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cogni: {e}");
            return exit::TASK_FAILED;
        }
    };
    match runtime.block_on(list_models(provider)) {
        Ok(models) => {
            let _ = writeln!(
                out,
                "\nmodels served by {} ({}):",
                provider.id,
                models.len()
            );
            for model in models {
                let _ = writeln!(out, "  {model}");
            }
            exit::DONE
        }
        Err(e) => {
            eprintln!("cogni: could not list the models of `{}`: {e}", provider.id);
            exit::PROVIDER
        }
    }
}
