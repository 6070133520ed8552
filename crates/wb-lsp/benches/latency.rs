//! Edit → `publishDiagnostics` latency and memory of the language server, in process, over the real protocol.
//!
//! ```text
//! cargo bench -p wb-lsp --bench latency            # release build, all scenarios
//! cargo bench -p wb-lsp --bench latency -- 20      # 20 edits per scenario instead of 50
//! ```
//!
//! Scenarios (each on a fresh server over a fresh temporary repository):
//! - `memory`: 50 generated packages in one repository, all opened; RSS (`/proc/self/status`) before the
//!   server starts, and after every package's diagnostics arrived. Client and server share the process, so
//!   the figure is an upper bound of the server's own memory.
//! - `typical`: the example repository (4 packages); `migrations/workbench.yml` is edited.
//! - `large`: one package whose manifest has 5,000 `env` entries and 500 MCP servers.
//! - `fifty`: one of the 50 generated packages is edited while all 50 are open (every manifest of the
//!   repository is rechecked on an edit).
//!
//! Each edit is one incremental `didChange` (a word of `description` flips case); the time is measured from
//! sending it to receiving the diagnostics of that document version. Between edits the server is left to
//! settle, so each sample is one isolated edit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::{self as lsp, Url, notification::Notification as _};
use serde_json::{Value, json};
use wb_testsupport::{copy_tree, repository_fixtures, write_file};

const TIMEOUT: Duration = Duration::from_secs(60);

struct Client {
    connection: Connection,
    server: Option<JoinHandle<anyhow::Result<()>>>,
    next_id: i32,
}

fn uri(path: &Path) -> Url {
    Url::from_file_path(path).expect("absolute path")
}

impl Client {
    fn start(root: &Path) -> Client {
        let (client, server) = Connection::memory();
        let handle = std::thread::spawn(move || wb_lsp::server::run(server));
        let mut client = Client { connection: client, server: Some(handle), next_id: 0 };
        let params = json!({
            "processId": null,
            "rootUri": uri(root),
            "capabilities": {
                "workspace": {"configuration": true, "workspaceFolders": true},
                "textDocument": {"publishDiagnostics": {"relatedInformation": true, "versionSupport": true}},
            },
            "workspaceFolders": [{"uri": uri(root), "name": "bench"}],
        });
        let id = client.send_request("initialize", params);
        client.wait_response(&id);
        client.notify("initialized", json!({}));
        client
    }

    fn send_request(&mut self, method: &str, params: Value) -> RequestId {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.connection.sender.send(Request::new(id.clone(), method.to_owned(), params).into()).expect("send");
        id
    }

    fn notify(&self, method: &str, params: Value) {
        self.connection.sender.send(Notification::new(method.to_owned(), params).into()).expect("send");
    }

    fn answer(&self, request: &Request) {
        let result = if request.method == "workspace/configuration" { json!([{}]) } else { Value::Null };
        self.connection.sender.send(Response::new_ok(request.id.clone(), result).into()).expect("send");
    }

    /// The next notification, answering server requests on the way; `None` once `quiet` passes without one.
    fn next_notification(&self, quiet: Duration) -> Option<Notification> {
        loop {
            match self.connection.receiver.recv_timeout(quiet) {
                Ok(Message::Notification(notification)) => return Some(notification),
                Ok(Message::Request(request)) => self.answer(&request),
                Ok(Message::Response(response)) => panic!("unexpected response {response:?}"),
                Err(_) => return None,
            }
        }
    }

    fn wait_response(&self, id: &RequestId) -> Response {
        loop {
            match self.connection.receiver.recv_timeout(TIMEOUT).expect("server answer") {
                Message::Response(response) if response.id == *id => return response,
                Message::Request(request) => self.answer(&request),
                _ => {}
            }
        }
    }

    /// Waits until the server sent nothing for `quiet`.
    fn settle(&self, quiet: Duration) {
        while self.next_notification(quiet).is_some() {}
    }

    /// Waits for the diagnostics of `path` at `version`; returns how many diagnostics they hold.
    fn diagnostics(&self, path: &Path, version: i32) -> usize {
        self.all_diagnostics(&[(path, version)])
    }

    /// Waits until diagnostics of every `(path, version)` arrived (in any order); returns how many they hold.
    fn all_diagnostics(&self, wanted: &[(&Path, i32)]) -> usize {
        let mut missing: Vec<(Url, i32)> = wanted.iter().map(|(path, version)| (uri(path), *version)).collect();
        let mut count = 0;
        let deadline = Instant::now() + TIMEOUT;
        while !missing.is_empty() && Instant::now() < deadline {
            let Some(notification) = self.next_notification(TIMEOUT) else { break };
            if notification.method != lsp::notification::PublishDiagnostics::METHOD {
                continue;
            }
            let params: lsp::PublishDiagnosticsParams = serde_json::from_value(notification.params).expect("params");
            let before = missing.len();
            missing.retain(|(uri, version)| !(params.uri == *uri && params.version == Some(*version)));
            if missing.len() < before {
                count += params.diagnostics.len();
            }
        }
        assert!(missing.is_empty(), "no diagnostics for {missing:?}");
        count
    }

    fn open(&self, path: &Path, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": "yaml", "version": 1, "text": text}}),
        );
    }

    fn change(&self, path: &Path, version: i32, line: u32, start: u32, text: &str) {
        let end = start + text.len() as u32;
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri(path), "version": version},
                "contentChanges": [{
                    "range": {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}},
                    "text": text,
                }],
            }),
        );
    }

    fn shutdown(mut self) {
        let id = self.send_request("shutdown", Value::Null);
        self.wait_response(&id);
        self.notify("exit", Value::Null);
        if let Some(server) = self.server.take() {
            server.join().expect("server thread").expect("server result");
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Repositories

/// A package like the example's `migrations` (instructions, two skills, Dockerfile, MCP, env).
fn generated_package(root: &Path, i: usize) -> PathBuf {
    let dir = root.join(".workbenches").join(format!("pkg-{i:04}"));
    write_file(&dir.join("instructions.md"), format!("Package {i}: do the work.\n"));
    write_file(&dir.join("Dockerfile"), "FROM node:22\n");
    for skill in ["review", "release"] {
        write_file(
            &dir.join("skills").join(skill).join("SKILL.md"),
            format!("---\nname: {skill}\ndescription: The {skill} skill of package {i}.\n---\n"),
        );
    }
    let manifest = format!(
        "spec: 1\nversion: 1.{i}.0\nname: pkg-{i:04}\ndescription: Generated package {i}.\nrunner: opencode\n\
         model:\n  id: openai/gpt-5.6-terra\n  routes:\n    - provider: openai\ninstructions: ./instructions.md\n\
         skills:\n  - ./skills/review\n  - ./skills/release\ntools: [node, npm]\nmcps:\n  - name: db\n    \
         transport: http\n    url: https://db.example.com/mcp/{i}\n    headers:\n      Authorization: Bearer \
         ${{DB_TOKEN}}\nenv:\n  DB_TOKEN:\n    required: true\n  DATABASE_URL:\n    required: false\n\
         runtimes:\n  docker:\n    image:\n      build: ./Dockerfile\n      context: ../..\n  local: {{}}\n"
    );
    let path = dir.join("workbench.yml");
    write_file(&path, &manifest);
    path
}

/// 5,000 `env` entries and 500 MCP servers referencing them.
fn large_manifest() -> String {
    let (vars, mcps) = (5_000, 500);
    let mut text = String::from(
        "spec: 1\nversion: 1.0.0\nname: large\ndescription: Generated large manifest.\nrunner: opencode\n\
         model:\n  id: openai/gpt-5.6-terra\ninstructions: ./instructions.md\nmcps:\n",
    );
    for i in 0..mcps {
        let (a, b) = ((i * 7) % vars, (i * 13 + 1) % vars);
        text.push_str(&format!(
            "  - name: server-{i}\n    transport: http\n    url: https://mcp.example.com/{i}\n    headers:\n      \
             Authorization: Bearer ${{VAR_{a}}}\n      X-Extra: ${{VAR_{b}}}-suffix\n"
        ));
    }
    text.push_str("env:\n");
    for i in 0..vars {
        text.push_str(&format!("  VAR_{i}:\n    required: {}\n", i % 2 == 0));
    }
    text.push_str("runtimes:\n  local: {}\n");
    text
}

// ---------------------------------------------------------------------------------------------------------
// Measurements

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Opens `path` and edits `description` (at `line`, the word at `column`) `edits` times.
fn latency(client: &Client, name: &str, path: &Path, line: u32, column: u32, edits: usize) {
    let text = std::fs::read_to_string(path).expect("manifest");
    let word: String = text.lines().nth(line as usize).expect("line")[column as usize..].chars().take(5).collect();
    let (lower, upper) = (word.to_lowercase(), word.to_uppercase());
    let started = Instant::now();
    client.open(path, &text);
    let count = client.diagnostics(path, 1);
    let open = started.elapsed();
    client.settle(Duration::from_millis(200));
    let mut samples = Vec::with_capacity(edits);
    for edit in 0..edits {
        let version = edit as i32 + 2;
        let replacement = if edit % 2 == 0 { &upper } else { &lower };
        let started = Instant::now();
        client.change(path, version, line, column, replacement);
        let count = client.diagnostics(path, version);
        samples.push(started.elapsed());
        assert_eq!(count, 0, "{name}: the edited manifest must stay clean");
        client.settle(Duration::from_millis(50));
    }
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!(
        "{name:<8} {:>8} bytes  open→diagnostics {open:>10.2?} ({count} diagnostics)  edit→diagnostics over {edits}: \
         median {:>9.2?}  p95 {:>9.2?}  min {:>9.2?}  max {:>9.2?}  mean {mean:>9.2?}",
        text.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.95),
        samples[0],
        samples[samples.len() - 1],
    );
}

fn main() {
    let edits: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(50);
    println!(
        "wb-lsp latency bench: {edits} edits per scenario, {} CPUs",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    // Memory first, while the process is fresh.
    let temp = tempfile::tempdir().expect("temp dir");
    let root = temp.path().join("fifty");
    let manifests: Vec<PathBuf> = (0..50).map(|i| generated_package(&root, i)).collect();
    let before = rss_kib("VmRSS:");
    let client = Client::start(&root);
    client.settle(Duration::from_millis(500));
    let scanned = rss_kib("VmRSS:");
    let started = Instant::now();
    for path in &manifests {
        client.open(path, &std::fs::read_to_string(path).expect("manifest"));
    }
    let wanted: Vec<(&Path, i32)> = manifests.iter().map(|path| (path.as_path(), 1)).collect();
    let count = client.all_diagnostics(&wanted);
    assert_eq!(count, 0, "the generated packages must be clean");
    println!("memory   opened 50 packages, all diagnostics in {:?}", started.elapsed());
    client.settle(Duration::from_millis(500));
    let opened = rss_kib("VmRSS:");
    println!(
        "memory   RSS before server {before} KiB, after workspace scan {scanned} KiB, with 50 packages open {opened} \
         KiB (+{} KiB), peak {} KiB",
        opened.saturating_sub(before),
        rss_kib("VmHWM:")
    );
    // Edit one of the 50 open packages: every manifest of the repository is rechecked.
    latency(&client, "fifty", &manifests[25], 3, 13, edits);
    client.shutdown();

    let root = temp.path().join("example");
    copy_tree(&repository_fixtures().join("example-repo"), &root);
    let client = Client::start(&root);
    client.settle(Duration::from_millis(500));
    latency(&client, "typical", &root.join(".workbenches/migrations/workbench.yml"), 4, 13, edits);
    client.shutdown();

    let root = temp.path().join("large");
    let dir = root.join(".workbenches/large");
    write_file(&dir.join("instructions.md"), "Large.\n");
    write_file(&dir.join("workbench.yml"), large_manifest());
    let client = Client::start(&root);
    client.settle(Duration::from_millis(500));
    latency(&client, "large", &dir.join("workbench.yml"), 3, 13, edits);
    client.shutdown();
    println!("peak RSS of the whole run {} KiB", rss_kib("VmHWM:"));
}
