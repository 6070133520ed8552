//! JSON-RPC over stdio with `Content-Length` framing.
//!
//! Unlike `lsp_server::Connection::stdio`, a malformed message does not end the session: it is answered with a
//! JSON-RPC error (`-32700` for unparsable JSON or unusable framing, `-32600` for JSON that is not a valid
//! message) and the reader carries on. A frame whose length cannot be known (a bad or missing `Content-Length`,
//! a header line over [`MAX_HEADER_LINE_BYTES`], a length over [`MAX_MESSAGE_BYTES`]) is answered the same
//! way, and the reader resynchronises on the next `Content-Length` header. Only EOF or an I/O error stops it.
//! Messages are framed with [`Message::write`]; the id-less error replies, which `lsp_server` cannot
//! express, are framed by hand. The protocol takes over standard input and output (`crate::stdio`), and each frame
//! is built whole and goes out in one `write` (two would wake a client waiting on the pipe twice per message).

use std::io::{self, BufRead, Read, Write};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};
use lsp_server::{Message, RequestId};

/// The most bytes one message may have.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// The most bytes one header line may have, its line break included.
pub const MAX_HEADER_LINE_BYTES: usize = 8 * 1024;
/// The header that starts every frame, as the reader looks for it when resynchronising.
const CONTENT_LENGTH: &[u8] = b"content-length";

pub struct Threads {
    pub reader: thread::JoinHandle<()>,
    pub writer: thread::JoinHandle<()>,
}

impl Threads {
    /// Waits up to `limit` for the writer to flush what is queued (it ends once every sender is gone).
    pub fn finish(self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.writer.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        if self.writer.is_finished() {
            let _ = self.writer.join();
        }
    }
}

/// Starts the reader and writer threads on stdin/stdout.
pub fn stdio() -> io::Result<(Sender<Message>, Receiver<Message>, Threads)> {
    let (writer_sender, writer_receiver) = unbounded::<Message>();
    let (reader_sender, reader_receiver) = unbounded::<Message>();
    let (errors, error_receiver) = unbounded::<String>();
    let crate::stdio::Protocol { input, mut output } = crate::stdio::take_over()?;
    let writer = thread::Builder::new().name("lsp-writer".into()).spawn(move || {
        write_loop(&mut output, &writer_receiver, error_receiver);
    })?;
    let reader = thread::Builder::new().name("lsp-reader".into()).spawn(move || {
        let mut input = io::BufReader::new(input);
        if let Err(error) = read_loop(&mut input, &reader_sender, &errors) {
            // stderr is the server's log.
            eprintln!("wb-lsp: cannot read the client's messages: {error}");
        }
    })?;
    Ok((writer_sender, reader_receiver, Threads { reader, writer }))
}

/// Writes messages and error replies until the message channel closes or the output breaks, each frame with
/// one `write_all`. The error channel closes when the reader ends, while runs may still be sending: from then on
/// only messages are waited for.
pub fn write_loop(out: &mut impl Write, messages: &Receiver<Message>, errors: Receiver<String>) {
    let mut errors = errors;
    loop {
        let mut frame = Vec::new();
        let framed = crossbeam_channel::select! {
            recv(messages) -> message => match message {
                Ok(message) => message.write(&mut frame),
                Err(_) => break,
            },
            recv(errors) -> raw => match raw {
                Ok(raw) => frame_raw(&mut frame, &raw),
                Err(_) => {
                    errors = crossbeam_channel::never();
                    continue;
                }
            },
        };
        if framed.and_then(|()| out.write_all(&frame)).and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}

fn frame_raw(frame: &mut Vec<u8>, body: &str) -> io::Result<()> {
    write!(frame, "Content-Length: {}\r\n\r\n", body.len())?;
    frame.extend_from_slice(body.as_bytes());
    Ok(())
}

/// Reads messages until EOF, answering malformed ones on `errors` (raw JSON-RPC error responses). Returns an
/// error only when reading fails.
pub fn read_loop(input: &mut impl BufRead, messages: &Sender<Message>, errors: &Sender<String>) -> io::Result<()> {
    let mut resynchronise = false;
    loop {
        let reply = match read_frame(input, resynchronise)? {
            Frame::End => return Ok(()),
            Frame::Body(body) => {
                resynchronise = false;
                match parse(&body) {
                    Ok(message) => {
                        if messages.send(message).is_err() {
                            return Ok(());
                        }
                        continue;
                    }
                    Err(Refused(reply)) => reply,
                }
            }
            Frame::Unusable(reason) => {
                resynchronise = true;
                error(None, lsp_server::ErrorCode::ParseError as i32, format!("Parse error: {reason}"))
            }
        };
        if errors.send(reply).is_err() {
            return Ok(());
        }
    }
}

/// What the reader found: a frame's body, a frame whose body cannot be delimited, or the end of the input.
enum Frame {
    Body(Vec<u8>),
    Unusable(Unusable),
    End,
}

/// Why a frame's body cannot be delimited.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("a header line is longer than {MAX_HEADER_LINE_BYTES} bytes")]
    Overlong,
    #[error("a message is longer than {MAX_MESSAGE_BYTES} bytes")]
    TooLong,
    #[error("invalid Content-Length header: {0:?}")]
    Length(String),
    #[error("the header has no Content-Length")]
    NoLength,
}

/// A message that cannot be taken, with the raw JSON-RPC error response that answers it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// One header line: its text (without the line break), `Overlong` when it is over the cap (it has then been
/// consumed up to its line break without being kept), or the end of the input.
enum Line {
    Text(String),
    Overlong,
    End,
}

/// Reads a line of at most [`MAX_HEADER_LINE_BYTES`], never buffering more than that.
fn read_header_line(input: &mut impl BufRead) -> io::Result<Line> {
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(match (overlong, line.is_empty()) {
                (true, _) => Line::Overlong,
                (false, true) => Line::End,
                (false, false) => Line::Text(text(&line)),
            });
        }
        let (chunk, done) = match available.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&available[..=end], true),
            None => (available, false),
        };
        let used = chunk.len();
        if !overlong && line.len() + used <= MAX_HEADER_LINE_BYTES {
            line.extend_from_slice(chunk);
        } else {
            overlong = true;
            line.clear();
        }
        input.consume(used);
        if done {
            return Ok(if overlong { Line::Overlong } else { Line::Text(text(&line)) });
        }
    }
}

fn text(line: &[u8]) -> String {
    String::from_utf8_lossy(line).trim_end_matches(['\r', '\n']).to_owned()
}

/// Skips input up to and including the next `Content-Length` (any case); false at EOF.
fn skip_to_content_length(input: &mut impl BufRead) -> io::Result<bool> {
    let mut matched = 0;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(false);
        }
        for (index, byte) in available.iter().enumerate() {
            let byte = byte.to_ascii_lowercase();
            // The marker's first letter occurs nowhere else in it, so a mismatch restarts at most one byte in.
            matched =
                if byte == CONTENT_LENGTH[matched] { matched + 1 } else { usize::from(byte == CONTENT_LENGTH[0]) };
            if matched == CONTENT_LENGTH.len() {
                input.consume(index + 1);
                return Ok(true);
            }
        }
        let used = available.len();
        input.consume(used);
    }
}

/// Consumes spaces and a colon when they come next; true when the colon was there.
fn colon_follows(input: &mut impl BufRead) -> io::Result<bool> {
    loop {
        let Some(&next) = input.fill_buf()?.first() else { return Ok(false) };
        match next {
            b' ' | b'\t' => input.consume(1),
            b':' => {
                input.consume(1);
                return Ok(true);
            }
            _ => return Ok(false),
        }
    }
}

/// Reads one frame. After an unusable frame (`resynchronise`), the input is first skipped to the next
/// `Content-Length` header, since the unusable frame's body has no known end.
fn read_frame(input: &mut impl BufRead, resynchronise: bool) -> io::Result<Frame> {
    let mut length: Option<Result<usize, Unusable>> = None;
    let mut headers = 0;
    while resynchronise && length.is_none() {
        if !skip_to_content_length(input)? {
            return Ok(Frame::End);
        }
        // `content-length` inside other text (no colon follows) is not a header: keep looking from there.
        if !colon_follows(input)? {
            continue;
        }
        match read_header_line(input)? {
            Line::Text(value) => {
                headers += 1;
                length = Some(content_length(&value));
            }
            Line::Overlong => return Ok(Frame::Unusable(Unusable::Overlong)),
            Line::End => return Ok(Frame::End),
        }
    }
    loop {
        let header = match read_header_line(input)? {
            Line::Text(header) => header,
            Line::Overlong => return Ok(Frame::Unusable(Unusable::Overlong)),
            Line::End => return Ok(Frame::End),
        };
        if header.is_empty() {
            // Blank lines before a frame's headers are tolerated; after them they end the header.
            if headers == 0 {
                continue;
            }
            break;
        }
        headers += 1;
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = Some(content_length(value));
        }
    }
    let length = match length {
        Some(Ok(length)) => length,
        Some(Err(reason)) => return Ok(Frame::Unusable(reason)),
        None => return Ok(Frame::Unusable(Unusable::NoLength)),
    };
    // Read, not allocated up front: a frame announcing more than it sends costs only what it sends.
    let mut body = Vec::new();
    (&mut *input).take(length as u64).read_to_end(&mut body)?;
    if body.len() < length {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    Ok(Frame::Body(body))
}

fn content_length(value: &str) -> Result<usize, Unusable> {
    let value = value.trim();
    match value.parse::<usize>() {
        Ok(length) if length <= MAX_MESSAGE_BYTES => Ok(length),
        Ok(_) => Err(Unusable::TooLong),
        Err(_) => Err(Unusable::Length(value.to_owned())),
    }
}

/// A JSON-RPC error response; the id is `null` when the request's id could not be read.
fn error(id: Option<RequestId>, code: i32, message: String) -> String {
    let id = id.and_then(|id| serde_json::to_value(id).ok()).unwrap_or(serde_json::Value::Null);
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Parses one message body, or the raw error response that answers it.
pub fn parse(body: &[u8]) -> Result<Message, Refused> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| Refused(error(None, lsp_server::ErrorCode::ParseError as i32, format!("Parse error: {e}"))))?;
    let id = value.get("id").and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    // Serde would read a bare array as a struct; JSON-RPC messages are objects that say `"jsonrpc": "2.0"`.
    if !value.is_object() || value.get("jsonrpc").and_then(serde_json::Value::as_str) != Some("2.0") {
        return Err(Refused(error(
            id,
            lsp_server::ErrorCode::InvalidRequest as i32,
            "Invalid request: not a JSON-RPC 2.0 message".to_owned(),
        )));
    }
    serde_json::from_value::<Message>(value)
        .map_err(|e| Refused(error(id, lsp_server::ErrorCode::InvalidRequest as i32, format!("Invalid request: {e}"))))
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
        assert!(read_loop(&mut io::Cursor::new(input), &messages_tx, &errors_tx).is_ok());
        let errors: Vec<String> = errors_rx.try_iter().collect();
        assert_eq!(errors.len(), 2);
        assert!(errors[0].contains("\"id\":null") && errors[0].contains("-32700"), "{}", errors[0]);
        assert!(errors[1].contains("-32600"), "{}", errors[1]);
        assert!(matches!(messages_rx.try_recv(), Ok(Message::Notification(n)) if n.method == "initialized"));
    }

    /// The error messages `read_loop` answers `input` with, and how many messages it passes on.
    fn read_all(input: &str) -> (Vec<String>, usize) {
        let (messages_tx, messages_rx) = unbounded();
        let (errors_tx, errors_rx) = unbounded();
        assert!(read_loop(&mut io::Cursor::new(input.as_bytes().to_vec()), &messages_tx, &errors_tx).is_ok());
        let errors: Vec<serde_json::Value> =
            errors_rx.try_iter().filter_map(|raw| serde_json::from_str(&raw).ok()).collect();
        assert!(errors.iter().all(|e| e["id"].is_null() && e["error"]["code"] == -32700), "{errors:?}");
        let reasons = errors.iter().filter_map(|e| e["error"]["message"].as_str().map(str::to_owned)).collect();
        (reasons, messages_rx.try_iter().count())
    }

    #[test]
    fn unusable_frames_are_answered_and_the_reader_resynchronises() {
        let body = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let good = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let long = "x".repeat(MAX_HEADER_LINE_BYTES);
        for (unusable, reason) in [
            (format!("Content-Length: 1e3\r\n\r\n{body}"), "invalid Content-Length header: \"1e3\""),
            (format!("Content-Length: 99999999999\r\n\r\n{body}"), "a message is longer than 67108864 bytes"),
            (format!("Content-Type: x\r\n\r\n{body}"), "the header has no Content-Length"),
            // The overlong line is refused; the frame's own Content-Length, after it, is where reading resumes.
            (format!("X-Long: {long}\r\n"), "a header line is longer than 8192 bytes"),
        ] {
            let (reasons, messages) = read_all(&format!("{unusable}{good}"));
            assert_eq!(reasons, [format!("Parse error: {reason}")]);
            assert_eq!(messages, 1, "{reason}");
        }
        // While resynchronising, `content-length` in a body without a colon after it is not a header.
        let (reasons, messages) =
            read_all(&format!("Content-Length: x\r\n\r\nsays content-lengthy things{good}{good}"));
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert_eq!(messages, 2);
        // Header names are matched in any case, with spaces before the colon.
        let (reasons, messages) =
            read_all(&format!("Content-Length: x\r\n\r\n{body}content-length :{}\r\n\r\n{body}", body.len()));
        assert_eq!((reasons.len(), messages), (1, 1));
    }

    /// Records each `write` call it is given, and closes the message channel (drops its sender) at the second,
    /// so the loop ends only after both frames (the loop picks among ready channels at random).
    struct Writes {
        calls: Vec<Vec<u8>>,
        messages: Option<crossbeam_channel::Sender<Message>>,
    }

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.calls.push(buf.to_vec());
            if self.calls.len() == 2 {
                self.messages = None;
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_frame_goes_out_in_one_write() {
        let (messages_tx, messages_rx) = unbounded::<Message>();
        let (errors_tx, errors_rx) = unbounded::<String>();
        let notification = lsp_server::Notification::new("window/logMessage".to_owned(), serde_json::json!({"n": 1}));
        messages_tx.send(Message::Notification(notification)).unwrap();
        errors_tx.send(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#.to_owned()).unwrap();
        drop(errors_tx);
        let mut out = Writes { calls: Vec::new(), messages: Some(messages_tx) };
        write_loop(&mut out, &messages_rx, errors_rx);
        assert_eq!(out.calls.len(), 2, "one write per frame");
        for frame in &out.calls {
            let text = String::from_utf8_lossy(frame);
            let (header, body) = text.split_once("\r\n\r\n").unwrap();
            assert_eq!(header, format!("Content-Length: {}", body.len()));
            assert!(serde_json::from_str::<serde_json::Value>(body).is_ok(), "{body}");
        }
    }

    /// CPU time this thread has used, in clock ticks (`utime + stime` of `/proc/thread-self/stat`).
    #[cfg(target_os = "linux")]
    fn thread_cpu_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
        // The fields after the parenthesised command name; utime and stime are the 14th and 15th of the line.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let tick = |index: usize| fields.get(index).and_then(|field| field.parse::<u64>().ok()).unwrap_or(0);
        tick(11) + tick(12)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_writer_idles_once_the_reader_has_ended() {
        let (messages_tx, messages_rx) = unbounded::<Message>();
        let (errors_tx, errors_rx) = unbounded::<String>();
        // The reader ended (its error channel is closed) while a run still holds the message channel open.
        drop(errors_tx);
        let closer = thread::spawn(move || {
            thread::sleep(std::time::Duration::from_secs(1));
            drop(messages_tx);
        });
        let before = thread_cpu_ticks();
        write_loop(&mut io::sink(), &messages_rx, errors_rx);
        let spent = thread_cpu_ticks() - before;
        let _ = closer.join();
        // A second of spinning is about 100 ticks; waiting on the channel costs none.
        assert!(spent < 10, "the writer spun for {spent} ticks");
    }
}
