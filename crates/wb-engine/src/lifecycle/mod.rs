//! The run lifecycle: resolve → select the runtime → bind workspaces and environment → requirements →
//! stage the runner's configuration → prepare the runtime → preflight → authentication readiness → (launch)
//! → cleanup, always. Dry run, smoke and run share every step up to the launch.
//!
//! - `prepare`: every step up to the launch, into a [`Prepared`] package (shared by all modes).
//! - `stage`: the directory the runner's configuration is staged in (temporary, or kept by `--stage-dir`).
//! - `dry_run`, `smoke`, `run`, `build`: one module per mode, each with the report it returns; `session` a
//!   session's turns in place of a run's one launch; `turn` one turn of the runner followed to its end, as both
//!   run it.

mod build;
mod dry_run;
mod limits;
mod prepare;
mod run;
mod runner_output;
mod session;
mod smoke;
mod stage;
mod turn;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

pub use build::{BuildReport, build};
pub use dry_run::{DryRun, dry_run};
pub use prepare::Prepared;
pub use run::{RunResult, run};
pub use smoke::{Smoke, SmokeError, SmokeRunner, SmokeStatus, SmokeTool, smoke};
pub use stage::stage_leftovers;
pub use turn::Ending;

use crate::bindings::{BoundWorkspace, is_credential_name};
use crate::error::{EngineError, Result};
use crate::events::Redactor;
use crate::runtime;

/// A progress callback for long preparation steps (image builds and pulls).
#[derive(Clone)]
pub struct Progress(pub runtime::ProgressSink);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

/// What the person starting a run chose. It travels to a run's supervisor as JSON (through a pipe, never a
/// file: `env` may hold values); what belongs to one process (the inherited environment, the callbacks, the
/// cancel flag) does not travel.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Options {
    pub source: String,
    pub cwd: PathBuf,
    /// The primary workspace (default: the working directory).
    pub primary: Option<PathBuf>,
    pub runtime: Option<String>,
    pub workspaces: Vec<String>,
    pub env: Vec<String>,
    /// The names (never the values) of a run's `--env` assignments, as kept for its adoption
    /// ([`crate::sessions::save_options`]): adopting the run needs each given again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_names: Vec<String>,
    pub env_files: Vec<PathBuf>,
    pub allow_host_docker: bool,
    pub allow_unchecked_gpu: bool,
    pub task: Option<String>,
    /// The environment the engine inherited (`std::env::vars()` in the CLI).
    #[serde(skip)]
    pub inherited: BTreeMap<String, String>,
    /// Receives progress while the runtime prepares (the editor shows it).
    #[serde(skip)]
    pub progress: Option<Progress>,
    /// `$WORKBENCH_HOME`, default `~/.workbench`.
    pub home: Option<PathBuf>,
    /// Dry run only: stage the runner's configuration in this new directory and keep it, so the printed
    /// command can be run by hand and the runner's own loaders can check what it would receive.
    pub stage_dir: Option<PathBuf>,
    /// Set when the person cancels (Ctrl-C, `$/cancelRequest`) while the runtime prepares: a template build,
    /// a sandbox being created or a stalled upload stops at its next step. [`run`] sets it from its own flag.
    #[serde(skip)]
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Why `cancel` was set, when its setter knows (the supervisor: the signal it got): a run's `run.cancelled`
    /// gives it as its message. The first reason set wins (a limit crossed sets its own).
    #[serde(skip)]
    pub cancel_reason: Option<std::sync::Arc<std::sync::Mutex<Option<String>>>>,
    /// Run only: stop the run cleanly (as a cancel: partial outcome, `run.cancelled` naming the limit) once the
    /// costs its runner reports add up to more than this many USD.
    pub max_cost_usd: Option<f64>,
    /// Run only: stop the run the same way once it has gone on this long.
    pub max_duration: Option<std::time::Duration>,
    /// True when this process cancels the run on SIGINT (the CLI sets `cancel` from its Ctrl-C handler): the
    /// run's record says so, and `kill` may then stop the run by sending it.
    pub interrupt_cancels: bool,
    /// Run only: keep the session open after each turn for the next (`send`), until `kill` or this long
    /// without a turn.
    #[serde(default)]
    pub session: Option<SessionOptions>,
    /// Run only, with `session`: the session this one resumes (`resume`): its conversation and its files carry on.
    #[serde(default)]
    pub resume_from: Option<String>,
    /// Run only: take over this remote run, whose supervisor died, instead of starting one (`attach`): its
    /// sandbox and runner are found again and its log carries on.
    #[serde(default)]
    pub adopt: Option<String>,
    /// With `adopt`: told the run's id once its log carries on in this process (no event is emitted for what
    /// the log already holds, so this is how the supervisor knows the run is its own).
    #[serde(skip)]
    pub on_adopted: Option<Progress>,
}

/// How a session waits between turns.
#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize)]
pub struct SessionOptions {
    /// An idle session ends (its final outcome collected, `run.completed`) after this long without a turn.
    pub idle_timeout: std::time::Duration,
}

impl Options {
    fn workbench_home(&self) -> PathBuf {
        self.home
            .clone()
            .unwrap_or_else(|| wb_outcomes::workbench_home(|name| self.inherited.get(name).map(Into::into)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    DryRun,
    Smoke,
    Run,
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

/// Dry run and run need a task; smoke and build do not.
fn require_task(options: &Options) -> Result<()> {
    // A resumed session may start idle, waiting for `send`; an adopted run's task was given to its first supervisor.
    if options.resume_from.is_none()
        && options.adopt.is_none()
        && options.task.as_deref().is_none_or(|t| t.trim().is_empty())
    {
        return Err(EngineError::message("This run mode requires a non-empty task"));
    }
    Ok(())
}
