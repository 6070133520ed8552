//! The runner's output streams, read on threads of their own until they end: lines decoded lossily (a byte
//! that is not UTF-8 never stops the reading, so the runner never writes into a closed pipe), each kept to a
//! size limit, so what the runner writes never grows the engine's memory without bound.

use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

/// The most bytes of one stdout line the engine keeps; the rest of a longer line is dropped (a native event
/// is never that long: the runners cap their tool output far below).
pub(super) const MAX_STDOUT_LINE_BYTES: usize = 4 * 1024 * 1024;
/// The most bytes of one stderr line kept for a failure to quote.
const MAX_STDERR_LINE_BYTES: usize = 4 * 1024;
/// The last lines of the runner's stderr a failure quotes.
const STDERR_TAIL_LINES: usize = 20;
/// Stdout lines read ahead of the translation: beyond them the reader waits, and so does the runner.
const STDOUT_LINES_AHEAD: usize = 16;

/// One line of output: its text (the first bytes up to the limit, decoded lossily, without the line break)
/// and how many bytes of it past the limit were dropped.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct OutputLine {
    pub text: String,
    pub dropped: usize,
}

/// Splits a byte stream into [`OutputLine`]s, holding at most `limit` bytes of a line. Ends at the end of the
/// stream or at a read error.
struct Lines<R> {
    input: BufReader<R>,
    limit: usize,
}

impl<R: Read> Iterator for Lines<R> {
    type Item = OutputLine;

    fn next(&mut self) -> Option<OutputLine> {
        let mut kept = Vec::new();
        let mut dropped = 0;
        let mut seen = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(_) => &[],
            };
            if available.is_empty() {
                return seen.then(|| finish(kept, dropped));
            }
            seen = true;
            let (content, used, done) = match available.iter().position(|&byte| byte == b'\n') {
                Some(end) => (&available[..end], end + 1, true),
                None => (available, available.len(), false),
            };
            let room = self.limit - kept.len();
            let keep = content.len().min(room);
            kept.extend_from_slice(&content[..keep]);
            dropped += content.len() - keep;
            self.input.consume(used);
            if done {
                return Some(finish(kept, dropped));
            }
        }
    }
}

fn finish(mut kept: Vec<u8>, dropped: usize) -> OutputLine {
    if dropped == 0 && kept.last() == Some(&b'\r') {
        kept.pop();
    }
    // Valid UTF-8 (the usual case) becomes the text without a copy.
    let text = String::from_utf8(kept).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
    OutputLine { text, dropped }
}

fn lines<R: Read>(input: R, limit: usize) -> Lines<R> {
    Lines { input: BufReader::new(input), limit }
}

/// What the stdout reader sends: a line, then that the stream ended.
pub(super) enum Line {
    Out(OutputLine),
    OutClosed,
}

/// Reads the runner's stdout on a thread of its own, so the run's loop can also watch the cancel flag. The
/// reader keeps draining until the stream ends, unless the loop stops listening.
pub(super) fn read_lines(stdout: Option<Box<dyn Read + Send>>) -> mpsc::Receiver<Line> {
    let (tx, rx) = mpsc::sync_channel(STDOUT_LINES_AHEAD);
    if let Some(stdout) = stdout {
        std::thread::spawn(move || {
            for line in lines(stdout, MAX_STDOUT_LINE_BYTES) {
                if tx.send(Line::Out(line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Line::OutClosed);
        });
    }
    rx
}

/// Keeps the last lines of the runner's stderr, read on a thread of its own until the stream ends.
pub(super) fn keep_tail(stderr: Option<Box<dyn Read + Send>>) -> (Arc<Mutex<Vec<String>>>, Option<JoinHandle<()>>) {
    let tail = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = stderr.map(|stderr| {
        let tail = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in lines(stderr, MAX_STDERR_LINE_BYTES) {
                if let Ok(mut tail) = tail.lock() {
                    tail.push(line.text);
                    if tail.len() > STDERR_TAIL_LINES {
                        tail.remove(0);
                    }
                }
            }
        })
    });
    (tail, reader)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], limit: usize) -> Vec<(String, usize)> {
        lines(input, limit).map(|line| (line.text, line.dropped)).collect()
    }

    #[test]
    fn bytes_that_are_not_utf8_are_replaced_and_reading_goes_on() {
        let input = b"ok\n\xff\xfe bad\r\nafter\r\nlast";
        assert_eq!(
            all(input, 100),
            [("ok".into(), 0), ("\u{fffd}\u{fffd} bad".into(), 0), ("after".into(), 0), ("last".into(), 0)]
        );
        assert_eq!(all(b"", 100), []);
        assert_eq!(all(b"\n\n", 100), [(String::new(), 0), (String::new(), 0)]);
    }

    #[test]
    fn a_long_line_keeps_its_first_bytes_and_counts_the_rest() {
        assert_eq!(all(b"abcdefgh\nxy\nabcdef", 4), [("abcd".into(), 4), ("xy".into(), 0), ("abcd".into(), 2)]);
    }

    /// A line far longer than the limit, arriving in small reads: never more than the limit is held.
    #[test]
    fn an_endless_line_is_read_in_bounded_memory() {
        let endless = std::io::repeat(b'x').take(64 * 1024 * 1024);
        let mut reader = lines(endless, 1024);
        let line = reader.next().expect("a line");
        assert_eq!((line.text.len(), line.dropped), (1024, 64 * 1024 * 1024 - 1024));
        assert!(line.text.capacity() <= 2048, "{}", line.text.capacity());
        assert!(reader.next().is_none());
    }
}
