//! The checking entry points shared by the CLI and the language server: discovery of packages under a path,
//! and the full check of one package (location, YAML, manifest rules, package files).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wb_syntax::TextRange;

use crate::boundary::{Escape, is_pseudo};
use crate::catalog::ModelCatalog;
use crate::diagnostic::{Code, Diagnostic, Severity};
use crate::fs::{FileKind, FileSystem, ReadLimitError, normalize};
use crate::limits::MAX_MANIFEST_BYTES;
use crate::manifest::Manifest;
use crate::package::repository_root;
use one::too_large_message;

pub(crate) mod one;

/// The result of checking one package (or one path that holds none).
#[derive(Clone, Debug)]
pub struct PackageReport {
    /// The manifest file (absolute), or the path that was checked when there is no manifest.
    pub manifest_path: PathBuf,
    /// The package directory (the manifest's parent).
    pub package_dir: PathBuf,
    /// The manifest's `name`, when valid.
    pub name: Option<String>,
    pub manifest: Option<Manifest>,
    /// Sorted by file, then position.
    pub diagnostics: Vec<Diagnostic>,
    /// The text of every file a diagnostic or related location points into.
    pub sources: BTreeMap<PathBuf, Arc<str>>,
}

impl PackageReport {
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count()
    }

    pub fn warnings(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Warning).count()
    }

    pub fn is_valid(&self) -> bool {
        self.errors() == 0
    }

    /// Drops what `detail` does not keep.
    pub fn keep(&mut self, detail: Detail) {
        if detail == Detail::Full {
            return;
        }
        if let Some(manifest) = &mut self.manifest {
            *manifest = Manifest::default();
        }
        let diagnostics = &self.diagnostics;
        self.sources.retain(|path, _| {
            diagnostics.iter().any(|d| {
                d.path == *path
                    || d.related.iter().any(|related| related.path == *path)
                    || d.fixes.iter().any(|fix| fix.edits.iter().any(|edit| edit.path == *path))
            })
        });
        if self.sources.is_empty() {
            // A map emptied keeps its node; a clean package's report holds nothing.
            self.sources = BTreeMap::new();
        }
    }

    pub(crate) fn problem(path: &Path, code: Code, message: String) -> PackageReport {
        PackageReport {
            manifest_path: path.to_owned(),
            package_dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            name: None,
            manifest: None,
            diagnostics: vec![Diagnostic::new(code, path, TextRange::empty(0), message)],
            sources: BTreeMap::new(),
        }
    }
}

/// How much of each report a pass keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Everything: the manifest model (what the engine runs) and the text of every file the check read.
    Full,
    /// What `check`'s output shows: the diagnostics, the texts they point into, the name. The manifest model
    /// is emptied (its presence still says a manifest was read). A pass over thousands of packages then holds
    /// a few hundred bytes per clean package instead of its model and file texts.
    Output,
}

/// Makes a path absolute against `cwd` and normalises it lexically.
pub fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    if path.is_absolute() { normalize(path) } else { normalize(&cwd.join(path)) }
}

/// What a path given to `check` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One manifest file.
    Manifest(PathBuf),
    /// A directory with no manifests: reported as a problem of that path.
    Empty(PathBuf),
    /// A path that does not exist.
    Missing(PathBuf),
    /// Manifests found in a repository's `.workbenches` (sorted); children without a manifest are included so
    /// they are reported.
    Packages(Vec<PathBuf>),
}

/// Discovers what to check under an absolute path: a manifest file, a package directory, a `.workbenches`
/// directory, or a repository holding one.
pub fn discover(fs: &dyn FileSystem, path: &Path) -> Target {
    match fs.kind_followed(path) {
        Err(_) => Target::Missing(path.to_owned()),
        Ok(FileKind::Directory) => {
            let manifest = path.join("workbench.yml");
            if fs.kind_followed(&manifest).is_ok() {
                return Target::Manifest(manifest);
            }
            let workbenches = if path.file_name().is_some_and(|n| n == ".workbenches") {
                path.to_owned()
            } else {
                path.join(".workbenches")
            };
            match fs.read_dir(&workbenches) {
                Ok(children) => {
                    let packages: Vec<PathBuf> = children
                        .into_iter()
                        .filter(|child| matches!(fs.kind_followed(child), Ok(FileKind::Directory)))
                        .map(|child| child.join("workbench.yml"))
                        .collect();
                    if packages.is_empty() { Target::Empty(path.to_owned()) } else { Target::Packages(packages) }
                }
                Err(_) => Target::Empty(path.to_owned()),
            }
        }
        Ok(_) => Target::Manifest(path.to_owned()),
    }
}

/// Checks everything under one absolute path.
pub fn check_path(fs: &dyn FileSystem, path: &Path, catalog: &ModelCatalog) -> Vec<PackageReport> {
    check_path_keeping(fs, path, catalog, Detail::Full)
}

/// [`check_path`], keeping `detail` of each report.
pub fn check_path_keeping(
    fs: &dyn FileSystem,
    path: &Path,
    catalog: &ModelCatalog,
    detail: Detail,
) -> Vec<PackageReport> {
    match discover(fs, path) {
        Target::Missing(path) => {
            vec![PackageReport::problem(
                &path,
                Code::PathNotFound,
                format!("Workbench path does not exist: {}", path.display()),
            )]
        }
        Target::Empty(path) => {
            vec![PackageReport::problem(
                &path,
                Code::NoWorkbenches,
                format!("No Workbenches found in {}", path.display()),
            )]
        }
        Target::Manifest(manifest) => check_manifests_keeping(fs, &[manifest], catalog, detail),
        Target::Packages(manifests) => check_manifests_keeping(fs, &manifests, catalog, detail),
    }
}

/// Checks packages on every core (a work-stealing pool); the reports keep the order of `manifests`.
pub fn check_manifests(fs: &dyn FileSystem, manifests: &[PathBuf], catalog: &ModelCatalog) -> Vec<PackageReport> {
    check_manifests_keeping(fs, manifests, catalog, Detail::Full)
}

/// [`check_manifests`], keeping `detail` of each report (dropped as each package is done, so a pass never
/// holds more).
pub fn check_manifests_keeping(
    fs: &dyn FileSystem,
    manifests: &[PathBuf],
    catalog: &ModelCatalog,
    detail: Detail,
) -> Vec<PackageReport> {
    use rayon::prelude::*;
    manifests
        .par_iter()
        .map(|manifest| {
            let mut report = check_package(fs, manifest, catalog);
            report.keep(detail);
            report
        })
        .collect()
}

/// Checks one package from its (absolute) manifest path, reading through `fs`.
pub fn check_package(fs: &dyn FileSystem, manifest_path: &Path, catalog: &ModelCatalog) -> PackageReport {
    let bytes = match fs.kind_followed(manifest_path) {
        Ok(FileKind::File) => {
            if let Some(message) = manifest_escape(fs, manifest_path) {
                return PackageReport::problem(manifest_path, Code::PathOutsideBoundary, message);
            }
            match fs.read_limited(manifest_path, MAX_MANIFEST_BYTES) {
                Ok(bytes) => bytes,
                Err(ReadLimitError::TooLarge(size)) => {
                    return PackageReport::problem(manifest_path, Code::FileTooLarge, too_large_message(size));
                }
                Err(ReadLimitError::Io(error)) => {
                    let message = format!("Workbench manifest is unreadable: {}: {error}", manifest_path.display());
                    return PackageReport::problem(manifest_path, Code::IoError, message);
                }
            }
        }
        _ => {
            let message = format!("Workbench manifest does not exist: {}", manifest_path.display());
            return PackageReport::problem(manifest_path, Code::PathNotFound, message);
        }
    };
    check_manifest_bytes(fs, manifest_path, &bytes, catalog)
}

/// Why a manifest found on disk is not read: it resolves out of its repository (a `workbench.yml` linked to a
/// file elsewhere would have that file's text rendered in diagnostics), or into `/proc`, `/sys` or `/dev`.
fn manifest_escape(fs: &dyn FileSystem, manifest_path: &Path) -> Option<String> {
    let shown = manifest_path.display().to_string();
    let escape = match repository_root(manifest_path) {
        Some(root) => crate::boundary::resolve_within(fs, manifest_path, &root).err(),
        None => fs.real_path(manifest_path).ok().filter(|real| is_pseudo(real)).map(|_| Escape::Pseudo),
    };
    escape.map(|escape| escape.message("Workbench manifest", &shown, "repository"))
}

/// Checks one package whose manifest content is given (an editor buffer); other files come from `fs`.
pub fn check_manifest_bytes(
    fs: &dyn FileSystem,
    manifest_path: &Path,
    bytes: &[u8],
    catalog: &ModelCatalog,
) -> PackageReport {
    let offer = |text: &str, diagnostics: &mut [Diagnostic]| {
        crate::migrate::offer_migration(fs, manifest_path, text, catalog, diagnostics);
    };
    one::check_bytes(fs, manifest_path, bytes, catalog, Some(&offer))
}

/// The model of a parsed manifest by its own rules alone: no package file is read and no prose checked. What
/// an editor feature needs of a buffer (its model, env and routes) without checking the package again.
pub fn manifest_model(manifest_path: &Path, parse: &wb_syntax::Parse, catalog: &ModelCatalog) -> crate::Manifest {
    crate::rules::suggestions::in_pass(|| {
        let (mut manifest, _) = crate::rules::check_manifest(manifest_path, parse, catalog);
        manifest.complete &= parse.errors.iter().all(|e| e.kind == wb_syntax::SyntaxErrorKind::ByteOrderMark);
        manifest
    })
}
