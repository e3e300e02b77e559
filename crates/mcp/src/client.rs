//! One connection to one server, through rmcp: a stdio process cogni
//! starts (supervised by `tools::exec`) or a streamable HTTP endpoint.

use super::config::{ServerConfig, Transport};
use cogni_process::truncate::Limits;
use cogni_process::{self as exec, Service};
use cogni_tools::env::ShellEnvPolicy;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool as McpToolInfo};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a server's stderr may keep in memory.
const STDERR_LIMIT: usize = 64 * 1024;
/// What an error message shows of it.
const STDERR_SHOWN: Limits = Limits {
    max_bytes: 2000,
    max_lines: 20,
};
/// Between SIGTERM and SIGKILL when a server is stopped.
const STOP_GRACE: Duration = Duration::from_secs(1);
/// The longest closing the protocol side may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Where a server starts: the session's working directory and child
/// environment policy.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Where a stdio server starts unless its `cwd` says otherwise.
    pub cwd: PathBuf,
    /// The policy its environment is built with (`[tools.shell_env]`).
    pub env: ShellEnvPolicy,
    /// The session's pinned files: a server whose program in the workspace
    /// changed during the session is not started.
    pub pins: std::sync::Arc<cogni_protocol::Pins>,
}

/// A live connection.
pub(super) struct Connection {
    client: RunningService<RoleClient, ClientConfig>,
    /// The process of a stdio server.
    process: Option<std::sync::Mutex<Service>>,
}

impl Connection {
    pub(super) fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.client.peer()
    }

    /// Why the connection is gone, when it is: how the process ended and
    /// what it said on stderr.
    pub(super) fn gone(&self) -> Option<String> {
        let Some(process) = &self.process else {
            return self
                .client
                .is_closed()
                .then(|| "the connection closed".to_string());
        };
        let mut process = process.lock().ok()?;
        let ended = process.exited();
        if ended.is_none() && !self.client.is_closed() {
            return None;
        }
        Some(describe_end(&process, ended))
    }

    /// Why the connection ended, after the transport said it did: how the
    /// process ended, once it has (given up to a second to finish dying).
    pub(super) async fn ended(&self) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            let exited = match &self.process {
                Some(p) => p.lock().ok().and_then(|mut p| p.exited()).is_some(),
                None => true,
            };
            if exited || tokio::time::Instant::now() >= deadline {
                return self
                    .gone()
                    .unwrap_or_else(|| "the server closed its connection".to_string());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Close the protocol side, then stop the process (SIGTERM, then
    /// SIGKILL).
    pub(super) async fn close(self) {
        let Connection { client, process } = self;
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, client.cancel()).await;
        if let Some(process) = process.and_then(|p| p.into_inner().ok()) {
            process.stop(STOP_GRACE).await;
        }
    }
}

fn describe_end(process: &Service, ended: Option<exec::Termination>) -> String {
    let how = match ended {
        Some(exec::Termination::Exited(code)) => format!("the server exited with code {code}"),
        Some(exec::Termination::Signaled(signal)) => {
            format!("the server was killed by signal {signal}")
        }
        None => "the server closed its connection".to_string(),
    };
    let stderr = process.stderr(STDERR_SHOWN);
    let stderr = stderr.trim();
    if stderr.is_empty() {
        how
    } else {
        format!("{how}; its stderr: {stderr}")
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("cogni", env!("CARGO_PKG_VERSION")),
    )
}

/// Connect to `config`'s server and list its tools. The caller bounds the
/// time (`startup_timeout`).
pub(super) async fn connect(
    config: &ServerConfig,
    launch: &Launch,
) -> Result<(Connection, Vec<McpToolInfo>), String> {
    let connection = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
        } => {
            let mut child_env = launch
                .env
                .child_env()
                .map_err(|e| format!("its environment: {e}"))?;
            for var in env_vars {
                if let Ok(value) = std::env::var(var) {
                    child_env.insert(var.clone(), value);
                }
            }
            child_env.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
            let argv: Vec<String> = std::iter::once(command).chain(args).cloned().collect();
            let dir = cwd.as_deref().unwrap_or(&launch.cwd);
            let named = cogni_sandbox::pinned::Named::argv(argv.iter().map(String::as_str), dir);
            cogni_sandbox::pinned::check(&launch.pins, &named)?;
            stdio(&argv, dir, &child_env).await?
        }
        Transport::Http {
            url,
            headers,
            env_headers,
            bearer_token_env_var,
        } => http(url, headers, env_headers, bearer_token_env_var.as_deref()).await?,
    };
    let tools = match connection.peer().list_all_tools().await {
        Ok(tools) => tools,
        Err(e) => {
            let why = connection
                .gone()
                .unwrap_or_else(|| format!("listing its tools failed: {e}"));
            connection.close().await;
            return Err(why);
        }
    };
    Ok((connection, tools))
}

async fn stdio(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Connection, String> {
    let (process, pipes) =
        Service::spawn(argv, cwd, env, STDERR_LIMIT).map_err(|e| e.to_string())?;
    match rmcp::serve_client(client_config(), (pipes.stdout, pipes.stdin)).await {
        Ok(client) => Ok(Connection {
            client,
            process: Some(std::sync::Mutex::new(process)),
        }),
        Err(e) => {
            // Let what it printed before it failed arrive.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut process = process;
            let ended = process.exited();
            let why = match ended {
                Some(_) => describe_end(&process, ended),
                None => format!("the handshake failed: {e}"),
            };
            process.stop(STOP_GRACE).await;
            Err(why)
        }
    }
}

async fn http(
    url: &str,
    headers: &BTreeMap<String, String>,
    env_headers: &BTreeMap<String, String>,
    bearer_token_env_var: Option<&str>,
) -> Result<Connection, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    let env = |var: &str, what: &str| {
        std::env::var(var).map_err(|_| format!("${var} ({what}) is not set"))
    };
    let mut custom = HashMap::new();
    let from_env = env_headers
        .iter()
        .map(|(name, var)| Ok((name, env(var, &format!("header {name}"))?)))
        .collect::<Result<Vec<_>, String>>()?;
    for (name, value) in headers.iter().chain(from_env.iter().map(|(n, v)| (*n, v))) {
        let header = HeaderName::try_from(name.as_str())
            .map_err(|e| format!("header name `{name}`: {e}"))?;
        let value =
            HeaderValue::try_from(value.as_str()).map_err(|e| format!("header `{name}`: {e}"))?;
        custom.insert(header, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    if let Some(var) = bearer_token_env_var {
        config = config.auth_header(env(var, "bearer_token_env_var")?);
    }
    // rmcp's reqwest uses rustls without a crypto provider of its own.
    #[cfg(target_os = "linux")]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = rmcp::serve_client(client_config(), transport)
        .await
        .map_err(|e| format!("the handshake failed: {e}"))?;
    Ok(Connection {
        client,
        process: None,
    })
}
