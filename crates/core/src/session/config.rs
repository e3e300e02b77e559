//! What a session starts from: `SessionConfig` and its checks (the model,
//! the sampling, a priced model for a cost budget, the values).

use super::*;

/// How credentials are obtained (the spec's `auth_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMode {
    /// A key resolved by the config layer (env var, key file or config);
    /// required when the provider names an `env_key`.
    #[default]
    ApiKey,
    /// A bearer token printed by the provider's `auth_command`, cached
    /// until its time to live runs out.
    Command,
    /// No credentials are sent.
    None,
}

impl AuthMode {
    /// `info` with only the credentials this mode sends: `ApiKey` the key
    /// (never the auth command), `Command` the auth command's token (never
    /// the key), `None` nothing.
    pub fn apply(self, mut info: ProviderInfo) -> ProviderInfo {
        match self {
            AuthMode::ApiKey => info.auth_command = None,
            AuthMode::Command => info.api_key = None,
            AuthMode::None => {
                info.api_key = None;
                info.auth_command = None;
            }
        }
        info
    }
}

/// When history is compacted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionConfig {
    /// An explicit token limit; wins over `context_fraction`.
    pub token_limit: Option<u64>,
    /// Fraction of the model's context window.
    pub context_fraction: f64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            token_limit: None,
            context_fraction: DEFAULT_COMPACT_FRACTION,
        }
    }
}

/// A registry to delegate to, and the limits of the tree below the
/// session.
#[derive(Debug, Clone)]
pub struct Delegating {
    /// The agents the model may delegate to, shared with every child.
    pub registry: Arc<AgentRegistry>,
    /// `[delegation]`: depth, concurrency and the number of agents of the
    /// whole tree.
    pub limits: DelegationLimits,
}

/// Inputs to `start_session` (the spec's `SessionConfig`).
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The model from the config files; `model_override` wins over it.
    pub model: Option<String>,
    /// A model chosen over the config files' (`--model`, `/model`, an
    /// agent card's `model`, a resumed session's model).
    pub model_override: Option<String>,
    /// The model provider: its id, base URL, wire API, credentials and
    /// default model.
    pub provider: ProviderInfo,
    /// `approval_policy`: which of the model's calls need the user's
    /// approval.
    pub approval_policy: ApprovalPolicy,
    /// The sandbox the model's commands and file tools run in: its mode,
    /// writable roots, network access and shell.
    pub sandbox_policy: SandboxPolicy,
    /// The working directory; must be absolute.
    pub cwd: PathBuf,
    /// `developer_instructions` (or an agent's instructions): the first
    /// item of history, as a developer message.
    pub developer_instructions: Option<String>,
    /// The AGENTS.md files found (the global one, then the repository's
    /// down to `cwd`), sent as a user message after the developer
    /// instructions.
    pub user_instructions: Option<String>,
    /// `base_instructions` (or `base_instructions_file`): the identity
    /// section of the system prompt instead of SOUL.md or the model
    /// family's template.
    pub base_instructions_override: Option<String>,
    /// `--output-schema`: a JSON Schema the final answer must satisfy
    /// (else the turn ends with `invalid_output`); also sent to providers
    /// that constrain the output. An invalid schema is a
    /// [`SessionError::Invalid`].
    pub output_schema: Option<serde_json::Value>,
    /// `[features]`: parallel and early tool calls, skills.
    pub features: Features,
    /// `--verbose`: each `model_request` event carries the whole request
    /// as JSON.
    pub verbose: bool,
    /// `[tools]`: which tools are offered and their settings (timeouts,
    /// output caps, the shell's environment, skills).
    pub tool_config: ToolConfig,
    /// Which credentials of `provider` are sent.
    pub auth_mode: AuthMode,
    /// `[model_families.*]` declared in config.
    pub model_families: BTreeMap<String, FamilyOverride>,
    /// `temperature`, `max_tokens` and `reasoning_effort` from config;
    /// unset ones come from the model family.
    pub sampling: Sampling,
    /// Most model requests that may ask for tools in one turn.
    pub max_iterations: u32,
    /// `[compaction]`: the limit at which history is compacted.
    pub compaction: CompactionConfig,
    /// Configured effects (global, then the agent's), after the built-in
    /// ones; a kind that may appear once (`compact`, a budget,
    /// `repeated_failure`) replaces the built-in one.
    pub effects: Vec<EffectSpec>,
    /// `[agent] enable_plan`: the `update_plan` tool and `plan` events
    /// (docs/plan.md).
    pub enable_plan: bool,
    /// `[agent] auto_context`: with no context files given, a task gets
    /// the files it names and the project's key files attached
    /// (docs/context.md#context-files).
    pub auto_context: bool,
    /// `[agent] max_context_bytes`: the cap on what context files (and the
    /// REPL's `@path`) attach to one message.
    pub max_context_bytes: usize,
    /// `[agent] enable_test_run`: the test command after each step
    /// (docs/test-loop.md).
    pub test_run: Option<TestRunConfig>,
    /// `[agent] enable_reflect`: a critique after each step
    /// (docs/reflection.md).
    pub reflect: Option<ReflectConfig>,
    /// `[agent] done_token`: the model ends the turn by writing it.
    pub done_token: Option<String>,
    /// `context_strategy`: how requests stay within the window (`None`:
    /// the model family's, else by the window's size; docs/context.md).
    pub context_strategy: Option<ContextStrategyKind>,
    /// Middleware settings (`[run]`).
    pub run: RunConfig,
    /// `[[hooks.EVENT]]`: user commands at lifecycle events, registered
    /// after every other effect, in this order.
    pub hooks: Vec<HookSpec>,
    /// The agent's name, for effects, hooks and logs (`main` by default).
    pub agent: String,
    /// The agents this session may delegate to (docs/agents.md).
    pub delegation: Option<Delegating>,
    /// A delegated agent's session: SubagentStart and SubagentStop hooks
    /// fire in it instead of SessionStart, Stop and SessionEnd.
    pub delegated: bool,
    /// SOUL.md, skills, memory and the clock of the system prompt.
    pub prompt: PromptConfig,
    /// `[model_aliases]`: alias -> model; a selected model named by an
    /// alias is the model it stands for.
    pub model_aliases: BTreeMap<String, String>,
    /// The workspace (cwd and writable roots) pinned by the session this
    /// one goes on from (a delegated agent, another model): used when it
    /// was pinned for the same cwd and roots, so they are resolved once.
    /// `None`, or another cwd: pinned when the session starts.
    pub workspace: Option<Arc<Workspace>>,
}

impl SessionConfig {
    /// A config with defaults for everything but the provider and cwd.
    pub fn new(provider: ProviderInfo, cwd: PathBuf) -> Self {
        SessionConfig {
            model: None,
            model_override: None,
            provider,
            approval_policy: ApprovalPolicy::default(),
            sandbox_policy: SandboxPolicy::default(),
            cwd,
            developer_instructions: None,
            user_instructions: None,
            base_instructions_override: None,
            output_schema: None,
            features: Features::default(),
            verbose: false,
            tool_config: ToolConfig::default(),
            auth_mode: AuthMode::default(),
            model_families: BTreeMap::new(),
            sampling: Sampling::default(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
            compaction: CompactionConfig::default(),
            effects: Vec::new(),
            enable_plan: false,
            auto_context: false,
            max_context_bytes: cogni_tools::attach::DEFAULT_MAX_BYTES,
            test_run: None,
            reflect: None,
            done_token: None,
            context_strategy: None,
            run: RunConfig::default(),
            hooks: Vec::new(),
            agent: cogni_protocol::DEFAULT_AGENT.to_string(),
            delegation: None,
            delegated: false,
            prompt: PromptConfig::default(),
            model_aliases: BTreeMap::new(),
            workspace: None,
        }
    }
}

/// Default of [`SessionConfig::max_iterations`] (`max_iterations`,
/// `[agent] max_steps`).
pub const DEFAULT_MAX_ITERATIONS: u32 = 25;

/// Why a session cannot start (or be reconfigured) with a config.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The model has no model family: neither the catalog nor
    /// `[model_families]` knows it.
    #[error(transparent)]
    ModelFamily(#[from] FamilyError),
    /// The tool configuration names a tool that does not exist.
    #[error(transparent)]
    Tools(#[from] ToolConfigError),
    /// The provider's client could not be made.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A value is out of range or inconsistent (no model selected, a
    /// relative `cwd`, a bad output schema, a cost budget without a
    /// price, ...); the message names the setting.
    #[error("invalid config: {0}")]
    Invalid(String),
    /// The provider needs a key and has none: says the three ways to get
    /// going.
    #[error(
        "no API key for provider `{provider}`: set ${var} (or key_file in [model_providers.{provider}]). \
         Other ways to get going: a local model with `--provider ollama`, or no model at all with \
         `--script FILE`, a scripted model that runs offline (the README's first command). \
         `cogni config example` shows every setting"
    )]
    NoKey {
        /// The provider's id.
        provider: String,
        /// The environment variable the key is read from (its `env_key`).
        var: String,
    },
}

/// The error when `config`'s provider needs a key and has none.
pub fn missing_key(config: &SessionConfig) -> Option<SessionError> {
    let var = config.provider.env_key.as_deref()?;
    (config.auth_mode == AuthMode::ApiKey && config.provider.api_key.is_none()).then(|| {
        SessionError::NoKey {
            provider: config.provider.id.clone(),
            var: var.to_string(),
        }
    })
}

/// Check `config` and `limits` as [`start_session`] and
/// [`Session::set_limits`] would, without building a provider: front doors
/// that start many sessions (the task runner) check each config once,
/// before anything runs. Returns the model and its family.
pub fn check_session_config(
    config: &SessionConfig,
    limits: &TurnLimits,
) -> Result<(String, ModelFamily), SessionError> {
    validate(config)?;
    let model = select_model(config)?;
    if let Some(schema) = &config.output_schema {
        OutputSchema::compile(schema).map_err(SessionError::Invalid)?;
    }
    let family = load_model_family(
        &model,
        &config.provider.id,
        config.provider.default_family.as_deref(),
        &config.model_families,
    )?;
    ToolRegistry::from_config(&config.tool_config, family.edit_tool)?;
    resolve_sampling(config, &family)?;
    check_priced(&model, &family, limits)?;
    Ok((model, family))
}

/// Sampling as sent: the config's, else the model family's defaults. The
/// temperature must be in the range the provider's wire API accepts
/// (Anthropic: 0 to 1; the others: 0 to 2).
pub(super) fn resolve_sampling(
    config: &SessionConfig,
    family: &ModelFamily,
) -> Result<Sampling, SessionError> {
    let family_effort = family.reasoning_effort.as_deref().and_then(effort_name);
    let sampling = Sampling {
        temperature: config.sampling.temperature.or(family.temperature),
        max_tokens: config.sampling.max_tokens.or(family.default_max_tokens),
        reasoning_effort: if family.supports_reasoning {
            config.sampling.reasoning_effort.or(family_effort)
        } else {
            None
        },
    };
    if let Some(t) = sampling.temperature {
        let (max, api) = match config.provider.wire_api {
            WireApi::Anthropic => (1.0, "anthropic"),
            WireApi::Chat => (2.0, "chat"),
            WireApi::Responses => (2.0, "responses"),
            WireApi::Ollama => (2.0, "ollama"),
            WireApi::Scripted => (2.0, "scripted"),
        };
        if !(0.0..=max).contains(&t) {
            return Err(SessionError::Invalid(format!(
                "temperature must be between 0 and {max} for provider `{}` (wire_api = \"{api}\"), got {t}",
                config.provider.id
            )));
        }
    }
    Ok(sampling)
}

/// A cost budget needs the model's price: without one it is refused,
/// naming the setting.
pub(super) fn check_priced(
    model: &str,
    family: &ModelFamily,
    limits: &TurnLimits,
) -> Result<(), SessionError> {
    if limits.max_cost_usd.is_some() && family.price.is_none() {
        return Err(SessionError::Invalid(format!(
            "a cost budget needs the price of `{model}`: set input_price and output_price (USD per million tokens) in [model_families.\"{model}\"]"
        )));
    }
    Ok(())
}

/// The model a session with `config` uses: `model_override`, the config's
/// `model`, or the provider's default; an alias from `[model_aliases]`
/// stands for its model.
pub fn select_model(config: &SessionConfig) -> Result<String, SessionError> {
    config
        .model_override
        .clone()
        .or_else(|| config.model.clone())
        .or_else(|| config.provider.default_model.clone())
        .map(|m| config.model_aliases.get(&m).cloned().unwrap_or(m))
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| {
            SessionError::Invalid(format!(
                "no model selected for provider `{}`: pass --model or set `model` in cogni.toml",
                config.provider.id
            ))
        })
}

pub(super) fn validate(config: &SessionConfig) -> Result<(), SessionError> {
    let invalid = |m: String| Err(SessionError::Invalid(m));
    if !config.cwd.is_absolute() {
        return invalid(format!(
            "cwd `{}` must be an absolute path",
            config.cwd.display()
        ));
    }
    if config.max_iterations == 0 {
        return invalid("max_iterations must be at least 1".into());
    }
    let fraction = config.compaction.context_fraction;
    if !(fraction > 0.0 && fraction <= 1.0) {
        return invalid(format!(
            "compaction.context_fraction must be in (0, 1], got {fraction}"
        ));
    }
    if config.sampling.max_tokens == Some(0) {
        return invalid("max_tokens must be at least 1".into());
    }
    if config.auth_mode == AuthMode::Command && config.provider.auth_command.is_none() {
        return invalid(format!(
            "auth_mode is `command` but provider `{}` has no auth_command; set \
             [model_providers.{}] auth_command",
            config.provider.id, config.provider.id
        ));
    }
    if let Some(missing) = missing_key(config) {
        return Err(missing);
    }
    Ok(())
}

/// The canonical name of a reasoning effort, `None` when unknown.
pub fn effort_name(effort: &str) -> Option<&'static str> {
    REASONING_EFFORTS.iter().copied().find(|e| *e == effort)
}

/// The values `reasoning_effort` may take, from least to most.
pub const REASONING_EFFORTS: &[&str] = &["minimal", "low", "medium", "high"];
