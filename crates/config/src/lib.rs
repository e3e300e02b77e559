//! cogni.toml + environment + flags -> a validated [`SessionConfig`].
//!
//! Layers, later wins: built-in defaults < `$COGNI_HOME/config.toml` <
//! `./cogni.toml` < `--config FILE` < `COGNI_*` environment < flags.
//! Every file is checked on its own first, so an error names the file, the
//! line and column, or the unknown key by its full path.

#![deny(missing_docs)]

mod agents_md;
mod allowlist;
pub mod example;
mod hooks;
mod keys;
mod mcp;
mod model_aliases;
mod providers;
mod run;
mod soul;
mod trust;

use cogni_core::delegate::DelegationLimits;
use cogni_core::{AuthMode, CompactionConfig, Features, Sampling, SessionConfig};
use cogni_protocol::layer::{AddUp, Merge};
use cogni_protocol::{
    ApprovalPolicy, ContextStrategyKind, EditTool, ResourceLimits, SandboxMode, SandboxPolicy,
};
use cogni_provider::model_family::FamilyOverride;
use cogni_spec::cards::AgentDef;
use cogni_spec::plain_message;
use cogni_tools::env::ShellEnvPolicy;
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use cogni_tools::memory::{self, MemoryFiles};
use cogni_tools::skills::{self, Skills};
use cogni_tools::ToolConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use agents_md::load_user_instructions;
pub use allowlist::allowed as untrusted_allowlist;
pub use cogni_spec::strategies::AgentFile;
pub use mcp::{add_server, remove_server, NewServer};
pub use providers::ProviderFile;
pub use trust::TrustStore;

/// A configuration error: names the problem and where it is.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

cogni_protocol::layered! {
    /// `[sandbox_workspace_write]`
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct SandboxWorkspaceWrite {
        /// Whether sandboxed commands may use the network (default false).
        pub network_access: Option<bool>,
        /// Writable besides the working directory (relative to the config
        /// file); each must exist when a session starts.
        pub writable_roots: Option<Vec<PathBuf>>,
    }
}

cogni_protocol::layered! {
    /// `[sandbox]`: resource limits of commands.
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct SandboxLimitsFile {
        /// Processes at once, the command included (default 1024).
        pub max_processes: Option<u64>,
        /// Largest file a command may write, in bytes (default: no limit).
        pub max_file_size_bytes: Option<u64>,
        /// CPU seconds per process (default: no limit).
        pub cpu_time_secs: Option<u64>,
    }
}

cogni_protocol::layered! {
    /// `[features]`
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct FeaturesFile {
        /// Let the model ask for several tools at once; read-only calls then
        /// run concurrently (default true).
        pub parallel_tools: Option<bool>,
        /// Skills: listed in the system prompt, loaded by `$name` or the
        /// `skill` tool (default false).
        pub skills_enabled: Option<bool>,
    }
}

cogni_protocol::layered! {
    /// `[tools]`
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct ToolsFile {
        /// Tools offered to the model by name, besides the edit tool.
        pub enabled: Option<Vec<String>>,
        /// Default timeout of a shell call, in milliseconds.
        pub shell_timeout_ms: Option<u64>,
        /// The most a shell call may ask for, in milliseconds.
        pub max_shell_timeout_ms: Option<u64>,
        /// Bytes of a command's output kept in memory per stream.
        pub capture_limit_bytes: Option<usize>,
        /// The cap in bytes on tool output shown to the model (head + tail).
        pub max_output_bytes: Option<usize>,
        /// The cap in lines on tool output shown to the model.
        pub max_output_lines: Option<usize>,
        /// Bytes `read_file` returns per call.
        pub read_max_bytes: Option<usize>,
        /// Entries `list_dir` and `glob` list at most.
        pub list_max_entries: Option<usize>,
        /// Matches `grep` returns at most.
        pub grep_max_results: Option<usize>,
        /// Background shell jobs running at once (0 switches them off).
        pub max_background_jobs: Option<usize>,
        /// The longest a background job may run, in seconds.
        pub background_timeout_secs: Option<u64>,
        /// `[tools.shell_env]`: the environment of commands.
        pub shell_env: Option<ShellEnvPolicy>,
        /// apply_patch | apply_patch_freeform | edit_file | none (default: the model family's).
        pub edit_tool: Option<EditTool>,
    }
}

cogni_protocol::layered! {
    /// `[compaction]`
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct CompactionFile {
        /// Compact (or slide) when a request's tokens exceed this.
        pub token_limit: Option<u64>,
        /// Without `token_limit`: this fraction of the model's context
        /// window (default 0.8).
        pub context_fraction: Option<f64>,
    }
}

cogni_protocol::layered! {
    /// `[memory]`
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct MemoryFile {
        /// Notes in the system prompt and the `remember` tool (default off).
        pub enabled: Option<bool>,
        /// The memory section's cap in bytes.
        pub max_bytes: Option<usize>,
    }
}

cogni_protocol::layered! {
    /// `[skills]`
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct SkillsFile {
        /// The system prompt's skills listing's cap in bytes.
        pub max_listing_bytes: Option<usize>,
    }
}

cogni_protocol::layered! {
    /// One configuration layer. Every field is optional so layers can be merged.
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct ConfigFile {
        /// The model; unset: the provider's default model.
        pub model: Option<String>,
        /// The provider's id (`openai`, `anthropic`, ... or a
        /// `[model_providers]` entry).
        pub provider: Option<String>,
        /// When the user is asked before a tool call runs.
        pub approval_policy: Option<ApprovalPolicy>,
        /// What commands and file tools may touch.
        pub sandbox_mode: Option<SandboxMode>,
        /// The shell for command strings (default: `$SHELL`, else
        /// `/bin/bash`).
        pub shell: Option<String>,
        /// Model requests with tool calls in one turn, at most.
        pub max_iterations: Option<u32>,
        /// Extra instructions, sent as a developer message.
        pub developer_instructions: Option<String>,
        /// Replaces the model family's base instructions.
        pub base_instructions: Option<String>,
        /// A file whose text replaces the base instructions (not with
        /// `base_instructions`).
        pub base_instructions_file: Option<PathBuf>,
        /// Sampling temperature; unset: the model family's, then the
        /// provider's default.
        pub temperature: Option<f32>,
        /// The output limit of a response, in tokens.
        pub max_tokens: Option<u32>,
        /// minimal | low | medium | high, for models that reason.
        pub reasoning_effort: Option<String>,
        /// Cap on AGENTS.md content, in bytes.
        pub project_doc_max_bytes: Option<usize>,
        /// Verbose logs cut each logged payload to this many bytes.
        pub verbose_max_bytes: Option<usize>,
        /// Deprecated spelling of `[agent] max_context_bytes` (a warning says
        /// so; it still works).
        pub max_context_bytes: Option<usize>,
        /// `[sandbox_workspace_write]`: network and writable roots.
        pub sandbox_workspace_write: Option<SandboxWorkspaceWrite>,
        /// `[sandbox]`: resource limits of commands.
        pub sandbox: Option<SandboxLimitsFile>,
        /// `[features]`: parallel tools, skills.
        pub features: Option<FeaturesFile>,
        /// `[tools]`: the tool list and its caps.
        pub tools: Option<ToolsFile>,
        /// `[compaction]`: when history is compacted.
        pub compaction: Option<CompactionFile>,
        /// `[model_providers.ID]`: new providers, or changes to built-in ones.
        #[serde(default)]
        pub model_providers: BTreeMap<String, ProviderFile>,
        /// `[model_families.MODEL]`: models the catalog does not know, or
        /// changes to ones it does.
        #[serde(default)]
        pub model_families: BTreeMap<String, FamilyOverride>,
        /// `[model_aliases]`: alias -> model.
        #[serde(default)]
        pub model_aliases: BTreeMap<String, String>,
        /// Directories whose own cogni.toml is trusted (user config only).
        pub trusted_projects: Option<Vec<PathBuf>>,
        /// `effects = [...]`: effects after the built-in ones (docs/effects.md).
        pub effects: Option<AddUp<toml::Value>>,
        /// `context_strategy`: `sliding_window` or `summarize` (docs/context.md).
        pub context_strategy: Option<ContextStrategyKind>,
        /// `[memory]`: notes that outlive sessions (docs/memory.md).
        pub memory: Option<MemoryFile>,
        /// `[skills]`: the listing of skills (docs/skills.md).
        pub skills: Option<SkillsFile>,
        /// `[agent]`: strategies of the built-in agent.
        pub agent: Option<AgentFile>,
        /// `[run]`: middleware (timeout, output guardrail).
        pub run: Option<run::RunFile>,
        /// `[[hooks.EVENT]]`: user commands at lifecycle events.
        pub hooks: Option<hooks::HooksFile>,
        /// `[agents.NAME]`: agents to delegate to, as agent cards define them
        /// (docs/agents.md).
        #[serde(default)]
        pub agents: BTreeMap<String, AgentDef>,
        /// `[delegation]`: limits for delegated agents.
        pub delegation: Option<DelegationFile>,
        /// `[mcp_servers.NAME]`: MCP servers whose tools sessions get
        /// (docs/mcp.md).
        #[serde(default)]
        pub mcp_servers: BTreeMap<String, mcp::McpServerFile>,
        /// `[mcp]`: how MCP tools are offered.
        pub mcp: Option<mcp::McpFile>,
    }
}

cogni_protocol::layered! {
    /// `[delegation]`.
    #[derive(Debug, Clone, Copy, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct DelegationFile {
        /// Levels of agents below the root (default 2).
        pub max_delegation_depth: Option<u32>,
        /// Agents one `spawn_agents` call runs at once (default 4).
        pub max_concurrent_agents: Option<u32>,
        /// Agents started in the whole session tree (default 32).
        pub max_agents_per_session: Option<u32>,
    }
}

impl ConfigFile {
    /// Parse one file: syntax errors as `file:line:col`, unknown keys by path.
    pub fn parse(path: &Path, source: &str) -> Result<Self, ConfigError> {
        // Where the error is, and the line itself, so the key is named.
        let position = |e: &toml::de::Error| {
            e.span()
                .map(|s| {
                    let (l, c) = line_col(source, s.start);
                    let line = source.lines().nth(l.saturating_sub(1)).unwrap_or("").trim();
                    if line.is_empty() || line.len() > 120 {
                        format!("{}:{l}:{c}", path.display())
                    } else {
                        format!("{}:{l}:{c} (`{line}`)", path.display())
                    }
                })
                .unwrap_or_else(|| path.display().to_string())
        };
        let de = toml::Deserializer::parse(source)
            .map_err(|e| ConfigError(format!("{}: invalid TOML: {}", position(&e), e.message())))?;
        Self::checked(path, de, position, Some(source))
    }

    /// A layer from a table already read from `path` (what the allowlist
    /// kept of an untrusted project's file).
    fn from_table(path: &Path, table: toml::Table) -> Result<Self, ConfigError> {
        Self::checked(
            path,
            toml::Value::Table(table),
            |_| path.display().to_string(),
            None,
        )
    }

    /// Deserialize, refuse unknown keys by path (and line, in `source`,
    /// with the key meant when one is close), check effects, make relative
    /// paths relative to the file's directory.
    fn checked<'de, D>(
        path: &Path,
        de: D,
        position: impl Fn(&toml::de::Error) -> String,
        source: Option<&str>,
    ) -> Result<Self, ConfigError>
    where
        D: serde::Deserializer<'de, Error = toml::de::Error>,
    {
        let mut unknown = Vec::new();
        let mut file: ConfigFile = serde_ignored::deserialize(de, |p| {
            // `?` marks an Option layer, which is no part of the key's path.
            let key: Vec<String> = p
                .to_string()
                .split('.')
                .filter(|s| *s != "?")
                .map(String::from)
                .collect();
            unknown.push(key.join("."));
        })
        .map_err(|e| ConfigError(format!("{}: {}", position(&e), plain_message(e.message()))))?;
        if !unknown.is_empty() {
            let mut found: Vec<(Option<(usize, usize)>, &String)> = unknown
                .iter()
                .map(|key| (source.and_then(|s| key_position(s, key)), key))
                .collect();
            found.sort();
            let lines: Vec<String> = found
                .into_iter()
                .map(|(at, key)| {
                    let at = at.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default();
                    let meant = example::suggestion(key)
                        .map(|k| format!("; did you mean `{k}`?"))
                        .unwrap_or_default();
                    format!("{}{at}: unknown key `{key}`{meant}", path.display())
                })
                .collect();
            return err(format!(
                "{} (`cogni config example` shows every key)",
                lines.join("\n")
            ));
        }
        if let Some(effects) = &file.effects {
            run::check_effects(path, &effects.0)?;
        }
        if let Some(dir) = path.parent() {
            file.resolve_paths(dir);
        }
        Ok(file)
    }

    /// Read and parse the file at `path`.
    pub(crate) fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::parse(path, &read_config(path)?)
    }

    /// Relative paths in a file are relative to that file's directory.
    fn resolve_paths(&mut self, dir: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        if let Some(p) = self.base_instructions_file.as_mut() {
            fix(p);
        }
        if let Some(roots) = self
            .sandbox_workspace_write
            .as_mut()
            .and_then(|s| s.writable_roots.as_mut())
        {
            roots.iter_mut().for_each(fix);
        }
        for provider in self.model_providers.values_mut() {
            provider.resolve_paths(dir);
        }
        if let Some(run) = self.run.as_mut() {
            run.resolve_paths(dir);
        }
        for server in self.mcp_servers.values_mut() {
            server.resolve_paths(dir);
        }
    }

    /// Merge `over` on top of `self`, by the one rule of
    /// [`cogni_protocol::layer`], after the spellings that name another
    /// key are moved to it within `over`: the old top-level
    /// `max_context_bytes` is `[agent] max_context_bytes` (kept too, for
    /// its deprecation warning), and `[agent] max_steps` is
    /// `max_iterations` by its spec name (within one layer it wins).
    pub fn merge(&mut self, mut over: ConfigFile) {
        if let Some(n) = over.max_context_bytes {
            over.agent
                .get_or_insert_with(Default::default)
                .max_context_bytes = Some(n);
        }
        if let Some(n) = over.agent.as_mut().and_then(|a| a.max_steps.take()) {
            over.max_iterations = Some(n);
        }
        Merge::merge(self, over);
    }

    /// The `COGNI_*` environment layer.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut c = ConfigFile {
            model: env("COGNI_MODEL"),
            provider: env("COGNI_PROVIDER"),
            ..Default::default()
        };
        if let Some(v) = env("COGNI_APPROVAL") {
            c.approval_policy =
                Some(parse_approval(&v).map_err(|m| ConfigError(format!("COGNI_APPROVAL: {m}")))?);
        }
        if let Some(v) = env("COGNI_SANDBOX") {
            c.sandbox_mode =
                Some(parse_sandbox(&v).map_err(|m| ConfigError(format!("COGNI_SANDBOX: {m}")))?);
        }
        if let Some(v) = env("COGNI_MAX_ITERATIONS") {
            c.max_iterations = Some(v.parse().map_err(|_| {
                ConfigError(format!(
                    "COGNI_MAX_ITERATIONS: `{v}` is not a positive integer"
                ))
            })?);
        }
        Ok(c)
    }
}

/// Parse an approval policy given on the command line or in
/// `COGNI_APPROVAL`; the error lists the accepted names.
pub fn parse_approval(s: &str) -> Result<ApprovalPolicy, String> {
    ApprovalPolicy::parse(s).ok_or_else(|| {
        format!(
            "unknown approval policy `{s}`; use one of: {}",
            ApprovalPolicy::VARIANTS.join(", ")
        )
    })
}

/// Parse a sandbox mode given on the command line or in `COGNI_SANDBOX`;
/// the error lists the accepted names.
pub fn parse_sandbox(s: &str) -> Result<SandboxMode, String> {
    SandboxMode::parse(s).ok_or_else(|| {
        format!(
            "unknown sandbox mode `{s}`; use one of: {}",
            SandboxMode::VARIANTS.join(", ")
        )
    })
}

/// A config file's text.
fn read_config(path: &Path) -> Result<String, ConfigError> {
    read_text_limited(path, SPEC_FILE_MAX_BYTES).map_err(|e| ConfigError(format!("config: {e}")))
}

/// Where the key `path` (dotted, as serde names it; numbers index arrays
/// of tables) is written in `source`: 1-based line and column.
fn key_position(source: &str, path: &str) -> Option<(usize, usize)> {
    let doc = toml_edit::Document::parse(source).ok()?;
    let mut table: &dyn toml_edit::TableLike = doc.as_item().as_table_like()?;
    let mut array = None;
    let mut span = None;
    for part in path.split('.') {
        if let (Some(tables), Ok(i)) = (array.take(), part.parse::<usize>()) {
            let tables: &toml_edit::ArrayOfTables = tables;
            table = tables.get(i)?;
            continue;
        }
        let (key, item) = table.get_key_value(part)?;
        span = key.span().or(span);
        if let Some(tables) = item.as_array_of_tables() {
            array = Some(tables);
        } else if let Some(next) = item.as_table_like() {
            table = next;
        } else {
            break;
        }
    }
    span.map(|s| line_col(source, s.start))
}

/// 1-based line and column of a byte offset.
fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Where configuration comes from, injectable for tests.
pub struct Sources<'a> {
    /// `$COGNI_HOME`, default `~/.cogni`.
    pub home: PathBuf,
    /// Directory the session works in (after `-C`).
    pub cwd: PathBuf,
    /// `--config FILE`.
    pub explicit: Option<PathBuf>,
    /// The flags layer.
    pub flags: ConfigFile,
    /// Environment lookup.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// The resolved configuration of a run.
#[derive(Debug, Clone)]
pub struct Config {
    /// What a session is started with.
    pub session: SessionConfig,
    /// Things the user should know (e.g. a plaintext key in a config file).
    pub warnings: Vec<String>,
    /// `verbose_max_bytes`: `--verbose` cuts each logged payload to this
    /// many bytes.
    pub verbose_max_bytes: usize,
    /// `[agents.NAME]` of every layer (a trusted project's included).
    pub agents: BTreeMap<String, AgentDef>,
    /// `[delegation]`.
    pub delegation: DelegationLimits,
    /// The working directory is trusted: its own cards, skills and config
    /// count in full.
    pub project_trusted: bool,
    /// The skills found for the working directory, also when
    /// `features.skills_enabled` is off (`cogni skills` lists them).
    pub skills: Arc<Skills>,
    /// `[mcp_servers.NAME]` and `[mcp]`: the servers front doors start.
    pub mcp: cogni_mcp::McpConfig,
}

/// Default cut of each payload in verbose logs, in bytes.
pub const DEFAULT_VERBOSE_MAX_BYTES: usize = 2000;

/// `$COGNI_HOME`, or `~/.cogni`.
pub fn cogni_home(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(h) = env("COGNI_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    let home = env("HOME").unwrap_or_else(|| "/".into());
    Path::new(&home).join(".cogni")
}

/// Load every layer and build the session config.
pub fn load(sources: Sources<'_>) -> Result<Config, ConfigError> {
    let mut merged = ConfigFile::default();
    let home_file = sources.home.join("config.toml");
    if home_file.is_file() {
        merged.merge(ConfigFile::load(&home_file)?);
    }
    let mut layer_warnings = Vec::new();
    let project_file = sources.cwd.join("cogni.toml");
    // Trust is read only when the project has something to gate.
    let gated = project_file.is_file()
        || sources.cwd.join(".cogni/agents").is_dir()
        || sources.cwd.join(".cogni/commands").is_dir();
    let project_trusted = gated && trust::is_trusted(&sources.home, &merged, &sources.cwd)?;
    if project_file.is_file() {
        let source = read_config(&project_file)?;
        // The whole file is checked first, so its errors name their line.
        let mut project = ConfigFile::parse(&project_file, &source)?;
        if !project_trusted {
            let table: toml::Table = toml::from_str(&source).map_err(|e| {
                ConfigError(format!(
                    "{}: {}",
                    project_file.display(),
                    plain_message(e.message())
                ))
            })?;
            let kept = allowlist::filter(table, &merged, &sources.cwd);
            if !kept.ignored.is_empty() {
                layer_warnings.push(trust::warning(&project_file, &kept.ignored));
            }
            project = ConfigFile::from_table(&project_file, kept.table)?;
        }
        let dropped = trust::project_only(&mut project);
        if !dropped.is_empty() {
            layer_warnings.push(trust::project_warning(&project_file, &dropped));
        }
        merged.merge(project);
    }
    if let Some(explicit) = &sources.explicit {
        merged.merge(ConfigFile::load(explicit)?);
    }
    merged.merge(ConfigFile::from_env(sources.env)?);
    merged.merge(sources.flags);
    let mut config = resolve(merged, &sources.home, &sources.cwd, sources.env)?;
    layer_warnings.append(&mut config.warnings);
    config.warnings = layer_warnings;
    config.project_trusted = project_trusted;
    Ok(config)
}

/// Turn the merged layers into a validated session config.
pub fn resolve(
    c: ConfigFile,
    home: &Path,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let mut warnings = Vec::new();
    let provider_id = c.provider.clone().unwrap_or_else(|| "openai".to_string());
    let mut provider = providers::resolve(&provider_id, &c.model_providers, env)?;
    keys::resolve_key(
        &mut provider,
        c.model_providers.get(&provider_id),
        home,
        env,
        &mut warnings,
    )?;

    let workspace = c.sandbox_workspace_write.unwrap_or_default();
    let limits = sandbox_limits(c.sandbox.unwrap_or_default())?;
    let sandbox_policy = SandboxPolicy {
        limits,
        mode: c.sandbox_mode.unwrap_or_default(),
        network_access: workspace.network_access.unwrap_or(false),
        writable_roots: workspace.writable_roots.unwrap_or_default(),
        shell: c
            .shell
            .or_else(|| env("SHELL").filter(|s| s.starts_with('/')))
            .unwrap_or_else(|| "/bin/bash".into()),
        pins: Default::default(),
    };

    let base_instructions_override = match (&c.base_instructions, &c.base_instructions_file) {
        (Some(_), Some(_)) => {
            return err("set either base_instructions or base_instructions_file, not both")
        }
        (Some(text), None) => Some(text.clone()),
        (None, Some(path)) => Some(
            read_text_limited(path, SPEC_FILE_MAX_BYTES)
                .map_err(|e| ConfigError(format!("base_instructions_file: {e}")))?,
        ),
        (None, None) => None,
    };

    let doc_cap = c
        .project_doc_max_bytes
        .unwrap_or(agents_md::DEFAULT_MAX_BYTES);
    let user_instructions = load_user_instructions(home, cwd, doc_cap, &mut warnings);
    let memory_config = c.memory.unwrap_or_default();
    let features = c.features.unwrap_or_default();
    let defaults = Features::default();
    let skills_enabled = features.skills_enabled.unwrap_or(defaults.skills_enabled);
    let roots = skills::roots(cwd, home, env("HOME").as_deref().map(Path::new));
    // Trust is read only when a project has skills to gate.
    let trusted = if roots.iter().any(|r| r.scope == skills::Scope::Project) {
        let projects = c.trusted_projects.as_deref().unwrap_or_default();
        Some(trust::Trusted::load(home, projects)?)
    } else {
        None
    };
    let skills = Arc::new(Skills::load(
        roots,
        |dir| trusted.as_ref().is_some_and(|t| t.covers(dir)),
        c.skills
            .as_ref()
            .and_then(|s| s.max_listing_bytes)
            .unwrap_or(skills::DEFAULT_MAX_LISTING_BYTES),
    ));
    let prompt = cogni_core::PromptConfig {
        soul: soul::load_global(home, doc_cap)?,
        project_soul: soul::load_project(cwd, doc_cap)?,
        memory_files: memory_config.enabled.unwrap_or(false).then(|| {
            let root = cogni_tools::paths::repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
            MemoryFiles {
                user: home.join("memory.md"),
                project: root.join(".cogni/memory.md"),
                max_bytes: memory_config.max_bytes.unwrap_or(memory::DEFAULT_MAX_BYTES),
            }
        }),
        skills: skills_enabled
            .then(|| skills.listing().to_string())
            .filter(|l| !l.is_empty()),
        ..Default::default()
    };
    model_aliases::validate(&c.model_aliases)?;

    let mut tool_config = tool_config(c.tools.unwrap_or_default())?;
    // The provider's key never reaches a child process, whatever its name.
    if let Some(var) = &provider.env_key {
        tool_config.shell_env.exclude.push(var.clone());
    }
    tool_config.skills = skills_enabled.then(|| skills.clone());
    let compaction = c.compaction.unwrap_or_default();
    let compaction_defaults = CompactionConfig::default();

    let auth_mode = if provider.auth_command.is_some() {
        AuthMode::Command
    } else if provider.env_key.is_some() {
        AuthMode::ApiKey
    } else {
        AuthMode::None
    };
    let mut session = SessionConfig::new(provider, cwd.to_path_buf());
    session.model = c.model;
    session.approval_policy = c.approval_policy.unwrap_or_default();
    session.sandbox_policy = sandbox_policy;
    session.developer_instructions = c.developer_instructions;
    session.user_instructions = user_instructions;
    session.base_instructions_override = base_instructions_override;
    session.features = Features {
        parallel_tools: features.parallel_tools.unwrap_or(defaults.parallel_tools),
        early_tools: defaults.early_tools,
        skills_enabled,
    };
    session.tool_config = tool_config;
    session.auth_mode = auth_mode;
    session.model_families = c.model_families;
    session.model_aliases = c.model_aliases;
    session.prompt = prompt;
    session.hooks = c.hooks.map(|h| h.0).unwrap_or_default();
    let reasoning_effort = match c.reasoning_effort.as_deref() {
        None => None,
        Some(e) => Some(cogni_core::session::effort_name(e).ok_or_else(|| {
            ConfigError(format!(
                "reasoning_effort `{e}` is not one of: {}",
                cogni_core::session::REASONING_EFFORTS.join(", ")
            ))
        })?),
    };
    session.sampling = Sampling {
        temperature: c.temperature,
        max_tokens: c.max_tokens,
        reasoning_effort,
    };
    if let Some(n) = c.max_iterations {
        session.max_iterations = n;
    }
    session.compaction = CompactionConfig {
        token_limit: compaction.token_limit,
        context_fraction: compaction
            .context_fraction
            .unwrap_or(compaction_defaults.context_fraction),
    };
    session.effects = run::effects(c.effects.map(|e| e.0))?;
    session.context_strategy = c.context_strategy;
    if c.max_context_bytes.is_some() {
        warnings.push(
            "`max_context_bytes` at the top of cogni.toml is deprecated: write it under `[agent]` \
             (it still works)"
                .into(),
        );
    }
    if let Some(agent) = &c.agent {
        cogni_core::apply_strategies(agent, &mut session, "agent").map_err(ConfigError)?;
    }
    session.run = run::run_config(c.run)?;
    let mcp = mcp::mcp_config(&c.mcp_servers, c.mcp.as_ref())?;
    session.sandbox_policy.pins = Arc::new(pin_commands(&session, &mcp, cwd));
    Ok(Config {
        session,
        warnings,
        verbose_max_bytes: c.verbose_max_bytes.unwrap_or(DEFAULT_VERBOSE_MAX_BYTES),
        delegation: delegation_limits(c.delegation.unwrap_or_default())?,
        agents: c.agents,
        project_trusted: false,
        skills,
        mcp,
    })
}

/// Pin the workspace files that the session's own commands run (hooks,
/// guardrail and output-check commands, the test command, MCP servers):
/// see `cogni_sandbox::pinned`.
fn pin_commands(
    session: &SessionConfig,
    mcp: &cogni_mcp::McpConfig,
    cwd: &Path,
) -> cogni_protocol::Pins {
    use cogni_sandbox::pinned::{self, Named};
    use cogni_spec::effects::EffectSpec;
    let mut named: Vec<Named> = Vec::new();
    named.extend(session.hooks.iter().map(|h| Named::line(&h.command, cwd)));
    for effect in &session.effects {
        if let EffectSpec::Guardrail {
            command: Some(command),
            ..
        } = effect
        {
            named.push(Named::line(command, cwd));
        }
    }
    for guard in &session.run.output_guardrails {
        if let Some(command) = &guard.command {
            named.push(Named::line(command, cwd));
        }
    }
    if let Some(test) = &session.test_run {
        named.push(Named::line(&test.command, cwd));
    }
    for server in &mcp.servers {
        if let cogni_mcp::Transport::Stdio {
            command,
            args,
            cwd: dir,
            ..
        } = &server.transport
        {
            let words = std::iter::once(command.as_str()).chain(args.iter().map(String::as_str));
            named.push(Named::argv(words, dir.as_deref().unwrap_or(cwd)));
        }
    }
    let roots =
        cogni_sandbox::Workspace::pin(cwd, &session.sandbox_policy.writable_roots).real_paths();
    pinned::pin(&named, &roots)
}

/// `[delegation]` checked, over the defaults.
fn delegation_limits(d: DelegationFile) -> Result<DelegationLimits, ConfigError> {
    let defaults = DelegationLimits::default();
    let at_least_one = |key: &str, v: Option<u32>, default: u32| match v {
        Some(0) => err(format!("delegation.{key}: must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(default),
    };
    Ok(DelegationLimits {
        max_depth: d.max_delegation_depth.unwrap_or(defaults.max_depth),
        max_concurrent: at_least_one(
            "max_concurrent_agents",
            d.max_concurrent_agents,
            defaults.max_concurrent,
        )?,
        max_agents: at_least_one(
            "max_agents_per_session",
            d.max_agents_per_session,
            defaults.max_agents,
        )?,
    })
}

fn sandbox_limits(s: SandboxLimitsFile) -> Result<ResourceLimits, ConfigError> {
    for (key, value) in [
        ("max_processes", s.max_processes),
        ("max_file_size_bytes", s.max_file_size_bytes),
        ("cpu_time_secs", s.cpu_time_secs),
    ] {
        if value == Some(0) {
            return err(format!("sandbox.{key} must be at least 1"));
        }
    }
    let defaults = ResourceLimits::default();
    Ok(ResourceLimits {
        max_processes: s.max_processes.or(defaults.max_processes),
        max_file_size_bytes: s.max_file_size_bytes.or(defaults.max_file_size_bytes),
        cpu_time_secs: s.cpu_time_secs.or(defaults.cpu_time_secs),
    })
}

fn tool_config(t: ToolsFile) -> Result<ToolConfig, ConfigError> {
    let mut config = ToolConfig::default();
    pick_into(&mut config.enabled, t.enabled);
    let ms = Duration::from_millis;
    if let Some(v) = t.shell_timeout_ms {
        config.shell_timeout = ms(v);
    }
    if let Some(v) = t.max_shell_timeout_ms {
        config.max_shell_timeout = ms(v);
    }
    pick_into(&mut config.capture_limit_bytes, t.capture_limit_bytes);
    pick_into(&mut config.max_output_bytes, t.max_output_bytes);
    pick_into(&mut config.max_output_lines, t.max_output_lines);
    pick_into(&mut config.read_max_bytes, t.read_max_bytes);
    pick_into(&mut config.list_max_entries, t.list_max_entries);
    pick_into(&mut config.grep_max_results, t.grep_max_results);
    pick_into(&mut config.max_background_jobs, t.max_background_jobs);
    if let Some(secs) = t.background_timeout_secs {
        if secs == 0 {
            return err("tools.background_timeout_secs must be at least 1 (background jobs need a timeout; set tools.max_background_jobs = 0 to switch them off)");
        }
        config.background_timeout = Duration::from_secs(secs);
    }
    pick_into(&mut config.shell_env, t.shell_env);
    config.edit_tool = t.edit_tool;
    config
        .shell_env
        .validate()
        .map_err(|e| ConfigError(format!("[tools.shell_env]: {e}")))?;
    if config.shell_timeout.is_zero() || config.shell_timeout > config.max_shell_timeout {
        return err(format!(
            "tools.shell_timeout_ms must be between 1 and tools.max_shell_timeout_ms ({} ms)",
            config.max_shell_timeout.as_millis()
        ));
    }
    if config.max_output_bytes == 0 || config.max_output_lines == 0 {
        return err("tools.max_output_bytes and tools.max_output_lines must be at least 1");
    }
    Ok(config)
}

fn pick_into<T>(target: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *target = v;
    }
}

#[cfg(test)]
mod tests;
