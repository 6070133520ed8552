//! Reads that cannot wait for ever: a test reading what a process, a fake's sandbox command or a child's pipe
//! prints reads it through a [`Deadline`], and fails naming what it waited for (and what came) once the deadline
//! passes, instead of hanging (a root where bubblewrap could not start once left a test reading for 50 minutes).

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How much of what was read a failure shows (the end of it).
const SHOWN: usize = 400;

/// A reader whose every read returns by one deadline, or fails the test. A thread of its own reads the stream
/// underneath as it comes (so the stream is drained eagerly); a read past the deadline panics with `what`.
pub struct Deadline {
    chunks: Receiver<io::Result<Vec<u8>>>,
    pending: Vec<u8>,
    at: usize,
    deadline: Instant,
    within: Duration,
    what: String,
    seen: Vec<u8>,
    ended: bool,
}

/// `reader` read through a [`Deadline`] `within` from now; `what` names what the test waits for ("the sandbox
/// command's output"), for the failure.
pub fn deadline<R: Read + Send + 'static>(mut reader: R, within: Duration, what: &str) -> Deadline {
    let (sender, chunks) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 8192];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) => return,
                Ok(n) => {
                    if sender.send(Ok(buffer[..n].to_vec())).is_err() {
                        return;
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    let _ = sender.send(Err(error));
                    return;
                }
            }
        }
    });
    Deadline {
        chunks,
        pending: Vec::new(),
        at: 0,
        deadline: Instant::now() + within,
        within,
        what: what.to_owned(),
        seen: Vec::new(),
        ended: false,
    }
}

/// [`deadline`] on a boxed stream taken out of its place (a `RemoteProcess`'s `stdout` or `stderr`), which is
/// left an empty stream.
pub fn deadline_taken(place: &mut Box<dyn Read + Send>, within: Duration, what: &str) -> Deadline {
    deadline(std::mem::replace(place, Box::new(io::empty())), within, what)
}

impl Deadline {
    fn expired(&self) -> ! {
        let start = self.seen.len().saturating_sub(SHOWN);
        panic!(
            "{}: still missing after {:?} (read so far, its end: {:?})",
            self.what,
            self.within,
            String::from_utf8_lossy(&self.seen[start..])
        );
    }

    /// Moves the deadline to `within` from now (what is left of a stream after a first part was awaited).
    pub fn renew(&mut self, within: Duration) {
        (self.deadline, self.within) = (Instant::now() + within, within);
    }

    /// Reads everything up to the end of the stream (or up to an error of the stream underneath: what came).
    pub fn bytes_to_end(&mut self) -> Vec<u8> {
        let mut bytes = Vec::new();
        let _ = self.read_to_end(&mut bytes);
        bytes
    }

    /// Reads everything up to the end of the stream, as text.
    pub fn text_to_end(&mut self) -> String {
        String::from_utf8_lossy(&self.bytes_to_end()).into_owned()
    }

    /// What has arrived and was not read yet, without waiting (for a failure's message), as text.
    pub fn arrived(&mut self) -> String {
        let mut bytes = self.pending.split_off(self.at);
        while let Ok(Ok(chunk)) = self.chunks.try_recv() {
            bytes.extend_from_slice(&chunk);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.pending.len() {
            if self.ended || buf.is_empty() {
                return Ok(0);
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(Ok(chunk)) => {
                    self.seen.extend_from_slice(&chunk);
                    let excess = self.seen.len().saturating_sub(4 * SHOWN);
                    self.seen.drain(..excess);
                    (self.pending, self.at) = (chunk, 0);
                }
                Ok(Err(error)) => {
                    self.ended = true;
                    return Err(error);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Ok(0);
                }
                Err(RecvTimeoutError::Timeout) => self.expired(),
            }
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    #[test]
    fn a_stream_that_ends_reads_as_usual() {
        let mut reader = deadline(&b"one\ntwo\n"[..], Duration::from_secs(5), "two lines");
        let mut lines = io::BufReader::new(&mut reader).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "one");
        assert_eq!(lines.next().unwrap().unwrap(), "two");
        assert!(lines.next().is_none());
    }

    #[test]
    fn a_stream_that_stalls_fails_the_read_naming_what_was_missing() {
        let (reader, mut writer) = io::pipe().unwrap();
        std::io::Write::write_all(&mut writer, b"partial").unwrap();
        let mut reader = deadline(reader, Duration::from_millis(200), "the command's exit line");
        let started = Instant::now();
        let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.text_to_end())).unwrap_err();
        let message = failure.downcast_ref::<String>().unwrap();
        assert!(message.starts_with("the command's exit line: still missing after 200ms"), "{message}");
        assert!(message.contains("partial"), "{message}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(writer);
    }
}
