//! What both services' HTTP clients share: how often a 429 is retried, the longest wait honoured, and reading
//! `Retry-After` (seconds, possibly fractional; a date or a value that is not a finite number is ignored, so
//! the caller's own backoff applies).

use std::time::Duration;

/// How many times a 429 is retried before its error is returned.
pub const RATE_LIMIT_RETRIES: u32 = 3;
/// The longest wait a `Retry-After` may ask for (the request deadline).
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// The `Retry-After` of a response, at most a day (never a panic on a huge value).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds = value.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0)?;
    Some(Duration::from_secs_f64(seconds.min(86_400.0)))
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
    fn retry_after_reads_seconds_and_never_panics() {
        assert_eq!(retry_after(&with("2")), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(&with(" 0.5 ")), Some(Duration::from_millis(500)));
        assert_eq!(retry_after(&with("1e300")), Some(Duration::from_secs(86_400)));
        assert_eq!(retry_after(&with("-1")), None);
        assert_eq!(retry_after(&with("NaN")), None);
        assert_eq!(retry_after(&with("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after(&reqwest::header::HeaderMap::new()), None);
    }
}
