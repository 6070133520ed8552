//! The one HTTP transport every remote service goes through (E2B's control plane and envd, Daytona's API and
//! toolbox, the presigned uploads of E2B template files). A service is untrusted: whatever it answers, a call
//!
//! - ends by a deadline ([`Limits::request`], plus time by size for transfers) and whenever the run is
//!   cancelled ([`Cancel`]), at every await: sending, waiting between retries, reading;
//! - reads at most a bounded reply ([`Limits::reply`] or the caller's limit), failing with an error that names
//!   the service and the limit, and never buffers more than that;
//! - follows no redirect: a credential (`X-API-KEY`, `X-Access-Token`, `Authorization`) is only ever sent to
//!   the origin it was configured for, and a `3xx` is an error;
//! - is retried by the one policy of [`retry`], waiting on an injectable [`clock::Clock`];
//! - quotes a service's text only through the one redactor ([`Transport::redact`]), which removes every
//!   credential the transport carries.

pub mod clock;
pub mod failure;
pub mod retry;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response};

use crate::error::EngineError;
pub use clock::{Clock, RecordingClock, SystemClock};
pub use failure::{Failure, HttpError};

/// How often a wait looks at the cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// The most of an error reply that is read (its first 500 characters are quoted).
pub const ERROR_BODY_LIMIT: u64 = 64 * 1024;
/// The characters of an error reply quoted in an error.
const QUOTED: usize = 500;

/// The bounds every call keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A call's deadline (connect, send, headers; and reading its reply).
    pub request: Duration,
    /// A reply body read whole (JSON, error texts).
    pub reply: u64,
    /// A transfer is given `request` plus its size at this rate (bytes per second).
    pub transfer_rate: u64,
    /// No byte of a transfer or stream for this long is a dead connection.
    pub idle: Duration,
    /// The output an engine command (`Sandbox::run`) may produce, stdout and stderr together.
    pub output: u64,
    /// The keepalive interval a streamed command asks its daemon for.
    pub keepalive: Duration,
    /// A stream silent this long (no data, no keepalive) is dead.
    pub silence: Duration,
    /// One reply of a command's logs (Daytona answers the whole log on every poll).
    pub logs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request: Duration::from_secs(60),
            reply: 16 * 1024 * 1024,
            transfer_rate: 1024 * 1024,
            idle: Duration::from_secs(60),
            output: 16 * 1024 * 1024,
            keepalive: Duration::from_secs(50),
            // Two missed keepalives and some slack.
            silence: Duration::from_secs(110),
            logs: 64 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The deadline of a transfer of `bytes`.
    pub fn transfer(&self, bytes: u64) -> Duration {
        self.request + Duration::from_secs(bytes / self.transfer_rate.max(1))
    }
}

/// The run's cancel flag as the transport sees it (set later than the transport is built, shared by clones).
#[derive(Clone, Default)]
pub struct Cancel(Arc<Mutex<Option<Arc<AtomicBool>>>>);

impl Cancel {
    /// Watches `flag` from now on (every clone of this transport); `None` stops watching.
    pub fn watch(&self, flag: Option<Arc<AtomicBool>>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = flag;
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.lock().ok().and_then(|slot| slot.as_ref().map(|flag| flag.load(Ordering::SeqCst))).unwrap_or(false)
    }

    /// Completes once the flag is set (never without one).
    pub async fn cancelled(&self) {
        while !self.is_cancelled() {
            tokio::time::sleep(CANCEL_POLL).await;
        }
    }
}

/// What a provider's transport is built with (tests shorten the limits and record the waits).
#[derive(Clone)]
pub struct Options {
    pub limits: Limits,
    pub clock: Arc<dyn Clock>,
    pub cancel: Cancel,
}

impl Default for Options {
    fn default() -> Options {
        Options { limits: Limits::default(), clock: Arc::new(SystemClock), cancel: Cancel::default() }
    }
}

impl Options {
    /// The options a provider starts from: the defaults, and in the tests' build (the `test-hooks` feature) the
    /// clock `env` asks for (see [`clock::LoggingClock`]).
    pub fn for_provider(env: &super::provider::ProviderEnv) -> Options {
        let options = Options::default();
        #[cfg(feature = "test-hooks")]
        if let Some(clock) = clock::LoggingClock::from_env(env) {
            return Options { clock: Arc::new(clock), ..options };
        }
        let _ = env;
        options
    }
}

/// One call as errors name it: `<service> <METHOD> <shown>` (`E2B API POST /v2/sandboxes`).
pub struct Call<'a> {
    pub service: &'a str,
    pub method: Method,
    pub url: &'a str,
    /// The path as texts show it (no query, no host).
    pub shown: &'a str,
    pub deadline: Duration,
}

impl Call<'_> {
    fn name(&self) -> String {
        format!("{} {} {}", self.service, self.method, self.shown)
    }
}

/// A request body builder, called again for every attempt.
pub type Build<'a> = &'a (dyn Fn(RequestBuilder) -> RequestBuilder + Sync);

/// The transport: a client that follows no redirect, the limits, the clock, the cancel flag, and the
/// credentials its texts never show.
#[derive(Clone)]
pub struct Transport {
    client: reqwest::Client,
    options: Options,
    secrets: Arc<Vec<String>>,
}

impl Transport {
    /// A transport for `service` (named in the error when the client cannot be built).
    pub fn new(service: &str, options: Options) -> Result<Transport, EngineError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .user_agent(concat!("wb-lsp/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(options.limits.request)
            .build()
            .map_err(|e| {
                EngineError::message(format!("Cannot build the {service} HTTP client: {}", e.without_url()))
            })?;
        Ok(Transport { client, options, secrets: Arc::new(Vec::new()) })
    }

    /// The same transport, also redacting `secret` (a key or token it will carry).
    pub fn with_secret(&self, secret: &str) -> Transport {
        let mut secrets = self.secrets.as_ref().clone();
        if !secret.is_empty() && !secrets.iter().any(|s| s == secret) {
            secrets.push(secret.to_owned());
        }
        Transport { secrets: Arc::new(secrets), ..self.clone() }
    }

    /// The same transport without the cancel flag: for cleanup (destroying a sandbox, killing a process,
    /// reclaiming by label), which must still run after a run was cancelled.
    pub fn without_cancel(&self) -> Transport {
        Transport { options: Options { cancel: Cancel::default(), ..self.options.clone() }, ..self.clone() }
    }

    pub fn limits(&self) -> Limits {
        self.options.limits
    }

    pub fn cancel(&self) -> &Cancel {
        &self.options.cancel
    }

    /// The one redactor: every credential this transport carries becomes `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in self.secrets.iter().filter(|s| s.len() >= 4) {
            text = text.replace(secret.as_str(), "[redacted]");
        }
        text
    }

    /// `future`, ended by `deadline` or cancellation.
    pub async fn guard<T>(
        &self,
        call: &Call<'_>,
        deadline: Duration,
        future: impl Future<Output = T>,
    ) -> Result<T, HttpError> {
        // A flag already set wins over a call that could still go out (a select's branches are otherwise polled
        // in a random order).
        tokio::select! {
            biased;
            () = self.options.cancel.cancelled() => Err(self.cancelled(call)),
            output = future => Ok(output),
            () = tokio::time::sleep(deadline) => Err(self.deadline_error(call, deadline)),
        }
    }

    pub fn deadline_error(&self, call: &Call<'_>, deadline: Duration) -> HttpError {
        HttpError {
            text: format!("{} failed: no answer within {}", call.name(), seconds(deadline)),
            failure: Failure::Deadline,
        }
    }

    pub fn cancelled(&self, call: &Call<'_>) -> HttpError {
        HttpError { text: format!("{} was cancelled", call.name()), failure: Failure::Cancelled }
    }

    /// An error about `call` with a text of ours.
    pub fn error(&self, call: &Call<'_>, detail: &str, failure: Failure) -> HttpError {
        HttpError { text: self.redact(&format!("{} failed: {detail}", call.name())), failure }
    }

    /// Sends `call` (the body from `build`, again on every attempt) under the retry policy. Any status but a
    /// redirect is returned; the caller reads the body ([`Transport::read`]).
    pub async fn send(&self, call: &Call<'_>, build: Build<'_>) -> Result<Response, HttpError> {
        let mut attempt = 0u32;
        loop {
            let request = build(self.client.request(call.method.clone(), call.url));
            let sent = self.guard(call, call.deadline, request.send()).await?;
            let wait = match &sent {
                Err(error) if error.is_connect() => Some(None),
                Ok(response) if retry::retryable_status(response.status(), &call.method) => {
                    Some(retry::retry_after(response.headers(), self.options.clock.now()))
                }
                _ => None,
            };
            if let Some(after) = wait.filter(|_| attempt < retry::RETRIES) {
                attempt += 1;
                let wait = after.unwrap_or_else(|| retry::backoff(attempt, retry::jitter()));
                if wait <= retry::MAX_RETRY_WAIT {
                    drop(sent);
                    tokio::select! {
                        () = self.options.clock.sleep(wait) => {}
                        () = self.options.cancel.cancelled() => return Err(self.cancelled(call)),
                    }
                    continue;
                }
            }
            let response = sent.map_err(|e| self.error(call, &chain(&e), Failure::Connection))?;
            if response.status().is_redirection() {
                return Err(self.error(
                    call,
                    &format!(
                        "the service answered {} (a redirect), which is not followed: credentials stay with the origin they are for",
                        response.status().as_u16()
                    ),
                    Failure::Status(response.status().as_u16()),
                ));
            }
            return Ok(response);
        }
    }

    /// [`Transport::send`]; a status other than 2xx is an error quoting the reply.
    pub async fn send_ok(&self, call: &Call<'_>, build: Build<'_>) -> Result<Response, HttpError> {
        let response = self.send(call, build).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.status_error(call, response).await)
    }

    /// `<call> failed with <status>: <the reply's first 500 characters>` (at most 64 KiB of it is read).
    pub async fn status_error(&self, call: &Call<'_>, response: Response) -> HttpError {
        let status = response.status().as_u16();
        let body = self.read_at_most(call, response, ERROR_BODY_LIMIT).await;
        let text: String = self.redact(String::from_utf8_lossy(&body).trim()).chars().take(QUOTED).collect();
        HttpError { text: format!("{} failed with {status}: {text}", call.name()), failure: Failure::Status(status) }
    }

    /// The reply body, whole: at most `limit` bytes (more is an error naming the limit), each chunk within
    /// the idle limit, all within the call's deadline, stopped by cancellation.
    pub async fn read(&self, call: &Call<'_>, mut response: Response, limit: u64) -> Result<Vec<u8>, HttpError> {
        if response.content_length().is_some_and(|length| length > limit) {
            return Err(self.too_large(call, limit));
        }
        let idle = self.options.limits.idle;
        let body = async {
            let mut out = Vec::new();
            loop {
                let chunk = tokio::time::timeout(idle, response.chunk())
                    .await
                    .map_err(|_| self.error(call, &format!("no data for {}", seconds(idle)), Failure::Deadline))?
                    .map_err(|e| self.error(call, &chain(&e), Failure::Connection))?;
                let Some(chunk) = chunk else { return Ok(out) };
                if out.len() as u64 + chunk.len() as u64 > limit {
                    return Err(self.too_large(call, limit));
                }
                out.extend_from_slice(&chunk);
            }
        };
        self.guard(call, call.deadline, body).await?
    }

    /// A JSON reply (at most [`Limits::reply`]); an empty body reads as `null`.
    pub async fn json<T: serde::de::DeserializeOwned>(
        &self,
        call: &Call<'_>,
        response: Response,
    ) -> Result<T, HttpError> {
        let bytes = self.read(call, response, self.options.limits.reply).await?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"null" } else { &bytes };
        serde_json::from_slice(bytes).map_err(|e| HttpError {
            text: format!("{} returned an unexpected response: {e}", call.name()),
            failure: Failure::Connection,
        })
    }

    /// Up to `limit` bytes of the body, best effort (for error texts).
    pub async fn read_at_most(&self, call: &Call<'_>, mut response: Response, limit: u64) -> Vec<u8> {
        let body = async {
            let mut out = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                let room = limit.saturating_sub(out.len() as u64) as usize;
                out.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if out.len() as u64 >= limit {
                    break;
                }
            }
            out
        };
        self.guard(call, self.options.limits.idle.min(call.deadline), body).await.unwrap_or_default()
    }

    pub fn too_large(&self, call: &Call<'_>, limit: u64) -> HttpError {
        self.error(call, &format!("its reply exceeds the {} limit", size(limit)), Failure::TooLarge)
    }
}

/// `16 MiB`, `4 KiB`, `1000 bytes`.
pub fn size(limit: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if limit >= MIB && limit.is_multiple_of(MIB) {
        format!("{} MiB", limit / MIB)
    } else if limit >= 1024 && limit.is_multiple_of(1024) {
        format!("{} KiB", limit / 1024)
    } else {
        format!("{limit} bytes")
    }
}

/// `60 seconds`, `0.3 seconds`.
pub fn seconds(duration: Duration) -> String {
    let value = duration.as_secs_f64();
    if value == 1.0 { "1 second".to_owned() } else { format!("{value} seconds") }
}

/// A reqwest error and its causes, without the URL (it carries nothing secret, but is noise).
pub fn chain(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut current: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = current {
        let part = match e.downcast_ref::<reqwest::Error>() {
            Some(error) => {
                let mut text = error.to_string();
                if let Some(url) = error.url() {
                    text = text.replace(&format!(" for url ({url})"), "");
                }
                text
            }
            None => e.to_string(),
        };
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        current = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_plainly() {
        assert_eq!(size(16 * 1024 * 1024), "16 MiB");
        assert_eq!(size(4096), "4 KiB");
        assert_eq!(size(1000), "1000 bytes");
        assert_eq!(seconds(Duration::from_millis(300)), "0.3 seconds");
        assert_eq!(Limits::default().transfer(10 * 1024 * 1024), Duration::from_secs(70));
    }

    #[test]
    fn the_redactor_removes_every_credential_it_carries() -> Result<(), EngineError> {
        let transport = Transport::new("test", Options::default())?.with_secret("e2b_key1").with_secret("tok-2");
        assert_eq!(transport.redact("e2b_key1 and tok-2 and ab"), "[redacted] and [redacted] and ab");
        Ok(())
    }
}
