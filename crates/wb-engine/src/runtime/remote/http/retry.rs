//! The one retry policy of every remote service. What is retried, and why:
//!
//! - a connection that could not be established (the request never left): every method, as the E2B SDKs do
//!   (`packages/python-sdk/e2b/api/client_async/__init__.py`, `ConnectionRetryTransport`: connect failures
//!   only, so nothing the server may have received is replayed);
//! - `429 Too Many Requests` (the service refused before doing anything): every method;
//! - `502`, `503`, `504` (a gateway or an overloaded service): only methods that are safe to repeat (`GET`,
//!   `HEAD`, `DELETE`, `PUT`), never a `POST` that may have created something.
//!
//! At most [`RETRIES`] retries. The wait is the reply's `Retry-After` (seconds, or an HTTP date against the
//! clock's wall time) or else an exponential backoff from 500 ms with full jitter in its upper half. A
//! `Retry-After` longer than [`MAX_RETRY_WAIT`] is not waited for: the reply is returned as the error.

use std::time::{Duration, SystemTime};

use reqwest::{Method, StatusCode};

/// How many times a call is retried before its error is returned.
pub const RETRIES: u32 = 3;
/// The longest wait honoured.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// The first backoff without `Retry-After`.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// Whether a reply with `status` to `method` is retried.
pub fn retryable_status(status: StatusCode, method: &Method) -> bool {
    let safe = matches!(*method, Method::GET | Method::HEAD | Method::DELETE | Method::PUT);
    status == StatusCode::TOO_MANY_REQUESTS
        || (safe
            && matches!(
                status,
                StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT
            ))
}

/// The `Retry-After` of a reply: delay-seconds (fractions accepted) or an HTTP date (`IMF-fixdate`, as
/// RFC 9110 §10.2.3 requires senders to use) measured from `now`; a date in the past is no wait. `None` when
/// absent or unreadable (the backoff applies). Never more than a day, never a panic.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)));
    }
    let date = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    let now = jiff::Timestamp::try_from(now).ok()?;
    let wait = now.duration_until(date);
    Some(Duration::try_from(wait).unwrap_or(Duration::ZERO).min(Duration::from_secs(86_400)))
}

/// The wait before retry number `attempt` (1-based) without `Retry-After`: 500 ms, 1 s, 2 s… each scaled
/// into its upper half by `jitter` (0..=1).
pub fn backoff(attempt: u32, jitter: f64) -> Duration {
    let base = FIRST_BACKOFF.saturating_mul(1 << attempt.saturating_sub(1).min(10));
    base.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// A random fraction in 0..=1 for [`backoff`].
pub fn jitter() -> f64 {
    let hex = wb_outcomes::random_hex(2);
    u16::from_str_radix(&hex, 16).map(|n| f64::from(n) / f64::from(u16::MAX)).unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> reqwest::header::HeaderMap {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Ok(value) = reqwest::header::HeaderValue::from_str(value) {
            headers.insert(reqwest::header::RETRY_AFTER, value);
        }
        headers
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_and_never_panics() {
        // 2015-10-21T07:28:00Z
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(retry_after(&with("2"), now), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(&with(" 0.5 "), now), Some(Duration::from_millis(500)));
        assert_eq!(retry_after(&with("1e300"), now), Some(Duration::from_secs(86_400)));
        assert_eq!(retry_after(&with("-1"), now), None);
        assert_eq!(retry_after(&with("NaN"), now), None);
        assert_eq!(retry_after(&with("Wed, 21 Oct 2015 07:28:09 GMT"), now), Some(Duration::from_secs(9)));
        assert_eq!(retry_after(&with("Wed, 21 Oct 2015 07:27:00 GMT"), now), Some(Duration::ZERO));
        assert_eq!(retry_after(&with("Mon, 21 Oct 2115 07:27:00 GMT"), now), Some(Duration::from_secs(86_400)));
        assert_eq!(retry_after(&with("soon"), now), None);
        // A date whose weekday is wrong is not a date: the backoff applies.
        assert_eq!(retry_after(&with("Fri, 21 Oct 2115 07:27:00 GMT"), now), None);
        assert_eq!(retry_after(&reqwest::header::HeaderMap::new(), now), None);
    }

    #[test]
    fn only_safe_methods_retry_server_errors() {
        assert!(retryable_status(StatusCode::TOO_MANY_REQUESTS, &Method::POST));
        assert!(retryable_status(StatusCode::SERVICE_UNAVAILABLE, &Method::GET));
        assert!(!retryable_status(StatusCode::SERVICE_UNAVAILABLE, &Method::POST));
        assert!(!retryable_status(StatusCode::INTERNAL_SERVER_ERROR, &Method::GET));
        assert_eq!(backoff(1, 1.0), Duration::from_millis(500));
        assert_eq!(backoff(3, 0.0), Duration::from_secs(1));
        assert!(jitter() <= 1.0);
    }
}
