//! One E2B sandbox: commands and files through envd, the in-sandbox daemon on port 49983, and destruction
//! through the control plane.
//!
//! - Base URL: `E2B_SANDBOX_URL`, else `https://sandbox.{domain}` for `e2b.app`, `e2b.dev`, `e2b.pro` and
//!   `e2b-staging.dev`, else `https://49983-{id}.{domain}` (`domain` = the create reply's, `E2B_DOMAIN`, or
//!   `e2b.app`).
//! - Every call carries `E2b-Sandbox-Id`, `E2b-Sandbox-Port: 49983` and `X-Access-Token` (when the sandbox
//!   has one); root is `Authorization: Basic base64("root:")`. The API key is never sent here.
//! - Commands: `process.Process/Start` (a Connect server stream, `connect.rs`) with
//!   `{"process":{"cmd":"/bin/bash","args":["-l","-c",cmd],"envs","cwd"},"stdin":false}`,
//!   `Keepalive-Ping-Interval: 50`, and `Connect-Timeout-Ms` only when the command has a timeout. The stream
//!   begins with `start{pid}`, then `data{stdout|stderr: base64}`, `keepalive{}`, `end{exitCode,…}` (proto3
//!   JSON omits a zero `exitCode`); `exitCode -1` (a signal) and a broken stream end with no known code.
//!   Kill is the unary `process.Process/SendSignal {"process":{"pid"},"signal":"SIGNAL_SIGKILL"}`.
//! - Files: `POST /files?path=` with an octet-stream body; `GET /files?path=`, each chunk within 60 s, the
//!   size limit enforced while streaming.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::runtime::Handle;

use super::api::Api;
use super::connect::{self, ServerStream};
use crate::error::{EngineError, Result};
use crate::runtime::channel::ChannelReader;
use crate::runtime::remote::provider::{
    CommandOptions, CommandOutput, Killer, RemoteProcess, Resources, Sandbox, User,
};

/// How long envd may take to answer a Start and report the process started.
const START_LIMIT: Duration = Duration::from_secs(60);

/// The envd port.
pub const ENVD_PORT: u16 = 49983;
/// Domains whose sandboxes are reached through `sandbox.{domain}`.
const SHARED_HOST_DOMAINS: [&str; 4] = ["e2b.app", "e2b.dev", "e2b.pro", "e2b-staging.dev"];
/// A download chunk must arrive within this.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Unary envd calls give up after this.
const UNARY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a killed command's stream may take to end before it is abandoned.
const KILL_GRACE: Duration = Duration::from_secs(3);
/// Chunks buffered per output stream of a started command.
const CHANNEL_CHUNKS: usize = 256;

/// The envd base URL of a sandbox.
pub fn envd_url(sandbox_url: Option<&str>, domain: &str, id: &str) -> String {
    match sandbox_url.filter(|u| !u.is_empty()) {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None if SHARED_HOST_DOMAINS.contains(&domain) => format!("https://sandbox.{domain}"),
        None => format!("https://{ENVD_PORT}-{id}.{domain}"),
    }
}

/// What envd calls of one sandbox share.
pub(crate) struct Envd {
    pub id: String,
    pub base: String,
    pub token: Option<String>,
    pub http: reqwest::Client,
}

impl Envd {
    fn request(&self, method: reqwest::Method, path: &str, user: User) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("E2b-Sandbox-Id", &self.id)
            .header("E2b-Sandbox-Port", ENVD_PORT.to_string());
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
    async fn unary(&self, method: &str, body: &Value) -> Result<Value> {
        let path = format!("/{method}");
        let response = self
            .request(reqwest::Method::POST, &path, User::Default)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Connect-Protocol-Version", "1")
            .timeout(UNARY_TIMEOUT)
            .body(body.to_string())
            .send()
            .await
            .map_err(|error| envd_error(&self.id, &path, &super::api::without_url(&error)))?;
        let status = response.status();
        let bytes = response.bytes().await.unwrap_or_default();
        if !status.is_success() {
            return Err(envd_status_error(&self.id, "POST", &path, status.as_u16(), &bytes));
        }
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// Opens a `process.Process/Start` stream and reads up to its `start{pid}`.
    async fn start(&self, command: &str, options: &CommandOptions) -> Result<(u64, ServerStream)> {
        let mut process = json!({"cmd": "/bin/bash", "args": ["-l", "-c", command]});
        if let Some(map) = process.as_object_mut() {
            if !options.env.is_empty() {
                map.insert("envs".to_owned(), json!(options.env));
            }
            if let Some(cwd) = &options.cwd {
                map.insert("cwd".to_owned(), json!(cwd));
            }
        }
        let body = json!({"process": process, "stdin": false});
        let mut request = self
            .request(reqwest::Method::POST, "/process.Process/Start", options.user)
            .header(reqwest::header::CONTENT_TYPE, "application/connect+json")
            .header("Connect-Protocol-Version", "1")
            .header("Keepalive-Ping-Interval", "50");
        if let Some(timeout) = options.timeout {
            request = request.header("Connect-Timeout-Ms", timeout.as_millis().to_string());
        }
        let path = "/process.Process/Start";
        let send = request.body(connect::encode(connect::DATA, body.to_string().as_bytes())).send();
        // The reply's headers and the start event come quickly or not at all (the stream itself has no limit).
        let response = tokio::time::timeout(START_LIMIT, send)
            .await
            .map_err(|_| envd_error(&self.id, path, "no answer within 60 seconds"))?
            .map_err(|error| envd_error(&self.id, path, &super::api::without_url(&error)))?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response.bytes().await.unwrap_or_default();
            return Err(envd_status_error(&self.id, "POST", path, status.as_u16(), &bytes));
        }
        let mut stream = ServerStream::new(response);
        let deadline = tokio::time::Instant::now() + START_LIMIT;
        loop {
            let message = tokio::time::timeout_at(deadline, stream.next())
                .await
                .map_err(|_| envd_error(&self.id, path, "the process did not start within 60 seconds"))?
                .map_err(|error| envd_error(&self.id, path, &error))?;
            let Some(message) = message else {
                return Err(envd_error(&self.id, path, "the stream ended before the process started"));
            };
            match event(&message) {
                Event::Keepalive => continue,
                Event::Start(pid) => return Ok((pid, stream)),
                _ => return Err(envd_error(&self.id, path, "the stream did not begin with the process start")),
            }
        }
    }

    async fn kill_pid(&self, pid: u64) -> Result<()> {
        self.unary("process.Process/SendSignal", &json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}))
            .await
            .map(|_| ())
    }
}

fn envd_error(id: &str, path: &str, detail: &str) -> EngineError {
    EngineError::message(format!("E2B sandbox {id}: envd {path} failed: {detail}"))
}

fn envd_status_error(id: &str, method: &str, path: &str, status: u16, body: &[u8]) -> EngineError {
    let text: String = String::from_utf8_lossy(body).trim().chars().take(500).collect();
    EngineError::message(format!("E2B sandbox {id}: envd {method} {path} failed with {status}: {text}"))
}

/// A process stream event.
#[derive(Debug, PartialEq)]
enum Event {
    Start(u64),
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Keepalive,
    /// The exit code; `None` for a signal.
    End(Option<i64>),
    Other,
}

fn event(message: &Value) -> Event {
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

/// A sandbox of E2B.
pub struct E2bSandbox {
    pub(crate) envd: Arc<Envd>,
    pub(crate) api: Api,
    pub(crate) handle: Handle,
    pub(crate) destroyed: AtomicBool,
}

impl E2bSandbox {
    async fn run_async(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        let (pid, mut stream) = self.envd.start(command, options).await?;
        let mut output = CommandOutput::default();
        loop {
            let message = stream.next().await.map_err(|error| {
                envd_error(&self.envd.id, "/process.Process/Start", &format!("{error} (pid {pid})"))
            })?;
            let Some(message) = message else {
                return Err(envd_error(
                    &self.envd.id,
                    "/process.Process/Start",
                    "the stream ended without the process end",
                ));
            };
            match event(&message) {
                Event::Stdout(bytes) => output.stdout.extend(bytes),
                Event::Stderr(bytes) => output.stderr.extend(bytes),
                Event::End(code) => {
                    output.exit_code = code.unwrap_or(-1);
                    // Read to the end-of-stream, which may carry an error.
                    if let Err(error) = stream.next().await {
                        return Err(envd_error(&self.envd.id, "/process.Process/Start", &error));
                    }
                    return Ok(output);
                }
                _ => {}
            }
        }
    }

    async fn download_async(&self, path: &str, limit: u64) -> Result<Vec<u8>> {
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("path", path).finish();
        let route = format!("/files?{query}");
        let response =
            tokio::time::timeout(IDLE_TIMEOUT, self.envd.request(reqwest::Method::GET, &route, User::Default).send())
                .await
                .map_err(|_| envd_error(&self.envd.id, "GET /files", "no reply within 60 s"))?
                .map_err(|error| envd_error(&self.envd.id, "GET /files", &super::api::without_url(&error)))?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response.bytes().await.unwrap_or_default();
            return Err(envd_status_error(&self.envd.id, "GET", "/files", status.as_u16(), &bytes));
        }
        if response.content_length().is_some_and(|length| length > limit) {
            return Err(limit_error(limit));
        }
        let mut body = response.bytes_stream();
        let mut out = Vec::new();
        loop {
            let chunk = tokio::time::timeout(IDLE_TIMEOUT, body.next())
                .await
                .map_err(|_| envd_error(&self.envd.id, "GET /files", "no data for 60 s"))?;
            match chunk {
                None => return Ok(out),
                Some(Err(error)) => {
                    return Err(envd_error(&self.envd.id, "GET /files", &super::api::without_url(&error)));
                }
                Some(Ok(chunk)) => {
                    if out.len() as u64 + chunk.len() as u64 > limit {
                        return Err(limit_error(limit));
                    }
                    out.extend_from_slice(&chunk);
                }
            }
        }
    }
}

/// `E2B output exceeds the <N> transfer safety limit`.
pub fn limit_error(limit: u64) -> EngineError {
    const MIB: u64 = 1024 * 1024;
    let size = if limit >= MIB && limit % MIB == 0 { format!("{} MiB", limit / MIB) } else { format!("{limit} byte") };
    EngineError::message(format!("E2B output exceeds the {size} transfer safety limit"))
}

impl Sandbox for E2bSandbox {
    fn id(&self) -> &str {
        &self.envd.id
    }

    fn resources(&self) -> Result<Resources> {
        let info = self.handle.block_on(self.api.info(&self.envd.id))?;
        let number = |key: &str| info.get(key).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
        Ok(Resources { cpu: number("cpuCount"), memory_mib: number("memoryMB"), disk_mib: number("diskSizeMB") })
    }

    fn run(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        self.handle.block_on(async {
            match options.timeout {
                None => self.run_async(command, options).await,
                // The service enforces the deadline (Connect-Timeout-Ms); this one is a backstop.
                Some(timeout) => {
                    tokio::time::timeout(timeout + Duration::from_secs(5), self.run_async(command, options))
                        .await
                        .map_err(|_| {
                            EngineError::message(format!(
                                "E2B sandbox {}: the command did not finish within {} s",
                                self.envd.id,
                                timeout.as_secs()
                            ))
                        })?
                }
            }
        })
    }

    fn start(&self, command: &str, options: &CommandOptions) -> Result<RemoteProcess> {
        let (pid, mut stream) = self.handle.block_on(self.envd.start(command, options))?;
        let (stdout_tx, stdout_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (stderr_tx, stderr_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (exit_tx, exit_rx) = std::sync::mpsc::channel::<crate::runtime::Exit>();
        let (killed_tx, mut killed_rx) = tokio::sync::watch::channel(false);
        self.handle.spawn(async move {
            let killed = async {
                while !*killed_rx.borrow_and_update() {
                    if killed_rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                tokio::time::sleep(KILL_GRACE).await;
            };
            tokio::pin!(killed);
            let code = loop {
                let message = tokio::select! {
                    message = stream.next() => message,
                    () = &mut killed => break crate::runtime::Exit::code(None),
                };
                match message {
                    Ok(Some(message)) => match event(&message) {
                        Event::Stdout(bytes) => {
                            let _ = stdout_tx.send(Bytes::from(bytes)).await;
                        }
                        Event::Stderr(bytes) => {
                            let _ = stderr_tx.send(Bytes::from(bytes)).await;
                        }
                        Event::End(code) => break crate::runtime::Exit::code(code),
                        _ => {}
                    },
                    Ok(None) => {
                        break crate::runtime::Exit::unknown(
                            "the sandbox's process stream ended without an exit status",
                        );
                    }
                    Err(error) => {
                        break crate::runtime::Exit::unknown(format!("the sandbox's process stream broke: {error}"));
                    }
                }
            };
            drop(stdout_tx);
            drop(stderr_tx);
            let _ = exit_tx.send(code);
        });
        Ok(RemoteProcess {
            stdout: Box::new(ChannelReader::new(stdout_rx)),
            stderr: Box::new(ChannelReader::new(stderr_rx)),
            exit: exit_rx,
            killer: Box::new(E2bKiller {
                envd: self.envd.clone(),
                handle: self.handle.clone(),
                pid,
                killed: killed_tx,
                done: false,
            }),
        })
    }

    fn upload(&self, path: &str, bytes: &[u8]) -> Result<()> {
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("path", path).finish();
        let route = format!("/files?{query}");
        let body = bytes.to_vec();
        self.handle.block_on(async {
            let response = self
                .envd
                .request(reqwest::Method::POST, &route, User::Default)
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                .body(body)
                .send()
                .await
                .map_err(|error| envd_error(&self.envd.id, "POST /files", &super::api::without_url(&error)))?;
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            let bytes = response.bytes().await.unwrap_or_default();
            let mut error = envd_status_error(&self.envd.id, "POST", "/files", status.as_u16(), &bytes);
            if status.as_u16() == 507 {
                error = EngineError::message(format!("{error} (the sandbox is out of disk space)"));
            }
            Err(error)
        })
    }

    fn download(&self, path: &str, limit: u64) -> Result<Vec<u8>> {
        self.handle.block_on(self.download_async(path, limit))
    }

    fn destroy(&self) -> Result<()> {
        if self.destroyed.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.handle.block_on(self.api.kill(&self.envd.id))?;
        self.destroyed.store(true, Ordering::SeqCst);
        Ok(())
    }
}

/// Sends SIGKILL to a started process; its stream is abandoned if it does not end soon after.
struct E2bKiller {
    envd: Arc<Envd>,
    handle: Handle,
    pid: u64,
    killed: tokio::sync::watch::Sender<bool>,
    done: bool,
}

impl Killer for E2bKiller {
    fn kill(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let _ = self.killed.send(true);
        let envd = self.envd.clone();
        let pid = self.pid;
        let _ = self
            .handle
            .block_on(async move { tokio::time::timeout(Duration::from_secs(10), envd.kill_pid(pid)).await });
    }
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
        assert_eq!(limit_error(512 * 1024 * 1024).to_string(), "E2B output exceeds the 512 MiB transfer safety limit");
    }
}
