//! Diagnostics, pushed (`publishDiagnostics`) or pulled (`textDocument/diagnostic`, `workspace/diagnostic`).
//! They come from the same entry point as `wb-lsp check`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lsp_types as lsp;
use wb_manifest::{Dependencies, Recording};
use wb_syntax::LineIndex;

use super::super::convert;
use super::super::snapshot::{Snapshot, is_manifest, is_outbox_declaration, is_skill, is_trial_task};

/// Diagnostics of one owner per file they are in, each with the version of the open document it was
/// computed from.
pub type Computed = Vec<(PathBuf, Option<i32>, Vec<lsp::Diagnostic>)>;

/// With the `test-hooks` feature (tests only), the check of an open document holding this text panics.
#[cfg(feature = "test-hooks")]
pub const PANIC_MARKER: &str = "# wb-lsp test hook: panic in the check";

/// [`compute`], plus what a manifest's check read (which changes can alter its diagnostics).
pub fn compute_with_dependencies(snapshot: &Snapshot, owner: &Path) -> (Computed, Option<Dependencies>) {
    #[cfg(feature = "test-hooks")]
    if snapshot.document(owner).is_some_and(|document| document.text.contains(PANIC_MARKER)) {
        panic!("a check panicked on purpose (test hook)");
    }
    if !is_manifest(owner) {
        return (compute(snapshot, owner), None);
    }
    let recording = Recording::new(&snapshot.overlay);
    let mut report = wb_manifest::check_package(&recording, owner, &snapshot.catalog);
    snapshot.config.apply(&mut report);
    (convert_all(snapshot, owner, report.diagnostics, &report.sources), Some(recording.dependencies()))
}

/// Diagnostics of one owner (a manifest, or an open `SKILL.md`), grouped by the file they are in, each with
/// the version of the open document they were computed from.
pub fn compute(snapshot: &Snapshot, owner: &Path) -> Computed {
    let mut sources = BTreeMap::new();
    let diagnostics = if is_manifest(owner) {
        let report = snapshot.check(owner);
        sources = report.sources;
        report.diagnostics
    } else if is_outbox_declaration(owner) {
        match snapshot.text(owner) {
            Some(text) => wb_manifest::outbox_declaration::check_declaration(&snapshot.overlay, owner, &text),
            None => Vec::new(),
        }
    } else if is_trial_task(owner) {
        match snapshot.text(owner) {
            Some(text) => {
                let package = package_name(snapshot, owner);
                wb_manifest::trial_task::check_task(&snapshot.overlay, owner, &text, package.as_deref()).1
            }
            None => Vec::new(),
        }
    } else if is_skill(owner) {
        match snapshot.text(owner) {
            Some(text) => wb_manifest::skill::skill_file_diagnostics(owner, &text),
            None => Vec::new(),
        }
    } else {
        Vec::new()
    };
    convert_all(snapshot, owner, diagnostics, &sources)
}

/// The `name` of the package whose `trials/` holds `task` (as the editor has its manifest), when it has one.
fn package_name(snapshot: &Snapshot, task: &Path) -> Option<String> {
    let manifest = task.parent()?.parent()?.parent()?.join("workbench.yml");
    let (_, _, parse) = snapshot.file(&manifest)?;
    parse.root.as_ref()?.as_mapping()?.get("name")?.as_str().map(str::to_owned)
}

/// Groups diagnostics by file and converts them. Line indexes come from the texts the check read (`sources`;
/// one index per text, however many paths lead to it), else from the snapshot, once per file.
fn convert_all(
    snapshot: &Snapshot,
    owner: &Path,
    diagnostics: Vec<wb_manifest::Diagnostic>,
    sources: &BTreeMap<PathBuf, Arc<str>>,
) -> Computed {
    let by_text: RefCell<HashMap<*const u8, Arc<LineIndex>>> = RefCell::default();
    let by_path: RefCell<HashMap<PathBuf, Option<Arc<LineIndex>>>> = RefCell::default();
    let index_of = |path: &Path| -> Option<Arc<LineIndex>> {
        if let Some(found) = by_path.borrow().get(path) {
            return found.clone();
        }
        let index = match (snapshot.document(path), sources.get(path)) {
            (Some(document), _) => Some(Arc::clone(&document.index)),
            (None, Some(text)) => Some(Arc::clone(
                by_text
                    .borrow_mut()
                    .entry(Arc::as_ptr(text).cast::<u8>())
                    .or_insert_with(|| Arc::new(LineIndex::shared(Arc::clone(text)))),
            )),
            (None, None) => snapshot.index(path),
        };
        by_path.borrow_mut().insert(path.to_owned(), index.clone());
        index
    };
    let mut by_file: BTreeMap<PathBuf, Vec<wb_manifest::Diagnostic>> = BTreeMap::new();
    by_file.entry(owner.to_owned()).or_default();
    for diagnostic in diagnostics {
        by_file.entry(diagnostic.path.clone()).or_default().push(diagnostic);
    }
    by_file
        .into_iter()
        .map(|(path, diagnostics)| {
            let version = snapshot.document(&path).map(|d| d.version);
            let index = index_of(&path).unwrap_or_else(|| Arc::new(LineIndex::new("")));
            let converted =
                diagnostics.iter().map(|d| convert::diagnostic(d, &index, snapshot.encoding, &index_of)).collect();
            (path, version, converted)
        })
        .collect()
}

/// What every owner reports in `path`: the file's own check (a manifest, an open `SKILL.md`), and for any other
/// file the checks of the packages that may read it ([`owners_of`]).
fn for_file(snapshot: &Snapshot, path: &Path) -> Vec<lsp::Diagnostic> {
    let mut owners = vec![path.to_owned()];
    if !is_manifest(path) {
        owners.extend(owners_of(snapshot, path));
    }
    let single = owners.len() == 1;
    let mut diagnostics: Vec<lsp::Diagnostic> = Vec::new();
    for owner in owners {
        let found = compute(snapshot, &owner).into_iter().filter(|(file, _, _)| file == path).flat_map(|(_, _, d)| d);
        if single {
            return found.collect();
        }
        // What two owners both report (instructions two packages share) is shown once.
        for diagnostic in found {
            if !diagnostics.contains(&diagnostic) {
                diagnostics.push(diagnostic);
            }
        }
    }
    diagnostics
}

/// The manifests whose checks may report in `path`, a file that is not a manifest (instructions, a `SKILL.md`,
/// a Dockerfile): those of the packages it lies in, else every manifest of the repository it lies in (a
/// package may name files anywhere in its repository).
pub fn owners_of(snapshot: &Snapshot, path: &Path) -> Vec<PathBuf> {
    let inside: Vec<PathBuf> = snapshot
        .manifests
        .iter()
        .filter(|manifest| manifest.parent().is_some_and(|dir| path.starts_with(dir)))
        .cloned()
        .collect();
    if !inside.is_empty() {
        return inside;
    }
    snapshot
        .manifests
        .iter()
        .filter(|manifest| wb_manifest::repository_root(manifest).is_some_and(|root| path.starts_with(root)))
        .cloned()
        .collect()
}

pub fn document(
    snapshot: &Snapshot,
    params: lsp::DocumentDiagnosticParams,
) -> anyhow::Result<lsp::DocumentDiagnosticReportResult> {
    let items = match convert::url_to_path(&params.text_document.uri) {
        Some(path) => for_file(snapshot, &path),
        None => Vec::new(),
    };
    Ok(lsp::DocumentDiagnosticReportResult::Report(lsp::DocumentDiagnosticReport::Full(
        lsp::RelatedFullDocumentDiagnosticReport {
            related_documents: None,
            full_document_diagnostic_report: lsp::FullDocumentDiagnosticReport { result_id: None, items },
        },
    )))
}

pub fn workspace(
    snapshot: &Snapshot,
    _params: lsp::WorkspaceDiagnosticParams,
) -> anyhow::Result<lsp::WorkspaceDiagnosticReportResult> {
    use rayon::prelude::*;
    let manifests: Vec<&PathBuf> = snapshot.manifests.iter().collect();
    // Every core checks; the reports keep the manifests' order.
    let computed: Vec<Computed> = manifests.par_iter().map(|manifest| compute(snapshot, manifest)).collect();
    let mut items = Vec::new();
    for files in computed {
        for (path, version, diagnostics) in files {
            let Some(uri) = convert::path_to_url(&path) else { continue };
            items.push(lsp::WorkspaceDocumentDiagnosticReport::Full(lsp::WorkspaceFullDocumentDiagnosticReport {
                uri,
                version: version.map(i64::from),
                full_document_diagnostic_report: lsp::FullDocumentDiagnosticReport {
                    result_id: None,
                    items: diagnostics,
                },
            }));
        }
    }
    Ok(lsp::WorkspaceDiagnosticReportResult::Report(lsp::WorkspaceDiagnosticReport { items }))
}
