//! The session's system prompt: built once when the session starts, kept
//! in the [`TurnContext`](crate::turn_context::TurnContext) and sent unchanged with every request, so the
//! provider's prompt cache keeps working. It is rebuilt only when one of
//! its inputs really changes: the environment (`Session::update_environment`),
//! the configuration (`Session::reconfigure` builds a new context), the
//! tools (`Session::set_tools`) or the date (checked at the start of each
//! turn; the date, never a clock time).

use super::builder::ProjectSoul;
use super::clock::{Clock, SystemClock, Today};
use cogni_tools::memory::MemoryFiles;
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
    /// The skills' listing (`features.skills_enabled`; docs/skills.md),
    /// chosen within its budget when the configuration was loaded.
    pub skills: Option<String>,
    /// Memory to show (none shows nothing); with `memory_files` it is
    /// chosen from them for the session's first prompt.
    pub memory: Option<String>,
    /// `[memory]` is on: where the notes are (docs/memory.md).
    pub memory_files: Option<MemoryFiles>,
    /// Where today's date and time zone come from.
    pub clock: Arc<dyn Clock>,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            soul: None,
            project_soul: None,
            skills: None,
            memory: None,
            memory_files: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The built system prompt and what it was built from.
#[derive(Debug, Clone)]
pub struct SystemPrompt {
    pub(crate) config: PromptConfig,
    pub(crate) model_aliases: BTreeMap<String, String>,
    pub(crate) provider: String,
    pub(crate) repo_root: Option<PathBuf>,
    pub(crate) today: Today,
    pub(crate) text: String,
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
