//! `[mcp_servers.NAME]` and `[mcp]`: the keys Codex users already write
//! (docs/mcp.md), checked into [`McpConfig`].

use super::{err, ConfigError};
use cogni_mcp::config::{DEFAULT_MAX_EAGER_TOOLS, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT};
use cogni_mcp::{McpConfig, ServerConfig, Transport};
use cogni_tools::fs::{read_text_limited, SPEC_FILE_MAX_BYTES};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

cogni_protocol::layered! {
    /// `[mcp]`
    #[derive(Debug, Clone, Default, Deserialize)]
    pub struct McpFile {
        /// More MCP tools than this are offered through `search_tools`.
        pub max_eager_tools: Option<usize>,
    }
}

/// `[mcp_servers.NAME]` as written; every key optional, checked by
/// [`mcp_config`].
#[derive(Debug, Clone, Default, Deserialize)]
pub struct McpServerFile {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub env_vars: Option<Vec<String>>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    pub http_headers: Option<BTreeMap<String, String>>,
    pub env_http_headers: Option<BTreeMap<String, String>>,
    pub bearer_token_env_var: Option<String>,
    /// Refused: read only to say so, naming the fix.
    pub bearer_token: Option<toml::Value>,
    pub enabled: Option<bool>,
    pub required: Option<bool>,
    pub startup_timeout_sec: Option<f64>,
    pub tool_timeout_sec: Option<f64>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
    pub trusted_tools: Option<Vec<String>>,
}

// A later layer's server replaces one of the same name whole.
cogni_protocol::replaced_whole!(McpServerFile);

impl McpServerFile {
    /// A relative `cwd` is relative to the file's directory.
    pub(super) fn resolve_paths(&mut self, dir: &Path) {
        if let Some(cwd) = self.cwd.as_mut().filter(|c| c.is_relative()) {
            *cwd = dir.join(&*cwd);
        }
    }
}

/// Every server of the merged layers, checked; errors name the key.
pub(super) fn mcp_config(
    servers: &BTreeMap<String, McpServerFile>,
    file: Option<&McpFile>,
) -> Result<McpConfig, ConfigError> {
    let servers = servers
        .iter()
        .map(|(name, server)| server_config(name, server))
        .collect::<Result<_, _>>()?;
    Ok(McpConfig {
        servers,
        max_eager_tools: file
            .and_then(|f| f.max_eager_tools)
            .unwrap_or(DEFAULT_MAX_EAGER_TOOLS),
    })
}

fn seconds(
    at: &str,
    key: &str,
    value: Option<f64>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => err(format!(
            "{at}.{key}: must be a number of seconds above 0 (at most a day), got {s}"
        )),
    }
}

fn server_config(name: &str, s: &McpServerFile) -> Result<ServerConfig, ConfigError> {
    let at = format!("mcp_servers.{name}");
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return err(format!(
            "{at}: a server's name may hold only letters, digits, `_` and `-` (it is part of its tools' names)"
        ));
    }
    if s.bearer_token.is_some() {
        return err(format!(
            "{at}.bearer_token: a token written in a config file is refused (config files get copied, shared and committed); \
             put it in an environment variable and set `bearer_token_env_var = \"VAR\"` instead"
        ));
    }
    let stdio_keys = [
        ("args", s.args.is_some()),
        ("env", s.env.is_some()),
        ("env_vars", s.env_vars.is_some()),
        ("cwd", s.cwd.is_some()),
    ];
    let http_keys = [
        ("http_headers", s.http_headers.is_some()),
        ("env_http_headers", s.env_http_headers.is_some()),
        ("bearer_token_env_var", s.bearer_token_env_var.is_some()),
    ];
    let transport = match (&s.command, &s.url) {
        (Some(_), Some(_)) => {
            return err(format!(
                "{at}: set `command` (a stdio server) or `url` (a streamable HTTP server), not both"
            ))
        }
        (None, None) => {
            return err(format!(
                "{at}: set `command` (a stdio server) or `url` (a streamable HTTP server)"
            ))
        }
        (Some(command), None) => {
            if let Some((key, _)) = http_keys.iter().find(|(_, set)| *set) {
                return err(format!("{at}.{key}: only a server with a `url` takes it"));
            }
            if command.trim().is_empty() {
                return err(format!("{at}.command: is empty"));
            }
            Transport::Stdio {
                command: command.clone(),
                args: s.args.clone().unwrap_or_default(),
                env: s.env.clone().unwrap_or_default(),
                env_vars: s.env_vars.clone().unwrap_or_default(),
                cwd: s.cwd.clone(),
            }
        }
        (None, Some(url)) => {
            if let Some((key, _)) = stdio_keys.iter().find(|(_, set)| *set) {
                return err(format!(
                    "{at}.{key}: only a server with a `command` takes it"
                ));
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return err(format!(
                    "{at}.url: `{url}` is not an http:// or https:// URL"
                ));
            }
            let headers = s.http_headers.clone().unwrap_or_default();
            if let Some(header) = headers
                .keys()
                .find(|h| h.eq_ignore_ascii_case("authorization"))
            {
                return err(format!(
                    "{at}.http_headers.{header}: a credential written in a config file is refused; \
                     set `bearer_token_env_var = \"VAR\"` (or `env_http_headers = {{ {header} = \"VAR\" }}`) instead"
                ));
            }
            Transport::Http {
                url: url.clone(),
                headers,
                env_headers: s.env_http_headers.clone().unwrap_or_default(),
                bearer_token_env_var: s.bearer_token_env_var.clone(),
            }
        }
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled: s.enabled.unwrap_or(true),
        required: s.required.unwrap_or(false),
        startup_timeout: seconds(
            &at,
            "startup_timeout_sec",
            s.startup_timeout_sec,
            DEFAULT_STARTUP_TIMEOUT,
        )?,
        tool_timeout: seconds(
            &at,
            "tool_timeout_sec",
            s.tool_timeout_sec,
            DEFAULT_TOOL_TIMEOUT,
        )?,
        enabled_tools: s.enabled_tools.clone(),
        disabled_tools: s.disabled_tools.clone().unwrap_or_default(),
        trusted_tools: s.trusted_tools.clone().unwrap_or_default(),
    })
}

/// A server for `cogni mcp add`.
#[derive(Debug, Clone)]
pub enum NewServer {
    /// A process cogni starts (`cogni mcp add NAME -- CMD ARGS...`).
    Stdio {
        /// The command and its arguments (written as `command` and `args`).
        argv: Vec<String>,
        /// Variables to set for it (written as `env`).
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint (`url`).
        url: String,
        /// The variable holding its bearer token
        /// (`bearer_token_env_var`), never the token itself.
        bearer_token_env_var: Option<String>,
    },
}

/// Write `[mcp_servers.NAME]` into `$COGNI_HOME/config.toml` (created
/// when missing), keeping the rest of the file as it is, comments too.
/// The result is checked before it is written (atomically). Returns
/// whether a server of that name was replaced.
pub fn add_server(home: &Path, name: &str, server: &NewServer) -> Result<bool, ConfigError> {
    let mut table = toml_edit::Table::new();
    match server {
        NewServer::Stdio { argv, env } => {
            let (command, args) = argv
                .split_first()
                .ok_or_else(|| ConfigError("no command given (after `--`)".into()))?;
            table.insert("command", toml_edit::value(command.as_str()));
            if !args.is_empty() {
                table.insert(
                    "args",
                    toml_edit::value(args.iter().collect::<toml_edit::Array>()),
                );
            }
            if !env.is_empty() {
                let mut inline = toml_edit::InlineTable::new();
                for (k, v) in env {
                    inline.insert(k, v.as_str().into());
                }
                table.insert("env", toml_edit::value(inline));
            }
        }
        NewServer::Http {
            url,
            bearer_token_env_var,
        } => {
            table.insert("url", toml_edit::value(url.as_str()));
            if let Some(var) = bearer_token_env_var {
                table.insert("bearer_token_env_var", toml_edit::value(var.as_str()));
            }
        }
    }
    edit_user_config(home, |doc| {
        let servers = doc
            .entry("mcp_servers")
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_mut()
            .ok_or_else(|| ConfigError("`mcp_servers` is not a table".into()))?;
        Ok(servers
            .insert(name, toml_edit::Item::Table(table))
            .is_some())
    })
}

/// Remove `[mcp_servers.NAME]` from `$COGNI_HOME/config.toml`, keeping
/// the rest of the file as it is.
pub fn remove_server(home: &Path, name: &str) -> Result<(), ConfigError> {
    edit_user_config(home, |doc| {
        let removed = doc
            .get_mut("mcp_servers")
            .and_then(|s| s.as_table_like_mut())
            .and_then(|s| s.remove(name));
        match removed {
            Some(_) => Ok(()),
            None => err(format!(
                "no MCP server `{name}` in {}",
                home.join("config.toml").display()
            )),
        }
    })
}

/// Change the user's config file with `change`, check the result as
/// cogni would load it, and write it atomically.
fn edit_user_config<T>(
    home: &Path,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    let path = home.join("config.toml");
    let source = match read_text_limited(&path, SPEC_FILE_MAX_BYTES) {
        Ok(text) => text,
        Err(e) if e.is_missing() => String::new(),
        Err(e) => return err(e.to_string()),
    };
    let mut doc: toml_edit::DocumentMut = source
        .parse()
        .map_err(|e| ConfigError(format!("{}: invalid TOML: {e}", path.display())))?;
    let out = change(&mut doc)?;
    let text = doc.to_string();
    let file = super::ConfigFile::parse(&path, &text)?;
    mcp_config(&file.mcp_servers, file.mcp.as_ref())?;
    std::fs::create_dir_all(home).map_err(|e| ConfigError(format!("{}: {e}", home.display())))?;
    cogni_tools::fs::write_atomic(&path, text.as_bytes())
        .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
    Ok(out)
}
