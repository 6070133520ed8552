//! The Daytona control plane (`DAYTONA_API_URL`, REST + JSON, `Authorization: Bearer <key>`): create a
//! sandbox, poll it until `started`, delete it, list sandboxes by labels, look up the toolbox URL. The same
//! [`Transport`] also carries the toolbox calls: the shared transport (`remote::http`: a deadline on every
//! call, bounded replies, cancellation, no redirect, one retry policy) with the Bearer header and the SDK
//! version header the daemon dispatches on, and errors in the reference's words
//! (`Daytona API <METHOD> <path> failed with <status>: <body ≤ 500 chars>`). The key is only ever put in
//! the `Authorization` header; it is never part of a URL, an error or a log line.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::Deserialize;

use crate::error::{EngineError, Limit, Result};
use crate::runtime::remote::http::{self, Call, HttpError};

/// The SDK version this client speaks as (`X-Daytona-SDK-Version`). The daemon answers session logs as
/// JSON with separate stdout and stderr only to clients at 0.167.0 or later, and plain text to every other
/// (`apps/daemon/pkg/session/common.go` `IsCombinedOutput`/`SkipServerDemux`,
/// `apps/daemon/pkg/toolbox/process/session/log.go`, v0.190.0); this is the version whose daemon sources the
/// client was checked against. The official SDK sends its own version on every call (`Daytona.ts`).
pub(crate) const SDK_VERSION: &str = "0.190.0";

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

/// A failed call (its text, and whether the service may still have acted: `uncertain()`).
pub(crate) type CallError = HttpError;

/// The shared transport with the key: base URLs are given per call.
#[derive(Clone)]
pub(crate) struct Transport {
    http: http::Transport,
    key: Option<String>,
    pub request_timeout: Duration,
}

impl Transport {
    pub fn new(key: Option<String>, request_timeout: Duration, options: http::Options) -> Result<Transport> {
        let mut http = http::Transport::new("Daytona", options)?;
        if let Some(key) = &key {
            http = http.with_secret(key);
        }
        Ok(Transport { http, key, request_timeout })
    }

    pub fn has_key(&self) -> bool {
        self.key.as_deref().is_some_and(|k| !k.is_empty())
    }

    /// The same transport, not stopped by cancellation (deleting sandboxes and sessions after Ctrl-C).
    pub fn for_cleanup(&self) -> Transport {
        Transport { http: self.http.without_cancel(), ..self.clone() }
    }

    pub fn http(&self) -> &http::Transport {
        &self.http
    }

    /// Sends the request `call` names, built by `build` (called again for each retry), with the Bearer and SDK
    /// version headers, within its deadline, under the shared retry policy. Any status but a redirect is
    /// returned to the caller as is.
    pub async fn send(
        &self,
        call: &Call<'_>,
        build: &(dyn Fn(RequestBuilder) -> RequestBuilder + Sync),
    ) -> std::result::Result<Response, CallError> {
        let build = |request: RequestBuilder| {
            let mut request = request.header("X-Daytona-SDK-Version", SDK_VERSION);
            if let Some(key) = &self.key {
                request = request.bearer_auth(key);
            }
            build(request)
        };
        self.http.send(call, &build).await
    }

    /// [`Transport::send`] of `method` on `url` within `timeout`, then a non-2xx status becomes the reference's
    /// error text. `plane` and `shown` name the call in errors (`Daytona API`, `POST /sandbox`).
    pub async fn send_ok(
        &self,
        plane: &str,
        method: Method,
        url: &str,
        shown: &str,
        timeout: Duration,
        build: &(dyn Fn(RequestBuilder) -> RequestBuilder + Sync),
    ) -> std::result::Result<Response, CallError> {
        let call = Call { service: plane, method, url, shown, deadline: timeout };
        let response = self.send(&call, build).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.http.status_error(&call, response).await)
    }

    pub async fn status_error(&self, plane: &str, method: &Method, shown: &str, response: Response) -> CallError {
        let call = Call { service: plane, method: method.clone(), url: "", shown, deadline: self.request_timeout };
        self.http.status_error(&call, response).await
    }

    /// Reads a reply of at most `limit` bytes (more is an error naming the limit).
    pub async fn bytes(
        &self,
        plane: &str,
        method: &Method,
        shown: &str,
        response: Response,
        limit: u64,
    ) -> std::result::Result<Vec<u8>, CallError> {
        let call = Call { service: plane, method: method.clone(), url: "", shown, deadline: self.request_timeout };
        self.http.read(&call, response, limit).await
    }

    /// Reads a JSON reply (at most the reply limit).
    pub async fn json<T: serde::de::DeserializeOwned>(
        &self,
        plane: &str,
        method: &Method,
        shown: &str,
        response: Response,
    ) -> std::result::Result<T, CallError> {
        let call = Call { service: plane, method: method.clone(), url: "", shown, deadline: self.request_timeout };
        self.http.json(&call, response).await
    }

    /// Removes the key (and any credential the transport carries) from a text.
    pub fn redact(&self, text: &str) -> String {
        self.http.redact(text)
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

    /// `POST /sandbox/{id}/ttl/{minutes}`: the sandbox is now destroyed `minutes` from now (the SDK's
    /// `setTtl`, re-anchored at each call).
    pub async fn set_ttl(&self, id: &str, minutes: u64) -> std::result::Result<(), CallError> {
        let shown = format!("/sandbox/{}/ttl/{minutes}", segment(id));
        self.transport.send_ok(PLANE, Method::POST, &self.url(&shown), &shown, self.timeout(), &|r| r).await?;
        Ok(())
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
        let transport = self.transport.for_cleanup();
        let url = self.url(&shown);
        let call = Call { service: PLANE, method: Method::DELETE, url: &url, shown: &shown, deadline: self.timeout() };
        let response = transport.send(&call, &|r| r).await?;
        if response.status().is_success() || response.status() == StatusCode::NOT_FOUND {
            return Ok(());
        }
        Err(transport.status_error(PLANE, &Method::DELETE, &shown, response).await)
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
            let transport = self.transport.for_cleanup();
            let response = transport.send_ok(PLANE, Method::GET, &url, shown, self.timeout(), &|r| r).await?;
            let page: SandboxPage = transport.json(PLANE, &Method::GET, shown, response).await?;
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
                    let reason = reason.map(|r| self.transport.redact(r)).unwrap_or_else(|| "no reason given".into());
                    return Err(EngineError::message(format!(
                        "Daytona sandbox {} failed to start (state: {state}): {reason}",
                        dto.id
                    )));
                }
                _ => {}
            }
            if started.elapsed() >= limit {
                return Err(EngineError::limit(
                    Limit::Time,
                    format!(
                        "Daytona sandbox {} did not start within {} seconds (state: {})",
                        dto.id,
                        limit.as_secs(),
                        if state.is_empty() { "unknown" } else { &state }
                    ),
                ));
            }
            let pause = interval.min(limit.saturating_sub(started.elapsed()));
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = self.transport.http().cancel().cancelled() => {
                    return Err(EngineError::cancelled(format!("Waiting for Daytona sandbox {} to start was cancelled", dto.id)));
                }
            }
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
