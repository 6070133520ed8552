//! `wb-lsp mcp`: a Model Context Protocol server over stdio, so an agent writing a Workbench package gets the
//! exact diagnostics `wb-lsp check` gives while it writes (docs/mcp.md).
//!
//! The session: [`transport`] reads one bounded line at a time; [`protocol`] says what it is; `initialize`,
//! `ping` and `tools/list` are answered on the reading thread, each `tools/call` on a thread of its own (at
//! most [`MAX_CALLS`] at once), so `ping` and `notifications/cancelled` are heard while a smoke check prepares.
//! The [`tools`] are the CLI's own entry points ([`check`]: `check` and `fix`; [`engine`]: `dry_run`, `smoke`,
//! `outcome`). At the end of the input the calls in flight run to their end and are answered (a client may
//! pipe its requests in and close), then the server returns.

mod call;
mod check;
mod confine;
mod engine;
pub mod protocol;
mod tools;
pub mod transport;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{Value, json};
use wb_manifest::ModelCatalog;

use protocol::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, Incoming, METHOD_NOT_FOUND, PARSE_ERROR};
use transport::{Line, LineReader, MAX_LINE, Output};

/// The most tool calls that run at once; the next waits for one to end (reading stops meanwhile).
pub const MAX_CALLS: usize = 4;

/// What the person who started the server decided: the root the agent is confined to, and what it may spend.
pub struct Grants<'a> {
    /// Absolute and resolved (no symlinks): every tool path must lie beneath it, and `fix` writes only there.
    pub root: &'a Path,
    /// `--allow-remote-sandboxes`: `smoke` may create sandboxes on E2B and Daytona.
    pub remote_sandboxes: bool,
}

/// Serves one MCP session: reads `input` to its end, answering on `output`. Returns when the input ends (or
/// cannot be read), once every call in flight has been answered.
pub fn serve<R: BufRead, W: Write + Send + 'static>(
    grants: &Grants<'_>,
    catalog: &ModelCatalog,
    input: R,
    output: W,
) -> std::io::Result<()> {
    let session = Session {
        root: grants.root,
        remote_sandboxes: grants.remote_sandboxes,
        catalog,
        out: Arc::new(Output::new(output)),
        in_flight: Mutex::new(HashMap::new()),
        running: (Mutex::new(0), Condvar::new()),
        writes: Mutex::new(()),
    };
    let mut reader = LineReader::new(input, MAX_LINE);
    // The scope ends once every call's thread has.
    let read = std::thread::scope(|scope| {
        loop {
            match reader.next_line() {
                Ok(Line::Eof) => break Ok(()),
                Ok(Line::TooLong) => session.out.send(&protocol::error(
                    Value::Null,
                    INVALID_REQUEST,
                    &format!("Invalid Request: a message longer than {MAX_LINE} bytes was skipped"),
                )),
                Ok(Line::Text(line)) => session.dispatch(&line, scope),
                Err(error) => break Err(error),
            }
        }
    });
    if let Err(error) = &read {
        eprintln!("wb-lsp mcp: cannot read the input: {error}");
    }
    read
}

/// A cancel flag per request id (its JSON text) in flight.
type Flags = Mutex<HashMap<String, Arc<AtomicBool>>>;

struct Session<'a, W> {
    root: &'a Path,
    remote_sandboxes: bool,
    catalog: &'a ModelCatalog,
    out: Arc<Output<W>>,
    in_flight: Flags,
    /// How many calls run, and the signal that one ended.
    running: (Mutex<usize>, Condvar),
    /// Held by `fix` from its check to its last write, so two fixes never write the same file at once.
    writes: Mutex<()>,
}

impl<'a, W: Write + Send + 'static> Session<'a, W> {
    fn dispatch<'s>(&'s self, line: &[u8], scope: &'s std::thread::Scope<'s, '_>) {
        let message: Value = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(error) => {
                self.out.send(&protocol::error(Value::Null, PARSE_ERROR, &format!("Parse error: {error}")));
                return;
            }
        };
        match message {
            Value::Array(items) if items.is_empty() => {
                self.out.send(&protocol::error(Value::Null, INVALID_REQUEST, "Invalid Request: an empty batch"));
            }
            // A batch (2025-03-26) is answered whole, in one array, once each of its messages is answered.
            Value::Array(items) => {
                let answers: Vec<Value> =
                    items.into_iter().filter_map(|item| self.respond(protocol::classify(item))).collect();
                if !answers.is_empty() {
                    self.out.send(&Value::Array(answers));
                }
            }
            message => match protocol::classify(message) {
                Incoming::Request { id, method, params } if method == "tools/call" => {
                    // Registered before the call starts, so a cancel read right after it is not lost.
                    let cancel = self.register(&id);
                    self.take_slot();
                    scope.spawn(move || {
                        let answer = self.call(&id, &params, &cancel);
                        self.release_slot();
                        if let Some(answer) = answer {
                            self.out.send(&answer);
                        }
                    });
                }
                incoming => {
                    if let Some(answer) = self.respond(incoming) {
                        self.out.send(&answer);
                    }
                }
            },
        }
    }

    /// The answer to one message; `None` for notifications and responses, which are never answered.
    fn respond(&self, incoming: Incoming) -> Option<Value> {
        match incoming {
            Incoming::Request { id, method, params } => Some(match method.as_str() {
                "initialize" => {
                    let client = params.pointer("/clientInfo/name").and_then(Value::as_str).unwrap_or("a client");
                    eprintln!("wb-lsp mcp: {client} connected (root {})", self.root.display());
                    protocol::result(id, protocol::initialize_result(&params))
                }
                "ping" => protocol::result(id, json!({})),
                "tools/list" => protocol::result(id, json!({"tools": tools::list()})),
                "tools/call" => {
                    let cancel = self.register(&id);
                    return self.call(&id, &params, &cancel);
                }
                _ => protocol::error(id, METHOD_NOT_FOUND, &format!("Method not found: {method}")),
            }),
            Incoming::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(request) = params.get("requestId")
                    && let Ok(flags) = self.in_flight.lock()
                    && let Some(flag) = flags.get(&request.to_string())
                {
                    flag.store(true, Ordering::SeqCst);
                }
                None
            }
            Incoming::Response => None,
            Incoming::Invalid { id, reason } => {
                Some(protocol::error(id, INVALID_REQUEST, &format!("Invalid Request: {reason}")))
            }
        }
    }

    /// Runs `tools/call`; `None` when the client cancelled it (a cancelled request is not answered).
    fn call(&self, id: &Value, params: &Value, cancel: &Arc<AtomicBool>) -> Option<Value> {
        let progress = params.pointer("/_meta/progressToken").cloned().map(|token| self.progress(token));
        let context = call::Call {
            root: self.root,
            catalog: self.catalog,
            cancel: Arc::clone(cancel),
            progress,
            writes: &self.writes,
            remote_sandboxes: self.remote_sandboxes,
        };
        let name = params.get("name").and_then(Value::as_str);
        let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
        let answer = match name {
            None => protocol::error(id.clone(), INVALID_PARAMS, "tools/call takes the tool's \"name\""),
            Some(name) => match std::panic::catch_unwind(AssertUnwindSafe(|| tools::call(&context, name, arguments))) {
                Ok(Ok(result)) => protocol::result(id.clone(), result.into_json()),
                Ok(Err(rejected)) => protocol::error(id.clone(), INVALID_PARAMS, &rejected.to_string()),
                Err(_) => {
                    eprintln!("wb-lsp mcp: the {name} tool panicked");
                    protocol::error(id.clone(), INTERNAL_ERROR, &format!("the {name} tool failed unexpectedly"))
                }
            },
        };
        if let Ok(mut flags) = self.in_flight.lock() {
            flags.remove(&id.to_string());
        }
        (!cancel.load(Ordering::SeqCst)).then_some(answer)
    }

    /// `notifications/progress` for a call that asked for it (image builds and pulls, sandbox creation).
    fn progress(&self, token: Value) -> wb_engine::lifecycle::Progress {
        let out = Arc::clone(&self.out);
        let count = std::sync::atomic::AtomicU64::new(0);
        wb_engine::lifecycle::Progress(Arc::new(move |message: &str| {
            let progress = count.fetch_add(1, Ordering::SeqCst) + 1;
            out.send(&json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": progress, "message": message},
            }));
        }))
    }

    fn register(&self, id: &Value) -> Arc<AtomicBool> {
        let flag = Arc::new(AtomicBool::new(false));
        if let Ok(mut flags) = self.in_flight.lock() {
            flags.insert(id.to_string(), Arc::clone(&flag));
        }
        flag
    }

    fn take_slot(&self) {
        let (count, ended) = &self.running;
        let mut running = count.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while *running >= MAX_CALLS {
            running = ended.wait(running).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        *running += 1;
    }

    fn release_slot(&self) {
        let (count, ended) = &self.running;
        let mut running = count.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *running = running.saturating_sub(1);
        ended.notify_one();
    }
}
