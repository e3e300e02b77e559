//! `SessionConfig` in, `Session` out: the pure start of every conversation.

use super::checkpoints::Checkpoints;
use super::context::EnvironmentContext;
use super::context_strategy::{ContextStrategy, Strategies};
use super::delegate::{self, AgentRegistry, Delegation, DelegationLimits};
use super::effects::budget::{Budget, BudgetEffect};
use super::effects::compact::{CompactEffect, Threshold, DEFAULT_COMPACT_FRACTION};
use super::effects::hooks;
use super::effects::hooks::notify::{Notifications, Pending};
use super::effects::output::OutputSchemaEffect;
use super::effects::plan::PlanEffect;
use super::effects::reflect::{ReflectConfig, ReflectEffect, ReflectionPlacement};
use super::effects::repeat::{self, RepeatEffect};
use super::effects::test_run::{TestLog, TestRunConfig, TestRunEffect};
use super::effects::{Effect, Effects};
use super::history::History;
use super::limits::Meter;
use super::limits::{StopHandle, TurnLimits};
use super::output::OutputSchema;
use super::prompt::system::{PromptConfig, SystemPrompt};
use super::questions::Questions;
use super::run::config::RunConfig;
use super::run::Middleware;
use super::toolset::{Shared, Toolset};
use super::turn_context::{Features, Sampling, TurnContext};
use cogni_metrics::tokens::Estimator;
use cogni_metrics::{Ledger, Metrics};
use cogni_protocol::{
    ApprovalPolicy, Approver, ContextStrategyKind, HistoryItem, HistoryObserver, MessageTag,
    NonInteractive, Plan, Role, SandboxPolicy, TestRun,
};
use cogni_provider::model_family::{load_model_family, FamilyError, FamilyOverride};
use cogni_provider::text_tools::TextTools;
use cogni_provider::{
    self as provider, ModelFamily, Provider, ProviderError, ProviderInfo, ToolCallMode, WireApi,
};
use cogni_sandbox::Workspace;
use cogni_spec::effects::EffectSpec;
use cogni_spec::hooks::HookSpec;
use cogni_tools::editor::Files;
use cogni_tools::fs::CommitGate;
use cogni_tools::jobs::JobTable;
use cogni_tools::memory::RememberTool;
use cogni_tools::plan::{PlanStore, UpdatePlanTool};
use cogni_tools::shell::ShellTool;
use cogni_tools::{ExtraTools, ToolBox, ToolConfig, ToolConfigError, ToolRegistry};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod config;
pub use config::*;

/// Inputs queued while a turn runs (e.g. typed in the REPL); the turn loop
/// drains them before each model request.
#[derive(Debug, Clone, Default)]
pub struct PendingInputs(Arc<Mutex<VecDeque<String>>>);

impl PendingInputs {
    /// Queue `text` as a user message: the running turn sends it with its
    /// next model request (or the next turn does, when none runs).
    pub fn push(&self, text: impl Into<String>) {
        if let Ok(mut q) = self.0.lock() {
            q.push_back(text.into());
        }
    }

    pub(crate) fn drain(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut q| q.drain(..).collect())
            .unwrap_or_default()
    }
}

/// A conversation. Its state has one owner per concern, each keeping its
/// own invariants, in two parts. What lasts as long as the session: the
/// history (items, checkpoints, observer, tokens), the meter (metrics,
/// budgets, the stop handle) and the conversation (plan, test runs,
/// approvals, jobs, delegation, what the embedding program added). What
/// is derived from the configuration (`Derived`), which
/// [`Session::reconfigure`] replaces as a whole: the turn context (model,
/// tools offered, policies, prompt), the tool set (registry, tool
/// context), the provider and the extensions (effects, middleware
/// settings, the compaction threshold).
pub struct Session {
    pub(crate) ctx: TurnContext,
    pub(crate) history: History,
    pub(crate) toolset: Toolset,
    /// What requests go through: the wire client, wrapped in
    /// [`TextTools`] when the model family writes its tool calls as text.
    pub(crate) provider: Arc<dyn Provider>,
    /// The wire client as the session was given it (kept for
    /// [`Session::reconfigure`], whose model may call tools otherwise).
    pub(crate) wire: Arc<dyn Provider>,
    pub(crate) meter: Meter,
    pub(crate) extensions: Extensions,
    /// What the conversation keeps whatever the configuration.
    pub(crate) conversation: Conversation,
    /// The environment last shown to the model.
    pub(crate) environment: EnvironmentContext,
    /// Input queued while a turn runs.
    pub(crate) pending: PendingInputs,
    pub(crate) turns: u32,
    /// The agent this session runs.
    pub(crate) agent: String,
    /// The session's id: its session file's name, `session_id` for hooks
    /// and effects. A new session's is made from the time and the process
    /// id; a program resuming a saved session sets the saved one.
    pub id: String,
    /// What the user is told when the first turn starts (writable roots
    /// left out of the workspace this session pinned).
    pub(crate) start_warnings: Vec<String>,
}

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Lifecycle {
    /// The `session_start` effects ran.
    pub(crate) started: bool,
    /// The session continues a saved one.
    pub(crate) resumed: bool,
    /// The `session_end` effects ran.
    pub(crate) ended: bool,
}

/// What plugs into the loop.
pub(crate) struct Extensions {
    /// The effects, in registration order.
    pub(crate) effects: Effects,
    /// Middleware settings (`[run]`): the chain is built for each run.
    pub(crate) run: RunConfig,
    /// When history is compacted (the `compact` effect's threshold; also
    /// the target of `/compact`).
    pub(crate) compaction: Threshold,
    /// The context strategy: the embedding program's
    /// ([`Session::set_context_strategy`]) or the configured built-in.
    pub(crate) context: Strategies,
    /// `enable_plan`: the model writes a plan before the first step.
    pub(crate) first_plan: bool,
    /// Estimated tokens of the instructions and tools, with what they were
    /// counted for (prompt length, tool count, estimator).
    pub(crate) fixed_tokens: Option<((usize, usize, Estimator), u64)>,
    /// The Notification hooks (not effects: nothing waits for them).
    pub(crate) notifications: Notifications,
}

/// What belongs to the conversation and lasts as long as the session,
/// whatever its configuration: [`Session::reconfigure`] never replaces
/// it, and what is derived from the configuration is built around it
/// (the plan tool writes this plan, the tools run these jobs).
pub(crate) struct Conversation {
    /// Whether the session started and ended (its lifecycle effects ran).
    pub(crate) lifecycle: Lifecycle,
    /// The plan `update_plan` keeps (with `enable_plan`).
    pub(crate) plan: PlanStore,
    /// The test command's runs (with `enable_test_run`).
    pub(crate) tests: TestLog,
    /// Its place in a tree of delegating agents (with a registry).
    pub(crate) delegation: Option<Delegation>,
    /// Middleware the embedding program added, inside the built-in chain
    /// ([`Session::add_middleware`]).
    pub(crate) middleware: Vec<Arc<dyn Middleware>>,
    /// Who answers approval questions.
    pub(crate) approver: Arc<dyn Approver>,
    /// Calls the user approved for the rest of the session, by call key.
    pub(crate) approved: Mutex<HashSet<String>>,
    /// The model's questions to the user, asked one at a time.
    pub(crate) questions: Questions,
    /// Tools added after the start (MCP servers', toolboxes).
    pub(crate) extra: ExtraTools,
    /// The background shell jobs, which keep running across a switch of
    /// model or agent.
    pub(crate) jobs: Arc<JobTable>,
    /// Where the file tools read and write text (the disk, or an
    /// editor's buffers).
    pub(crate) files: Files,
    /// The workspace before and after each turn (with checkpoints on).
    pub(crate) checkpoints: Checkpoints,
    /// Notices whose Notification hooks still run ([`Session::end`]
    /// waits for them).
    pub(crate) notices: Pending,
    /// Images for the next user message ([`Session::attach_images`]).
    pub(crate) attached: Vec<cogni_protocol::Image>,
}

impl Conversation {
    /// A conversation that has not started, its job table sized by
    /// `tools`.
    fn new(tools: &ToolConfig) -> Self {
        Conversation {
            lifecycle: Lifecycle::default(),
            plan: PlanStore::default(),
            tests: TestLog::default(),
            delegation: None,
            middleware: Vec::new(),
            approver: Arc::new(NonInteractive),
            approved: Mutex::new(HashSet::new()),
            questions: Questions::default(),
            extra: ExtraTools::default(),
            jobs: Arc::new(JobTable::new(
                tools.max_background_jobs,
                tools.background_timeout,
            )),
            files: Files::default(),
            checkpoints: Checkpoints::default(),
            notices: Pending::default(),
            attached: Vec::new(),
        }
    }
}

/// What a session derives from its configuration, around its
/// [`Conversation`]: all of it is replaced when the session is
/// reconfigured, and nothing else is.
struct Derived {
    ctx: TurnContext,
    toolset: Toolset,
    provider: Arc<dyn Provider>,
    extensions: Extensions,
    /// The agent the configuration runs.
    agent: String,
    environment: EnvironmentContext,
    /// The initial context: instructions, environment.
    initial: Vec<HistoryItem>,
    /// What the user is told when the first turn starts.
    start_warnings: Vec<String>,
}

/// Start a session: select the model, load its family, build tools, the
/// turn context and the initial history. Pure apart from building the
/// provider client (no network I/O); invalid config fails here.
pub fn start_session(config: SessionConfig) -> Result<Session, SessionError> {
    let provider = create_provider(&config)?;
    start_session_with_provider(config, provider)
}

/// The model client of `config`: its provider with the credentials its
/// `auth_mode` sends ([`AuthMode::apply`]).
pub fn create_provider(config: &SessionConfig) -> Result<Arc<dyn Provider>, SessionError> {
    Ok(provider::create(
        &config.auth_mode.apply(config.provider.clone()),
    )?)
}

/// [`start_session`] with a given provider (tests, embedding).
pub fn start_session_with_provider(
    mut config: SessionConfig,
    provider: Arc<dyn Provider>,
) -> Result<Session, SessionError> {
    validate(&config)?;
    let delegating = config.delegation.take();
    let conversation = Conversation::new(&config.tool_config);
    let Derived {
        ctx,
        toolset,
        provider: requests,
        extensions,
        agent,
        environment,
        initial,
        start_warnings,
    } = derive(config, &provider, &conversation)?;
    let mut metrics = Metrics::with_price(ctx.model_family.price);
    metrics.attach(agent.clone(), Ledger::default());
    let mut session = Session {
        environment,
        ctx,
        history: History::new(initial),
        toolset,
        provider: requests,
        wire: provider,
        meter: Meter {
            metrics,
            limits: TurnLimits::default(),
            stop: StopHandle::default(),
        },
        extensions,
        conversation,
        pending: PendingInputs::default(),
        turns: 0,
        agent,
        id: new_session_id(),
        start_warnings,
    };
    if let Some(d) = delegating {
        session.set_delegation(d.registry, d.limits);
    }
    Ok(session)
}

/// What `config` makes of a session around `conversation`: select the
/// model, load its family, build the tools, effects, turn context and
/// initial context. `wire` is the provider's client (wrapped when the
/// model writes its tool calls as text). Pure apart from pinning the
/// workspace when `config` brings none.
fn derive(
    mut config: SessionConfig,
    wire: &Arc<dyn Provider>,
    conversation: &Conversation,
) -> Result<Derived, SessionError> {
    validate(&config)?;
    let model = select_model(&config)?;
    let output_schema = match &config.output_schema {
        Some(schema) => Some(Arc::new(
            OutputSchema::compile(schema).map_err(SessionError::Invalid)?,
        )),
        None => None,
    };
    let family = load_model_family(
        &model,
        &config.provider.id,
        config.provider.default_family.as_deref(),
        &config.model_families,
    )?;
    let sampling = resolve_sampling(&config, &family)?;
    let provider: Arc<dyn Provider> = match family.tool_call_mode {
        ToolCallMode::Native => wire.clone(),
        ToolCallMode::Text => Arc::new(TextTools::new(wire.clone())),
    };
    let (mut effects, compaction) = build_effects(&config, output_schema)?;
    let mut tool_config = config.tool_config;
    // Skills reach the model only with `features.skills_enabled`.
    if !config.features.skills_enabled {
        tool_config.skills = None;
        config.prompt.skills = None;
    }
    // The model may ask to run a command without the sandbox only where
    // someone would be asked about it.
    tool_config.shell_escalation = matches!(
        config.approval_policy,
        ApprovalPolicy::OnRequest | ApprovalPolicy::Untrusted
    );
    let mut tools = ToolRegistry::from_config(&tool_config, family.edit_tool)?;
    if !family.supports_images {
        // Its images would be refused before the request.
        tools.retain(|name| name != "view_image");
    }
    let prompt = config.prompt;
    if let Some(files) = &prompt.memory_files {
        // The notes themselves are chosen for the first prompt
        // (`TurnContext::focus_memory`), before the first request.
        tools.register(Arc::new(RememberTool::new(files.clone())));
    }
    if config.enable_plan {
        let plan = conversation.plan.clone();
        tools.register(Arc::new(UpdatePlanTool::new(plan.clone())));
        effects.push(Box::new(PlanEffect::new(plan)));
    }
    let tests = &conversation.tests;
    let tool_config = Arc::new(tool_config);
    if let Some(test_run) = &config.test_run {
        // Before reflection, which reads the run it just made.
        // One shell tool for the model and the test command: its sandbox
        // is prepared once.
        let shell = Arc::new(ShellTool::new(&tool_config));
        if tools.spec("shell").is_some() {
            tools.register(shell.clone());
        }
        effects.push(Box::new(TestRunEffect::new(
            test_run.clone(),
            shell,
            tool_config.clone(),
            tests.clone(),
        )));
    }
    let reflection_front = config
        .reflect
        .is_some_and(|r| r.placement == ReflectionPlacement::Front);
    if let Some(reflect) = config.reflect {
        let tests = config.test_run.is_some().then(|| tests.clone());
        effects.push(Box::new(ReflectEffect::new(reflect, tests)));
    }
    let mut ctx = TurnContext {
        system_prompt: SystemPrompt::unbuilt(prompt, config.model_aliases, &config.provider.id),
        model,
        model_family: family,
        tools: tools.specs(),
        approval_policy: config.approval_policy,
        sandbox_policy: config.sandbox_policy.clone(),
        cwd: config.cwd.clone(),
        developer_instructions: config.developer_instructions,
        user_instructions: config.user_instructions,
        base_instructions_override: config.base_instructions_override,
        output_schema: config.output_schema,
        verbose: config.verbose,
        features: config.features,
        sampling,
        max_iterations: config.max_iterations,
        context_strategy: config.context_strategy,
        done_token: config.done_token,
        test_command: config.test_run.map(|t| t.command),
        reflection_front,
    };
    ctx.rebuild_system_prompt();
    let initial = ctx.initial_context();
    let (workspace, start_warnings) = match config.workspace {
        Some(w) if w.is_for(&ctx.cwd, &ctx.sandbox_policy.writable_roots) => (w, Vec::new()),
        _ => {
            let pinned = Workspace::pin(&ctx.cwd, &ctx.sandbox_policy.writable_roots);
            let warnings = pinned.warnings().to_vec();
            for warning in &warnings {
                tracing::warn!("{warning}");
            }
            (Arc::new(pinned), warnings)
        }
    };
    let shared = Shared {
        config: tool_config,
        jobs: conversation.jobs.clone(),
        commits: CommitGate::default(),
        files: conversation.files.clone(),
        workspace,
    };
    tools.add_extra(&conversation.extra);
    Ok(Derived {
        environment: ctx.environment(),
        ctx,
        toolset: Toolset {
            registry: tools,
            shared,
            found_shown: 0,
        },
        provider,
        extensions: Extensions {
            effects,
            run: config.run,
            compaction,
            context: Strategies::default(),
            fixed_tokens: None,
            first_plan: config.enable_plan,
            notifications: Notifications::new(&config.hooks, conversation.notices.clone()),
        },
        agent: config.agent,
        initial,
        start_warnings,
    })
}

/// The effects a session starts with, in this order: configured budgets,
/// the `compact` effect (from `[compaction]`), the repeated-failure rule,
/// the output-schema check (with `--output-schema`), then the other
/// configured ones (a kind that may appear once replaces the built-in one
/// in its place), then the hooks in config order. [`Session::set_limits`]
/// puts its budgets first too. Also returns the
/// compaction threshold in force.
fn build_effects(
    config: &SessionConfig,
    output_schema: Option<Arc<OutputSchema>>,
) -> Result<(Effects, Threshold), SessionError> {
    let mut effects = Effects::default();
    let threshold = match config.compaction.token_limit {
        Some(n) => Threshold::Tokens(n),
        None => Threshold::Window(config.compaction.context_fraction),
    };
    effects.push(Box::new(CompactEffect::new(threshold)));
    effects.push(Box::new(RepeatEffect::new(repeat::DEFAULT_LIMIT)));
    if let Some(schema) = output_schema {
        effects.push(Box::new(OutputSchemaEffect(schema)));
    }
    let mut compaction = threshold;
    let mut budgets = 0;
    for spec in &config.effects {
        let effect = super::effects::config::build(spec);
        if super::effects::config::budget(spec).is_some() {
            // Budgets go first, in config order.
            effects.remove(effect.name());
            budgets = budgets.min(effects.len());
            effects.insert(budgets, effect);
            budgets += 1;
            continue;
        }
        match spec {
            EffectSpec::Guardrail { .. } => effects.push(effect),
            _ => effects.replace(effect),
        }
        if let Some(t) = super::effects::config::threshold(spec) {
            compaction = t;
        }
    }
    let hooks: Vec<HookSpec> = config
        .hooks
        .iter()
        .filter(|h| h.event.in_delegated(config.delegated))
        .cloned()
        .collect();
    for hook in hooks::build(&hooks) {
        effects.push(hook);
    }
    Ok((effects, compaction))
}

/// Budget effects for `limits`: each budget it sets replaces one of its
/// kind (a configured `cost_limit`, say); budgets it leaves unset stay as
/// configured. They go first, so a spent budget stops the turn before
/// anything else runs (or asks the model).
fn register_budgets(effects: &mut Effects, limits: &TurnLimits) {
    let budgets = [
        limits.max_duration.map(Budget::Time),
        limits.max_steps.map(Budget::Steps),
        limits.max_tokens.map(Budget::Tokens),
        limits.max_cost_usd.map(Budget::CostUsd),
        limits.max_tool_calls.map(Budget::ToolCalls),
    ];
    for budget in budgets.into_iter().flatten().rev() {
        effects.remove(budget.kind());
        effects.insert_first(Box::new(BudgetEffect(budget)));
    }
}

fn new_session_id() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}-{:x}", nanos, std::process::id())
}

impl Session {
    /// What the session runs with now: model, tools, policies,
    /// instructions and the system prompt.
    pub fn context(&self) -> &TurnContext {
        &self.ctx
    }

    /// The id of the provider requests go to (`openai`, `ollama`, ...).
    pub fn provider_id(&self) -> &str {
        self.provider.id()
    }

    /// The whole conversation, initial context first (every item, also
    /// those a context strategy leaves out of requests).
    pub fn history(&self) -> &[HistoryItem] {
        &self.history
    }

    /// What the session has spent and done: tokens, cost, requests, tool
    /// calls, approvals, timings.
    pub fn metrics(&self) -> &Metrics {
        &self.meter.metrics
    }

    /// A handle to queue user input while a turn runs.
    pub fn pending_inputs(&self) -> PendingInputs {
        self.pending.clone()
    }

    /// Budgets for every following turn. A cost budget needs the model's
    /// price: without one it is refused, naming the setting.
    pub fn set_limits(&mut self, limits: TurnLimits) -> Result<(), SessionError> {
        check_priced(&self.ctx.model, &self.ctx.model_family, &limits)?;
        register_budgets(&mut self.extensions.effects, &limits);
        self.meter.limits = limits;
        Ok(())
    }

    /// A handle that stops the running turn at once (e.g. on Ctrl-C).
    pub fn stop_handle(&self) -> StopHandle {
        self.meter.stop.clone()
    }

    /// Answer to `stop` from now on instead of the session's own handle:
    /// a session run on another's behalf (a review a REPL or an editor
    /// starts) stops when whatever stops the other does.
    pub fn share_stop_handle(&mut self, stop: StopHandle) {
        self.meter.stop = stop;
    }

    /// Set who answers approval questions (default: nobody, every
    /// question is answered no at once).
    pub fn set_approver(&mut self, approver: Arc<dyn Approver>) {
        self.conversation.approver = approver;
    }

    /// Set where the file tools read and write text (an editor's buffers
    /// instead of the disk; kept when the session is reconfigured).
    pub fn set_files(&mut self, files: Files) {
        self.toolset.shared.files = files.clone();
        self.conversation.files = files;
    }

    /// Set who is told about history changes (e.g. the session file).
    /// It sees only changes made from now on.
    pub fn set_history_observer(&mut self, observer: Arc<dyn HistoryObserver>) {
        self.history.set_observer(observer);
    }

    /// Append to history, telling the observer.
    pub(crate) fn append(&mut self, items: Vec<HistoryItem>) {
        self.history.append(items);
    }

    /// Replace history as a whole, telling the observer.
    pub(crate) fn replace_history(&mut self, history: Vec<HistoryItem>) {
        let kept = cogni_protocol::unchanged_prefix(&self.history, &history);
        self.history_rewritten(kept);
        self.history.replace(history);
    }

    /// Append a note from the front door (e.g. "plan only" when the REPL
    /// switches to plan mode); the model sees it with the next request.
    pub fn append_note(&mut self, role: Role, text: impl Into<String>) {
        self.append(vec![HistoryItem::text(role, text)]);
    }

    /// Continue a saved conversation: `history` (whose calls must all have
    /// outputs) replaces the fresh one. When the environment it last showed
    /// the model differs from this session's, a full environment block is
    /// appended. The observer is not told about the restored items.
    pub fn restore_history(&mut self, history: Vec<HistoryItem>) {
        self.history.restore(history);
        self.conversation.lifecycle.resumed = true;
        let now = self.ctx.environment();
        let rendered = now.render();
        let shown = self
            .history
            .iter()
            .rev()
            .find(|i| i.tag() == Some(MessageTag::Environment))
            .and_then(|i| i.as_text());
        if shown != Some(rendered.as_str()) {
            self.append(vec![HistoryItem::tagged(
                Role::User,
                MessageTag::Environment,
                rendered,
            )]);
        }
        self.environment = now;
    }

    /// Switch to a new configuration (another model, an agent card's
    /// instructions and tools) and keep the conversation: the new initial
    /// context replaces the old one, everything after it stays. What is
    /// derived from the configuration is replaced as a whole; the
    /// conversation (plan, test runs, approvals, jobs, delegation, what the
    /// embedding program added), the provider's client (how tool calls are
    /// written follows the new model's family), metrics, stop handle,
    /// observer and checkpoints are kept; what follows is priced at the new model's price (a cost
    /// budget on a model without one is refused, as in [`Session::set_limits`]).
    pub fn reconfigure(&mut self, mut config: SessionConfig) -> Result<(), SessionError> {
        config.workspace = Some(self.toolset.shared.workspace.clone());
        // The session keeps its place in a tree of delegating agents.
        config.delegation = None;
        let Derived {
            ctx,
            toolset,
            provider,
            mut extensions,
            agent,
            environment,
            initial,
            start_warnings: _,
        } = derive(config, &self.wire, &self.conversation)?;
        check_priced(&ctx.model, &ctx.model_family, &self.meter.limits)?;
        self.meter.metrics.set_price(ctx.model_family.price);
        // The fresh initial context, the plan the model wrote (the fresh
        // context has none), then the conversation.
        let floor = self.initial_len();
        let mut history = initial;
        history.extend(
            self.history[..floor]
                .iter()
                .filter(|i| i.tag() == Some(MessageTag::Plan))
                .cloned(),
        );
        history.extend_from_slice(&self.history[floor..]);
        self.ctx = ctx;
        // The new model may call tools another way.
        self.provider = provider;
        // The tools the model found stay found.
        let found = self.toolset.registry.found_names();
        self.toolset = toolset;
        self.toolset.registry.set_found(&found);
        // What the embedding program added belongs to the session.
        extensions.effects.keep_added(&mut self.extensions.effects);
        extensions.context.keep_set(&mut self.extensions.context);
        self.extensions = extensions;
        // Another card: another agent, which may delegate to the one it was.
        self.agent = agent;
        self.meter.metrics.rename(&self.agent);
        if let Some(d) = &mut self.conversation.delegation {
            d.rename(&self.agent);
        }
        self.refresh_tools();
        register_budgets(&mut self.extensions.effects, &self.meter.limits);
        self.environment = environment;
        self.history.tokens.stale = true;
        self.replace_history(history);
        Ok(())
    }

    /// The names of the effects in force, in order.
    pub fn effect_names(&self) -> Vec<&str> {
        self.extensions.effects.names()
    }

    /// The compaction limit in tokens, for the model's current window.
    pub fn compaction_limit(&self) -> u64 {
        CompactEffect::new(self.extensions.compaction).limit(self.ctx.model_family.context_window)
    }

    /// The model's current plan (`update_plan`), if it made one.
    pub fn plan(&self) -> Option<Plan> {
        self.conversation.plan.lock().ok().and_then(|p| p.clone())
    }

    /// The test command's runs so far, in order (with `enable_test_run`).
    pub fn test_runs(&self) -> Vec<TestRun> {
        self.conversation
            .tests
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    /// The environment policy of the processes the session starts.
    pub fn shell_env(&self) -> &cogni_tools::env::ShellEnvPolicy {
        &self.toolset.shared.config.shell_env
    }

    /// The session's background shell jobs.
    pub fn jobs(&self) -> &Arc<JobTable> {
        &self.conversation.jobs
    }

    /// Replace the registry (e.g. to add tools beyond the built-ins).
    pub fn set_tools(&mut self, tools: ToolRegistry) {
        self.toolset.registry = tools;
        self.refresh_tools();
    }

    /// Add tools from outside (MCP servers'): offered after the others, or
    /// held back for `search_tools`. They stay when the session is
    /// reconfigured.
    pub fn add_tools(&mut self, extra: &ExtraTools) {
        self.toolset.registry.add_extra(extra);
        let kept = &mut self.conversation.extra;
        kept.eager.extend(extra.eager.iter().cloned());
        kept.deferred.extend(extra.deferred.iter().cloned());
        self.refresh_tools();
    }

    /// Add a group of tools (seed 003's `AddToolBoxes`): offered after the
    /// others; they stay when the session is reconfigured. Add them before
    /// the first turn: a change of tools mid-session costs the provider's
    /// prompt cache.
    pub fn add_toolbox(&mut self, toolbox: &dyn ToolBox) {
        self.add_tools(&ExtraTools {
            eager: toolbox.tools(),
            deferred: Vec::new(),
        });
    }

    /// Add an effect ([`Effect`], or a closure through
    /// [`effect_fn`](crate::effects::effect_fn)): it runs after the
    /// built-in and configured effects and the hooks, at the phases it
    /// names, and stays when the session is reconfigured.
    pub fn add_effect(&mut self, effect: Box<dyn Effect>) {
        self.extensions.effects.add(effect);
    }

    /// Choose what each request sends of history, and what happens at the
    /// compaction limit, with `strategy` ([`ContextStrategy`]) instead of
    /// the configured built-in (`context_strategy`). It stays when the
    /// session is reconfigured.
    pub fn set_context_strategy(&mut self, strategy: Box<dyn ContextStrategy>) {
        self.extensions.context.set(strategy);
    }

    /// Add a middleware around each turn: inside the built-in chain
    /// (recovery, logger, timeout, output guardrails), in the order added;
    /// it stays when the session is reconfigured.
    pub fn add_middleware(&mut self, middleware: Arc<dyn Middleware>) {
        self.conversation.middleware.push(middleware);
    }

    /// Offer the tools `search_tools` found since the last request
    /// (appended: the tools offered before keep their places).
    pub(crate) fn offer_found_tools(&mut self) {
        if self.toolset.registry.found_names().len() != self.toolset.found_shown {
            self.refresh_tools();
        }
    }

    /// Let this session delegate to the agents of `registry` (the root of
    /// a tree: `[delegation]` limits apply to every agent below it). The
    /// delegation tools are offered when someone other than this agent is
    /// registered.
    pub fn set_delegation(&mut self, registry: Arc<AgentRegistry>, limits: DelegationLimits) {
        self.conversation.delegation = Some(Delegation::root(registry, limits, &self.agent));
        self.refresh_tools();
    }

    /// The tools offered: the registry's, then the delegation tools, then
    /// the ones `search_tools` found, in the order it found them.
    fn refresh_tools(&mut self) {
        let mut specs = self.toolset.registry.specs();
        if let Some(d) = &self.conversation.delegation {
            if d.offers_tools(&self.agent) {
                specs.extend(delegate::specs());
            }
        }
        let found = self.toolset.registry.found_specs();
        self.toolset.found_shown = found.len();
        specs.extend(found);
        self.ctx.tools = specs;
        self.ctx.rebuild_system_prompt();
    }
}

impl Session {
    /// Change the environment mid-session. The model is told with an
    /// `<environment_diff>` holding only the changed fields; nothing is
    /// appended when nothing changed. Returns whether anything changed.
    pub fn update_environment(
        &mut self,
        cwd: Option<PathBuf>,
        approval: Option<ApprovalPolicy>,
        sandbox: Option<SandboxPolicy>,
    ) -> bool {
        if let Some(cwd) = cwd {
            self.ctx.cwd = cwd;
        }
        if let Some(a) = approval {
            self.ctx.approval_policy = a;
        }
        if let Some(s) = sandbox {
            self.ctx.sandbox_policy = s;
        }
        let shared = &mut self.toolset.shared;
        shared.workspace = Workspace::repin(
            &shared.workspace,
            &self.ctx.cwd,
            &self.ctx.sandbox_policy.writable_roots,
        );
        self.ctx.rebuild_system_prompt();
        let now = self.ctx.environment();
        match now.diff(&self.environment) {
            Some(diff) => {
                self.append(vec![HistoryItem::tagged(
                    Role::User,
                    MessageTag::Environment,
                    diff,
                )]);
                self.environment = now;
                true
            }
            None => false,
        }
    }
}
