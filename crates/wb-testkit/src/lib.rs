//! Loopback test doubles for wb-lsp's end-to-end tests with the real runner binaries: a scripted model
//! server ([`ModelServer`]) and a scripted MCP server ([`McpServer`]). Neither is used outside tests.

pub mod http;
pub mod mcp;
pub mod model;

pub use mcp::McpServer;
pub use model::{Api, Exchange, ModelServer, Recorded, ToolCall, Turn};
