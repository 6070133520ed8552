//! JSON-RPC over stdio with `Content-Length` framing.
//!
//! Unlike `lsp_server::Connection::stdio`, a malformed message does not end the session: it is answered with a
//! JSON-RPC error (`-32700` for unparsable JSON, `-32600` for JSON that is not a valid message) and the reader
//! carries on. Only a broken stream (EOF, I/O error, unusable framing) stops it.

use std::io::{self, BufRead, Write};
use std::thread;

use crossbeam_channel::{Receiver, Sender, unbounded};
use lsp_server::{Message, RequestId};

/// The most bytes one message may have. Larger headers are treated as a broken stream.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

pub struct Threads {
    pub reader: thread::JoinHandle<()>,
    pub writer: thread::JoinHandle<()>,
}

/// Starts the reader and writer threads on stdin/stdout.
pub fn stdio() -> io::Result<(Sender<Message>, Receiver<Message>, Threads)> {
    let (writer_sender, writer_receiver) = unbounded::<Message>();
    let (reader_sender, reader_receiver) = unbounded::<Message>();
    let (errors, error_receiver) = unbounded::<String>();
    let writer = thread::Builder::new().name("lsp-writer".into()).spawn(move || {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        loop {
            let written = crossbeam_channel::select! {
                recv(writer_receiver) -> message => match message {
                    Ok(message) => write_message(&mut out, &message),
                    Err(_) => break,
                },
                recv(error_receiver) -> raw => match raw {
                    Ok(raw) => write_raw(&mut out, &raw),
                    Err(_) => continue,
                },
            };
            if written.is_err() {
                break;
            }
        }
    })?;
    let reader = thread::Builder::new().name("lsp-reader".into()).spawn(move || {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        read_loop(&mut input, &reader_sender, &errors);
    })?;
    Ok((writer_sender, reader_receiver, Threads { reader, writer }))
}

pub fn write_message(out: &mut impl Write, message: &Message) -> io::Result<()> {
    let body = serde_json::to_string(message).map_err(io::Error::other)?;
    write_raw(out, &body)
}

fn write_raw(out: &mut impl Write, body: &str) -> io::Result<()> {
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

/// Reads messages until EOF, answering malformed ones on `errors` (raw JSON-RPC error responses).
pub fn read_loop(input: &mut impl BufRead, messages: &Sender<Message>, errors: &Sender<String>) {
    loop {
        let body = match read_frame(input) {
            Ok(Some(body)) => body,
            Ok(None) | Err(_) => return,
        };
        match parse(&body) {
            Ok(message) => {
                if messages.send(message).is_err() {
                    return;
                }
            }
            Err(response) => {
                if errors.send(response).is_err() {
                    return;
                }
            }
        }
    }
}

fn read_frame(input: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok();
            }
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_MESSAGE_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "message too large"));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body)?;
    Ok(Some(body))
}

/// A JSON-RPC error response; the id is `null` when the request's id could not be read.
fn error(id: Option<RequestId>, code: i32, message: String) -> String {
    let id = id.and_then(|id| serde_json::to_value(id).ok()).unwrap_or(serde_json::Value::Null);
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Parses one message body, or the raw error response that answers it.
pub fn parse(body: &[u8]) -> Result<Message, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| error(None, lsp_server::ErrorCode::ParseError as i32, format!("Parse error: {e}")))?;
    let id = value.get("id").and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    // Serde would read a bare array as a struct; JSON-RPC messages are objects that say `"jsonrpc": "2.0"`.
    if !value.is_object() || value.get("jsonrpc").and_then(serde_json::Value::as_str) != Some("2.0") {
        return Err(error(
            id,
            lsp_server::ErrorCode::InvalidRequest as i32,
            "Invalid request: not a JSON-RPC 2.0 message".to_owned(),
        ));
    }
    serde_json::from_value::<Message>(value)
        .map_err(|e| error(id, lsp_server::ErrorCode::InvalidRequest as i32, format!("Invalid request: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_messages_get_errors_and_the_stream_continues() {
        let good = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let bad = "{not json";
        let invalid = r#"[{"jsonrpc":"2.0","id":7,"method":"x"}]"#;
        let mut input = Vec::new();
        for body in [bad, invalid, good] {
            input.extend_from_slice(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
        }
        let (messages_tx, messages_rx) = unbounded();
        let (errors_tx, errors_rx) = unbounded();
        read_loop(&mut io::Cursor::new(input), &messages_tx, &errors_tx);
        let errors: Vec<String> = errors_rx.try_iter().collect();
        assert_eq!(errors.len(), 2);
        assert!(errors[0].contains("\"id\":null") && errors[0].contains("-32700"), "{}", errors[0]);
        assert!(errors[1].contains("-32600"), "{}", errors[1]);
        assert!(matches!(messages_rx.try_recv(), Ok(Message::Notification(n)) if n.method == "initialized"));
    }
}
