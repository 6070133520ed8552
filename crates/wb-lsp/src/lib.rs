//! The `wb-lsp` binary's library: the command-line interface, the output formats of `check`, and the
//! language server. Only this crate knows LSP.

mod acp;
pub mod cli;
pub mod commands;
pub mod exit;
/// stdout is the MCP protocol channel too.
#[deny(clippy::print_stdout)]
pub mod mcp;
pub mod output;
mod render;
/// stdout is the protocol channel: nothing in the server may print to it.
#[deny(clippy::print_stdout)]
pub mod server;
mod stdio;
pub mod supervisor;
mod writes;
