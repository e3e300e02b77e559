//! One request's life: connect, read frames through the wire's parser,
//! back off and retry (also mid-stream), map statuses and transport
//! errors to `ProviderError`s.

use super::*;

type Frames = BoxStream<'static, Result<SseEvent, SseError<reqwest::Error>>>;

enum Phase {
    Connect,
    Backoff(Duration),
    Streaming(Frames),
    Done,
}

/// A failed attempt and whether another one may follow.
pub(super) struct Failure {
    pub(super) error: ProviderError,
    retryable: bool,
    /// The server's `Retry-After`.
    hint: Option<Duration>,
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Self {
        Failure::fatal(error)
    }
}

impl Failure {
    fn retry(error: ProviderError) -> Self {
        Failure {
            error,
            retryable: true,
            hint: None,
        }
    }

    fn fatal(error: ProviderError) -> Self {
        Failure {
            error,
            retryable: false,
            hint: None,
        }
    }
}

/// The state behind one request stream.
pub(super) struct Driver {
    endpoint: Arc<Endpoint>,
    body: Vec<u8>,
    model: String,
    /// Attempts started so far.
    attempt: u32,
    phase: Phase,
    pending: VecDeque<ResponseEvent>,
    parser: Box<dyn WireParser>,
    make_parser: ParserFactory,
    /// Frame bytes of the current attempt, against [`MAX_RESPONSE_BYTES`].
    received: u64,
}

impl Driver {
    /// The response to `body`, as the driver reads it attempt by attempt.
    pub(super) fn stream(
        endpoint: Arc<Endpoint>,
        body: Vec<u8>,
        model: &str,
        make_parser: ParserFactory,
    ) -> ResponseStream {
        let driver = Driver {
            endpoint,
            body,
            model: model.to_string(),
            attempt: 0,
            phase: Phase::Connect,
            pending: VecDeque::new(),
            parser: make_parser(),
            make_parser,
            received: 0,
        };
        Box::pin(futures::stream::unfold(driver, |mut driver| async move {
            let item = driver.next().await?;
            Some((item, driver))
        }))
    }

    async fn next(&mut self) -> Option<Result<ResponseEvent, ProviderError>> {
        let item = self.advance().await?;
        Some(self.scrub(item))
    }

    async fn advance(&mut self) -> Option<Result<ResponseEvent, ProviderError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Backoff(delay) => {
                    tokio::time::sleep(*delay).await;
                    self.phase = Phase::Connect;
                }
                Phase::Connect => {
                    self.attempt += 1;
                    self.parser = (self.make_parser)();
                    self.received = 0;
                    match connect(&self.endpoint, &self.body, &self.model).await {
                        Ok(frames) => self.phase = Phase::Streaming(frames),
                        Err(failure) => return Some(self.fail(failure)),
                    }
                }
                Phase::Streaming(frames) => match frames.next().await {
                    Some(Ok(frame)) => {
                        self.received += frame.data.len() as u64;
                        if self.received > MAX_RESPONSE_BYTES {
                            let message = format!(
                                "the response exceeded {} MiB and was stopped",
                                MAX_RESPONSE_BYTES / (1024 * 1024)
                            );
                            return Some(self.fail(Failure::fatal(self.stream_error(message))));
                        }
                        match self.parser.on_frame(&frame, &mut self.pending) {
                            Ok(true) => self.phase = Phase::Done,
                            Ok(false) => {}
                            Err(e) if e.context_overflow => {
                                let error = ProviderError::ContextOverflow {
                                    provider: self.endpoint.info.id.clone(),
                                    model: self.model.clone(),
                                    message: e.message,
                                };
                                return Some(self.fail(Failure::fatal(error)));
                            }
                            Err(e) => {
                                let failure = Failure {
                                    error: self.stream_error(e.message),
                                    retryable: e.retryable,
                                    hint: None,
                                };
                                return Some(self.fail(failure));
                            }
                        }
                    }
                    Some(Err(error)) => {
                        let retryable = !matches!(error, SseError::Decode(_));
                        let error = self.frame_error(error);
                        return Some(self.fail(Failure {
                            error,
                            retryable,
                            hint: None,
                        }));
                    }
                    None => {
                        let message = format!("the stream ended before {}", self.parser.terminal());
                        return Some(self.fail(Failure::retry(self.stream_error(message))));
                    }
                },
            }
        }
    }

    /// Schedule a retry (reported as an event) or give up.
    fn fail(&mut self, mut failure: Failure) -> Result<ResponseEvent, ProviderError> {
        // Whatever the failed attempt produced is void.
        self.pending.clear();
        let endpoint = &self.endpoint;
        endpoint.explain(&mut failure.error, &reqwest::Method::POST, &endpoint.url);
        let backoff = &self.endpoint.backoff;
        if failure.retryable && self.attempt <= backoff.max_retries() {
            let retry = self.attempt;
            let delay = backoff.delay(retry, failure.hint);
            self.phase = Phase::Backoff(delay);
            return Ok(ResponseEvent::Retrying {
                attempt: retry,
                delay,
                reason: failure.error.to_string(),
            });
        }
        self.phase = Phase::Done;
        if failure.retryable && self.attempt > 1 {
            Err(ProviderError::RetriesExhausted {
                provider: self.endpoint.info.id.clone(),
                model: self.model.clone(),
                attempts: self.attempt,
                last: failure.error.to_string(),
            })
        } else {
            Err(failure.error)
        }
    }

    fn frame_error(&self, error: SseError<reqwest::Error>) -> ProviderError {
        match error {
            SseError::Idle { .. } => idle_error(&self.endpoint.info, &self.model),
            SseError::Transport { error, received } => self.stream_error(format!(
                "the connection failed after {received} bytes: {}",
                error_chain(&error.without_url())
            )),
            SseError::Decode(message) => self.stream_error(message),
        }
    }

    fn stream_error(&self, message: String) -> ProviderError {
        ProviderError::Stream {
            provider: self.endpoint.info.id.clone(),
            model: self.model.clone(),
            message,
        }
    }

    /// Remove the API key from anything that leaves this module: servers
    /// and transport errors may echo it.
    fn scrub(
        &self,
        item: Result<ResponseEvent, ProviderError>,
    ) -> Result<ResponseEvent, ProviderError> {
        let clean = |s: &mut String| self.endpoint.redact(s);
        match item {
            Ok(ResponseEvent::Retrying {
                attempt,
                delay,
                mut reason,
            }) => {
                clean(&mut reason);
                Ok(ResponseEvent::Retrying {
                    attempt,
                    delay,
                    reason,
                })
            }
            Ok(event) => Ok(event),
            Err(mut error) => {
                error.for_each_text(clean);
                Err(error)
            }
        }
    }
}

/// Send the request; `Ok` once a 2xx status with a body of the expected
/// kind arrived.
async fn connect(endpoint: &Endpoint, body: &[u8], model: &str) -> Result<Frames, Failure> {
    let info = &endpoint.info;
    let framing = endpoint.framing;
    let idle = info.stream_idle_timeout;
    let send = |headers: HeaderMap| {
        let request = endpoint
            .client
            .post(endpoint.url.clone())
            .headers(headers)
            .body(body.to_vec());
        // No overall timeout (a long answer may stream for minutes), but
        // waiting for the status line counts as idle time.
        async move {
            match tokio::time::timeout(idle, request.send()).await {
                Err(_) => Err(Failure::retry(idle_error(info, model))),
                Ok(Err(e)) => Err(Failure::retry(ProviderError::Unreachable {
                    provider: info.id.clone(),
                    url: endpoint.url.to_string(),
                    message: error_chain(&e.without_url()),
                })),
                Ok(Ok(response)) => Ok(response),
            }
        }
    };
    let response = endpoint.send_authorized(send).await?;
    let status = response.status();
    if status.is_success() {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        // A proxy's login page, or a server that ignored `stream: true`.
        let wrong = content_type.starts_with("text/html")
            || (framing == Framing::Sse && content_type.starts_with("application/json"));
        if wrong {
            let body = read_capped(response, idle, MAX_ERROR_BODY).await;
            return Err(Failure::fatal(ProviderError::Stream {
                provider: info.id.clone(),
                model: model.to_string(),
                message: format!(
                    "{} answered with `{content_type}` instead of a stream: {}",
                    endpoint.url,
                    error_message(status, &body)
                ),
            }));
        }
        let bytes = response.bytes_stream();
        return Ok(match framing {
            Framing::Sse => Box::pin(sse::decode(bytes, idle)),
            Framing::Ndjson => Box::pin(ndjson::decode(bytes, idle)),
        });
    }
    let hint = retry::retry_after(response.headers());
    let body = read_capped(response, idle, MAX_ERROR_BODY).await;
    Err(status_failure(
        endpoint,
        model,
        status.as_u16(),
        &body,
        hint,
    ))
}

/// What an error status means: auth, context overflow, exhausted quota, or
/// a plain HTTP error, retryable or not.
pub(super) fn status_failure(
    endpoint: &Endpoint,
    model: &str,
    code: u16,
    body: &str,
    hint: Option<Duration>,
) -> Failure {
    let info = &endpoint.info;
    let status = reqwest::StatusCode::from_u16(code).unwrap_or(reqwest::StatusCode::BAD_GATEWAY);
    let message = error_message(status, body);
    let provider = info.id.clone();
    let model = model.to_string();
    if matches!(code, 401 | 403) {
        let (message, hint) = match &info.auth_command {
            Some(argv) => (
                message,
                format!(
                    "The token printed by auth_command `{}` was rejected (a 401 runs it once more); check auth_command in [model_providers.{}].",
                    argv.join(" "),
                    info.id
                ),
            ),
            None if info.api_key.is_none() => {
                (format!("{message} (no API key was sent)"), info.key_hint())
            }
            None => (message, info.key_hint()),
        };
        return Failure::fatal(ProviderError::Auth {
            provider,
            model,
            status: code,
            message,
            hint,
        });
    }
    if (endpoint.overflow)(&ServerError::parse(Some(code), body)) {
        return Failure::fatal(ProviderError::ContextOverflow {
            provider,
            model,
            message,
        });
    }
    if code == 429 && is_quota_exhausted(body) {
        return Failure::fatal(ProviderError::Http {
            provider,
            model,
            status: code,
            message: format!(
                "{message} (the account's quota is used up; retrying will not help: check billing)"
            ),
        });
    }
    let message = if code == 429 {
        format!("rate limited: {message}")
    } else {
        message
    };
    Failure {
        error: ProviderError::Http {
            provider,
            model,
            status: code,
            message,
        },
        retryable: retry::is_retryable_status(code),
        hint,
    }
}

pub(super) fn is_quota_exhausted(body: &str) -> bool {
    body.contains("insufficient_quota")
}

pub(crate) fn idle_error(info: &ProviderInfo, model: &str) -> ProviderError {
    ProviderError::IdleTimeout {
        provider: info.id.clone(),
        model: model.to_string(),
        // Rounded up so a sub-second timeout does not read "0s".
        idle_secs: info.stream_idle_timeout.as_millis().div_ceil(1000) as u64,
    }
}

/// The first `max` bytes (or so) of a body, as text; whatever arrived if
/// reading fails.
pub(super) async fn read_capped(
    mut response: reqwest::Response,
    idle: Duration,
    max: usize,
) -> String {
    let mut body = Vec::new();
    while body.len() < max {
        match tokio::time::timeout(idle, response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}
