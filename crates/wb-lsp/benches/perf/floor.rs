//! The round trip's floor on this machine: the bench binary started as `perf --floor-server` is the least a
//! language server can be (one thread, no work: `initialize` gets empty capabilities, every opened or changed
//! document an empty `publishDiagnostics` of its version at once), measured with the same client and pauses as
//! wb-lsp. What wb-lsp takes beyond it is its own; the floor is the pipe, the scheduler and the client.

use std::io::{self, Write};

use serde_json::json;
use wb_testsupport::lsp::{frame, try_read_message};

/// Serves as the floor server when started with `--floor-server`; `None` otherwise.
pub fn serve() -> Option<i32> {
    if std::env::args().nth(1).as_deref() != Some("--floor-server") {
        return None;
    }
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    while let Some(message) = try_read_message(&mut input) {
        let method = message["method"].as_str().unwrap_or_default();
        let answer = match method {
            "initialize" => Some(json!({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})),
            "exit" => return Some(0),
            "textDocument/didOpen" | "textDocument/didChange" => {
                let document = &message["params"]["textDocument"];
                let params = json!({"uri": document["uri"], "version": document["version"], "diagnostics": []});
                Some(json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params}))
            }
            _ if message.get("id").is_some() && !method.is_empty() => {
                Some(json!({"jsonrpc": "2.0", "id": message["id"], "result": null}))
            }
            _ => None,
        };
        if let Some(answer) = answer {
            let written = output.write_all(&frame(&answer.to_string())).and_then(|()| output.flush());
            if written.is_err() {
                return Some(1);
            }
        }
    }
    Some(0)
}
