//! The model's hands: a registry of tools (name, description, JSON schema,
//! handler) and the dispatcher that turns a [`ToolCall`] into exactly one
//! [`ToolResult`], also when the tool is unknown or the arguments are bad.

#![deny(missing_docs)]

pub mod apply_patch;
pub mod ask_user;
pub mod attach;
pub mod checkpoint;
pub mod diff;
pub mod edit_file;
pub mod editor;
pub mod env;
pub mod front_matter;
pub mod fs;
pub mod git;
pub mod glob;
pub mod grep;
pub mod image;
pub mod jobs;
pub mod list_dir;
pub mod memory;
pub mod output;
pub mod paths;
pub mod plan;
pub mod read_file;
pub mod review;
pub mod safety;
pub mod search;
pub mod shell;
pub mod skills;
pub mod view_image;
mod walk;
pub mod web_fetch;
pub mod write_file;

pub use cogni_process::truncate;
use cogni_protocol::{CommandEnd, EditTool, SandboxPolicy, ToolCall, ToolFormat, ToolSpec};
use cogni_sandbox::Workspace;
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Names of the tools offered when the config names none.
pub const DEFAULT_TOOLS: &[&str] = &[
    "shell",
    "read_file",
    "write_file",
    "list_dir",
    "grep",
    "glob",
    "ask_user",
    "view_image",
];

/// Tool list and tool settings (the spec's `tool_config`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolConfig {
    /// Tools offered to the model, by name.
    pub enabled: Vec<String>,
    /// Default timeout of a shell call.
    pub shell_timeout: Duration,
    /// Upper bound for a per-call timeout the model asks for.
    pub max_shell_timeout: Duration,
    /// Bytes of output kept in memory per stream; the rest is counted only.
    pub capture_limit_bytes: usize,
    /// Output shown to the model is cut to this many bytes (head + tail).
    pub max_output_bytes: usize,
    /// ... and to this many lines (head + tail).
    pub max_output_lines: usize,
    /// Largest slice `read_file` returns.
    pub read_max_bytes: usize,
    /// Most entries `list_dir` and `glob` return.
    pub list_max_entries: usize,
    /// Most matches `grep` returns (also its default).
    pub grep_max_results: usize,
    /// Background shell jobs running at once; 0 switches them off.
    pub max_background_jobs: usize,
    /// The longest a background job runs.
    pub background_timeout: Duration,
    /// Environment of child processes (inherit, exclude, set, ...).
    pub shell_env: env::ShellEnvPolicy,
    /// The file-editing tool; `None` lets the model family decide.
    pub edit_tool: Option<EditTool>,
    /// Offer `escalate`/`justification` on the shell tool, so the model can
    /// ask to run a command without the sandbox (set from the approval
    /// policy by the engine).
    pub shell_escalation: bool,
    /// The session's skills when `features.skills_enabled` is on (set by
    /// the configuration); with at least one, the `skill` tool is offered.
    pub skills: Option<Arc<skills::Skills>>,
    /// `[tools.web_fetch]`: whether `web_fetch` is offered, what it may
    /// reach, its caps.
    pub web_fetch: web_fetch::WebFetchConfig,
}

impl Default for ToolConfig {
    fn default() -> Self {
        ToolConfig {
            enabled: DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect(),
            shell_timeout: Duration::from_secs(120),
            max_shell_timeout: Duration::from_secs(600),
            capture_limit_bytes: 1024 * 1024,
            max_output_bytes: 16 * 1024,
            max_output_lines: 256,
            read_max_bytes: 64 * 1024,
            list_max_entries: 1000,
            grep_max_results: 200,
            max_background_jobs: 4,
            background_timeout: Duration::from_secs(3600),
            shell_env: env::ShellEnvPolicy::default(),
            edit_tool: None,
            shell_escalation: false,
            skills: None,
            web_fetch: web_fetch::WebFetchConfig::default(),
        }
    }
}

impl ToolConfig {
    /// The cap on what the model sees of one output.
    pub fn output_limits(&self) -> truncate::Limits {
        truncate::Limits {
            max_bytes: self.max_output_bytes,
            max_lines: self.max_output_lines,
        }
    }
}

/// What a tool sees of the session.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session's working directory: relative paths and commands start
    /// here.
    pub cwd: PathBuf,
    /// What commands and file tools may touch.
    pub sandbox: SandboxPolicy,
    /// The session's tool settings (caps, timeouts).
    pub config: Arc<ToolConfig>,
    /// The session's background shell jobs.
    pub jobs: Arc<jobs::JobTable>,
    /// File tools make their changes only when it admits them (closed
    /// when the turn is stopped).
    pub commits: fs::CommitGate,
    /// Where the file tools read and write text (the disk, or an editor).
    pub files: editor::Files,
    /// The session's cwd and writable roots, pinned when the session
    /// started: what the file tools and the sandbox may write.
    pub workspace: Arc<Workspace>,
}

impl ToolContext {
    /// A context with an empty job table sized by `config`, and the
    /// workspace of `cwd` and `sandbox`'s writable roots pinned now
    /// (blocking: a few `open` calls).
    pub fn new(cwd: PathBuf, sandbox: SandboxPolicy, config: Arc<ToolConfig>) -> Self {
        let workspace = Arc::new(Workspace::pin(&cwd, &sandbox.writable_roots));
        Self::in_workspace(cwd, sandbox, config, workspace)
    }

    /// [`ToolContext::new`] in a workspace pinned before (a session that
    /// goes on in the same directory: another model, a delegated agent).
    pub fn in_workspace(
        cwd: PathBuf,
        sandbox: SandboxPolicy,
        config: Arc<ToolConfig>,
        workspace: Arc<Workspace>,
    ) -> Self {
        let jobs = Arc::new(jobs::JobTable::new(
            config.max_background_jobs,
            config.background_timeout,
        ));
        ToolContext {
            cwd,
            sandbox,
            config,
            jobs,
            commits: fs::CommitGate::default(),
            files: editor::Files::default(),
            workspace,
        }
    }
}

/// The input of one call, already decoded.
#[derive(Debug, Clone)]
pub enum ToolInput {
    /// A function tool's arguments, parsed from the call's JSON string.
    Json(serde_json::Value),
    /// A freeform tool's raw text.
    Text(String),
}

/// What a tool reports back. `content` is what the model sees (already
/// capped); `command` is set for process-running tools: how the command
/// ended, as data (nobody reads it back out of the text).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// The text the model sees, already capped.
    pub content: String,
    /// True when the call failed; the model is told so.
    pub is_error: bool,
    /// How the command ended, for tools that run one; `None` otherwise.
    pub command: Option<CommandEnd>,
    /// The unified diff of the files the call changed, for people (the
    /// model is not sent it); `None` for calls that changed no file.
    pub diff: Option<String>,
    /// Images for the model to look at (`view_image`, an MCP tool).
    pub images: Vec<cogni_protocol::Image>,
}

impl ToolResult {
    /// A successful result with this text.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            ..Default::default()
        }
    }

    /// A failed result with this text (the error message for the model).
    pub fn error(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: true,
            ..Default::default()
        }
    }

    /// This result with the diff of what the call changed.
    pub fn with_diff(self, diff: Option<String>) -> Self {
        ToolResult { diff, ..self }
    }

    /// The command's exit code, when it ran one that exited.
    pub fn exit_code(&self) -> Option<i32> {
        self.command.and_then(|c| c.exit_code)
    }
}

/// One tool.
pub trait Tool: Send + Sync {
    /// How the tool is offered to the model: name, description, argument
    /// format, and whether it is read-only.
    fn spec(&self) -> ToolSpec;
    /// Runs one call. Every failure is a [`ToolResult`] with `is_error`
    /// set, never a panic or a missing result.
    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult>;
}

/// Tools from outside the configured set (MCP servers'), added to a
/// session once they are there and kept when it is reconfigured.
#[derive(Clone, Default)]
pub struct ExtraTools {
    /// Offered at once.
    pub eager: Vec<Arc<dyn Tool>>,
    /// Held back until `search_tools` finds them, each with its group.
    pub deferred: Vec<(String, Arc<dyn Tool>)>,
}

/// A group of tools a program adds to a session as one
/// (`Session::add_toolbox` in cogni-core; seed 003's tool boxes).
pub trait ToolBox {
    /// Its tools, in the order they are offered.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// The tools of a session, in the order they are offered to the model,
/// and the tools held back until `search_tools` finds them
/// ([`search`]).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<(ToolSpec, Arc<dyn Tool>)>,
    deferred: search::Deferred,
}

/// Why a tool list could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ToolConfigError {
    /// `tools.enabled` names a tool that does not exist.
    #[error("unknown tool `{name}` in tools.enabled; available tools: {available}{hint}")]
    UnknownTool {
        /// The name as given.
        name: String,
        /// The built-in tools' names, comma-separated.
        available: String,
        /// Where a tool that is switched elsewhere is switched (empty for
        /// others).
        hint: &'static str,
    },
}

/// A built-in tool; `config` supplies the caps its description states.
fn builtin(name: &str, config: &ToolConfig) -> Option<Arc<dyn Tool>> {
    Some(match name {
        "shell" => Arc::new(shell::ShellTool::new(config)),
        "read_file" => Arc::new(read_file::ReadFileTool::new(config)),
        "write_file" => Arc::new(write_file::WriteFileTool),
        "list_dir" => Arc::new(list_dir::ListDirTool::new(config)),
        "grep" => Arc::new(grep::GrepTool::new(config)),
        "glob" => Arc::new(glob::GlobTool::new(config)),
        "apply_patch" => apply_patch::apply_patch_tool(false),
        "edit_file" => Arc::new(edit_file::EditFileTool),
        "ask_user" => Arc::new(ask_user::AskUserTool),
        "view_image" => Arc::new(view_image::ViewImageTool),
        _ => return None,
    })
}

const BUILTIN_NAMES: &[&str] = &[
    "shell",
    "read_file",
    "write_file",
    "list_dir",
    "grep",
    "glob",
    "apply_patch",
    "edit_file",
    "ask_user",
    "view_image",
];

impl ToolRegistry {
    /// Build the registry from `tool_config`: the enabled tools, then the
    /// edit tool (`config.edit_tool`, else the model family's
    /// `family_edit_tool`). Unknown names fail here.
    pub fn from_config(
        config: &ToolConfig,
        family_edit_tool: EditTool,
    ) -> Result<Self, ToolConfigError> {
        let mut registry = ToolRegistry::default();
        for name in &config.enabled {
            let tool = builtin(name, config).ok_or_else(|| ToolConfigError::UnknownTool {
                name: name.clone(),
                available: BUILTIN_NAMES.join(", "),
                hint: if name == "web_fetch" {
                    " (web_fetch is offered unless [tools.web_fetch] enabled = false)"
                } else {
                    ""
                },
            })?;
            registry.register(tool);
            if name == "shell" && config.max_background_jobs > 0 {
                registry.register(Arc::new(jobs::ShellOutputTool));
                registry.register(Arc::new(jobs::ShellKillTool));
            }
        }
        if config.web_fetch.enabled {
            registry.register(Arc::new(web_fetch::WebFetchTool::new(config)));
        }
        match config.edit_tool.unwrap_or(family_edit_tool) {
            EditTool::ApplyPatch => registry.register(apply_patch::apply_patch_tool(false)),
            EditTool::ApplyPatchFreeform => registry.register(apply_patch::apply_patch_tool(true)),
            EditTool::EditFile => registry.register(Arc::new(edit_file::EditFileTool)),
            EditTool::None => {}
        }
        if let Some(skills) = config.skills.as_ref().filter(|s| !s.is_empty()) {
            registry.register(Arc::new(skills::tool::SkillTool::new(skills.clone())));
        }
        Ok(registry)
    }

    /// Add `tool`; one of the same name is replaced where it stands, so
    /// the order of the tools (and of the request's tool list) stays.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let spec = tool.spec();
        match self.tools.iter_mut().find(|(s, _)| s.name == spec.name) {
            Some(entry) => *entry = (spec, tool),
            None => self.tools.push((spec, tool)),
        }
    }

    /// Add `extra`'s tools: the eager ones after the others, the rest
    /// held back.
    pub fn add_extra(&mut self, extra: &ExtraTools) {
        for tool in &extra.eager {
            self.register(tool.clone());
        }
        for (group, tool) in &extra.deferred {
            self.register_deferred(group, tool.clone());
        }
    }

    /// Hold `tool` back, as one of `group`'s, until `search_tools` finds
    /// it; `search_tools` is offered while anything is held back.
    pub fn register_deferred(&mut self, group: &str, tool: Arc<dyn Tool>) {
        self.deferred.add(group, tool);
    }

    /// The tools offered from the start: the registered ones, then
    /// `search_tools` when tools are held back. Found tools follow them
    /// ([`ToolRegistry::found_specs`]).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|(s, _)| s)
            .chain(self.deferred.search_tool())
            .cloned()
            .collect()
    }

    /// The held-back tools `search_tools` found, in the order it found them.
    pub fn found_specs(&self) -> Vec<ToolSpec> {
        self.deferred
            .found()
            .into_iter()
            .map(|(spec, _)| spec.clone())
            .collect()
    }

    /// The names of the found tools, for [`ToolRegistry::set_found`].
    pub fn found_names(&self) -> Vec<String> {
        self.deferred.found_names()
    }

    /// Mark these held-back tools as found, in this order (a registry that
    /// replaces another keeps what the model found).
    pub fn set_found(&self, names: &[String]) {
        self.deferred.set_found(names);
    }

    /// An offered tool's spec (a found one's and `search_tools`' too).
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.find(name)
            .map(|(spec, _)| spec)
            .or_else(|| self.deferred.search_tool().filter(|s| s.name == name))
    }

    fn find(&self, name: &str) -> Option<(&ToolSpec, &Arc<dyn Tool>)> {
        self.tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(s, t)| (s, t))
            .or_else(|| self.deferred.get(name))
    }

    /// True when `name` is a registered (or held-back) tool that cannot
    /// change the workspace; false for unknown names.
    pub fn is_read_only(&self, name: &str) -> bool {
        self.spec(name).is_some_and(|s| s.read_only)
    }

    /// The registered tools in order, with their specs (not the held-back
    /// ones: [`ToolRegistry::deferred_entries`]).
    pub fn entries(&self) -> impl Iterator<Item = (&ToolSpec, &Arc<dyn Tool>)> {
        self.tools.iter().map(|(spec, tool)| (spec, tool))
    }

    /// The held-back tools, each with its group.
    pub fn deferred_entries(&self) -> impl Iterator<Item = (&str, &Arc<dyn Tool>)> {
        self.deferred.entries()
    }

    /// Keep only the tools (held-back ones too) whose name `keep` accepts.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.tools.retain(|(spec, _)| keep(&spec.name));
        self.deferred.retain(keep);
    }

    /// Run one call. Never panics and always returns exactly one result:
    /// an unknown tool or undecodable arguments become an error result and
    /// nothing runs.
    pub async fn dispatch(&self, call: &ToolCall, ctx: &ToolContext) -> ToolResult {
        if call.name == INVALID_CALL {
            return ToolResult::error(invalid_call_error(&call.arguments));
        }
        let Some(spec) = self.spec(&call.name) else {
            let mut names: Vec<String> = self.specs().into_iter().map(|s| s.name).collect();
            names.extend(self.found_names());
            return ToolResult::error(format!(
                "unknown tool `{}`; available tools: {}",
                call.name,
                names.join(", ")
            ));
        };
        // The tool's format decides how arguments are read, whatever form
        // the model used.
        let input = match &spec.format {
            ToolFormat::Freeform { .. } => ToolInput::Text(call.arguments.clone()),
            ToolFormat::Function { .. } => {
                let raw = if call.arguments.trim().is_empty() {
                    "{}"
                } else {
                    call.arguments.as_str()
                };
                match serde_json::from_str::<serde_json::Value>(raw) {
                    Ok(v) if v.is_object() => ToolInput::Json(v),
                    Ok(_) => {
                        return ToolResult::error(format!(
                            "arguments to `{}` must be a JSON object; nothing was run",
                            call.name
                        ))
                    }
                    Err(e) => {
                        return ToolResult::error(format!(
                            "arguments to `{}` are not valid JSON ({e}); nothing was run. Send a JSON object matching the tool's schema.",
                            call.name
                        ))
                    }
                }
            }
        };
        match self.find(&call.name) {
            Some((_, tool)) => tool.run(input, ctx).await,
            // The one offered tool that is not registered.
            None => self.deferred.search(input),
        }
    }
}

/// The name of a call the model wrote that could not be read (a malformed
/// tool-call block in text mode, `provider::text_tools`). It names no
/// tool: dispatch answers it with the `error` its arguments carry and
/// nothing runs.
pub const INVALID_CALL: &str = "invalid_tool_call";

/// The answer to an [`INVALID_CALL`]: the `error` of its arguments.
fn invalid_call_error(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| "the tool call could not be read; nothing was run".to_string())
}

/// Decode JSON arguments into a typed struct, or an error result that names
/// the problem.
pub fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    input: ToolInput,
) -> Result<T, ToolResult> {
    let value = match input {
        ToolInput::Json(v) => v,
        ToolInput::Text(t) => serde_json::from_str(&t).map_err(|e| {
            ToolResult::error(format!("arguments to `{tool}` are not valid JSON: {e}"))
        })?,
    };
    serde_json::from_value(value)
        .map_err(|e| ToolResult::error(format!("invalid arguments to `{tool}`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool schema goes into every request, and the whole first request
    /// must stay under 16 KB: the default tools (`ask_user`, `view_image`
    /// and `web_fetch` among them) with any edit tool get at most half of
    /// that (7,587 bytes with the freeform `apply_patch`, the largest).
    #[test]
    fn builtin_specs_are_complete_and_small() {
        let all = ToolConfig {
            enabled: BUILTIN_NAMES.iter().map(|s| s.to_string()).collect(),
            ..ToolConfig::default()
        };
        let registry = ToolRegistry::from_config(&all, EditTool::None).unwrap();
        for spec in registry.specs() {
            assert!(!spec.description.is_empty(), "{}", spec.name);
            let ToolFormat::Function { parameters } = &spec.format else {
                continue;
            };
            assert_eq!(parameters["type"], "object", "{}", spec.name);
        }
        for edit in [
            EditTool::ApplyPatch,
            EditTool::ApplyPatchFreeform,
            EditTool::EditFile,
        ] {
            let registry = ToolRegistry::from_config(&ToolConfig::default(), edit).unwrap();
            let size = serde_json::to_string(&registry.specs()).unwrap().len();
            assert!(size <= 8192, "{edit:?}: tool specs take {size} bytes");
        }
    }

    #[test]
    fn the_family_picks_the_edit_tool_unless_config_does() {
        let names = |config: &ToolConfig, family| {
            ToolRegistry::from_config(config, family)
                .unwrap()
                .specs()
                .into_iter()
                .map(|s| (s.name, matches!(s.format, ToolFormat::Freeform { .. })))
                .collect::<Vec<_>>()
        };
        let default = ToolConfig::default();
        let last = |v: Vec<(String, bool)>| v.last().cloned().unwrap();
        assert_eq!(
            last(names(&default, EditTool::EditFile)),
            ("edit_file".into(), false)
        );
        assert_eq!(
            last(names(&default, EditTool::ApplyPatch)),
            ("apply_patch".into(), false)
        );
        assert_eq!(
            last(names(&default, EditTool::ApplyPatchFreeform)),
            ("apply_patch".into(), true)
        );
        // The defaults, plus shell_output and shell_kill with shell, and
        // web_fetch.
        assert_eq!(
            names(&default, EditTool::None).len(),
            DEFAULT_TOOLS.len() + 3
        );
        let mut bare = ToolConfig {
            max_background_jobs: 0,
            ..ToolConfig::default()
        };
        bare.web_fetch.enabled = false;
        let without: Vec<String> = names(&bare, EditTool::None)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(without, DEFAULT_TOOLS);
        let chosen = ToolConfig {
            edit_tool: Some(EditTool::EditFile),
            ..ToolConfig::default()
        };
        assert_eq!(
            last(names(&chosen, EditTool::ApplyPatch)),
            ("edit_file".into(), false)
        );
    }

    #[test]
    fn web_fetch_is_switched_by_its_own_table_not_by_enabled() {
        let listed = ToolConfig {
            enabled: vec!["web_fetch".into()],
            ..ToolConfig::default()
        };
        let Err(err) = ToolRegistry::from_config(&listed, EditTool::None) else {
            panic!("web_fetch in tools.enabled was accepted");
        };
        assert!(
            err.to_string()
                .ends_with("(web_fetch is offered unless [tools.web_fetch] enabled = false)"),
            "{err}"
        );
    }

    #[test]
    fn a_tool_registered_again_keeps_its_place() {
        let config = ToolConfig::default();
        let mut registry = ToolRegistry::from_config(&config, EditTool::None).unwrap();
        let before: Vec<String> = registry.specs().into_iter().map(|s| s.name).collect();
        registry.register(Arc::new(shell::ShellTool::new(&config)));
        let after: Vec<String> = registry.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(before, after);
        assert!(before.iter().any(|n| n == "shell"));
    }

    #[test]
    fn read_only_tools_are_marked() {
        let registry = ToolRegistry::from_config(&ToolConfig::default(), EditTool::None).unwrap();
        for name in [
            "read_file",
            "list_dir",
            "grep",
            "glob",
            "shell_output",
            "shell_kill",
            "ask_user",
        ] {
            assert!(registry.is_read_only(name), "{name}");
        }
        assert!(!registry.is_read_only("shell"));
        assert!(!registry.is_read_only("write_file"));
        assert!(!registry.is_read_only("web_fetch"));
    }

    #[tokio::test]
    async fn an_invalid_call_is_answered_with_its_error_and_an_unknown_one_with_the_tools() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = paths::tests::ctx(tmp.path(), cogni_protocol::SandboxMode::WorkspaceWrite);
        let registry = ToolRegistry::from_config(&ToolConfig::default(), EditTool::None).unwrap();
        let call = |name: &str, arguments: &str| ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
            kind: Default::default(),
        };
        let result = registry
            .dispatch(
                &call(INVALID_CALL, r#"{"error": "fix the comma", "block": "{"}"#),
                &ctx,
            )
            .await;
        assert!(result.is_error);
        assert_eq!(result.content, "fix the comma");
        let result = registry.dispatch(&call(INVALID_CALL, "?"), &ctx).await;
        assert!(
            result.content.contains("could not be read"),
            "{}",
            result.content
        );
        let result = registry.dispatch(&call("frobnicate", "{}"), &ctx).await;
        assert!(result.is_error);
        assert!(
            result
                .content
                .starts_with("unknown tool `frobnicate`; available tools: shell, "),
            "{}",
            result.content
        );
    }
}
