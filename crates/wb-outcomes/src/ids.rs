//! Random ids (outcome, run, transaction and temp-file names all come from [`random_hex`]) and the RFC 3339
//! timestamps records are stamped with ([`now_utc`]).

use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// Random lower-case hex (`2 * bytes` digits) from the operating system's generator (`getrandom`). Should the
/// system have none, a SHA-256 of the time, the pid and a counter keeps ids unique (not secret): an id is
/// never worth failing a run for.
pub fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    if getrandom::fill(&mut buffer).is_err() {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut hasher = Sha256::new();
        hasher.update(jiff::Timestamp::now().as_nanosecond().to_le_bytes());
        hasher.update(std::process::id().to_le_bytes());
        hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        let digest = hasher.finalize();
        for (i, b) in buffer.iter_mut().enumerate() {
            *b = digest[i % digest.len()];
        }
    }
    crate::digest::hex(&buffer)
}

/// The current time as RFC 3339 UTC with milliseconds and a `Z` suffix (`2026-11-30T00:53:20.005Z`).
pub fn now_utc() -> String {
    format_utc(jiff::Timestamp::now())
}

fn format_utc(time: jiff::Timestamp) -> String {
    // Milliseconds, truncated (never rounded up into the next second).
    let millis = time.subsec_millisecond();
    let seconds = jiff::Timestamp::from_second(time.as_second()).unwrap_or(time);
    format!("{}.{millis:03}Z", seconds.strftime("%Y-%m-%dT%H:%M:%S"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn timestamps_are_rfc_3339_utc_with_milliseconds() {
        let at = |seconds: i64, nanos: i32| format_utc(jiff::Timestamp::new(seconds, nanos).unwrap());
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(1_796_000_000, 5_000_000), "2026-11-30T00:53:20.005Z");
        assert_eq!(at(1_796_000_000, 999_999_999), "2026-11-30T00:53:20.999Z");
        assert_eq!(at(951_782_400, 0), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(253_402_128_000, 0), "9999-12-30T00:00:00.000Z");
        let now = now_utc();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.ends_with('Z'), "{now}");
    }

    #[test]
    fn random_hex_is_lower_case_hex_of_the_asked_length_and_differs() {
        let id = random_hex(16);
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{id}");
        assert_ne!(random_hex(16), random_hex(16));
    }
}
