//! Trust: a repository's own `cogni.toml` is somebody else's file until the
//! user says otherwise. Before that, what it says about where keys and
//! traffic go, anything that would loosen the sandbox, and its hooks and
//! MCP servers (commands cogni would run unconfined) are ignored with a
//! warning; everything else (model, limits that tighten, tool caps, ...)
//! applies.
//!
//! A directory is trusted when its canonical path, or one of its parents,
//! is in `$COGNI_HOME/trusted.toml` (`cogni trust`) or in `trusted_projects`
//! of the user's `$COGNI_HOME/config.toml`.

use super::{ConfigError, ConfigFile};
use crate::protocol::ResourceLimits;
use crate::tools::env::{EnvInherit, ShellEnvPolicy};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

const FILE_NAME: &str = "trusted.toml";

/// `$COGNI_HOME/trusted.toml`.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: TrustFile,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    #[serde(default)]
    trusted: Vec<PathBuf>,
}

impl TrustStore {
    pub fn load(home: &Path) -> Result<Self, ConfigError> {
        let path = home.join(FILE_NAME);
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text)
                .map_err(|e| ConfigError(format!("{}: {}", path.display(), e.message())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => TrustFile::default(),
            Err(e) => return Err(ConfigError(format!("{}: {e}", path.display()))),
        };
        Ok(TrustStore { path, file })
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.file.trusted
    }

    /// Record `dir` (canonical).
    pub fn trust(&mut self, dir: PathBuf) {
        if !self.file.trusted.contains(&dir) {
            self.file.trusted.push(dir);
            self.file.trusted.sort();
        }
    }

    /// Forget `dir`; false when it was not recorded.
    pub fn revoke(&mut self, dir: &Path) -> bool {
        let before = self.file.trusted.len();
        self.file.trusted.retain(|d| d != dir);
        self.file.trusted.len() != before
    }

    pub fn save(&self) -> Result<(), ConfigError> {
        let fail = |e: &dyn std::fmt::Display| ConfigError(format!("{}: {e}", self.path.display()));
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        }
        let text = toml::to_string(&self.file).map_err(|e| fail(&e))?;
        crate::tools::fs::write_atomic(&self.path, text.as_bytes()).map_err(|e| fail(&e))?;
        Ok(())
    }
}

/// The directories the user trusts: the store's and the user config's
/// `trusted_projects`, canonical.
pub(super) struct Trusted(Vec<PathBuf>);

impl Trusted {
    pub(super) fn load(home: &Path, trusted_projects: &[PathBuf]) -> Result<Self, ConfigError> {
        let store = TrustStore::load(home)?;
        let listed = store.dirs().iter().chain(trusted_projects);
        Ok(Trusted(
            listed
                .filter_map(|d| std::fs::canonicalize(d).ok())
                .collect(),
        ))
    }

    /// Whether `dir` is one of them or inside one (false when it does not
    /// exist).
    pub(super) fn covers(&self, dir: &Path) -> bool {
        std::fs::canonicalize(dir).is_ok_and(|dir| self.0.iter().any(|d| dir.starts_with(d)))
    }
}

/// Whether `cwd` is trusted by the store or by the user config's
/// `trusted_projects`.
pub(super) fn is_trusted(home: &Path, user: &ConfigFile, cwd: &Path) -> Result<bool, ConfigError> {
    let projects = user.trusted_projects.as_deref().unwrap_or_default();
    Ok(Trusted::load(home, projects)?.covers(cwd))
}

/// `path` inside `repo` (canonical when it exists; otherwise it may not
/// contain `..`).
fn inside(path: &Path, repo: &Path) -> bool {
    match std::fs::canonicalize(path) {
        Ok(real) => real.starts_with(repo),
        Err(_) => path.starts_with(repo) && !path.components().any(|c| c == Component::ParentDir),
    }
}

/// A limit from the project is accepted when it is at least as tight as
/// the one below it (`None` is no limit).
fn looser(project: Option<u64>, base: Option<u64>) -> bool {
    match (project, base) {
        (Some(p), Some(b)) => p > b,
        (Some(_), None) => false,
        (None, _) => false,
    }
}

fn inherit_rank(inherit: EnvInherit) -> u8 {
    match inherit {
        EnvInherit::None => 0,
        EnvInherit::Core => 1,
        EnvInherit::All => 2,
    }
}

/// The project's shell environment policy passes at least as little to
/// commands as `base`'s.
fn env_loosens(project: &ShellEnvPolicy, base: &ShellEnvPolicy) -> bool {
    (project.ignore_default_excludes && !base.ignore_default_excludes)
        || inherit_rank(project.inherit) > inherit_rank(base.inherit)
        || base.exclude.iter().any(|e| !project.exclude.contains(e))
        || (!base.include_only.is_empty()
            && (project.include_only.is_empty()
                || project
                    .include_only
                    .iter()
                    .any(|p| !base.include_only.contains(p))))
}

/// Drop from an untrusted project layer what could redirect keys or
/// traffic or loosen the sandbox compared with `base` (the layers below
/// it). Returns the dropped keys, by path.
pub(super) fn restrict_untrusted(
    project: &mut ConfigFile,
    base: &ConfigFile,
    repo: &Path,
) -> Vec<String> {
    let repo = std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
    let mut dropped = Vec::new();
    let mut ignore = |key: String| dropped.push(key);

    if project.trusted_projects.take().is_some() {
        ignore("trusted_projects".into());
    }
    // Agents the model may run, and how far it may go.
    for name in std::mem::take(&mut project.agents).into_keys() {
        ignore(format!("agents.{name}"));
    }
    if project.delegation.take().is_some() {
        ignore("delegation".into());
    }
    // Servers are processes cogni would start unconfined, or endpoints
    // it would send the session's data to.
    for name in std::mem::take(&mut project.mcp_servers).into_keys() {
        ignore(format!("mcp_servers.{name}"));
    }
    for (id, p) in project.model_providers.iter_mut() {
        let fields: [(&str, bool); 9] = [
            ("base_url", p.base_url.take().is_some()),
            ("env_key", p.env_key.take().is_some()),
            ("key_file", p.key_file.take().is_some()),
            ("api_key", p.api_key.take().is_some()),
            ("http_headers", p.http_headers.take().is_some()),
            ("query_params", p.query_params.take().is_some()),
            ("key_header", p.key_header.take().is_some()),
            ("auth_command", p.auth_command.take().is_some()),
            (
                "auth_command_ttl_secs",
                p.auth_command_ttl_secs.take().is_some(),
            ),
        ];
        for (field, was_set) in fields {
            if was_set {
                ignore(format!("model_providers.{id}.{field}"));
            }
        }
    }
    if let Some(hooks) = project.hooks.take() {
        for key in hooks.keys() {
            ignore(key);
        }
    }
    if project.shell.take().is_some() {
        ignore("shell".into());
    }
    if let Some(agent) = project.agent.as_mut() {
        // The test command runs when the model is done: the repository's
        // own choice of command waits for trust like its hooks.
        if agent.test_command.take().is_some() {
            ignore("agent.test_command".into());
        }
        if agent.enable_test_run.take().is_some() {
            ignore("agent.enable_test_run".into());
        }
    }
    if let Some(file) = &project.base_instructions_file {
        if !inside(file, &repo) {
            project.base_instructions_file = None;
            ignore("base_instructions_file".into());
        }
    }
    if let Some(mode) = project.sandbox_mode {
        let below = base.sandbox_mode.unwrap_or_default();
        if mode.looseness() > below.looseness() {
            project.sandbox_mode = None;
            ignore(format!("sandbox_mode = \"{}\"", mode.as_str()));
        }
    }
    if let Some(ws) = project.sandbox_workspace_write.as_mut() {
        let base_network = base
            .sandbox_workspace_write
            .as_ref()
            .and_then(|b| b.network_access)
            .unwrap_or(false);
        if ws.network_access == Some(true) && !base_network {
            ws.network_access = None;
            ignore("sandbox_workspace_write.network_access".into());
        }
        if let Some(roots) = ws.writable_roots.as_mut() {
            let (kept, outside): (Vec<PathBuf>, Vec<PathBuf>) =
                roots.drain(..).partition(|r| inside(r, &repo));
            *roots = kept;
            for root in outside {
                ignore(format!(
                    "sandbox_workspace_write.writable_roots \"{}\" (outside the repository)",
                    root.display()
                ));
            }
        }
    }
    if let Some(limits) = project.sandbox.as_mut() {
        let defaults = ResourceLimits::default();
        let below = base.sandbox.clone().unwrap_or_default();
        for (key, value, base_value) in [
            (
                "max_processes",
                &mut limits.max_processes,
                below.max_processes.or(defaults.max_processes),
            ),
            (
                "max_file_size_bytes",
                &mut limits.max_file_size_bytes,
                below.max_file_size_bytes.or(defaults.max_file_size_bytes),
            ),
            (
                "cpu_time_secs",
                &mut limits.cpu_time_secs,
                below.cpu_time_secs.or(defaults.cpu_time_secs),
            ),
        ] {
            if looser(*value, base_value) {
                *value = None;
                ignore(format!("sandbox.{key}"));
            }
        }
    }
    if let Some(tools) = project.tools.as_mut() {
        if let Some(env) = &tools.shell_env {
            let below = base
                .tools
                .as_ref()
                .and_then(|t| t.shell_env.clone())
                .unwrap_or_default();
            if env_loosens(env, &below) {
                tools.shell_env = None;
                ignore("tools.shell_env (it passes more of the environment to commands)".into());
            }
        }
    }
    // Commands of effects and guardrails run outside the sandbox.
    if let Some(effects) = project.effects.as_mut() {
        let mut i = 0;
        effects.retain(|e| {
            let runs_command = e.get("command").is_some();
            if runs_command {
                ignore(format!(
                    "effects[{i}] (it runs a command outside the sandbox)"
                ));
            }
            i += 1;
            !runs_command
        });
    }
    if let Some(guard) = project
        .run
        .as_mut()
        .and_then(|r| r.output_guardrail.as_mut())
    {
        if guard.command.take().is_some() {
            ignore("run.output_guardrail.command (it runs outside the sandbox)".into());
        }
        if guard.schema_file.is_none() && guard.regex.is_none() {
            if let Some(run) = project.run.as_mut() {
                run.output_guardrail = None;
            }
        }
    }
    dropped
}

/// The warning for the keys an untrusted project file lost.
pub(super) fn warning(file: &Path, dropped: &[String]) -> String {
    format!(
        "{}: this directory is not trusted, so its cogni.toml may not redirect providers or keys, \
         loosen the sandbox or run commands (hooks, command effects, MCP servers); ignored: {}. Run `cogni trust` here if you trust it.",
        file.display(),
        dropped.join(", ")
    )
}
