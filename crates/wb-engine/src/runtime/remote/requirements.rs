//! The requirements of a remote run: what can be judged before anything is created (the os, GPU, Daytona's
//! class), and what only the sandbox can answer (cpu, memory and disk, against what the service reports;
//! a value it does not report is listed as unchecked, never passed).

use super::RemoteRuntime;
use super::provider::Resources;
use crate::error::{EngineError, Result};
use crate::requirements::RequirementReport;
use crate::source::Package;

/// A requirement checked only once the sandbox exists (against what the service reports).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Deferred {
    Cpu(u64),
    MemoryGb(f64),
    DiskGb(f64),
}

impl RemoteRuntime {
    /// The checks made before anything is created.
    pub(super) fn requirements_before(&self, package: &Package) -> Result<RequirementReport> {
        let requirements = &package.manifest.requirements;
        let fail = |detail: String| {
            EngineError::message(format!(
                "Workbench {} cannot run on the {} runtime: {detail}",
                package.name, self.name
            ))
        };
        let mut report = RequirementReport::default();
        if self.name == "daytona" {
            let config = package.manifest.runtime("daytona");
            let class = config.and_then(|c| c.class.as_ref()).map(|c| c.value.clone());
            let Some(class) = class else {
                return Err(fail("the daytona runtime declares no class".to_owned()));
            };
            let os = match class.as_str() {
                "windows" => "windows",
                "macos" => "macos",
                _ => "linux",
            };
            if let Some(wanted) = &requirements.os
                && !wanted.iter().any(|o| o == os)
            {
                return Err(fail(format!(
                    "the {class} class provides {os} but the Workbench requires {}",
                    wanted.join(" or ")
                )));
            }
            if class == "gpu" && !requirements.gpu {
                return Err(fail("the gpu class requires gpu: true in requirements".to_owned()));
            }
            if requirements.gpu && class != "gpu" {
                return Err(fail(format!(
                    "requirements.gpu is true but the {class} class has no GPU. Use the gpu class."
                )));
            }
            if class != "linux" {
                return Err(fail(format!("class {class} is not available yet")));
            }
            report.checked.push(format!("class {class} provides {os}"));
        } else {
            if requirements.gpu {
                return Err(fail(format!("GPU requirements are not supported on the {} runtime", self.name)));
            }
            if let Some(os) = &requirements.os {
                if !os.iter().any(|o| o == "linux") {
                    return Err(fail(format!(
                        "requires os {} but the {} runtime provides linux",
                        os.join(" or "),
                        self.name
                    )));
                }
                report.checked.push("os linux".to_owned());
            }
        }
        if requirements.arch.is_some() {
            report.unchecked.push(format!("arch is not checked on the {} runtime", self.name));
        }
        Ok(report)
    }

    /// Checks the requirements deferred until the sandbox exists, against what the service reports.
    pub(super) fn check_deferred(&mut self, resources: Resources) -> Result<()> {
        let mut report = self.report.clone();
        let fail = |detail: String| {
            EngineError::message(format!(
                "Workbench {} cannot run on the {} runtime: {detail}",
                self.workbench, self.name
            ))
        };
        for requirement in &self.deferred {
            match *requirement {
                Deferred::Cpu(cpu) => match resources.cpu {
                    Some(have) if have < cpu => {
                        return Err(fail(format!("requires {cpu} CPUs but the sandbox has {have}")));
                    }
                    Some(have) => report.checked.push(format!("cpu {have}")),
                    None => report.unchecked.push(format!("cpu is not checked on the {} runtime", self.name)),
                },
                Deferred::MemoryGb(gb) => {
                    self.check_size("memory", "memory_gb", gb, resources.memory_mib, &mut report).map_err(fail)?;
                }
                Deferred::DiskGb(gb) => {
                    self.check_size("disk", "disk_gb", gb, resources.disk_mib, &mut report).map_err(fail)?;
                }
            }
        }
        self.checked_report = Some(report);
        Ok(())
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
    ) -> std::result::Result<(), String> {
        let text = wb_syntax::js_number_to_string;
        let Some(mib) = reported_mib else {
            report.unchecked.push(format!("{field} is not checked on the {} runtime", self.name));
            return Ok(());
        };
        #[allow(clippy::cast_precision_loss)]
        let mib = mib as f64;
        let have = (mib / 102.4).round() / 10.0;
        if mib < gb * 1024.0 {
            return Err(format!("requires {} GiB of {what} but the sandbox has {} GiB", text(gb), text(have)));
        }
        report.checked.push(format!("{what} {} GiB", text(have)));
        Ok(())
    }
}
