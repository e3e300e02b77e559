//! Agent cards (the REPL's `/agent`, `card` in task files): markdown files
//! with TOML front matter
//! (between `+++` lines, or `---` lines), looked up in `.cogni/agents/` of
//! the working directory, then `$COGNI_HOME/agents/` (the project's card
//! wins on a name clash). The body is the card's instructions (after
//! `instructions` from the front matter, if both are given).
//!
//! ```markdown
//! +++
//! name = "reviewer"
//! description = "Reviews changes, never edits"
//! model = "gpt-4.1"
//! tools = ["read_file", "grep", "glob", "list_dir"]
//! mode = "plan"
//! +++
//! Review the diff for bugs and missing tests.
//! ```

use cogni_protocol::ContextStrategyKind;
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A card's front matter, or a `[agents.NAME]` table of config.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDef {
    /// `name`: the agent's name; the card's file stem (or the table's NAME)
    /// when absent.
    pub name: Option<String>,
    /// `description`: what the agent is for, shown to a parent that may
    /// delegate to it.
    pub description: Option<String>,
    /// `model`: the model it runs when the command line and a task file name
    /// none; absent: the config's.
    pub model: Option<String>,
    /// `instructions`: instructions put before the card's body.
    pub instructions: Option<String>,
    /// `tools`: its own tools by name; absent: the default set.
    pub tools: Option<Vec<String>>,
    /// `mode`: `plan` (read-only sandbox), `act` or `auto`.
    pub mode: Option<String>,
    /// `effects`: its effects, as TOML values parsed into
    /// [`EffectSpec`](crate::effects::EffectSpec)s.
    pub effects: Option<Vec<toml::Value>>,
    /// `context_strategy`: how its requests stay within the model's window.
    pub context_strategy: Option<ContextStrategyKind>,
    /// Delegated: the parent's tools after its own (`true`, the default),
    /// none (`false`), or only those named.
    pub inherit_tools: Option<Inherit>,
    /// Never offered to it, its own or inherited.
    pub disallowed_tools: Option<Vec<String>>,
    /// `none` or `worktree`: a delegated agent that writes works in its own
    /// git worktree and returns a diff.
    pub isolation: Option<Isolation>,
    /// Lower limits for the delegations it makes.
    pub max_delegation_depth: Option<u32>,
    /// `max_concurrent_agents`: a lower limit for how many agents its
    /// `spawn_agents` runs at once.
    pub max_concurrent_agents: Option<u32>,
}

// `[agents.NAME]`: a later config layer's agent replaces one of the same
// name whole.
cogni_protocol::replaced_whole!(AgentDef);

/// One agent card.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCard {
    /// The agent's name, unique among the cards.
    pub name: String,
    /// What the agent is for, shown to a parent that may delegate to it (may be
    /// empty).
    pub description: String,
    /// The card's model; `None`: the config's (the command line and a task file
    /// win over both).
    pub model: Option<String>,
    /// The `instructions` key and the body, joined by a blank line.
    pub instructions: String,
    /// Its own tools by name; `None`: the default set.
    pub tools: Option<Vec<String>>,
    /// `plan`, `act` or `auto`.
    pub mode: Option<String>,
    /// The agent's effects (`effects = [...]` in the front matter).
    pub effects: Vec<super::effects::EffectSpec>,
    /// `context_strategy`: how the agent's requests stay within the window.
    pub context_strategy: Option<ContextStrategyKind>,
    /// How it takes part in delegation.
    pub options: AgentOptions,
    /// The card's file, or the config file of its `[agents.NAME]`.
    pub path: PathBuf,
}

/// Parse a card; `stem` names it when the front matter does not.
pub fn parse(path: &Path, text: &str) -> Result<AgentCard, String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("agent")
        .to_string();
    let fail = |m: String| format!("agent card {}: {m}", path.display());
    let (front, body) = cogni_tools::front_matter::split(text).map_err(fail)?;
    let meta = match toml::from_str::<AgentDef>(front) {
        Ok(meta) => meta,
        // `---` blocks may be YAML, as Claude Code's sub-agent files are.
        Err(toml_error) if text.trim_start_matches('\u{feff}').starts_with("---") => {
            from_yaml(front).map_err(|yaml_error| {
                fail(format!(
                    "the front matter is neither TOML ({}) nor YAML ({yaml_error})",
                    super::plain_message(toml_error.message())
                ))
            })?
        }
        Err(e) => return Err(fail(super::plain_message(e.message()))),
    };
    from_def(&stem, meta, body, path).map_err(fail)
}

/// YAML front matter in Claude Code's sub-agent format (`name`,
/// `description`, `tools` as a comma-separated list of its tool names,
/// `model`, where `inherit` means the parent's) or with cogni's keys.
fn from_yaml(front: &str) -> Result<AgentDef, String> {
    let mut map: serde_json::Map<String, serde_json::Value> =
        cogni_tools::front_matter::yaml(front)?;
    // Shown by Claude Code only.
    map.remove("color");
    if map.get("model").and_then(|m| m.as_str()) == Some("inherit") {
        map.remove("model");
    }
    if let Some(tools) = map.remove("tools") {
        let names: Vec<String> = match &tools {
            serde_json::Value::String(list) => list.split(',').map(str::to_string).collect(),
            serde_json::Value::Array(items) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
            other => return Err(format!("tools: expected a list of names, found {other}")),
        };
        let mut tools: Vec<String> = Vec::new();
        for name in names.iter().filter_map(|n| claude_tool(n.trim())) {
            if !tools.iter().any(|t| t == name) {
                tools.push(name.to_string());
            }
        }
        map.insert("tools".into(), tools.into());
    }
    serde_json::from_value(serde_json::Value::Object(map)).map_err(|e| e.to_string())
}

/// cogni's name for a tool a Claude Code sub-agent file names (its own
/// names pass through); `None` for tools cogni has no counterpart of
/// (delegation tools are offered on their own).
fn claude_tool(name: &str) -> Option<&str> {
    Some(match name {
        "Read" | "NotebookRead" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" | "NotebookEdit" => "apply_patch",
        "Bash" => "shell",
        "Grep" => "grep",
        "Glob" => "glob",
        "LS" => "list_dir",
        "WebFetch" => "web_fetch",
        "" => return None,
        other if other.starts_with(|c: char| c.is_ascii_uppercase()) => return None,
        other => other,
    })
}

/// A card from its front matter (or `[agents.NAME]` table) and body;
/// `name` names it when the definition does not.
pub fn from_def(name: &str, meta: AgentDef, body: &str, path: &Path) -> Result<AgentCard, String> {
    if let Some(mode) = &meta.mode {
        if !["plan", "act", "auto"].contains(&mode.as_str()) {
            return Err(format!("mode `{mode}` is not one of: plan, act, auto"));
        }
    }
    let instructions = [meta.instructions.as_deref(), Some(body.trim())]
        .into_iter()
        .flatten()
        .filter(|s| !s.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let effects = super::effects::EffectSpec::parse_all(
        meta.effects.as_deref().unwrap_or_default(),
        "effects",
    )?;
    Ok(AgentCard {
        effects,
        context_strategy: meta.context_strategy,
        name: meta.name.unwrap_or_else(|| name.to_string()),
        description: meta.description.unwrap_or_default(),
        model: meta.model,
        instructions,
        tools: meta.tools,
        mode: meta.mode,
        options: AgentOptions {
            inherit: meta.inherit_tools.unwrap_or_default(),
            disallowed: meta.disallowed_tools.unwrap_or_default(),
            isolation: meta.isolation.unwrap_or_default(),
            max_delegation_depth: meta.max_delegation_depth,
            max_concurrent_agents: meta.max_concurrent_agents,
        },
        path: path.to_path_buf(),
    })
}

/// The markdown files of the given directories, earlier ones winning on a
/// name clash, as (name, path); missing directories are skipped.
pub fn markdown_files(dirs: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        files.sort();
        for path in files {
            let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if !out.iter().any(|(n, _)| n == name) {
                out.push((name.to_string(), path));
            }
        }
    }
    out
}

/// Every card in `.cogni/agents/` under `cwd` (only when the directory is
/// `trusted`) and in `home/agents/`, the project's first, and the problems
/// with the ones that could not be read (and the project's cards that were
/// left out).
pub fn load(cwd: &Path, home: &Path, trusted: bool) -> (Vec<AgentCard>, Vec<String>) {
    let project = cwd.join(".cogni/agents");
    let mut problems = Vec::new();
    let mut dirs = vec![home.join("agents")];
    if trusted {
        dirs.insert(0, project);
    } else if !markdown_files(std::slice::from_ref(&project)).is_empty() {
        problems.push(format!(
            "{}: the project's agent cards are ignored until the directory is trusted (`cogni trust`)",
            project.display()
        ));
    }
    let mut cards: Vec<AgentCard> = Vec::new();
    for (_, path) in markdown_files(&dirs) {
        match read_text_limited(&path, SPEC_FILE_MAX_BYTES)
            .map_err(|e| format!("agent card: {e}"))
            .and_then(|text| parse(&path, &text))
        {
            Ok(card) if cards.iter().any(|c| c.name == card.name) => {}
            Ok(card) => cards.push(card),
            Err(e) => problems.push(e),
        }
    }
    (cards, problems)
}

/// Which of the parent's tools a child adds after its own.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Inherit {
    /// `true`: all of them; `false`: none.
    All(bool),
    /// Only these.
    Only(Vec<String>),
}

impl Default for Inherit {
    fn default() -> Self {
        Inherit::All(true)
    }
}

impl Inherit {
    /// True when the child gets the parent's tool `name`.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            Inherit::All(on) => *on,
            Inherit::Only(names) => names.iter().any(|n| n == name),
        }
    }
}

/// Where a child works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// In the parent's working directory.
    #[default]
    None,
    /// In its own git worktree; its changes come back as a diff.
    Worktree,
}

/// How an agent takes part in delegation (its card's or table's keys).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentOptions {
    /// `inherit_tools`.
    pub inherit: Inherit,
    /// `disallowed_tools`: never offered to it, its own or inherited.
    pub disallowed: Vec<String>,
    /// `isolation`: the parent's directory or its own git worktree.
    pub isolation: Isolation,
    /// Lower limits for delegations it makes (a child cannot raise them).
    pub max_delegation_depth: Option<u32>,
    /// `max_concurrent_agents`: how many agents its `spawn_agents` runs at
    /// once, at most.
    pub max_concurrent_agents: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_have_toml_front_matter_and_a_markdown_body() {
        let card = parse(
            Path::new("/x/reviewer.md"),
            "+++\ndescription = \"Reviews\"\nmodel = \"gpt-4.1\"\ntools = [\"grep\"]\nmode = \"plan\"\n+++\nReview carefully.\n",
        )
        .unwrap();
        assert_eq!(card.name, "reviewer");
        assert_eq!(card.description, "Reviews");
        assert_eq!(card.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(card.tools, Some(vec!["grep".to_string()]));
        assert_eq!(card.mode.as_deref(), Some("plan"));
        assert_eq!(card.instructions, "Review carefully.");
        let dashed = parse(Path::new("a.md"), "---\nname = \"b\"\n---\nbody").unwrap();
        assert_eq!(dashed.name, "b");
        let plain = parse(Path::new("c.md"), "Just instructions").unwrap();
        assert_eq!(plain.instructions, "Just instructions");
    }

    #[test]
    fn claude_codes_yaml_sub_agent_files_are_cards_too() {
        let card = parse(
            Path::new("/x/code-reviewer.md"),
            "---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash, WebFetch, WebSearch\nmodel: inherit\ncolor: blue\n---\nYou are a reviewer.\n",
        )
        .unwrap();
        assert_eq!(card.name, "code-reviewer");
        assert_eq!(card.description, "Reviews code");
        assert_eq!(card.model, None, "inherit: the parent's");
        assert_eq!(
            card.tools.as_deref().unwrap(),
            ["read_file", "grep", "glob", "shell", "web_fetch"]
        );
        assert_eq!(card.instructions, "You are a reviewer.");
        let listed = parse(
            Path::new("w.md"),
            "---\ndescription: Writes\ntools: [read_file, Edit]\nisolation: worktree\nmodel: gpt-4.1\n---\n",
        )
        .unwrap();
        assert_eq!(
            listed.tools.as_deref().unwrap(),
            ["read_file", "apply_patch"]
        );
        assert_eq!(listed.options.isolation, Isolation::Worktree);
        assert_eq!(listed.model.as_deref(), Some("gpt-4.1"));
        let bad = parse(Path::new("b.md"), "---\nname: x\nmodle: y\n---\n").unwrap_err();
        assert!(bad.contains("modle") && bad.contains("b.md"), "{bad}");
    }

    #[test]
    fn bad_cards_name_their_file() {
        let e = parse(Path::new("/x/bad.md"), "+++\nmodle = \"x\"\n+++\n").unwrap_err();
        assert!(e.contains("/x/bad.md") && e.contains("modle"), "{e}");
        let e = parse(Path::new("m.md"), "+++\nmode = \"yolo\"\n+++\n").unwrap_err();
        assert!(e.contains("yolo"), "{e}");
        let e = parse(Path::new("o.md"), "+++\nname = \"x\"\n").unwrap_err();
        assert!(e.contains("closing"), "{e}");
    }
}
