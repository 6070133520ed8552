//! A blocking `Read` over chunks arriving on a tokio channel: how a container's or a sandbox's output, read
//! by async tasks, reaches the engine's reader threads. Bounded channels make a runner that writes faster
//! than the engine reads wait, instead of filling the engine's memory. Read it outside the async runtime
//! (`blocking_recv`).

use std::io::Read;

pub(crate) struct ChannelReader<T> {
    rx: tokio::sync::mpsc::Receiver<T>,
    chunk: Option<T>,
    position: usize,
}

impl<T: AsRef<[u8]>> ChannelReader<T> {
    pub(crate) fn new(rx: tokio::sync::mpsc::Receiver<T>) -> ChannelReader<T> {
        ChannelReader { rx, chunk: None, position: 0 }
    }
}

impl<T: AsRef<[u8]>> Read for ChannelReader<T> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(chunk) = &self.chunk {
                let bytes = chunk.as_ref();
                if self.position < bytes.len() {
                    let n = out.len().min(bytes.len() - self.position);
                    out[..n].copy_from_slice(&bytes[self.position..self.position + n]);
                    self.position += n;
                    return Ok(n);
                }
            }
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.chunk = Some(chunk);
                    self.position = 0;
                }
                None => return Ok(0),
            }
        }
    }
}

/// A blocking `Write` whose bytes go, chunk by chunk, to a tokio channel an async task drains into a container's
/// stdin; dropping it closes that stdin.
pub(crate) struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Vec<u8>>,
}

impl ChannelWriter {
    pub(crate) fn new(tx: tokio::sync::mpsc::Sender<Vec<u8>>) -> ChannelWriter {
        ChannelWriter { tx }
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.tx
            .blocking_send(bytes.to_vec())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the runner's stdin is closed"))?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_read_in_order_across_small_reads_and_empty_chunks() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
        let writer = std::thread::spawn(move || {
            for chunk in [b"hel".to_vec(), Vec::new(), b"lo".to_vec()] {
                let _ = tx.blocking_send(chunk);
            }
        });
        let mut reader = ChannelReader::new(rx);
        let mut text = Vec::new();
        let mut buffer = [0u8; 2];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => text.extend_from_slice(&buffer[..n]),
            }
        }
        let _ = writer.join();
        assert_eq!(text, b"hello");
    }
}
