//! One way to open a session, for every front door (`cogni run`, the
//! REPL, `cogni acp`, `cogni mcp-server`, the task runner, `--acp`): the
//! flags layer over the config files, the agent catalog, the agent card,
//! the mode, the redactor and the log, the sandbox check, the session to
//! save or resume and the agents it may delegate to, in that order; then
//! the session itself with its provider and its session file.
//!
//! A front door says what it asks for ([`SessionBuilder`]'s methods) and
//! gets the checked configuration ([`Configured`]); what it does with the
//! session after that (an approver, MCP servers, a turn) is its own.

use super::mode::{Mode, Modes};
use super::persist::{self, Persist, Resume};
use super::{setup, ConfigArgs, PolicyArgs};
use crate::agent::{start_session_with_provider, Delegating, Session, SessionConfig};
use crate::config::ConfigFile;
use crate::mcp::McpConfig;
use crate::provider::{record, record::Recording};
use crate::spec::cards::AgentCard;
use crate::store::{Redactor, SessionFile, Store};
use std::path::PathBuf;
use std::sync::Arc;

/// The agent card a session runs as.
pub(super) enum Card {
    /// One `cogni agents` lists, by name (`--agent NAME`).
    Named(String),
    /// One the caller holds (a task file's agent's card).
    Given(Box<AgentCard>),
}

/// How far the sandbox is checked before the session opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SandboxCheck {
    /// The kernel sandbox must be there for the mode (every front door
    /// whose commands cogni runs).
    Full,
    /// Only that the workspace is not `/` (`--acp`: the agent runs its
    /// own commands; cogni only applies the mode to its file access).
    Workspace,
}

/// Which front door asks for checkpoints (`[checkpoints]` says which take
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checkpoints {
    /// The REPL and `cogni acp` (`[checkpoints] enabled`, default on).
    Interactive,
    /// `cogni run` (`[checkpoints] run`, default off; `asked`: with
    /// `--checkpoint`).
    Run {
        /// `--checkpoint` was given.
        asked: bool,
    },
}

/// What a front door asks of a session, over the config files.
pub(super) struct SessionBuilder {
    common: ConfigArgs,
    policy: PolicyArgs,
    /// Where relative paths of the options start.
    launch_dir: PathBuf,
    /// Where the session works.
    cwd: PathBuf,
    /// The command's own options, below the policy flags.
    flags: ConfigFile,
    card: Option<Card>,
    mode: Option<Mode>,
    verbose: bool,
    output_schema: Option<serde_json::Value>,
    persist: bool,
    resume: Option<Resume>,
    fork: bool,
    logging: bool,
    sandbox_check: SandboxCheck,
    checkpoints: Option<Checkpoints>,
}

/// A session's configuration, checked, and what its front door keeps.
pub(super) struct Configured {
    /// The session's configuration: card, mode, model to resume and the
    /// agents to delegate to applied.
    pub config: SessionConfig,
    /// `$COGNI_HOME`.
    pub home: PathBuf,
    persist: Persist,
    /// Secrets out of logs, recordings and session files.
    pub redact: Redactor,
    /// The MCP servers the session starts.
    pub mcp: McpConfig,
    pub verbose_max_bytes: usize,
    /// `[repl]`.
    pub repl: crate::config::Repl,
    /// Every agent card of the catalog.
    pub cards: Vec<AgentCard>,
    /// Agent cards that could not be read; the front door shows them.
    pub problems: Vec<String>,
    /// The directory is trusted: its own commands load.
    pub project_trusted: bool,
    /// The mode the session is in, and what the modes mean here.
    pub mode: Mode,
    pub modes: Modes,
}

impl SessionBuilder {
    /// A session working in `cwd`, with the configuration options and the
    /// policy flags of the command line (`launch_dir`: where cogni was
    /// started, for the options' relative paths).
    pub fn new(common: ConfigArgs, policy: PolicyArgs, launch_dir: PathBuf, cwd: PathBuf) -> Self {
        SessionBuilder {
            common,
            policy,
            launch_dir,
            cwd,
            flags: ConfigFile::default(),
            card: None,
            mode: None,
            verbose: false,
            output_schema: None,
            persist: false,
            resume: None,
            fork: false,
            logging: true,
            sandbox_check: SandboxCheck::Full,
            checkpoints: None,
        }
    }

    /// The command's own options (`--max-iterations`, a task file agent's
    /// fields), below the policy flags and over the config files.
    pub fn flags(mut self, flags: ConfigFile) -> Self {
        self.flags = flags;
        self
    }

    /// Run as this agent card.
    pub fn card(mut self, card: Option<Card>) -> Self {
        self.card = card;
        self
    }

    /// Start in this mode instead of the configured policies'.
    pub fn mode(mut self, mode: Option<Mode>) -> Self {
        self.mode = mode;
        self
    }

    /// `--verbose`, and `--output-schema`'s schema.
    pub fn output(mut self, verbose: bool, schema: Option<serde_json::Value>) -> Self {
        self.verbose = verbose;
        self.output_schema = schema;
        self
    }

    /// Save the session (`enabled`), continuing `resume` if given (in a
    /// copy with `fork`).
    pub fn persist(mut self, enabled: bool, resume: Option<Resume>, fork: bool) -> Self {
        self.persist = enabled;
        self.resume = resume;
        self.fork = fork;
        self
    }

    /// Leave the log to the caller (the task runner opens it once, with
    /// every agent's secrets to redact).
    pub fn without_logging(mut self) -> Self {
        self.logging = false;
        self
    }

    /// Check only the workspace, not the kernel sandbox: the session's
    /// commands are not cogni's to run (`--acp`). Nor are its agents: no
    /// catalog of agent cards is read.
    pub fn workspace_check_only(mut self) -> Self {
        self.sandbox_check = SandboxCheck::Workspace;
        self
    }

    /// Snapshot the workspace around each turn, as `[checkpoints]` says
    /// for this front door (no call: never).
    pub fn checkpoints(mut self, front: Checkpoints) -> Self {
        self.checkpoints = Some(front);
        self
    }

    /// Load and check everything; warnings about the config files go to
    /// stderr, problems with agent cards to [`Configured::problems`].
    pub fn configure(self) -> Result<Configured, String> {
        let mut flags = self.flags;
        flags.sandbox_mode = self.policy.sandbox_mode().or(flags.sandbox_mode);
        flags.approval_policy = self.policy.approval.or(flags.approval_policy);
        let loaded = setup::load(&self.common, &self.launch_dir, self.cwd, flags)?;
        let home = loaded.home;
        let loaded = loaded.config;
        let checkpoints = match self.checkpoints {
            None => false,
            Some(Checkpoints::Interactive) => loaded.checkpoints.interactive,
            Some(Checkpoints::Run { asked }) => asked || loaded.checkpoints.run,
        };
        let catalog = match self.sandbox_check {
            SandboxCheck::Full => super::agents::catalog(&loaded, &home),
            // The agent behind `--acp` delegates as it likes; no card of
            // cogni's is applied or offered.
            SandboxCheck::Workspace => super::agents::Catalog::default(),
        };
        let base = loaded.session.clone();
        let mut config = loaded.session;
        let card = match self.card {
            None => None,
            Some(Card::Given(card)) => Some(*card),
            Some(Card::Named(name)) => Some(
                catalog
                    .cards
                    .iter()
                    .find(|c| c.name == name)
                    .cloned()
                    .ok_or_else(|| {
                        format!("no agent is named `{name}`; `cogni agents` lists them")
                    })?,
            ),
        };
        if let Some(card) = &card {
            super::agents::apply(&mut config, card, self.common.model.is_some());
        }
        let modes = Modes::of(&config);
        if let Some(mode) = self.mode {
            mode.apply(&mut config, modes);
        }
        if checkpoints {
            config.run.checkpoints = Some(crate::agent::checkpoints::shadow_root(&home));
        }
        config.verbose = self.verbose;
        config.output_schema = self.output_schema;
        let redact = persist::redactor([&config]);
        if self.logging {
            setup::init_logging(&home, redact.clone());
        }
        match self.sandbox_check {
            SandboxCheck::Full => setup::check_sandbox(
                config.sandbox_policy.mode,
                self.policy.no_sandbox,
                &config.cwd,
            )?,
            SandboxCheck::Workspace => {
                setup::check_workspace(config.sandbox_policy.mode, &config.cwd)?
            }
        }
        let persist = Persist {
            store: Store::new(&home),
            enabled: self.persist,
            resume: self.resume,
            fork: self.fork,
        };
        persist.prepare(&mut config)?;
        config.delegation = Some(Delegating {
            registry: super::agents::registry(&base, &catalog.cards),
            limits: loaded.delegation,
        });
        Ok(Configured {
            mode: Mode::of(&config),
            config,
            home,
            persist,
            redact,
            mcp: loaded.mcp,
            verbose_max_bytes: loaded.verbose_max_bytes,
            repl: loaded.repl,
            cards: catalog.cards,
            problems: catalog.problems,
            project_trusted: loaded.project_trusted,
            modes,
        })
    }
}

impl Configured {
    /// Where sessions are saved.
    pub fn store(&self) -> &Store {
        &self.persist.store
    }

    /// Show the problems with agent cards on stderr.
    pub fn warn_problems(&self) {
        for problem in &self.problems {
            eprintln!("cogni: warning: {problem}");
        }
    }

    /// Start the session (its requests recorded into `recording`, if
    /// any): a resumed one with its history, and its session file unless
    /// it is not saved.
    pub fn start(
        &self,
        recording: Option<&Arc<Recording>>,
    ) -> Result<(Session, Option<Arc<SessionFile>>), String> {
        let config = self.config.clone();
        let provider = crate::agent::create_provider(&config).map_err(|e| e.to_string())?;
        let provider = record::wrap(provider, recording);
        let mut session =
            start_session_with_provider(config, provider).map_err(|e| e.to_string())?;
        let file = self.persist.attach(&mut session, self.redact.clone())?;
        Ok((session, file))
    }
}
