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
}

/// A launched runner: its output streams and a handle to wait for it or stop it.
pub struct Launched {
    pub stdout: Option<Box<dyn Read + Send>>,
    pub stderr: Option<Box<dyn Read + Send>>,
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
        let stdout = child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr = child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>);
        Launched { stdout, stderr, handle: Handle::Child(child) }
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

pub trait Runtime: Send {
    fn name(&self) -> &'static str;
    /// The environment the engine inherited (`Options::inherited`). A runtime on the host bases the runner's
    /// environment on it and looks the runner up on its `PATH`, as preflight did; others ignore it.
    fn inherit_environment(&mut self, _inherited: &BTreeMap<String, String>) {}

    /// Where preparation reports what it is doing (image pulls and builds). Runtimes with nothing long to
    /// prepare ignore it.
    fn set_progress(&mut self, _sink: ProgressSink) {}
    /// True when the runner sees the run's directories at other paths than the host's (a container): the
    /// lifecycle then gives the adapters the container paths and the runtime the [`Mount`]s.
    fn maps_paths(&self) -> bool {
        false
    }
    /// The host directories to make visible to the runner (only called when [`Runtime::maps_paths`]).
    fn set_mounts(&mut self, _mounts: Vec<Mount>) {}
    /// The image `prepare` resolved or built, when the runtime uses one.
    fn image(&self) -> Option<ImageInfo> {
        None
    }
    /// The Workbench home (a remote runtime never stages it).
    fn set_home(&mut self, _home: &std::path::Path) {}
    /// The flag that cancels what the runtime is doing for the run (a remote runtime's template build,
    /// create, staging and commands stop at their next step); `None` stops watching it, so collection still
    /// runs after a cancelled runner. Cleanup is never cancelled. Runtimes with nothing long to stop ignore it.
    fn watch_cancel(&mut self, _flag: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) {}
    /// A dry run: `prepare` and `preflight` create nothing billable; [`Runtime::plan`] says what a run would.
    fn plan_only(&mut self) {}
    /// The calls a run would make (remote runtimes, in a dry run), one line each.
    fn plan(&self) -> Vec<String> {
        Vec::new()
    }
    /// True for runtimes that run on copies of the workspaces in a sandbox (the outcome is `pending`).
    fn is_remote(&self) -> bool {
        false
    }
    /// Creates what this run executes in (a sandbox) and stages everything into it; called after `prepare`
    /// for smoke and run, never for a dry run. Local and Docker: nothing to do.
    fn provision(&mut self, _run_id: &str) -> Result<()> {
        Ok(())
    }
    /// The requirement report once the runtime could check more than before `prepare` (what a sandbox
    /// reports); `None`: the report from [`Runtime::check_requirements`] stands.
    fn requirement_report(&self) -> Option<RequirementReport> {
        None
    }
    /// The local working copy of each writable workspace a remote runtime staged, `(host, copy)`: the outcome's
    /// baseline and, after [`Runtime::retrieve`], the run's result. Empty: the runner edits the host in place.
    fn working_copies(&self) -> Vec<(PathBuf, PathBuf)> {
        Vec::new()
    }
    /// Brings back what the runner changed (into the working copies) and wrote (into `outbox`), before
    /// `cleanup` destroys the sandbox.
    fn retrieve(&mut self, _outbox: &std::path::Path) -> Result<()> {
        Ok(())
    }
    /// The sandbox this runtime created, for reports (smoke says it created and destroyed one).
    fn sandbox_report(&self) -> Option<remote::SandboxInfo> {
        None
    }
    /// Checks the manifest's requirements against this runtime, before anything is prepared.
    fn check_requirements(&self, package: &Package, allow_unchecked_gpu: bool) -> Result<RequirementReport>;
    /// Prepares the environment (pull or build an image, create a sandbox). Local: nothing to do.
    fn prepare(&mut self, package: &Package) -> Result<()>;
    /// Looks up the runner executable and every declared tool inside the runtime.
    fn preflight(
        &self,
        runner: &str,
        executable: &str,
        tools: &[String],
        path_variable: Option<&str>,
    ) -> Result<Preflight>;
    /// Starts the runner with its translation (stdout piped for events).
    fn launch(&mut self, translation: &Translation) -> Result<Launched>;
    /// Stops a launched runner and everything it started.
    fn cancel(&mut self, launched: &mut Launched);
    /// Releases whatever `prepare` created. Safe to call more than once.
    fn cleanup(&mut self) -> Result<()>;
}

/// The runtime for a declared provider name. Providers this build cannot run are refused explicitly: a run
/// never falls back to the host.
pub fn runtime_for(provider: &str) -> Result<Box<dyn Runtime>> {
    match provider {
        "local" => Ok(Box::new(Local::default())),
        "docker" => Ok(Box::new(Docker::new()?)),
        "e2b" => Ok(Box::new(remote::RemoteRuntime::new(
            "e2b",
            "E2B",
            Box::new(|env, handle| {
                Ok(Box::new(e2b::E2b::new(env, handle)?) as Box<dyn remote::provider::SandboxProvider>)
            }),
        )?)),
        "daytona" => Ok(Box::new(remote::RemoteRuntime::new(
            "daytona",
            "Daytona",
            Box::new(|env, handle| {
                Ok(Box::new(daytona::Daytona::new(env, handle)?) as Box<dyn remote::provider::SandboxProvider>)
            }),
        )?)),
        other => Err(EngineError::message(format!("Unsupported runtime: {other}"))),
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
