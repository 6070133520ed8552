//! The Daytona control plane (`DAYTONA_API_URL`, REST + JSON, `Authorization: Bearer <key>`): create a
//! sandbox, poll it until `started`, delete it, list sandboxes by labels, look up the toolbox URL. The same
//! transport ([`Transport`]) also carries the toolbox calls: one request timeout on every call, 429s retried
//! up to three times honouring `Retry-After`, and errors in the reference's words
//! (`Daytona API <METHOD> <path> failed with <status>: <body ≤ 500 chars>`). The key is only ever put in
//! the `Authorization` header; it is never part of a URL, an error or a log line.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::Deserialize;

use crate::error::{EngineError, Result};

use crate::runtime::remote::http::{MAX_RETRY_WAIT, RATE_LIMIT_RETRIES, retry_after};
/// The longest error body quoted in an error text.
const BODY_LIMIT: usize = 500;

/// A sandbox as the API describes it (`Sandbox` DTO); unknown fields are ignored.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SandboxDto {
    pub id: String,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub toolbox_proxy_url: Option<String>,
    #[serde(default)]
    pub error_reason: Option<String>,
    #[serde(default)]
    pub cpu: Option<f64>,
    /// GiB.
    #[serde(default)]
    pub memory: Option<f64>,
    /// GiB.
    #[serde(default)]
    pub disk: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SandboxPage {
    #[serde(default)]
    items: Vec<SandboxDto>,
    #[serde(default)]
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct ToolboxUrl {
    url: String,
}

/// A failed call: the text, and whether the call timed out or the service answered 5xx (a create that fails
/// so may still have made a sandbox).
#[derive(Debug)]
pub(crate) struct CallError {
    pub text: String,
    pub uncertain: bool,
}

impl From<CallError> for EngineError {
    fn from(error: CallError) -> EngineError {
        EngineError::message(error.text)
    }
}

/// The HTTP client both planes share: base URLs are given per call.
pub(crate) struct Transport {
    client: reqwest::Client,
    key: Option<String>,
    pub request_timeout: Duration,
}

impl Transport {
    pub fn new(key: Option<String>, request_timeout: Duration) -> Result<Transport> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .user_agent(concat!("wb-lsp/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EngineError::message(format!("Cannot build the Daytona HTTP client: {}", e.without_url())))?;
        Ok(Transport { client, key, request_timeout })
    }

    pub fn has_key(&self) -> bool {
        self.key.as_deref().is_some_and(|k| !k.is_empty())
    }

    /// Sends a request built by `build` (called again for each retry) with the Bearer header and `timeout`,
    /// retrying 429s. `plane` and `shown` name the call in errors (`Daytona API`, `POST /sandbox`). Any
    /// status other than 429 is returned to the caller as is.
    pub async fn send(
        &self,
        plane: &str,
        method: Method,
        url: &str,
        shown: &str,
        timeout: Duration,
        build: &(dyn Fn(RequestBuilder) -> RequestBuilder + Sync),
    ) -> std::result::Result<Response, CallError> {
        let mut attempt = 0;
        loop {
            let mut request = self.client.request(method.clone(), url).timeout(timeout);
            if let Some(key) = &self.key {
                request = request.bearer_auth(key);
            }
            let response = build(request).send().await.map_err(|e| {
                let text = if e.is_timeout() {
                    format!("{plane} {method} {shown} failed: no answer within {} seconds", timeout.as_secs_f64())
                } else {
                    format!("{plane} {method} {shown} failed: {}", redact(&error_chain(&e), self.key.as_deref()))
                };
                CallError { text, uncertain: e.is_timeout() }
            })?;
            if response.status() == StatusCode::TOO_MANY_REQUESTS && attempt < RATE_LIMIT_RETRIES {
                attempt += 1;
                let wait = retry_after(response.headers()).unwrap_or(Duration::from_millis(500 * u64::from(attempt)));
                // A longer wait is clamped (E2B gives up instead: the SDK's behaviour there).
                tokio::time::sleep(wait.min(MAX_RETRY_WAIT)).await;
                continue;
            }
            return Ok(response);
        }
    }

    /// [`Transport::send`], then a non-2xx status becomes the reference's error text.
    pub async fn send_ok(
        &self,
        plane: &str,
        method: Method,
        url: &str,
        shown: &str,
        timeout: Duration,
        build: &(dyn Fn(RequestBuilder) -> RequestBuilder + Sync),
    ) -> std::result::Result<Response, CallError> {
        let response = self.send(plane, method.clone(), url, shown, timeout, build).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.status_error(plane, &method, shown, response).await)
    }

    pub async fn status_error(&self, plane: &str, method: &Method, shown: &str, response: Response) -> CallError {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        let body: String = redact(body.trim(), self.key.as_deref()).chars().take(BODY_LIMIT).collect();
        CallError {
            text: format!("{plane} {method} {shown} failed with {}: {body}", status.as_u16()),
            uncertain: status.is_server_error(),
        }
    }

    /// Reads a JSON reply.
    pub async fn json<T: serde::de::DeserializeOwned>(
        &self,
        plane: &str,
        method: &Method,
        shown: &str,
        response: Response,
    ) -> std::result::Result<T, CallError> {
        let bytes = response.bytes().await.map_err(|e| CallError {
            text: format!("{plane} {method} {shown} failed: {}", redact(&error_chain(&e), self.key.as_deref())),
            uncertain: false,
        })?;
        serde_json::from_slice(&bytes).map_err(|e| CallError {
            text: format!("{plane} {method} {shown} returned an unexpected response: {e}"),
            uncertain: false,
        })
    }

    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

/// The control plane at `base` (`…/api`).
pub(crate) struct Api {
    pub transport: Transport,
    base: String,
}

const PLANE: &str = "Daytona API";

impl Api {
    pub fn new(transport: Transport, base: &str) -> Api {
        Api { transport, base: base.trim_end_matches('/').to_owned() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn timeout(&self) -> Duration {
        self.transport.request_timeout
    }

    /// `POST /sandbox`.
    pub async fn create(&self, body: &serde_json::Value) -> std::result::Result<SandboxDto, CallError> {
        let shown = "/sandbox";
        let response = self
            .transport
            .send_ok(PLANE, Method::POST, &self.url(shown), shown, self.timeout(), &|r| r.json(body))
            .await?;
        self.transport.json(PLANE, &Method::POST, shown, response).await
    }

    /// `GET /sandbox/{id}`.
    pub async fn get(&self, id: &str) -> std::result::Result<SandboxDto, CallError> {
        let shown = format!("/sandbox/{}", segment(id));
        let response =
            self.transport.send_ok(PLANE, Method::GET, &self.url(&shown), &shown, self.timeout(), &|r| r).await?;
        self.transport.json(PLANE, &Method::GET, &shown, response).await
    }

    /// `DELETE /sandbox/{id}`; a 404 means it is already gone (Ok).
    pub async fn delete(&self, id: &str) -> std::result::Result<(), CallError> {
        let shown = format!("/sandbox/{}", segment(id));
        let response =
            self.transport.send(PLANE, Method::DELETE, &self.url(&shown), &shown, self.timeout(), &|r| r).await?;
        if response.status().is_success() || response.status() == StatusCode::NOT_FOUND {
            return Ok(());
        }
        Err(self.transport.status_error(PLANE, &Method::DELETE, &shown, response).await)
    }

    /// `GET /sandbox?labels=<JSON>`, following `nextCursor`.
    pub async fn list(&self, labels: &BTreeMap<String, String>) -> std::result::Result<Vec<SandboxDto>, CallError> {
        let shown = "/sandbox";
        let labels = serde_json::to_string(labels).unwrap_or_else(|_| "{}".to_owned());
        let mut cursor: Option<String> = None;
        let mut out = Vec::new();
        // A bound on pages: a service that keeps returning cursors cannot loop us forever.
        for _ in 0..100 {
            let query: Vec<(&str, &str)> = match &cursor {
                Some(cursor) => vec![("labels", labels.as_str()), ("cursor", cursor.as_str())],
                None => vec![("labels", labels.as_str())],
            };
            let url = with_query(&self.url(shown), &query);
            let response = self.transport.send_ok(PLANE, Method::GET, &url, shown, self.timeout(), &|r| r).await?;
            let page: SandboxPage = self.transport.json(PLANE, &Method::GET, shown, response).await?;
            out.extend(page.items);
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => break,
            }
        }
        Ok(out)
    }

    /// `GET /sandbox/{id}/toolbox-proxy-url`.
    pub async fn toolbox_url(&self, id: &str) -> std::result::Result<String, CallError> {
        let shown = format!("/sandbox/{}/toolbox-proxy-url", segment(id));
        let response =
            self.transport.send_ok(PLANE, Method::GET, &self.url(&shown), &shown, self.timeout(), &|r| r).await?;
        let url: ToolboxUrl = self.transport.json(PLANE, &Method::GET, &shown, response).await?;
        Ok(url.url)
    }

    /// Polls `GET /sandbox/{id}` until `started`: first after `first`, doubling to `max`, for at most `limit`.
    /// `error`, `build_failed`, `destroyed` and `destroying` fail with the service's `errorReason`.
    pub async fn wait_started(
        &self,
        mut dto: SandboxDto,
        first: Duration,
        max: Duration,
        limit: Duration,
    ) -> Result<SandboxDto> {
        let started = tokio::time::Instant::now();
        let mut interval = first;
        loop {
            let state = dto.state.clone().unwrap_or_default();
            match state.as_str() {
                "started" => return Ok(dto),
                "error" | "build_failed" | "destroyed" | "destroying" => {
                    let reason = dto.error_reason.as_deref().filter(|r| !r.trim().is_empty());
                    let reason =
                        reason.map(|r| redact(r, self.transport.key())).unwrap_or_else(|| "no reason given".into());
                    return Err(EngineError::message(format!(
                        "Daytona sandbox {} failed to start (state: {state}): {reason}",
                        dto.id
                    )));
                }
                _ => {}
            }
            if started.elapsed() >= limit {
                return Err(EngineError::message(format!(
                    "Daytona sandbox {} did not start within {} seconds (state: {})",
                    dto.id,
                    limit.as_secs(),
                    if state.is_empty() { "unknown" } else { &state }
                )));
            }
            tokio::time::sleep(interval.min(limit.saturating_sub(started.elapsed()))).await;
            interval = (interval * 2).min(max);
            dto = self.get(&dto.id).await?;
        }
    }
}

/// A sandbox id as one URL path segment (ids are plain; anything else is percent-encoded).
pub(crate) fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `url` with `pairs` as its query, form-encoded.
pub(crate) fn with_query(url: &str, pairs: &[(&str, &str)]) -> String {
    let query: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
    format!("{url}?{query}")
}

/// A reqwest error and its causes, without the URL (it carries nothing secret, but is noise).
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut current: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = current {
        let part = e.to_string();
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

/// Replaces the key wherever a service echoed it.
pub(crate) fn redact(text: &str, key: Option<&str>) -> String {
    match key {
        Some(key) if key.len() >= 4 => text.replace(key, "[redacted]"),
        _ => text.to_owned(),
    }
}
