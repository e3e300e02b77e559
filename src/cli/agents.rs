//! The agents a session can delegate to (docs/agents.md): cards from
//! `.cogni/agents/` (once the directory is trusted), `[agents.NAME]` of
//! config, cards from `$COGNI_HOME/agents/`, in that order of precedence;
//! the registry every front door gives its session; `cogni agents`.

use super::{exit, setup, AgentsArgs};
use crate::agent::delegate::{AgentRegistry, Factory};
use crate::agent::SessionConfig;
use crate::config::{Config, ConfigFile};
use crate::protocol::{EditTool, SandboxMode};
use crate::spec::cards::{self, AgentCard};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every agent, with the problems met finding them.
#[derive(Default)]
pub struct Catalog {
    pub cards: Vec<AgentCard>,
    pub problems: Vec<String>,
}

/// Where a card came from, for listings.
pub fn source(card: &AgentCard) -> String {
    card.path.display().to_string()
}

/// The agents for a session in `cwd` with `config`.
pub fn catalog(config: &Config, home: &Path) -> Catalog {
    let cwd = &config.session.cwd;
    let (loaded, mut problems) = cards::load(cwd, home, config.project_trusted);
    let project_dir = cwd.join(".cogni/agents");
    let (project, user): (Vec<AgentCard>, Vec<AgentCard>) = loaded
        .into_iter()
        .partition(|c| c.path.starts_with(&project_dir));
    let mut all = project;
    for (name, def) in &config.agents {
        let origin = PathBuf::from(format!("config [agents.{name}]"));
        match cards::from_def(name, def.clone(), "", &origin) {
            Ok(card) if all.iter().any(|c| c.name == card.name) => {}
            Ok(card) => all.push(card),
            Err(e) => problems.push(format!("[agents.{name}]: {e}")),
        }
    }
    for card in user {
        if !all.iter().any(|c| c.name == card.name) {
            all.push(card);
        }
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    Catalog {
        cards: all,
        problems,
    }
}

/// The card's model, instructions (after the config's own) and tools on
/// `config`; its mode is the caller's to apply. `model_chosen`: the user
/// named a model (on the command line, or a task entry did), which wins
/// over the card's. The one rule everywhere: the command line, then the
/// task entry, then the card, then config (docs/agents.md).
pub fn apply_card(config: &mut SessionConfig, card: &AgentCard, model_chosen: bool) {
    if let (Some(model), false) = (&card.model, model_chosen) {
        config.model_override = Some(model.clone());
    }
    config.agent = card.name.clone();
    config.effects.extend(card.effects.iter().cloned());
    if card.context_strategy.is_some() {
        config.context_strategy = card.context_strategy;
    }
    if !card.instructions.is_empty() {
        config.developer_instructions = Some(
            [
                config.developer_instructions.as_deref(),
                Some(card.instructions.as_str()),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n\n"),
        );
    }
    if let Some(tools) = &card.tools {
        // The edit tool and web_fetch have switches of their own: a card's
        // list that leaves them out turns them off.
        let edit = ["apply_patch", "edit_file"];
        let listed = |name: &str| tools.iter().any(|t| t == name);
        config.tool_config.enabled = tools
            .iter()
            .filter(|t| !edit.contains(&t.as_str()) && *t != "web_fetch")
            .cloned()
            .collect();
        if !edit.iter().any(|e| listed(e)) {
            config.tool_config.edit_tool = Some(EditTool::None);
        }
        if !listed("web_fetch") {
            config.tool_config.web_fetch.enabled = false;
        }
    }
}

/// Run as `card` without a terminal: its model (unless `model_chosen`: see
/// [`apply_card`]), instructions and tools, and for a card in plan
/// mode a read-only sandbox.
pub fn apply(config: &mut SessionConfig, card: &AgentCard, model_chosen: bool) {
    apply_card(config, card, model_chosen);
    if card.mode.as_deref() == Some("plan") {
        config.sandbox_policy.mode = SandboxMode::ReadOnly;
    }
}

/// A registry of `cards`: each makes a fresh session config from `base`
/// (the configuration before any card) with the card applied.
pub fn registry(base: &SessionConfig, cards: &[AgentCard]) -> Arc<AgentRegistry> {
    let registry = AgentRegistry::default();
    for card in cards {
        let (base, card_for) = (base.clone(), card.clone());
        let factory: Factory = Arc::new(move || {
            let mut config = base.clone();
            apply(&mut config, &card_for, false);
            Ok(config)
        });
        registry.register(
            &card.name,
            &card.description,
            &source(card),
            card.options.clone(),
            factory,
        );
    }
    Arc::new(registry)
}

/// `cogni agents`.
pub fn run(args: AgentsArgs) -> u8 {
    let loaded = match setup::dirs(&args.common)
        .and_then(|(launch, cwd)| setup::load(&args.common, &launch, cwd, ConfigFile::default()))
    {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("cogni: {message}");
            return exit::USAGE;
        }
    };
    let catalog = catalog(&loaded.config, &loaded.home);
    let mut out = std::io::stdout().lock();
    if catalog.cards.is_empty() {
        let _ = writeln!(
            out,
            "no agents: add cards to .cogni/agents/ or $COGNI_HOME/agents/, or [agents.NAME] to config"
        );
    }
    for card in &catalog.cards {
        let _ = writeln!(
            out,
            "{:<20} {}\n{:<20} from {}",
            card.name,
            card.description,
            "",
            source(card)
        );
    }
    for problem in &catalog.problems {
        eprintln!("cogni: warning: {problem}");
    }
    exit::DONE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderInfo, WireApi};

    #[test]
    fn a_cards_tools_are_its_whole_list_the_edit_tool_and_web_fetch_too() {
        let base = SessionConfig::new(
            ProviderInfo::new("fake", "", WireApi::Scripted),
            PathBuf::from("/work"),
        );
        let with = |tools: &str| {
            let card = cards::parse(
                Path::new("c.md"),
                &format!("+++\ndescription = \"d\"\ntools = {tools}\n+++\n"),
            )
            .unwrap();
            let mut config = base.clone();
            apply_card(&mut config, &card, false);
            config.tool_config
        };
        let reader = with(r#"["read_file", "grep"]"#);
        assert_eq!(reader.enabled, ["read_file", "grep"]);
        assert_eq!(reader.edit_tool, Some(EditTool::None));
        assert!(!reader.web_fetch.enabled);
        let researcher = with(r#"["read_file", "web_fetch", "edit_file"]"#);
        assert_eq!(researcher.enabled, ["read_file"]);
        assert_eq!(researcher.edit_tool, base.tool_config.edit_tool);
        assert!(researcher.web_fetch.enabled);
    }
}
