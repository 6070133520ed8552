//! Arbitrary bytes as an envd reply stream: the Connect envelope decoder (`wb_engine::runtime::e2b::connect`)
//! must never panic, must account for every byte it was given (each envelope re-encodes to exactly the bytes
//! it consumed; what is left is pending), must never hold more than one envelope's worth of bytes beyond the
//! chunk just pushed, and must refuse a length over its limit as soon as the length prefix arrives.
//!
//! The first byte picks the chunk size the bytes arrive in (1 to 256), so envelope headers and payloads cross
//! chunk boundaries everywhere; the rest is the stream.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wb_engine::runtime::e2b::connect::{Decoder, END_STREAM, MAX_ENVELOPE, encode, end_stream_error};

fuzz_target!(|data: &[u8]| {
    let Some((&size, stream)) = data.split_first() else { return };
    let chunk = usize::from(size) + 1;
    let mut decoder = Decoder::default();
    let mut pushed = 0usize;
    let mut consumed = 0usize;
    'stream: for piece in stream.chunks(chunk) {
        decoder.push(piece);
        pushed += piece.len();
        loop {
            match decoder.next_envelope() {
                Ok(Some(envelope)) => {
                    assert!(envelope.payload.len() <= MAX_ENVELOPE);
                    consumed += encode(envelope.flags, &envelope.payload).len();
                    if envelope.flags & END_STREAM != 0 {
                        // Any payload reads as no error or an error text; never a panic.
                        let _ = end_stream_error(&envelope.payload);
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    assert!(!error.to_string().is_empty());
                    break 'stream;
                }
            }
        }
        assert_eq!(consumed + decoder.pending(), pushed, "every byte is an envelope's or pending");
        assert!(decoder.pending() <= 5 + MAX_ENVELOPE + chunk, "{} bytes pending", decoder.pending());
    }
});
