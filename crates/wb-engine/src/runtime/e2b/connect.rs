//! A small Connect-protocol codec with the JSON codec, as envd speaks it (and the official SDK sends it:
//! `createConnectTransport({useBinaryFormat:false})`).
//!
//! - Unary calls: `POST /<service>/<Method>`, `Content-Type: application/json`, `Connect-Protocol-Version: 1`,
//!   a proto3-JSON body; errors are non-200 replies with `{code, message}`.
//! - Server streams: the request is `application/connect+json` with one envelope as the body; the reply is
//!   a sequence of envelopes, each 1 flag byte (0 = data, 2 = end-of-stream, 1 = compressed, which we never
//!   ask for), a 4-byte big-endian length and that many bytes of JSON. The end-of-stream payload is `{}` or
//!   `{"error":{"code","message"}}`, which is an error. A stream that stops before its end-of-stream
//!   envelope is broken.

use bytes::{Buf, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use std::pin::Pin;

/// Flag of a data envelope.
pub const DATA: u8 = 0;
/// Flag bit of a compressed envelope.
pub const COMPRESSED: u8 = 1;
/// Flag bit of the end-of-stream envelope.
pub const END_STREAM: u8 = 2;

/// The largest envelope accepted (envd's messages are small; output chunks are a few KiB): a longer length
/// prefix is an error before any of it is buffered.
pub const MAX_ENVELOPE: usize = 16 * 1024 * 1024;

/// Why reading a server stream failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A length prefix past [`MAX_ENVELOPE`].
    #[error("a Connect envelope of {0} bytes exceeds the {MAX_ENVELOPE} byte limit")]
    TooLarge(usize),
    #[error("a compressed Connect envelope arrived, but compression was not negotiated")]
    Compressed,
    /// The end-of-stream envelope carried an error (`code: message`).
    #[error("{0}")]
    Ended(String),
    #[error("an unreadable stream message ({0})")]
    Unreadable(serde_json::Error),
    #[error("the stream broke ({0})")]
    Broke(reqwest::Error),
    #[error("the stream ended without its end-of-stream message")]
    Cut,
}

/// One envelope: `[flags][len:u32be][payload]`.
pub fn encode(flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 5);
    out.push(flags);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A decoded envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub flags: u8,
    pub payload: Bytes,
}

/// Incremental envelope decoder: push bytes as they arrive, take whole envelopes out.
#[derive(Default)]
pub struct Decoder {
    buffer: BytesMut,
}

impl Decoder {
    pub fn push(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
    }

    /// The next whole envelope, `Ok(None)` when more bytes are needed.
    pub fn next_envelope(&mut self) -> Result<Option<Envelope>, StreamError> {
        if self.buffer.len() < 5 {
            return Ok(None);
        }
        let flags = self.buffer[0];
        let length = u32::from_be_bytes([self.buffer[1], self.buffer[2], self.buffer[3], self.buffer[4]]) as usize;
        if length > MAX_ENVELOPE {
            return Err(StreamError::TooLarge(length));
        }
        if self.buffer.len() < 5 + length {
            return Ok(None);
        }
        self.buffer.advance(5);
        let payload = self.buffer.split_to(length).freeze();
        if flags & COMPRESSED != 0 {
            return Err(StreamError::Compressed);
        }
        Ok(Some(Envelope { flags, payload }))
    }

    /// Bytes received but not yet part of a whole envelope.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }
}

/// The error an end-of-stream payload carries, as `code: message`, if any.
pub fn end_stream_error(payload: &[u8]) -> Option<String> {
    if payload.is_empty() {
        return None;
    }
    let value: serde_json::Value = match serde_json::from_slice(payload) {
        Ok(value) => value,
        Err(_) => return Some("an unreadable end-of-stream message".to_owned()),
    };
    let error = value.get("error")?;
    let code = error.get("code").and_then(|c| c.as_str()).unwrap_or("unknown");
    let message = error.get("message").and_then(|m| m.as_str()).unwrap_or("");
    Some(if message.is_empty() { code.to_owned() } else { format!("{code}: {message}") })
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// A server stream's messages, read over a reply body.
pub struct ServerStream {
    body: ByteStream,
    decoder: Decoder,
    finished: bool,
}

impl ServerStream {
    pub fn new(response: reqwest::Response) -> ServerStream {
        ServerStream { body: Box::pin(response.bytes_stream()), decoder: Decoder::default(), finished: false }
    }

    /// The next data message; `Ok(None)` after a clean end-of-stream; an error when the end-of-stream carries
    /// one, a message is not JSON, or the body stops (or fails) before its end-of-stream envelope.
    pub async fn next(&mut self) -> Result<Option<serde_json::Value>, StreamError> {
        loop {
            if self.finished {
                return Ok(None);
            }
            if let Some(envelope) = self.decoder.next_envelope()? {
                if envelope.flags & END_STREAM != 0 {
                    self.finished = true;
                    return match end_stream_error(&envelope.payload) {
                        Some(error) => Err(StreamError::Ended(error)),
                        None => Ok(None),
                    };
                }
                return serde_json::from_slice(&envelope.payload).map(Some).map_err(StreamError::Unreadable);
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.decoder.push(&chunk),
                Some(Err(error)) => {
                    self.finished = true;
                    return Err(StreamError::Broke(error));
                }
                None => {
                    self.finished = true;
                    return Err(StreamError::Cut);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_decode_across_arbitrary_chunk_boundaries() {
        let mut wire = encode(DATA, br#"{"event":{"start":{"pid":1}}}"#);
        wire.extend(encode(END_STREAM, br#"{"error":{"code":"deadline_exceeded","message":"late"}}"#));
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for byte in &wire {
            decoder.push(std::slice::from_ref(byte));
            while let Some(envelope) = decoder.next_envelope().ok().flatten() {
                out.push(envelope);
            }
        }
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].flags, DATA);
        assert_eq!(end_stream_error(&out[1].payload).as_deref(), Some("deadline_exceeded: late"));
        assert_eq!(end_stream_error(b"{}"), None);
        assert_eq!(decoder.pending(), 0);
    }

    #[test]
    fn compressed_envelopes_are_refused() {
        let mut decoder = Decoder::default();
        decoder.push(&encode(COMPRESSED, b"{}"));
        assert!(decoder.next_envelope().is_err());
    }
}
