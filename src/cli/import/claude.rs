//! `cogni import claude`: Claude Code's settings as cogni.toml. Two
//! scopes, never mixed in one file (docs/import.md#trust):
//!
//! - yours: `~/.claude/settings.json` and the `mcpServers` of
//!   `~/.claude.json`, for `$COGNI_HOME/config.toml`;
//! - a project's (`--project DIR`): `.claude/settings.json`,
//!   `.claude/settings.local.json` and `.mcp.json`, which come with the
//!   repository, only ever for `DIR/cogni.toml`, whose hooks, servers and
//!   commands cogni runs only once the directory is trusted.

use super::claude_tools::{guardrail, tool_matcher};
use super::{absolute, finish, not_a_project, server_name, string_map, strings, Import, WriteArgs};
use crate::config;
use crate::tools::env::looks_secret;
use crate::tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use clap::Args;
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};
use toml_edit::{InlineTable, Item, Table, Value};

#[derive(Debug, Args)]
pub struct ClaudeArgs {
    /// Claude Code's settings directory, whose settings.json and
    /// .claude.json are read (default: $CLAUDE_CONFIG_DIR, else
    /// ~/.claude/settings.json and ~/.claude.json).
    #[arg(long, value_name = "DIR", conflicts_with = "project")]
    pub from: Option<PathBuf>,

    /// Import this project's settings instead (.claude/settings.json,
    /// .claude/settings.local.json, .mcp.json), for DIR/cogni.toml only.
    #[arg(long, value_name = "DIR", conflicts_with = "to")]
    pub project: Option<PathBuf>,

    #[command(flatten)]
    pub write: WriteArgs,
}

/// What becomes of a hook event's matcher.
#[derive(Clone, Copy, PartialEq)]
enum Matcher {
    /// Tool names, mapped to cogni's.
    Tools,
    /// Kept as written (the same subjects in both).
    Kept,
    /// Dropped: Claude Code ignores it at this event.
    Dropped,
}

/// Claude Code's hook events cogni has, by the same name.
const EVENTS: &[(&str, Matcher)] = &[
    ("PreToolUse", Matcher::Tools),
    ("PostToolUse", Matcher::Tools),
    ("UserPromptSubmit", Matcher::Dropped),
    ("Stop", Matcher::Dropped),
    ("SubagentStop", Matcher::Dropped),
    ("PreCompact", Matcher::Kept),
    ("SessionStart", Matcher::Kept),
    ("SessionEnd", Matcher::Dropped),
    // `notification_type`: cogni sends permission_prompt and idle_prompt.
    ("Notification", Matcher::Kept),
];

/// Claude Code's model aliases, as the models cogni's catalog names.
const MODEL_ALIASES: &[(&str, &str)] = &[
    ("default", "claude-sonnet-4-5"),
    ("sonnet", "claude-sonnet-4-5"),
    ("sonnet[1m]", "claude-sonnet-4-5"),
    ("opus", "claude-opus-4-5"),
    ("opusplan", "claude-opus-4-5"),
    ("haiku", "claude-haiku-4-5"),
];

/// `permissions.defaultMode`: the approval policy that asks alike.
const MODES: &[(&str, &str)] = &[
    ("default", "untrusted"),
    ("acceptEdits", "on-request"),
    ("bypassPermissions", "never"),
];

/// Variables of `env` that are cogni settings: the variable, cogni's
/// key path, whether the value is a number.
const ENV_SETTINGS: &[(&str, &str, bool)] = &[
    ("ANTHROPIC_MODEL", "model", false),
    (
        "ANTHROPIC_BASE_URL",
        "model_providers.anthropic.base_url",
        false,
    ),
    ("BASH_DEFAULT_TIMEOUT_MS", "tools.shell_timeout_ms", true),
    ("BASH_MAX_TIMEOUT_MS", "tools.max_shell_timeout_ms", true),
    ("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "max_tokens", true),
];

/// Prefixes of variables that configure Claude Code itself.
const CLAUDE_ENV: &[&str] = &[
    "ANTHROPIC_",
    "CLAUDE_",
    "DISABLE_",
    "MCP_",
    "MAX_THINKING_TOKENS",
    "BASH_",
    "AWS_BEARER_TOKEN_BEDROCK",
    "VERTEX_",
];

const TERMINAL: &str = "how Claude Code's own terminal looks";
const MCPJSON: &str =
    "cogni starts a project's .mcp.json servers (imported into its cogni.toml) once you `cogni trust` it";

/// Why a settings key has no cogni equivalent; others get [`NO_SUCH`].
const REASONS: &[(&str, &str)] = &[
    ("apiKeyHelper", "cogni runs no program for the Anthropic key: it reads ANTHROPIC_API_KEY or $COGNI_HOME/keys/anthropic (a gateway's token can come from auth_command of [model_providers.NAME])"),
    ("statusLine", TERMINAL),
    ("outputStyle", TERMINAL),
    ("spinnerTipsEnabled", TERMINAL),
    ("companyAnnouncements", TERMINAL),
    ("includeCoAuthoredBy", "cogni adds no co-author line to commits"),
    ("cleanupPeriodDays", "cogni keeps sessions until you delete them ($COGNI_HOME/sessions)"),
    ("forceLoginMethod", "Claude Code's login; cogni reads ANTHROPIC_API_KEY"),
    ("awsAuthRefresh", "cogni has no Bedrock provider"),
    ("awsCredentialExport", "cogni has no Bedrock provider"),
    ("alwaysThinkingEnabled", "cogni sets thinking by reasoning_effort, for models that reason"),
    ("sandbox", "cogni's sandbox is always on: sandbox_mode and [sandbox_workspace_write] set it"),
    ("enableAllProjectMcpServers", MCPJSON),
    ("enabledMcpjsonServers", MCPJSON),
    ("permissions.disableBypassPermissionsMode", "cogni has no such switch; approval_policy = \"never\" is the equivalent of bypassing"),
    ("permissions.defaultMode", "no approval policy asks alike; `cogni --mode plan` starts the REPL read-only"),
];

const NO_SUCH: &str = "cogni has no such setting";

/// The scope of an import.
pub(super) enum Scope {
    /// The user's own settings.
    User,
    /// A project's, in this directory (canonical).
    Project(PathBuf),
}

pub fn run(args: ClaudeArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<u8, String> {
    let home = env("HOME").map(PathBuf::from);
    match args.project {
        Some(dir) => {
            let dir = crate::sandbox::sys::canonicalize(&dir)
                .ok()
                .filter(|d| d.is_dir())
                .ok_or_else(|| format!("--project {}: no such directory", dir.display()))?;
            let files = [
                dir.join(".claude/settings.json"),
                dir.join(".claude/settings.local.json"),
                dir.join(".mcp.json"),
            ];
            let import = import(&files, Scope::Project(dir.clone()), home.as_deref())?;
            finish(
                &import,
                &args.write,
                dir.join("cogni.toml"),
                Some(&dir),
                env,
            )
        }
        None => {
            if let Some(dir) = &args.from {
                let parent = crate::sandbox::sys::canonicalize(dir)
                    .ok()
                    .and_then(|d| d.parent().map(|p| p.display().to_string()))
                    .unwrap_or_else(|| "DIR".into());
                not_a_project(
                    dir,
                    home.as_deref(),
                    &format!("import a project's settings with --project {parent}"),
                )?;
            }
            let given = args.from.or_else(|| {
                env("CLAUDE_CONFIG_DIR")
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
            });
            let user = home.clone().unwrap_or_else(|| PathBuf::from("/"));
            let files = match given {
                Some(dir) => [dir.join("settings.json"), dir.join(".claude.json")],
                None => [
                    user.join(".claude/settings.json"),
                    user.join(".claude.json"),
                ],
            };
            let import = import(&files, Scope::User, home.as_deref())?;
            let target = config::cogni_home(env).join("config.toml");
            finish(&import, &args.write, target, None, env)
        }
    }
}

/// What the Claude Code files `files` (those that exist) are in cogni.
pub(super) fn import(
    files: &[PathBuf],
    scope: Scope,
    home: Option<&Path>,
) -> Result<Import, String> {
    let about = match &scope {
        Scope::User => "Keep it as $COGNI_HOME/config.toml (`cogni import claude --write` writes it there).".to_string(),
        Scope::Project(dir) => format!(
            "A project's settings: they belong in {}/cogni.toml (`--write` writes them there), whose \
             hooks, MCP servers and commands cogni runs only once you trust the directory (`cogni trust`).",
            dir.display()
        ),
    };
    let mut claude = Claude {
        imp: Import::new(about),
        scope,
        home,
        disabled_servers: Vec::new(),
    };
    let mut read = Vec::new();
    let mut found = false;
    for path in files {
        let exists = std::fs::symlink_metadata(path).is_ok();
        found |= exists;
        if let Scope::Project(dir) = &claude.scope {
            // A repository's file may be a link to one of yours, or to a
            // device: not opened.
            let inside = crate::sandbox::sys::canonicalize(path).is_ok_and(|p| p.starts_with(dir));
            if !inside {
                if exists {
                    claude.imp.skip(
                        path.display().to_string(),
                        "a link to a file outside the project: not read",
                    );
                }
                continue;
            }
        }
        if let Some(json) = read_json(path)? {
            read.push((path.clone(), json));
        }
    }
    if !found {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        return Err(format!(
            "no Claude Code settings found (looked for {}); name another directory with {}",
            names.join(", "),
            match claude.scope {
                Scope::User => "--from DIR, or a project's with --project DIR",
                Scope::Project(_) => "--project DIR",
            }
        ));
    }
    // Settings first: they may disable .mcp.json's servers.
    read.sort_by_key(|(path, _)| path.file_name().is_some_and(|n| n == ".mcp.json"));
    for (path, json) in &read {
        claude.file(path, json);
    }
    Ok(claude.imp)
}

/// The JSON object in `path`; `None` when there is no file.
fn read_json(path: &Path) -> Result<Option<Map<String, Json>>, String> {
    let text = match read_text_limited(path, SPEC_FILE_MAX_BYTES) {
        Ok(text) => text,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let fix = "fix the file (Claude Code cannot read it either) and import again";
    match serde_json::from_str(&text) {
        Ok(Json::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(format!("{}: expected a JSON object; {fix}", path.display())),
        Err(e) => Err(format!("{}: invalid JSON: {e}; {fix}", path.display())),
    }
}

/// One import under way.
struct Claude<'a> {
    imp: Import,
    scope: Scope,
    home: Option<&'a Path>,
    /// `disabledMcpjsonServers` of the project's settings.
    disabled_servers: Vec<String>,
}

impl Claude<'_> {
    /// One file: settings, `.mcp.json` or `.claude.json`.
    fn file(&mut self, path: &Path, json: &Map<String, Json>) {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        self.imp.source(path);
        match name.as_str() {
            ".mcp.json" => self.servers(json.get("mcpServers"), &name),
            ".claude.json" => self.claude_json(json, &name),
            _ => self.settings(json, &name),
        }
    }

    /// `~/.claude.json`: Claude Code's state, of which only `mcpServers`
    /// (and each project's, reported) are settings.
    fn claude_json(&mut self, json: &Map<String, Json>, file: &str) {
        self.servers(json.get("mcpServers"), file);
        let Some(projects) = json.get("projects").and_then(Json::as_object) else {
            return;
        };
        for (dir, project) in projects {
            let servers = project.get("mcpServers").and_then(Json::as_object);
            if servers.is_some_and(|s| !s.is_empty()) {
                self.imp.skip(
                    format!("projects.\"{dir}\".mcpServers in {file}"),
                    "servers of one project: cogni has no per-project settings of yours; add them \
                     to that project's cogni.toml or with `cogni mcp add`",
                );
            }
        }
    }

    /// `settings.json` or `settings.local.json`.
    fn settings(&mut self, json: &Map<String, Json>, file: &str) {
        let hooks_off = json.get("disableAllHooks") == Some(&Json::Bool(true));
        for (key, value) in json {
            let at = format!("{key} in {file}");
            match (key.as_str(), value) {
                ("$schema" | "disableAllHooks", _) => {}
                ("model", Json::String(model)) => self.model(&at, model),
                ("env", Json::Object(vars)) => self.env(vars, file),
                ("permissions", Json::Object(p)) => self.permissions(p, file),
                ("hooks", Json::Object(_)) if hooks_off => {
                    self.imp.skip(at, "disableAllHooks is true")
                }
                ("hooks", Json::Object(events)) => self.hooks(events, file),
                ("mcpServers", _) => self.servers(Some(value), file),
                ("disabledMcpjsonServers", Json::Array(names)) => match self.scope {
                    Scope::Project(_) => self
                        .disabled_servers
                        .extend(names.iter().filter_map(Json::as_str).map(String::from)),
                    Scope::User => self.imp.skip(
                        at,
                        "names servers of projects' .mcp.json, which an import of your settings does not read",
                    ),
                },
                _ => self.unmapped(key, &at),
            }
        }
    }

    /// `key` (its label `at`) is not imported, with the reason of
    /// [`REASONS`].
    fn unmapped(&mut self, key: &str, at: &str) {
        let why = REASONS
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(NO_SUCH, |(_, why)| why);
        self.imp.skip(at, why);
    }

    /// `model`, and the provider its models come from.
    fn model(&mut self, at: &str, model: &str) {
        let cogni = match MODEL_ALIASES.iter().find(|(alias, _)| *alias == model) {
            Some((_, name)) => {
                self.imp.note(
                    at,
                    format!("Claude Code's alias `{model}` is written as `{name}`"),
                );
                name
            }
            None => model,
        };
        if self.imp.set(at, &["model"], Value::from(cogni)) {
            self.imp.set(at, &["provider"], Value::from("anthropic"));
        }
    }

    /// `env`: settings of Claude Code's become cogni's where it has them;
    /// the rest is set for commands, except what looks secret.
    fn env(&mut self, vars: &Map<String, Json>, file: &str) {
        let mut for_commands = 0;
        for (name, value) in vars {
            let at = format!("env.{name} in {file}");
            let Some(value) = value.as_str() else {
                self.imp.skip(at, "not a string");
                continue;
            };
            if let Some((_, path, number)) = ENV_SETTINGS.iter().find(|(v, _, _)| v == name) {
                let path: Vec<&str> = path.split('.').collect();
                match (number, value.trim().parse::<i64>()) {
                    (false, _) => {
                        self.imp.set(&at, &path, Value::from(value));
                    }
                    (true, Ok(n)) => {
                        self.imp.set(&at, &path, Value::from(n));
                    }
                    (true, Err(_)) => self.imp.skip(at, "not a whole number"),
                }
            } else if looks_secret(name, value) {
                self.imp.skip(
                    at,
                    "looks secret, so it is not written into a config file: export it yourself \
                     (provider keys are read from your environment; commands get variables that look \
                     secret only with [tools.shell_env] ignore_default_excludes = true)",
                );
            } else if CLAUDE_ENV.iter().any(|p| name.starts_with(p)) {
                self.imp.skip(at, "configures Claude Code itself");
            } else if self.imp.set(
                &at,
                &["tools", "shell_env", "set", name.as_str()],
                Value::from(value),
            ) {
                for_commands += 1;
            }
        }
        if for_commands > 0 {
            self.imp.note(
                format!("env in {file}"),
                "set for commands and MCP servers as [tools.shell_env] set (cogni's hooks get your own environment)",
            );
        }
    }

    /// `permissions`.
    fn permissions(&mut self, permissions: &Map<String, Json>, file: &str) {
        for (key, value) in permissions {
            let at = format!("permissions.{key} in {file}");
            let rules = || {
                value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Json::as_str)
            };
            match (key.as_str(), value) {
                ("allow", _) => {
                    for rule in rules() {
                        self.imp.skip(
                            format!("permissions.allow `{rule}` in {file}"),
                            "cogni has no allow rules: the approval policy decides what runs without \
                             asking (known-safe read-only commands under \"untrusted\")",
                        );
                    }
                }
                ("ask", _) => {
                    for rule in rules() {
                        self.imp.skip(
                            format!("permissions.ask `{rule}` in {file}"),
                            "cogni has no ask rules: approval_policy = \"untrusted\" asks before \
                             anything but known-safe read-only commands",
                        );
                    }
                }
                ("deny", _) => {
                    let denied = rules().filter(|rule| self.deny(rule, file)).count();
                    if denied > 0 {
                        self.imp.note(
                            at,
                            "each rule is a guardrail over the call's arguments (effects): it blocks \
                             what Claude Code blocks, on cogni's tools, and may block more",
                        );
                    }
                }
                ("defaultMode", Json::String(mode)) => {
                    match MODES.iter().find(|(m, _)| m == mode) {
                        Some((_, policy)) => {
                            if self
                                .imp
                                .set(&at, &["approval_policy"], Value::from(*policy))
                            {
                                self.imp.note(
                                    at,
                                    format!("`{mode}` is approval_policy = \"{policy}\""),
                                );
                            }
                        }
                        None => self.unmapped("permissions.defaultMode", &at),
                    }
                }
                ("additionalDirectories", Json::Array(dirs)) => self.directories(dirs, &at),
                _ => self.unmapped(&format!("permissions.{key}"), &at),
            }
        }
    }

    /// `permissions.additionalDirectories`: cogni's writable roots.
    fn directories(&mut self, dirs: &[Json], at: &str) {
        let mut roots = Vec::new();
        for dir in dirs.iter().filter_map(Json::as_str) {
            let at = format!("{at}: `{dir}`");
            let absolute_dir = dir.starts_with('/') || dir.starts_with("~/");
            match &self.scope {
                Scope::User if absolute_dir => roots.push(absolute(dir, Path::new("/"), self.home)),
                Scope::User => self.imp.skip(
                    at,
                    "relative to wherever Claude Code runs; cogni's writable roots are relative to \
                     the config file: write it as an absolute path",
                ),
                Scope::Project(project) => {
                    let root = absolute(dir, project, self.home);
                    if config::inside_project(&root.display().to_string(), project) {
                        roots.push(root);
                    } else {
                        self.imp.skip(
                            at,
                            "outside the project: a project's settings do not open your other \
                             directories to commands (add it to your own config if you want)",
                        );
                    }
                }
            }
        }
        if roots.is_empty() {
            return;
        }
        let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        let path = ["sandbox_workspace_write", "writable_roots"];
        if self
            .imp
            .set(at, &path, strings(roots.iter().map(String::as_str)))
        {
            self.imp.note(
                at,
                "as [sandbox_workspace_write] writable_roots: commands and file tools may write there",
            );
        }
    }

    /// A `permissions.deny` rule as a guardrail; whether it became one.
    fn deny(&mut self, rule: &str, file: &str) -> bool {
        let at = format!("permissions.deny `{rule}` in {file}");
        let (tools, pattern) = match guardrail(rule) {
            Ok(found) => found,
            Err(why) => {
                self.imp.skip(at, why);
                return false;
            }
        };
        let mut effect = InlineTable::new();
        effect.insert("kind", "guardrail".into());
        effect.insert("on", "tool_call".into());
        effect.insert("tools", tools.into());
        effect.insert("pattern", pattern.into());
        effect.insert(
            "reason",
            format!("denied by Claude Code's permissions.deny `{rule}`").into(),
        );
        self.imp.push_value(&at, &["effects"], effect)
    }

    /// `hooks`: each command of each matcher group is a `[[hooks.EVENT]]`.
    fn hooks(&mut self, events: &Map<String, Json>, file: &str) {
        for (event, groups) in events {
            let at = format!("hooks.{event} in {file}");
            let Some((_, matcher)) = EVENTS.iter().find(|(e, _)| e == event) else {
                self.unmapped(&format!("hooks.{event}"), &at);
                continue;
            };
            let Some(groups) = groups.as_array() else {
                self.imp.skip(at, "expected a list of matcher groups");
                continue;
            };
            for (i, group) in groups.iter().enumerate() {
                let at = format!("hooks.{event}[{i}] in {file}");
                let written = group.get("matcher").and_then(Json::as_str).unwrap_or("");
                let matcher = match (matcher, written.trim()) {
                    (_, "" | "*") => None,
                    (Matcher::Tools, m) => match tool_matcher(m) {
                        Ok(m) => m,
                        Err(why) => {
                            self.imp.skip(at, format!("matcher `{m}` {why}"));
                            continue;
                        }
                    },
                    (Matcher::Kept, m) => Some(m.to_string()),
                    (Matcher::Dropped, m) => {
                        self.imp.note(
                            &at,
                            format!(
                                "matcher `{m}` left out: Claude Code ignores it at {event} too"
                            ),
                        );
                        None
                    }
                };
                let hooks = group.get("hooks").and_then(Json::as_array);
                for (j, hook) in hooks.into_iter().flatten().enumerate() {
                    let at = format!("hooks.{event}[{i}].hooks[{j}] in {file}");
                    self.hook(&at, event, matcher.as_deref(), hook);
                }
            }
        }
    }

    /// One command hook.
    fn hook(&mut self, at: &str, event: &str, matcher: Option<&str>, hook: &Json) {
        let kind = hook.get("type").and_then(Json::as_str).unwrap_or("command");
        if kind != "command" {
            self.imp.skip(
                at,
                format!("cogni's hooks run commands; a `{kind}` hook has no equivalent"),
            );
            return;
        }
        let Some(command) = hook.get("command").and_then(Json::as_str) else {
            self.imp.skip(at, "no command");
            return;
        };
        let mut table = Table::new();
        if let Some(matcher) = matcher {
            table.insert("matcher", toml_edit::value(matcher));
        }
        table.insert("command", toml_edit::value(command));
        if let Some(seconds) = hook.get("timeout").and_then(Json::as_f64) {
            table.insert(
                "timeout_ms",
                toml_edit::value((seconds * 1000.0).round() as i64),
            );
        }
        self.imp.push_table(at, &["hooks", event], table);
    }

    /// `mcpServers` (of `.mcp.json`, `~/.claude.json` or settings).
    fn servers(&mut self, servers: Option<&Json>, file: &str) {
        let Some(servers) = servers else {
            return;
        };
        let Some(servers) = servers.as_object() else {
            self.imp.skip(
                format!("mcpServers in {file}"),
                "expected an object of servers",
            );
            return;
        };
        for (name, server) in servers {
            let at = format!("mcpServers.{name} in {file}");
            match server_table(server) {
                Ok((mut table, skipped)) => {
                    for key in skipped {
                        self.imp
                            .skip(format!("mcpServers.{name}.{key} in {file}"), NO_SUCH);
                    }
                    let disabled = self.disabled_servers.iter().any(|d| d == name);
                    if disabled {
                        table.insert("enabled", toml_edit::value(false));
                    }
                    let cogni = server_name(name);
                    let id = cogni.as_deref().unwrap_or(name);
                    if !self.imp.set(&at, &["mcp_servers", id], Item::Table(table)) {
                        continue;
                    }
                    if let Some(id) = cogni {
                        self.imp.note(
                            &at,
                            format!("named `{id}`: a server's name holds only letters, digits, `_` and `-` (its tools are mcp__{id}__TOOL)"),
                        );
                    }
                    if disabled {
                        self.imp
                            .note(at, "enabled = false: disabledMcpjsonServers names it");
                    }
                }
                Err(why) => self.imp.skip(at, why),
            }
        }
    }
}

/// A server of `mcpServers` as `[mcp_servers.NAME]`, and its keys cogni
/// has no equivalent for; an error when the server cannot work in cogni.
/// `${VAR}` (which Claude Code expands) becomes cogni's way of passing a
/// variable where there is one: `env_vars` for `KEY = "${KEY}"`,
/// `bearer_token_env_var` for `Authorization: Bearer ${VAR}`,
/// `env_http_headers` for a header that is one variable.
fn server_table(server: &Json) -> Result<(Table, Vec<String>), String> {
    let server = server.as_object().ok_or("expected an object")?;
    let default = if server.contains_key("url") {
        "http"
    } else {
        "stdio"
    };
    let kind = server.get("type").and_then(Json::as_str).unwrap_or(default);
    let (known, table): (&[&str], _) = match kind {
        "stdio" => (&["type", "command", "args", "env"], stdio(server)?),
        "http" => (&["type", "url", "headers"], http(server)?),
        "sse" => {
            return Err(
                "an SSE server: cogni speaks streamable HTTP to MCP servers, not the \
                        older SSE transport"
                    .into(),
            )
        }
        other => return Err(format!("type `{other}` is not a transport cogni knows")),
    };
    let skipped = server
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .cloned()
        .collect();
    Ok((table, skipped))
}

/// A stdio server's `command`, `args` and `env`.
fn stdio(server: &Map<String, Json>) -> Result<Table, String> {
    let mut table = Table::new();
    let command = server
        .get("command")
        .and_then(Json::as_str)
        .ok_or("no command")?;
    not_expanded("command", command)?;
    table.insert("command", toml_edit::value(command));
    let args: Vec<&str> = server
        .get("args")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .collect();
    for arg in &args {
        not_expanded("args", arg)?;
    }
    insert_some(&mut table, "args", strings(args.iter().copied()));
    let (mut fixed, mut passed) = (Vec::new(), Vec::new());
    for (key, value) in strings_of(server, "env") {
        if variable(value) == Some(key) {
            passed.push(key);
        } else {
            not_expanded(&format!("env.{key}"), value)?;
            fixed.push((key, value));
        }
    }
    insert_some(&mut table, "env", string_map(fixed));
    insert_some(&mut table, "env_vars", strings(passed));
    Ok(table)
}

/// A streamable HTTP server's `url` and `headers`.
fn http(server: &Map<String, Json>) -> Result<Table, String> {
    let mut table = Table::new();
    let url = server.get("url").and_then(Json::as_str).ok_or("no url")?;
    not_expanded("url", url)?;
    table.insert("url", toml_edit::value(url));
    let (mut fixed, mut from_env) = (Vec::new(), Vec::new());
    for (header, value) in strings_of(server, "headers") {
        let bearer = value.strip_prefix("Bearer ").and_then(variable);
        match (bearer, variable(value)) {
            (Some(var), _) if header.eq_ignore_ascii_case("authorization") => {
                table.insert("bearer_token_env_var", toml_edit::value(var));
            }
            (_, Some(var)) => from_env.push((header, var)),
            _ => {
                not_expanded(&format!("headers.{header}"), value)?;
                fixed.push((header, value));
            }
        }
    }
    insert_some(&mut table, "http_headers", string_map(fixed));
    insert_some(&mut table, "env_http_headers", string_map(from_env));
    Ok(table)
}

/// The string values of the object at `key` of `map`, by name.
fn strings_of<'a>(
    map: &'a Map<String, Json>,
    key: &str,
) -> impl Iterator<Item = (&'a str, &'a str)> {
    map.get(key)
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
}

/// Insert `value` at `key` unless it is an empty list or table.
fn insert_some(table: &mut Table, key: &str, value: Value) {
    let empty = match &value {
        Value::Array(items) => items.is_empty(),
        Value::InlineTable(pairs) => pairs.is_empty(),
        _ => false,
    };
    if !empty {
        table.insert(key, Item::Value(value));
    }
}

/// The variable's name when `text` is `${VAR}` alone.
fn variable(text: &str) -> Option<&str> {
    text.strip_prefix("${")
        .and_then(|v| v.strip_suffix('}'))
        .filter(|v| v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// `text` (at `key`) holds no `${...}`, which Claude Code expands and cogni
/// does not.
fn not_expanded(key: &str, text: &str) -> Result<(), String> {
    if text.contains("${") {
        Err(format!(
            "{key} holds `${{...}}`, which Claude Code expands and cogni does not"
        ))
    } else {
        Ok(())
    }
}
