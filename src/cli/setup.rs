//! Loading the configuration for any command: directories, the flags
//! layer, `--script`, the config files and environment.

use super::ConfigArgs;
use crate::agent::SessionConfig;
use crate::config::{self, Config, ConfigFile, ProviderFile, Sources};
use crate::protocol::EditTool;
use crate::spec::cards::AgentCard;
use std::path::PathBuf;

/// The loaded configuration and where it came from.
pub struct Loaded {
    pub config: Config,
    /// `$COGNI_HOME`.
    pub home: PathBuf,
}

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// The directory cogni was started in and the working directory (`-C`).
pub fn dirs(args: &ConfigArgs) -> Result<(PathBuf, PathBuf), String> {
    let launch_dir =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let cwd = match &args.cd {
        Some(dir) => std::fs::canonicalize(launch_dir.join(dir))
            .map_err(|e| format!("-C {}: {e}", dir.display()))?,
        None => launch_dir.clone(),
    };
    if !cwd.is_dir() {
        return Err(format!("-C {}: not a directory", cwd.display()));
    }
    Ok((launch_dir, cwd))
}

/// Load every layer; `flags` holds the command's own options, to which the
/// common ones (model, provider, script) are added. Warnings go to stderr.
pub fn load(
    args: &ConfigArgs,
    launch_dir: &std::path::Path,
    cwd: PathBuf,
    mut flags: ConfigFile,
) -> Result<Loaded, String> {
    flags.model = args.model.clone();
    flags.provider = args.provider.clone();
    if let Some(script) = &args.script {
        if args.provider.as_deref().is_some_and(|p| p != "scripted") {
            return Err(
                "--script needs the scripted provider; drop --provider or use --provider scripted"
                    .into(),
            );
        }
        flags.provider = Some("scripted".into());
        flags.model_providers.insert(
            "scripted".into(),
            ProviderFile {
                script: Some(launch_dir.join(script)),
                ..Default::default()
            },
        );
    }
    let explicit = args.config.as_ref().map(|p| launch_dir.join(p));
    let home = config::cogni_home(&env);
    let config = config::load(Sources {
        home: home.clone(),
        cwd,
        explicit,
        flags,
        env: &env,
    })
    .map_err(|e| e.to_string())?;
    for warning in &config.warnings {
        eprintln!("cogni: warning: {warning}");
    }
    Ok(Loaded { config, home })
}

/// The card's model, instructions (after the config's own) and tools on
/// `config`; its mode is the caller's to apply.
pub(super) fn apply_card(config: &mut SessionConfig, card: &AgentCard) {
    if let Some(model) = &card.model {
        config.model_override = Some(model.clone());
    }
    config.agent = card.name.clone();
    config.effects.extend(card.effects.iter().cloned());
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
        let edit = ["apply_patch", "edit_file"];
        config.tool_config.enabled = tools
            .iter()
            .filter(|t| !edit.contains(&t.as_str()))
            .cloned()
            .collect();
        if !tools.iter().any(|t| edit.contains(&t.as_str())) {
            config.tool_config.edit_tool = Some(EditTool::None);
        }
    }
}

/// The current-thread runtime every command runs on.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}
