//! cogni.toml + environment + flags -> a validated [`SessionConfig`](cogni_core::SessionConfig).
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
mod load;
mod mcp;
mod model_aliases;
mod providers;
mod run;
mod soul;
mod trust;

use cogni_protocol::layer::{AddUp, Merge};
use cogni_protocol::{ApprovalPolicy, ContextStrategyKind, EditTool, SandboxMode};
use cogni_provider::model_family::FamilyOverride;
use cogni_spec::cards::AgentDef;
use cogni_spec::plain_message;
use cogni_tools::env::ShellEnvPolicy;
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use agents_md::load_user_instructions;
pub use allowlist::{allowed as untrusted_allowlist, inside as inside_project};
pub use cogni_spec::strategies::AgentFile;
pub use load::{
    cogni_home, discover, load, read_layers, resolve, validate, Checkpoints, Config, Discovered,
    Layers, Repl, Sources, Validated, DEFAULT_VERBOSE_MAX_BYTES,
};
pub use mcp::{add_server, remove_server, NewServer};
pub use providers::{ProviderFile, BUILTIN_IDS as BUILTIN_PROVIDERS};
pub use trust::{dir_is_trusted, TrustStore};

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
        /// `[tools.web_fetch]`: the `web_fetch` tool.
        pub web_fetch: Option<WebFetchFile>,
        /// Offer the provider's own web search (Responses and Anthropic
        /// wire APIs only; default false).
        pub web_search: Option<bool>,
    }
}

cogni_protocol::layered! {
    /// `[tools.web_fetch]`
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct WebFetchFile {
        /// Offer the tool (default true).
        pub enabled: Option<bool>,
        /// Hosts fetched while the network is off, and at any address
        /// (loopback and private ones too); a name covers its subdomains.
        pub allowed_domains: Option<Vec<String>>,
        /// Bytes of text the model is shown at most.
        pub max_bytes: Option<usize>,
        /// The longest one call may take, in seconds.
        pub timeout_secs: Option<u64>,
        /// Redirects followed at most.
        pub max_redirects: Option<usize>,
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
    /// `[checkpoints]`
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct CheckpointsFile {
        /// Snapshot the workspace around each turn of the REPL and `cogni
        /// acp`, for `/undo` and `/rewind` (default on).
        pub enabled: Option<bool>,
        /// In `cogni run` too, as `--checkpoint` asks (default off).
        pub run: Option<bool>,
    }
}

cogni_protocol::layered! {
    /// `[repl]`
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct ReplFile {
        /// The status line above the prompt (model, mode, context used,
        /// tokens, cost); default on.
        pub status_line: Option<bool>,
        /// How the terminal is told that a turn ended or a question waits
        /// while it is not focused (default `auto`).
        pub notify: Option<Notify>,
        /// Turns shorter than this many seconds end without a notification
        /// (default 5).
        pub notify_min_secs: Option<u64>,
        /// Notification hooks hear `idle_prompt` once the prompt has waited
        /// this many seconds after a turn (default 60; 0: when the turn
        /// ends).
        pub notify_idle_secs: Option<u64>,
    }
}

/// `[repl] notify`: how the REPL notifies the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    /// Never.
    Off,
    /// The terminal bell (BEL).
    Bell,
    /// OSC 9 (iTerm2, WezTerm, Windows Terminal, kitty, Ghostty).
    Osc9,
    /// OSC 777 `notify` (foot, rxvt-unicode with its notify extension).
    Osc777,
    /// OSC 9 where the terminal is known to show it, OSC 777 on foot, the
    /// bell elsewhere.
    #[default]
    Auto,
}

cogni_protocol::replaced_whole!(Notify);

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
        /// `[repl]`: how the REPL looks (docs/repl.md).
        pub repl: Option<ReplFile>,
        /// `[agent]`: strategies of the built-in agent.
        pub agent: Option<AgentFile>,
        /// `[checkpoints]`: snapshots of the workspace around each turn
        /// (docs/checkpoints.md).
        pub checkpoints: Option<CheckpointsFile>,
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
        /// `profile`: the profile used when `--profile` names none.
        pub profile: Option<String>,
        /// `[profiles.NAME]`: keys of this file that `--profile NAME` (or
        /// `profile = "NAME"`) puts over the files' own, below the
        /// environment and the command line.
        #[serde(default)]
        pub profiles: BTreeMap<String, ConfigFile>,
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
        for layer in std::iter::once(&file).chain(file.profiles.values()) {
            if let Some(effects) = &layer.effects {
                run::check_effects(path, &effects.0)?;
            }
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
        for profile in self.profiles.values_mut() {
            profile.resolve_paths(dir);
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

#[cfg(test)]
mod tests;
