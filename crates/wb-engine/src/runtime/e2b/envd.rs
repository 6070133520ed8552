//! One E2B sandbox: commands and files through envd, the in-sandbox daemon on port 49983, and destruction
//! through the control plane. Every call goes through the shared transport (`remote::http`).
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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::runtime::Handle;

use super::api::Api;
use super::connect::{self, ServerStream};
use super::follow::follow;
use crate::error::{EngineError, Result};
use crate::runtime::channel::ChannelReader;
use crate::runtime::remote::http::{self, Call, Failure, HttpError, Transport};
use crate::runtime::remote::provider::{
    CommandOptions, CommandOutput, Killer, RemoteProcess, Resources, Sandbox, User,
};
use crate::runtime::remote::shell::quote;

/// The envd port.
pub const ENVD_PORT: u16 = 49983;
/// Domains whose sandboxes are reached through `sandbox.{domain}`.
const SHARED_HOST_DOMAINS: [&str; 4] = ["e2b.app", "e2b.dev", "e2b.pro", "e2b-staging.dev"];
/// The first envd that takes an `application/octet-stream` upload.
pub const OCTET_STREAM_UPLOAD: (u64, u64, u64) = (0, 5, 7);
/// How long a killed command's stream may take to end before it is abandoned.
pub(super) const KILL_GRACE: Duration = Duration::from_secs(3);
/// Chunks buffered per output stream of a started command.
const CHANNEL_CHUNKS: usize = 256;
/// The stream path.
const START: &str = "/process.Process/Start";
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
    fn service(&self) -> String {
        format!("E2B sandbox {}: envd", self.id)
    }

    fn headers(&self, request: reqwest::RequestBuilder, user: User) -> reqwest::RequestBuilder {
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
    async fn unary(&self, method: &str, body: &Value) -> Result<Value> {
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
    async fn connect(&self, pid: u64) -> Result<ServerStream> {
        let (started, stream) =
            self.stream(CONNECT, &json!({"process": {"pid": pid}}), &CommandOptions::default()).await?;
        if started != pid {
            return Err(EngineError::message(format!(
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
                let message =
                    stream.next().await.map_err(|error| self.transport.error(&call, &error, Failure::Connection))?;
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

    async fn kill_pid(&self, pid: u64) -> Result<()> {
        Envd { transport: self.transport.without_cancel(), ..self.clone() }
            .unary("process.Process/SendSignal", &json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}))
            .await
            .map(|_| ())
    }

    /// Why a stream silent for the silence limit is dead.
    fn silent(&self) -> String {
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

/// A sandbox of E2B.
pub struct E2bSandbox {
    pub(crate) envd: Arc<Envd>,
    pub(crate) api: Api,
    pub(crate) handle: Handle,
    pub(crate) destroyed: AtomicBool,
}

impl E2bSandbox {
    /// The process `pid` as the runtime follows it: its output and end from the channels a following task fills,
    /// killed by SIGKILL (which sets `killed` for that task).
    fn process(
        &self,
        pid: u64,
        (stdout, stderr, exit): (
            tokio::sync::mpsc::Receiver<Bytes>,
            tokio::sync::mpsc::Receiver<Bytes>,
            std::sync::mpsc::Receiver<crate::runtime::Exit>,
        ),
        killed: tokio::sync::watch::Sender<bool>,
        handle: Value,
    ) -> RemoteProcess {
        RemoteProcess {
            stdout: Box::new(ChannelReader::new(stdout)),
            stderr: Box::new(ChannelReader::new(stderr)),
            exit,
            killer: Box::new(E2bKiller {
                envd: self.envd.clone(),
                handle: self.handle.clone(),
                pid,
                killed,
                done: false,
            }),
            handle,
        }
    }

    /// Runs a command to completion; its output together is bounded by the output limit (the command is killed
    /// and the run is an error past it), a silent stream is dead.
    async fn run_async(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        let (pid, mut stream) = self.envd.start(command, options).await?;
        let limits = self.envd.transport.limits();
        let fail = |detail: String| {
            EngineError::message(format!("{} {START} failed: {detail} (pid {pid})", self.envd.service()))
        };
        let mut output = CommandOutput::default();
        loop {
            let message = tokio::time::timeout(limits.silence, stream.next())
                .await
                .map_err(|_| fail(self.envd.silent()))?
                .map_err(fail)?;
            let Some(message) = message else {
                return Err(fail("the stream ended without the process end".to_owned()));
            };
            match event(&message) {
                Event::Stdout(bytes) => output.stdout.extend(bytes),
                Event::Stderr(bytes) => output.stderr.extend(bytes),
                Event::End(code) => {
                    output.exit_code = code.unwrap_or(-1);
                    // Read to the end-of-stream, which may carry an error.
                    tokio::time::timeout(limits.silence, stream.next())
                        .await
                        .map_err(|_| fail(self.envd.silent()))?
                        .map_err(fail)?;
                    return Ok(output);
                }
                _ => {}
            }
            if (output.stdout.len() + output.stderr.len()) as u64 > limits.output {
                drop(stream);
                let _ = self.envd.kill_pid(pid).await;
                return Err(EngineError::message(format!(
                    "{}: the command's output exceeds the {} limit (it was killed)",
                    self.envd.service(),
                    http::size(limits.output)
                )));
            }
        }
    }

    fn files_call<'a>(
        &'a self,
        method: reqwest::Method,
        url: &'a str,
        service: &'a str,
        deadline: Duration,
    ) -> Call<'a> {
        Call { service, method, url, shown: "/files", deadline }
    }

    async fn download_async(&self, path: &str, limit: u64) -> Result<Vec<u8>> {
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("path", path).finish();
        let url = format!("{}/files?{query}", self.envd.base);
        let service = self.envd.service();
        let transport = &self.envd.transport;
        let call = self.files_call(reqwest::Method::GET, &url, &service, transport.limits().transfer(limit));
        let response = transport.send_ok(&call, &|request| self.envd.headers(request, User::Default)).await?;
        transport.read(&call, response, limit).await.map_err(|error| match error.failure {
            Failure::TooLarge => limit_error(limit),
            _ => error.into(),
        })
    }

    async fn upload_async(&self, path: &str, bytes: Bytes) -> Result<()> {
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("path", path).finish();
        let url = format!("{}/files?{query}", self.envd.base);
        let service = self.envd.service();
        let transport = &self.envd.transport;
        let call =
            self.files_call(reqwest::Method::POST, &url, &service, transport.limits().transfer(bytes.len() as u64));
        let octet_stream = super::api::version_at_least(&self.envd.version, OCTET_STREAM_UPLOAD);
        let build = |request| {
            let request = self.envd.headers(request, User::Default);
            if octet_stream {
                return request.header(reqwest::header::CONTENT_TYPE, "application/octet-stream").body(bytes.clone());
            }
            let part = reqwest::multipart::Part::stream(bytes.clone()).file_name(path.to_owned());
            request.multipart(reqwest::multipart::Form::new().part("file", part))
        };
        match transport.send_ok(&call, &build).await {
            Ok(_) => Ok(()),
            Err(HttpError { text, failure: Failure::Status(507) }) => {
                Err(EngineError::message(format!("{text} (the sandbox is out of disk space)")))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// `future` stopped by the run's cancellation, naming the sandbox.
    async fn cancellable<T>(&self, what: &str, future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        tokio::select! {
            result = future => result,
            () = self.envd.transport.cancel().cancelled() => {
                Err(EngineError::message(format!("{}: {what} was cancelled", self.envd.service())))
            }
        }
    }
}

/// `E2B output exceeds the <N> transfer safety limit`.
pub fn limit_error(limit: u64) -> EngineError {
    const MIB: u64 = 1024 * 1024;
    let size = if limit >= MIB && limit.is_multiple_of(MIB) {
        format!("{} MiB", limit / MIB)
    } else {
        format!("{limit} byte")
    };
    EngineError::message(format!("E2B output exceeds the {size} transfer safety limit"))
}

impl Sandbox for E2bSandbox {
    fn id(&self) -> &str {
        &self.envd.id
    }

    fn extend_lease(&self, lease: Duration) -> Result<()> {
        self.handle.block_on(self.api.set_timeout(&self.envd.id, lease))
    }

    fn resources(&self) -> Result<Resources> {
        let info = self.handle.block_on(self.api.info(&self.envd.id))?;
        let number = |key: &str| info.get(key).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
        Ok(Resources { cpu: number("cpuCount"), memory_mib: number("memoryMB"), disk_mib: number("diskSizeMB") })
    }

    fn run(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput> {
        self.handle.block_on(self.cancellable("the command", async {
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
        }))
    }

    fn start(&self, command: &str, options: &CommandOptions) -> Result<RemoteProcess> {
        // envd keeps no output of a process nobody follows: the runner's stdout is also appended to a file, so a
        // supervisor that takes the run over ([`Sandbox::reattach`]) reads it from the first byte.
        let output = format!("/tmp/workbench-output-{}", wb_outcomes::random_hex(16));
        let command = if options.reattachable {
            format!(
                "if command -v tee >/dev/null 2>&1; then exec > >(tee -a {o}; : > {o}.done); fi; {command}",
                o = quote(&output)
            )
        } else {
            command.to_owned()
        };
        let (pid, stream) = self.handle.block_on(self.envd.start(&command, options))?;
        let (stdout_tx, stdout_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (stderr_tx, stderr_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (exit_tx, exit_rx) = std::sync::mpsc::channel::<crate::runtime::Exit>();
        let (killed_tx, killed_rx) = tokio::sync::watch::channel(false);
        let limits = (self.envd.transport.limits().silence, self.envd.silent());
        self.handle.spawn(async move {
            let code = follow(stream, Some((&stdout_tx, &stderr_tx)), killed_rx, limits).await;
            drop(stdout_tx);
            drop(stderr_tx);
            let _ = exit_tx.send(code);
        });
        let handle = if options.reattachable { json!({"pid": pid, "output": output}) } else { Value::Null };
        Ok(self.process(pid, (stdout_rx, stderr_rx, exit_rx), killed_tx, handle))
    }

    fn reattach(&self, handle: &Value) -> Result<RemoteProcess> {
        let pid = handle.get("pid").and_then(Value::as_u64);
        let output = handle.get("output").and_then(Value::as_str).filter(|o| o.starts_with("/tmp/workbench-output-"));
        let (Some(pid), Some(output)) = (pid, output) else {
            return Err(EngineError::message(format!("Not an E2B runner process: {handle}")));
        };
        let o = quote(output);
        let present = self.run(&format!("test -f {o}"), &CommandOptions::default())?;
        if !present.success() {
            return Err(EngineError::message(format!(
                "The runner's output was not kept in sandbox {} (the image has no tee)",
                self.envd.id
            )));
        }
        // The runner's end from envd when it still runs; once it has ended nobody can know its exit status.
        let connected = self.handle.block_on(self.envd.connect(pid)).ok();
        // Its output from the file, from the first byte, until the writer (tee) has ended and all is read: by
        // size, so no byte is read twice or missed whatever the timing.
        let tail = format!(
            "sent=0; while :; do finished=0; [ -e {o}.done ] && finished=1; size=$(stat -c %s {o}); \
             if [ \"$size\" -gt \"$sent\" ]; then tail -c +$((sent + 1)) {o} | head -c $((size - sent)); sent=$size; \
             elif [ \"$finished\" = 1 ]; then exit 0; fi; sleep 0.2; done"
        );
        let (_, output_stream) = self.handle.block_on(self.envd.start(&tail, &CommandOptions::default()))?;
        let (stdout_tx, stdout_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (stderr_tx, stderr_rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_CHUNKS);
        let (exit_tx, exit_rx) = std::sync::mpsc::channel::<crate::runtime::Exit>();
        let (killed_tx, killed_rx) = tokio::sync::watch::channel(false);
        let limits = (self.envd.transport.limits().silence, self.envd.silent());
        let envd = self.envd.clone();
        let marker = format!(": > {o}.done");
        self.handle.spawn(async move {
            let code = super::follow::reattached(
                (&envd, &marker),
                output_stream,
                connected,
                (&stdout_tx, &stderr_tx),
                killed_rx,
                limits,
            )
            .await;
            drop(stdout_tx);
            drop(stderr_tx);
            let _ = exit_tx.send(code);
        });
        Ok(self.process(pid, (stdout_rx, stderr_rx, exit_rx), killed_tx, handle.clone()))
    }

    fn upload(&self, path: &str, bytes: &[u8]) -> Result<()> {
        self.handle.block_on(self.upload_async(path, Bytes::copy_from_slice(bytes)))
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
        assert!(!crate::runtime::e2b::api::version_at_least("0.5.6", OCTET_STREAM_UPLOAD));
        assert_eq!(limit_error(512 * 1024 * 1024).to_string(), "E2B output exceeds the 512 MiB transfer safety limit");
    }
}
