//! The language server: a closed main loop over client messages and worker results.
//!
//! Document notifications are applied on the loop thread in arrival order; every request runs on a worker
//! against an immutable [`Snapshot`] taken when it arrived. Diagnostics are recomputed once per burst of
//! messages (everything already queued is applied first), tagged with a generation, and a result older than
//! the latest scheduled one is never published. A panic in a handler answers its request with an error.
//!
//! The rooms: `capabilities` (the `initialize` handshake), `main_loop` (the loop, request routing, workers),
//! `global_state` (the state, snapshots, sending, diagnostics scheduling and what each package depends on),
//! `progress` (the progress of a large batch of diagnostics), `settings` (the settings, and the model catalog
//! they name, read off the loop), `handlers` (one module per request, `handlers/notifications` one per
//! notification, `handlers/commands` the `workbench.*` commands), `ext` (the protocol extensions' types),
//! `state` (documents, settings, snapshots), `transport` (stdio framing).

mod capabilities;
mod client_features;
pub mod convert;
mod diagnostics_schedule;
pub mod ext;
mod global_state;
mod handlers;
mod main_loop;
mod memory;
mod progress;
mod publication;
mod settings;
mod snapshot;
pub mod transport;

use std::time::Duration;

use anyhow::Context;
use lsp_server::Connection;

pub use ext::{CHECK_WORKSPACE as COMMAND_CHECK_WORKSPACE, MIGRATE as COMMAND_MIGRATE};
pub use snapshot::{Config, Document, Overlay, Snapshot};

use crate::exit::Exit;

/// How long the writer may take to flush the last messages once the session has ended.
const FLUSH_GRACE: Duration = Duration::from_secs(5);

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// `exit` after `shutdown`, or the client went away.
    Clean,
    /// `exit` without `shutdown` first.
    ExitWithoutShutdown,
}

impl SessionEnd {
    /// The process's exit status: 1 for `exit` without `shutdown`, as the LSP specification asks, else 0.
    pub fn exit_code(self) -> Exit {
        match self {
            SessionEnd::Clean => Exit::Success,
            SessionEnd::ExitWithoutShutdown => Exit::Failure,
        }
    }
}

/// Runs the server on stdin/stdout until the client sends `exit`.
pub fn run_stdio() -> anyhow::Result<SessionEnd> {
    let (sender, receiver, threads) = transport::stdio().context("cannot start the stdio transport")?;
    let result = run(Connection { sender, receiver });
    // The reader may be blocked on stdin for good: it is left behind, the process ends without it.
    threads.finish(FLUSH_GRACE);
    result
}

/// Runs the server on a connection (stdio, or in memory for tests).
pub fn run(connection: Connection) -> anyhow::Result<SessionEnd> {
    match capabilities::initialize(&connection)? {
        Ok(negotiated) => main_loop::run(connection, negotiated),
        Err(end) => Ok(end),
    }
}
