//! `smoke`: checks that each package can start here (runtime, runner, tools, environment, authentication,
//! requirements) without a model request, as typed reports the CLI prints and the server sends.

use serde::Serialize;
use wb_manifest::{FileSystem, ModelCatalog};

use super::prepare::{Prepared, prepare_package};
use super::{Options, Purpose, WorkspaceReport};
use crate::error::Result;
use crate::requirements::RequirementReport;
use crate::routing::Authentication;
use crate::source;

/// How a package's smoke ended (exit codes: ready 0, needs-auth 3, failed 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmokeStatus {
    Ready,
    /// Everything is in place except a route with credentials.
    NeedsAuth,
    Failed,
}

impl SmokeStatus {
    /// The wire name (`ready`, `needs-auth`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            SmokeStatus::Ready => "ready",
            SmokeStatus::NeedsAuth => "needs-auth",
            SmokeStatus::Failed => "failed",
        }
    }
}

/// The runner smoke found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SmokeRunner {
    pub name: String,
    /// Where preflight found the executable (inside the runtime).
    pub path: Option<String>,
    /// The installed version, read from its npm package on the host (never inside a container).
    pub version: Option<String>,
    /// Whether the adapter is verified against `version`.
    pub verified: Option<bool>,
}

/// A declared tool and where preflight found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SmokeTool {
    pub name: String,
    pub path: String,
}

/// Why a package's smoke failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SmokeError {
    /// Always `smoke_failed` (the reference's code).
    pub code: &'static str,
    pub message: String,
}

/// The result of smoking one package (`SmokeReportData` of the reference).
#[derive(Clone, Debug, Serialize)]
pub struct Smoke {
    pub status: SmokeStatus,
    pub workbench: String,
    pub version: String,
    pub runtime: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<SmokeRunner>,
    pub tools: Vec<SmokeTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirements: Option<RequirementReport>,
    pub workspaces: Vec<WorkspaceReport>,
    /// `"host"` when the run is granted the host's Docker engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_engine: Option<String>,
    pub warnings: Vec<String>,
    /// Optional MCPs left out because a variable they reference is not set (their warnings say so too).
    #[serde(skip)]
    pub disabled_optional_mcps: Vec<String>,
    /// The sandbox a remote runtime created for the check (and destroyed: `destroyed` says whether it was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::runtime::remote::SandboxInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<SmokeError>,
}

/// Checks that each package can start here, without a model request.
pub fn smoke(fs: &dyn FileSystem, options: &Options, catalog: &ModelCatalog) -> Result<Vec<Smoke>> {
    let packages =
        source::resolve(fs, &options.request.settings.source, &options.request.settings.cwd, catalog, false)?;
    let mut reports = Vec::new();
    for package in packages {
        let (name, version) = match &package {
            Ok(package) => (package.name.clone(), package.version.clone()),
            Err(_) => (String::new(), String::new()),
        };
        let outcome = package.and_then(|package| prepare_package(package, options, catalog, Purpose::Smoke));
        let report = match outcome {
            Ok(mut prepared) => {
                let mut report = ready_report(&prepared);
                report.warnings.extend(wb_outcomes::retention::quota_warning(&options.workbench_home()));
                prepared.cleanup()?;
                report.sandbox = prepared.runtime.sandbox_report();
                report
            }
            Err(error) => Smoke {
                status: SmokeStatus::Failed,
                workbench: name,
                version,
                runtime: options.request.settings.runtime.clone().unwrap_or_default(),
                runner: None,
                tools: Vec::new(),
                authentication: None,
                requirements: None,
                workspaces: Vec::new(),
                docker_engine: None,
                warnings: Vec::new(),
                disabled_optional_mcps: Vec::new(),
                sandbox: None,
                error: Some(SmokeError { code: "smoke_failed", message: error.to_string() }),
            },
        };
        reports.push(report);
    }
    Ok(reports)
}

/// The report of a package that prepared: ready, or needing authentication.
fn ready_report(prepared: &Prepared) -> Smoke {
    let status = if prepared.authentication.ready { SmokeStatus::Ready } else { SmokeStatus::NeedsAuth };
    let mut warnings = prepared.warnings.clone();
    let verified = prepared.adapter.verified_versions();
    // Read where the runner is: on the host, or inside the image (a sandbox's is not known).
    let installed = prepared.preflight.runner_version.clone();
    if let Some(version) = installed.as_deref().filter(|v| !verified.contains(v)) {
        warnings.push(format!(
            "{} {version} is not a version wb-lsp is verified against ({}): its configuration or events may differ",
            prepared.adapter.executable(),
            verified.join(", ")
        ));
    }
    if !prepared.authentication.ready
        && let Some(instruction) = &prepared.authentication.instruction
    {
        warnings.push(instruction.clone());
    }
    Smoke {
        status,
        workbench: prepared.package.name.clone(),
        version: prepared.package.version.clone(),
        runtime: prepared.runtime.name().to_owned(),
        runner: Some(SmokeRunner {
            name: prepared.adapter.name().to_owned(),
            path: prepared.preflight.runner.as_ref().map(|p| p.display().to_string()),
            verified: installed.as_deref().map(|v| verified.contains(&v)),
            version: installed,
        }),
        tools: prepared
            .preflight
            .tools
            .iter()
            .map(|(name, path)| SmokeTool { name: name.clone(), path: path.display().to_string() })
            .collect(),
        authentication: Some(prepared.authentication.clone()),
        requirements: Some(prepared.requirements.clone()),
        workspaces: WorkspaceReport::list(&prepared.workspaces),
        docker_engine: (prepared.runtime.name() == "docker"
            && prepared.package.manifest.runtime("docker").is_some_and(|r| r.host_engine))
        .then(|| "host".to_owned()),
        warnings,
        // The runner's adapter disables MCPs of its own (with their own warnings); those are not optional ones.
        disabled_optional_mcps: prepared
            .disabled_mcps
            .iter()
            .filter(|name| !prepared.translation.disabled_mcps.contains(name))
            .cloned()
            .collect(),
        sandbox: None,
        error: None,
    }
}
