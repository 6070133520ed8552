//! `wb-lsp acp`: a Workbench as an Agent Client Protocol agent (protocol version 1) on stdio, for every editor
//! that speaks ACP (Zed, JetBrains, Neovim's and Emacs's ACP clients). docs/acp.md says how to set it up.
//!
//! JSON-RPC 2.0, one compact message per line. The reader here never blocks on a turn: each `session/prompt`
//! runs on a thread of its own (`session`), which follows the turn of a supervised Workbench session (the same
//! one `run --session` starts) and streams it as `session/update`s (`updates`); the runner's requests become
//! `session/request_permission` requests to the client, whose answers come back through this reader. Nothing
//! but protocol messages is written to stdout.

mod outcome;
mod session;
mod updates;

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::AcpArgs;
use crate::exit::Exit;

/// The protocol version this agent speaks (the answer to every `initialize`).
const PROTOCOL_VERSION: u64 = 1;
/// The longest message read from the client.
const MESSAGE_LIMIT: u64 = 16 * 1024 * 1024;

/// JSON-RPC error codes the protocol names.
mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    pub const NOT_FOUND: i64 = -32002;
}

/// A request's failure: its JSON-RPC code and message.
#[derive(Debug)]
pub(crate) struct Failure {
    code: i64,
    message: String,
}

impl Failure {
    fn new(code: i64, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into() }
    }
}

/// What `wb-lsp acp` was started with.
pub(crate) struct Settings {
    /// The package every session runs (`--package`); else the session's mode, one per package of its directory.
    package: Option<String>,
    runtime: Option<String>,
    workspaces: Vec<String>,
    env_files: Vec<PathBuf>,
}

/// The connection to the client: the one writer of stdout, the agent's own requests waiting for their answers,
/// and the sessions.
pub(crate) struct Agent {
    out: Mutex<std::io::Stdout>,
    next_id: AtomicU64,
    waiting: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    sessions: Mutex<HashMap<String, Arc<session::Session>>>,
    settings: Settings,
    /// The client's stdin closed: nothing more will be answered.
    closed: AtomicBool,
}

impl Agent {
    fn send(&self, message: &Value) {
        let Ok(mut line) = serde_json::to_vec(message) else { return };
        line.push(b'\n');
        if let Ok(mut out) = self.out.lock() {
            // A client that went away cannot be told anything; the turn ends with the stdin it closed.
            let _ = out.write_all(&line).and_then(|()| out.flush());
        }
    }

    fn respond(&self, id: &Value, outcome: Result<Value, Failure>) {
        match outcome {
            Ok(result) => self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(failure) => self.send(&json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": failure.code, "message": failure.message}})),
        }
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request to the client and waits for its result; `None` when the client answered with an error,
    /// closed its stdin, or `stop` was set while waiting.
    pub(crate) fn request(&self, method: &str, params: Value, stop: &AtomicBool) -> Option<Value> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(id.to_string(), tx);
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(answer) => break Some(answer),
                Err(mpsc::RecvTimeoutError::Timeout) if !stop.load(Ordering::SeqCst) => {
                    if self.closed.load(Ordering::SeqCst) {
                        break None;
                    }
                }
                Err(_) => break None,
            }
        };
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.remove(&id.to_string());
        }
        answer.and_then(|message| message.get("result").cloned())
    }

    fn session(&self, params: &Value) -> Result<Arc<session::Session>, Failure> {
        let id = params.get("sessionId").and_then(Value::as_str).unwrap_or_default();
        self.sessions
            .lock()
            .ok()
            .and_then(|sessions| sessions.get(id).cloned())
            .ok_or_else(|| Failure::new(code::NOT_FOUND, format!("no session {id}")))
    }
}

/// Serves ACP on stdin and stdout until the client closes stdin.
pub fn run(args: &AcpArgs) -> anyhow::Result<Exit> {
    let agent = Arc::new(Agent {
        out: Mutex::new(std::io::stdout()),
        next_id: AtomicU64::new(0),
        waiting: Mutex::default(),
        sessions: Mutex::default(),
        settings: Settings {
            package: args.package.clone(),
            runtime: args.runtime.clone(),
            workspaces: args.workspaces.clone(),
            env_files: args.env_files.clone(),
        },
        closed: AtomicBool::new(false),
    });
    let mut prompts = Vec::new();
    let mut stdin = std::io::stdin().lock();
    loop {
        let mut line = Vec::new();
        match (&mut stdin).take(MESSAGE_LIMIT).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if !line.ends_with(b"\n") && line.len() as u64 >= MESSAGE_LIMIT => {
                // The rest of an oversized message is skipped up to its end.
                let _ = stdin.skip_until(b'\n');
                agent.respond(&Value::Null, Err(Failure::new(code::INVALID_REQUEST, "the message is too long")));
                continue;
            }
            Ok(_) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Value = match serde_json::from_slice(&line) {
            Ok(message) => message,
            Err(error) => {
                agent.respond(&Value::Null, Err(Failure::new(code::PARSE, format!("not JSON: {error}"))));
                continue;
            }
        };
        if let Some(prompt) = dispatch(&agent, message) {
            prompts.push(prompt);
        }
        prompts.retain(|prompt: &std::thread::JoinHandle<()>| !prompt.is_finished());
    }
    // The client is gone: the turns it was following are cancelled, and the sessions it started end (their
    // conversations and outcomes are kept: `wb-lsp resume` carries one on).
    agent.closed.store(true, Ordering::SeqCst);
    let sessions: Vec<_> = agent.sessions.lock().map(|s| s.values().cloned().collect()).unwrap_or_default();
    for session in &sessions {
        session.cancel.store(true, Ordering::SeqCst);
    }
    for prompt in prompts {
        let _ = prompt.join();
    }
    for session in &sessions {
        session.end();
    }
    Ok(Exit::Success)
}

/// Handles one message; a prompt's thread, when it started one.
fn dispatch(agent: &Arc<Agent>, message: Value) -> Option<std::thread::JoinHandle<()>> {
    let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = message.get("id").cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    match (method, id) {
        (None, Some(id)) => {
            // The answer to one of the agent's own requests.
            let key = match &id {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if let Some(tx) = agent.waiting.lock().ok().and_then(|mut waiting| waiting.remove(&key)) {
                let _ = tx.send(message);
            }
            None
        }
        (Some(method), None) => {
            if method == "session/cancel"
                && let Ok(session) = agent.session(&params)
            {
                session.cancel.store(true, Ordering::SeqCst);
            }
            None
        }
        (Some(method), Some(id)) if method == "session/prompt" => {
            let session = match agent.session(&params) {
                Ok(session) => session,
                Err(failure) => {
                    agent.respond(&id, Err(failure));
                    return None;
                }
            };
            let agent = Arc::clone(agent);
            let spawned = std::thread::Builder::new().name("acp-prompt".into()).spawn(move || {
                let outcome = session::prompt(&agent, &session, &params);
                agent.respond(&id, outcome);
            });
            spawned.ok()
        }
        (Some(method), Some(id)) => {
            let outcome = request(agent, &method, &params);
            agent.respond(&id, outcome);
            None
        }
        (None, None) => {
            agent.respond(&Value::Null, Err(Failure::new(code::INVALID_REQUEST, "not a JSON-RPC message")));
            None
        }
    }
}

fn request(agent: &Agent, method: &str, params: &Value) -> Result<Value, Failure> {
    match method {
        "initialize" => {
            if !params.get("protocolVersion").is_some_and(Value::is_u64) {
                return Err(Failure::new(code::INVALID_PARAMS, "protocolVersion is a number"));
            }
            Ok(json!({
                // Whatever the client speaks, this agent answers with the version it supports (the spec's rule).
                "protocolVersion": PROTOCOL_VERSION,
                "agentCapabilities": {
                    "loadSession": false,
                    "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                    "mcpCapabilities": {"http": false, "sse": false},
                },
                "authMethods": [],
                "agentInfo": {"name": "wb-lsp", "title": "Workbench (wb-lsp)", "version": env!("CARGO_PKG_VERSION")},
            }))
        }
        "authenticate" => Ok(json!({})),
        "session/new" => {
            let cwd = params.get("cwd").and_then(Value::as_str).map(PathBuf::from);
            let Some(cwd) = cwd.filter(|cwd| cwd.is_absolute()) else {
                return Err(Failure::new(code::INVALID_PARAMS, "session/new takes an absolute cwd"));
            };
            let session = session::Session::new(&agent.settings, cwd)?;
            let result = session.describe();
            if let Ok(mut sessions) = agent.sessions.lock() {
                sessions.insert(session.id.clone(), Arc::new(session));
            }
            Ok(result)
        }
        "session/set_mode" => {
            let session = agent.session(params)?;
            let mode = params.get("modeId").and_then(Value::as_str).unwrap_or_default();
            session.set_mode(mode)?;
            Ok(json!({}))
        }
        _ => Err(Failure::new(code::METHOD_NOT_FOUND, format!("{method} is not a method of this agent"))),
    }
}

pub(crate) use code::{INTERNAL, INVALID_PARAMS, INVALID_REQUEST};
