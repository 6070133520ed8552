//! The bridge to OpenCode's server (`opencode serve`, loopback only, with a password of the run's own): to the
//! engine it is a runner like the others, a stdout of JSON lines and a stdin that takes lines. Behind it, a
//! thread waits for the server to listen, follows its event stream (`GET /event`, server-sent events) and
//! passes on the events of the run's OpenCode session, one per line; the lines the engine writes
//! (`opencode_events`: start a turn, post a reply or a steer) become HTTP calls. The bridge ends, closing its
//! stdout, when the session goes idle (the turn is over), the engine closes its stdin, or the server fails;
//! then the engine stops the server.
//!
//! Everything the server sends is bounded: an event over [`MAX_EVENT_BYTES`] is dropped with a warning, a
//! stream silent for [`SILENCE`] (the server sends a heartbeat every ten seconds) is a failure, and every
//! other call has a deadline.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};

/// How long OpenCode's server may take to listen.
const READY: Duration = Duration::from_secs(120);
/// The longest the event stream may stay silent.
const SILENCE: Duration = Duration::from_secs(60);
/// The deadline of each call other than the event stream.
const CALL: Duration = Duration::from_secs(30);
/// The largest event kept whole.
const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;
/// The user name OpenCode's server expects with its password.
const USER: &str = "opencode";
/// The variable that gives OpenCode's server its password.
pub(super) const PASSWORD_VARIABLE: &str = "OPENCODE_SERVER_PASSWORD";

/// Why the bridge to OpenCode's server stopped before the turn was over (said to the engine as the run's failure).
#[derive(Debug, thiserror::Error)]
enum Broken {
    #[error("OpenCode's server did not start listening within {}", crate::duration::format(*.0))]
    NotListening(Duration),
    #[error("OpenCode's server exited before it listened")]
    ExitedEarly,
    #[error("the bridge to OpenCode's server failed unexpectedly")]
    Panicked,
    #[error("cannot start the bridge to OpenCode's server: {0}")]
    Runtime(std::io::Error),
    #[error("cannot build the HTTP client for OpenCode's server: {0}")]
    Client(reqwest::Error),
    #[error("OpenCode's event stream could not be opened: {0}")]
    Open(reqwest::Error),
    #[error("OpenCode's event stream was refused: {0}")]
    OpenRefused(reqwest::StatusCode),
    #[error("OpenCode's server sent nothing for {}", crate::duration::format(*.0))]
    Silent(Duration),
    #[error("OpenCode's server closed its event stream")]
    Closed,
    #[error("OpenCode's event stream failed: {0}")]
    Stream(reqwest::Error),
    #[error("the engine stopped reading the runner's events: {0}")]
    Engine(std::io::Error),
    #[error("OpenCode's server did not say which session it created")]
    NoSession,
    #[error("OpenCode's server gave a session id that is not plain")]
    OddSession,
    #[error("OpenCode's server did not take {path}: {source}")]
    Call { path: String, source: reqwest::Error },
    #[error("OpenCode's server refused {path}: {status}")]
    Refused { path: String, status: reqwest::StatusCode },
    #[error("OpenCode's reply to {path} was cut: {source}")]
    Cut { path: String, source: reqwest::Error },
    #[error("OpenCode's reply to {path} was larger than {MAX_EVENT_BYTES} bytes")]
    TooLarge { path: String },
}

/// Where the server listens and how to sign in, from the command and environment the adapter gave.
struct Link {
    base: String,
    password: String,
}

impl Link {
    fn of(server: Option<std::net::SocketAddr>, env: &BTreeMap<String, String>) -> Option<Link> {
        Some(Link { base: format!("http://{}", server?), password: env.get(PASSWORD_VARIABLE)?.clone() })
    }
}

/// Starts the bridge for the server the runtime made reachable at `server`, reading the process's `stdout` (for
/// the line that says it listens); `stdin`, the process's own, is kept open while the bridge runs.
pub(super) fn bridge(
    server: Option<std::net::SocketAddr>,
    env: &BTreeMap<String, String>,
    stdout: Option<Box<dyn Read + Send>>,
    stdin: Option<Box<dyn Write + Send>>,
) -> std::io::Result<super::Bridged> {
    let Some(link) = Link::of(server, env) else {
        return Err(std::io::Error::other("the runtime did not say where OpenCode's server listens"));
    };
    let (engine_out, bridge_out) = std::io::pipe()?;
    let (bridge_in, engine_in) = std::io::pipe()?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("opencode-server-stdout".into()).spawn(move || {
        let Some(mut stdout) = stdout else { return };
        // Read to the end (a server that writes on must not block), keeping only what could hold the line.
        let (mut window, mut chunk, mut said) = (Vec::new(), [0_u8; 8192], false);
        while let Ok(read) = stdout.read(&mut chunk) {
            if read == 0 {
                break;
            }
            if said {
                continue;
            }
            window.extend_from_slice(&chunk[..read]);
            if window.windows(12).any(|w| w == b"listening on") {
                said = true;
                let _ = ready_tx.send(());
            }
            let keep = window.len().saturating_sub(16);
            window.drain(..keep);
        }
    })?;
    let (lines_tx, lines_rx) = tokio::sync::mpsc::channel::<String>(64);
    std::thread::Builder::new().name("opencode-server-stdin".into()).spawn(move || {
        for line in BufReader::new(bridge_in).lines() {
            let Ok(line) = line else { break };
            if lines_tx.blocking_send(line).is_err() {
                break;
            }
        }
    })?;
    std::thread::Builder::new().name("opencode-server".into()).spawn(move || {
        let _server_stdin = stdin;
        let mut out = bridge_out;
        let result = match ready_rx.recv_timeout(READY) {
            // Whatever happens in there, the engine is told (a panic is a failure of the turn, not silence).
            Ok(()) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drive(&link, lines_rx, &mut out)))
                .unwrap_or(Err(Broken::Panicked)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(Broken::NotListening(READY)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(Broken::ExitedEarly),
        };
        if let Err(broken) = result {
            let _ = write_line(&mut out, &json!({"type": "wb.error", "message": broken.to_string()}));
        }
    })?;
    Ok((Box::new(engine_in), Box::new(engine_out)))
}

fn write_line(out: &mut impl Write, value: &Value) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes)
}

/// Follows the server until the session is idle or the engine closes the bridge's stdin.
fn drive(link: &Link, lines: tokio::sync::mpsc::Receiver<String>, out: &mut impl Write) -> Result<(), Broken> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(Broken::Runtime)?;
    runtime.block_on(follow(link, lines, out))
}

async fn follow(
    link: &Link,
    mut lines: tokio::sync::mpsc::Receiver<String>,
    out: &mut impl Write,
) -> Result<(), Broken> {
    // The client is built for plain HTTP on loopback, but reqwest wants a TLS provider all the same.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| Broken::Client(e.without_url()))?;
    let server = Server { client, link };
    let response = server
        .client
        .get(format!("{}/event", link.base))
        .basic_auth(USER, Some(&link.password))
        .send()
        .await
        .map_err(|e| Broken::Open(e.without_url()))?;
    if !response.status().is_success() {
        return Err(Broken::OpenRefused(response.status()));
    }
    let mut stream = response.bytes_stream();
    let mut frames = Frames::default();
    let mut session: Option<String> = None;
    loop {
        tokio::select! {
            chunk = tokio::time::timeout(SILENCE, stream.next()) => {
                let bytes = match chunk {
                    Err(_) => return Err(Broken::Silent(SILENCE)),
                    Ok(None) => return Err(Broken::Closed),
                    Ok(Some(Err(e))) => return Err(Broken::Stream(e.without_url())),
                    Ok(Some(Ok(bytes))) => bytes,
                };
                for frame in frames.push(&bytes) {
                    let event = match frame {
                        Frame::Event(event) => event,
                        Frame::Oversized(size) => json!({"type": "wb.warning", "message": format!(
                            "An event of OpenCode's server was larger than {} MiB ({size} bytes): it was dropped",
                            MAX_EVENT_BYTES / (1024 * 1024)
                        )}),
                    };
                    let ours = session.as_deref().is_some_and(|s| session_of(&event) == Some(s));
                    if ours || event.get("type").and_then(Value::as_str) == Some("wb.warning") {
                        write_line(out, &event).map_err(Broken::Engine)?;
                    }
                    if ours && event.get("type").and_then(Value::as_str) == Some("session.idle") {
                        return Ok(());
                    }
                }
            }
            line = lines.recv() => {
                let Some(line) = line else { return Ok(()) };
                for said in server.take(&line, &mut session).await? {
                    write_line(out, &said).map_err(Broken::Engine)?;
                }
            }
        }
    }
}

/// The session an event is about.
fn session_of(event: &Value) -> Option<&str> {
    ["/properties/sessionID", "/properties/info/sessionID", "/properties/part/sessionID"]
        .iter()
        .find_map(|pointer| event.pointer(pointer).and_then(Value::as_str))
}

struct Server<'a> {
    client: reqwest::Client,
    link: &'a Link,
}

impl Server<'_> {
    /// Does what a line from the engine says; returns the lines to pass back (the session it started, a call
    /// the server refused). A turn that cannot start is an error; a refused reply is a warning.
    async fn take(&self, line: &str, session: &mut Option<String>) -> Result<Vec<Value>, Broken> {
        let Ok(line) = serde_json::from_str::<Value>(line) else { return Ok(Vec::new()) };
        let text = |key: &str| line.get(key).and_then(Value::as_str);
        match text("op") {
            Some("prompt") => {
                let mut said = Vec::new();
                let id = match text("session") {
                    Some(id) => id.to_owned(),
                    None => {
                        let created = self.post("/session", &json!({})).await?;
                        created.get("id").and_then(Value::as_str).map(str::to_owned).ok_or(Broken::NoSession)?
                    }
                };
                if !safe_path(&id) {
                    return Err(Broken::OddSession);
                }
                said.push(json!({"type": "wb.session", "sessionID": id}));
                *session = Some(id.clone());
                let body = json!({"parts": [{"type": "text", "text": text("text").unwrap_or_default()}]});
                self.post(&format!("/session/{id}/prompt_async"), &body).await?;
                Ok(said)
            }
            Some("post") => {
                let path = text("path").filter(|p| p.starts_with('/') && safe_path(p));
                let Some(path) = path else { return Ok(Vec::new()) };
                let body = line.get("body").cloned().unwrap_or_else(|| json!({}));
                Ok(match self.post(path, &body).await {
                    Ok(_) => Vec::new(),
                    Err(broken) => vec![json!({"type": "wb.warning", "message": broken.to_string()})],
                })
            }
            _ => Ok(Vec::new()),
        }
    }

    /// `POST path` with a JSON body; the reply's JSON (`null` when it has none), or what went wrong.
    async fn post(&self, path: &str, body: &Value) -> Result<Value, Broken> {
        let response = self
            .client
            .post(format!("{}{path}", self.link.base))
            .basic_auth(USER, Some(&self.link.password))
            .timeout(CALL)
            .json(body)
            .send()
            .await
            .map_err(|e| Broken::Call { path: path.to_owned(), source: e.without_url() })?;
        let status = response.status();
        if !status.is_success() {
            return Err(Broken::Refused { path: path.to_owned(), status });
        }
        let bytes =
            response.bytes().await.map_err(|e| Broken::Cut { path: path.to_owned(), source: e.without_url() })?;
        if bytes.len() > MAX_EVENT_BYTES {
            return Err(Broken::TooLarge { path: path.to_owned() });
        }
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

/// A path made of the characters OpenCode's ids and routes use.
fn safe_path(path: &str) -> bool {
    path.len() <= 512 && path.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-'))
}

/// Server-sent events as they arrive in chunks: each frame's `data` lines, parsed.
#[derive(Default)]
struct Frames {
    buffer: Vec<u8>,
    /// The frame being skipped has grown past the bound: its bytes are dropped until it ends.
    skipping: Option<usize>,
}

enum Frame {
    Event(Value),
    Oversized(usize),
}

impl Frames {
    fn push(&mut self, bytes: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        for &byte in bytes {
            if let Some(skipped) = self.skipping.as_mut() {
                *skipped += 1;
                let ended = byte == b'\n' && self.buffer.last() == Some(&b'\n');
                self.buffer.clear();
                self.buffer.push(byte);
                if ended {
                    frames.push(Frame::Oversized(*skipped));
                    self.skipping = None;
                    self.buffer.clear();
                }
                continue;
            }
            self.buffer.push(byte);
            if byte == b'\n' && self.buffer.ends_with(b"\n\n") {
                let frame = std::mem::take(&mut self.buffer);
                if let Some(event) = parse_frame(&frame) {
                    frames.push(Frame::Event(event));
                }
            } else if self.buffer.len() > MAX_EVENT_BYTES {
                self.skipping = Some(self.buffer.len());
                self.buffer.clear();
                self.buffer.push(byte);
            }
        }
        frames
    }
}

/// The JSON of a frame's `data:` lines (joined with newlines, as the format says).
fn parse_frame(frame: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(frame);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    if data.is_empty() {
        return None;
    }
    serde_json::from_str(&data.join("\n")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_across_chunks_are_joined_and_an_oversized_one_is_dropped() {
        let mut frames = Frames::default();
        assert!(frames.push(b"data: {\"type\":\"a\",").is_empty());
        let got = frames.push(b"\"n\":1}\n\n: comment\n\ndata: {\"type\":\"b\"}\n\n");
        let types: Vec<String> = got
            .iter()
            .filter_map(|f| match f {
                Frame::Event(e) => e.get("type").and_then(Value::as_str).map(str::to_owned),
                Frame::Oversized(_) => None,
            })
            .collect();
        assert_eq!(types, ["a", "b"]);
        let mut big = b"data: \"".to_vec();
        big.extend(std::iter::repeat_n(b'x', MAX_EVENT_BYTES + 10));
        big.extend(b"\"\n\ndata: {\"type\":\"after\"}\n\n");
        let got = frames.push(&big);
        assert!(matches!(got.first(), Some(Frame::Oversized(size)) if *size > MAX_EVENT_BYTES));
        assert!(matches!(got.get(1), Some(Frame::Event(e)) if e["type"] == "after"), "the stream goes on");
    }

    #[test]
    fn the_link_needs_the_address_and_the_password_and_paths_are_plain() {
        let env = BTreeMap::from([(PASSWORD_VARIABLE.to_owned(), "pw".to_owned())]);
        let address = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 4100)));
        let link = Link::of(address, &env).expect("a link");
        assert_eq!(link.base, "http://127.0.0.1:4100");
        assert!(Link::of(address, &BTreeMap::new()).is_none(), "no password, no link");
        assert!(Link::of(None, &env).is_none(), "no address, no link");
        assert!(safe_path("/permission/per_1/reply"));
        assert!(!safe_path("/permission/../x?y"));
        assert!(!safe_path("/a b"));
    }
}
