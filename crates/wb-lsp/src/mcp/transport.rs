//! The MCP stdio transport: one JSON-RPC message per line, read with a bound on the line's length (a longer
//! line is skipped to its end and reported, never held in memory), and written whole, one line at a time,
//! from whichever thread finished.

use std::io::{self, BufRead, Write};
use std::sync::Mutex;

/// The longest line read: a message is a few hundred bytes; 4 MiB leaves room for any real one.
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line's bytes, without its `\n` (or `\r\n`).
    Text(Vec<u8>),
    /// A line longer than the bound, skipped up to and including its `\n`.
    TooLong,
    /// The input ended.
    Eof,
}

/// Reads lines of at most `max` bytes.
pub struct LineReader<R> {
    input: R,
    max: usize,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(input: R, max: usize) -> LineReader<R> {
        LineReader { input, max }
    }

    /// The next line that is not blank. A last line without a `\n` counts as a line.
    pub fn next_line(&mut self) -> io::Result<Line> {
        loop {
            match self.read_one()? {
                Line::Text(text) if text.iter().all(u8::is_ascii_whitespace) => continue,
                line => return Ok(line),
            }
        }
    }

    fn read_one(&mut self) -> io::Result<Line> {
        let mut line = Vec::new();
        let mut too_long = false;
        loop {
            let buffer = match self.input.fill_buf() {
                Ok(buffer) => buffer,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if buffer.is_empty() {
                // The end of the input: what was read so far is the last line.
                return Ok(match (too_long, line.is_empty()) {
                    (true, _) => Line::TooLong,
                    (false, true) => Line::Eof,
                    (false, false) => Line::Text(trim_cr(line)),
                });
            }
            let (taken, ended) = match buffer.iter().position(|&byte| byte == b'\n') {
                Some(at) => (at, true),
                None => (buffer.len(), false),
            };
            if !too_long {
                if line.len() + taken > self.max {
                    too_long = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(&buffer[..taken]);
                }
            }
            self.input.consume(if ended { taken + 1 } else { taken });
            if ended {
                return Ok(if too_long { Line::TooLong } else { Line::Text(trim_cr(line)) });
            }
        }
    }
}

fn trim_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

/// The output: each message one line, written and flushed under a lock so messages from different threads
/// never interleave. A client that went away (a broken pipe) is noted once on stderr; later messages are
/// dropped.
pub struct Output<W> {
    writer: Mutex<Option<W>>,
}

impl<W: Write> Output<W> {
    pub fn new(writer: W) -> Output<W> {
        Output { writer: Mutex::new(Some(writer)) }
    }

    pub fn send(&self, message: &serde_json::Value) {
        // Compact JSON never holds a raw newline: strings escape theirs.
        let mut line = match serde_json::to_vec(message) {
            Ok(line) => line,
            Err(error) => {
                eprintln!("wb-lsp mcp: cannot encode a message: {error}");
                return;
            }
        };
        line.push(b'\n');
        let mut writer = match self.writer.lock() {
            Ok(writer) => writer,
            Err(poisoned) => poisoned.into_inner(),
        };
        let Some(out) = writer.as_mut() else { return };
        if let Err(error) = out.write_all(&line).and_then(|()| out.flush()) {
            eprintln!("wb-lsp mcp: cannot write to the client: {error}");
            *writer = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Line, LineReader};

    fn lines(input: &[u8], max: usize) -> Vec<Line> {
        // A tiny buffer, so lines cross buffer boundaries.
        let mut reader = LineReader::new(std::io::BufReader::with_capacity(3, input), max);
        let mut out = Vec::new();
        loop {
            let line = reader.next_line().unwrap();
            let end = line == Line::Eof;
            out.push(line);
            if end {
                return out;
            }
        }
    }

    #[test]
    fn lines_are_bounded_and_a_long_one_is_skipped_to_its_end() {
        let text = |s: &str| Line::Text(s.as_bytes().to_vec());
        assert_eq!(
            lines(b"{\"a\":1}\r\n\n  \n0123456789\nok\nlast", 8),
            [text("{\"a\":1}"), Line::TooLong, text("ok"), text("last"), Line::Eof]
        );
        assert_eq!(lines(b"12345678\n123456789", 8), [text("12345678"), Line::TooLong, Line::Eof]);
        assert_eq!(lines(b"", 8), [Line::Eof]);
    }
}
