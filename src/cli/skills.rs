//! `cogni skills` (and the REPL's `/skills`): the skills found for the
//! working directory, where each came from, their problems, what the
//! system prompt's listing leaves out and what was not loaded.

use super::render::one_line;
use super::{exit, setup, SkillsArgs};
use crate::config::ConfigFile;
use crate::tools::paths::display;
use crate::tools::skills::{Reason, Skills};
use std::fmt::Write as _;
use std::path::Path;

pub fn run(args: SkillsArgs) -> u8 {
    let (loaded, cwd) = match setup::dirs(&args.common).and_then(|(launch, cwd)| {
        setup::load(&args.common, &launch, cwd.clone(), ConfigFile::default())
            .map(|loaded| (loaded, cwd))
    }) {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    let enabled = loaded.config.session.features.skills_enabled;
    print!("{}", report(&loaded.config.skills, enabled, &cwd));
    exit::DONE
}

/// The report, paths shown from `cwd`.
pub(super) fn report(skills: &Skills, enabled: bool, cwd: &Path) -> String {
    let mut out = String::new();
    if enabled {
        let _ = writeln!(
            out,
            "skills are on · the system prompt's listing takes {} of {} bytes ([skills] max_listing_bytes)",
            skills.listing().len(),
            skills.max_listing_bytes()
        );
    } else {
        let _ = writeln!(
            out,
            "skills are off: set `skills_enabled = true` under [features] in cogni.toml to list them in the system prompt and load them"
        );
    }
    if skills.is_empty() && skills.skipped().is_empty() {
        let _ = writeln!(
            out,
            "no skills found: a skill is a folder with a SKILL.md in .cogni/skills/ or .agents/skills/ (here or up to the repository root), $COGNI_HOME/skills/ or ~/.agents/skills/"
        );
        return out;
    }
    for skill in skills.all() {
        let _ = writeln!(
            out,
            "{} ({}) {}",
            skill.name,
            skill.scope.as_str(),
            display(cwd, &skill.dir)
        );
        if !skill.description.is_empty() {
            let _ = writeln!(out, "    {}", one_line(&skill.description, 100));
        }
        if !skill.allowed_tools.is_empty() {
            let _ = writeln!(out, "    allowed-tools: {}", skill.allowed_tools.join(" "));
        }
        for problem in &skill.problems {
            let _ = writeln!(out, "    problem: {problem}");
        }
    }
    if !skills.left_out().is_empty() {
        let _ = writeln!(
            out,
            "left out of the listing, which is full (they still load when named as $NAME or through the skill tool): {}",
            skills.left_out().join(", ")
        );
    }
    if !skills.skipped().is_empty() {
        let _ = writeln!(out, "not loaded:");
        for s in skills.skipped() {
            let why = match &s.reason {
                Reason::Shadowed(by) => format!(
                    "a skill of the same name nearer the working directory wins: {}",
                    display(cwd, by)
                ),
                Reason::Untrusted => {
                    "this directory is not trusted (run `cogni trust` there if you trust it)".into()
                }
                Reason::Unreadable(e) => e.clone(),
            };
            let _ = writeln!(
                out,
                "  {} ({}): {why}",
                display(cwd, &s.dir),
                s.scope.as_str()
            );
        }
    }
    out
}
