//! What the remote runtime asks of Daytona as a kind of service: its key, its class policy (a class decides
//! the os and whether there is a GPU; only `linux` is available), and the resources it applies at create.

use super::Daytona;
use crate::error::Result;
use crate::requirements::{RequirementReport, Unmet};
use crate::runtime::remote::provider::{ProviderEnv, ResourceRequest, SandboxProvider, Service};
use crate::source::Package;

/// The Daytona service.
pub struct DaytonaService;

/// The registry's entry for Daytona.
pub static SERVICE: DaytonaService = DaytonaService;

impl Service for DaytonaService {
    fn name(&self) -> &'static str {
        "daytona"
    }

    fn title(&self) -> &'static str {
        "Daytona"
    }

    fn credential_keys(&self) -> &'static [&'static str] {
        &["DAYTONA_API_KEY"]
    }

    fn judge_requirements(&self, package: &Package) -> std::result::Result<RequirementReport, Unmet> {
        let requirements = &package.manifest.requirements;
        let class = package.manifest.runtime("daytona").and_then(|c| c.class.as_ref()).map(|c| c.value.clone());
        let Some(class) = class else {
            return Err(Unmet("the daytona runtime declares no class".to_owned()));
        };
        let os = match class.as_str() {
            "windows" => "windows",
            "macos" => "macos",
            _ => "linux",
        };
        if let Some(wanted) = &requirements.os
            && !wanted.iter().any(|o| o == os)
        {
            return Err(Unmet(format!(
                "the {class} class provides {os} but the Workbench requires {}",
                wanted.join(" or ")
            )));
        }
        if class == "gpu" && !requirements.gpu {
            return Err(Unmet("the gpu class requires gpu: true in requirements".to_owned()));
        }
        if requirements.gpu && class != "gpu" {
            return Err(Unmet(format!(
                "requirements.gpu is true but the {class} class has no GPU. Use the gpu class."
            )));
        }
        if class != "linux" {
            return Err(Unmet(format!("class {class} is not available yet")));
        }
        let mut report = RequirementReport::default();
        report.checked.push(format!("class {class} provides {os}"));
        Ok(report)
    }

    /// Daytona applies the requested cpu, memory and disk when it creates the sandbox.
    fn resource_request(&self, requirements: &wb_manifest::Requirements) -> ResourceRequest {
        ResourceRequest { cpu: requirements.cpu, memory_gb: requirements.memory_gb, disk_gb: requirements.disk_gb }
    }

    fn connect(&self, env: &ProviderEnv, handle: tokio::runtime::Handle) -> Result<Box<dyn SandboxProvider>> {
        Ok(Box::new(Daytona::new(env, handle)?))
    }
}
