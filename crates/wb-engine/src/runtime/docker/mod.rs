//! The docker runtime: one container per run on a Docker engine, driven through its API (bollard), never
//! through the docker CLI.
//!
//! - Images: a published reference is used when present locally (its immutable id is recorded), else pulled;
//!   a build object is built from a context archive without credential files or VCS/dependency directories,
//!   tagged by a content hash of the context and Dockerfile, so an unchanged package never rebuilds.
//! - Containers: the run's directories are bind-mounted with their declared access (see
//!   [`super::container_layout`]), the runner runs as the host user's uid:gid on a read-only root file system
//!   with a writable `/tmp` and a writable temporary `HOME`; environment values go through the API, never into
//!   arguments. Every `.git` entry of a writable workspace is mounted again read-only over itself, and a
//!   `.git` the agent creates is removed after the run and fails its outcome (`git_guard`): nothing the
//!   container writes makes the user's next `git` command run anything. Preflight containers have no network. Every container carries [`LABEL`] and is removed on
//!   every path (cleanup is idempotent and runs on drop).
//!
//! Files: `image` (published images and builds), `context` (the build context archive), `container` (the
//! runner's container: mounts, host configuration, launch, output), `preflight` (the runner and tools looked up
//! in a throwaway container).

mod container;
mod context;
mod git_guard;
mod image;
mod preflight;
mod sweep;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use wb_manifest::Image;

pub use context::{ContextArchive, context_archive};
pub use image::ImageInfo;
pub use sweep::remove_leftovers;

use super::{Launched, Mount, Placement, Preflight, PreflightRequest, Preparation, Runtime, Setup};
use crate::adapters::Translation;
use crate::error::{EngineError, Result};
use crate::requirements::RequirementReport;
use crate::source::Package;
use preflight::Scratch;

/// The label every container and image this runtime creates carries (value `1`).
pub const LABEL: &str = "dev.wb-lsp.managed";
/// The label naming the runtime instance (one run) a container belongs to.
pub const INSTANCE_LABEL: &str = "dev.wb-lsp.instance";
/// The label naming the process that created a container (`<pid>:<start>`, [`crate::leftovers::Identity`]): a
/// container whose creator has ended is left over ([`remove_leftovers`]).
pub const OWNER_LABEL: &str = "dev.wb-lsp.owner";
/// Where the host engine's socket appears inside the container (host engine mode).
pub const SOCKET: &str = "/var/run/docker.sock";

#[derive(Clone, Copy, Debug, Default)]
struct Limits {
    nano_cpus: Option<i64>,
    memory: Option<i64>,
}

pub struct Docker {
    tokio: tokio::runtime::Runtime,
    client: bollard::Docker,
    inherited: BTreeMap<String, String>,
    image: Option<ImageInfo>,
    mounts: Vec<Mount>,
    /// The Git metadata of the writable mounts, found when they were set (or why it could not be guarded).
    git_guard: Result<git_guard::GitGuard>,
    host_engine: bool,
    limits: Limits,
    /// Containers created and not yet removed.
    containers: Vec<String>,
    instance: String,
    progress: Option<super::ProgressSink>,
}

fn engine_error(context: &str, error: &bollard::errors::Error) -> EngineError {
    EngineError::Engine(format!("{context}: {error}"))
}

fn unreachable(error: &impl std::fmt::Display) -> EngineError {
    EngineError::Engine(format!(
        "Cannot reach the Docker engine ({error}). Start the Docker daemon or set DOCKER_HOST to its socket."
    ))
}

impl Docker {
    /// Connects to the engine (`DOCKER_HOST`, else the local socket) and negotiates the API version.
    pub fn new(setup: Setup) -> Result<Docker> {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| EngineError::io("cannot start the Docker client", e))?;
        let client = {
            let _guard = tokio.enter();
            bollard::Docker::connect_with_local_defaults().map_err(|e| unreachable(&e))?
        };
        let client = tokio.block_on(client.negotiate_version()).map_err(|e| unreachable(&e))?;
        let instance = crate::events::new_run_id();
        Ok(Docker {
            tokio,
            client,
            inherited: setup.inherited,
            image: None,
            mounts: Vec::new(),
            git_guard: Ok(git_guard::GitGuard::default()),
            host_engine: false,
            limits: Limits::default(),
            containers: Vec::new(),
            instance,
            progress: setup.progress,
        })
    }

    /// The engine's version (what `docker version` calls the server's).
    pub fn engine_version(&self) -> Result<String> {
        let version = self.tokio.block_on(self.client.version()).map_err(|e| unreachable(&e))?;
        Ok(version.version.unwrap_or_default())
    }

    /// The label value of this runtime instance (tests list containers by it).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    pub(super) fn labels(&self) -> HashMap<String, String> {
        let owner = crate::leftovers::identity::Identity::of(std::process::id()).label();
        HashMap::from([
            (LABEL.to_owned(), "1".to_owned()),
            (INSTANCE_LABEL.to_owned(), self.instance.clone()),
            (OWNER_LABEL.to_owned(), owner),
        ])
    }

    pub(super) fn user() -> String {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        format!("{uid}:{gid}")
    }

    /// The host socket of the engine, for host engine mode. TCP (and other remote) contexts are refused.
    pub(super) fn host_socket(&self) -> Result<PathBuf> {
        let value = self
            .inherited
            .get("DOCKER_HOST")
            .cloned()
            .or_else(|| std::env::var("DOCKER_HOST").ok())
            .filter(|v| !v.is_empty());
        match value {
            None => Ok(PathBuf::from(SOCKET)),
            Some(value) => match value.strip_prefix("unix://") {
                Some(path) => Ok(PathBuf::from(path)),
                None => Err(EngineError::unsupported(
                    "Host Docker engine access supports only the local Unix socket; a TCP or remote DOCKER_HOST is refused",
                )),
            },
        }
    }

    pub(super) fn report(&self, message: &str) {
        if let Some(progress) = &self.progress {
            progress(message);
        }
    }
}

impl Drop for Docker {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

fn engine_arch(arch: &str) -> String {
    match arch {
        "x86_64" | "amd64" => "x64".to_owned(),
        "aarch64" | "arm64" => "arm64".to_owned(),
        other => other.to_owned(),
    }
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

impl Runtime for Docker {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn placement(&self) -> Placement {
        Placement::Container
    }

    fn retrieve(&mut self, _outbox: &std::path::Path) -> Result<()> {
        match &self.git_guard {
            Ok(guard) => guard.verify(),
            Err(error) => Err(EngineError::message(error.to_string())),
        }
    }

    fn check_requirements(&self, package: &Package, _allow_unchecked_gpu: bool) -> Result<RequirementReport> {
        let requirements = &package.manifest.requirements;
        let fail = |detail: String| {
            EngineError::message(format!("Workbench {} cannot run on the docker runtime: {detail}", package.name))
        };
        let mut report = RequirementReport::default();
        if requirements.gpu {
            return Err(fail("GPU requirements are not supported on the docker runtime".to_owned()));
        }
        if let Some(os) = &requirements.os {
            if !os.iter().any(|o| o == "linux") {
                return Err(fail(format!("requires os {} but the docker runtime provides linux", os.join(" or "))));
            }
            report.checked.push("os linux".to_owned());
        }
        let needs_engine =
            requirements.arch.is_some() || requirements.cpu.is_some() || requirements.memory_gb.is_some();
        if needs_engine {
            let info = self.tokio.block_on(self.client.info()).map_err(|e| unreachable(&e))?;
            if let Some(arch) = &requirements.arch {
                let engine = engine_arch(info.architecture.as_deref().unwrap_or_default());
                if !arch.contains(&engine) {
                    return Err(fail(format!(
                        "requires arch {} but the docker runtime runs on {engine}",
                        arch.join(" or ")
                    )));
                }
                report.checked.push(format!("arch {engine}"));
            }
            if let Some(cpu) = requirements.cpu {
                let available = u64::try_from(info.ncpu.unwrap_or(0)).unwrap_or(0);
                if available < cpu {
                    return Err(fail(format!("requires {cpu} CPUs but the Docker daemon has {available}")));
                }
                report.checked.push(format!("cpu {available}"));
                report.applied.push(format!("cpu limit {cpu}"));
            }
            if let Some(memory) = requirements.memory_gb {
                #[allow(clippy::cast_precision_loss)]
                let gib = (info.mem_total.unwrap_or(0) as f64 / GIB).round();
                let text = wb_syntax::js_number_to_string;
                if gib < memory {
                    return Err(fail(format!(
                        "requires {} GiB of memory but the Docker daemon has {} GiB",
                        text(memory),
                        text(gib)
                    )));
                }
                report.checked.push(format!("memory {} GiB", text(gib)));
                report.applied.push(format!("memory limit {} GiB", text(memory)));
            }
        }
        if requirements.disk_gb.is_some() {
            report.unchecked.push("disk_gb is not checked on the docker runtime".to_owned());
        }
        Ok(report)
    }

    fn prepare(&mut self, package: &Package, mounts: Vec<Mount>) -> Result<Preparation> {
        self.git_guard = git_guard::GitGuard::new(&mounts);
        self.mounts = mounts;
        let config = package.manifest.runtime("docker").cloned().ok_or_else(|| {
            EngineError::message(format!("Workbench {} does not declare runtime: docker", package.name))
        })?;
        self.host_engine = config.host_engine;
        if self.host_engine {
            self.host_socket()?;
        }
        let requirements = &package.manifest.requirements;
        self.limits = Limits {
            nano_cpus: requirements
                .cpu
                .and_then(|cpu| i64::try_from(cpu).ok())
                .map(|cpu| cpu.saturating_mul(1_000_000_000)),
            #[allow(clippy::cast_possible_truncation)]
            memory: requirements.memory_gb.map(|gb| (gb * GIB) as i64),
        };
        let image = match &config.image {
            Some(Image::Published(reference)) => self.resolve_published(&reference.value)?,
            Some(Image::Build { build, context }) => {
                self.build(package, &build.value, context.as_ref().map(|c| c.value.as_str()))?
            }
            None => return Err(EngineError::message(format!("{} is required", config.image_label))),
        };
        self.image = Some(image.clone());
        Ok(Preparation { image: Some(image), plan: Vec::new() })
    }

    fn preflight(&self, request: &PreflightRequest<'_>) -> Result<Preflight> {
        // `preflight` takes `&self`; the container it creates is tracked by a scratch copy of the handle.
        let mut scratch = Scratch { docker: self, created: Vec::new() };
        let result = scratch.preflight(request.runner, request.executable, request.tools);
        scratch.remove_all();
        result
    }

    fn launch(&mut self, translation: &Translation) -> Result<Launched> {
        self.launch_runner(translation)
    }

    fn cancel(&mut self, launched: &mut Launched) {
        self.stop_runner(launched);
    }

    fn cleanup(&mut self) -> Result<()> {
        let mut first_error = None;
        for id in self.containers.clone() {
            if let Err(error) = self.remove(&id) {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
