//! Runtimes: where a run happens. A runtime prepares its environment, checks requirements and preflights
//! inside it, launches the runner, cancels it, and cleans up (always, idempotently).
//!
//! One module per runtime: `local` (the host), `docker/` (a container per run), and the remote runtimes:
//! `remote/` for what they share (the `RemoteRuntime`: staging, preflight, launch, collection, destroy; the
//! provider interface), `e2b/` and `daytona/` for each service's transport.

mod channel;
pub mod daytona;
pub mod docker;
pub mod e2b;
mod local;
pub mod remote;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

pub use docker::{Docker, ImageInfo};
pub use local::{Local, find_executable};

use crate::adapters::Translation;
use crate::error::{EngineError, Result};
use crate::requirements::RequirementReport;
use crate::source::Package;

/// What preflight found: the runner's and every tool's location inside the runtime.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Preflight {
    pub runner: Option<PathBuf>,
    pub tools: Vec<(String, PathBuf)>,
    /// The runner's version, read from the npm package its executable belongs to (on the host, or inside the
    /// image); `None` when it cannot be told.
    pub runner_version: Option<String>,
}

/// A launched runner: its output streams and a handle to wait for it or stop it.
pub struct Launched {
    /// The runner's stdin, when it runs interactively ([`Translation::stdin`]).
    pub stdin: Option<Box<dyn std::io::Write + Send>>,
    pub stdout: Option<Box<dyn Read + Send>>,
    pub stderr: Option<Box<dyn Read + Send>>,
    /// Where this host reaches the runner's server ([`Translation::server`]), when it is one.
    pub server: Option<std::net::SocketAddr>,
    pub(crate) handle: Handle,
}

/// What a runtime launched.
pub(crate) enum Handle {
    /// A process on the host (local).
    Child(std::process::Child),
    /// A container: its id and where its exit code arrives.
    Container { id: String, exit: std::sync::mpsc::Receiver<Exit> },
    /// A process in a remote sandbox: where its exit code arrives and how to stop it.
    Remote { exit: std::sync::mpsc::Receiver<Exit>, killer: Box<dyn remote::provider::Killer> },
}

/// How a launched runner ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The exit code; `None` when a signal ended it (or it could not be known).
    pub code: Option<i64>,
    /// What ended the runner when there is no exit code and it was not a signal the runtime saw: the process
    /// stream was cut, the stream stayed silent past its keepalive, the sandbox went away. Said to the user
    /// instead of "a signal".
    pub cause: Option<String>,
}

impl Exit {
    /// An end with an exit code (or a signal, `None`).
    pub fn code(code: Option<i64>) -> Exit {
        Exit { code, cause: None }
    }

    /// An end whose code cannot be known, and why.
    pub fn unknown(cause: impl Into<String>) -> Exit {
        Exit { code: None, cause: Some(cause.into()) }
    }

    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl Launched {
    pub(crate) fn child(mut child: std::process::Child) -> Launched {
        let stdin = child.stdin.take().map(|s| Box::new(s) as Box<dyn std::io::Write + Send>);
        let stdout = child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr = child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>);
        Launched { stdin, stdout, stderr, server: None, handle: Handle::Child(child) }
    }

    /// How the runner ended, if it has; without waiting. An end that cannot be known has no code.
    pub fn try_wait(&mut self) -> Option<Exit> {
        match &mut self.handle {
            Handle::Child(child) => match child.try_wait() {
                Ok(Some(status)) => Some(Exit::code(status.code().map(i64::from))),
                Ok(None) => None,
                Err(error) => Some(Exit::unknown(format!("waiting for the runner failed: {error}"))),
            },
            Handle::Container { exit, .. } | Handle::Remote { exit, .. } => match exit.try_recv() {
                Ok(exit) => Some(exit),
                Err(std::sync::mpsc::TryRecvError::Empty) => None,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    Some(Exit::unknown("the runtime stopped reporting on the runner"))
                }
            },
        }
    }
}

/// A host directory the runner needs, and where it sees it inside the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub host: PathBuf,
    pub target: PathBuf,
    pub read_only: bool,
}

/// Receives one-line progress messages while a runtime prepares (an image build's steps, a pull).
pub type ProgressSink = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// What every runtime is built with: the configuration a run hands it before any phase.
#[derive(Clone, Default)]
pub struct Setup {
    /// The environment the engine inherited (`Context::inherited`). A runtime on the host bases the runner's
    /// environment on it and looks the runner up on its `PATH`; a remote runtime reads its service's
    /// configuration from it. Empty: the host runtime inherits this process's environment.
    pub inherited: BTreeMap<String, String>,
    /// Where preparation reports what it is doing (image pulls and builds, sandbox creation).
    pub progress: Option<ProgressSink>,
    /// The Workbench home (a remote runtime keeps its working copies there).
    pub home: PathBuf,
    /// The flag that cancels what the runtime is doing for the run: a remote runtime's template build, create,
    /// staging and commands stop at their next step. Collection ([`Runtime::retrieve`]) and cleanup are never
    /// cancelled.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// A dry run: `prepare` and `preflight` create nothing billable, and [`Preparation::plan`] says what a run
    /// would call.
    pub plan_only: bool,
    /// The run can be adopted should its supervisor die (a one-shot run): a remote runtime keeps what it needs
    /// for that (the runner's output on E2B).
    pub adoptable: bool,
}

/// Where a runtime runs the runner, which decides how the run's directories reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On the host, on the host's paths.
    Host,
    /// In a container on this machine: the run's directories are mounted at [`paths`].
    Container,
    /// In a remote sandbox: the run's directories are copied to [`paths`], the workspaces' results come back
    /// into local working copies, and the outcome is `pending`.
    Sandbox,
}

impl Placement {
    /// True when the runner sees the run's directories at other paths than the host's.
    pub fn maps_paths(self) -> bool {
        self != Placement::Host
    }
}

/// What [`Runtime::prepare`] made ready.
#[derive(Clone, Debug, Default)]
pub struct Preparation {
    /// The image resolved or built, when the runtime uses one.
    pub image: Option<ImageInfo>,
    /// In a dry run of a remote runtime: the calls a run would make, one step per line.
    pub plan: Vec<String>,
}

/// What [`Runtime::provision`] created.
#[derive(Clone, Debug, Default)]
pub struct Provision {
    /// The requirement report once the runtime could check more (what a sandbox reports); `None`: the report
    /// of [`Runtime::check_requirements`] stands.
    pub requirements: Option<RequirementReport>,
    /// The local working copy of each writable workspace staged into a sandbox, `(host, copy)`: the outcome's
    /// baseline and, after [`Runtime::retrieve`], the run's result. Empty: the runner edits the host in place.
    pub working_copies: Vec<(PathBuf, PathBuf)>,
}

/// What preflight looks up inside the runtime.
#[derive(Clone, Copy, Debug)]
pub struct PreflightRequest<'a> {
    /// The runner's name (`opencode`), for texts.
    pub runner: &'a str,
    /// Its executable (`opencode`, `claude`, `pi`).
    pub executable: &'a str,
    /// Every declared tool.
    pub tools: &'a [String],
    /// The inherited `PATH` (the host runtime searches it).
    pub path_variable: Option<&'a str>,
}

/// A runtime is built from a [`Setup`] ([`runtime_for`]), then driven through its phases in order, each
/// returning what the next needs: [`Runtime::check_requirements`] before anything is made,
/// [`Runtime::prepare`] (image or template), [`Runtime::provision`] (a sandbox, staged; never in a dry run),
/// [`Runtime::preflight`], [`Runtime::launch`], [`Runtime::retrieve`] after the runner, and
/// [`Runtime::cleanup`] on every path.
pub trait Runtime: Send {
    fn name(&self) -> &'static str;
    fn placement(&self) -> Placement;
    /// Checks the manifest's requirements against this runtime, before anything is prepared.
    fn check_requirements(&self, package: &Package, allow_unchecked_gpu: bool) -> Result<RequirementReport>;
    /// Prepares the environment (pull or build an image, find or build a template). `mounts`: where the run's
    /// directories appear to the runner (empty for [`Placement::Host`], and for `build`, which runs nothing).
    fn prepare(&mut self, package: &Package, mounts: Vec<Mount>) -> Result<Preparation>;
    /// Creates what this run executes in (a sandbox) and stages everything into it; called after `prepare`
    /// for smoke and run, never for a dry run. Local and Docker: nothing to do.
    fn provision(&mut self, _run_id: &str) -> Result<Provision> {
        Ok(Provision::default())
    }
    /// Looks up the runner executable and every declared tool inside the runtime. What is missing is
    /// [`EngineError::Missing`]; every other error means preflight could not look.
    fn preflight(&self, request: &PreflightRequest<'_>) -> Result<Preflight>;
    /// Starts the runner with its translation (stdout piped for events).
    fn launch(&mut self, translation: &Translation) -> Result<Launched>;
    /// Stops a launched runner and everything it started.
    fn cancel(&mut self, launched: &mut Launched);
    /// After the runner: brings back what it changed (into the working copies) and wrote (into `outbox`), and
    /// verifies what the runtime guards. Runs even after a cancelled runner: it is never cancelled.
    fn retrieve(&mut self, _outbox: &std::path::Path) -> Result<()> {
        Ok(())
    }
    /// A session's turn has ended: brings the runtime's outbox into `outbox`, replacing what it held, for the
    /// turn's snapshot. A runtime whose outbox is the host's does nothing.
    fn retrieve_outbox(&mut self, _outbox: &std::path::Path) -> Result<()> {
        Ok(())
    }
    /// A session's turn has ended: brings `relative` of the staged directory (as the runner sees it) into
    /// `into`, replacing it, so the runner's conversation is kept. A runtime that stages on the host does nothing.
    fn retrieve_stage(&mut self, _relative: &str, _into: &std::path::Path) -> Result<()> {
        Ok(())
    }
    /// Takes over run `run_id` of `package` whose supervisor died, instead of preparing, provisioning and
    /// launching: what provision would have made, and the runner as launched, its output from the start.
    fn adopt(&mut self, package: &Package, run_id: &str) -> Result<(Provision, Launched)> {
        let _ = (package, run_id);
        Err(EngineError::unsupported(format!("A run on {} cannot be adopted", self.name())))
    }
    /// The final collection failed: a runtime whose service keeps recoveries keeps the sandbox (paused) behind a
    /// private checkpoint instead of destroying it at cleanup, and says so. `reason`: the collection's error.
    fn keep_for_recovery(&mut self, _reason: &str) -> Option<Kept> {
        None
    }
    /// The sandbox this runtime created, for reports (smoke says it created and destroyed one).
    fn sandbox_report(&self) -> Option<remote::SandboxInfo> {
        None
    }
    /// Releases whatever `prepare` and `provision` created. Safe to call more than once.
    fn cleanup(&mut self) -> Result<()>;
}

/// What [`Runtime::keep_for_recovery`] did with the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub sandbox_id: String,
    pub paused: bool,
    /// True when the checkpoint was written (the sandbox is left for a recovery); false: it is destroyed.
    pub kept: bool,
    /// One sentence for the user: what was kept and how to recover or discard it.
    pub note: String,
}

/// The sandbox services: each one module owning its rules ([`remote::provider::Service`]).
pub fn services() -> [&'static dyn remote::provider::Service; 2] {
    [&e2b::SERVICE, &daytona::SERVICE]
}

/// Every runtime this build runs, by its provider name: the host, Docker and each sandbox service. What an
/// adapter's capabilities say holds on each of them (the tidy test holds the capability texts to this list).
pub fn runtimes() -> Vec<&'static str> {
    let mut names = vec!["local", "docker"];
    names.extend(services().into_iter().map(|service| service.name()));
    names
}

/// The runtime for a declared provider name, built from `setup`. Providers this build cannot run are refused
/// explicitly: a run never falls back to the host.
pub fn runtime_for(provider: &str, setup: Setup) -> Result<Box<dyn Runtime>> {
    match provider {
        "local" => Ok(Box::new(Local::new(setup))),
        "docker" => Ok(Box::new(Docker::new(setup)?)),
        other => match services().into_iter().find(|service| service.name() == other) {
            Some(service) => Ok(Box::new(remote::RemoteRuntime::new(service, setup)?)),
            None => Err(EngineError::message(format!("Unsupported runtime: {other}"))),
        },
    }
}

/// Where a container runtime shows the run's directories to the runner.
pub mod paths {
    /// The primary workspace (read-write).
    pub const WORKSPACE: &str = "/workspace";
    /// Named workspaces: `/workspaces/<name>`.
    pub const WORKSPACES: &str = "/workspaces";
    /// The outbox (`WORKBENCH_OUTPUT_DIR`).
    pub const OUTBOX: &str = "/outbox";
    /// The package, read-only.
    pub const PACKAGE: &str = "/workbench/package";
    /// The staged runner configuration.
    pub const STAGE: &str = "/workbench/stage";
    /// The runner's own state (`HOME`): a writable temporary file system.
    pub const STATE: &str = "/workbench/state";
}

/// The container view of a run: workspaces at container paths and the mounts that put them there.
pub struct ContainerLayout {
    pub workspaces: Vec<crate::bindings::BoundWorkspace>,
    pub outbox: PathBuf,
    pub stage_dir: PathBuf,
    pub package_dir: PathBuf,
    pub mounts: Vec<Mount>,
}

/// The container layout of a run: the primary workspace at `/workspace` (read-write), named workspaces at
/// `/workspaces/<name>` with their declared access, the package read-only, the staged configuration and the
/// outbox writable.
pub fn container_layout(
    workspaces: &[crate::bindings::BoundWorkspace],
    package_dir: &std::path::Path,
    stage_dir: &std::path::Path,
    outbox: &std::path::Path,
) -> ContainerLayout {
    let mut mounts = Vec::new();
    let mut mapped = Vec::new();
    for workspace in workspaces {
        let target = match &workspace.name {
            Some(name) => PathBuf::from(paths::WORKSPACES).join(name),
            None => PathBuf::from(paths::WORKSPACE),
        };
        let read_only = workspace.name.is_some() && workspace.access == wb_manifest::Access::ReadOnly;
        mounts.push(Mount { host: workspace.path.clone(), target: target.clone(), read_only });
        mapped.push(crate::bindings::BoundWorkspace {
            name: workspace.name.clone(),
            path: target,
            access: workspace.access,
        });
    }
    mounts.push(Mount { host: package_dir.to_path_buf(), target: PathBuf::from(paths::PACKAGE), read_only: true });
    mounts.push(Mount { host: stage_dir.to_path_buf(), target: PathBuf::from(paths::STAGE), read_only: false });
    mounts.push(Mount { host: outbox.to_path_buf(), target: PathBuf::from(paths::OUTBOX), read_only: false });
    ContainerLayout {
        workspaces: mapped,
        outbox: PathBuf::from(paths::OUTBOX),
        stage_dir: PathBuf::from(paths::STAGE),
        package_dir: PathBuf::from(paths::PACKAGE),
        mounts,
    }
}
