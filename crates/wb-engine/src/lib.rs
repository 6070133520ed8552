//! The Workbench execution core, shared by the CLI and the language server.
//!
//! `lifecycle` owns the run lifecycle of the standard: resolve and validate (`source`, reusing the checks),
//! select the runtime (`runtime`), bind workspaces and the environment (`bindings`, with `--env-file` read by
//! `dotenv`), check requirements (`requirements`), stage the runner's configuration (`adapters`), preflight
//! inside the runtime, check authentication readiness (`routing`), launch, translate the runner's stream into
//! canonical events (`events`), log them with the run's record (`runs`), take a session's next turns from its
//! inbox (`sessions`), and clean up on every path. Environment values never leave [`bindings::Environment`] except
//! into the runner's process; everything printed carries names only, and event text is redacted (`redact`, also across streamed text deltas).

pub mod adapters;
pub mod bindings;
pub mod doctor;
pub mod dotenv;
pub mod duration;
mod error;
mod event_kind;
pub mod events;
pub mod input;
pub mod leftovers;
pub mod lifecycle;
mod outcome;
pub mod plan;
mod redact;
pub mod requirements;
pub mod routing;
pub mod runs;
pub mod runtime;
pub mod sessions;
pub mod source;
pub mod trials;

pub use error::{EngineError, Limit, Result, Space};
pub use lifecycle::{
    BuildReport, Context, DryRun, Ending, Kept, Options, Request, RunLimits, RunMode, RunRequest, RunResult,
    SessionOptions, Settings, Smoke, SmokeError, SmokeRunner, SmokeStatus, SmokeTool, WorkspaceReport, build, dry_run,
    run, smoke,
};
