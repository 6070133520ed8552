//! The run lifecycle: resolve → select the runtime → bind workspaces and environment → requirements →
//! stage the runner's configuration → prepare the runtime → preflight → authentication readiness → (launch)
//! → cleanup, always. Dry run, smoke and run share every step up to the launch.
//!
//! - `request`: what a person asks ([`Request`], a run's [`RunMode`]) apart from what the process brings
//!   ([`Context`]).
//! - `prepare`: every step up to the launch, into a [`Prepared`] package (shared by all modes).
//! - `stage`: the directory the runner's configuration is staged in (temporary, or kept by `--stage-dir`).
//! - `dry_run`, `smoke`, `run`, `build`: one module per mode, each with the report it returns; `session` a
//!   session's turns in place of a run's one launch; `turn` one turn of the runner followed to its end, as both
//!   run it.

mod asking;
mod build;
mod dry_run;
mod limits;
mod prepare;
mod request;
mod run;
mod runner_output;
mod session;
mod smoke;
mod stage;
mod turn;

use serde::Serialize;

pub use build::{BuildReport, build};
pub use dry_run::{DryRun, dry_run};
pub use prepare::Prepared;
pub use request::{
    Context, Kept, Options, Progress, Request, RunLimits, RunMode, RunRequest, SessionOptions, Settings,
};
pub use run::{RunResult, run};
pub use smoke::{Smoke, SmokeError, SmokeRunner, SmokeStatus, SmokeTool, smoke};
pub use stage::stage_leftovers;
pub use turn::Ending;

use crate::bindings::{BoundWorkspace, is_credential_name};
use crate::error::{EngineError, Result};
use crate::events::Redactor;

/// What a package is prepared for: a dry run (staged in a kept directory when one is given), a smoke check, or
/// a run as its mode says.
#[derive(Clone, Copy, Debug)]
enum Purpose<'a> {
    DryRun { stage_dir: Option<&'a std::path::Path> },
    Smoke,
    Run(&'a RunMode),
}

impl<'a> Purpose<'a> {
    fn is_dry_run(self) -> bool {
        matches!(self, Purpose::DryRun { .. })
    }

    /// The run's mode, for a run.
    fn run_mode(self) -> Option<&'a RunMode> {
        match self {
            Purpose::Run(mode) => Some(mode),
            _ => None,
        }
    }
}

/// A bound workspace as the reports show it (dry run and smoke).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkspaceReport {
    /// The declared name, or `primary`.
    pub name: String,
    pub path: String,
    /// `read-write` or `read-only`.
    pub access: String,
}

impl WorkspaceReport {
    fn list(workspaces: &[BoundWorkspace]) -> Vec<WorkspaceReport> {
        workspaces
            .iter()
            .map(|w| WorkspaceReport {
                name: w.name.clone().unwrap_or_else(|| "primary".into()),
                path: w.path.display().to_string(),
                access: w.access.as_str().to_owned(),
            })
            .collect()
    }
}

/// Redacts every value the run bound and every credential the runner receives (an adapter may pass a bound
/// key under a name of its own, OpenRouter's as `ANTHROPIC_AUTH_TOKEN`).
fn redactor(prepared: &Prepared) -> Redactor {
    let passed = prepared.translation.env.iter().filter(|(name, _)| is_credential_name(name));
    Redactor::new(prepared.env.values().chain(passed.map(|(_, value)| value.as_str())))
}

/// Dry run and run need a task; smoke and build do not. A resumed session may start idle, waiting for `send`; an
/// adopted run's task was given to its first supervisor.
fn require_task(options: &Options, mode: Option<&RunMode>) -> Result<()> {
    let optional = mode.is_some_and(|mode| mode.resume_from().is_some() || mode.adopting().is_some());
    if !optional && options.request.task.as_deref().is_none_or(|t| t.trim().is_empty()) {
        return Err(EngineError::message("This run mode requires a non-empty task"));
    }
    Ok(())
}
