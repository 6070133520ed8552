//! Diagnostics, pushed (`publishDiagnostics`) or pulled (`textDocument/diagnostic`, `workspace/diagnostic`).
//! They come from the same entry point as `wb-lsp check`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lsp_types as lsp;
use wb_syntax::LineIndex;

use super::super::convert;
use super::super::state::{Snapshot, is_manifest, is_outbox_declaration, is_skill};

/// Diagnostics of one owner (a manifest, or an open `SKILL.md`), grouped by the file they are in, each with
/// the version of the open document they were computed from.
pub fn compute(snapshot: &Snapshot, owner: &Path) -> Vec<(PathBuf, Option<i32>, Vec<lsp::Diagnostic>)> {
    let diagnostics = if is_manifest(owner) {
        snapshot.check(owner).diagnostics
    } else if is_outbox_declaration(owner) {
        match snapshot.text(owner) {
            Some(text) => wb_manifest::outbox::check_declaration(&snapshot.overlay, owner, &text),
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
    let mut by_file: BTreeMap<PathBuf, Vec<wb_manifest::Diagnostic>> = BTreeMap::new();
    by_file.entry(owner.to_owned()).or_default();
    for diagnostic in diagnostics {
        by_file.entry(diagnostic.path.clone()).or_default().push(diagnostic);
    }
    by_file
        .into_iter()
        .map(|(path, diagnostics)| {
            let version = snapshot.document(&path).map(|d| d.version);
            let index = snapshot.index(&path).unwrap_or_else(|| LineIndex::new(""));
            let converted = diagnostics
                .iter()
                .map(|d| convert::diagnostic(d, &index, snapshot.encoding, &|other| snapshot.index(other)))
                .collect();
            (path, version, converted)
        })
        .collect()
}

fn for_file(snapshot: &Snapshot, path: &Path) -> Vec<lsp::Diagnostic> {
    compute(snapshot, path).into_iter().filter(|(file, _, _)| file == path).flat_map(|(_, _, d)| d).collect()
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
    let mut items = Vec::new();
    for manifest in snapshot.manifests.iter() {
        for (path, version, diagnostics) in compute(snapshot, manifest) {
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
