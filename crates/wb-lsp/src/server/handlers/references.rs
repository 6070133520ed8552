//! `textDocument/references`: an env variable's declaration and every `${NAME}` that uses it.

use lsp_types as lsp;

use super::super::snapshot::Snapshot;
use super::File;

pub fn handle(snapshot: &Snapshot, params: lsp::ReferenceParams) -> anyhow::Result<Option<Vec<lsp::Location>>> {
    let position = params.text_document_position;
    let Some(file) = File::open(snapshot, &position.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let offset = file.offset(snapshot, position.position);
    let ranges = wb_ide::env_references(&file.text, root, offset, params.context.include_declaration);
    if ranges.is_empty() {
        return Ok(None);
    }
    let uri = position.text_document.uri;
    Ok(Some(
        ranges
            .into_iter()
            .map(|range| lsp::Location { uri: uri.clone(), range: file.range(snapshot, range) })
            .collect(),
    ))
}
