//! A scripted MCP server over Streamable HTTP (JSON responses): `initialize`, `tools/list` with one
//! `lookup` tool, `tools/call`, `ping`. It records every request's headers so a test can prove what
//! credentials a runner sent.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::http::{Request, Responder, Server};

/// One request the MCP server got.
#[derive(Clone, Debug)]
pub struct McpRequest {
    pub method: String,
    /// The JSON-RPC method, when the body was one.
    pub rpc: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl McpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// The text `lookup` answers.
pub const LOOKUP_ANSWER: &str = "scripted lookup result";

pub struct McpServer {
    server: Server,
    log: Arc<Mutex<Vec<McpRequest>>>,
}

impl McpServer {
    pub fn start() -> std::io::Result<McpServer> {
        McpServer::start_on(std::net::IpAddr::from([127, 0, 0, 1]))
    }

    /// On another local address (a container bridge's gateway).
    pub fn start_on(ip: std::net::IpAddr) -> std::io::Result<McpServer> {
        let log: Arc<Mutex<Vec<McpRequest>>> = Arc::default();
        let sink = log.clone();
        let server = Server::start_on(
            ip,
            0,
            Arc::new(move |request: &Request, responder: &mut Responder<'_>| handle(request, responder, &sink)),
        )?;
        Ok(McpServer { server, log })
    }

    /// The endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.server.url())
    }

    pub fn requests(&self) -> Vec<McpRequest> {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }
}

fn handle(request: &Request, responder: &mut Responder<'_>, log: &Mutex<Vec<McpRequest>>) -> std::io::Result<()> {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let rpc = body.get("method").and_then(Value::as_str).map(str::to_owned);
    if let Ok(mut log) = log.lock() {
        log.push(McpRequest {
            method: request.method.clone(),
            rpc: rpc.clone(),
            headers: request.headers.clone(),
            body: body.clone(),
        });
    }
    if request.method != "POST" {
        // No server-initiated stream.
        return responder.send(405, "text/plain", b"method not allowed");
    }
    let Some(id) = body.get("id").cloned() else {
        // A notification or a response.
        return responder.send(202, "text/plain", b"");
    };
    let result = match rpc.as_deref() {
        Some("initialize") => json!({
            "protocolVersion": body.pointer("/params/protocolVersion").cloned().unwrap_or(json!("2025-03-26")),
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "wb-scripted-mcp", "version": "1.0.0"},
        }),
        Some("tools/list") => json!({"tools": [{
            "name": "lookup",
            "description": "Looks a term up in the scripted knowledge base.",
            "inputSchema": {"type": "object", "properties": {"term": {"type": "string"}}, "required": ["term"]},
        }]}),
        // Only the offered tool, with its required argument: a mangled call must not pass.
        Some("tools/call")
            if body.pointer("/params/name").and_then(Value::as_str) == Some("lookup")
                && body.pointer("/params/arguments/term").is_some_and(Value::is_string) =>
        {
            json!({"content": [{"type": "text", "text": LOOKUP_ANSWER}], "isError": false})
        }
        Some("tools/call") => {
            return responder.json(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "Unknown tool or invalid arguments"}}),
            );
        }
        Some("ping") => json!({}),
        Some("resources/list") => json!({"resources": []}),
        Some("prompts/list") => json!({"prompts": []}),
        _ => {
            return responder.json(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
            );
        }
    };
    let mut answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    if rpc.as_deref() == Some("initialize") {
        answer["result"]["instructions"] = json!("Scripted MCP server for wb-lsp tests.");
    }
    responder.json(200, &answer)
}
