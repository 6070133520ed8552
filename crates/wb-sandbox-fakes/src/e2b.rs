//! A fake of E2B: the control plane (REST) and envd (Connect with the JSON codec, `/files`) on one server at
//! `127.0.0.1:<port>`. Tests point both `E2B_API_URL` and `E2B_SANDBOX_URL` at it; envd requests are told
//! apart by their `E2b-Sandbox-Id` header. Every request is recorded.
//!
//! Control plane (checks `X-API-KEY`, else 401 `{code,message}`): `GET /templates/aliases/{n}`,
//! `POST /v3/templates`, `GET /templates/{t}/files/{h}` (+ the `PUT /upload/{h}` sink, which demands an
//! exact `Content-Length`), `POST /v2/templates/{t}/builds/{b}`, `GET …/status?logsOffset=`,
//! `POST /v2/sandboxes`, `GET`/`DELETE /sandboxes/{id}`, `POST /sandboxes/{id}/timeout`,
//! `GET /v2/sandboxes?metadata=`, `POST /sandboxes/{id}/pause` (204; 409 when already paused) and
//! `POST /v2/sandboxes/{id}/connect` (200 running, 201 resumed; the sandbox's details and envd token). A paused
//! sandbox's envd answers 502, as the service's proxy does, and its processes stay as they were.
//! envd (checks `X-Access-Token`): `POST /process.Process/Start` (really runs `bash -lc` in the sandbox's
//! [`SandboxRoot`], streaming start, keepalive, data…, end, end-of-stream), `SendSignal`, `SendInput`,
//! `CloseStdin`, `filesystem.Filesystem/Stat`, `POST`/`GET /files`, `GET /health`.
//!
//! Creating a sandbox from a built template runs the template's RUN steps and unpacks its COPY archives in
//! the new root. Faults ([`Faults`]) are set at runtime.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::executor::{SandboxRoot, quote};
use crate::record::{Recorded, Recorder, headers};

/// Faults to inject; change them with [`E2bFake::set_faults`].
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// `POST /v2/sandboxes` answers this status (with a JSON `{code,message}`).
    pub create_status: Option<u16>,
    /// `POST /v2/sandboxes` waits this long first.
    pub create_delay: Option<Duration>,
    /// The next this-many control-plane requests answer 429 with `Retry-After: retry_after`.
    pub rate_limited: u32,
    pub retry_after: u64,
    /// `POST /files` answers this status.
    pub upload_status: Option<u16>,
    /// `GET /files` answers this status (a collection that fails).
    pub download_status: Option<u16>,
    /// `Start` streams never send their end (the process still runs; its output still streams).
    pub hang_start: bool,
    /// `Start` streams fall silent after the start event: no output, no keepalive, no end, the connection
    /// left open (a half-open connection as the client sees it).
    pub silent_stream: bool,
    /// A template build ends in `error` with this reason.
    pub build_error: Option<String>,
}

/// How the fake starts.
#[derive(Clone, Debug)]
pub struct FakeOptions {
    pub api_key: String,
    /// Host directories bound read-only into every sandbox (host path, sandbox path).
    pub read_only: Vec<(PathBuf, String)>,
    /// The envd version create reports.
    pub envd_version: String,
    /// Template names that exist but belong to another team (alias lookups answer 403).
    pub foreign_templates: Vec<String>,
}

impl Default for FakeOptions {
    fn default() -> FakeOptions {
        FakeOptions {
            api_key: "e2b_fake_test_key_0123456789".to_owned(),
            read_only: Vec::new(),
            envd_version: "0.5.7".to_owned(),
            foreign_templates: Vec::new(),
        }
    }
}

/// A built template.
#[derive(Clone, Debug, Default)]
pub struct FakeTemplate {
    pub id: String,
    pub names: Vec<String>,
    /// The last build's start body (`fromImage`, `steps`, …).
    pub build: Option<Value>,
    pub ready: bool,
}

struct Build {
    template_id: String,
    polls: usize,
    logs: Vec<String>,
    failed: Option<String>,
}

struct Process {
    bwrap_pid: Option<u32>,
    stdin: Option<tokio::process::ChildStdin>,
    /// Every event after `start` (data, end), for `Connect` streams: as in envd, a client that connects gets
    /// the events from then on, none from before.
    events: tokio::sync::broadcast::Sender<Bytes>,
}

/// One live sandbox.
#[derive(Clone)]
pub struct FakeSandbox {
    pub id: String,
    pub template_id: String,
    pub metadata: BTreeMap<String, String>,
    pub env: BTreeMap<String, String>,
    pub timeout: u64,
    pub token: String,
    pub root: SandboxRoot,
    /// Paused (`POST /sandboxes/{id}/pause`) until a connect resumes it.
    pub paused: bool,
    processes: Arc<Mutex<HashMap<u64, Process>>>,
}

impl FakeSandbox {
    /// How many processes envd started in the sandbox still run (an ended one is gone before its end is sent,
    /// so a `Connect` to it is refused from then on).
    pub fn running(&self) -> usize {
        self.processes.lock().map(|p| p.len()).unwrap_or(0)
    }
}

struct Shared {
    options: FakeOptions,
    recorder: Recorder,
    faults: Mutex<Faults>,
    templates: Mutex<Vec<FakeTemplate>>,
    builds: Mutex<HashMap<String, Build>>,
    uploads: Mutex<HashMap<String, Vec<u8>>>,
    sandboxes: Mutex<BTreeMap<String, FakeSandbox>>,
    counter: Mutex<u64>,
    url: String,
}

impl Shared {
    fn next(&self) -> u64 {
        let mut counter = self.counter.lock().unwrap_or_else(|e| e.into_inner());
        *counter += 1;
        *counter
    }

    fn faults(&self) -> Faults {
        self.faults.lock().map(|f| f.clone()).unwrap_or_default()
    }
}

/// The running fake. Dropping it stops the server and every sandbox.
pub struct E2bFake {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl E2bFake {
    /// Starts the fake on its own runtime (so blocking clients and subprocesses can use it).
    pub fn start(options: FakeOptions) -> std::io::Result<E2bFake> {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            options,
            recorder: Recorder::default(),
            faults: Mutex::new(Faults::default()),
            templates: Mutex::new(Vec::new()),
            builds: Mutex::new(HashMap::new()),
            uploads: Mutex::new(HashMap::new()),
            sandboxes: Mutex::new(BTreeMap::new()),
            counter: Mutex::new(0),
            url,
        });
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(E2bFake { shared, runtime: Some(runtime) })
    }

    pub fn url(&self) -> &str {
        &self.shared.url
    }

    pub fn api_key(&self) -> &str {
        &self.shared.options.api_key
    }

    /// The environment a client needs to use this fake.
    pub fn env(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("E2B_API_KEY".to_owned(), self.api_key().to_owned()),
            ("E2B_API_URL".to_owned(), self.url().to_owned()),
            ("E2B_SANDBOX_URL".to_owned(), self.url().to_owned()),
        ])
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.recorder.all()
    }

    pub fn clear_requests(&self) {
        self.shared.recorder.clear();
    }

    pub fn set_faults(&self, faults: Faults) {
        if let Ok(mut current) = self.shared.faults.lock() {
            *current = faults;
        }
    }

    pub fn faults(&self) -> Faults {
        self.shared.faults()
    }

    /// The live sandboxes.
    pub fn sandboxes(&self) -> Vec<FakeSandbox> {
        self.shared.sandboxes.lock().map(|s| s.values().cloned().collect()).unwrap_or_default()
    }

    pub fn sandbox(&self, id: &str) -> Option<FakeSandbox> {
        self.shared.sandboxes.lock().ok()?.get(id).cloned()
    }

    pub fn templates(&self) -> Vec<FakeTemplate> {
        self.shared.templates.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Registers a ready template under `name` (a cache hit for clients).
    pub fn add_template(&self, name: &str) -> String {
        let id = format!("tpl_{}", self.shared.next());
        if let Ok(mut templates) = self.shared.templates.lock() {
            templates.push(FakeTemplate { id: id.clone(), names: vec![name.to_owned()], build: None, ready: true });
        }
        id
    }

    /// The sandbox dies: its processes end, running streams break, it is forgotten.
    pub fn kill_sandbox(&self, id: &str) {
        let sandbox = self.shared.sandboxes.lock().ok().and_then(|mut s| s.remove(id));
        if let Some(sandbox) = sandbox {
            sandbox.root.kill_all();
        }
    }

    /// The bytes uploaded for a files hash.
    pub fn uploaded(&self, hash: &str) -> Option<Vec<u8>> {
        self.shared.uploads.lock().ok()?.get(hash).cloned()
    }
}

impl Drop for E2bFake {
    fn drop(&mut self) {
        for sandbox in self.sandboxes() {
            sandbox.root.kill_all();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn reply(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [("content-type", "application/json")], body.to_string()).into_response()
}

fn error(status: u16, message: &str) -> Response {
    reply(status, json!({"code": status, "message": message}))
}

fn empty(status: u16) -> Response {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR).into_response()
}

fn query_map(uri: &Uri) -> HashMap<String, String> {
    Query::<HashMap<String, String>>::try_from_uri(uri).map(|q| q.0).unwrap_or_default()
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    shared.recorder.push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers: headers(&parts.headers),
        body: body.to_vec(),
    });
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    if let Some(id) = parts.headers.get("e2b-sandbox-id").and_then(|v| v.to_str().ok()) {
        return envd(&shared, id, &method, &path, &parts.uri, &parts.headers, body).await;
    }
    if method == "PUT" && path.starts_with("/upload/") {
        let declared = parts.headers.get("content-length").and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if declared != Some(body.len()) {
            return error(411, "an exact Content-Length is required");
        }
        let hash = path.trim_start_matches("/upload/").to_owned();
        if let Ok(mut uploads) = shared.uploads.lock() {
            uploads.insert(hash, body.to_vec());
        }
        return empty(200);
    }
    if parts.headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(shared.options.api_key.as_str()) {
        return error(401, "Invalid API key");
    }
    {
        let mut faults = shared.faults.lock().unwrap_or_else(|e| e.into_inner());
        if faults.rate_limited > 0 {
            faults.rate_limited -= 1;
            let mut response = error(429, "rate limit exceeded");
            if let Ok(value) = faults.retry_after.to_string().parse() {
                response.headers_mut().insert("retry-after", value);
            }
            return response;
        }
    }
    control(&shared, &method, &path, &parts.uri, body).await
}

async fn control(shared: &Arc<Shared>, method: &str, path: &str, uri: &Uri, body: Bytes) -> Response {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match (method, segments.as_slice()) {
        ("GET", ["templates", "aliases", name]) => {
            if shared.options.foreign_templates.iter().any(|n| n == name) {
                return error(403, "template alias is owned by another team");
            }
            let templates = shared.templates.lock().map(|t| t.clone()).unwrap_or_default();
            match templates.iter().find(|t| t.ready && t.names.iter().any(|n| n == name)) {
                Some(template) => reply(200, json!({"templateID": template.id, "public": false})),
                None => error(404, "template alias not found"),
            }
        }
        ("POST", ["v3", "templates"]) => {
            let Some(name) = json_body.get("name").and_then(Value::as_str) else {
                return error(400, "name is required");
            };
            let build_id = format!("bld_{}", shared.next());
            let template_id = {
                let mut templates = shared.templates.lock().unwrap_or_else(|e| e.into_inner());
                match templates.iter().find(|t| t.names.iter().any(|n| n == name)) {
                    Some(template) => template.id.clone(),
                    None => {
                        let id = format!("tpl_{}", shared.next());
                        templates.push(FakeTemplate {
                            id: id.clone(),
                            names: vec![name.to_owned()],
                            build: None,
                            ready: false,
                        });
                        id
                    }
                }
            };
            if let Ok(mut builds) = shared.builds.lock() {
                builds.insert(
                    build_id.clone(),
                    Build { template_id: template_id.clone(), polls: 0, logs: Vec::new(), failed: None },
                );
            }
            reply(
                202,
                json!({"templateID": template_id, "buildID": build_id, "names": [name], "tags": ["default"], "aliases": [], "public": false}),
            )
        }
        ("GET", ["templates", template, "files", hash]) => {
            let present = shared.uploads.lock().map(|u| u.contains_key(*hash)).unwrap_or(false);
            if present {
                reply(200, json!({"present": true}))
            } else {
                let _ = template;
                reply(201, json!({"present": false, "url": format!("{}/upload/{hash}", shared.url)}))
            }
        }
        ("POST", ["v2", "templates", template, "builds", build]) => {
            let steps = json_body.get("steps").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut logs =
                vec![format!("Building from {}", json_body.get("fromImage").and_then(Value::as_str).unwrap_or("?"))];
            for (index, step) in steps.iter().enumerate() {
                logs.push(format!(
                    "step {}: {} {}",
                    index + 1,
                    step.get("type").and_then(Value::as_str).unwrap_or("?"),
                    step.get("args").map(Value::to_string).unwrap_or_default()
                ));
            }
            for step in steps.iter().filter(|s| s.get("type").and_then(Value::as_str) == Some("COPY")) {
                let hash = step.get("filesHash").and_then(Value::as_str).unwrap_or("");
                if !shared.uploads.lock().map(|u| u.contains_key(hash)).unwrap_or(false) {
                    return error(400, &format!("files for hash {hash} were not uploaded"));
                }
            }
            let mut builds = shared.builds.lock().unwrap_or_else(|e| e.into_inner());
            let Some(record) = builds.get_mut(*build).filter(|b| b.template_id == *template) else {
                return error(404, "build not found");
            };
            record.logs = logs;
            record.failed = shared.faults().build_error;
            if let Ok(mut templates) = shared.templates.lock()
                && let Some(t) = templates.iter_mut().find(|t| t.id == *template)
            {
                t.build = Some(json_body.clone());
            }
            empty(202)
        }
        ("GET", ["templates", template, "builds", build, "status"]) => {
            let offset: usize = query_map(uri).get("logsOffset").and_then(|o| o.parse().ok()).unwrap_or(0);
            let mut builds = shared.builds.lock().unwrap_or_else(|e| e.into_inner());
            let Some(record) = builds.get_mut(*build) else { return error(404, "build not found") };
            record.polls += 1;
            // One "building" answer with half the logs, then the terminal status with the rest.
            let shown = if record.polls == 1 { record.logs.len().div_ceil(2) } else { record.logs.len() };
            let entries: Vec<Value> = record.logs[offset.min(shown)..shown]
                .iter()
                .map(|m| json!({"timestamp": "2026-01-01T00:00:00Z", "level": "info", "message": m}))
                .collect();
            let status = match (&record.failed, record.polls) {
                (_, 1) => "building",
                (Some(_), _) => "error",
                (None, _) => "ready",
            };
            if status == "ready"
                && let Ok(mut templates) = shared.templates.lock()
                && let Some(t) = templates.iter_mut().find(|t| t.id == *template)
            {
                t.ready = true;
            }
            let mut body =
                json!({"templateID": template, "buildID": build, "status": status, "logEntries": entries, "logs": []});
            if let (Some(reason), "error", Some(map)) = (&record.failed, status, body.as_object_mut()) {
                map.insert("reason".to_owned(), json!({"message": reason, "step": "1"}));
            }
            reply(200, body)
        }
        ("POST", ["v2", "sandboxes"]) => create(shared, &json_body).await,
        ("GET", ["v2", "sandboxes"]) => {
            let query = query_map(uri);
            let wanted: HashMap<String, String> = query
                .get("metadata")
                .and_then(|m| format!("/?{m}").parse::<Uri>().ok())
                .map(|u| query_map(&u))
                .unwrap_or_default();
            let sandboxes =
                shared.sandboxes.lock().map(|s| s.values().cloned().collect::<Vec<_>>()).unwrap_or_default();
            let items: Vec<Value> = sandboxes
                .iter()
                .filter(|s| wanted.iter().all(|(k, v)| s.metadata.get(k) == Some(v)))
                .map(|s| info(shared, s))
                .collect();
            reply(200, Value::Array(items))
        }
        ("GET", ["sandboxes", id]) => match shared.sandboxes.lock().ok().and_then(|s| s.get(*id).cloned()) {
            Some(sandbox) => reply(200, info(shared, &sandbox)),
            None => error(404, &format!("sandbox \"{id}\" doesn't exist or you don't have access to it")),
        },
        // The SDK's `setTimeout`: the sandbox now ends `timeout` seconds from this request (204, no body).
        ("POST", ["sandboxes", id, "timeout"]) => {
            let Some(timeout) = json_body.get("timeout").and_then(Value::as_u64) else {
                return error(400, "timeout must be an integer number of seconds");
            };
            match shared.sandboxes.lock().ok().as_mut().and_then(|s| s.get_mut(*id)) {
                Some(sandbox) => {
                    sandbox.timeout = timeout;
                    empty(204)
                }
                None => error(404, &format!("sandbox \"{id}\" doesn't exist or you don't have access to it")),
            }
        }
        // The SDK's `pause`: 204, or 409 when the sandbox is already paused.
        ("POST", ["sandboxes", id, "pause"]) => {
            match shared.sandboxes.lock().ok().as_mut().and_then(|s| s.get_mut(*id)) {
                Some(sandbox) if sandbox.paused => error(409, &format!("sandbox \"{id}\" is already paused")),
                Some(sandbox) => {
                    sandbox.paused = true;
                    empty(204)
                }
                None => error(404, &format!("sandbox \"{id}\" doesn't exist or you don't have access to it")),
            }
        }
        // The SDK's `Sandbox.connect`: resumes a paused sandbox (201) or extends a running one's TTL (200); the
        // details carry the envd token.
        ("POST", ["v2", "sandboxes", id, "connect"]) => {
            let Some(timeout) = json_body.get("timeout").and_then(Value::as_u64) else {
                return error(400, "timeout must be an integer number of seconds");
            };
            match shared.sandboxes.lock().ok().as_mut().and_then(|s| s.get_mut(*id)) {
                Some(sandbox) => {
                    let status = if sandbox.paused { 201 } else { 200 };
                    sandbox.paused = false;
                    sandbox.timeout = sandbox.timeout.max(timeout);
                    reply(
                        status,
                        json!({
                            "sandboxID": sandbox.id, "templateID": sandbox.template_id, "clientID": "fake",
                            "alias": null, "envdVersion": shared.options.envd_version,
                            "envdAccessToken": sandbox.token, "trafficAccessToken": null, "domain": null,
                        }),
                    )
                }
                None => error(404, &format!("sandbox \"{id}\" doesn't exist or you don't have access to it")),
            }
        }
        ("DELETE", ["sandboxes", id]) => match shared.sandboxes.lock().ok().and_then(|mut s| s.remove(*id)) {
            Some(sandbox) => {
                sandbox.root.kill_all();
                empty(204)
            }
            None => error(404, &format!("sandbox \"{id}\" doesn't exist or you don't have access to it")),
        },
        _ => error(404, &format!("no route {method} {path}")),
    }
}

fn info(shared: &Shared, sandbox: &FakeSandbox) -> Value {
    json!({
        "sandboxID": sandbox.id, "templateID": sandbox.template_id, "alias": null, "clientID": "fake",
        "startedAt": "2026-01-01T00:00:00Z", "endAt": "2026-01-01T01:00:00Z",
        "cpuCount": 2, "memoryMB": 512, "diskSizeMB": 1024,
        "envdVersion": shared.options.envd_version, "state": if sandbox.paused { "paused" } else { "running" }, "metadata": sandbox.metadata,
    })
}

async fn create(shared: &Arc<Shared>, body: &Value) -> Response {
    let faults = shared.faults();
    if let Some(delay) = faults.create_delay {
        tokio::time::sleep(delay).await;
    }
    if let Some(status) = faults.create_status {
        return error(status, "sandbox creation failed (injected)");
    }
    let Some(wanted) = body.get("templateID").and_then(Value::as_str) else {
        return error(400, "templateID is required");
    };
    let template = if wanted == "base" {
        Some(FakeTemplate { id: "base".to_owned(), names: vec!["base".to_owned()], build: None, ready: true })
    } else {
        let templates = shared.templates.lock().map(|t| t.clone()).unwrap_or_default();
        templates.into_iter().find(|t| t.ready && (t.id == wanted || t.names.iter().any(|n| n == wanted)))
    };
    let Some(template) = template else {
        return error(404, &format!("template '{wanted}' not found"));
    };
    let root = match SandboxRoot::new(shared.options.read_only.clone()) {
        Ok(root) => root,
        Err(e) => return error(500, &format!("cannot make the sandbox root: {e}")),
    };
    // The template's steps, once, in the new root.
    let steps =
        template.build.as_ref().and_then(|b| b.get("steps")).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut workdir = "/".to_owned();
    for (index, step) in steps.iter().enumerate() {
        let args: Vec<String> = step
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        match step.get("type").and_then(Value::as_str) {
            Some("RUN") if !args.is_empty() => {
                if let Ok((code, _, stderr)) = root.run(&args[0], Some(&workdir), &BTreeMap::new()).await
                    && code != 0
                {
                    return error(
                        500,
                        &format!("template step RUN {} failed: {}", args[0], String::from_utf8_lossy(&stderr)),
                    );
                }
            }
            Some("WORKDIR") if !args.is_empty() => {
                workdir = args[0].clone();
                let _ = root.run(&format!("mkdir -p {}", quote(&workdir)), Some("/"), &BTreeMap::new()).await;
            }
            Some("COPY") if args.len() >= 2 => {
                let hash = step.get("filesHash").and_then(Value::as_str).unwrap_or("");
                let Some(archive) = shared.uploads.lock().ok().and_then(|u| u.get(hash).cloned()) else { continue };
                let staged = format!("/tmp/.wb-copy-{index}.tar.gz");
                if root.write_file(&staged, &archive).await.is_ok() {
                    // Like Docker: a directory source's contents land in dest; a file lands at/into dest.
                    let (src, dest) = (args[0].trim_start_matches("./").trim_end_matches('/'), &args[1]);
                    let script = format!(
                        "set -e; t=$(mktemp -d); tar -xzf {staged} -C \"$t\"; rm -f {staged}; \
                         if [ -d \"$t\"/{src} ]; then mkdir -p {dest}; cp -a \"$t\"/{src}/. {dest}; \
                         else case {dest} in */) mkdir -p {dest}; cp -a \"$t\"/{src} {dest};; *) mkdir -p \"$(dirname {dest})\"; cp -a \"$t\"/{src} {dest};; esac; fi; rm -rf \"$t\"",
                        src = quote(src),
                        dest = quote(dest),
                    );
                    let _ = root.run(&script, Some("/"), &BTreeMap::new()).await;
                }
            }
            _ => {}
        }
    }
    let id = format!("sbx_{}", shared.next());
    let token = format!("envd_token_{}", shared.next());
    let strings = |key: &str| -> BTreeMap<String, String> {
        body.get(key)
            .and_then(Value::as_object)
            .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
            .unwrap_or_default()
    };
    let sandbox = FakeSandbox {
        id: id.clone(),
        template_id: template.id.clone(),
        metadata: strings("metadata"),
        env: strings("envVars"),
        timeout: body.get("timeout").and_then(Value::as_u64).unwrap_or(300),
        token: token.clone(),
        root,
        paused: false,
        processes: Arc::new(Mutex::new(HashMap::new())),
    };
    if let Ok(mut sandboxes) = shared.sandboxes.lock() {
        sandboxes.insert(id.clone(), sandbox);
    }
    reply(
        201,
        json!({
            "sandboxID": id, "templateID": template.id, "clientID": "fake", "alias": null,
            "envdVersion": shared.options.envd_version, "envdAccessToken": token,
            "trafficAccessToken": null, "domain": null,
        }),
    )
}

fn envelope(flags: u8, payload: &Value) -> Bytes {
    let json = payload.to_string();
    let mut out = Vec::with_capacity(json.len() + 5);
    out.push(flags);
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(json.as_bytes());
    Bytes::from(out)
}

fn first_envelope(body: &[u8]) -> Option<Value> {
    if body.len() < 5 {
        return None;
    }
    let length = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    serde_json::from_slice(body.get(5..5 + length)?).ok()
}

fn connect_error(status: u16, code: &str, message: &str) -> Response {
    reply(status, json!({"code": code, "message": message}))
}

async fn envd(
    shared: &Arc<Shared>,
    id: &str,
    method: &str,
    path: &str,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let Some(sandbox) = shared.sandboxes.lock().ok().and_then(|s| s.get(id).cloned()) else {
        return error(502, &format!("The sandbox {id} was not found"));
    };
    if sandbox.paused {
        return error(502, &format!("The sandbox {id} is paused"));
    }
    if headers.get("x-access-token").and_then(|v| v.to_str().ok()) != Some(sandbox.token.as_str()) {
        return connect_error(401, "unauthenticated", "invalid access token");
    }
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let pid_of = |v: &Value| {
        v.get("process").and_then(|p| p.get("pid")).and_then(|p| p.as_u64().or_else(|| p.as_str()?.parse().ok()))
    };
    match (method, path) {
        ("GET", "/health") => empty(204),
        ("POST", "/process.Process/Start") => start(shared, sandbox, headers, &body).await,
        ("POST", "/process.Process/Connect") => connect_process(&sandbox, headers, &body),
        ("POST", "/process.Process/SendSignal") => {
            let Some(pid) = pid_of(&json_body) else {
                return connect_error(400, "invalid_argument", "pid is required");
            };
            let process = sandbox.processes.lock().ok().and_then(|p| p.get(&pid).and_then(|p| p.bwrap_pid));
            match process {
                Some(bwrap) => {
                    sandbox.root.kill(bwrap);
                    reply(200, json!({}))
                }
                None => connect_error(404, "not_found", &format!("process with pid {pid} not found")),
            }
        }
        ("POST", "/process.Process/SendInput") => {
            let Some(pid) = pid_of(&json_body) else {
                return connect_error(400, "invalid_argument", "pid is required");
            };
            let data = json_body
                .get("input")
                .and_then(|i| i.get("stdin"))
                .and_then(Value::as_str)
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
                .unwrap_or_default();
            let stdin = sandbox.processes.lock().ok().and_then(|mut p| p.get_mut(&pid).and_then(|p| p.stdin.take()));
            let Some(mut stdin) = stdin else {
                return connect_error(404, "not_found", &format!("process with pid {pid} has no stdin"));
            };
            let _ = stdin.write_all(&data).await;
            let _ = stdin.flush().await;
            if let Ok(mut processes) = sandbox.processes.lock()
                && let Some(p) = processes.get_mut(&pid)
            {
                p.stdin = Some(stdin);
            }
            reply(200, json!({}))
        }
        ("POST", "/process.Process/CloseStdin") => {
            let Some(pid) = pid_of(&json_body) else {
                return connect_error(400, "invalid_argument", "pid is required");
            };
            let stdin = sandbox.processes.lock().ok().and_then(|mut p| p.get_mut(&pid).and_then(|p| p.stdin.take()));
            if let Some(mut stdin) = stdin {
                let _ = stdin.shutdown().await;
            }
            reply(200, json!({}))
        }
        ("POST", "/filesystem.Filesystem/Stat") => {
            let Some(target) = json_body.get("path").and_then(Value::as_str) else {
                return connect_error(400, "invalid_argument", "path is required");
            };
            match sandbox.root.file_size(target).await {
                Ok(Some(size)) => {
                    let name = target.rsplit('/').next().unwrap_or(target);
                    reply(
                        200,
                        json!({"entry": {"name": name, "type": "FILE_TYPE_FILE", "path": target, "size": size.to_string(), "mode": 420, "permissions": "-rw-r--r--", "owner": "user", "group": "user", "modifiedTime": "2026-01-01T00:00:00Z"}}),
                    )
                }
                _ => connect_error(404, "not_found", &format!("path '{target}' does not exist")),
            }
        }
        ("POST", "/files") => {
            if let Some(status) = shared.faults().upload_status {
                return error(status, "upload failed (injected)");
            }
            let Some(target) = query_map(uri).get("path").cloned() else { return error(400, "path is required") };
            let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
            let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
            let multipart = media.starts_with("multipart/");
            // envd 0.5.7 added raw bodies (`handleRawUpload`, infra 92011c8a); before, `PostFiles` called
            // `r.MultipartReader()` on every upload and answered its failure 500.
            let raw_uploads = version_at_least(&shared.options.envd_version, (0, 5, 7));
            let bytes = if multipart {
                let boundary = content_type.split("boundary=").nth(1).unwrap_or("");
                match multipart_file(&body, boundary.trim_matches('"')) {
                    Some(bytes) => bytes,
                    None => return error(400, "no file part"),
                }
            } else if !raw_uploads {
                return error(500, "error parsing multipart form: request Content-Type isn't multipart/form-data");
            } else if media == "application/octet-stream" {
                body.to_vec()
            } else {
                return error(
                    400,
                    &format!(
                        "unsupported content type: {content_type}, expected multipart/form-data or application/octet-stream"
                    ),
                );
            };
            match sandbox.root.write_file(&target, &bytes).await {
                Ok(()) => {
                    let name = target.rsplit('/').next().unwrap_or(&target).to_owned();
                    reply(200, json!([{"name": name, "path": target, "type": "file"}]))
                }
                Err(e) => error(500, &format!("cannot write {target}: {e}")),
            }
        }
        ("GET", "/files") => {
            let Some(target) = query_map(uri).get("path").cloned() else { return error(400, "path is required") };
            if let Some(status) = shared.faults().download_status {
                return error(status, &format!("cannot read {target}: input/output error"));
            }
            match sandbox.root.read_file(&target).await {
                Ok(Some(bytes)) => ([("content-type", "application/octet-stream")], bytes).into_response(),
                _ => error(404, &format!("path '{target}' does not exist")),
            }
        }
        _ => connect_error(404, "unimplemented", &format!("no route {method} {path}")),
    }
}

/// `major.minor.patch` at least `minimum` (a suffix ignored; unreadable is older).
fn version_at_least(version: &str, minimum: (u64, u64, u64)) -> bool {
    let mut parts = version.trim_start_matches('v').split(['.', '-', '+']).map(|p| p.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor), Some(patch)) => (major, minor, patch) >= minimum,
        _ => false,
    }
}

/// The first part's content of a `multipart/form-data` body.
fn multipart_file(body: &[u8], boundary: &str) -> Option<Vec<u8>> {
    let marker = format!("--{boundary}");
    let text = body;
    let find = |haystack: &[u8], needle: &[u8], from: usize| {
        haystack.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
    };
    let start = find(text, marker.as_bytes(), 0)?;
    let headers_end = find(text, b"\r\n\r\n", start)? + 4;
    let end = find(text, format!("\r\n{marker}").as_bytes(), headers_end)?;
    Some(text[headers_end..end].to_vec())
}

async fn start(shared: &Arc<Shared>, sandbox: FakeSandbox, headers: &HeaderMap, body: &[u8]) -> Response {
    // envd ticks a keepalive at the client's `Keepalive-Ping-Interval` seconds, 90 by default
    // (`packages/envd/internal/permissions/keepalive.go`).
    let keepalive_every = headers
        .get("keepalive-ping-interval")
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map_or(Duration::from_secs(90), Duration::from_secs);
    let silent = shared.faults().silent_stream;
    let Some(request) = first_envelope(body) else {
        return connect_error(400, "invalid_argument", "no request envelope");
    };
    let process = request.get("process").cloned().unwrap_or(Value::Null);
    let cmd = process.get("cmd").and_then(Value::as_str).unwrap_or("");
    let args: Vec<String> = process
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let script = match (cmd, args.as_slice()) {
        ("/bin/bash", [l, c, script]) if l == "-l" && c == "-c" => script.clone(),
        _ => {
            std::iter::once(cmd.to_owned()).chain(args.iter().cloned()).map(|a| quote(&a)).collect::<Vec<_>>().join(" ")
        }
    };
    let mut env = sandbox.env.clone();
    if let Some(envs) = process.get("envs").and_then(Value::as_object) {
        env.extend(envs.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))));
    }
    let cwd = process.get("cwd").and_then(Value::as_str).map(str::to_owned);
    let stdin = request.get("stdin").and_then(Value::as_bool).unwrap_or(false);
    let mut spawned = match sandbox.root.spawn(&script, cwd.as_deref(), &env, stdin) {
        Ok(spawned) => spawned,
        Err(e) => return connect_error(502, "unavailable", &format!("cannot start the process: {e}")),
    };
    let pid = 100 + shared.next();
    let child_stdin = spawned.child.stdin.take();
    let (events, _) = tokio::sync::broadcast::channel::<Bytes>(1024);
    if let Ok(mut processes) = sandbox.processes.lock() {
        processes.insert(pid, Process { bwrap_pid: spawned.child.id(), stdin: child_stdin, events: events.clone() });
    }
    let hang = shared.faults().hang_start;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let mut stdout = spawned.child.stdout.take();
    let mut stderr = spawned.child.stderr.take();
    let mut child = spawned.child;
    tokio::spawn(async move {
        let _ = tx.send(Ok(envelope(0, &json!({"event": {"start": {"pid": pid}}})))).await;
        if silent {
            tx.closed().await;
            let _ = child.kill().await;
            return;
        }
        let _ = tx.send(Ok(envelope(0, &json!({"event": {"keepalive": {}}})))).await;
        let pump = |reader: Option<Box<dyn tokio::io::AsyncRead + Send + Unpin>>,
                    key: &'static str,
                    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
                    events: tokio::sync::broadcast::Sender<Bytes>| async move {
            let Some(mut reader) = reader else { return };
            let mut buffer = vec![0u8; 16 * 1024];
            while let Ok(n) = reader.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                let data = base64::engine::general_purpose::STANDARD.encode(&buffer[..n]);
                let message = envelope(0, &json!({"event": {"data": {key: data}}}));
                let _ = events.send(message.clone());
                let _ = tx.send(Ok(message)).await;
            }
        };
        let keepalive = {
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(keepalive_every).await;
                    if tx.send(Ok(envelope(0, &json!({"event": {"keepalive": {}}})))).await.is_err() {
                        break;
                    }
                }
            })
        };
        let out = pump(
            stdout.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            "stdout",
            tx.clone(),
            events.clone(),
        );
        let err = pump(
            stderr.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            "stderr",
            tx.clone(),
            events.clone(),
        );
        tokio::join!(out, err);
        let status = child.wait().await;
        if let Ok(mut processes) = sandbox.processes.lock() {
            processes.remove(&pid);
        }
        if sandbox.root.is_dead() {
            keepalive.abort();
            let _ = tx.send(Err(std::io::Error::other("the sandbox is gone"))).await;
            return;
        }
        if hang {
            tx.closed().await;
            keepalive.abort();
            return;
        }
        keepalive.abort();
        let end = match status.ok().and_then(|s| s.code()) {
            Some(code) => json!({"exitCode": code, "exited": true, "status": format!("exit status {code}")}),
            None => json!({"exitCode": -1, "exited": false, "status": "signal: killed"}),
        };
        let end = envelope(0, &json!({"event": {"end": end}}));
        let _ = events.send(end.clone());
        let _ = tx.send(Ok(end)).await;
        let _ = tx.send(Ok(envelope(2, &json!({})))).await;
    });
    connect_stream(rx)
}

/// A Connect server stream (`application/connect+json`) of the envelopes `rx` gives, ending when it closes.
fn connect_stream(rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Response::builder()
        .status(200)
        .header("content-type", "application/connect+json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| empty(500))
}

/// `process.Process/Connect` (`packages/envd/internal/services/process/connect.go`): a running process's
/// events from now on (`start{pid}`, then data and its end); an unknown pid is `not_found`.
fn connect_process(sandbox: &FakeSandbox, headers: &HeaderMap, body: &[u8]) -> Response {
    let Some(request) = first_envelope(body) else {
        return connect_error(400, "invalid_argument", "no request envelope");
    };
    let pid =
        request.get("process").and_then(|p| p.get("pid")).and_then(|p| p.as_u64().or_else(|| p.as_str()?.parse().ok()));
    let Some(pid) = pid else { return connect_error(400, "invalid_argument", "process.pid is required") };
    let subscribed = sandbox.processes.lock().ok().and_then(|p| p.get(&pid).map(|process| process.events.subscribe()));
    let Some(mut events) = subscribed else {
        return connect_error(404, "not_found", &format!("process with pid {pid} not found"));
    };
    let keepalive_every = headers
        .get("keepalive-ping-interval")
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map_or(Duration::from_secs(90), Duration::from_secs);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    tokio::spawn(async move {
        let _ = tx.send(Ok(envelope(0, &json!({"event": {"start": {"pid": pid}}})))).await;
        loop {
            let message = tokio::select! {
                message = events.recv() => message,
                () = tokio::time::sleep(keepalive_every) => {
                    if tx.send(Ok(envelope(0, &json!({"event": {"keepalive": {}}})))).await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            match message {
                Ok(message) => {
                    let end = String::from_utf8_lossy(&message).contains("\"end\"");
                    if tx.send(Ok(message)).await.is_err() {
                        return;
                    }
                    if end {
                        let _ = tx.send(Ok(envelope(2, &json!({})))).await;
                        return;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    let _ = tx.send(Err(std::io::Error::other("the process is gone"))).await;
                    return;
                }
            }
        }
    });
    connect_stream(rx)
}

/// Wire fixtures: a recorded request reduced to what must match between the official SDK and our client
/// (method, path, query, key headers, JSON body), volatile ids normalised and secrets replaced.
pub mod wire {
    use serde_json::{Value, json};

    use crate::record::Recorded;

    /// Headers whose presence and value are part of the protocol.
    pub const KEY_HEADERS: [&str; 9] = [
        "content-type",
        "connect-protocol-version",
        "connect-timeout-ms",
        "keepalive-ping-interval",
        "e2b-sandbox-id",
        "e2b-sandbox-port",
        "authorization",
        "x-access-token",
        "x-api-key",
    ];

    /// Replaces `<prefix><digits>` with `<prefix>N` (fake-assigned ids).
    pub fn normalise_ids(text: &str) -> String {
        let mut out = text.to_owned();
        for prefix in ["envd_token_", "sbx_", "tpl_", "bld_"] {
            let mut result = String::new();
            let mut rest = out.as_str();
            while let Some(at) = rest.find(prefix) {
                result.push_str(&rest[..at + prefix.len()]);
                let after = &rest[at + prefix.len()..];
                let digits = after.chars().take_while(char::is_ascii_digit).count();
                if digits > 0 {
                    result.push('N');
                }
                rest = &after[digits..];
            }
            result.push_str(rest);
            out = result;
        }
        out
    }

    /// One request as a fixture line.
    pub fn entry(request: &Recorded, api_key: &str) -> Value {
        let mut headers = serde_json::Map::new();
        for name in KEY_HEADERS {
            let Some(value) = request.header(name) else { continue };
            let value = match name {
                "x-api-key" if value == api_key => "<E2B_API_KEY>".to_owned(),
                "x-api-key" => "<another key>".to_owned(),
                "x-access-token" => "<envd access token>".to_owned(),
                "content-type" => value.split(';').next().unwrap_or(value).trim().to_owned(),
                _ => normalise_ids(value),
            };
            headers.insert(name.to_owned(), Value::String(value));
        }
        let content_type = request.header("content-type").unwrap_or("");
        let mut body = if request.body.is_empty() {
            Value::Null
        } else if content_type.starts_with("application/connect+json") {
            let length = request.body.get(1..5).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
            json!({"envelope": request.body.get(5..5 + length).and_then(|p| serde_json::from_slice::<Value>(p).ok())})
        } else if request.path.starts_with("/upload/") {
            json!({"archive": "gzip tar"})
        } else if let Some(value) = request.json() {
            value
        } else {
            json!({"bytes": request.body.len()})
        };
        // Process ids are the fake's.
        for pointer in ["/process/pid", "/envelope/process/pid"] {
            if let Some(pid) = body.pointer_mut(pointer) {
                *pid = json!(0);
            }
        }
        let line = json!({
            "method": request.method,
            "path": request.path,
            "query": request.query,
            "headers": headers,
            "body": body,
        });
        serde_json::from_str(&normalise_ids(&line.to_string())).unwrap_or(line)
    }

    /// Reads a JSON-lines fixture.
    pub fn read(path: &std::path::Path) -> std::io::Result<Vec<Value>> {
        let text = std::fs::read_to_string(path)?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).map_err(std::io::Error::other))
            .collect()
    }
}
