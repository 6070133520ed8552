//! `textDocument/prepareRename` and `textDocument/rename` of env variables.

use std::collections::HashMap;

use lsp_types as lsp;

use super::super::snapshot::Snapshot;
use super::File;

pub fn prepare(
    snapshot: &Snapshot,
    params: lsp::TextDocumentPositionParams,
) -> anyhow::Result<Option<lsp::PrepareRenameResponse>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let offset = file.offset(snapshot, params.position);
    Ok(wb_ide::env_range_at(&file.text, root, offset)
        .map(|range| lsp::PrepareRenameResponse::Range(file.range(snapshot, range))))
}

pub fn handle(snapshot: &Snapshot, params: lsp::RenameParams) -> anyhow::Result<Option<lsp::WorkspaceEdit>> {
    let position = params.text_document_position;
    let Some(file) = File::open(snapshot, &position.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let offset = file.offset(snapshot, position.position);
    let edits =
        wb_ide::rename_env(&file.text, root, offset, &params.new_name).map_err(|error| anyhow::anyhow!(error))?;
    let edits: Vec<lsp::TextEdit> = edits
        .into_iter()
        .map(|(range, new_text)| lsp::TextEdit { range: file.range(snapshot, range), new_text })
        .collect();
    let mut changes = HashMap::new();
    changes.insert(position.text_document.uri, edits);
    Ok(Some(lsp::WorkspaceEdit { changes: Some(changes), ..lsp::WorkspaceEdit::default() }))
}
