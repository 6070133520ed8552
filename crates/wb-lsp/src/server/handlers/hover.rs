//! `textDocument/hover`: Markdown when the client accepts it, else the same text as plain text.

use lsp_types as lsp;

use super::super::convert::markup;
use super::super::snapshot::{Snapshot, is_manifest};
use super::File;

pub fn handle(snapshot: &Snapshot, params: lsp::HoverParams) -> anyhow::Result<Option<lsp::Hover>> {
    let position = params.text_document_position_params;
    let Some(file) = File::open(snapshot, &position.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref().filter(|_| is_manifest(&file.path)) else { return Ok(None) };
    let offset = file.offset(snapshot, position.position);
    let Some(hover) = wb_ide::hover(&snapshot.overlay, &file.path, &file.text, root, offset, &snapshot.catalog) else {
        return Ok(None);
    };
    Ok(Some(lsp::Hover {
        contents: lsp::HoverContents::Markup(markup(hover.markdown, snapshot.features.hover_markdown)),
        range: Some(file.range(snapshot, hover.range)),
    }))
}
