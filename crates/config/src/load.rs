//! From the layers to a session's configuration, in four steps that
//! [`load`] runs in order:
//!
//! 1. [`read_layers`] reads the config files (and the trust list when the
//!    project has something to gate) and merges them with the environment
//!    and the flags, key by key.
//! 2. [`validate`] checks the merged layers and turns each table into what
//!    the engine takes (limits, tools, effects, middleware, MCP servers).
//!    No file is read: a mistake is reported before anything is looked
//!    for on disk.
//! 3. [`discover`] reads what the configuration names or implies: the
//!    provider's key file, `base_instructions_file`, AGENTS.md, SOUL.md
//!    and the skills.
//! 4. [`resolve`] puts the two together into a [`SessionConfig`]; it reads
//!    nothing. Last, `load` pins the workspace files the session's own
//!    commands run.

use super::{
    agents_md, allowlist, keys, mcp, model_aliases, providers, run, soul, trust, ConfigError,
    ConfigFile, DelegationFile, Notify, ReplFile, SandboxLimitsFile, ToolsFile, WebFetchFile,
};
use cogni_core::delegate::DelegationLimits;
use cogni_core::{AuthMode, CompactionConfig, Features, ProjectSoul, Sampling, SessionConfig};
use cogni_protocol::{ResourceLimits, SandboxPolicy};
use cogni_provider::{ProviderInfo, WireApi};
use cogni_spec::cards::AgentDef;
use cogni_spec::effects::EffectSpec;
use cogni_spec::plain_message;
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use cogni_tools::memory::{self, MemoryFiles};
use cogni_tools::skills::{self, Skills};
use cogni_tools::web_fetch::guard::AllowedHosts;
use cogni_tools::web_fetch::WebFetchConfig;
use cogni_tools::ToolConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
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
    /// `[checkpoints]`: which front doors snapshot the workspace.
    pub checkpoints: Checkpoints,
    /// The working directory is trusted: its own cards, skills and config
    /// count in full.
    pub project_trusted: bool,
    /// The skills found for the working directory, also when
    /// `features.skills_enabled` is off (`cogni skills` lists them).
    pub skills: Arc<Skills>,
    /// `[mcp_servers.NAME]` and `[mcp]`: the servers front doors start.
    pub mcp: cogni_mcp::McpConfig,
    /// `[repl]`.
    pub repl: Repl,
}

/// `[repl]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repl {
    /// The REPL shows its status line.
    pub status_line: bool,
    /// How the terminal is notified.
    pub notify: Notify,
    /// Turns shorter than this end without a notification.
    pub notify_min: Duration,
    /// How long the prompt waits after a turn before Notification hooks
    /// hear `idle_prompt`.
    pub notify_idle: Duration,
}

impl Repl {
    /// Turns this short end without a notification, by default.
    pub const NOTIFY_MIN: Duration = Duration::from_secs(5);
    /// Claude Code's wait before its `idle_prompt` notification.
    pub const NOTIFY_IDLE: Duration = Duration::from_secs(60);

    fn of(file: Option<&ReplFile>) -> Repl {
        let secs = |n: Option<u64>, default: Duration| n.map_or(default, Duration::from_secs);
        Repl {
            status_line: file.and_then(|r| r.status_line).unwrap_or(true),
            notify: file.and_then(|r| r.notify).unwrap_or_default(),
            notify_min: secs(file.and_then(|r| r.notify_min_secs), Self::NOTIFY_MIN),
            notify_idle: secs(file.and_then(|r| r.notify_idle_secs), Self::NOTIFY_IDLE),
        }
    }
}

/// `[checkpoints]`, resolved: which front doors snapshot the workspace
/// around each turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoints {
    /// The REPL and `cogni acp`.
    pub interactive: bool,
    /// `cogni run`.
    pub run: bool,
}

/// Default cut of each payload in verbose logs, in bytes.
pub const DEFAULT_VERBOSE_MAX_BYTES: usize = 2000;

/// `$COGNI_HOME`, or `~/.cogni` (on Windows `%APPDATA%\cogni`, where a
/// program keeps its settings there).
pub fn cogni_home(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(h) = env("COGNI_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    if cfg!(windows) {
        if let Some(app_data) = env("APPDATA").filter(|a| !a.is_empty()) {
            return Path::new(&app_data).join("cogni");
        }
        let profile = env("USERPROFILE").unwrap_or_else(|| "C:\\".into());
        return Path::new(&profile)
            .join("AppData")
            .join("Roaming")
            .join("cogni");
    }
    let home = env("HOME").unwrap_or_else(|| "/".into());
    Path::new(&home).join(".cogni")
}

/// Load every layer and build the session config: the four steps of this
/// module, then the pins.
pub fn load(sources: Sources<'_>) -> Result<Config, ConfigError> {
    let layers = read_layers(&sources)?;
    let validated = validate(layers.merged)?;
    let discovered = discover(&validated.file, &sources.home, &sources.cwd, sources.env)?;
    let mut config = resolve(
        validated,
        discovered,
        &sources.home,
        &sources.cwd,
        sources.env,
    )?;
    let mut warnings = layers.warnings;
    warnings.append(&mut config.warnings);
    config.warnings = warnings;
    config.project_trusted = layers.project_trusted;
    config.session.sandbox_policy.pins =
        Arc::new(pin_commands(&config.session, &config.mcp, &sources.cwd));
    Ok(config)
}

/// The layers of a session's configuration, merged.
#[derive(Debug, Default)]
pub struct Layers {
    /// Every layer merged key by key, later over earlier.
    pub merged: ConfigFile,
    /// What the user should know about the layers (keys an untrusted
    /// project may not set, project-only keys).
    pub warnings: Vec<String>,
    /// The working directory is trusted: its own cards, skills and config
    /// count in full.
    pub project_trusted: bool,
}

/// Step 1: read and merge the layers (`$COGNI_HOME/config.toml`,
/// `./cogni.toml` as far as the project is trusted, `--config FILE`, the
/// profile chosen by `--profile` or `profile`, the environment, the
/// flags).
pub fn read_layers(sources: &Sources<'_>) -> Result<Layers, ConfigError> {
    let mut merged = ConfigFile::default();
    merged.merge(user_layer(&sources.home)?);
    let mut warnings = Vec::new();
    let project_file = sources.cwd.join("cogni.toml");
    // Trust is read only when the project has something to gate.
    let gated = project_file.is_file()
        || sources.cwd.join(".cogni/agents").is_dir()
        || sources.cwd.join(".cogni/commands").is_dir()
        || sources.cwd.join(".claude/commands").is_dir();
    let project_trusted = gated && trust::is_trusted(&sources.home, &merged, &sources.cwd)?;
    if project_file.is_file() {
        let source = super::read_config(&project_file)?;
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
                warnings.push(trust::warning(&project_file, &kept.ignored));
            }
            project = ConfigFile::from_table(&project_file, kept.table)?;
        }
        let dropped = trust::project_only(&mut project);
        if !dropped.is_empty() {
            warnings.push(trust::project_warning(&project_file, &dropped));
        }
        merged.merge(project);
    }
    if let Some(explicit) = &sources.explicit {
        merged.merge(ConfigFile::load(explicit)?);
    }
    if let Some(name) = sources.flags.profile.as_ref().or(merged.profile.as_ref()) {
        let profile = merged.profiles.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = merged.profiles.keys().map(String::as_str).collect();
            ConfigError(if known.is_empty() {
                format!("no profile is named `{name}`: no config file has a [profiles.NAME] table")
            } else {
                format!(
                    "no profile is named `{name}`; the profiles are: {}",
                    known.join(", ")
                )
            })
        })?;
        if profile.profile.is_some() || !profile.profiles.is_empty() {
            return Err(ConfigError(format!(
                "[profiles.{name}]: a profile cannot choose or hold profiles"
            )));
        }
        merged.merge(profile);
    }
    merged.merge(ConfigFile::from_env(sources.env)?);
    merged.merge(sources.flags.clone());
    Ok(Layers {
        merged,
        warnings,
        project_trusted,
    })
}

/// The user's own layer, `home/config.toml` (empty when there is none).
pub(crate) fn user_layer(home: &Path) -> Result<ConfigFile, ConfigError> {
    let file = home.join("config.toml");
    if file.is_file() {
        ConfigFile::load(&file)
    } else {
        Ok(ConfigFile::default())
    }
}

/// The merged layers, checked: each table turned into what the engine
/// takes. What is left in `file` is used as it is.
#[derive(Debug)]
pub struct Validated {
    /// The merged layers (the tables below are taken out of it).
    pub file: ConfigFile,
    /// `[sandbox]`.
    pub limits: ResourceLimits,
    /// `[tools]`.
    pub tools: ToolConfig,
    /// `[delegation]`.
    pub delegation: DelegationLimits,
    /// `effects = [...]`.
    pub effects: Vec<EffectSpec>,
    /// `[run]`.
    pub run: cogni_core::run::RunConfig,
    /// `[mcp_servers.NAME]` and `[mcp]`.
    pub mcp: cogni_mcp::McpConfig,
    /// `reasoning_effort`, by its canonical name.
    pub reasoning_effort: Option<&'static str>,
    /// `[tools] web_search`.
    pub web_search: bool,
}

/// Step 2: check the merged layers without reading any file.
pub fn validate(mut c: ConfigFile) -> Result<Validated, ConfigError> {
    if c.base_instructions.is_some() && c.base_instructions_file.is_some() {
        return err("set either base_instructions or base_instructions_file, not both");
    }
    model_aliases::validate(&c.model_aliases)?;
    let reasoning_effort = match c.reasoning_effort.as_deref() {
        None => None,
        Some(e) => Some(cogni_core::session::effort_name(e).ok_or_else(|| {
            ConfigError(format!(
                "reasoning_effort `{e}` is not one of: {}",
                cogni_core::session::REASONING_EFFORTS.join(", ")
            ))
        })?),
    };
    let web_search = c.tools.as_ref().and_then(|t| t.web_search) == Some(true);
    Ok(Validated {
        web_search,
        limits: sandbox_limits(c.sandbox.take().unwrap_or_default())?,
        tools: tool_config(c.tools.take().unwrap_or_default())?,
        delegation: delegation_limits(c.delegation.take().unwrap_or_default())?,
        effects: run::effects(c.effects.take().map(|e| e.0))?,
        run: run::run_config(c.run.take())?,
        mcp: mcp::mcp_config(&c.mcp_servers, c.mcp.as_ref())?,
        reasoning_effort,
        file: c,
    })
}

/// What the configuration names or implies on disk, read.
#[derive(Debug)]
pub struct Discovered {
    /// The provider, with its API key found (environment, key file, or a
    /// plaintext key in config).
    pub provider: ProviderInfo,
    /// `base_instructions`, or the text of `base_instructions_file`.
    pub base_instructions: Option<String>,
    /// AGENTS.md: the global one, then the repository's down to the
    /// working directory.
    pub user_instructions: Option<String>,
    /// `$COGNI_HOME/SOUL.md`.
    pub soul: Option<String>,
    /// The project's `.cogni/SOUL.md`.
    pub project_soul: Option<ProjectSoul>,
    /// The skills found for the working directory (also when
    /// `features.skills_enabled` is off: `cogni skills` lists them).
    pub skills: Arc<Skills>,
    /// The repository the working directory is in (where the project's
    /// memory file is), or the directory itself.
    pub project_root: PathBuf,
    /// What the user should know (a plaintext key, a truncated AGENTS.md).
    pub warnings: Vec<String>,
}

/// Step 3: read what `c` names or implies for a session in `cwd`.
pub fn discover(
    c: &ConfigFile,
    home: &Path,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Discovered, ConfigError> {
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
    let base_instructions = match (&c.base_instructions, &c.base_instructions_file) {
        (Some(text), _) => Some(text.clone()),
        (None, Some(path)) => Some(
            read_text_limited(path, SPEC_FILE_MAX_BYTES)
                .map_err(|e| ConfigError(format!("base_instructions_file: {e}")))?,
        ),
        (None, None) => None,
    };
    let doc_cap = doc_cap(c);
    let user_instructions = agents_md::load_user_instructions(home, cwd, doc_cap, &mut warnings);
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
    Ok(Discovered {
        provider,
        base_instructions,
        user_instructions,
        soul: soul::load_global(home, doc_cap)?,
        project_soul: soul::load_project(cwd, doc_cap)?,
        skills,
        project_root: cogni_tools::paths::repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf()),
        warnings,
    })
}

/// `project_doc_max_bytes`: the cap on AGENTS.md and SOUL.md.
fn doc_cap(c: &ConfigFile) -> usize {
    c.project_doc_max_bytes
        .unwrap_or(agents_md::DEFAULT_MAX_BYTES)
}

/// Step 4: the session's configuration from the checked layers and what
/// was found on disk (`home`, `cwd`: where files are, by name only; the
/// environment for `SHELL`). Reads nothing.
pub fn resolve(
    validated: Validated,
    found: Discovered,
    home: &Path,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let Validated {
        file: c,
        limits,
        tools: mut tool_config,
        delegation,
        effects,
        run,
        mcp,
        reasoning_effort,
        web_search,
    } = validated;
    let mut warnings = found.warnings;
    let provider = found.provider;
    if web_search {
        web_search_available(&provider)?;
    }
    let workspace = c.sandbox_workspace_write.unwrap_or_default();
    let sandbox_policy = SandboxPolicy {
        limits,
        mode: c.sandbox_mode.unwrap_or_default(),
        network_access: workspace.network_access.unwrap_or(false),
        writable_roots: workspace.writable_roots.unwrap_or_default(),
        shell: c
            .shell
            .or_else(|| env("SHELL").filter(|s| cfg!(unix) && s.starts_with('/')))
            .unwrap_or_else(|| cogni_protocol::DEFAULT_SHELL.into()),
        pins: Default::default(),
    };
    let memory_config = c.memory.unwrap_or_default();
    let features = c.features.unwrap_or_default();
    let defaults = Features::default();
    let skills_enabled = features.skills_enabled.unwrap_or(defaults.skills_enabled);
    let skills = found.skills;
    let prompt = cogni_core::PromptConfig {
        soul: found.soul,
        project_soul: found.project_soul,
        memory_files: memory_config.enabled.unwrap_or(false).then(|| MemoryFiles {
            user: home.join("memory.md"),
            project: found.project_root.join(".cogni/memory.md"),
            max_bytes: memory_config.max_bytes.unwrap_or(memory::DEFAULT_MAX_BYTES),
        }),
        skills: skills_enabled
            .then(|| skills.listing().to_string())
            .filter(|l| !l.is_empty()),
        ..Default::default()
    };
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
    // Windows has no sandbox: every command is asked first unless the
    // user chose otherwise.
    session.approval_policy = c.approval_policy.unwrap_or(if cfg!(windows) {
        cogni_protocol::ApprovalPolicy::Untrusted
    } else {
        cogni_protocol::ApprovalPolicy::default()
    });
    session.sandbox_policy = sandbox_policy;
    session.developer_instructions = c.developer_instructions;
    session.user_instructions = found.user_instructions;
    session.base_instructions_override = found.base_instructions;
    session.features = Features {
        parallel_tools: features.parallel_tools.unwrap_or(defaults.parallel_tools),
        early_tools: defaults.early_tools,
        skills_enabled,
        web_search,
    };
    session.tool_config = tool_config;
    session.auth_mode = auth_mode;
    session.model_families = c.model_families;
    session.model_aliases = c.model_aliases;
    session.prompt = prompt;
    session.hooks = c.hooks.map(|h| h.0).unwrap_or_default();
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
    session.effects = effects;
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
    session.run = run;
    Ok(Config {
        session,
        warnings,
        verbose_max_bytes: c.verbose_max_bytes.unwrap_or(DEFAULT_VERBOSE_MAX_BYTES),
        repl: Repl::of(c.repl.as_ref()),
        delegation,
        checkpoints: Checkpoints {
            interactive: c
                .checkpoints
                .as_ref()
                .and_then(|k| k.enabled)
                .unwrap_or(true),
            run: c.checkpoints.as_ref().and_then(|k| k.run).unwrap_or(false),
        },
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
    config.web_fetch = web_fetch_config(t.web_fetch.unwrap_or_default())?;
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

/// `[tools] web_search` needs an API that searches on its own servers.
fn web_search_available(provider: &ProviderInfo) -> Result<(), ConfigError> {
    match provider.wire_api {
        WireApi::Responses | WireApi::Anthropic => Ok(()),
        WireApi::Chat | WireApi::Ollama | WireApi::Scripted => {
            let id = &provider.id;
            let (api, instead) = match provider.wire_api {
                WireApi::Chat => (
                    "speaks Chat Completions",
                    format!("set `wire_api = \"responses\"` in [model_providers.{id}] if it is OpenAI, "),
                ),
                WireApi::Ollama => ("speaks Ollama's API", String::new()),
                _ => ("replays a script", String::new()),
            };
            err(format!(
                "[tools] web_search = true: provider `{id}` {api}, which has no web search of its own (only OpenAI's Responses API and Anthropic's Messages API have one): {instead}remove web_search, switch providers, or let the model use web_fetch instead"
            ))
        }
    }
}

fn web_fetch_config(w: WebFetchFile) -> Result<WebFetchConfig, ConfigError> {
    let mut config = WebFetchConfig::default();
    pick_into(&mut config.enabled, w.enabled);
    if let Some(domains) = w.allowed_domains {
        config.allowed_domains = AllowedHosts::parse(&domains)
            .map_err(|e| ConfigError(format!("tools.web_fetch.allowed_domains: {e}")))?;
    }
    pick_into(&mut config.max_bytes, w.max_bytes);
    if config.max_bytes == 0 {
        return err("tools.web_fetch.max_bytes must be at least 1");
    }
    if let Some(secs) = w.timeout_secs {
        if secs == 0 {
            return err("tools.web_fetch.timeout_secs must be at least 1");
        }
        config.timeout = Duration::from_secs(secs);
    }
    pick_into(&mut config.max_redirects, w.max_redirects);
    Ok(config)
}

fn pick_into<T>(target: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *target = v;
    }
}
