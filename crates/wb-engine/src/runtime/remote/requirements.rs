//! The requirements of a remote run: what can be judged before anything is created (the service's own
//! policy, [`super::provider::Service::judge_requirements`]), and what only the sandbox can answer (cpu,
//! memory and disk, against what the service reports; a value it does not report is listed as unchecked,
//! never passed).

use super::RemoteRuntime;
use super::provider::Resources;
use crate::error::{EngineError, Result};
use crate::requirements::{RequirementReport, Unmet};
use crate::source::Package;
use wb_manifest::Requirements;

/// A requirement checked only once the sandbox exists (against what the service reports).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Deferred {
    Cpu(u64),
    MemoryGb(f64),
    DiskGb(f64),
}

/// The policy of a service whose sandboxes are Linux without a GPU (E2B): `os` must allow linux, `gpu` must
/// be false. `Err`: the detail of the refusal.
pub fn linux_without_gpu(runtime: &str, requirements: &Requirements) -> std::result::Result<RequirementReport, Unmet> {
    let mut report = RequirementReport::default();
    if requirements.gpu {
        return Err(Unmet(format!("GPU requirements are not supported on the {runtime} runtime")));
    }
    if let Some(os) = &requirements.os {
        if !os.iter().any(|o| o == "linux") {
            return Err(Unmet(format!("requires os {} but the {runtime} runtime provides linux", os.join(" or "))));
        }
        report.checked.push("os linux".to_owned());
    }
    Ok(report)
}

impl RemoteRuntime {
    /// The checks made before anything is created: the service's policy, then what no service checks.
    pub(super) fn requirements_before(&self, package: &Package) -> Result<RequirementReport> {
        let mut report = self.service.judge_requirements(package).map_err(|detail| {
            EngineError::message(format!(
                "Workbench {} cannot run on the {} runtime: {detail}",
                package.name,
                self.name()
            ))
        })?;
        if package.manifest.requirements.arch.is_some() {
            report.unchecked.push(format!("arch is not checked on the {} runtime", self.name()));
        }
        Ok(report)
    }

    /// Checks the requirements deferred until the sandbox exists, against what the service reports.
    pub(super) fn check_deferred(&self, resources: Resources) -> Result<RequirementReport> {
        let mut report = self.report.clone();
        let fail = |Unmet(detail): Unmet| {
            EngineError::message(format!(
                "Workbench {} cannot run on the {} runtime: {detail}",
                self.workbench,
                self.name()
            ))
        };
        for requirement in &self.deferred {
            match *requirement {
                Deferred::Cpu(cpu) => match resources.cpu {
                    Some(have) if have < cpu => {
                        return Err(fail(Unmet(format!("requires {cpu} CPUs but the sandbox has {have}"))));
                    }
                    Some(have) => report.checked.push(format!("cpu {have}")),
                    None => report.unchecked.push(format!("cpu is not checked on the {} runtime", self.name())),
                },
                Deferred::MemoryGb(gb) => {
                    self.check_size("memory", "memory_gb", gb, resources.memory_mib, &mut report).map_err(fail)?;
                }
                Deferred::DiskGb(gb) => {
                    self.check_size("disk", "disk_gb", gb, resources.disk_mib, &mut report).map_err(fail)?;
                }
            }
        }
        Ok(report)
    }

    /// A size requirement (`gb` GiB of `what`) against what the sandbox reports (MiB), compared exactly; the
    /// report shows it in GiB to one decimal. `Err`: the detail of the refusal.
    fn check_size(
        &self,
        what: &str,
        field: &str,
        gb: f64,
        reported_mib: Option<u64>,
        report: &mut RequirementReport,
    ) -> std::result::Result<(), Unmet> {
        let text = wb_syntax::js_number_to_string;
        let Some(mib) = reported_mib else {
            report.unchecked.push(format!("{field} is not checked on the {} runtime", self.name()));
            return Ok(());
        };
        #[allow(clippy::cast_precision_loss)]
        let mib = mib as f64;
        let have = (mib / 102.4).round() / 10.0;
        if mib < gb * 1024.0 {
            return Err(Unmet(format!("requires {} GiB of {what} but the sandbox has {} GiB", text(gb), text(have))));
        }
        report.checked.push(format!("{what} {} GiB", text(have)));
        Ok(())
    }
}
