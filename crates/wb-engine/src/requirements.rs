//! Requirements checked against the selected runtime before it is prepared (engine facts b.6). What a runtime
//! cannot verify is reported as unchecked, never as satisfied.

use serde::Serialize;
use wb_manifest::Requirements;

use crate::error::{EngineError, Result};

/// What the requirements check did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RequirementReport {
    pub checked: Vec<String>,
    pub applied: Vec<String>,
    pub unchecked: Vec<String>,
}

/// Why a runtime cannot meet a package's requirements: the detail, which follows "Workbench … cannot run on the …
/// runtime: " in the refusal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unmet(pub String);

/// Facts about the place a runtime runs, as far as it knows them.
#[derive(Clone, Debug, PartialEq)]
pub struct HostFacts {
    pub os: String,
    pub arch: String,
    pub cpus: u64,
    /// Total memory in bytes, when known.
    pub memory_bytes: Option<u64>,
}

impl HostFacts {
    /// This machine.
    pub fn local() -> HostFacts {
        // Rust's names for these match the standard's (`linux`, `macos`, `windows`).
        let os = std::env::consts::OS;
        let arch = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            other => other,
        };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        HostFacts { os: os.to_owned(), arch: arch.to_owned(), cpus, memory_bytes: total_memory() }
    }
}

fn total_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn format_number(value: f64) -> String {
    wb_syntax::js_number_to_string(value)
}

/// Checks requirements on the local runtime.
pub fn check_local(
    workbench: &str,
    requirements: &Requirements,
    host: &HostFacts,
    allow_unchecked_gpu: bool,
) -> Result<RequirementReport> {
    let fail = |detail: String| {
        EngineError::message(format!("Workbench {workbench} cannot run on the local runtime: {detail}"))
    };
    let mut report = RequirementReport::default();
    if let Some(os) = &requirements.os {
        if !os.contains(&host.os) {
            return Err(fail(format!("requires os {} but this host is {}", os.join(" or "), host.os)));
        }
        report.checked.push(format!("os {}", host.os));
    }
    if let Some(arch) = &requirements.arch {
        if !arch.contains(&host.arch) {
            return Err(fail(format!("requires arch {} but this host is {}", arch.join(" or "), host.arch)));
        }
        report.checked.push(format!("arch {}", host.arch));
    }
    if let Some(cpu) = requirements.cpu {
        if host.cpus < cpu {
            return Err(fail(format!("requires {cpu} CPUs but this host has {}", host.cpus)));
        }
        report.checked.push(format!("cpu {}", host.cpus));
    }
    if let Some(memory) = requirements.memory_gb {
        match host.memory_bytes {
            Some(bytes) => {
                #[allow(clippy::cast_precision_loss)]
                let gib = (bytes as f64 / (1024.0 * 1024.0 * 1024.0)).round();
                if gib < memory {
                    return Err(fail(format!(
                        "requires {} GiB of memory but this host has {} GiB",
                        format_number(memory),
                        format_number(gib)
                    )));
                }
                report.checked.push(format!("memory {} GiB", format_number(gib)));
            }
            None => report.unchecked.push("memory_gb is not checked on the local runtime".to_owned()),
        }
    }
    if requirements.disk_gb.is_some() {
        report.unchecked.push("disk_gb is not checked on the local runtime".to_owned());
    }
    if requirements.gpu {
        if !allow_unchecked_gpu {
            return Err(fail(
                "GPU requirements are not checked on the local runtime. Pass --allow-unchecked-gpu to run anyway."
                    .to_owned(),
            ));
        }
        report.unchecked.push("gpu is not checked on the local runtime".to_owned());
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostFacts {
        HostFacts { os: "linux".into(), arch: "x64".into(), cpus: 2, memory_bytes: Some(24 * 1024 * 1024 * 1024) }
    }

    #[test]
    fn texts() {
        let requirements = Requirements { os: Some(vec!["macos".into(), "windows".into()]), ..Requirements::default() };
        let error = check_local("demo", &requirements, &host(), false).err().map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("Workbench demo cannot run on the local runtime: requires os macos or windows but this host is linux")
        );
        let requirements = Requirements { cpu: Some(4), ..Requirements::default() };
        let error = check_local("demo", &requirements, &host(), false).err().map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("Workbench demo cannot run on the local runtime: requires 4 CPUs but this host has 2")
        );
        let requirements = Requirements { memory_gb: Some(32.0), ..Requirements::default() };
        let error = check_local("demo", &requirements, &host(), false).err().map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("Workbench demo cannot run on the local runtime: requires 32 GiB of memory but this host has 24 GiB")
        );
        let requirements = Requirements { gpu: true, ..Requirements::default() };
        assert!(check_local("demo", &requirements, &host(), false).is_err());
        let report = check_local(
            "demo",
            &Requirements { gpu: true, disk_gb: Some(5.0), cpu: Some(1), ..Requirements::default() },
            &host(),
            true,
        );
        let report = report.unwrap_or_default();
        assert_eq!(report.checked, vec!["cpu 2"]);
        assert_eq!(
            report.unchecked,
            vec!["disk_gb is not checked on the local runtime", "gpu is not checked on the local runtime"]
        );
    }
}
