//! JSON-RPC 2.0 as MCP uses it: what a line holds (a request, a notification, a response, or something
//! invalid), the error codes, and the `initialize` answer with its protocol version negotiation.

use serde_json::{Value, json};

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON that is not a JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
/// An unknown tool, or arguments its schema does not accept.
pub const INVALID_PARAMS: i64 = -32602;
/// A tool that failed in a way it could not report as its result (a bug).
pub const INTERNAL_ERROR: i64 = -32603;

/// The protocol versions this server speaks, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2024-11-05", "2025-03-26", "2025-06-18"];
/// What the server answers a client asking for a version it does not speak (the testkit's MCP server's).
pub const DEFAULT_VERSION: &str = "2025-03-26";

/// The version to answer `initialize` with: the client's when this server speaks it, else the default (the
/// client then decides whether to go on).
pub fn negotiate(requested: Option<&str>) -> &'static str {
    SUPPORTED_VERSIONS.iter().find(|version| Some(**version) == requested).copied().unwrap_or(DEFAULT_VERSION)
}

/// What one JSON value from the client is.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response to a request: this server sends none, so it is ignored.
    Response,
    /// Not JSON-RPC: answered with [`INVALID_REQUEST`] (with the id, when it had a usable one).
    Invalid {
        id: Value,
        reason: &'static str,
    },
}

/// Classifies one message (an element of a batch, or a whole line).
pub fn classify(message: Value) -> Incoming {
    let Value::Object(mut object) = message else {
        return Incoming::Invalid { id: Value::Null, reason: "a message must be a JSON object" };
    };
    let id = object.remove("id");
    let usable_id = match &id {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        _ => None,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Incoming::Invalid { id: usable_id.unwrap_or(Value::Null), reason: "\"jsonrpc\" must be \"2.0\"" };
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            return Incoming::Invalid { id: usable_id.unwrap_or(Value::Null), reason: "\"method\" must be a string" };
        }
        None if id.is_some() && (object.contains_key("result") || object.contains_key("error")) => {
            return Incoming::Response;
        }
        None => return Incoming::Invalid { id: usable_id.unwrap_or(Value::Null), reason: "no \"method\"" },
    };
    let params = object.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return Incoming::Invalid {
            id: usable_id.unwrap_or(Value::Null),
            reason: "\"params\" must be an object or an array",
        };
    }
    match (id, usable_id) {
        (None, _) => Incoming::Notification { method, params },
        (Some(_), Some(id)) => Incoming::Request { id, method, params },
        (Some(_), None) => Incoming::Invalid { id: Value::Null, reason: "\"id\" must be a string or a number" },
    }
}

pub fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What the server tells an agent about itself at `initialize`.
const INSTRUCTIONS: &str = "wb-lsp checks Workbench packages (.workbenches/<name>/workbench.yml and the files it \
names) exactly as `wb-lsp check` and the editors do. Call `check` after every edit of a package: each diagnostic \
has a stable code, a 1-based line/column range and, where one exists, fixes with their edits. `fix` applies the \
safe fixes and writes only inside the server's root. `dry_run` and `smoke` show what a run would receive and \
whether it could start; `outcome` shows a run's outcome without applying it. Relative paths are relative to the \
root the result names.";

/// The answer to `initialize`.
pub fn initialize_result(params: &Value) -> Value {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    json!({
        "protocolVersion": negotiate(requested),
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "wb-lsp", "title": "Workbench package checker", "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    })
}

#[cfg(test)]
mod tests {
    use super::{Incoming, classify, negotiate};
    use serde_json::json;

    #[test]
    fn versions_are_echoed_when_spoken_else_the_default() {
        assert_eq!(negotiate(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2099-01-01")), "2025-03-26");
        assert_eq!(negotiate(None), "2025-03-26");
    }

    #[test]
    fn messages_are_classified() {
        let request = classify(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
        assert!(matches!(request, Incoming::Request { ref method, .. } if method == "ping"));
        let notification = classify(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(matches!(notification, Incoming::Notification { .. }));
        assert!(matches!(classify(json!({"jsonrpc": "2.0", "id": 1, "result": {}})), Incoming::Response));
        for invalid in [
            json!([1]),
            json!({"id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 3}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": 3}),
        ] {
            assert!(matches!(classify(invalid.clone()), Incoming::Invalid { .. }), "{invalid}");
        }
    }
}
