//! `cogni import codex`: Codex CLI's `config.toml` as cogni.toml. Most of
//! cogni's keys are Codex's own (`approval_policy`, `sandbox_mode`,
//! `[sandbox_workspace_write]`, `[mcp_servers.NAME]`, `[profiles.NAME]`);
//! the tables below say what is renamed and why the rest is not imported.

use super::{absolute, finish, not_a_project, server_name, strings, Import, WriteArgs};
use crate::config;
use crate::tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use clap::Args;
use std::path::{Path, PathBuf};
use toml_edit::{Item, Table, Value};

#[derive(Debug, Args)]
pub struct CodexArgs {
    /// Codex's config.toml, or the directory holding it (default:
    /// $CODEX_HOME/config.toml, else ~/.codex/config.toml).
    #[arg(long, value_name = "PATH")]
    pub from: Option<PathBuf>,

    #[command(flatten)]
    pub write: WriteArgs,
}

/// Keys of a layer (the file or a profile) that cogni spells another way
/// (or the same), value unchanged: Codex's key, cogni's key path.
const RENAMED: &[(&str, &str)] = &[
    ("model", "model"),
    ("model_reasoning_effort", "reasoning_effort"),
    ("approval_policy", "approval_policy"),
    ("sandbox_mode", "sandbox_mode"),
    ("developer_instructions", "developer_instructions"),
    ("project_doc_max_bytes", "project_doc_max_bytes"),
    ("model_auto_compact_token_limit", "compaction.token_limit"),
];

/// Keys whose value is a file, made absolute (relative to the Codex
/// file's directory) so the result works wherever it is written.
const PATHS: &[(&str, &str)] = &[
    ("experimental_instructions_file", "base_instructions_file"),
    ("model_instructions_file", "base_instructions_file"),
];

/// Keys a model family takes in cogni (`[model_families."MODEL"]`).
const FAMILY: &[(&str, &str)] = &[
    ("model_context_window", "context_window"),
    ("model_max_output_tokens", "max_output_tokens"),
];

const TERMINAL: &str = "how Codex's own terminal and installation behave";
const LOGIN: &str =
    "Codex's login; cogni reads a provider's key from its variable (env_key) or a key file";
const SUMMARIES: &str = "cogni asks for no reasoning summaries";
const EDIT_TOOL: &str =
    "cogni picks the edit tool by model family; [tools] edit_tool chooses one for every model";

/// Why a key has no cogni equivalent; keys not listed get [`NO_SUCH`].
const REASONS: &[(&str, &str)] = &[
    ("notify", "cogni runs no program after each turn; a [[hooks.Stop]] hook runs at that point (with JSON on stdin, not as an argument)"),
    ("instructions", "Codex ignores it too; instructions come from AGENTS.md, developer_instructions or base_instructions_file"),
    ("compact_prompt", "cogni's compaction prompt is built in"),
    ("experimental_compact_prompt_file", "cogni's compaction prompt is built in"),
    ("model_reasoning_summary", SUMMARIES),
    ("model_supports_reasoning_summaries", SUMMARIES),
    ("model_reasoning_summary_format", SUMMARIES),
    ("model_verbosity", "cogni sends no verbosity setting"),
    ("hide_agent_reasoning", TERMINAL),
    ("show_raw_agent_reasoning", TERMINAL),
    ("file_opener", TERMINAL),
    ("tui", TERMINAL),
    ("disable_paste_burst", TERMINAL),
    ("notice", TERMINAL),
    ("check_for_update_on_startup", TERMINAL),
    ("windows_wsl_setup_acknowledged", TERMINAL),
    ("review_model", "cogni has no review mode"),
    ("history", "cogni saves every session under $COGNI_HOME/sessions; `--no-persist` turns that off for a run"),
    ("otel", "cogni logs to $COGNI_HOME/log/cogni.log and exports no OpenTelemetry"),
    ("chatgpt_base_url", LOGIN),
    ("forced_login_method", LOGIN),
    ("forced_chatgpt_workspace_id", LOGIN),
    ("cli_auth_credentials_store", LOGIN),
    ("mcp_oauth_credentials_store", "cogni does no OAuth login to MCP servers; a server's token comes from bearer_token_env_var"),
    ("project_doc_fallback_filenames", "cogni reads CLAUDE.md where a directory has no AGENTS.md, and no other names"),
    ("tool_output_token_limit", "cogni caps tool output in bytes and lines: [tools] max_output_bytes, max_output_lines"),
    ("oss_provider", "cogni has no --oss flag; provider = \"ollama\" talks to Ollama"),
    ("web_search", "cogni has no web search tool"),
    ("tools.web_search", "cogni has no web search tool"),
    ("tools.view_image", "cogni has no image tool"),
    ("include_apply_patch_tool", EDIT_TOOL),
    ("experimental_use_freeform_apply_patch", EDIT_TOOL),
    ("features.web_search_request", "cogni has no web search tool"),
    ("features.view_image_tool", "cogni has no image tool"),
    ("sandbox_workspace_write.exclude_tmpdir_env_var", "cogni's commands get a private temp dir, never $TMPDIR or /tmp"),
    ("sandbox_workspace_write.exclude_slash_tmp", "cogni's commands get a private temp dir, never $TMPDIR or /tmp"),
    ("shell_environment_policy.experimental_use_profile", "cogni runs commands with the shell of `shell`, without a login profile"),
    ("model_providers.*.env_http_headers", "cogni sends only fixed headers (http_headers) to a provider; its key comes from env_key"),
    ("model_providers.*.stream_max_retries", "cogni's max_retries covers broken streams too (a broken stream restarts the answer)"),
    ("model_providers.*.requires_openai_auth", "cogni has no ChatGPT login: it sends the key of env_key"),
    ("model_providers.*.experimental_bearer_token", "a token written in a config file is not copied: put it in a variable and name it with env_key"),
    ("model_providers.*.env_key_instructions", "cogni's error for a missing key names the variable"),
];

const NO_SUCH: &str = "cogni has no such setting";

/// `[model_providers.NAME]` keys cogni takes: Codex's, cogni's.
const PROVIDER_KEYS: &[(&str, &str)] = &[
    ("name", "name"),
    ("base_url", "base_url"),
    ("env_key", "env_key"),
    ("wire_api", "wire_api"),
    ("query_params", "query_params"),
    ("http_headers", "http_headers"),
    ("request_max_retries", "max_retries"),
    ("stream_idle_timeout_ms", "stream_idle_timeout_ms"),
];

/// `[mcp_servers.NAME]` keys cogni takes as Codex writes them.
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "enabled",
    "required",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
];

/// `[shell_environment_policy]` keys, the same in `[tools.shell_env]`.
const SHELL_ENV_KEYS: &[&str] = &[
    "inherit",
    "ignore_default_excludes",
    "exclude",
    "set",
    "include_only",
];

/// Codex's built-in providers: Codex's id, cogni's.
const CODEX_PROVIDERS: &[(&str, &str)] = &[
    ("openai", "openai"),
    ("oss", "ollama"),
    ("ollama", "ollama"),
    ("lmstudio", "lmstudio"),
];

/// LM Studio's local server, which cogni declares as a provider.
const LMSTUDIO_URL: &str = "http://localhost:1234/v1";

pub fn run(args: CodexArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<u8, String> {
    let home = env("HOME").map(PathBuf::from);
    if let Some(from) = &args.from {
        let dir = if from.is_dir() {
            from.as_path()
        } else {
            from.parent().unwrap_or(from)
        };
        not_a_project(
            dir,
            home.as_deref(),
            "cogni imports your own Codex settings; put what you want of a project's into its cogni.toml",
        )?;
    }
    let path = source(args.from, env);
    let text = read_text_limited(&path, SPEC_FILE_MAX_BYTES).map_err(|e| {
        if e.is_missing() {
            format!(
                "{}: no such file; Codex keeps its settings in $CODEX_HOME/config.toml (default \
                 ~/.codex/config.toml): name yours with --from PATH",
                path.display()
            )
        } else {
            e.to_string()
        }
    })?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        format!(
            "{}: invalid TOML: {}; fix the file (Codex cannot read it either) and import again",
            path.display(),
            e.to_string().trim_end()
        )
    })?;
    let import = import(&table, &path, home.as_deref());
    let target = config::cogni_home(env).join("config.toml");
    finish(&import, &args.write, target, None, env)
}

/// The file to read: `--from` (a file, or a directory with config.toml),
/// else `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`.
fn source(from: Option<PathBuf>, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let dir = match from {
        Some(path) if !path.is_dir() => return path,
        Some(dir) => dir,
        None => match env("CODEX_HOME").filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home),
            None => Path::new(&env("HOME").unwrap_or_else(|| "/".into())).join(".codex"),
        },
    };
    dir.join("config.toml")
}

/// What the Codex settings `table`, read from `path`, are in cogni.
pub(super) fn import(table: &toml::Table, path: &Path, home: Option<&Path>) -> Import {
    let mut imp = Import::new(
        "Keep it as $COGNI_HOME/config.toml (`cogni import codex --write` writes it there).",
    );
    imp.source(path);
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut codex = Codex {
        imp,
        dir,
        home,
        providers: Vec::new(),
    };
    if let Some(providers) = table.get("model_providers").and_then(|v| v.as_table()) {
        for (id, provider) in providers {
            codex.provider(id, provider);
        }
    }
    let top_model = table.get("model").and_then(|m| m.as_str());
    if let Some(profiles) = table.get("profiles").and_then(|v| v.as_table()) {
        for (name, profile) in profiles {
            let key = format!("profiles.{name}");
            let Some(profile) = profile.as_table() else {
                codex.imp.skip(key, "not a table");
                continue;
            };
            codex
                .imp
                .set(&key, &["profiles", name], Item::Table(Table::new()));
            let model = profile.get("model").and_then(|m| m.as_str()).or(top_model);
            codex.layer(profile, &["profiles", name], &format!("{key}."), model);
        }
    }
    codex.layer(table, &[], "", top_model);
    codex.imp
}

/// One import under way.
struct Codex<'a> {
    imp: Import,
    /// The Codex file's directory: relative paths are relative to it.
    dir: &'a Path,
    home: Option<&'a Path>,
    /// The `[model_providers]` ids imported.
    providers: Vec<String>,
}

impl Codex<'_> {
    /// The keys of the file (`prefix` empty) or of a profile (`prefix`
    /// its table's path, `key` the prefix of its keys' names), `model`
    /// the model it uses.
    fn layer(&mut self, table: &toml::Table, prefix: &[&str], key: &str, model: Option<&str>) {
        let top = prefix.is_empty();
        for (name, value) in table {
            let at = format!("{key}{name}");
            let path = |cogni: &'static str| -> Vec<&str> {
                prefix.iter().copied().chain(cogni.split('.')).collect()
            };
            if let Some((_, cogni)) = RENAMED.iter().find(|(k, _)| k == name) {
                self.imp.set(&at, &path(cogni), edit_value(value));
            } else if let Some((_, cogni)) = PATHS.iter().find(|(k, _)| k == name) {
                match value.as_str() {
                    Some(file) => {
                        let file = absolute(file, self.dir, self.home);
                        let file = file.display().to_string();
                        self.imp.set(&at, &path(cogni), Value::from(file));
                    }
                    None => self.imp.skip(at, "not a path"),
                }
            } else if let Some((_, cogni)) = FAMILY.iter().find(|(k, _)| k == name) {
                match model {
                    Some(model) => {
                        let family: Vec<&str> = prefix
                            .iter()
                            .copied()
                            .chain(["model_families", model, cogni])
                            .collect();
                        if self.imp.set(&at, &family, edit_value(value)) {
                            self.imp.note(
                                at,
                                format!("as [model_families.\"{model}\"] {cogni}: cogni keeps it per model"),
                            );
                        }
                    }
                    None => self.imp.skip(
                        at,
                        "cogni keeps it per model ([model_families.\"MODEL\"]) and no model is named here",
                    ),
                }
            } else {
                match (name.as_str(), value) {
                    ("model_provider", toml::Value::String(id)) => {
                        self.model_provider(&at, id, &path("provider"))
                    }
                    ("sandbox_workspace_write", toml::Value::Table(t)) => {
                        self.workspace_write(t, &at, &path("sandbox_workspace_write"))
                    }
                    ("shell_environment_policy", toml::Value::Table(t)) => {
                        self.shell_env(t, &at, &path("tools.shell_env"))
                    }
                    ("features", toml::Value::Table(t)) => self.features(t, &at, &path("tools")),
                    ("tools", toml::Value::Table(t)) => {
                        for sub in t.keys() {
                            self.unmapped(&format!("{at}.{sub}"));
                        }
                    }
                    ("mcp_servers", toml::Value::Table(t)) if top => {
                        for (name, server) in t {
                            self.server(name, server);
                        }
                    }
                    ("profile", toml::Value::String(chosen)) if top => {
                        if self.imp.has(&["profiles", chosen]) {
                            self.imp
                                .set(&at, &["profile"], Value::from(chosen.as_str()));
                        } else {
                            self.imp.skip(
                                at,
                                format!("names no profile of this file: no [profiles.{chosen}]"),
                            );
                        }
                    }
                    ("projects", toml::Value::Table(t)) if top => self.projects(t),
                    ("model_providers" | "profiles", _) if top => {}
                    _ => self.unmapped(&at),
                }
            }
        }
    }

    /// `key` is not imported, with the reason [`REASONS`] gives (a
    /// profile's key by its name in the file).
    fn unmapped(&mut self, key: &str) {
        let general = key
            .strip_prefix("profiles.")
            .and_then(|rest| rest.split_once('.'))
            .map_or(key, |(_, k)| k);
        let pattern = general
            .split_once('.')
            .and_then(|(table, rest)| {
                let (_, sub) = rest.rsplit_once('.')?;
                Some(format!("{table}.*.{sub}"))
            })
            .unwrap_or_default();
        let why = REASONS
            .iter()
            .find(|(k, _)| *k == general || *k == pattern)
            .map_or(NO_SUCH, |(_, why)| why);
        self.imp.skip(key, why);
    }

    /// `model_provider = "ID"`.
    fn model_provider(&mut self, key: &str, id: &str, path: &[&str]) {
        let cogni = if self.providers.iter().any(|p| p == id) {
            id
        } else if let Some((_, cogni)) = CODEX_PROVIDERS.iter().find(|(k, _)| *k == id) {
            if *cogni == "lmstudio" {
                self.lmstudio();
            } else if *cogni != id {
                self.imp.note(
                    key,
                    format!("`{id}` is cogni's `{cogni}` (Ollama's native API at OLLAMA_HOST)"),
                );
            }
            cogni
        } else {
            self.imp.skip(
                key,
                format!(
                    "`{id}` is neither a Codex built-in nor a [model_providers.{id}] of this file that \
                     cogni could import"
                ),
            );
            return;
        };
        self.imp.set(key, path, Value::from(cogni));
    }

    /// LM Studio, a Codex built-in, as a provider cogni declares.
    fn lmstudio(&mut self) {
        if self.imp.has(&["model_providers", "lmstudio"]) {
            return;
        }
        let mut table = Table::new();
        table.insert("name", toml_edit::value("LM Studio"));
        table.insert("base_url", toml_edit::value(LMSTUDIO_URL));
        table.insert("default_family", toml_edit::value("generic"));
        let key = "model_provider = \"lmstudio\"";
        if self
            .imp
            .set(key, &["model_providers", "lmstudio"], Item::Table(table))
        {
            self.imp.note(
                key,
                format!("Codex's built-in LM Studio is declared as [model_providers.lmstudio] at {LMSTUDIO_URL}"),
            );
        }
    }

    /// `[model_providers.ID]`.
    fn provider(&mut self, id: &str, value: &toml::Value) {
        let at = format!("model_providers.{id}");
        let Some(provider) = value.as_table() else {
            self.imp.skip(at, "not a table");
            return;
        };
        if CODEX_PROVIDERS.iter().any(|(k, _)| *k == id) {
            self.imp.skip(
                at,
                "Codex ignores a [model_providers] table that reuses a built-in id, so it is not imported either",
            );
            return;
        }
        let mut table = Table::new();
        for (name, value) in provider {
            match PROVIDER_KEYS.iter().find(|(k, _)| k == name) {
                Some((_, cogni)) => {
                    table.insert(cogni, Item::Value(edit_value(value)));
                }
                None => self.unmapped(&format!("{at}.{name}")),
            }
        }
        let builtin = config::BUILTIN_PROVIDERS.contains(&id);
        if !builtin && !table.contains_key("base_url") {
            self.imp
                .skip(at, "a provider cogni does not know needs base_url");
            return;
        }
        if self
            .imp
            .set(&at, &["model_providers", id], Item::Table(table))
        {
            if builtin {
                self.imp.note(
                    &at,
                    format!("`{id}` is one of cogni's built-in providers: these keys adjust it"),
                );
            }
            self.providers.push(id.to_string());
        }
    }

    /// `[sandbox_workspace_write]`.
    fn workspace_write(&mut self, table: &toml::Table, key: &str, path: &[&str]) {
        for (name, value) in table {
            let at = format!("{key}.{name}");
            let mut cogni = path.to_vec();
            cogni.push(name);
            match (name.as_str(), value) {
                ("network_access", _) => {
                    self.imp.set(&at, &cogni, edit_value(value));
                }
                ("writable_roots", toml::Value::Array(roots)) => {
                    let roots: Vec<String> = roots
                        .iter()
                        .filter_map(|r| r.as_str())
                        .map(|r| absolute(r, self.dir, self.home).display().to_string())
                        .collect();
                    self.imp
                        .set(&at, &cogni, strings(roots.iter().map(String::as_str)));
                }
                _ => self.unmapped(&at),
            }
        }
    }

    /// `[shell_environment_policy]`: `[tools.shell_env]` has its keys.
    fn shell_env(&mut self, table: &toml::Table, key: &str, path: &[&str]) {
        for (name, value) in table {
            let at = format!("{key}.{name}");
            if SHELL_ENV_KEYS.contains(&name.as_str()) {
                let mut cogni = path.to_vec();
                cogni.push(name);
                self.imp.set(&at, &cogni, edit_value(value));
            } else {
                self.unmapped(&at);
            }
        }
    }

    /// `[features]`: `apply_patch_freeform` chooses cogni's freeform
    /// apply_patch; the others are Codex's own.
    fn features(&mut self, table: &toml::Table, key: &str, tools: &[&str]) {
        for (name, value) in table {
            let at = format!("{key}.{name}");
            match (name.as_str(), value) {
                ("apply_patch_freeform", toml::Value::Boolean(true)) => {
                    let mut path = tools.to_vec();
                    path.push("edit_tool");
                    if self
                        .imp
                        .set(&at, &path, Value::from("apply_patch_freeform"))
                    {
                        self.imp.note(
                            at,
                            "as [tools] edit_tool = \"apply_patch_freeform\", for every model",
                        );
                    }
                }
                ("apply_patch_freeform", _) => {}
                _ => self.unmapped(&at),
            }
        }
    }

    /// `[mcp_servers.NAME]`: cogni takes Codex's keys.
    fn server(&mut self, name: &str, value: &toml::Value) {
        let at = format!("mcp_servers.{name}");
        let Some(server) = value.as_table() else {
            self.imp.skip(at, "not a table");
            return;
        };
        if server.contains_key("bearer_token") {
            self.imp.skip(
                at,
                "its token is written in the file (bearer_token), which cogni refuses: put it in a \
                 variable, set bearer_token_env_var and add the server",
            );
            return;
        }
        let mut table = Table::new();
        for (key, value) in server {
            match (key.as_str(), value) {
                (k, _) if SERVER_KEYS.contains(&k) => {
                    table.insert(k, Item::Value(edit_value(value)));
                }
                ("cwd", toml::Value::String(dir)) => {
                    let dir = absolute(dir, self.dir, self.home);
                    table.insert("cwd", toml_edit::value(dir.display().to_string()));
                }
                ("startup_timeout_ms", v) if v.as_integer().is_some() || v.as_float().is_some() => {
                    let ms = v
                        .as_float()
                        .or(v.as_integer().map(|i| i as f64))
                        .unwrap_or(0.0);
                    table.insert("startup_timeout_sec", toml_edit::value(ms / 1000.0));
                }
                _ => self.unmapped(&format!("{at}.{key}")),
            }
        }
        let cogni = server_name(name);
        let id = cogni.as_deref().unwrap_or(name);
        if self.imp.set(&at, &["mcp_servers", id], Item::Table(table)) {
            if let Some(id) = cogni {
                self.imp.note(
                    at,
                    format!("named `{id}`: a server's name holds only letters, digits, `_` and `-` (its tools are mcp__{id}__TOOL)"),
                );
            }
        }
    }

    /// `[projects."PATH"] trust_level = "trusted"`: cogni's
    /// `trusted_projects`.
    fn projects(&mut self, table: &toml::Table) {
        let trusted: Vec<&str> = table
            .iter()
            .filter(|(_, p)| p.get("trust_level").and_then(|t| t.as_str()) == Some("trusted"))
            .map(|(dir, _)| dir.as_str())
            .collect();
        if !trusted.is_empty() {
            self.imp
                .set("projects", &["trusted_projects"], strings(trusted));
        }
    }
}

/// A value of Codex's file as a toml_edit value (inline tables for
/// tables; a date as its text).
fn edit_value(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => s.as_str().into(),
        toml::Value::Integer(i) => (*i).into(),
        toml::Value::Float(f) => (*f).into(),
        toml::Value::Boolean(b) => (*b).into(),
        toml::Value::Datetime(d) => d.to_string().into(),
        toml::Value::Array(items) => Value::Array(items.iter().map(edit_value).collect()),
        toml::Value::Table(table) => Value::InlineTable(
            table
                .iter()
                .map(|(k, v)| (k.as_str(), edit_value(v)))
                .collect(),
        ),
    }
}
