//! The remote runtimes (E2B, Daytona): a disposable sandbox per run from a service. Everything but the
//! transport is shared here, on [`provider::SandboxProvider`] and [`provider::Sandbox`]:
//!
//! - `prepare`: the template (E2B: found by its content-derived name or built; Daytona: the entry's own
//!   published image). `wb-lsp build --runtime e2b` stops here.
//! - `provision`: a sandbox labelled with this run (a create that fails has this run's sandboxes reclaimed by
//!   label), the requirement checks against what the service reports, then staging (`staging`): each
//!   workspace, the package (read-only), the runner's staged configuration and an empty outbox, uploaded as
//!   archives and unpacked inside; a writable workspace gets `git init` and a baseline commit; read-only ones
//!   are made read-only.
//! - `preflight`: `command -v` for git, tar (with `--null`), the runner and every tool; assets readable.
//! - `launch`: the runner streamed into the same adapters and canonical events as every runtime; bound values
//!   reach it through the provider (never in command text).
//! - `retrieve` (`collect`): the changes against the baseline commit and the outbox, back into the local
//!   working copies, so the outcome (receipt `pending`) is computed by the same code as every other.
//! - `cleanup`: the sandbox destroyed, on every path, idempotently.

pub mod adopt;
pub mod archive;
mod collect;
pub mod http;
pub mod kept;
pub mod orphans;
mod preflight;
pub mod provider;
pub mod recovery;
pub mod requirements;
pub mod shell;
pub mod staging;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use provider::{
    Calls, CommandOptions, CommandOutput, PreparedTemplate, ResourceRequest, Sandbox, SandboxProvider, SandboxSpec,
    Service, TemplateRequest, TemplateSource, User,
};
use requirements::Deferred;
use serde::Serialize;
use shell::quote;
use staging::WorkingCopy;
use wb_manifest::Image;

use super::{
    Handle, Launched, Mount, Placement, Preflight, PreflightRequest, Preparation, Provision, Runtime, Setup, paths,
};
use crate::adapters::Translation;
use crate::error::{EngineError, Result};
use crate::requirements::RequirementReport;
use crate::source::Package;

/// The label every sandbox this engine creates carries (value `1`).
pub const MANAGED_LABEL: &str = "dev.wb-lsp.managed";
/// The label naming the run a sandbox belongs to.
pub const RUN_LABEL: &str = "dev.wb-lsp.run";
/// The label naming the Workbench (what `clean` and people see).
pub const SCOPE_LABEL: &str = "dev.wb-lsp.scope";
/// How long a service keeps a sandbox the engine never destroyed (the reference's 60 minutes), counted from its
/// creation and again from each extension while its run lives. `WB_SANDBOX_LEASE` (a duration, [`crate::duration`]:
/// `90s`, `30m`, `2h`) changes it: shorter for less spend on a sandbox whose run's owner died.
pub const LEASE: Duration = Duration::from_secs(60 * 60);

/// The lease: `WB_SANDBOX_LEASE` when set (a duration, [`crate::duration`], of at least a second), else [`LEASE`].
fn lease(inherited: &BTreeMap<String, String>) -> Result<Duration> {
    let Some(text) = inherited.get("WB_SANDBOX_LEASE").filter(|t| !t.trim().is_empty()) else {
        return Ok(LEASE);
    };
    let lease =
        crate::duration::parse_for("WB_SANDBOX_LEASE", text).map_err(|e| EngineError::message(e.to_string()))?;
    if lease < Duration::from_secs(1) {
        let why = "a lease must be at least 1s";
        return Err(EngineError::message(crate::duration::invalid("WB_SANDBOX_LEASE", text, why).to_string()));
    }
    Ok(lease)
}

/// Commands the engine runs itself (staging, preflight, collection) give up after this.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The sandbox a smoke or run used, as reports show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SandboxInfo {
    pub provider: String,
    pub id: String,
    /// The template or image it was created from.
    pub template: String,
    pub destroyed: bool,
}

/// The labels of one run's sandboxes.
pub fn labels(run_id: &str, workbench: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_LABEL.to_owned(), "1".to_owned()),
        (RUN_LABEL.to_owned(), run_id.to_owned()),
        (SCOPE_LABEL.to_owned(), workbench.to_owned()),
    ])
}

pub struct RemoteRuntime {
    service: &'static dyn Service,
    setup: Setup,
    tokio: tokio::runtime::Runtime,
    provider: Option<Box<dyn SandboxProvider>>,
    mounts: Vec<Mount>,
    workbench: String,
    request: Option<TemplateRequest>,
    resources: ResourceRequest,
    template: Option<PreparedTemplate>,
    sandbox: Option<std::sync::Arc<dyn Sandbox>>,
    /// How long the service keeps the sandbox past the last extension ([`LEASE`], or `WB_SANDBOX_LEASE`).
    lease: Duration,
    /// While the runner runs: dropping it stops the thread that extends the sandbox's lease.
    keeper: Option<std::sync::mpsc::Sender<()>>,
    info: Option<SandboxInfo>,
    copies: Vec<WorkingCopy>,
    deferred: Vec<Deferred>,
    report: RequirementReport,
    /// The run this runtime provisioned for (its sandbox's label, a recovery checkpoint's name).
    run_id: Option<String>,
    /// Sandbox paths preflight checks are readable (the package's instructions and skills).
    assets: Vec<String>,
    /// The runner executable preflight found, `(name, absolute path)`: the launch runs that very file.
    runner_path: std::sync::Mutex<Option<(String, String)>>,
}

impl RemoteRuntime {
    /// The remote runtime on `service`, configured by `setup` (its client connects on first use).
    pub fn new(service: &'static dyn Service, setup: Setup) -> Result<RemoteRuntime> {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| EngineError::io(format!("cannot start the {} client", service.title()), e))?;
        let lease = lease(&setup.inherited)?;
        Ok(RemoteRuntime {
            service,
            setup,
            tokio,
            provider: None,
            mounts: Vec::new(),
            workbench: String::new(),
            request: None,
            resources: ResourceRequest::default(),
            template: None,
            sandbox: None,
            lease,
            keeper: None,
            info: None,
            copies: Vec::new(),
            deferred: Vec::new(),
            report: RequirementReport::default(),
            run_id: None,
            assets: Vec::new(),
            runner_path: std::sync::Mutex::new(None),
        })
    }

    fn name(&self) -> &'static str {
        self.service.name()
    }

    fn title(&self) -> &'static str {
        self.service.title()
    }

    /// Extends the sandbox's lease every half lease while the run lives (until cleanup), so a long run keeps
    /// its sandbox and a sandbox whose run's owner died ends at most one lease later.
    fn keep_alive(&mut self) {
        let Some(sandbox) = self.sandbox.clone() else { return };
        let (keeper, stopped) = std::sync::mpsc::channel::<()>();
        let (lease, progress, title) = (self.lease, self.setup.progress.clone(), self.title());
        let spawned = std::thread::Builder::new().name("wb-lease".into()).spawn(move || {
            while stopped.recv_timeout(lease / 2) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                if let (Err(error), Some(progress)) = (sandbox.extend_lease(lease), &progress) {
                    progress(&format!("Extending the {title} sandbox's lease failed: {error}"));
                }
            }
        });
        if spawned.is_ok() {
            self.keeper = Some(keeper);
        }
    }

    fn report_progress(&self, message: &str) {
        if let Some(progress) = &self.setup.progress {
            progress(message);
        }
    }

    fn provider(&mut self) -> Result<&mut Box<dyn SandboxProvider>> {
        if self.provider.is_none() {
            let mut provider = self.service.connect(&self.setup.inherited, self.tokio.handle().clone())?;
            provider.watch_cancel(self.setup.cancel.clone());
            self.provider = Some(provider);
        }
        self.provider.as_mut().ok_or_else(|| EngineError::message("The sandbox provider is not available"))
    }

    fn sandbox(&self) -> Result<&dyn Sandbox> {
        self.sandbox.as_deref().ok_or_else(|| EngineError::message("Runtime preflight must succeed before launch"))
    }

    /// The image texts name (`Git is unavailable in E2B image <this>`).
    fn image_name(&self) -> String {
        match (&self.template, &self.request) {
            (Some(template), _) => template.image.clone(),
            (None, Some(request)) => match &request.source {
                TemplateSource::Image(reference) => reference.clone(),
                TemplateSource::Dockerfile { dockerfile, .. } => dockerfile.display().to_string(),
            },
            (None, None) => String::new(),
        }
    }

    /// Runs an engine command in the sandbox; a non-zero exit is an error quoting its output.
    fn run_checked(&self, what: &str, command: &str, user: User) -> Result<CommandOutput> {
        let options = CommandOptions { user, timeout: Some(COMMAND_TIMEOUT), ..CommandOptions::default() };
        let output = self.sandbox()?.run(command, &options)?;
        if output.success() {
            return Ok(output);
        }
        let mut detail = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        if detail.is_empty() {
            detail = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        }
        let detail: String = detail.chars().take(500).collect();
        Err(EngineError::message(format!("{what} (exit {}): {detail}", output.exit_code)))
    }

    /// The template request for the package's entry of this runtime.
    fn template_request(&self, package: &Package) -> Result<TemplateRequest> {
        let config = package.manifest.runtime(self.name()).ok_or_else(|| {
            EngineError::message(format!("Workbench {} does not declare runtime: {}", package.name, self.name()))
        })?;
        let source = match &config.image {
            Some(Image::Published(reference)) => TemplateSource::Image(reference.value.clone()),
            Some(Image::Build { build, context }) => {
                let dockerfile = wb_manifest::normalize(&package.package_dir.join(&build.value));
                let context = wb_manifest::normalize(
                    &package.package_dir.join(context.as_ref().map_or(".", |c| c.value.as_str())),
                );
                for path in [&dockerfile, &context] {
                    let real = std::fs::canonicalize(path)
                        .map_err(|e| EngineError::io(format!("cannot resolve {}", path.display()), e))?;
                    let root = std::fs::canonicalize(&package.root).unwrap_or_else(|_| package.root.clone());
                    if !real.starts_with(&root) {
                        return Err(EngineError::message(format!(
                            "{} resolves outside the repository: {}",
                            config.image_label,
                            path.display()
                        )));
                    }
                }
                TemplateSource::Dockerfile { dockerfile, context }
            }
            None => return Err(EngineError::message(format!("{} is required", config.image_label))),
        };
        Ok(TemplateRequest { workbench: package.name.clone(), version: package.version.clone(), source, setup: None })
    }

    /// The sandbox this runtime created (reports show it), or `None` before `provision`.
    pub fn sandbox_info(&self) -> Option<SandboxInfo> {
        self.info.clone()
    }
}

impl Drop for RemoteRuntime {
    fn drop(&mut self) {
        let _ = Runtime::cleanup(self);
    }
}

impl Runtime for RemoteRuntime {
    fn name(&self) -> &'static str {
        self.service.name()
    }

    fn placement(&self) -> Placement {
        Placement::Sandbox
    }

    fn check_requirements(&self, package: &Package, _allow_unchecked_gpu: bool) -> Result<RequirementReport> {
        self.requirements_before(package)
    }

    fn prepare(&mut self, package: &Package, mounts: Vec<Mount>) -> Result<Preparation> {
        self.mounts = mounts;
        self.workbench = package.name.clone();
        let requirements = &package.manifest.requirements;
        self.deferred = [
            requirements.cpu.map(Deferred::Cpu),
            requirements.memory_gb.map(Deferred::MemoryGb),
            requirements.disk_gb.map(Deferred::DiskGb),
        ]
        .into_iter()
        .flatten()
        .collect();
        self.report = self.check_requirements(package, true)?;
        self.resources = self.service.resource_request(requirements);
        let text = wb_syntax::js_number_to_string;
        let requested = [
            self.resources.cpu.map(|c| format!("cpu {c}")),
            self.resources.memory_gb.map(|m| format!("memory {} GiB", text(m))),
            self.resources.disk_gb.map(|d| format!("disk {} GiB", text(d))),
        ];
        self.report.applied.extend(requested.into_iter().flatten().map(|value| format!("{value} requested")));
        self.assets = package
            .manifest
            .instructions
            .as_ref()
            .map(|i| vec![format!("{}/{}", paths::PACKAGE, i.value.trim_start_matches("./"))])
            .unwrap_or_default();
        let request = self.template_request(package);
        let plan_only = self.setup.plan_only;
        let provider = self.provider()?;
        provider.check_credentials()?;
        let request = request?;
        if plan_only {
            let plan = plan(&provider.calls(&request));
            self.request = Some(request);
            return Ok(Preparation { image: None, plan });
        }
        let progress = self.setup.progress.clone();
        let report = move |line: &str| {
            if let Some(progress) = &progress {
                progress(line);
            }
        };
        let provider = self.provider()?;
        let template = provider.prepare_template(&request, &report)?;
        self.report_progress(&format!(
            "{} template {} ({})",
            self.title(),
            template.reference,
            if template.cached { "cached" } else { "built" }
        ));
        let image = super::ImageInfo {
            reference: template.reference.clone(),
            id: template.reference.clone(),
            built: matches!(request.source, TemplateSource::Dockerfile { .. }),
            cached: template.cached,
        };
        self.template = Some(template);
        self.request = Some(request);
        Ok(Preparation { image: Some(image), plan: Vec::new() })
    }

    fn provision(&mut self, run_id: &str) -> Result<Provision> {
        let template =
            self.template.clone().ok_or_else(|| EngineError::message("The sandbox template is not prepared"))?;
        self.run_id = Some(run_id.to_owned());
        let labels = labels(run_id, &self.workbench);
        let spec = SandboxSpec {
            template: template.reference.clone(),
            labels: labels.clone(),
            lease: self.lease,
            resources: self.resources.clone(),
        };
        self.report_progress(&format!("Creating {} sandbox from {}", self.title(), template.reference));
        let created = self.provider()?.create(&spec);
        let sandbox = match created {
            Ok(sandbox) => sandbox,
            Err(error) => {
                // A create that failed late may still have made a sandbox: this run's are reclaimed by label.
                if let Ok(provider) = self.provider() {
                    let _ = provider.reclaim(&labels);
                }
                return Err(error);
            }
        };
        self.info = Some(SandboxInfo {
            provider: self.name().to_owned(),
            id: sandbox.id().to_owned(),
            template: template.reference.clone(),
            destroyed: false,
        });
        self.report_progress(&format!("{} sandbox {} is running", self.title(), sandbox.id()));
        self.sandbox = Some(std::sync::Arc::from(sandbox));
        let resources = self.sandbox()?.resources().unwrap_or_default();
        let requirements = self.check_deferred(resources)?;
        self.stage()?;
        let working_copies = self.copies.iter().map(|c| (c.host.clone(), c.path().to_path_buf())).collect();
        Ok(Provision { requirements: Some(requirements), working_copies })
    }

    fn preflight(&self, request: &PreflightRequest<'_>) -> Result<Preflight> {
        self.preflight_in_sandbox(request.runner, request.executable, request.tools)
    }

    fn launch(&mut self, translation: &Translation) -> Result<Launched> {
        let mut env =
            BTreeMap::from([("HOME".to_owned(), paths::STATE.to_owned()), ("TMPDIR".to_owned(), "/tmp".to_owned())]);
        env.extend(translation.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        // No service's key enters a sandbox, even when a package declares its name.
        let names: Vec<&str> =
            super::services().into_iter().flat_map(|service| service.credential_keys().iter().copied()).collect();
        let keys: Vec<&str> = names
            .iter()
            .filter_map(|name| self.setup.inherited.get(*name))
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .collect();
        env.retain(|name, value| !names.contains(&name.as_str()) && !keys.contains(&value.trim()));
        let mut words = translation.command.clone();
        if let (Some(first), Ok(found)) = (words.first_mut(), self.runner_path.lock())
            && let Some((name, path)) = found.as_ref().filter(|(name, _)| name == first)
        {
            let _ = name;
            *first = path.clone();
        }
        let cwd = translation.cwd.display().to_string();
        // Stdin is empty and closed: a runner that reads piped stdin (OpenCode appends it to the prompt) must not
        // wait on a service's session input, which Daytona never closes.
        let command = format!("cd {} && exec {} < /dev/null", quote(&cwd), shell::command_line(&words));
        let reattachable = self.setup.adoptable;
        let options = CommandOptions { cwd: Some(cwd), env, user: User::Default, timeout: None, reattachable };
        let process = self.sandbox()?.start(&command, &options)?;
        self.record_attachment(process.handle.clone());
        self.keep_alive();
        Ok(Launched {
            stdin: None,
            stdout: Some(process.stdout),
            stderr: Some(process.stderr),
            server: None,
            handle: Handle::Remote { exit: process.exit, killer: process.killer },
        })
    }

    fn cancel(&mut self, launched: &mut Launched) {
        if let Handle::Remote { killer, .. } = &mut launched.handle {
            killer.kill();
        }
    }

    fn retrieve(&mut self, outbox: &Path) -> Result<()> {
        // Collection runs even after a cancelled runner: from here on the provider stops watching the flag.
        if let Some(provider) = &mut self.provider {
            provider.watch_cancel(None);
        }
        collect::retrieve(self, outbox)
    }

    fn retrieve_outbox(&mut self, outbox: &Path) -> Result<()> {
        collect::turn_outbox(self, outbox)
    }

    fn retrieve_stage(&mut self, relative: &str, into: &Path) -> Result<()> {
        collect::turn_stage(self, relative, into)
    }

    fn adopt(&mut self, package: &Package, run_id: &str) -> Result<(Provision, Launched)> {
        self.adopt_run(&package.name, run_id)
    }

    fn keep_for_recovery(&mut self, reason: &str) -> Option<super::Kept> {
        self.keep(reason)
    }

    fn sandbox_report(&self) -> Option<SandboxInfo> {
        self.info.clone()
    }

    fn cleanup(&mut self) -> Result<()> {
        self.keeper = None;
        let Some(sandbox) = self.sandbox.take() else { return Ok(()) };
        let id = sandbox.id().to_owned();
        match sandbox.destroy() {
            Ok(()) => {
                if let Some(info) = &mut self.info {
                    info.destroyed = true;
                }
                self.report_progress(&format!("{} sandbox {id} destroyed", self.title()));
                Ok(())
            }
            Err(error) => {
                // Kept for another attempt: a later cleanup (or drop) tries again.
                self.sandbox = Some(sandbox);
                Err(error)
            }
        }
    }
}

/// A dry run's plan: each step of a remote run once, with the service's calls for it.
fn plan(calls: &Calls) -> Vec<String> {
    let mut plan: Vec<String> = calls.template.iter().map(|call| format!("template: {call}")).collect();
    if calls.create.is_empty() {
        // The template could not even be named: the plan stops there.
        return plan;
    }
    plan.extend(calls.create.iter().map(|call| format!("create: {call}")));
    plan.push(format!(
        "stage: the workspaces, the package (read-only), the runner's configuration and an empty outbox, as \
         archives ({}), unpacked ({}); git init and a baseline commit",
        calls.upload, calls.run
    ));
    plan.push(format!("preflight: command -v git, tar (with --null), the runner and every tool ({})", calls.run));
    plan.extend(calls.start.iter().map(|call| format!("launch: {call}")));
    plan.push(format!(
        "collect: git diff --cached against the baseline and the outbox, as archives ({}; {})",
        calls.run, calls.download
    ));
    plan.push(format!("destroy: {}", calls.destroy));
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease_of(value: &str) -> std::result::Result<Duration, String> {
        lease(&BTreeMap::from([("WB_SANDBOX_LEASE".to_owned(), value.to_owned())])).map_err(|e| e.to_string())
    }

    #[test]
    fn the_lease_takes_the_one_duration_grammar() {
        assert_eq!(lease(&BTreeMap::new()).ok(), Some(LEASE));
        assert_eq!(lease_of("  "), Ok(LEASE));
        assert_eq!(lease_of("90"), Ok(Duration::from_secs(90)));
        assert_eq!(lease_of("20m"), Ok(Duration::from_secs(1200)));
        assert_eq!(lease_of("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(lease_of("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(
            lease_of("soon").unwrap_err(),
            "invalid value 'soon' for WB_SANDBOX_LEASE: expected a duration such as 90s, 30m, 2h, 1h30m, 7d or 2w \
             (a bare number is seconds) (see docs/runs.md#durations)"
        );
        for short in ["0", "0s", "500ms"] {
            let error = lease_of(short).unwrap_err();
            assert!(error.contains("a lease must be at least 1s"), "{short}: {error}");
        }
    }
}
