//! The client of envd, the daemon in an E2B sandbox on port 49983: its address, headers, unary calls and process
//! streams (`sandbox.rs` is the sandbox built on it). Every call goes through the shared transport
//! (`remote::http`).
//!
//! - Base URL: `E2B_SANDBOX_URL`, else `https://sandbox.{domain}` for `e2b.app`, `e2b.dev`, `e2b.pro` and
//!   `e2b-staging.dev`, else `https://49983-{id}.{domain}` (`domain` = the create reply's, `E2B_DOMAIN`, or
//!   `e2b.app`).
//! - Every call carries `E2b-Sandbox-Id`, `E2b-Sandbox-Port: 49983` and `X-Access-Token` (when the sandbox
//!   has one); root is `Authorization: Basic base64("root:")`. The API key is never sent here, and no
//!   redirect is followed, so the token never reaches another origin.
//! - Commands: `process.Process/Start` (a Connect server stream, `connect.rs`) with
//!   `{"process":{"cmd":"/bin/bash","args":["-l","-c",cmd],"envs","cwd"},"stdin":false}`,
//!   `Keepalive-Ping-Interval` (seconds; envd ticks a keepalive at that interval:
//!   `packages/envd/internal/permissions/keepalive.go`), and `Connect-Timeout-Ms` only when the command has a
//!   timeout. The stream begins with `start{pid}`, then `data{stdout|stderr: base64}`, `keepalive{}`,
//!   `end{exitCode,…}` (proto3 JSON omits a zero `exitCode`); `exitCode -1` (a signal), a broken stream and a
//!   stream silent past its keepalives end with no known code. An engine command's output is bounded.
//!   Kill is the unary `process.Process/SendSignal {"process":{"pid"},"signal":"SIGNAL_SIGKILL"}`.
//! - Files: `POST /files?path=` with an octet-stream body from envd 0.5.7 (`handleRawUpload`, infra commit
//!   92011c8a "Support raw body file uploads in envd"); older envd parses only `multipart/form-data` (a part
//!   named `file`) and answers anything else 500, so for it the upload is multipart, as the SDK falls back
//!   (`packages/js-sdk/src/sandbox/filesystem/index.ts`, `ENVD_OCTET_STREAM_UPLOAD`). `GET /files?path=`,
//!   the size limit enforced while streaming.

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};

use super::connect::{self, ServerStream};
use crate::error::{EngineError, Result};
use crate::runtime::remote::http::{self, Call, Failure, Transport};
use crate::runtime::remote::provider::{CommandOptions, User};

/// The envd port.
pub const ENVD_PORT: u16 = 49983;
/// Domains whose sandboxes are reached through `sandbox.{domain}`.
const SHARED_HOST_DOMAINS: [&str; 4] = ["e2b.app", "e2b.dev", "e2b.pro", "e2b-staging.dev"];
/// The first envd that takes an `application/octet-stream` upload.
pub const OCTET_STREAM_UPLOAD: (u64, u64, u64) = (0, 5, 7);
/// How long a killed command's stream may take to end before it is abandoned.
pub(super) const KILL_GRACE: Duration = Duration::from_secs(3);
/// The stream path.
pub(super) const START: &str = "/process.Process/Start";
/// The stream that follows a running process again.
const CONNECT: &str = "/process.Process/Connect";

/// The envd base URL of a sandbox.
pub fn envd_url(sandbox_url: Option<&str>, domain: &str, id: &str) -> String {
    match sandbox_url.filter(|u| !u.is_empty()) {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None if SHARED_HOST_DOMAINS.contains(&domain) => format!("https://sandbox.{domain}"),
        None => format!("https://{ENVD_PORT}-{id}.{domain}"),
    }
}

/// What envd calls of one sandbox share.
#[derive(Clone)]
pub(crate) struct Envd {
    pub id: String,
    pub base: String,
    pub token: Option<String>,
    /// The envd version the create reply named.
    pub version: String,
    /// The shared transport, redacting the access token.
    pub transport: Transport,
}

impl Envd {
    pub fn new(id: &str, base: String, token: Option<String>, version: &str, transport: &Transport) -> Envd {
        let transport = match &token {
            Some(token) => transport.with_secret(token),
            None => transport.clone(),
        };
        Envd { id: id.to_owned(), base, token, version: version.to_owned(), transport }
    }

    /// `E2B sandbox <id>: envd`, how errors name this daemon.
    pub(super) fn service(&self) -> String {
        format!("E2B sandbox {}: envd", self.id)
    }

    pub(super) fn headers(&self, request: reqwest::RequestBuilder, user: User) -> reqwest::RequestBuilder {
        let mut request = request.header("E2b-Sandbox-Id", &self.id).header("E2b-Sandbox-Port", ENVD_PORT.to_string());
        if let Some(token) = &self.token {
            request = request.header("X-Access-Token", token);
        }
        if user == User::Root {
            let basic = base64::engine::general_purpose::STANDARD.encode("root:");
            request = request.header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"));
        }
        request
    }

    /// A unary Connect call.
    pub(super) async fn unary(&self, method: &str, body: &Value) -> Result<Value> {
        let path = format!("/{method}");
        let url = format!("{}{path}", self.base);
        let service = self.service();
        let call = Call {
            service: &service,
            method: reqwest::Method::POST,
            url: &url,
            shown: &path,
            deadline: self.transport.limits().request,
        };
        let build = |request| {
            self.headers(request, User::Default)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header("Connect-Protocol-Version", "1")
                .body(body.to_string())
        };
        let response = self.transport.send_ok(&call, &build).await?;
        Ok(self.transport.json(&call, response).await?)
    }

    /// Opens a `process.Process/Start` stream and reads up to its `start{pid}` (within the request deadline).
    pub(super) async fn start(&self, command: &str, options: &CommandOptions) -> Result<(u64, ServerStream)> {
        let mut process = json!({"cmd": "/bin/bash", "args": ["-l", "-c", command]});
        if let Some(map) = process.as_object_mut() {
            if !options.env.is_empty() {
                map.insert("envs".to_owned(), json!(options.env));
            }
            if let Some(cwd) = &options.cwd {
                map.insert("cwd".to_owned(), json!(cwd));
            }
        }
        self.stream(START, &json!({"process": process, "stdin": false}), options).await
    }

    /// Opens a `process.Process/Connect` stream to the running process `pid` (its events from now on) and
    /// reads up to its `start{pid}`.
    pub(super) async fn connect(&self, pid: u64) -> Result<ServerStream> {
        let (started, stream) =
            self.stream(CONNECT, &json!({"process": {"pid": pid}}), &CommandOptions::default()).await?;
        if started != pid {
            return Err(EngineError::reply(format!(
                "{} {CONNECT} to process {pid} answered for process {started}",
                self.service()
            )));
        }
        Ok(stream)
    }

    /// Opens the server stream `rpc` with `request` and reads up to its `start{pid}`.
    async fn stream(
        &self,
        rpc: &'static str,
        request: &Value,
        options: &CommandOptions,
    ) -> Result<(u64, ServerStream)> {
        let body = Bytes::from(connect::encode(connect::DATA, request.to_string().as_bytes()));
        let limits = self.transport.limits();
        let keepalive = limits.keepalive.as_secs().max(1).to_string();
        let url = format!("{}{rpc}", self.base);
        let service = self.service();
        let call =
            Call { service: &service, method: reqwest::Method::POST, url: &url, shown: rpc, deadline: limits.request };
        let build = |request| {
            let mut request = self
                .headers(request, options.user)
                .header(reqwest::header::CONTENT_TYPE, "application/connect+json")
                .header("Connect-Protocol-Version", "1")
                .header("Keepalive-Ping-Interval", keepalive.as_str());
            if let Some(timeout) = options.timeout {
                request = request.header("Connect-Timeout-Ms", timeout.as_millis().to_string());
            }
            request.body(body.clone())
        };
        let response = self.transport.send_ok(&call, &build).await?;
        let mut stream = ServerStream::new(response);
        let first = async {
            loop {
                let message = stream
                    .next()
                    .await
                    .map_err(|error| self.transport.error(&call, &error.to_string(), Failure::Connection))?;
                let Some(message) = message else {
                    return Err(self.transport.error(
                        &call,
                        "the stream ended before the process started",
                        Failure::Connection,
                    ));
                };
                match event(&message) {
                    Event::Keepalive => continue,
                    Event::Start(pid) => return Ok(pid),
                    _ => {
                        return Err(self.transport.error(
                            &call,
                            "the stream did not begin with the process start",
                            Failure::Connection,
                        ));
                    }
                }
            }
        };
        let pid = self.transport.guard(&call, limits.request, first).await??;
        Ok((pid, stream))
    }

    pub(super) async fn kill_pid(&self, pid: u64) -> Result<()> {
        Envd { transport: self.transport.without_cancel(), ..self.clone() }
            .unary("process.Process/SendSignal", &json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}))
            .await
            .map(|_| ())
    }

    /// Why a stream silent for the silence limit is dead.
    pub(super) fn silent(&self) -> String {
        let limits = self.transport.limits();
        format!(
            "the sandbox's process stream was silent for {} although envd was asked for a keepalive every {}",
            http::seconds(limits.silence),
            http::seconds(limits.keepalive)
        )
    }
}

/// A process stream event.
#[derive(Debug, PartialEq)]
pub(super) enum Event {
    Start(u64),
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Keepalive,
    /// The exit code; `None` for a signal.
    End(Option<i64>),
    Other,
}

pub(super) fn event(message: &Value) -> Event {
    let Some(event) = message.get("event") else { return Event::Other };
    let number = |v: &Value| v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok()));
    if let Some(start) = event.get("start") {
        return Event::Start(start.get("pid").and_then(number).and_then(|p| u64::try_from(p).ok()).unwrap_or(0));
    }
    if let Some(data) = event.get("data") {
        let decode = |v: &Value| v.as_str().and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
        if let Some(bytes) = data.get("stdout").and_then(decode) {
            return Event::Stdout(bytes);
        }
        if let Some(bytes) = data.get("stderr").and_then(decode) {
            return Event::Stderr(bytes);
        }
        return Event::Other;
    }
    if event.get("keepalive").is_some() {
        return Event::Keepalive;
    }
    if let Some(end) = event.get("end") {
        let code = end.get("exitCode").and_then(number).unwrap_or(0);
        return Event::End((code >= 0).then_some(code));
    }
    Event::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envd_urls_follow_the_sdk() {
        assert_eq!(envd_url(Some("http://127.0.0.1:9/"), "e2b.app", "s"), "http://127.0.0.1:9");
        assert_eq!(envd_url(None, "e2b.app", "s"), "https://sandbox.e2b.app");
        assert_eq!(envd_url(None, "example.org", "s1"), "https://49983-s1.example.org");
    }

    #[test]
    fn events_decode_with_proto3_defaults() {
        assert_eq!(event(&json!({"event":{"start":{"pid":100}}})), Event::Start(100));
        assert_eq!(event(&json!({"event":{"data":{"stdout":"aGk="}}})), Event::Stdout(b"hi".to_vec()));
        assert_eq!(event(&json!({"event":{"end":{"exited":true,"status":"exit status 0"}}})), Event::End(Some(0)));
        assert_eq!(event(&json!({"event":{"end":{"exitCode":-1,"status":"signal: killed"}}})), Event::End(None));
        assert_eq!(event(&json!({"event":{"keepalive":{}}})), Event::Keepalive);
        assert!(!crate::runtime::e2b::api::version_at_least("0.5.6", OCTET_STREAM_UPLOAD));
    }
}
