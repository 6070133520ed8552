//! Resolving a SOURCE (`path` or `path#selector`) into checked packages.

use std::path::{Path, PathBuf};

use wb_manifest::{FileSystem, Manifest, ModelCatalog, PackageReport, Severity, Target};
use wb_syntax::{LineIndex, PositionEncoding};

use crate::error::{EngineError, Result};

/// A package that passed every check, ready to run.
#[derive(Clone, Debug)]
pub struct Package {
    pub manifest_path: PathBuf,
    pub package_dir: PathBuf,
    /// The repository root (the parent of `.workbenches`).
    pub root: PathBuf,
    pub manifest: Manifest,
    pub name: String,
    pub version: String,
    /// `source#dir` when the source held several packages.
    pub reference: String,
}

impl Package {
    /// The bare agent of this package (a trial's `plain` arm): its runner, model, tools, variables,
    /// workspaces, requirements and runtimes, without the instructions, skills, MCPs and runner configuration
    /// that make it this package.
    pub fn strip_to_bare(&mut self) {
        self.manifest.instructions = None;
        self.manifest.skills.clear();
        self.manifest.mcps.clear();
        self.manifest.runner_config = None;
    }
}

pub use wb_manifest::selector::split_source;
use wb_manifest::selector::{NO_MATCH, dir_name, selects, source_path};

/// Resolves every package a source names. With `single`, a repository holding several packages needs a
/// selector (dry-run and run work on one package; smoke checks them all).
pub fn resolve(
    fs: &dyn FileSystem,
    source: &str,
    cwd: &Path,
    catalog: &ModelCatalog,
    single: bool,
) -> Result<Vec<Result<Package>>> {
    let (path_text, selector) = split_source(source);
    let path = source_path(path_text, cwd);
    let manifests: Vec<PathBuf> = match wb_manifest::discover(fs, &path) {
        Target::Missing(path) => {
            return Err(EngineError::message(format!("Workbench path does not exist: {}", path.display())));
        }
        // With a selector, a directory holding no package is one where the selector picks none, as the reference
        // answers (`No matching Workbenches found` for smoke).
        Target::Empty(_) if selector.is_some() => Vec::new(),
        Target::Empty(path) => return Err(EngineError::message(format!("No Workbenches found in {}", path.display()))),
        Target::Manifest(manifest) => vec![manifest],
        Target::Packages(found) => found,
    };
    let several = manifests.len() > 1;
    let reports: Vec<PackageReport> =
        manifests.iter().map(|manifest| wb_manifest::check_package(fs, manifest, catalog)).collect();
    let selected: Vec<&PackageReport> = match selector {
        Some(selector) => {
            let found: Vec<&PackageReport> = reports.iter().filter(|r| selects(selector, r)).collect();
            match (found.is_empty(), single) {
                // One package to run: the reference names the selector; several to smoke: nothing matched.
                (true, true) => return Err(EngineError::message(format!("Workbench not found: {selector}"))),
                (true, false) => return Err(EngineError::message(NO_MATCH)),
                (false, _) => found,
            }
        }
        None if single && several => {
            let names: Vec<String> = reports.iter().map(dir_name).collect();
            return Err(EngineError::message(format!("Workbench selector required. Available: {}", names.join(", "))));
        }
        None => reports.iter().collect(),
    };
    if selected.is_empty() {
        return Err(EngineError::message(NO_MATCH));
    }
    Ok(selected
        .into_iter()
        .map(|report| {
            let reference = if several { format!("{path_text}#{}", dir_name(report)) } else { source.to_owned() };
            package_of(report, reference)
        })
        .collect())
}

/// Turns a report into a runnable package, or the first error (the reference stops at its first problem).
pub fn package_of(report: &PackageReport, reference: String) -> Result<Package> {
    if let Some(error) = report.diagnostics.iter().find(|d| d.severity == Severity::Error) {
        let text = report.sources.get(&error.path).map(|t| t.to_string()).unwrap_or_default();
        let position = LineIndex::new(&text).line_col(error.range.start, PositionEncoding::Utf32);
        return Err(EngineError::Invalid {
            message: error.message.clone(),
            path: error.path.clone(),
            line: position.line + 1,
            column: position.col + 1,
        });
    }
    let manifest = report.manifest.clone().ok_or_else(|| {
        EngineError::message(format!("Workbench manifest does not exist: {}", report.manifest_path.display()))
    })?;
    let root = wb_manifest::repository_root(&report.manifest_path)
        .ok_or_else(|| EngineError::message("Workbench must live beneath a .workbenches directory"))?;
    let name = manifest.name.as_ref().map(|n| n.value.clone()).unwrap_or_default();
    let version = manifest.version.as_ref().map(|v| v.value.clone()).unwrap_or_default();
    Ok(Package {
        manifest_path: report.manifest_path.clone(),
        package_dir: report.package_dir.clone(),
        root,
        manifest,
        name,
        version,
        reference,
    })
}
