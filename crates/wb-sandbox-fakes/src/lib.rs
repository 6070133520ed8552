//! Test doubles of the two sandbox services the remote runtimes talk to, faithful to the wire facts in
//! `docs/runtimes.md` and checked against the official SDKs (`tests/official_sdks.rs`):
//!
//! - `executor`: a sandbox's file system and processes: a private temporary root entered with bubblewrap,
//!   where `/usr` and `/etc` are the host's (read-only) and everything else (`/workspace`, `/outbox`, `/tmp`,
//!   …) is the sandbox's own. Staged commands, preflight, the runner and collection really run there.
//! - `e2b`: the E2B control plane (REST) and envd (Connect with the JSON codec, `/files`).
//! - `daytona`: the Daytona API and toolbox.
//!
//! Every server listens on `127.0.0.1:0` and records each request (method, path, headers, body) so tests
//! can assert what a client sent. Faults are injected through each fake's `Faults`.

pub mod daytona;
pub mod e2b;
pub mod executor;
pub mod record;

pub use executor::{SandboxRoot, Spawned};
pub use record::{Recorded, Recorder};
