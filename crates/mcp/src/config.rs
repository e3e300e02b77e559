//! What a session knows of its MCP servers before starting them: the
//! checked `[mcp_servers.NAME]` tables and `[mcp]` (the config layer
//! builds them, `crate::config`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Default of `startup_timeout_sec`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of `tool_timeout_sec`.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of `[mcp] max_eager_tools`.
pub const DEFAULT_MAX_EAGER_TOOLS: usize = 40;

/// `[mcp]` and every `[mcp_servers.NAME]`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// By name; disabled ones too (`cogni mcp list` shows them).
    pub servers: Vec<ServerConfig>,
    /// With more MCP tools than this, they are offered through
    /// `search_tools` instead of all at once.
    pub max_eager_tools: usize,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            servers: Vec::new(),
            max_eager_tools: DEFAULT_MAX_EAGER_TOOLS,
        }
    }
}

impl McpConfig {
    /// The servers a session starts.
    pub fn enabled(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|s| s.enabled)
    }
}

/// One `[mcp_servers.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The NAME of `[mcp_servers.NAME]`; its tools are `mcp__NAME__TOOL`.
    pub name: String,
    /// How cogni reaches it.
    pub transport: Transport,
    /// `enabled` (default true): false keeps the entry but starts nothing.
    pub enabled: bool,
    /// A required server that does not start fails the session.
    pub required: bool,
    /// Start, handshake and tool list, all together.
    pub startup_timeout: Duration,
    /// One tool call.
    pub tool_timeout: Duration,
    /// Only these of its tools (by the server's names), when set.
    pub enabled_tools: Option<Vec<String>>,
    /// Never these.
    pub disabled_tools: Vec<String>,
    /// These only read: they run without asking under the `untrusted`
    /// policy and alongside other read-only calls.
    pub trusted_tools: Vec<String>,
}

impl ServerConfig {
    /// Whether the tool the server calls `tool` is offered.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// How cogni reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A process cogni starts, spoken to on its stdin and stdout.
    Stdio {
        /// The program to start (`command`).
        command: String,
        /// Its arguments (`args`).
        args: Vec<String>,
        /// Set on top of the stripped child environment.
        env: BTreeMap<String, String>,
        /// Variables of cogni's own environment passed as they are (also
        /// ones the child environment would strip, such as tokens).
        env_vars: Vec<String>,
        /// Default: the session's working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint (`url`).
        url: String,
        /// Header -> value, sent as written.
        headers: BTreeMap<String, String>,
        /// Header -> the environment variable holding its value.
        env_headers: BTreeMap<String, String>,
        /// The environment variable holding the bearer token.
        bearer_token_env_var: Option<String>,
    },
}

impl Transport {
    /// The command line or the URL, for listings.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => std::iter::once(command)
                .chain(args)
                .map(|a| {
                    if a.contains(char::is_whitespace) {
                        format!("{a:?}")
                    } else {
                        a.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_and_descriptions() {
        let mut server = ServerConfig {
            name: "fs".into(),
            transport: Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "a b".into()],
                env: BTreeMap::new(),
                env_vars: Vec::new(),
                cwd: None,
            },
            enabled: true,
            required: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: vec!["write_file".into()],
            trusted_tools: Vec::new(),
        };
        assert!(server.offers("read_file"));
        assert!(!server.offers("write_file"));
        server.enabled_tools = Some(vec!["list_directory".into(), "write_file".into()]);
        assert!(!server.offers("read_file"));
        assert!(server.offers("list_directory"));
        assert!(!server.offers("write_file"));
        assert_eq!(server.transport.describe(), "npx -y \"a b\"");
    }
}
