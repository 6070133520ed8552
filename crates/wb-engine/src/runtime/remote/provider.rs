//! What a sandbox service gives the remote runtime: a provider prepares templates and creates sandboxes; a
//! sandbox runs commands (to completion or streamed), moves files and is destroyed. Only these two traits
//! differ between E2B and Daytona; staging, preflight, launch and collection are shared
//! ([`super::RemoteRuntime`]).
//!
//! The interface is blocking: each provider drives its async HTTP client on the tokio runtime handle it is
//! given (`Handle::block_on` from the engine's threads; streamed output is forwarded by tasks on that
//! runtime into channels the engine reads with blocking calls).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use crate::error::Result;
use crate::requirements::{RequirementReport, Unmet};
use crate::source::Package;

/// The largest file either direction of a transfer may carry (the reference's 512 MiB safety limit).
pub const TRANSFER_LIMIT: u64 = 512 * 1024 * 1024;

/// The environment a provider reads its configuration from (the engine's inherited environment: API keys and
/// base URLs). Keys read from it are never forwarded into a sandbox.
pub type ProviderEnv = BTreeMap<String, String>;

/// What the sandbox is created from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateSource {
    /// A published image reference (`ghcr.io/acme/agent:1`).
    Image(String),
    /// A Dockerfile and its build context (absolute host paths, already checked to stay within the package's
    /// repository). E2B builds it as its SDK does; Daytona refuses it.
    Dockerfile { dockerfile: PathBuf, context: PathBuf },
}

/// A template request: the package it is for (names and caches the template) and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateRequest {
    pub workbench: String,
    pub version: String,
    pub source: TemplateSource,
    /// Extra shell run as root on top of the source when building (e.g. installing git), or `None`.
    pub setup: Option<String>,
}

/// A prepared template: what `create` uses and how texts name it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PreparedTemplate {
    /// What [`SandboxSpec::template`] takes: an E2B template id or name, a Daytona image reference.
    pub reference: String,
    /// How error texts name the image (`Git is unavailable in E2B image <this>`): the declared reference or
    /// the template name.
    pub image: String,
    /// True when an existing template was reused (nothing was built).
    pub cached: bool,
}

/// Requested resources (Daytona applies them at create; E2B templates carry their own).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceRequest {
    pub cpu: Option<u64>,
    pub memory_gb: Option<f64>,
    pub disk_gb: Option<f64>,
}

/// What a sandbox reports it has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Resources {
    pub cpu: Option<u64>,
    pub memory_mib: Option<u64>,
    pub disk_mib: Option<u64>,
}

/// A sandbox to create.
#[derive(Clone, Debug, PartialEq)]
pub struct SandboxSpec {
    /// [`PreparedTemplate::reference`].
    pub template: String,
    /// Labels (Daytona) or metadata (E2B) naming this run: [`super::labels`].
    pub labels: BTreeMap<String, String>,
    /// How long the service keeps the sandbox if the engine never destroys it.
    pub lease: Duration,
    pub resources: ResourceRequest,
}

/// Who a command runs as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum User {
    /// The sandbox's default user.
    #[default]
    Default,
    Root,
}

/// How a command runs.
#[derive(Clone, Debug, Default)]
pub struct CommandOptions {
    pub cwd: Option<String>,
    /// Bound values for the command. A provider passes them through its API's own field or a 0600 file removed
    /// after use, never in command text the service records or echoes.
    pub env: BTreeMap<String, String>,
    pub user: User,
    /// `None`: no limit (the runner); otherwise the provider gives up (and says so) after it.
    pub timeout: Option<Duration>,
    /// A started command (the runner) whose output another process may have to follow again from its first
    /// byte ([`Sandbox::reattach`]): a service that keeps no output of a process nobody follows (E2B) keeps it.
    pub reattachable: bool,
}

/// A command run to completion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandOutput {
    pub exit_code: i64,
    pub stdout: Vec<u8>,
    /// Empty where the service merges the streams (Daytona's `process/execute`).
    pub stderr: Vec<u8>,
}

impl CommandOutput {
    pub fn success(&self) -> bool {
        self.exit_code == 0
    }

    /// Stdout as text (lossy), trimmed.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_owned()
    }
}

/// Stops a started process (SIGKILL on E2B; deleting the session on Daytona). Idempotent.
pub trait Killer: Send {
    fn kill(&mut self);
}

/// A started command: its output as it arrives, and its end.
pub struct RemoteProcess {
    pub stdout: Box<dyn Read + Send>,
    pub stderr: Box<dyn Read + Send>,
    /// Receives how the command ended: its exit code, or why the end cannot be known (the stream broke, the
    /// sandbox died). A dropped sender also means the end cannot be known.
    pub exit: mpsc::Receiver<crate::runtime::Exit>,
    pub killer: Box<dyn Killer>,
    /// The service's handle on the process, for [`Sandbox::reattach`] by another process (`Null`: none).
    pub handle: serde_json::Value,
}

/// One sandbox of a service.
pub trait Sandbox: Send + Sync {
    fn id(&self) -> &str;
    /// What the service reports the sandbox has (for the requirement checks); unknown fields are `None`.
    fn resources(&self) -> Result<Resources>;
    /// Runs `command` with `bash -lc` (E2B) or the toolbox shell (Daytona) to completion.
    fn run(&self, command: &str, options: &CommandOptions) -> Result<CommandOutput>;
    /// Starts `command` in the background, streaming its output.
    fn start(&self, command: &str, options: &CommandOptions) -> Result<RemoteProcess>;
    /// Writes `bytes` to the absolute sandbox path `path` (parents created by the service or beforehand).
    fn upload(&self, path: &str, bytes: &[u8]) -> Result<()>;
    /// Reads the file at the absolute sandbox path; more than `limit` bytes is an error naming the limit.
    fn download(&self, path: &str, limit: u64) -> Result<Vec<u8>>;
    /// Follows again the process [`RemoteProcess::handle`] names (started by a process that died): its output
    /// from the first byte, then as it comes, and its end.
    fn reattach(&self, handle: &serde_json::Value) -> Result<RemoteProcess> {
        let _ = handle;
        Err(crate::error::EngineError::unsupported("This service cannot follow a process again"))
    }
    /// Destroys the sandbox. Idempotent: a sandbox that is already gone is not an error.
    fn destroy(&self) -> Result<()>;
    /// Extends the sandbox's life: the service now ends it `lease` from now (never later), as long as the run
    /// lives. A sandbox whose run's supervisor died ends at most one lease after the last extension.
    fn extend_lease(&self, lease: std::time::Duration) -> Result<()>;
}

/// A kind of sandbox service: one module per service implements it (`e2b::SERVICE`, `daytona::SERVICE`) with
/// every rule of its own, and the registry (`runtime::services`) lists them. The shared remote runtime asks it
/// and never names a service.
pub trait Service: Sync {
    /// The runtime name a manifest declares (`e2b`).
    fn name(&self) -> &'static str;
    /// How texts name the service (`E2B`).
    fn title(&self) -> &'static str;
    /// The variables holding the service's credentials: read from the engine's environment, never passed into
    /// any sandbox (of this service or another), even when a package declares their names.
    fn credential_keys(&self) -> &'static [&'static str];
    /// What the service's policy says of the package's requirements before anything is created (the os, GPU,
    /// a class). `Err`: the detail of the refusal (the runtime says which Workbench and runtime).
    fn judge_requirements(&self, package: &Package) -> std::result::Result<RequirementReport, Unmet>;
    /// The resources asked for when a sandbox is created. Default: none (the template carries its own).
    fn resource_request(&self, requirements: &wb_manifest::Requirements) -> ResourceRequest {
        let _ = requirements;
        ResourceRequest::default()
    }
    /// True when a failed collection keeps the sandbox (paused where the service can) behind a private recovery
    /// checkpoint instead of destroying it (E2B, as the outcomes contract says); false: cleanup destroys it as on
    /// every other path (Daytona).
    fn keeps_recovery(&self) -> bool {
        false
    }
    /// A client for the service, configured from `env` (keys, base URLs), its calls driven on `handle`. A
    /// missing key is reported by [`SandboxProvider::check_credentials`], not here.
    fn connect(&self, env: &ProviderEnv, handle: tokio::runtime::Handle) -> Result<Box<dyn SandboxProvider>>;
}

/// The calls a run makes on a service, by step, for a dry run's plan (nothing is called).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    /// Finding or building the template, in order (or why it would be refused).
    pub template: Vec<String>,
    /// Creating the sandbox and waiting for it.
    pub create: Vec<String>,
    /// Running one command to completion (staging, preflight, collection).
    pub run: String,
    /// Uploading a file (staged archives).
    pub upload: String,
    /// Starting the runner and following its output until it exits.
    pub start: Vec<String>,
    /// Downloading a file (the collected archives).
    pub download: String,
    /// Destroying the sandbox.
    pub destroy: String,
}

/// A connected sandbox service.
pub trait SandboxProvider: Send {
    /// From now on every call of this provider and its sandboxes (template builds, creates, staging uploads,
    /// engine commands) stops promptly once `flag` is set (the run's cancel flag: Ctrl-C, `$/cancelRequest`);
    /// `None` stops watching (before collection, which must still run after a cancelled runner). Cleanup
    /// (destroy, reclaim, kill) is never stopped.
    fn watch_cancel(&mut self, flag: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) {
        let _ = flag;
    }
    /// Fails with the reference's text when the service's key is missing.
    fn check_credentials(&self) -> Result<()>;
    /// The calls [`SandboxProvider::prepare_template`] and a run would make, for a dry run (nothing is
    /// created or called).
    fn calls(&self, request: &TemplateRequest) -> Calls;
    /// Finds or builds the template (E2B) or checks the image (Daytona). `progress` receives one line per step.
    fn prepare_template(&mut self, request: &TemplateRequest, progress: &dyn Fn(&str)) -> Result<PreparedTemplate>;
    /// Creates a sandbox and waits until it can run commands.
    fn create(&mut self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>>;
    /// Destroys every sandbox carrying all of `labels` (a create that timed out may still have made one).
    /// Returns how many were destroyed.
    fn reclaim(&mut self, labels: &BTreeMap<String, String>) -> Result<usize>;
    /// The ids of the sandboxes carrying all of `labels` (none without labels: never every sandbox).
    fn find(&mut self, labels: &BTreeMap<String, String>) -> Result<Vec<String>>;
    /// Pauses sandbox `id` so it keeps its state without running: true when it is paused now, false when it
    /// already was. Only a service that [`Service::keeps_recovery`] can.
    fn pause(&mut self, id: &str) -> Result<bool> {
        Err(crate::error::EngineError::unsupported(format!("This service cannot pause sandbox {id}")))
    }
    /// A handle on the existing sandbox `id`, never another: resumed when paused, kept for at least `lease`.
    fn reconnect(&mut self, id: &str, lease: Duration) -> Result<Box<dyn Sandbox>> {
        let _ = lease;
        Err(crate::error::EngineError::unsupported(format!("This service cannot reconnect to sandbox {id}")))
    }
    /// Destroys sandbox `id` (idempotent: a sandbox that is gone is not an error).
    fn destroy(&mut self, id: &str) -> Result<()>;
}
