//! The spec's `TurnContext`: what a session runs with (model, family,
//! tools, policies, instructions, the system prompt), and its parts.

use super::context::{wrap_user_instructions, EnvironmentContext};
use super::prompt::builder::{Identity, SystemPromptBuilder};
use super::prompt::clock::Today;
use super::prompt::system::SystemPrompt;
use cogni_metrics::tokens::Estimator;
use cogni_protocol::{
    ApprovalPolicy, ContextStrategyKind, HistoryItem, MessageTag, Role, SandboxPolicy, ToolSpec,
};
use cogni_provider::{ModelFamily, ToolCallMode};
use cogni_tools::paths::repo_root;
use std::path::PathBuf;

/// Feature flags (the spec's `features`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    /// Read-only calls of one response run at once.
    pub parallel_tools: bool,
    /// With `parallel_tools`: the first read-only calls of a response that
    /// run without a question start as soon as they are complete in the
    /// stream, before the response ends (docs/effects.md).
    pub early_tools: bool,
    /// Skills reach the model: the listing in the system prompt and the
    /// `skill` tool (`PromptConfig::skills`, `ToolConfig::skills`); off,
    /// both are dropped when the session starts.
    pub skills_enabled: bool,
    /// `[tools] web_search`: every request offers the provider's own web
    /// search (Responses and Anthropic; config refuses it elsewhere).
    pub web_search: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            parallel_tools: true,
            early_tools: true,
            skills_enabled: false,
            web_search: false,
        }
    }
}

/// Sampling settings from the agent or task config; unset fields fall back
/// to the model family, then to the provider's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    /// `temperature`: the sampling temperature sent with each request.
    pub temperature: Option<f32>,
    /// `max_tokens`: the most tokens the model may write in one reply.
    pub max_tokens: Option<u32>,
    /// `minimal`, `low`, `medium` or `high`; only sent to models that reason.
    pub reasoning_effort: Option<&'static str>,
}

/// Runtime context of a session (the spec's `TurnContext`).
#[derive(Debug, Clone)]
pub struct TurnContext {
    /// The model requests go to (an alias resolved to its model).
    pub model: String,
    /// What cogni knows of the model: its context window, how it calls
    /// tools, its instructions template, what it supports.
    pub model_family: ModelFamily,
    /// The tools offered to the model, as every request sends them.
    pub tools: Vec<ToolSpec>,
    /// Which of the model's calls need the user's approval.
    pub approval_policy: ApprovalPolicy,
    /// The sandbox the model's commands and file tools run in: its one
    /// owner (each tool call's context is built from it; change it with
    /// `Session::update_environment`).
    pub sandbox_policy: SandboxPolicy,
    /// The working directory (one owner, as `sandbox_policy`).
    pub cwd: PathBuf,
    /// The developer message that opens history
    /// ([`SessionConfig::developer_instructions`](crate::SessionConfig::developer_instructions)).
    pub developer_instructions: Option<String>,
    /// AGENTS.md, sent after the developer instructions
    /// ([`SessionConfig::user_instructions`](crate::SessionConfig::user_instructions)).
    pub user_instructions: Option<String>,
    /// `base_instructions`: the system prompt's identity section instead
    /// of SOUL.md or the model family's template.
    pub base_instructions_override: Option<String>,
    /// `--output-schema`: the JSON Schema the final answer must satisfy,
    /// sent with each request.
    pub output_schema: Option<serde_json::Value>,
    /// `--verbose`: `model_request` events carry the whole request.
    pub verbose: bool,
    /// Feature flags in force.
    pub features: Features,
    /// Resolved sampling: config, then model family, then unset.
    pub sampling: Sampling,
    /// Most model requests in one turn; the turn ends with `max_steps`
    /// when the model still asks for tools.
    pub max_iterations: u32,
    /// The system prompt sent as every request's instructions.
    pub system_prompt: SystemPrompt,
    /// The configured context strategy (config, agent); `None`: the model
    /// family's, else by the window's size.
    pub context_strategy: Option<ContextStrategyKind>,
    /// `[agent] done_token`: writing it ends the turn (stripped from the
    /// answer; the system prompt says so).
    pub done_token: Option<String>,
    /// `[agent] test_command` with `enable_test_run` (the system prompt
    /// says it runs when the model is done).
    pub test_command: Option<String>,
    /// `[agent] reflection_placement = "front"` with reflection on: the
    /// latest critique goes right after the initial context.
    pub reflection_front: bool,
}

impl TurnContext {
    /// The history a session starts with: developer instructions, user
    /// instructions, then the environment context.
    pub fn initial_context(&self) -> Vec<HistoryItem> {
        let mut items = Vec::with_capacity(3);
        if let Some(dev) = self
            .developer_instructions
            .as_deref()
            .filter(|s| !s.trim().is_empty())
        {
            items.push(HistoryItem::tagged(
                Role::Developer,
                MessageTag::DeveloperInstructions,
                dev,
            ));
        }
        if let Some(user) = self
            .user_instructions
            .as_deref()
            .filter(|s| !s.trim().is_empty())
        {
            items.push(HistoryItem::tagged(
                Role::User,
                MessageTag::UserInstructions,
                wrap_user_instructions(&self.cwd, user),
            ));
        }
        items.push(HistoryItem::tagged(
            Role::User,
            MessageTag::Environment,
            self.environment().render(),
        ));
        items
    }

    /// The built-in context strategy the configuration chooses: the
    /// configured one, the model family's, or the default for the
    /// window's size. A strategy set with
    /// [`Session::set_context_strategy`](crate::Session::set_context_strategy)
    /// wins over it.
    pub fn strategy(&self) -> ContextStrategyKind {
        self.context_strategy
            .or(self.model_family.context_strategy)
            .unwrap_or_else(|| ContextStrategyKind::default_for(self.model_family.context_window))
    }

    /// How this model's tokens are estimated locally.
    pub fn estimator(&self) -> Estimator {
        if self.model_family.tiktoken_fits() {
            Estimator::Tiktoken
        } else {
            Estimator::Bytes
        }
    }

    /// The environment the model is told about: this context's cwd and
    /// policies.
    pub fn environment(&self) -> EnvironmentContext {
        EnvironmentContext::from_policy(&self.cwd, self.approval_policy, &self.sandbox_policy)
    }

    /// True when a tool named `name` is offered to the model.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }
}

impl TurnContext {
    /// The builder with this context's inputs for `today`.
    pub fn system_prompt_builder<'a>(&'a self, today: &'a Today) -> SystemPromptBuilder<'a> {
        let p = &self.system_prompt;
        SystemPromptBuilder {
            identity: Identity {
                base_instructions: self.base_instructions_override.as_deref(),
                soul: p.config.soul.as_deref(),
                family_template: &self.model_family.base_instructions_template,
                project_soul: p.config.project_soul.as_ref(),
                apply_patch_instructions: self.model_family.needs_special_apply_patch_instructions
                    && !self.has_tool("apply_patch"),
            },
            // In text mode the provider's tool section lists them in full.
            tools: (self.model_family.tools_in_prompt
                && self.model_family.tool_call_mode == ToolCallMode::Native)
                .then_some(&self.tools[..]),
            skills: p.config.skills.as_deref(),
            model_aliases: &p.model_aliases,
            cwd: &self.cwd,
            repo_root: p.repo_root.as_deref(),
            sandbox: &self.sandbox_policy,
            model: &self.model,
            provider: &p.provider,
            today,
            memory: p.config.memory.as_deref(),
            done_token: self.done_token.as_deref(),
            test_command: self.test_command.as_deref(),
        }
    }

    /// Build the system prompt again from the current context (the start of
    /// a session, a changed environment or tool set). Returns whether the
    /// text changed.
    pub(crate) fn rebuild_system_prompt(&mut self) -> bool {
        self.system_prompt.repo_root = repo_root(&self.cwd);
        let today = self.system_prompt.config.clock.today();
        self.render_system_prompt(today)
    }

    /// Before the session's first request: the memory notes most relevant
    /// to `task` (the first prompt), when memory is on. Returns whether the
    /// prompt changed.
    pub(crate) fn focus_memory(&mut self, task: &str) -> bool {
        let Some(files) = &self.system_prompt.config.memory_files else {
            return false;
        };
        let memory = files.select(task);
        if memory == self.system_prompt.config.memory {
            return false;
        }
        self.system_prompt.config.memory = memory;
        let today = self.system_prompt.today.clone();
        self.render_system_prompt(today)
    }

    /// At the start of a turn: build the prompt again only when the day
    /// (date or time zone) is not the one it was built for. Returns
    /// whether the text changed.
    pub(crate) fn refresh_system_prompt_date(&mut self) -> bool {
        let today = self.system_prompt.config.clock.today();
        if today == self.system_prompt.today {
            return false;
        }
        self.render_system_prompt(today)
    }

    fn render_system_prompt(&mut self, today: Today) -> bool {
        let text = self.system_prompt_builder(&today).build();
        let changed = text != self.system_prompt.text;
        if changed && !self.system_prompt.text.is_empty() {
            tracing::info!(bytes = text.len(), date = %today.date, "system prompt rebuilt");
        }
        self.system_prompt.today = today;
        self.system_prompt.text = text;
        changed
    }
}
