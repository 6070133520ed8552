//! `textDocument/codeAction`: quick fixes from the diagnostics' fixes, and the "migrate to spec 1" source
//! action (the same transform as `wb-lsp migrate`).

use std::collections::HashMap;

use lsp_types::{self as lsp, Url};
use wb_manifest::{Fix, TextEdit};

use super::super::convert;
use super::super::snapshot::{Snapshot, is_manifest};
use super::File;
use super::diagnostics::owners_of;

pub const SOURCE_MIGRATE: &str = "source.migrate";

fn overlaps(a: lsp::Range, b: lsp::Range) -> bool {
    a.start <= b.end && b.start <= a.end
}

/// Converts a core fix into a workspace edit (`None` when the client cannot create files and the fix needs to).
fn workspace_edit(snapshot: &Snapshot, fix: &Fix, resource_operations: bool) -> Option<lsp::WorkspaceEdit> {
    let mut by_file: HashMap<Url, Vec<lsp::TextEdit>> = HashMap::new();
    for TextEdit { path, range, new_text } in &fix.edits {
        let uri = convert::path_to_url(path)?;
        let index = snapshot.index(path)?;
        by_file.entry(uri).or_default().push(lsp::TextEdit {
            range: convert::range(&index, *range, snapshot.encoding),
            new_text: new_text.clone(),
        });
    }
    if fix.creates.is_empty() {
        return Some(lsp::WorkspaceEdit { changes: Some(by_file), ..lsp::WorkspaceEdit::default() });
    }
    if !resource_operations {
        return None;
    }
    let mut operations = Vec::new();
    for (path, contents) in &fix.creates {
        let uri = convert::path_to_url(path)?;
        operations.push(lsp::DocumentChangeOperation::Op(lsp::ResourceOp::Create(lsp::CreateFile {
            uri: uri.clone(),
            options: Some(lsp::CreateFileOptions { overwrite: Some(false), ignore_if_exists: Some(true) }),
            annotation_id: None,
        })));
        operations.push(lsp::DocumentChangeOperation::Edit(lsp::TextDocumentEdit {
            text_document: lsp::OptionalVersionedTextDocumentIdentifier { uri, version: None },
            edits: vec![lsp::OneOf::Left(lsp::TextEdit { range: lsp::Range::default(), new_text: contents.clone() })],
        }));
    }
    for (uri, edits) in by_file {
        let version = convert::url_to_path(&uri).and_then(|p| snapshot.document(&p).map(|d| d.version));
        operations.push(lsp::DocumentChangeOperation::Edit(lsp::TextDocumentEdit {
            text_document: lsp::OptionalVersionedTextDocumentIdentifier { uri, version },
            edits: edits.into_iter().map(lsp::OneOf::Left).collect(),
        }));
    }
    Some(lsp::WorkspaceEdit {
        document_changes: Some(lsp::DocumentChanges::Operations(operations)),
        ..lsp::WorkspaceEdit::default()
    })
}

/// The whole-document migration as a workspace edit, if the manifest has anything to migrate and the result
/// checks no worse (the same guard as `wb-lsp migrate`).
pub fn migration_edit(snapshot: &Snapshot, uri: &Url) -> anyhow::Result<Option<lsp::WorkspaceEdit>> {
    let file = File::open(snapshot, uri).ok_or_else(|| anyhow::anyhow!("cannot read {uri}"))?;
    let migration =
        wb_manifest::migrate::checked_migration(&snapshot.overlay, &file.path, &file.text, &snapshot.catalog)
            .map_err(|e| anyhow::anyhow!("cannot migrate: {e}"))?;
    let Some(migration) = migration else { return Ok(None) };
    let edits = migration
        .edits
        .into_iter()
        .map(|edit| lsp::TextEdit { range: file.range(snapshot, edit.range), new_text: edit.new_text })
        .collect();
    let mut changes = HashMap::new();
    changes.insert(uri.clone(), edits);
    Ok(Some(lsp::WorkspaceEdit { changes: Some(changes), ..lsp::WorkspaceEdit::default() }))
}

/// Quick fixes for the diagnostics in the requested range of a manifest, or of another file a package's checks
/// report in (instructions, a `SKILL.md`: their fixes edit the manifest); the migration for a manifest.
pub fn handle(snapshot: &Snapshot, params: lsp::CodeActionParams) -> anyhow::Result<Option<lsp::CodeActionResponse>> {
    let uri = params.text_document.uri;
    let Some(path) = convert::url_to_path(&uri) else { return Ok(None) };
    let manifest = is_manifest(&path);
    let owners = if manifest { vec![path.clone()] } else { owners_of(snapshot, &path) };
    if owners.is_empty() {
        return Ok(None);
    }
    let wants = |kind: &lsp::CodeActionKind| {
        params.context.only.as_ref().is_none_or(|only| only.iter().any(|o| kind.as_str().starts_with(o.as_str())))
    };
    let mut actions = Vec::new();
    let index = snapshot.index(&path).unwrap_or_else(|| std::sync::Arc::new(wb_syntax::LineIndex::new("")));
    let reports: Vec<wb_manifest::PackageReport> = if wants(&lsp::CodeActionKind::QUICKFIX) {
        owners.iter().map(|owner| snapshot.check(owner)).collect()
    } else {
        Vec::new()
    };
    for report in &reports {
        for diagnostic in report.diagnostics.iter().filter(|d| d.path == path) {
            let converted = convert::diagnostic(diagnostic, &index, snapshot.encoding, &|other| snapshot.index(other));
            if !overlaps(converted.range, params.range) {
                continue;
            }
            for (position, fix) in diagnostic.fixes.iter().enumerate() {
                let Some(edit) = workspace_edit(snapshot, fix, snapshot.resource_operations) else { continue };
                actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                    title: fix.title.clone(),
                    kind: Some(lsp::CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![converted.clone()]),
                    edit: Some(edit),
                    is_preferred: Some(position == 0 && diagnostic.fixes.len() == 1),
                    ..lsp::CodeAction::default()
                }));
            }
        }
    }
    let source = lsp::CodeActionKind::new(SOURCE_MIGRATE);
    if manifest
        && wants(&source)
        && let Ok(Some(edit)) = migration_edit(snapshot, &uri)
    {
        actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: "Migrate to spec 1".into(),
            kind: Some(source),
            edit: Some(edit),
            ..lsp::CodeAction::default()
        }));
    }
    Ok(Some(actions))
}
