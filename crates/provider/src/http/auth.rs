//! Credentials on the wire: header values that are never printed, and
//! `auth_command` tokens (cached for their ttl, refreshed once on a 401).

use super::*;

/// A header value that is never printed.
pub(super) fn sensitive(text: &str) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(text)
        .map_err(|_| "the API key contains characters not allowed in a header".to_string())?;
    value.set_sensitive(true);
    Ok(value)
}

/// Longest a token command may run.
const TOKEN_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Most a token command may print.
const TOKEN_MAX_BYTES: usize = 64 * 1024;

/// `auth_command`: a program that prints a bearer token, run when the
/// cached token is missing or older than `ttl`.
pub(super) struct TokenCommand {
    argv: Vec<String>,
    ttl: Duration,
    cached: tokio::sync::Mutex<Option<(HeaderValue, std::time::Instant)>>,
}

impl TokenCommand {
    pub(super) fn new(argv: Vec<String>, ttl: Duration) -> Self {
        TokenCommand {
            argv,
            ttl,
            cached: tokio::sync::Mutex::new(None),
        }
    }

    /// The server rejected `token`: the next [`TokenCommand::get`] runs the
    /// command again (unless another request already replaced the token).
    pub(super) async fn invalidate(&self, token: &HeaderValue) {
        let mut cached = self.cached.lock().await;
        if cached.as_ref().is_some_and(|(value, _)| value == token) {
            *cached = None;
        }
    }

    pub(super) async fn get(&self, info: &ProviderInfo) -> Result<HeaderValue, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some((value, at)) = cached.as_ref() {
            if at.elapsed() < self.ttl {
                return Ok(value.clone());
            }
        }
        let fail = |message: String| ProviderError::Other {
            provider: info.id.clone(),
            message: format!(
                "auth_command `{}` {message}; fix it in [model_providers.{}]",
                self.argv.join(" "),
                info.id
            ),
        };
        if self.argv.is_empty() {
            return Err(fail("is empty".into()));
        }
        // Like any command cogni runs: own process group, supervised, so
        // nothing it starts outlives it; the user's environment (it is
        // the user's own program, not the model's).
        let request = exec::ExecRequest {
            argv: self.argv.clone(),
            cwd: std::env::current_dir().unwrap_or_else(|_| "/".into()),
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            timeout: TOKEN_COMMAND_TIMEOUT,
            capture_limit_bytes: TOKEN_MAX_BYTES,
            kill_grace: exec::DEFAULT_KILL_GRACE,
            io_drain: exec::DEFAULT_IO_DRAIN,
            sandbox: None,
            stdin: None,
        };
        let output = exec::run(request)
            .await
            .map_err(|e| fail(format!("could not run: {e}")))?;
        if output.timed_out {
            return Err(fail(format!(
                "did not finish within {}s",
                TOKEN_COMMAND_TIMEOUT.as_secs()
            )));
        }
        if !output.termination.success() {
            return Err(fail(format!(
                "failed (exit code {})",
                output.termination.exit_code()
            )));
        }
        if output.stdout.gap.bytes > 0 {
            return Err(fail(format!(
                "printed more than {TOKEN_MAX_BYTES} bytes; it should print only the token"
            )));
        }
        let stdout = [output.stdout.head, output.stdout.tail].concat();
        let token = String::from_utf8_lossy(&stdout).trim().to_string();
        if token.is_empty() {
            return Err(fail("printed no token".into()));
        }
        let value = sensitive(&format!("Bearer {token}")).map_err(fail)?;
        *cached = Some((value.clone(), std::time::Instant::now()));
        Ok(value)
    }
}
