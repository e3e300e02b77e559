//! A started server: its connection (replaced once when it dies), calls
//! with their timeout, and its tools as the session's [`Tool`]s.

use super::client::{self, Connection, Launch};
use super::config::ServerConfig;
use super::output;
use cogni_protocol::{ToolFormat, ToolSpec};
pub use cogni_tools::{truncate, Tool, ToolContext, ToolInput, ToolResult};
use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::ServiceError;
use std::sync::Arc;
use tokio::sync::Mutex;

/// Times a server that died is started again in one session.
const RESTARTS: u32 = 1;

/// A server the session started.
pub struct Server {
    pub(super) config: ServerConfig,
    launch: Launch,
    state: Mutex<State>,
}

struct State {
    /// `None` once it died and could not (or may no more) be restarted.
    connection: Option<Arc<Connection>>,
    restarts_left: u32,
    /// Why it is down.
    down: Option<String>,
}

impl Server {
    pub(super) fn new(config: ServerConfig, launch: Launch, connection: Connection) -> Self {
        Server {
            config,
            launch,
            state: Mutex::new(State {
                connection: Some(Arc::new(connection)),
                restarts_left: RESTARTS,
                down: None,
            }),
        }
    }

    /// The server's name in config.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Why the server is down, if it is.
    pub async fn down(&self) -> Option<String> {
        let state = self.state.lock().await;
        match &state.connection {
            Some(c) => c.gone(),
            None => state.down.clone(),
        }
    }

    /// Call `tool` with `arguments` within `tool_timeout`: its output as
    /// the model reads it, and whether it is an error.
    pub(super) async fn call(&self, tool: &str, arguments: JsonObject) -> output::Rendered {
        let failed = |text: String| output::Rendered {
            text,
            is_error: true,
            images: Vec::new(),
        };
        let connection = {
            let state = self.state.lock().await;
            match &state.connection {
                Some(c) => c.clone(),
                None => {
                    return failed(format!(
                        "MCP server `{}` is not running ({}); nothing was called",
                        self.config.name,
                        state.down.as_deref().unwrap_or("it stopped")
                    ))
                }
            }
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let timeout = self.config.tool_timeout;
        let result =
            tokio::time::timeout(timeout, connection.peer().call_tool(params.clone())).await;
        match result {
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                // Images are decoded and scaled off the async threads.
                Ok(json) => tokio::task::spawn_blocking(move || output::render(&json))
                    .await
                    .unwrap_or_else(|e| failed(format!("the result could not be read: {e}"))),
                Err(e) => failed(format!("the result could not be read: {e}")),
            },
            Err(_) => failed(format!(
                    "`{tool}` of MCP server `{}` did not answer within {} s (tool_timeout_sec); the call was cancelled",
                    self.config.name,
                    timeout.as_secs_f64()
                )),
            Ok(Err(ServiceError::McpError(e))) => failed(format!(
                    "MCP server `{}` answered with an error: {}",
                    self.config.name, e.message
                )),
            Ok(Err(e)) => {
                let closed = matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                );
                if !closed && connection.gone().is_none() {
                    return failed(format!("calling MCP server `{}` failed: {e}", self.config.name));
                }
                let why = connection.ended().await;
                let after = self.restart(&connection, &why).await;
                failed(format!(
                        "MCP server `{}` stopped during the call ({why}); {after}",
                        self.config.name
                    ))
            }
        }
    }

    /// Replace `dead` (unless another call did already), once per
    /// session. Says what happened, for the model.
    async fn restart(&self, dead: &Arc<Connection>, why: &str) -> String {
        let mut state = self.state.lock().await;
        match &state.connection {
            Some(c) if !Arc::ptr_eq(c, dead) => {
                return "it was restarted: call again if the call is still needed".into()
            }
            None => return "it is not running".into(),
            Some(_) => {}
        }
        let old = state.connection.take();
        if state.restarts_left == 0 {
            state.down = Some(format!("{why}; it was restarted once already"));
            return "it was restarted once already and is not started again".into();
        }
        state.restarts_left -= 1;
        drop(old);
        let started = tokio::time::timeout(
            self.config.startup_timeout,
            client::connect(&self.config, &self.launch),
        )
        .await;
        match started {
            Ok(Ok((connection, _tools))) => {
                state.connection = Some(Arc::new(connection));
                "it was restarted: call again if the call is still needed".into()
            }
            Ok(Err(e)) => {
                state.down = Some(format!("it could not be restarted: {e}"));
                format!("it could not be restarted: {e}")
            }
            Err(_) => {
                let why = format!(
                    "it did not start again within {} s (startup_timeout_sec)",
                    self.config.startup_timeout.as_secs_f64()
                );
                state.down = Some(why.clone());
                why
            }
        }
    }

    /// Stop it (the protocol side, then the process).
    pub(super) async fn shut_down(&self) {
        let connection = self.state.lock().await.connection.take();
        if let Some(connection) = connection {
            match Arc::try_unwrap(connection) {
                Ok(connection) => connection.close().await,
                // A call still holds it: dropping the last hold kills it.
                Err(shared) => drop(shared),
            }
        }
    }
}

/// One tool of a server, as the session's tool `mcp__SERVER__TOOL`.
pub(super) struct McpTool {
    server: Arc<Server>,
    /// The server's name for it.
    tool: String,
    spec: ToolSpec,
}

impl McpTool {
    /// `info` offered as `name`; read-only when the server's
    /// `trusted_tools` says so.
    pub(super) fn new(server: Arc<Server>, name: String, info: &rmcp::model::Tool) -> Self {
        let mut parameters = serde_json::Value::Object((*info.input_schema).clone());
        if let Some(schema) = parameters.as_object_mut() {
            schema.remove("$schema");
            schema
                .entry("type")
                .or_insert_with(|| serde_json::json!("object"));
            schema
                .entry("properties")
                .or_insert_with(|| serde_json::json!({}));
        }
        let description = info
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .or(info.title.as_deref())
            .unwrap_or("(no description)")
            .to_string();
        let read_only = server.config.trusted_tools.iter().any(|t| *t == info.name);
        McpTool {
            spec: ToolSpec {
                name,
                description,
                format: ToolFormat::Function { parameters },
                read_only,
            },
            tool: info.name.to_string(),
            server,
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let arguments = match input {
                ToolInput::Json(serde_json::Value::Object(map)) => map,
                other => {
                    return ToolResult::error(format!(
                        "arguments to `{}` must be a JSON object, got {other:?}",
                        self.spec.name
                    ))
                }
            };
            let rendered = self.server.call(&self.tool, arguments).await;
            ToolResult {
                content: truncate::head_tail(&rendered.text, ctx.config.output_limits()),
                is_error: rendered.is_error,
                images: rendered.images,
                ..Default::default()
            }
        })
    }
}
