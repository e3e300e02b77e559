//! The HTTP side every wire API shares: one endpoint (URL, headers, auth,
//! client), and a driver that connects, retries, decodes the body (SSE or
//! NDJSON) and hands each frame to the wire API's [`WireParser`].
//!
//! Retried, with backoff and jitter (each retry announced as
//! [`ResponseEvent::Retrying`] before the sleep): connection failures, 429
//! (except an exhausted quota) and 5xx, a stall or reset at any point of the
//! stream, a stream that ends without its terminal event, and in-stream
//! errors the parser marks retryable (e.g. Anthropic's `overloaded_error`).
//! A retry after part of a response arrived restarts the response: the
//! consumer must drop what it collected of the failed attempt (the engine
//! does, on `Retrying`). Never retried: other statuses (401/403 become
//! [`ProviderError::Auth`], after one fresh token when it came from an
//! `auth_command`; a context overflow becomes
//! [`ProviderError::ContextOverflow`]: in a status when the wire API's
//! classifier, [`Wire::overflow`], says so, inside a stream when its
//! parser flags the error with [`FrameError::context_overflow`] using the
//! same classifier), malformed frames, and a body over the size cap. A 404
//! names the URL and the setting that makes it. When retries run out the
//! error is [`ProviderError::RetriesExhausted`]. Error texts never contain
//! the key.
//!
//! A wire API describes its endpoint once, as a [`Wire`] (path, auth,
//! headers, framing, advice added to every error, and which errors are
//! context overflows), and may make
//! one-off JSON requests to the same server, e.g. to list models
//! ([`Endpoint::request_json`]).

use super::ndjson;
use super::retry::{self, Backoff, Jitter};
use super::sse::{self, SseError, SseEvent};
use super::{ProviderError, ProviderInfo, ResponseEvent, ResponseStream};
use cogni_process as exec;
use cogni_protocol::{error_chain, ToolCall};
use futures::stream::BoxStream;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// Longest server error message kept in an error, in characters.
pub(crate) const MAX_ERROR_CHARS: usize = 500;
/// Most bytes of an error response body that are read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Most bytes of a plain JSON answer (e.g. a model list) that are read.
const MAX_JSON_BODY: usize = 8 * 1024 * 1024;
/// Most bytes one streamed response may carry: a runaway stream ends with
/// an error instead of filling memory.
pub const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// How the key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the value of this header (`x-api-key`, `api-key`).
    Header(&'static str),
}

/// How the response body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-sent events.
    Sse,
    /// One JSON object per line (Ollama).
    Ndjson,
}

/// A frame the parser could not accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    /// What was wrong with the frame, or the error the server streamed.
    pub message: String,
    /// Whether a new attempt may succeed (e.g. the server was overloaded).
    pub retryable: bool,
    /// The server said the request exceeds the model's context window
    /// (reported as [`ProviderError::ContextOverflow`], never retried).
    pub context_overflow: bool,
}

impl FrameError {
    /// An error that ends the request: no retry can help.
    pub fn fatal(message: impl Into<String>) -> Self {
        FrameError {
            message: message.into(),
            retryable: false,
            context_overflow: false,
        }
    }

    /// An error a new attempt may not have (an overloaded server).
    pub fn retryable(message: impl Into<String>) -> Self {
        FrameError {
            retryable: true,
            ..FrameError::fatal(message)
        }
    }

    /// The stream said the request is larger than the context window.
    pub fn context_overflow(message: impl Into<String>) -> Self {
        FrameError {
            context_overflow: true,
            ..FrameError::fatal(message)
        }
    }
}

/// A wire API's stream grammar: frames in, neutral events out.
pub trait WireParser: Send {
    /// Handle one frame (an SSE event, or an NDJSON line with an empty
    /// `event`), queueing what it produces. `Ok(true)` after the terminal
    /// event, which must have queued [`ResponseEvent::Completed`].
    fn on_frame(
        &mut self,
        frame: &SseEvent,
        out: &mut VecDeque<ResponseEvent>,
    ) -> Result<bool, FrameError>;

    /// The terminal event's name, for the error when a stream ends without
    /// it (e.g. "`data: [DONE]`").
    fn terminal(&self) -> &'static str;
}

/// The frame's data (trimmed, not empty) as `T`; a frame that is not a
/// `T` is a fatal error naming `what` it should have been and quoting the
/// start of the data.
pub(crate) fn parse_frame<T: DeserializeOwned>(
    data: &str,
    what: impl std::fmt::Display,
) -> Result<T, FrameError> {
    serde_json::from_str(data).map_err(|e| {
        FrameError::fatal(format!(
            "malformed {what} ({e}): `{}`",
            truncate_chars(data, MAX_ERROR_CHARS / 2)
        ))
    })
}

/// Makes a fresh parser for each attempt.
type ParserFactory = Box<dyn Fn() -> Box<dyn WireParser> + Send>;

/// Adds advice to an error before it leaves the endpoint (e.g. "start
/// `ollama serve`"). Runs once on every failure, retried or not, before the
/// key is scrubbed.
pub type ErrorHint = fn(&mut ProviderError);

/// How a wire API talks to its server.
#[derive(Clone, Copy)]
pub struct Wire {
    /// Appended to `base_url` (e.g. `/chat/completions`).
    pub path: &'static str,
    /// How the key is sent.
    pub auth: Auth,
    /// Headers every request carries (e.g. `anthropic-version`).
    pub headers: &'static [(&'static str, &'static str)],
    /// How the response body is framed.
    pub framing: Framing,
    /// Advice added to every error of the endpoint.
    pub hint: Option<ErrorHint>,
    /// Whether an error status says the request is larger than the
    /// model's context window (each API words it its own way; parsers use
    /// the same function for errors inside a stream).
    pub overflow: fn(&ServerError) -> bool,
}

/// An error a server reported, as a wire API's overflow classifier sees
/// it: the HTTP status (`None` for an error inside a stream), the error
/// object's `code` and `type`, and the whole body in lower case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerError {
    /// The HTTP status; `None` for an error inside a stream.
    pub status: Option<u16>,
    /// `error.code` (or a top-level `code`); a number as its digits.
    pub code: Option<String>,
    /// `error.type` (or a top-level `type`).
    pub kind: Option<String>,
    /// The body, lower-cased, for the phrases servers use.
    pub text: String,
}

impl ServerError {
    /// From an error body, JSON or not.
    pub fn parse(status: Option<u16>, body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(value) => ServerError::from_json(status, &value),
            Err(_) => ServerError {
                status,
                text: body.to_lowercase(),
                ..ServerError::default()
            },
        }
    }

    /// From an error payload: `{"error": {...}}` or the error object itself.
    pub fn from_json(status: Option<u16>, value: &Value) -> Self {
        let object = value
            .get("error")
            .filter(|e| e.is_object())
            .unwrap_or(value);
        let text_of = |v: Option<&Value>| match v? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        ServerError {
            status,
            code: text_of(object.get("code")),
            kind: text_of(object.get("type")),
            text: value.to_string().to_lowercase(),
        }
    }

    /// The error's `code` is exactly `code`.
    pub fn code_is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }

    /// The error's `type` is exactly `kind`.
    pub fn kind_is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    /// The body says one of `phrases` (given in lower case).
    pub fn says_any(&self, phrases: &[&str]) -> bool {
        phrases.iter().any(|p| self.text.contains(p))
    }

    /// The status is one of `statuses`, or the error came inside a stream.
    pub fn status_in(&self, statuses: &[u16]) -> bool {
        self.status.is_none_or(|s| statuses.contains(&s))
    }
}

/// One provider endpoint: everything each request needs.
pub struct Endpoint {
    /// The provider it talks to.
    pub info: ProviderInfo,
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    framing: Framing,
    backoff: Backoff,
    hint: Option<ErrorHint>,
    overflow: fn(&ServerError) -> bool,
    token: Option<TokenCommand>,
}

impl Endpoint {
    /// An endpoint for `{base_url}{wire.path}`. No network I/O happens here.
    pub fn new(info: ProviderInfo, wire: Wire, jitter: Jitter) -> Result<Self, ProviderError> {
        let config_error = |message: String| ProviderError::Other {
            provider: info.id.clone(),
            message,
        };
        let url = endpoint_url(&info, wire.path)?;

        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let accept = match wire.framing {
            Framing::Sse => "text/event-stream",
            Framing::Ndjson => "application/x-ndjson",
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        let key_header = match &info.key_header {
            Some(name) => Some(
                HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| config_error(format!("invalid key_header `{name}`")))?,
            ),
            None => None,
        };
        if let Some(key) = info.api_key.as_deref().filter(|k| !k.is_empty()) {
            let (name, text) = match (key_header, wire.auth) {
                (Some(name), _) => (name, key.to_string()),
                (None, Auth::Bearer) => (AUTHORIZATION, format!("Bearer {key}")),
                (None, Auth::Header(name)) => (HeaderName::from_static(name), key.to_string()),
            };
            headers.insert(name, sensitive(&text).map_err(config_error)?);
        }
        for (name, value) in wire.headers {
            let value = HeaderValue::from_str(value)
                .map_err(|_| config_error(format!("invalid value for HTTP header `{name}`")))?;
            headers.insert(HeaderName::from_static(name), value);
        }
        for (name, value) in &info.http_headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| config_error(format!("invalid HTTP header name `{name}`")))?;
            // The value may be a secret: never echo it.
            let value = HeaderValue::from_str(value)
                .map_err(|_| config_error(format!("invalid value for HTTP header `{name}`")))?;
            headers.insert(name, value);
        }

        let mut builder = reqwest::Client::builder()
            .connect_timeout(info.connect_timeout)
            .user_agent(concat!("cogni/", env!("CARGO_PKG_VERSION")));
        if url.host_str().is_some_and(is_loopback) {
            // A proxy can never reach our own loopback interface.
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| config_error(format!("could not build the HTTP client: {e}")))?;
        let backoff = Backoff::new(info.retry.clone(), jitter);
        let token = info
            .auth_command
            .clone()
            .map(|argv| TokenCommand::new(argv, info.auth_command_ttl));
        Ok(Endpoint {
            info,
            client,
            url,
            headers,
            framing: wire.framing,
            backoff,
            token,
            hint: wire.hint,
            overflow: wire.overflow,
        })
    }

    /// The request headers: the static ones, plus a fresh or cached bearer
    /// token when an `auth_command` is configured.
    async fn request_headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = self.headers.clone();
        if let Some(token) = &self.token {
            let value = token.get(&self.info).await?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    /// Send a request (`send` builds it from the request headers). When
    /// the server answers 401 to a token from `auth_command`, that token is
    /// dropped and the request sent once more with a fresh one; a second
    /// 401 is the caller's to report.
    async fn send_authorized<E, F, Fut>(&self, send: F) -> Result<reqwest::Response, E>
    where
        F: Fn(HeaderMap) -> Fut,
        Fut: std::future::Future<Output = Result<reqwest::Response, E>>,
        E: From<ProviderError>,
    {
        let headers = self.request_headers().await?;
        let sent = headers.get(AUTHORIZATION).cloned();
        let response = send(headers).await?;
        match (&self.token, sent) {
            (Some(token), Some(sent)) if response.status() == reqwest::StatusCode::UNAUTHORIZED => {
                token.invalidate(&sent).await;
                send(self.request_headers().await?).await
            }
            _ => Ok(response),
        }
    }

    /// The provider's id, for errors.
    pub fn id(&self) -> &str {
        &self.info.id
    }

    /// One JSON request to `path` on the same server (a model list, model
    /// details), with this endpoint's headers, query and key, and `timeout`
    /// for the whole exchange. Not retried. Error statuses map as for
    /// streams (`model` is named in them); the hint and key scrubbing apply.
    pub async fn request_json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        model: &str,
        timeout: Duration,
    ) -> Result<Value, ProviderError> {
        let url = endpoint_url(&self.info, path)?;
        self.fetch_json(method.clone(), &url, body, model, timeout)
            .await
            .map_err(|mut error| {
                self.explain(&mut error, &method, &url);
                error.for_each_text(|text| self.redact(text));
                error
            })
    }

    /// Advice added to every error before it leaves the endpoint: the wire
    /// API's hint, then for a 404 the URL that was requested and the
    /// setting that makes it.
    fn explain(&self, error: &mut ProviderError, method: &reqwest::Method, url: &reqwest::Url) {
        if let Some(hint) = self.hint {
            hint(error);
        }
        if let ProviderError::Http {
            status: 404,
            message,
            ..
        } = error
        {
            message.push_str(&format!(
                " (HTTP 404 for {method} {url}: check {} and the model name)",
                self.info.base_url_hint()
            ));
        }
    }

    async fn fetch_json(
        &self,
        method: reqwest::Method,
        url: &reqwest::Url,
        body: Option<&Value>,
        model: &str,
        timeout: Duration,
    ) -> Result<Value, ProviderError> {
        let send = |mut headers: HeaderMap| {
            headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
            let mut request = self
                .client
                .request(method.clone(), url.clone())
                .headers(headers)
                .timeout(timeout);
            if let Some(body) = body {
                request = request.body(body.to_string());
            }
            async move {
                request
                    .send()
                    .await
                    .map_err(|e| ProviderError::Unreachable {
                        provider: self.info.id.clone(),
                        url: url.to_string(),
                        message: error_chain(&e.without_url()),
                    })
            }
        };
        let response = self.send_authorized(send).await?;
        let status = response.status();
        if !status.is_success() {
            let hint = retry::retry_after(response.headers());
            let body = read_capped(response, timeout, MAX_ERROR_BODY).await;
            return Err(status_failure(self, model, status.as_u16(), &body, hint).error);
        }
        let text = read_capped(response, timeout, MAX_JSON_BODY).await;
        serde_json::from_str(&text).map_err(|e| ProviderError::Other {
            provider: self.info.id.clone(),
            message: format!(
                "{url} answered with something other than JSON ({e}): {}",
                truncate_chars(text.trim(), MAX_ERROR_CHARS / 2)
            ),
        })
    }

    /// Replace the API key in `text`: servers and transport errors may echo it.
    fn redact(&self, text: &mut String) {
        if let Some(key) = self.info.api_key.as_deref().filter(|k| k.len() >= 4) {
            if text.contains(key) {
                *text = text.replace(key, "[redacted]");
            }
        }
    }

    /// The error stream for a body that could not be encoded.
    pub fn encode_error(&self, error: serde_json::Error) -> ResponseStream {
        let err = ProviderError::Other {
            provider: self.info.id.clone(),
            message: format!("could not encode the request: {error}"),
        };
        Box::pin(futures::stream::once(async move { Err(err) }))
    }

    /// POST `body` and stream the response through a fresh parser from
    /// `parser` for each attempt. A body that could not be encoded is the
    /// stream's only item.
    pub fn stream<P: WireParser + 'static>(
        self: &Arc<Self>,
        body: serde_json::Result<Vec<u8>>,
        model: &str,
        parser: impl Fn() -> P + Send + 'static,
    ) -> ResponseStream {
        let body = match body {
            Ok(body) => body,
            Err(e) => return self.encode_error(e),
        };
        let make_parser: ParserFactory = Box::new(move || Box::new(parser()));
        Driver::stream(Arc::clone(self), body, model, make_parser)
    }
}

/// `{base_url}{path}` with the configured query parameters.
fn endpoint_url(info: &ProviderInfo, path: &str) -> Result<reqwest::Url, ProviderError> {
    let mut url = reqwest::Url::parse(&format!("{}{path}", info.base_url.trim_end_matches('/')))
        .map_err(|e| ProviderError::Other {
            provider: info.id.clone(),
            message: format!("invalid base_url `{}`: {e}", info.base_url),
        })?;
    if !info.query_params.is_empty() {
        url.query_pairs_mut().extend_pairs(&info.query_params);
    }
    Ok(url)
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The server's explanation of an error status: `error.message` (or a few
/// other common shapes) from a JSON body, else the body text, else the
/// status's reason phrase. At most [`MAX_ERROR_CHARS`] characters.
pub(crate) fn error_message(status: reqwest::StatusCode, body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| json_error_message(&v));
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("no error message")
            .to_string()
    } else {
        truncate_chars(&text, MAX_ERROR_CHARS)
    }
}

/// `error.message`, `error` (a string), `message` or `detail` of an error body.
pub(crate) fn json_error_message(value: &Value) -> Option<String> {
    let error = value.get("error");
    let candidates = [
        error.and_then(|e| e.get("message")),
        error,
        value.get("message"),
        value.get("detail"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().map(str::to_string))
}

pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Queue a complete tool call, announced with `ToolCallStarted` first
/// unless it already was.
pub(crate) fn push_call(out: &mut VecDeque<ResponseEvent>, call: ToolCall, announced: bool) {
    if !announced {
        out.push_back(ResponseEvent::ToolCallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        });
    }
    out.push_back(ResponseEvent::ToolCall(call));
}

/// An id for a tool call the server sent without one.
pub(crate) fn made_up_call_id() -> String {
    format!("call_{}", unique_suffix())
}

/// A unique text for ids the server did not send: the clock (so ids from
/// another run of the program differ) and a counter (so ids in this run do).
pub(crate) fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("{millis:x}{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

mod auth;
mod driver;

use auth::*;
use driver::*;

#[cfg(test)]
mod tests;
