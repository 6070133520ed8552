//! A language client over stdio for the built server (or any server process: the benches drive peers with it
//! too): `Content-Length` framing, raw messages with deadlines, requests with their round-trip time,
//! notifications, the server's own requests answered, `$/progress` seen, and the server's memory from
//! `/proc`. The server's messages are read on a thread, so a test waits with a deadline instead of hanging
//! when the server says nothing; dropping the client kills the process.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use url::Url;

/// How long [`Client::request`] and [`Client::diagnostics`] wait for the server (a bench's large workspace).
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// How long [`Client::receive`] waits for the server's next message.
const RECEIVE: Duration = Duration::from_secs(20);

/// One message framed as the base protocol sends it.
pub fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// One framed message, or `None` once the server closed its stdout (or sent something unreadable).
pub fn try_read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Reads one framed message (panics, as a test should, when the server closes its stdout or sends a malformed
/// frame).
pub fn read_message(reader: &mut impl BufRead) -> Value {
    try_read_message(reader).expect("a framed message from the server (it closed stdout or sent a malformed frame)")
}

/// The `file:` URI of an absolute path.
pub fn uri(path: &Path) -> Url {
    Url::from_file_path(path).expect("absolute path")
}

/// A server process on the other end of its stdin and stdout (stderr discarded).
pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    next_id: i64,
    /// Answer for `workspace/configuration` items, by section.
    settings: Value,
    /// `$/progress` notifications seen by [`Client::next`] (their `value.kind`).
    pub progress: Vec<String>,
}

impl Client {
    /// Starts `command` with piped stdio and nothing sent yet, in the test's scratch home unless it sets
    /// `HOME` itself.
    pub fn spawn(command: &mut Command) -> Client {
        if !crate::home::sets_home(command) {
            crate::home::isolate(command);
        }
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let program = Path::new(command.get_program()).display().to_string();
        let mut child = command.spawn().unwrap_or_else(|error| panic!("start {program}: {error}"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("the server's stdout");
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = try_read_message(&mut reader) {
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        Client { child, stdin, messages, next_id: 0, settings: Value::Null, progress: Vec::new() }
    }

    /// Starts `command`, sends `initialize` (with `capabilities` and `root` as the one workspace folder),
    /// `initialized` and the `settings`, which also answer `workspace/configuration`. Returns the client and when
    /// `initialize` was answered.
    pub fn start(mut command: Command, root: &Path, capabilities: Value, settings: Value) -> (Client, Instant) {
        let mut client = Client::spawn(&mut command);
        client.settings = settings;
        let params = json!({
            "processId": std::process::id(),
            "rootUri": uri(root),
            "capabilities": capabilities,
            "workspaceFolders": [{"uri": uri(root), "name": "bench"}],
        });
        client.request("initialize", params);
        let initialized = Instant::now();
        client.notify("initialized", json!({}));
        let settings = client.settings.clone();
        client.notify("workspace/didChangeConfiguration", json!({"settings": settings}));
        (client, initialized)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `bytes` as they are (a test's malformed frames too).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("the server's stdin is open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.flush().expect("flush");
    }

    /// Writes one framed message.
    pub fn send(&mut self, message: &Value) {
        self.send_bytes(&frame(&message.to_string()));
    }

    /// Closes the server's stdin: the client is gone.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its answer (handling what arrives meanwhile); returns the result and the
    /// round trip.
    pub fn request(&mut self, method: &str, params: Value) -> (Value, Duration) {
        self.next_id += 1;
        let id = self.next_id;
        let started = Instant::now();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next(TIMEOUT).unwrap_or_else(|| panic!("no answer to {method}"));
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                let elapsed = started.elapsed();
                assert!(message.get("error").is_none(), "{method} failed: {message}");
                return (message.get("result").cloned().unwrap_or(Value::Null), elapsed);
            }
        }
    }

    /// The next message as the server sent it (nothing answered), or a failure naming what the test waited
    /// for.
    pub fn receive(&mut self, what: &str) -> Value {
        match self.messages.recv_timeout(RECEIVE) {
            Ok(message) => message,
            Err(_) => panic!("the server sent nothing while the test waited for {what}"),
        }
    }

    /// Reads (with [`Client::receive`]) until the response to `id`, returning it and everything before it.
    pub fn response(&mut self, id: i64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = self.receive(&format!("the response to {id}"));
            if message["id"] == id && message.get("method").is_none() {
                return (message, before);
            }
            before.push(message);
        }
    }

    /// The next message from the server, answering its requests on the way (they are returned too); `None` when
    /// nothing came within `wait`.
    pub fn next(&mut self, wait: Duration) -> Option<Value> {
        let message = match self.messages.recv_timeout(wait) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => return None,
            Err(RecvTimeoutError::Disconnected) => panic!("the server exited"),
        };
        if let (Some(id), Some(method)) = (message.get("id").cloned(), message.get("method").and_then(Value::as_str)) {
            let result = match method {
                "workspace/configuration" => {
                    let items = message["params"]["items"].as_array().cloned().unwrap_or_default();
                    Value::Array(
                        items
                            .iter()
                            .map(|item| {
                                let section = item["section"].as_str().unwrap_or_default();
                                self.settings.get(section).cloned().unwrap_or(Value::Null)
                            })
                            .collect(),
                    )
                }
                _ => Value::Null,
            };
            self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
        }
        if message.get("method").and_then(Value::as_str) == Some("$/progress")
            && let Some(kind) = message["params"]["value"]["kind"].as_str()
        {
            self.progress.push(kind.to_owned());
        }
        Some(message)
    }

    /// Waits until the server sent nothing for `quiet`; returns how many `publishDiagnostics` came meanwhile.
    pub fn settle(&mut self, quiet: Duration) -> usize {
        let mut published = 0;
        while let Some(message) = self.next(quiet) {
            if message.get("method").and_then(Value::as_str) == Some("textDocument/publishDiagnostics") {
                published += 1;
            }
        }
        published
    }

    /// Waits for diagnostics of every `(uri, version)`; a `None` version takes the first publication for the
    /// file (servers that do not send versions). Returns how many diagnostics they held.
    pub fn diagnostics(&mut self, wanted: &[(Url, Option<i64>)]) -> usize {
        let mut missing: Vec<(String, Option<i64>)> =
            wanted.iter().map(|(uri, version)| (uri.to_string(), *version)).collect();
        let mut count = 0;
        let deadline = Instant::now() + TIMEOUT;
        while !missing.is_empty() {
            assert!(Instant::now() < deadline, "no diagnostics for {} files, e.g. {:?}", missing.len(), missing[0]);
            let Some(message) = self.next(TIMEOUT) else { continue };
            if message.get("method").and_then(Value::as_str) != Some("textDocument/publishDiagnostics") {
                continue;
            }
            let params = &message["params"];
            let uri = params["uri"].as_str().unwrap_or_default();
            let version = params["version"].as_i64();
            let before = missing.len();
            missing.retain(|(wanted, wanted_version)| {
                !(wanted == uri && (wanted_version.is_none() || version.is_none() || *wanted_version == version))
            });
            if missing.len() < before {
                count += params["diagnostics"].as_array().map_or(0, Vec::len);
            }
        }
        count
    }

    pub fn open(&mut self, path: &Path, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": "yaml", "version": 1, "text": text}}),
        );
    }

    /// Replaces `text` (same length) at `line`:`start` in document version `version`.
    pub fn change(&mut self, path: &Path, version: i64, line: u32, start: u32, text: &str) {
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

    /// Replaces the whole text of an open document (a change without a range).
    pub fn change_full(&mut self, path: &Path, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(path), "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    /// `VmHWM` (peak) and `VmRSS` (now) of the server process, in KiB.
    pub fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        (field("VmHWM:"), field("VmRSS:"))
    }

    /// Waits up to `limit` for the process to end.
    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the server's status") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// `shutdown`, then `exit`, then up to 10 s for the process to end (it is killed after that).
    pub fn shutdown(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        self.wait(Duration::from_secs(10));
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
