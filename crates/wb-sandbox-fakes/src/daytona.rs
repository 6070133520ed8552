//! A fake Daytona: the control plane under `/api` and the toolbox under `/toolbox/{sandboxId}` on one
//! loopback server, faithful to the wire facts the official SDK showed (`tests/official_sdks_daytona.rs`
//! runs `@daytonaio/sdk` against it). Each sandbox is a [`SandboxRoot`] where commands really run (bubblewrap).
//!
//! Every request is recorded. [`Faults`] change behaviour at runtime: a failing create (after still making
//! the labelled sandbox), a scripted state sequence, leading 429s, failing uploads, commands that never
//! report an exit, a delayed create, a malformed `process/execute` reply; [`DaytonaFake::kill_sandbox`]
//! ends a sandbox under a running client.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::executor::SandboxRoot;
use crate::record::{Recorded, Recorder, headers};

/// How the fake starts.
#[derive(Clone, Debug)]
pub struct Options {
    /// The key every request must carry as `Authorization: Bearer <key>`.
    pub api_key: String,
    /// Host directories bound read-only into every sandbox (host path, sandbox path).
    pub read_only: Vec<(PathBuf, String)>,
    /// How session logs are answered.
    pub logs: LogReplies,
}

impl Default for Options {
    fn default() -> Options {
        Options { api_key: "dtn_fake_key_0123456789".to_owned(), read_only: Vec::new(), logs: LogReplies::Daemon }
    }
}

/// How `GET …/process/session/{sid}/command/{cid}/logs` answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogReplies {
    /// As the daemon does (v0.190.0, `apps/daemon/pkg/toolbox/process/session/log.go` with
    /// `apps/daemon/pkg/session/common.go`): JSON `{output, stdout, stderr}` to a client whose
    /// `X-Daytona-SDK-Version` is 0.167.0 or later (or a dev version), otherwise plain text.
    #[default]
    Daemon,
    /// Plain text whatever the client sends: what the daemon answers a client without the SDK header.
    PlainText,
}

/// Behaviour to inject; change it with [`DaytonaFake::faults`].
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// `POST /sandbox` answers this status (after still creating the labelled sandbox).
    pub create_status: Option<u16>,
    /// `POST /sandbox` answers only after this long (the sandbox exists meanwhile).
    pub create_delay: Option<Duration>,
    /// The states successive `GET /sandbox/{id}` report for the next created sandbox (the last one stays);
    /// default `creating`, then `started`.
    pub states: Option<Vec<String>>,
    /// The `errorReason` reported with those states.
    pub error_reason: Option<String>,
    /// The next this many requests (any route) answer 429 with `Retry-After: retry_after_secs`.
    pub too_many_requests: u32,
    pub retry_after_secs: u64,
    /// `files/bulk-upload` answers this status and writes nothing.
    pub upload_status: Option<u16>,
    /// `files/download` and `files/bulk-download` answer this status (a collection that fails).
    pub download_status: Option<u16>,
    /// Session commands run but never report an exit code.
    pub hang_commands: bool,
    /// `process/execute` answers `{result}` without an `exitCode`.
    pub malformed_execute: bool,
    /// Created sandboxes' DTOs lack `toolboxProxyUrl` (clients must ask `…/toolbox-proxy-url`).
    pub omit_toolbox_url: bool,
    /// The next this many toolbox requests answer 502 (a flaky proxy).
    pub toolbox_failures: u32,
}

/// A running fake; dropping it stops the server and every sandbox.
pub struct DaytonaFake {
    state: Arc<FakeState>,
    address: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    handle: tokio::runtime::Handle,
}

struct FakeState {
    key: String,
    logs: LogReplies,
    toolbox_url: String,
    read_only: Vec<(PathBuf, String)>,
    sandboxes: Mutex<BTreeMap<String, FakeSandbox>>,
    faults: Mutex<Faults>,
    recorder: Recorder,
    counter: AtomicU64,
}

struct FakeSandbox {
    id: String,
    labels: BTreeMap<String, String>,
    cpu: Value,
    memory: Value,
    disk: Value,
    states: VecDeque<String>,
    state: String,
    error_reason: Option<String>,
    omit_toolbox_url: bool,
    /// `ttlMinutes` of the create, then of the last `setTtl`.
    ttl_minutes: u64,
    root: SandboxRoot,
    sessions: BTreeMap<String, BTreeMap<String, Arc<FakeCommand>>>,
}

struct FakeCommand {
    id: String,
    command: String,
    stdout: Mutex<Vec<u8>>,
    stderr: Mutex<Vec<u8>>,
    output: Mutex<Vec<u8>>,
    /// The daemon's log file: each chunk after its stream's prefix (`\x01\x01\x01` stdout, `\x02\x02\x02`
    /// stderr; `libs/common-go/pkg/log/read_multiplex_log.go`).
    log: Mutex<Vec<u8>>,
    exit: Mutex<Option<i32>>,
    pid: Option<u32>,
    stdin: tokio::sync::Mutex<Option<tokio::process::ChildStdin>>,
}

impl DaytonaFake {
    /// Starts the fake on `127.0.0.1:0` on a runtime of its own (usable from any test).
    pub fn start(options: Options) -> std::io::Result<DaytonaFake> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new().name("daytona-fake".into()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = ready_tx.send(Err(error));
                    return;
                }
            };
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                    Ok(listener) => listener,
                    Err(error) => {
                        let _ = ready_tx.send(Err(error));
                        return;
                    }
                };
                let address = match listener.local_addr() {
                    Ok(address) => address,
                    Err(error) => {
                        let _ = ready_tx.send(Err(error));
                        return;
                    }
                };
                let state = Arc::new(FakeState {
                    key: options.api_key.clone(),
                    logs: options.logs,
                    toolbox_url: format!("http://{address}/toolbox"),
                    read_only: options.read_only.clone(),
                    sandboxes: Mutex::new(BTreeMap::new()),
                    faults: Mutex::new(Faults::default()),
                    recorder: Recorder::default(),
                    counter: AtomicU64::new(0),
                });
                let app = Router::new().fallback(handle).with_state(state.clone());
                let _ = ready_tx.send(Ok((state.clone(), address, tokio::runtime::Handle::current())));
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = shutdown_rx.await;
                    })
                    .await;
                state.kill_everything();
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
        })?;
        let (state, address, handle) =
            ready_rx.recv().map_err(|_| std::io::Error::other("the fake's thread ended before listening"))??;
        Ok(DaytonaFake { state, address, shutdown: Some(shutdown_tx), handle })
    }

    /// The control plane's base URL (`http://127.0.0.1:P/api`), what `DAYTONA_API_URL` takes.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.address)
    }

    /// What created sandboxes report as `toolboxProxyUrl`.
    pub fn toolbox_url(&self) -> String {
        self.state.toolbox_url.clone()
    }

    pub fn api_key(&self) -> String {
        self.state.key.clone()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.recorder.all()
    }

    pub fn recorder(&self) -> Recorder {
        self.state.recorder.clone()
    }

    /// Changes the injected faults.
    pub fn faults(&self, change: impl FnOnce(&mut Faults)) {
        if let Ok(mut faults) = self.state.faults.lock() {
            change(&mut faults);
        }
    }

    /// The ids of the sandboxes that exist (not deleted).
    pub fn sandbox_ids(&self) -> Vec<String> {
        self.state.sandboxes.lock().map(|s| s.keys().cloned().collect()).unwrap_or_default()
    }

    /// A sandbox's root, to inspect its files on the host.
    pub fn sandbox_root(&self, id: &str) -> Option<SandboxRoot> {
        self.state.sandboxes.lock().ok()?.get(id).map(|s| s.root.clone())
    }

    /// A sandbox's labels.
    pub fn sandbox_labels(&self, id: &str) -> Option<BTreeMap<String, String>> {
        self.state.sandboxes.lock().ok()?.get(id).map(|s| s.labels.clone())
    }

    /// The sessions a sandbox has open.
    pub fn session_ids(&self, id: &str) -> Vec<String> {
        self.state
            .sandboxes
            .lock()
            .ok()
            .and_then(|s| s.get(id).map(|s| s.sessions.keys().cloned().collect()))
            .unwrap_or_default()
    }

    /// How many session commands of a sandbox have not reported their exit yet.
    pub fn running_commands(&self, id: &str) -> usize {
        let sandboxes = self.state.sandboxes.lock();
        let Some(sandbox) = sandboxes.as_ref().ok().and_then(|s| s.get(id)) else { return 0 };
        let commands = sandbox.sessions.values().flat_map(|commands| commands.values());
        commands.filter(|command| command.exit.lock().is_ok_and(|exit| exit.is_none())).count()
    }

    /// Ends a sandbox as if the service lost it: its processes die and every later call about it fails.
    pub fn kill_sandbox(&self, id: &str) {
        let removed = self.state.sandboxes.lock().ok().and_then(|mut s| s.remove(id));
        if let Some(sandbox) = removed {
            sandbox.root.kill_all();
        }
    }

    /// Runs a future on the fake's runtime (tests use it for [`SandboxRoot`]'s async helpers).
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.handle.block_on(future)
    }
}

impl Drop for DaytonaFake {
    fn drop(&mut self) {
        self.state.kill_everything();
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

impl FakeState {
    fn kill_everything(&self) {
        let all = self.sandboxes.lock().map(|mut s| std::mem::take(&mut *s)).unwrap_or_default();
        for sandbox in all.values() {
            sandbox.root.kill_all();
        }
    }

    fn faults(&self) -> Faults {
        self.faults.lock().map(|f| f.clone()).unwrap_or_default()
    }

    fn dto(&self, sandbox: &FakeSandbox, state: &str) -> Value {
        let mut dto = json!({
            "id": sandbox.id, "organizationId": "org-fake", "name": sandbox.id, "user": "daytona", "env": {},
            "labels": sandbox.labels, "public": false, "networkBlockAll": false, "target": "us",
            "cpu": sandbox.cpu, "gpu": 0, "memory": sandbox.memory, "disk": sandbox.disk, "state": state,
            "createdAt": "2026-01-01T00:00:00.000Z",
        });
        if !sandbox.omit_toolbox_url {
            dto["toolboxProxyUrl"] = Value::from(self.toolbox_url.as_str());
        }
        if let (Some(reason), true) = (&sandbox.error_reason, matches!(state, "error" | "build_failed")) {
            dto["errorReason"] = Value::from(reason.as_str());
        }
        dto
    }

    fn root_of(&self, id: &str) -> Option<SandboxRoot> {
        self.sandboxes.lock().ok()?.get(id).map(|s| s.root.clone())
    }

    fn command_of(&self, id: &str, session: &str, cmd: &str) -> Option<Arc<FakeCommand>> {
        self.sandboxes.lock().ok()?.get(id)?.sessions.get(session)?.get(cmd).cloned()
    }
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    reply(status, json!({ "statusCode": status.as_u16(), "message": message, "error": status.canonical_reason() }))
}

fn status_of(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Every route: record, authenticate, inject 429s, then dispatch on the path.
async fn handle(State(state): State<Arc<FakeState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return error(StatusCode::BAD_REQUEST, "unreadable body");
    };
    state.recorder.push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or_default().to_owned(),
        headers: headers(&parts.headers),
        body: bytes.to_vec(),
    });
    let expected = format!("Bearer {}", state.key);
    if parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    let retry_after = {
        let Ok(mut faults) = state.faults.lock() else { return error(StatusCode::INTERNAL_SERVER_ERROR, "poisoned") };
        if faults.too_many_requests > 0 {
            faults.too_many_requests -= 1;
            Some(faults.retry_after_secs)
        } else {
            None
        }
    };
    if let Some(seconds) = retry_after {
        let mut response = error(StatusCode::TOO_MANY_REQUESTS, "Too many requests");
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let path = parts.uri.path().to_owned();
    let flaky = path.starts_with("/toolbox/")
        && state.faults.lock().is_ok_and(|mut f| {
            let fail = f.toolbox_failures > 0;
            f.toolbox_failures = f.toolbox_failures.saturating_sub(1);
            fail
        });
    if flaky {
        return error(StatusCode::BAD_GATEWAY, "fake: the toolbox proxy failed");
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let json_body = || serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null);
    let query = Query::<HashMap<String, String>>::try_from_uri(&parts.uri).map(|q| q.0).unwrap_or_default();
    let method = parts.method.clone();
    match (method, segments.as_slice()) {
        (Method::POST, ["api", "sandbox"]) => create(&state, json_body()).await,
        (Method::GET, ["api", "sandbox"]) => list(&state, &query),
        (Method::GET, ["api", "sandbox", id]) => get(&state, id),
        (Method::DELETE, ["api", "sandbox", id]) => delete(&state, id),
        // The SDK's `setTtl`: destroyed `minutes` from now, re-anchored at each call; answers the sandbox.
        (Method::POST, ["api", "sandbox", id, "ttl", minutes]) => match minutes.parse::<u64>() {
            Ok(minutes) => set_ttl(&state, id, minutes),
            Err(_) => error(StatusCode::BAD_REQUEST, "ttlMinutes must be a non-negative integer"),
        },
        (Method::GET, ["api", "sandbox", id, "toolbox-proxy-url"]) => {
            if state.root_of(id).is_some() {
                reply(StatusCode::OK, json!({ "url": state.toolbox_url }))
            } else {
                error(StatusCode::NOT_FOUND, "Sandbox not found")
            }
        }
        (method, ["toolbox", id, rest @ ..]) => {
            let Some(root) = state.root_of(id) else { return error(StatusCode::NOT_FOUND, "Sandbox not found") };
            let id = (*id).to_owned();
            match (method, rest) {
                (Method::POST, ["process", "execute"]) => execute(&state, &root, json_body()).await,
                (Method::POST, ["process", "session"]) => create_session(&state, &id, json_body()),
                (Method::POST, ["process", "session", sid, "exec"]) => exec(&state, &id, &root, sid, json_body()).await,
                (Method::GET, ["process", "session", sid, "command", cid]) => match state.command_of(&id, sid, cid) {
                    Some(command) => {
                        let mut body = json!({ "id": command.id, "command": command.command });
                        if let Some(code) = command.exit.lock().ok().and_then(|e| *e) {
                            body["exitCode"] = Value::from(code);
                        }
                        reply(StatusCode::OK, body)
                    }
                    None => error(StatusCode::NOT_FOUND, "command not found"),
                },
                (Method::GET, ["process", "session", sid, "command", cid, "logs"]) => {
                    match state.command_of(&id, sid, cid) {
                        Some(command) => logs_reply(&command, &parts.headers, state.logs),
                        None => error(StatusCode::NOT_FOUND, "command not found"),
                    }
                }
                (Method::POST, ["process", "session", sid, "command", cid, "input"]) => {
                    let Some(command) = state.command_of(&id, sid, cid) else {
                        return error(StatusCode::NOT_FOUND, "command not found");
                    };
                    let data = json_body()["data"].as_str().unwrap_or_default().to_owned();
                    let mut stdin = command.stdin.lock().await;
                    let written = match stdin.as_mut() {
                        Some(pipe) => pipe.write_all(data.as_bytes()).await.is_ok(),
                        None => false,
                    };
                    if written {
                        StatusCode::OK.into_response()
                    } else {
                        error(StatusCode::CONFLICT, "the command's input is closed")
                    }
                }
                (Method::DELETE, ["process", "session", sid]) => delete_session(&state, &id, &root, sid),
                (Method::POST, ["files", "bulk-upload"]) => {
                    upload(&state, &root, Request::from_parts(parts, Body::from(bytes))).await
                }
                (Method::GET | Method::POST, ["files", "download" | "bulk-download"])
                    if state.faults().download_status.is_some() =>
                {
                    error(status_of(state.faults().download_status.unwrap_or(500)), "fake: download failed")
                }
                (Method::GET, ["files", "download"]) => {
                    let Some(path) = query.get("path") else {
                        return error(StatusCode::BAD_REQUEST, "path is required");
                    };
                    match root.read_file(path).await {
                        Ok(Some(bytes)) => {
                            ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
                        }
                        Ok(None) => error(StatusCode::NOT_FOUND, &format!("file not found: {path}")),
                        Err(e) => error(StatusCode::BAD_GATEWAY, &e.to_string()),
                    }
                }
                (Method::POST, ["files", "bulk-download"]) => bulk_download(&root, json_body()).await,
                _ => error(StatusCode::NOT_FOUND, &format!("fake: no route {} {path}", parts.method)),
            }
        }
        _ => error(StatusCode::NOT_FOUND, &format!("fake: no route {} {path}", parts.method)),
    }
}

async fn create(state: &Arc<FakeState>, body: Value) -> Response {
    let faults = state.faults();
    let labels: BTreeMap<String, String> = serde_json::from_value(body["labels"].clone()).unwrap_or_default();
    let Ok(root) = SandboxRoot::new(state.read_only.clone()) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "fake: cannot make a sandbox root");
    };
    let n = state.counter.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("sbx-{n:04}");
    let or = |value: &Value, default: u64| if value.is_number() { value.clone() } else { Value::from(default) };
    let states = faults.states.clone().unwrap_or_else(|| vec!["creating".to_owned(), "started".to_owned()]);
    let sandbox = FakeSandbox {
        id: id.clone(),
        labels,
        cpu: or(&body["cpu"], 1),
        memory: or(&body["memory"], 1),
        disk: or(&body["disk"], 3),
        states: states.into(),
        state: "creating".to_owned(),
        error_reason: faults.error_reason.clone(),
        omit_toolbox_url: faults.omit_toolbox_url,
        ttl_minutes: body["ttlMinutes"].as_u64().unwrap_or(0),
        root,
        sessions: BTreeMap::new(),
    };
    let dto = state.dto(&sandbox, "creating");
    if let Ok(mut sandboxes) = state.sandboxes.lock() {
        sandboxes.insert(id, sandbox);
    }
    if let Some(delay) = faults.create_delay {
        tokio::time::sleep(delay).await;
    }
    if let Some(status) = faults.create_status {
        return error(status_of(status), "fake: create failed");
    }
    reply(StatusCode::OK, dto)
}

fn get(state: &Arc<FakeState>, id: &str) -> Response {
    let Ok(mut sandboxes) = state.sandboxes.lock() else { return error(StatusCode::INTERNAL_SERVER_ERROR, "poisoned") };
    let Some(sandbox) = sandboxes.get_mut(id) else { return error(StatusCode::NOT_FOUND, "Sandbox not found") };
    if let Some(next) = sandbox.states.pop_front() {
        sandbox.state = next;
    }
    if sandbox.states.is_empty() {
        sandbox.states.push_back(sandbox.state.clone());
    }
    let current = sandbox.state.clone();
    reply(StatusCode::OK, state.dto(sandbox, &current))
}

fn delete(state: &Arc<FakeState>, id: &str) -> Response {
    let removed = state.sandboxes.lock().ok().and_then(|mut s| s.remove(id));
    match removed {
        Some(sandbox) => {
            sandbox.root.kill_all();
            reply(StatusCode::OK, state.dto(&sandbox, "destroying"))
        }
        None => error(StatusCode::NOT_FOUND, "Sandbox not found"),
    }
}

fn set_ttl(state: &Arc<FakeState>, id: &str, minutes: u64) -> Response {
    let Ok(mut sandboxes) = state.sandboxes.lock() else { return error(StatusCode::INTERNAL_SERVER_ERROR, "lock") };
    match sandboxes.get_mut(id) {
        Some(sandbox) => {
            sandbox.ttl_minutes = minutes;
            let dto = state.dto(sandbox, &sandbox.state.clone());
            reply(StatusCode::OK, dto)
        }
        None => error(StatusCode::NOT_FOUND, "Sandbox not found"),
    }
}

fn list(state: &Arc<FakeState>, query: &HashMap<String, String>) -> Response {
    let wanted: BTreeMap<String, String> = match query.get("labels") {
        Some(text) => match serde_json::from_str(text) {
            Ok(labels) => labels,
            Err(_) => return error(StatusCode::BAD_REQUEST, "labels must be a JSON object of strings"),
        },
        None => BTreeMap::new(),
    };
    let Ok(sandboxes) = state.sandboxes.lock() else { return error(StatusCode::INTERNAL_SERVER_ERROR, "poisoned") };
    let items: Vec<Value> = sandboxes
        .values()
        .filter(|s| wanted.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| state.dto(s, &s.state))
        .collect();
    reply(StatusCode::OK, json!({ "items": items, "nextCursor": null }))
}

async fn execute(state: &Arc<FakeState>, root: &SandboxRoot, body: Value) -> Response {
    let Some(command) = body["command"].as_str() else { return error(StatusCode::BAD_REQUEST, "command is required") };
    let envs: BTreeMap<String, String> = serde_json::from_value(body["envs"].clone()).unwrap_or_default();
    let cwd = body["cwd"].as_str();
    let timeout = body["timeout"].as_u64().filter(|t| *t > 0).unwrap_or(360);
    let ran = tokio::time::timeout(Duration::from_secs(timeout), root.run(command, cwd, &envs)).await;
    match ran {
        Err(_) => error(StatusCode::REQUEST_TIMEOUT, "command timed out"),
        Ok(Err(e)) => error(StatusCode::BAD_GATEWAY, &format!("cannot run the command: {e}")),
        Ok(Ok((code, mut stdout, stderr))) => {
            stdout.extend_from_slice(&stderr);
            let result = String::from_utf8_lossy(&stdout).into_owned();
            if state.faults().malformed_execute {
                return reply(StatusCode::OK, json!({ "result": result }));
            }
            reply(StatusCode::OK, json!({ "exitCode": code, "result": result }))
        }
    }
}

fn create_session(state: &Arc<FakeState>, id: &str, body: Value) -> Response {
    let Some(session) = body["sessionId"].as_str() else {
        return error(StatusCode::BAD_REQUEST, "sessionId is required");
    };
    let Ok(mut sandboxes) = state.sandboxes.lock() else { return error(StatusCode::INTERNAL_SERVER_ERROR, "poisoned") };
    let Some(sandbox) = sandboxes.get_mut(id) else { return error(StatusCode::NOT_FOUND, "Sandbox not found") };
    if sandbox.sessions.contains_key(session) {
        return error(StatusCode::CONFLICT, "session already exists");
    }
    sandbox.sessions.insert(session.to_owned(), BTreeMap::new());
    StatusCode::CREATED.into_response()
}

async fn exec(state: &Arc<FakeState>, id: &str, root: &SandboxRoot, session: &str, body: Value) -> Response {
    let Some(command) = body["command"].as_str() else { return error(StatusCode::BAD_REQUEST, "command is required") };
    let run_async = body["runAsync"].as_bool().unwrap_or(false);
    let exists =
        state.sandboxes.lock().ok().is_some_and(|s| s.get(id).is_some_and(|s| s.sessions.contains_key(session)));
    if !exists {
        return error(StatusCode::NOT_FOUND, "session not found");
    }
    let mut spawned = match root.spawn(command, None, &BTreeMap::new(), true) {
        Ok(spawned) => spawned,
        Err(e) => return error(StatusCode::BAD_GATEWAY, &format!("cannot start the command: {e}")),
    };
    let n = state.counter.fetch_add(1, Ordering::SeqCst) + 1;
    let command = Arc::new(FakeCommand {
        id: format!("cmd-{n:04}"),
        command: command.to_owned(),
        stdout: Mutex::new(Vec::new()),
        stderr: Mutex::new(Vec::new()),
        output: Mutex::new(Vec::new()),
        log: Mutex::new(Vec::new()),
        exit: Mutex::new(None),
        pid: spawned.child.id(),
        stdin: tokio::sync::Mutex::new(spawned.child.stdin.take()),
    });
    if let Ok(mut sandboxes) = state.sandboxes.lock()
        && let Some(commands) = sandboxes.get_mut(id).and_then(|s| s.sessions.get_mut(session))
    {
        commands.insert(command.id.clone(), command.clone());
    }
    let hang = state.faults().hang_commands;
    let follower = command.clone();
    let stdout = spawned.child.stdout.take();
    let stderr = spawned.child.stderr.take();
    let mut child = spawned.child;
    let done = tokio::spawn(async move {
        let out = capture(stdout, follower.clone(), true);
        let err = capture(stderr, follower.clone(), false);
        let _ = tokio::join!(out, err);
        let code = match child.wait().await {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(-1)
            }
            Err(_) => -1,
        };
        if let (false, Ok(mut exit)) = (hang, follower.exit.lock()) {
            *exit = Some(code);
        }
    });
    if run_async {
        return reply(StatusCode::OK, json!({ "cmdId": command.id }));
    }
    let _ = done.await;
    let output = command.output.lock().map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let code = command.exit.lock().ok().and_then(|e| *e);
    reply(StatusCode::OK, json!({ "cmdId": command.id, "output": output, "exitCode": code }))
}

const STDOUT_PREFIX: &[u8] = &[1, 1, 1];
const STDERR_PREFIX: &[u8] = &[2, 2, 2];

/// A command's logs as the daemon answers them (v0.190.0): `GetSessionCommandLogs` in
/// `apps/daemon/pkg/toolbox/process/session/log.go`, deciding by `IsCombinedOutput` and `SkipServerDemux` of
/// `apps/daemon/pkg/session/common.go`, the prefixes removed from a combined log as `GetSessionCommandLogs` of
/// `apps/daemon/pkg/session/log.go` does, plain text written by gin's `c.String` (`text/plain`).
fn logs_reply(command: &FakeCommand, headers: &axum::http::HeaderMap, replies: LogReplies) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let sdk = if replies == LogReplies::PlainText { String::new() } else { header("X-Daytona-SDK-Version") };
    let dev = sdk.contains("dev");
    // `util.CompareVersions` failing counts as newer (`versionComparison = 1`) for the combined check.
    let older_than = |minimum: (u64, u64, u64)| version(&sdk).map(|v| v < minimum);
    let combined = (older_than((0, 27, 0)) == Some(true) && !dev)
        || (sdk.is_empty() && header("X-Daytona-Split-Output") != "true");
    let skip_demux = sdk.is_empty() || (!dev && older_than((0, 167, 0)).unwrap_or(true));
    let log = command.log.lock().map(|l| l.clone()).unwrap_or_default();
    let (stdout, stderr) = demux(&log);
    if !skip_demux && !combined {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        return reply(
            StatusCode::OK,
            json!({ "output": text(&log), "stdout": text(&stdout), "stderr": text(&stderr) }),
        );
    }
    let body = if combined { strip_prefixes(&log) } else { log };
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// `major.minor.patch` of a version (a suffix ignored), `None` when it does not read as one.
fn version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.split(['.', '-', '+']);
    let mut next = || parts.next()?.parse::<u64>().ok();
    Some((next()?, next()?, next()?))
}

fn strip_prefixes(log: &[u8]) -> Vec<u8> {
    let (mut out, mut rest) = (Vec::with_capacity(log.len()), log);
    while !rest.is_empty() {
        if rest.starts_with(STDOUT_PREFIX) || rest.starts_with(STDERR_PREFIX) {
            rest = &rest[3..];
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    out
}

/// The log's stdout and stderr (`DemuxLogBytes`).
fn demux(log: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut stdout, mut stderr, mut to_stderr, mut rest) = (Vec::new(), Vec::new(), false, log);
    while !rest.is_empty() {
        if rest.starts_with(STDOUT_PREFIX) || rest.starts_with(STDERR_PREFIX) {
            to_stderr = rest.starts_with(STDERR_PREFIX);
            rest = &rest[3..];
        } else {
            if to_stderr { &mut stderr } else { &mut stdout }.push(rest[0]);
            rest = &rest[1..];
        }
    }
    (stdout, stderr)
}

async fn capture<R: tokio::io::AsyncRead + Unpin>(pipe: Option<R>, command: Arc<FakeCommand>, stdout: bool) {
    let Some(mut pipe) = pipe else { return };
    let mut buffer = vec![0u8; 8192];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let stream = if stdout { &command.stdout } else { &command.stderr };
        if let Ok(mut bytes) = stream.lock() {
            bytes.extend_from_slice(&buffer[..n]);
        }
        if let Ok(mut bytes) = command.output.lock() {
            bytes.extend_from_slice(&buffer[..n]);
        }
        if let Ok(mut log) = command.log.lock() {
            log.extend_from_slice(if stdout { STDOUT_PREFIX } else { STDERR_PREFIX });
            log.extend_from_slice(&buffer[..n]);
        }
    }
}

fn delete_session(state: &Arc<FakeState>, id: &str, root: &SandboxRoot, session: &str) -> Response {
    let removed = state.sandboxes.lock().ok().and_then(|mut s| s.get_mut(id).and_then(|s| s.sessions.remove(session)));
    match removed {
        Some(commands) => {
            for command in commands.values() {
                if let Some(pid) = command.pid {
                    root.kill(pid);
                }
            }
            StatusCode::NO_CONTENT.into_response()
        }
        None => error(StatusCode::NOT_FOUND, "session not found"),
    }
}

async fn upload(state: &Arc<FakeState>, root: &SandboxRoot, request: Request) -> Response {
    if let Some(status) = state.faults().upload_status {
        return error(status_of(status), "fake: upload failed");
    }
    let mut multipart = match Multipart::from_request(request, &()).await {
        Ok(multipart) => multipart,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("not multipart: {e}")),
    };
    let mut paths: BTreeMap<String, String> = BTreeMap::new();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return error(StatusCode::BAD_REQUEST, &format!("bad multipart: {e}")),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let Ok(bytes) = field.bytes().await else { return error(StatusCode::BAD_REQUEST, "bad multipart field") };
        if let Some(index) = name.strip_prefix("files[").and_then(|rest| rest.split_once("].")) {
            match index.1 {
                "path" => {
                    paths.insert(index.0.to_owned(), String::from_utf8_lossy(&bytes).into_owned());
                }
                "file" => {
                    files.insert(index.0.to_owned(), bytes.to_vec());
                }
                _ => {}
            }
        }
    }
    if paths.is_empty() {
        return error(StatusCode::BAD_REQUEST, "no files[N].path fields");
    }
    for (index, path) in &paths {
        let Some(bytes) = files.get(index) else { return error(StatusCode::BAD_REQUEST, "a path without a file") };
        if let Err(e) = root.write_file(path, bytes).await {
            return error(StatusCode::BAD_REQUEST, &format!("cannot write {path}: {e}"));
        }
    }
    StatusCode::OK.into_response()
}

async fn bulk_download(root: &SandboxRoot, body: Value) -> Response {
    let boundary = "wb-fake-boundary-7d1c";
    let mut out: Vec<u8> = Vec::new();
    for path in body["paths"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        match root.read_file(path).await {
            Ok(Some(bytes)) => {
                out.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes());
                out.extend_from_slice(&bytes);
            }
            _ => {
                let message = json!({ "message": format!("file not found: {path}"), "statusCode": 404 }).to_string();
                out.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"error\"; filename=\"{path}\"\r\nContent-Type: application/json\r\n\r\n{message}").as_bytes());
            }
        }
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    ([(header::CONTENT_TYPE, format!("multipart/form-data; boundary={boundary}"))], out).into_response()
}

/// One recorded request as a wire-fixture entry, with volatile parts normalised so recordings of the
/// official SDK and of our client compare: `method`, `path` (ids replaced), `query` (decoded; `labels`
/// parsed as JSON), the key headers (`authorization` with the key replaced by `<DAYTONA_API_KEY>`,
/// `content-type` without parameters) and `body` (JSON with ids replaced, a multipart body as its field
/// names, `null` when empty).
pub fn wire_entry(request: &Recorded, key: &str) -> Value {
    let mut headers = serde_json::Map::new();
    if let Some(value) = request.header("authorization") {
        let shown =
            if value == format!("Bearer {key}") { "Bearer <DAYTONA_API_KEY>".to_owned() } else { value.to_owned() };
        headers.insert("authorization".into(), Value::from(shown));
    }
    let media = request.header("content-type").map(|v| v.split(';').next().unwrap_or_default().trim().to_owned());
    if let Some(media) = &media {
        headers.insert("content-type".into(), Value::from(media.as_str()));
    }
    let mut query = serde_json::Map::new();
    let uri = format!("/?{}", request.query);
    if let Ok(uri) = uri.parse::<axum::http::Uri>()
        && let Ok(Query(pairs)) = Query::<Vec<(String, String)>>::try_from_uri(&uri)
    {
        for (name, value) in pairs {
            let value = if name == "labels" {
                serde_json::from_str(&value).unwrap_or(Value::from(value))
            } else {
                Value::from(normalise_ids(&value))
            };
            query.insert(name, value);
        }
    }
    let body = if request.body.is_empty() {
        Value::Null
    } else if media.as_deref() == Some("multipart/form-data") {
        let text = String::from_utf8_lossy(&request.body);
        let names: Vec<Value> =
            text.split(" name=\"").skip(1).filter_map(|rest| rest.split('"').next()).map(Value::from).collect();
        json!({ "multipart": names })
    } else {
        match serde_json::from_slice::<Value>(&request.body) {
            Ok(value) => serde_json::from_str(&normalise_ids(&value.to_string())).unwrap_or(value),
            Err(_) => json!({ "bytes": request.body.len() }),
        }
    };
    json!({
        "method": request.method,
        "path": normalise_ids(&request.path),
        "query": query,
        "headers": headers,
        "body": body,
    })
}

/// Replaces the fake's sandbox (`sbx-0001`) and command (`cmd-0002`) ids and session ids (`wb-` and 32 hex
/// digits) with placeholders.
pub fn normalise_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'outer: while !rest.is_empty() {
        for (prefix, digits, hex, placeholder) in
            [("sbx-", 4, false, "<sandbox>"), ("cmd-", 4, false, "<command>"), ("wb-", 32, true, "<session>")]
        {
            if let Some(tail) = rest.strip_prefix(prefix) {
                let run =
                    tail.chars().take_while(|c| if hex { c.is_ascii_hexdigit() } else { c.is_ascii_digit() }).count();
                if run == digits {
                    out.push_str(placeholder);
                    rest = &tail[digits..];
                    continue 'outer;
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}
