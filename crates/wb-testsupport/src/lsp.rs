//! LSP framing for tests that talk to the built server over stdio: `Content-Length` frames out, messages in.

use std::io::BufRead;

use serde_json::Value;

/// One message framed as the base protocol sends it.
pub fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// Reads one framed message (panics, as a test should, when the server closes its stdout or sends a malformed
/// frame).
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub fn read_message(reader: &mut impl BufRead) -> Value {
    let mut length = 0;
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the server closed stdout");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    std::io::Read::read_exact(reader, &mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}
