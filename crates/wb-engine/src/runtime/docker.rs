//! The docker runtime: one container per run on a Docker engine, driven through its API (bollard), never
//! through the docker CLI.
//!
//! - Images: a published reference is used when present locally (its immutable id is recorded), else pulled;
//!   a build object is built from a context archive without credential files or VCS/dependency directories,
//!   tagged by a content hash of the context and Dockerfile, so an unchanged package never rebuilds.
//! - Containers: the run's directories are bind-mounted with their declared access (see
//!   [`super::container_layout`]), the runner runs as the host user's uid:gid on a read-only root file system
//!   with a writable `/tmp` and a writable temporary `HOME`; environment values go through the API, never into
//!   arguments. Preflight containers have no network. Every container carries [`LABEL`] and is removed on
//!   every path (cleanup is idempotent and runs on drop).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use bollard::models::{ContainerCreateBody, HostConfig, MountType};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, BuildImageOptionsBuilder, CreateImageOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, StopContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;
use serde::Serialize;
use sha2::{Digest, Sha256};
use wb_manifest::Image;

use super::{Handle, Launched, Mount, Preflight, Runtime, paths};
use crate::adapters::Translation;
use crate::error::{EngineError, Result};
use crate::requirements::RequirementReport;
use crate::source::Package;

/// The label every container and image this runtime creates carries (value `1`).
pub const LABEL: &str = "dev.wb-lsp.managed";
/// The label naming the runtime instance (one run) a container belongs to.
pub const INSTANCE_LABEL: &str = "dev.wb-lsp.instance";
/// Where the host engine's socket appears inside the container (host engine mode).
pub const SOCKET: &str = "/var/run/docker.sock";

/// Directory names never sent to the engine in a build context.
const EXCLUDED_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj", "node_modules", ".venv", "__pycache__"];

/// The image a runtime prepared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ImageInfo {
    /// The published reference, or the tag of a built image.
    pub reference: String,
    /// The engine's immutable image id (`sha256:...`).
    pub id: String,
    /// Built from the package's Dockerfile (else published).
    pub built: bool,
    /// Already present: nothing was pulled or built.
    pub cached: bool,
}

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
    host_engine: bool,
    limits: Limits,
    /// Containers created and not yet removed.
    containers: Vec<String>,
    instance: String,
    progress: Option<super::ProgressSink>,
}

fn engine_error(context: &str, error: &bollard::errors::Error) -> EngineError {
    EngineError::message(format!("{context}: {error}"))
}

fn unreachable(error: &impl std::fmt::Display) -> EngineError {
    EngineError::message(format!(
        "Cannot reach the Docker engine ({error}). Start the Docker daemon or set DOCKER_HOST to its socket."
    ))
}

impl Docker {
    /// Connects to the engine (`DOCKER_HOST`, else the local socket) and negotiates the API version.
    pub fn new() -> Result<Docker> {
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
            inherited: BTreeMap::new(),
            image: None,
            mounts: Vec::new(),
            host_engine: false,
            limits: Limits::default(),
            containers: Vec::new(),
            instance,
            progress: None,
        })
    }

    /// The label value of this runtime instance (tests list containers by it).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    fn labels(&self) -> HashMap<String, String> {
        HashMap::from([(LABEL.to_owned(), "1".to_owned()), (INSTANCE_LABEL.to_owned(), self.instance.clone())])
    }

    fn user() -> String {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        format!("{uid}:{gid}")
    }

    /// The host socket of the engine, for host engine mode. TCP (and other remote) contexts are refused.
    fn host_socket(&self) -> Result<PathBuf> {
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
                None => Err(EngineError::message(
                    "Host Docker engine access supports only the local Unix socket; a TCP or remote DOCKER_HOST is refused",
                )),
            },
        }
    }

    fn report(&self, message: &str) {
        if let Some(progress) = &self.progress {
            progress(message);
        }
    }

    fn resolve_published(&mut self, reference: &str) -> Result<ImageInfo> {
        if let Ok(inspect) = self.tokio.block_on(self.client.inspect_image(reference)) {
            return Ok(ImageInfo {
                reference: reference.to_owned(),
                id: inspect.id.unwrap_or_default(),
                built: false,
                cached: true,
            });
        }
        self.report(&format!("Pulling image {reference}"));
        let (image, tag) = split_reference(reference);
        let options = CreateImageOptionsBuilder::default().from_image(&image).tag(&tag).build();
        let client = self.client.clone();
        let pulled: std::result::Result<(), bollard::errors::Error> = self.tokio.block_on(async move {
            let mut stream = client.create_image(Some(options), None, None);
            while let Some(item) = stream.next().await {
                item?;
            }
            Ok(())
        });
        if let Err(error) = pulled {
            return Err(EngineError::message(format!(
                "Cannot pull Docker image {reference}: it is not present locally and the pull failed ({error})"
            )));
        }
        let inspect = self
            .tokio
            .block_on(self.client.inspect_image(reference))
            .map_err(|e| engine_error(&format!("Cannot inspect Docker image {reference}"), &e))?;
        Ok(ImageInfo {
            reference: reference.to_owned(),
            id: inspect.id.unwrap_or_default(),
            built: false,
            cached: false,
        })
    }

    fn build(&mut self, package: &Package, dockerfile: &str, context: Option<&str>) -> Result<ImageInfo> {
        let dockerfile = wb_manifest::normalize(&package.package_dir.join(dockerfile));
        let context_dir = wb_manifest::normalize(&package.package_dir.join(context.unwrap_or(".")));
        let archive = context_archive(&context_dir, &dockerfile)?;
        let tag = format!("wb-lsp/{}:{}", image_name(&package.name), &archive.hash[..24]);
        if let Ok(inspect) = self.tokio.block_on(self.client.inspect_image(&tag)) {
            self.report(&format!("Using cached image {tag}"));
            return Ok(ImageInfo { reference: tag, id: inspect.id.unwrap_or_default(), built: true, cached: true });
        }
        self.report(&format!("Building image {tag}"));
        let progress = self.progress.clone();
        let options = BuildImageOptionsBuilder::default()
            .dockerfile(&archive.dockerfile)
            .t(&tag)
            .rm(true)
            .forcerm(true)
            .labels(&self.labels().into_iter().filter(|(k, _)| k == LABEL).collect())
            .build();
        let client = self.client.clone();
        let body = bollard::body_full(archive.tar.into());
        let built: std::result::Result<(), String> = self.tokio.block_on(async move {
            let mut stream = client.build_image(options, None, Some(body));
            let mut tail = String::new();
            while let Some(item) = stream.next().await {
                match item {
                    Ok(info) => {
                        if let Some(detail) = info.error_detail.and_then(|d| d.message) {
                            return Err(detail);
                        }
                        if let Some(line) = info.stream.filter(|l| !l.trim().is_empty()) {
                            tail = line.trim().to_owned();
                            // Build steps (`Step 2/4 : COPY ...`) are the useful progress; other output is noise.
                            if let Some(progress) = progress.as_ref().filter(|_| tail.starts_with("Step ")) {
                                progress(&tail);
                            }
                        }
                    }
                    Err(error) => {
                        return Err(if tail.is_empty() { error.to_string() } else { format!("{error} ({tail})") });
                    }
                }
            }
            Ok(())
        });
        if let Err(error) = built {
            return Err(EngineError::message(format!("Cannot build the Docker image of {}: {error}", package.name)));
        }
        let inspect = self
            .tokio
            .block_on(self.client.inspect_image(&tag))
            .map_err(|e| engine_error(&format!("Cannot inspect Docker image {tag}"), &e))?;
        Ok(ImageInfo { reference: tag, id: inspect.id.unwrap_or_default(), built: true, cached: false })
    }

    fn mounts_model(&self) -> Result<Vec<bollard::models::Mount>> {
        let mut mounts: Vec<bollard::models::Mount> = self
            .mounts
            .iter()
            .map(|mount| bollard::models::Mount {
                target: Some(mount.target.display().to_string()),
                source: Some(mount.host.display().to_string()),
                typ: Some(MountType::BIND),
                read_only: Some(mount.read_only),
                ..Default::default()
            })
            .collect();
        if self.host_engine {
            mounts.push(bollard::models::Mount {
                target: Some(SOCKET.to_owned()),
                source: Some(self.host_socket()?.display().to_string()),
                typ: Some(MountType::BIND),
                read_only: Some(false),
                ..Default::default()
            });
        }
        Ok(mounts)
    }

    fn host_config(&self, mounts: Vec<bollard::models::Mount>, network: bool) -> HostConfig {
        HostConfig {
            mounts: Some(mounts),
            tmpfs: Some(HashMap::from([
                ("/tmp".to_owned(), "rw,nosuid,nodev,mode=1777".to_owned()),
                (paths::STATE.to_owned(), "rw,nosuid,nodev,mode=1777".to_owned()),
            ])),
            readonly_rootfs: Some(true),
            network_mode: (!network).then(|| "none".to_owned()),
            nano_cpus: self.limits.nano_cpus,
            memory: self.limits.memory,
            init: Some(true),
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            ..Default::default()
        }
    }

    fn image_id(&self) -> Result<String> {
        self.image
            .as_ref()
            .map(|image| image.id.clone())
            .ok_or_else(|| EngineError::message("The Docker image is not prepared"))
    }

    fn create(&mut self, body: ContainerCreateBody) -> Result<String> {
        let created = self
            .tokio
            .block_on(self.client.create_container(None, body))
            .map_err(|e| engine_error("Cannot create the Docker container", &e))?;
        self.containers.push(created.id.clone());
        Ok(created.id)
    }

    fn remove(&mut self, id: &str) -> Result<()> {
        let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
        let result = self.tokio.block_on(self.client.remove_container(id, Some(options)));
        match result {
            Ok(()) | Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => {
                self.containers.retain(|c| c != id);
                Ok(())
            }
            Err(error) => Err(engine_error(&format!("Cannot remove Docker container {id}"), &error)),
        }
    }
}

impl Drop for Docker {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

/// `name[:tag]` or `name@digest` → (image, tag or digest); a missing tag is `latest` (an empty tag would pull
/// every tag).
fn split_reference(reference: &str) -> (String, String) {
    if let Some((image, digest)) = reference.split_once('@') {
        return (image.to_owned(), digest.to_owned());
    }
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[last_slash..].rfind(':') {
        Some(colon) => {
            let at = last_slash + colon;
            (reference[..at].to_owned(), reference[at + 1..].to_owned())
        }
        None => (reference.to_owned(), "latest".to_owned()),
    }
}

/// A package name as an image repository component (lower case, `[a-z0-9._-]`).
fn image_name(name: &str) -> String {
    let cleaned: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect();
    let cleaned = cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned();
    if cleaned.is_empty() { "workbench".to_owned() } else { cleaned }
}

/// A build context: the tar archive, its content hash (with the Dockerfile's) and the Dockerfile's name in it.
pub struct ContextArchive {
    pub tar: Vec<u8>,
    pub hash: String,
    pub dockerfile: String,
    /// Paths in the archive, sorted.
    pub entries: Vec<String>,
}

/// The Dockerfile's name in the archive when it lies outside the context (or was excluded).
const OUTSIDE_DOCKERFILE: &str = ".wb-lsp.Dockerfile";

/// Builds the context archive of `context` (credential files and VCS/dependency directories left out) and its
/// content hash. Modification times and owners are not part of the archive, so the hash (and the image tag)
/// only change when the content does.
pub fn context_archive(context: &Path, dockerfile: &Path) -> Result<ContextArchive> {
    let dockerfile_text = std::fs::read(dockerfile)
        .map_err(|_| EngineError::message(format!("Dockerfile does not exist: {}", dockerfile.display())))?;
    if !context.is_dir() {
        return Err(EngineError::message(format!("Docker build context does not exist: {}", context.display())));
    }
    let mut builder = tar::Builder::new(Vec::new());
    let mut hasher = Sha256::new();
    let mut entries = Vec::new();
    let mut stack = vec![PathBuf::new()];
    let io = |e: std::io::Error| EngineError::io("cannot archive the Docker build context", e);
    while let Some(relative) = stack.pop() {
        let dir = context.join(&relative);
        let mut children: Vec<std::fs::DirEntry> = std::fs::read_dir(&dir).map_err(io)?.flatten().collect();
        children.sort_by_key(std::fs::DirEntry::file_name);
        // Directories are pushed in reverse so the walk stays in sorted order.
        let mut subdirs = Vec::new();
        for child in children {
            let name = child.file_name().to_string_lossy().into_owned();
            let path = relative.join(&name);
            let key = path.to_string_lossy().replace('\\', "/");
            let meta = std::fs::symlink_metadata(child.path()).map_err(io)?;
            let kind = meta.file_type();
            if kind.is_dir() {
                // The outcomes policy (VCS metadata, dependency trees, credential directories) plus build caches.
                if EXCLUDED_DIRS.contains(&name.as_str()) || wb_outcomes::is_excluded(&key) {
                    continue;
                }
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, format!("{key}/"), std::io::empty()).map_err(io)?;
                hasher.update(format!("D\0{key}\0").as_bytes());
                entries.push(format!("{key}/"));
                subdirs.push(path);
            } else if wb_outcomes::is_excluded(&key) {
                // Credential files and secret-bearing names never leave the host, as for outcomes.
                continue;
            } else if kind.is_symlink() {
                let target = std::fs::read_link(child.path()).map_err(io)?;
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, &key, &target).map_err(io)?;
                hasher.update(format!("L\0{key}\0{}\0", target.display()).as_bytes());
                entries.push(key);
            } else if kind.is_file() {
                let data = std::fs::read(child.path()).map_err(io)?;
                #[cfg(unix)]
                let mode = {
                    use std::os::unix::fs::PermissionsExt;
                    if meta.permissions().mode() & 0o111 != 0 { 0o755 } else { 0o644 }
                };
                #[cfg(not(unix))]
                let mode = 0o644;
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(mode);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, &key, data.as_slice()).map_err(io)?;
                hasher.update(format!("F\0{key}\0{mode:o}\0{}\0", data.len()).as_bytes());
                hasher.update(&data);
                entries.push(key);
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    let inside = dockerfile
        .strip_prefix(context)
        .ok()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .filter(|p| entries.contains(p));
    let dockerfile_name = match inside {
        Some(name) => name,
        None => {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(dockerfile_text.len() as u64);
            builder.append_data(&mut header, OUTSIDE_DOCKERFILE, dockerfile_text.as_slice()).map_err(io)?;
            OUTSIDE_DOCKERFILE.to_owned()
        }
    };
    hasher.update(format!("DOCKERFILE\0{dockerfile_name}\0").as_bytes());
    hasher.update(&dockerfile_text);
    let tar = builder.into_inner().map_err(io)?;
    let hash: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(ContextArchive { tar, hash, dockerfile: dockerfile_name, entries })
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

    fn set_progress(&mut self, sink: super::ProgressSink) {
        self.progress = Some(sink);
    }

    fn inherit_environment(&mut self, inherited: &BTreeMap<String, String>) {
        self.inherited = inherited.clone();
    }

    fn maps_paths(&self) -> bool {
        true
    }

    fn set_mounts(&mut self, mounts: Vec<Mount>) {
        self.mounts = mounts;
    }

    fn image(&self) -> Option<ImageInfo> {
        self.image.clone()
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

    fn prepare(&mut self, package: &Package) -> Result<()> {
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
        self.image = Some(image);
        Ok(())
    }

    fn preflight(
        &self,
        runner: &str,
        executable: &str,
        tools: &[String],
        _path_variable: Option<&str>,
    ) -> Result<Preflight> {
        // `preflight` takes `&self`; the container it creates is tracked by a scratch copy of the handle.
        let mut scratch = Scratch { docker: self, created: Vec::new() };
        let result = scratch.preflight(runner, executable, tools);
        scratch.remove_all();
        result
    }

    fn launch(&mut self, translation: &Translation) -> Result<Launched> {
        let Some((program, args)) = translation.command.split_first() else {
            return Err(EngineError::message("The runner command is empty"));
        };
        for mount in &self.mounts {
            if !mount.host.exists() {
                std::fs::create_dir_all(&mount.host)
                    .map_err(|e| EngineError::io(format!("cannot create {}", mount.host.display()), e))?;
            }
        }
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("HOME".to_owned(), paths::STATE.to_owned());
        env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
        if self.host_engine {
            env.insert("DOCKER_HOST".to_owned(), format!("unix://{SOCKET}"));
        }
        env.extend(translation.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let body = ContainerCreateBody {
            image: Some(self.image_id()?),
            entrypoint: Some(vec![program.clone()]),
            cmd: Some(args.to_vec()),
            env: Some(env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            working_dir: Some(translation.cwd.display().to_string()),
            user: Some(Self::user()),
            labels: Some(self.labels()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            open_stdin: Some(false),
            tty: Some(false),
            host_config: Some(self.host_config(self.mounts_model()?, true)),
            ..Default::default()
        };
        let id = self.create(body)?;
        let client = self.client.clone();
        let container = id.clone();
        let attached = self.tokio.block_on(async move {
            let options =
                AttachContainerOptionsBuilder::default().stdout(true).stderr(true).stream(true).logs(false).build();
            let attached = client.attach_container(&container, Some(options)).await?;
            client.start_container(&container, None).await?;
            Ok::<_, bollard::errors::Error>(attached)
        });
        let attached = match attached {
            Ok(attached) => attached,
            Err(error) => {
                let _ = self.remove(&id);
                let text = error.to_string();
                if text.contains("executable file not found") || text.contains("no such file or directory") {
                    return Err(EngineError::message(format!("Runner CLI is unavailable: {program}")));
                }
                return Err(EngineError::message(format!("Cannot start the runner container: {text}")));
            }
        };
        let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>();
        let (err_tx, err_rx) = mpsc::channel::<Vec<u8>>();
        let (exit_tx, exit_rx) = mpsc::channel::<Option<i64>>();
        let client = self.client.clone();
        let container = id.clone();
        self.tokio.spawn(async move {
            let mut output = attached.output;
            while let Some(item) = output.next().await {
                match item {
                    Ok(bollard::container::LogOutput::StdOut { message }) => {
                        let _ = out_tx.send(message.to_vec());
                    }
                    Ok(bollard::container::LogOutput::StdErr { message }) => {
                        let _ = err_tx.send(message.to_vec());
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            drop(out_tx);
            drop(err_tx);
            let mut wait = client.wait_container(&container, Some(WaitContainerOptionsBuilder::default().build()));
            let code = match wait.next().await {
                Some(Ok(response)) => Some(response.status_code),
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Some(code),
                _ => None,
            };
            let _ = exit_tx.send(code);
        });
        Ok(Launched {
            stdout: Some(Box::new(ChannelReader::new(out_rx))),
            stderr: Some(Box::new(ChannelReader::new(err_rx))),
            handle: Handle::Container { id, exit: exit_rx },
        })
    }

    fn cancel(&mut self, launched: &mut Launched) {
        let Handle::Container { id, .. } = &launched.handle else { return };
        let id = id.clone();
        let options = StopContainerOptionsBuilder::default().t(2).build();
        let _ = self.tokio.block_on(self.client.stop_container(&id, Some(options)));
        let _ = self.remove(&id);
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

/// Preflight's container handling on a shared `&Docker`.
struct Scratch<'a> {
    docker: &'a Docker,
    created: Vec<String>,
}

const PREFLIGHT_SCRIPT: &str = r#"for name in "$@"; do
  if found=$(command -v "$name" 2>/dev/null); then printf 'found\t%s\t%s\n' "$name" "$found"; else printf 'missing\t%s\n' "$name"; fi
done
if [ -n "$WB_LSP_CHECK_ENGINE" ]; then
  if docker version >/dev/null 2>&1; then echo 'engine	ok'; else echo 'engine	failed'; fi
fi"#;

impl Scratch<'_> {
    fn preflight(&mut self, runner: &str, executable: &str, tools: &[String]) -> Result<Preflight> {
        let docker = self.docker;
        let image = docker.image_id()?;
        let mut names = vec![executable.to_owned()];
        names.extend(tools.iter().cloned());
        let mut env = Vec::new();
        let mut mounts = Vec::new();
        if docker.host_engine {
            if !names.iter().any(|n| n == "docker") {
                names.push("docker".to_owned());
            }
            env.push("WB_LSP_CHECK_ENGINE=1".to_owned());
            env.push(format!("DOCKER_HOST=unix://{SOCKET}"));
            mounts = docker.mounts_model()?.into_iter().filter(|m| m.target.as_deref() == Some(SOCKET)).collect();
        }
        let mut cmd = vec!["wb-lsp-preflight".to_owned()];
        cmd.extend(names);
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            entrypoint: Some(vec!["/bin/sh".to_owned(), "-c".to_owned(), PREFLIGHT_SCRIPT.to_owned()]),
            cmd: Some(cmd),
            env: Some(env),
            user: Some(Docker::user()),
            labels: Some(docker.labels()),
            network_disabled: Some(true),
            host_config: Some(docker.host_config(mounts, false)),
            ..Default::default()
        };
        let created = docker
            .tokio
            .block_on(docker.client.create_container(None, body))
            .map_err(|e| engine_error("Cannot create the Docker preflight container", &e))?;
        self.created.push(created.id.clone());
        let client = docker.client.clone();
        let container = created.id.clone();
        let outcome: std::result::Result<(i64, String), bollard::errors::Error> = docker.tokio.block_on(async move {
            client.start_container(&container, None).await?;
            let mut wait = client.wait_container(&container, Some(WaitContainerOptionsBuilder::default().build()));
            let code = match wait.next().await {
                Some(Ok(response)) => response.status_code,
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
                Some(Err(error)) => return Err(error),
                None => -1,
            };
            let mut logs =
                client.logs(&container, Some(LogsOptionsBuilder::default().stdout(true).stderr(false).build()));
            let mut out = Vec::new();
            while let Some(item) = logs.next().await {
                out.extend_from_slice(&item?.into_bytes());
            }
            Ok((code, String::from_utf8_lossy(&out).into_owned()))
        });
        let reference = docker.image.as_ref().map_or(image, |i| i.reference.clone());
        let (code, output) = outcome.map_err(|e| {
            EngineError::message(format!(
                "Cannot run the preflight in Docker image {reference} (it needs /bin/sh): {e}"
            ))
        })?;
        if code != 0 {
            return Err(EngineError::message(format!(
                "Cannot run the preflight in Docker image {reference} (it needs /bin/sh): exit status {code}"
            )));
        }
        let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
        let mut engine_ok = None;
        for line in output.lines() {
            let mut fields = line.split('\t');
            match (fields.next(), fields.next(), fields.next()) {
                (Some("found"), Some(name), Some(path)) => {
                    found.insert(name.to_owned(), PathBuf::from(path));
                }
                (Some("engine"), Some(state), None) => engine_ok = Some(state == "ok"),
                _ => {}
            }
        }
        let runner_path = found
            .get(executable)
            .cloned()
            .ok_or_else(|| EngineError::message(format!("Runner CLI is unavailable: {runner}")))?;
        let mut located = Vec::new();
        for tool in tools {
            let path = found
                .get(tool)
                .cloned()
                .ok_or_else(|| EngineError::message(format!("Required CLI tool is unavailable: {tool}")))?;
            located.push((tool.clone(), path));
        }
        if docker.host_engine {
            if !found.contains_key("docker") {
                return Err(EngineError::message("Required CLI tool is unavailable: docker"));
            }
            if engine_ok != Some(true) {
                return Err(EngineError::message(
                    "The host Docker engine is not reachable from the container through /var/run/docker.sock",
                ));
            }
        }
        Ok(Preflight { runner: Some(runner_path), tools: located })
    }

    fn remove_all(&mut self) {
        for id in std::mem::take(&mut self.created) {
            let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
            let _ = self.docker.tokio.block_on(self.docker.client.remove_container(&id, Some(options)));
        }
    }
}

/// A `Read` over chunks arriving on a channel (the container's demultiplexed output).
struct ChannelReader {
    rx: mpsc::Receiver<Vec<u8>>,
    buffer: Vec<u8>,
    position: usize,
}

impl ChannelReader {
    fn new(rx: mpsc::Receiver<Vec<u8>>) -> ChannelReader {
        ChannelReader { rx, buffer: Vec::new(), position: 0 }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.position >= self.buffer.len() {
            match self.rx.recv() {
                Ok(chunk) => {
                    self.buffer = chunk;
                    self.position = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buffer.len() - self.position);
        out[..n].copy_from_slice(&self.buffer[self.position..self.position + n]);
        self.position += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        assert_eq!(split_reference("busybox"), ("busybox".into(), "latest".into()));
        assert_eq!(split_reference("ghcr.io/x/y:1"), ("ghcr.io/x/y".into(), "1".into()));
        assert_eq!(split_reference("localhost:5000/x"), ("localhost:5000/x".into(), "latest".into()));
        assert_eq!(split_reference("x/y@sha256:abc"), ("x/y".into(), "sha256:abc".into()));
        assert_eq!(image_name("My_Pkg!"), "my_pkg");
    }
}
