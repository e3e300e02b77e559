//! When and how long to wait before retrying a failed model request.
//!
//! Exponential backoff with jitter, capped at [`RetrySettings::max_delay`].
//! A server's `Retry-After` (or `retry-after-ms`) wins over the computed
//! delay, but is capped too. The jitter source is injectable so tests get
//! exact delays.

use super::RetrySettings;
use reqwest::header::HeaderMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Whether a response status is worth another attempt: rate limits and
/// server errors are; client errors (400, 401, 403, 404, ...) never are.
pub fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// A source of numbers in `[0, 1]` that spreads retries out.
#[derive(Clone)]
pub struct Jitter(Arc<dyn Fn() -> f64 + Send + Sync>);

impl Jitter {
    /// Random jitter from the standard library's per-process random keys.
    pub fn random() -> Self {
        Jitter(Arc::new(|| {
            use std::hash::BuildHasher;
            // Each `RandomState` gets fresh keys, so hashing a constant
            // gives a new pseudo-random value every call.
            let bits = std::collections::hash_map::RandomState::new().hash_one(0u8);
            (bits >> 11) as f64 / (1u64 << 53) as f64
        }))
    }

    /// Always the same value (clamped to `[0, 1]`); for tests.
    pub fn fixed(value: f64) -> Self {
        Jitter(Arc::new(move || value))
    }

    /// Any function; values outside `[0, 1]` are clamped.
    pub fn from_fn(f: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        Jitter(Arc::new(f))
    }

    fn sample(&self) -> f64 {
        let v = (self.0)();
        if v.is_nan() {
            0.0
        } else {
            v.clamp(0.0, 1.0)
        }
    }
}

impl Default for Jitter {
    fn default() -> Self {
        Jitter::random()
    }
}

impl fmt::Debug for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Jitter")
    }
}

/// Retry settings plus a jitter source.
#[derive(Debug, Clone)]
pub struct Backoff {
    settings: RetrySettings,
    jitter: Jitter,
}

impl Backoff {
    /// The backoff of `settings`, its delays randomised by `jitter`.
    pub fn new(settings: RetrySettings, jitter: Jitter) -> Self {
        Backoff { settings, jitter }
    }

    /// How many retries follow the first attempt.
    pub fn max_retries(&self) -> u32 {
        self.settings.max_retries
    }

    /// The wait before retry number `retry` (1 for the first retry).
    ///
    /// Without a server hint this is `base_delay * 2^(retry-1)`, scaled by a
    /// jitter factor in `[0.5, 1]`, and never more than `max_delay`. With a
    /// server hint (`Retry-After`) the hint is used, capped at `max_delay`.
    pub fn delay(&self, retry: u32, server_hint: Option<Duration>) -> Duration {
        let cap = self.settings.max_delay;
        if let Some(hint) = server_hint {
            return hint.min(cap);
        }
        let exponent = retry.saturating_sub(1).min(31);
        let full = self
            .settings
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(cap);
        // "Equal jitter": keep at least half the exponential delay so waits
        // still grow, spread the rest to avoid synchronised retries.
        full.mul_f64(0.5 + 0.5 * self.jitter.sample()).min(cap)
    }
}

/// The server's requested wait: `retry-after-ms` (milliseconds, sent by
/// OpenAI), else `Retry-After` in seconds or as an HTTP date. Unparsable
/// values are ignored (the caller falls back to backoff).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

/// [`retry_after`] with the current time given (a date in the past means
/// "now").
pub fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let number = |name: &str, scale: f64| {
        let value: f64 = text(name)?.parse().ok()?;
        Duration::try_from_secs_f64(value * scale).ok()
    };
    number("retry-after-ms", 0.001)
        .or_else(|| number("retry-after", 1.0))
        .or_else(|| {
            let when = httpdate::parse_http_date(text("retry-after")?).ok()?;
            Some(when.duration_since(now).unwrap_or(Duration::ZERO))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn settings(base_ms: u64, max_ms: u64) -> RetrySettings {
        RetrySettings {
            max_retries: 5,
            base_delay: Duration::from_millis(base_ms),
            max_delay: Duration::from_millis(max_ms),
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn retry_after_http_date_is_relative_to_now() {
        let now = httpdate::parse_http_date("Sun, 22 Nov 2026 03:00:00 GMT").unwrap();
        let h = headers(&[("retry-after", "Sun, 22 Nov 2026 03:00:07 GMT")]);
        assert_eq!(retry_after_at(&h, now), Some(Duration::from_secs(7)));
        let past = headers(&[("retry-after", "Sun, 22 Nov 2026 02:59:00 GMT")]);
        assert_eq!(retry_after_at(&past, now), Some(Duration::ZERO));
    }

    #[test]
    fn delays_double_and_are_deterministic_with_fixed_jitter() {
        let full = Backoff::new(settings(100, 60_000), Jitter::fixed(1.0));
        let half = Backoff::new(settings(100, 60_000), Jitter::fixed(0.0));
        let ms = |b: &Backoff, n| b.delay(n, None).as_millis();
        assert_eq!(
            (1..=4).map(|n| ms(&full, n)).collect::<Vec<_>>(),
            [100, 200, 400, 800]
        );
        assert_eq!(
            (1..=4).map(|n| ms(&half, n)).collect::<Vec<_>>(),
            [50, 100, 200, 400]
        );
    }

    #[test]
    fn delay_is_capped_at_max_delay() {
        let b = Backoff::new(settings(1_000, 5_000), Jitter::fixed(1.0));
        assert_eq!(b.delay(3, None), Duration::from_secs(4));
        assert_eq!(b.delay(4, None), Duration::from_secs(5));
        assert_eq!(b.delay(1_000, None), Duration::from_secs(5));
    }

    #[test]
    fn jitter_is_clamped() {
        let b = Backoff::new(settings(100, 60_000), Jitter::from_fn(|| 7.0));
        assert_eq!(b.delay(1, None), Duration::from_millis(100));
        let b = Backoff::new(settings(100, 60_000), Jitter::from_fn(|| f64::NAN));
        assert_eq!(b.delay(1, None), Duration::from_millis(50));
    }

    #[test]
    fn random_jitter_stays_in_range() {
        let b = Backoff::new(settings(1_000, 60_000), Jitter::random());
        for _ in 0..100 {
            let d = b.delay(1, None);
            assert!(d >= Duration::from_millis(500) && d <= Duration::from_millis(1_000));
        }
    }

    #[test]
    fn server_hint_wins_and_is_capped() {
        let b = Backoff::new(settings(100, 5_000), Jitter::fixed(0.0));
        assert_eq!(
            b.delay(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            b.delay(1, Some(Duration::from_secs(120))),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn retry_after_seconds_and_milliseconds() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", " 1.5 ")])),
            Some(Duration::from_millis(1_500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("retry-after-ms", "junk"),
                ("retry-after", "2")
            ])),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn retry_after_ignores_garbage() {
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
        assert_eq!(retry_after(&headers(&[])), None);
    }

    #[test]
    fn only_rate_limits_and_server_errors_are_retryable() {
        for status in [429, 500, 502, 503, 504, 599] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [200, 400, 401, 403, 404, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }
}
