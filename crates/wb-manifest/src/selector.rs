//! `SOURCE#selector`: the grammar `check`, `smoke` and `run` share for picking packages out of a repository.

use std::path::{Path, PathBuf};

use crate::catalog::ModelCatalog;
use crate::check::{Detail, PackageReport, Target, absolute, check_manifests_keeping, check_path_keeping, discover};
use crate::diagnostic::Code;
use crate::fs::FileSystem;

/// The reference's text when a selector picks none of a repository's packages (validate and smoke).
pub const NO_MATCH: &str = "No matching Workbenches found";

/// Splits `path#selector` (the last `#` followed by something).
pub fn split_source(source: &str) -> (&str, Option<&str>) {
    match source.rsplit_once('#') {
        Some((path, selector)) if !selector.is_empty() => (path, Some(selector)),
        _ => (source, None),
    }
}

/// The absolute path a source's path part names (an empty path is the current directory).
pub fn source_path(path_text: &str, cwd: &Path) -> PathBuf {
    absolute(Path::new(if path_text.is_empty() { "." } else { path_text }), cwd)
}

/// The name of a report's package directory, which a selector can name.
pub fn dir_name(report: &PackageReport) -> String {
    report.package_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Whether a selector picks a package: its directory's name or its manifest's `name`.
pub fn selects(selector: &str, report: &PackageReport) -> bool {
    dir_name(report) == selector || report.name.as_deref() == Some(selector)
}

/// Checks what a source names, as `check` does: every package under its path, or with `#selector` only the
/// ones it picks; a selector picking none (also in a directory holding no package) is one [`NO_MATCH`] problem of
/// the path.
pub fn check_source(fs: &dyn FileSystem, source: &str, cwd: &Path, catalog: &ModelCatalog) -> Vec<PackageReport> {
    check_source_keeping(fs, source, cwd, catalog, Detail::Full)
}

/// [`check_source`], keeping `detail` of each report.
pub fn check_source_keeping(
    fs: &dyn FileSystem,
    source: &str,
    cwd: &Path,
    catalog: &ModelCatalog,
    detail: Detail,
) -> Vec<PackageReport> {
    let (path_text, selector) = split_source(source);
    let path = source_path(path_text, cwd);
    let Some(selector) = selector else { return check_path_keeping(fs, &path, catalog, detail) };
    let manifests = match discover(fs, &path) {
        // A path that does not exist keeps its own problem; one holding no package is one where nothing matched
        // (the reference's text for a selector, as for a repository where it picks none).
        Target::Missing(_) => return check_path_keeping(fs, &path, catalog, detail),
        Target::Empty(_) => Vec::new(),
        Target::Manifest(manifest) => vec![manifest],
        Target::Packages(manifests) => manifests,
    };
    let selected: Vec<PackageReport> = check_manifests_keeping(fs, &manifests, catalog, detail)
        .into_iter()
        .filter(|report| selects(selector, report))
        .collect();
    if selected.is_empty() {
        return vec![PackageReport::problem(&path, Code::NoWorkbenches, NO_MATCH.to_owned())];
    }
    selected
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_selector_follows_the_last_hash() {
        assert_eq!(super::split_source("repo#review"), ("repo", Some("review")));
        assert_eq!(super::split_source("a#b#c"), ("a#b", Some("c")));
        assert_eq!(super::split_source("repo#"), ("repo#", None));
        assert_eq!(super::split_source("#review"), ("", Some("review")));
    }
}
