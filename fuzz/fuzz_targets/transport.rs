//! Arbitrary bytes as what the client sends: the language server's transport reader must never panic, must
//! end at the end of the input, never keeps more than its caps, and answers every frame it cannot use with a
//! JSON-RPC error response (so a hostile client can neither crash nor wedge the server).
//!
//! The first byte picks the reader's buffer size (1 to 256 bytes), so frames and header lines cross buffer
//! boundaries everywhere; the rest is the input.

#![no_main]

use std::io::{BufReader, Cursor};

use libfuzzer_sys::fuzz_target;
use wb_lsp::server::transport::read_loop;

fuzz_target!(|data: &[u8]| {
    let Some((&capacity, input)) = data.split_first() else { return };
    let mut reader = BufReader::with_capacity(usize::from(capacity) + 1, Cursor::new(input));
    let (messages_tx, messages_rx) = crossbeam_channel::unbounded();
    let (errors_tx, errors_rx) = crossbeam_channel::unbounded();
    // An error here is the end of the input inside a frame's body: the reader stops, as at EOF.
    let _ = read_loop(&mut reader, &messages_tx, &errors_tx);
    let messages = messages_rx.try_iter().count();
    let mut replies = 0;
    for raw in errors_rx.try_iter() {
        let reply: serde_json::Value = serde_json::from_str(&raw).expect("an error reply is JSON");
        assert_eq!(reply["jsonrpc"], "2.0", "{raw}");
        assert!(reply.get("id").is_some(), "{raw}");
        let code = reply["error"]["code"].as_i64().expect("an error code");
        assert!(code == -32700 || code == -32600, "{raw}");
        assert!(reply["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{raw}");
        replies += 1;
    }
    // Every message or reply consumed input: the reader always makes progress.
    assert!(messages + replies <= input.len(), "{messages} messages and {replies} replies from {} bytes", input.len());
});
