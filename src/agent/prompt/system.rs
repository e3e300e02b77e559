//! The session's system prompt: built once when the session starts, kept
//! in the [`TurnContext`] and sent unchanged with every request, so the
//! provider's prompt cache keeps working. It is rebuilt only when one of
//! its inputs really changes: the environment (`Session::update_environment`),
//! the configuration (`Session::reconfigure` builds a new context), the
//! tools (`Session::set_tools`) or the date (checked at the start of each
//! turn; the date, never a clock time).

use super::builder::{Identity, ProjectSoul, SkillEntry, SystemPromptBuilder};
use super::clock::{Clock, SystemClock, Today};
use crate::agent::session::TurnContext;
use crate::tools::paths::repo_root;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What the system prompt is built from besides the rest of the session's
/// configuration (`SessionConfig::prompt`).
#[derive(Debug, Clone)]
pub struct PromptConfig {
    /// `$COGNI_HOME/SOUL.md`: replaces the model family's template
    /// (`base_instructions` from config wins over it).
    pub soul: Option<String>,
    /// The project's `.cogni/SOUL.md`.
    pub project_soul: Option<ProjectSoul>,
    /// Skills to list (filled by the skills feature; none lists nothing).
    pub skills: Vec<SkillEntry>,
    /// Memory to show (filled by a memory strategy; none shows nothing).
    pub memory: Option<String>,
    /// Where today's date and time zone come from.
    pub clock: Arc<dyn Clock>,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            soul: None,
            project_soul: None,
            skills: Vec::new(),
            memory: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The built system prompt and what it was built from.
#[derive(Debug, Clone)]
pub struct SystemPrompt {
    config: PromptConfig,
    model_aliases: BTreeMap<String, String>,
    provider: String,
    repo_root: Option<PathBuf>,
    today: Today,
    text: String,
}

impl SystemPrompt {
    /// Not built yet: [`TurnContext::rebuild_system_prompt`] builds it.
    pub(crate) fn unbuilt(
        config: PromptConfig,
        model_aliases: BTreeMap<String, String>,
        provider: &str,
    ) -> Self {
        SystemPrompt {
            config,
            model_aliases,
            provider: provider.to_string(),
            repo_root: None,
            today: Today::new("", ""),
            text: String::new(),
        }
    }

    /// The prompt as sent.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The day it was built for.
    pub fn today(&self) -> &Today {
        &self.today
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
            tools: self.model_family.tools_in_prompt.then_some(&self.tools[..]),
            skills: &p.config.skills,
            model_aliases: &p.model_aliases,
            cwd: &self.cwd,
            repo_root: p.repo_root.as_deref(),
            sandbox: &self.sandbox_policy,
            model: &self.model,
            provider: &p.provider,
            today,
            memory: p.config.memory.as_deref(),
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
