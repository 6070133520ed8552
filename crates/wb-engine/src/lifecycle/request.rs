//! What a person asks of the engine, apart from what the process carrying it out brings:
//! - [`Request`]: what the person chose (serialisable: what a run's supervisor receives through a pipe). Its
//!   [`Settings`] are everything but the task and the `--env` values, all that may ever be kept on disk.
//! - [`RunMode`]: how a run goes (once, a session, an adoption), each with only what it takes, so no impossible
//!   combination can be asked for; a dry run's stage directory is an argument of `dry_run` alone.
//! - [`RunRequest`]: a request and its run mode, as a supervisor receives it; [`Kept`]: what is kept of it for
//!   `resume` and adoption (`options.json`), without a task or a value by construction.
//! - [`Context`]: what belongs to the process (the inherited environment, progress, cancellation), never sent.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::runtime;

/// What a person chose that may be kept: the package, where it runs, what it binds by name or file, what it
/// authorised, the home.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Settings {
    pub source: String,
    pub cwd: PathBuf,
    /// The primary workspace (default: the working directory).
    pub primary: Option<PathBuf>,
    pub runtime: Option<String>,
    pub workspaces: Vec<String>,
    pub env_files: Vec<PathBuf>,
    pub allow_host_docker: bool,
    pub allow_unchecked_gpu: bool,
    /// `$WORKBENCH_HOME`, default `~/.workbench`.
    pub home: Option<PathBuf>,
    /// The bare agent (a trial's `plain` arm): the package's runner, model, runtime and requirements, but none of
    /// its instructions, skills, MCPs or runner configuration.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

/// What the person starting a dry run, smoke, build or run chose. It travels to a run's supervisor as JSON
/// (through a pipe, never a file: `env` holds values).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Request {
    #[serde(flatten)]
    pub settings: Settings,
    /// `--env NAME=value` assignments.
    pub env: Vec<String>,
    pub task: Option<String>,
}

/// A run's spend and time limits: crossing one stops the run cleanly (as a cancel: partial outcome,
/// `run.cancelled` naming the limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunLimits {
    /// Once the costs its runner reports add up to more than this many USD.
    pub max_cost_usd: Option<f64>,
    /// Once it has gone on this long.
    pub max_duration: Option<Duration>,
    /// How what the runner asks is waited for (`--no-input`, `--input-timeout`).
    #[serde(default)]
    pub input: crate::input::InputPolicy,
}

/// How a session waits between turns.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct SessionOptions {
    /// An idle session ends (its final outcome collected, `run.completed`) after this long without a turn.
    pub idle_timeout: Duration,
}

/// How a run goes.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// One launch of the runner (`run`).
    Once { limits: RunLimits },
    /// A session (`run --session`): open after each turn for the next (`send`), until `kill` or `session`'s idle
    /// time passes; `resume_from` the session this one resumes (`resume`), whose conversation and files carry on.
    Session { limits: RunLimits, session: SessionOptions, resume_from: Option<String> },
    /// Take over remote run `run_id`, whose supervisor died, instead of starting one (`attach`): its sandbox and
    /// runner are found again and its log carries on. `env_names`: the `--env` assignments it was started
    /// with, each of which must be given again (values are never kept). A session is resumed, never adopted.
    Adopt { run_id: String, limits: RunLimits, env_names: Vec<String> },
}

impl Default for RunMode {
    fn default() -> RunMode {
        RunMode::Once { limits: RunLimits::default() }
    }
}

impl RunMode {
    /// A new run: a session when `session` is given, else one launch.
    pub fn start(limits: RunLimits, session: Option<SessionOptions>) -> RunMode {
        match session {
            Some(session) => RunMode::Session { limits, session, resume_from: None },
            None => RunMode::Once { limits },
        }
    }

    pub fn limits(&self) -> RunLimits {
        match self {
            RunMode::Once { limits } | RunMode::Session { limits, .. } | RunMode::Adopt { limits, .. } => *limits,
        }
    }

    /// The session's waiting, for a session.
    pub fn session(&self) -> Option<SessionOptions> {
        match self {
            RunMode::Session { session, .. } => Some(*session),
            _ => None,
        }
    }

    /// The session a resumed session carries on.
    pub fn resume_from(&self) -> Option<&str> {
        match self {
            RunMode::Session { resume_from, .. } => resume_from.as_deref(),
            _ => None,
        }
    }

    /// The run an adoption takes over.
    pub fn adopting(&self) -> Option<&str> {
        match self {
            RunMode::Adopt { run_id, .. } => Some(run_id),
            _ => None,
        }
    }
}

/// What a run's supervisor receives: the request and how the run goes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunRequest {
    pub request: Request,
    pub mode: RunMode,
    /// The new run's id, when whoever starts the supervisor chose it (a trial starts many supervisors without
    /// waiting for each to prepare, and follows each by this id); else the run makes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// What is kept of a session's or a remote run's request (`options.json`) for `resume` and adoption: its
/// settings, the names (never the values) of its `--env` assignments, and its limits. Neither the task nor a
/// value is part of it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Kept {
    #[serde(flatten)]
    pub settings: Settings,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_names: Vec<String>,
    #[serde(flatten)]
    pub limits: RunLimits,
}

impl Kept {
    /// What is kept of `request` run as `mode`.
    pub fn of(request: &Request, mode: &RunMode) -> Kept {
        Kept {
            settings: request.settings.clone(),
            env_names: request
                .env
                .iter()
                .filter_map(|entry| entry.split_once('='))
                .map(|(n, _)| n.to_owned())
                .collect(),
            limits: mode.limits(),
        }
    }
}

/// A progress callback for long preparation steps (image builds and pulls).
#[derive(Clone)]
pub struct Progress(pub runtime::ProgressSink);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

/// What belongs to the process carrying a request out, never sent nor kept.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The environment the engine inherited (`std::env::vars()` in the CLI).
    pub inherited: BTreeMap<String, String>,
    /// Receives progress while the runtime prepares (the editor shows it).
    pub progress: Option<Progress>,
    /// Set when the person cancels (Ctrl-C, `$/cancelRequest`) while the runtime prepares: a template build,
    /// a sandbox being created or a stalled upload stops at its next step. [`super::run`] sets it from its own
    /// flag.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Why `cancel` was set, when its setter knows (the supervisor: the signal it got): a run's `run.cancelled`
    /// gives it as its message. The first reason set wins (a limit crossed sets its own).
    pub cancel_reason: Option<Arc<Mutex<Option<String>>>>,
    /// True when this process cancels the run on SIGINT (the CLI sets `cancel` from its Ctrl-C handler): the
    /// run's record says so, and `kill` may then stop the run by sending it.
    pub interrupt_cancels: bool,
    /// For an adoption: told the run's id once its log carries on in this process (no event is emitted for what
    /// the log already holds, so this is how the supervisor knows the run is its own).
    pub on_adopted: Option<Progress>,
    /// The id a new run takes ([`RunRequest::run_id`], checked by [`crate::events::is_run_id`]).
    pub run_id: Option<String>,
}

/// A request and the context of the process that carries it out: what dry run, smoke, build and run take.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub request: Request,
    pub context: Context,
}

impl Options {
    pub(super) fn workbench_home(&self) -> PathBuf {
        self.request
            .settings
            .home
            .clone()
            .unwrap_or_else(|| wb_outcomes::workbench_home(|name| self.context.inherited.get(name).map(Into::into)))
    }
}
