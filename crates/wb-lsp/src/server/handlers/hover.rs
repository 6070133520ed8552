//! `textDocument/hover`: Markdown when the client accepts it, else the same text as plain text.

use lsp_types as lsp;

use super::super::convert::markup;
use super::super::snapshot::{Snapshot, is_manifest, is_trial_task};
use super::File;

pub fn handle(snapshot: &Snapshot, params: lsp::HoverParams) -> anyhow::Result<Option<lsp::Hover>> {
    let position = params.text_document_position_params;
    let Some(file) = File::open(snapshot, &position.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref() else { return Ok(None) };
    let offset = file.offset(snapshot, position.position);
    let hover = if is_manifest(&file.path) {
        wb_ide::hover(&snapshot.overlay, &file.path, &file.text, root, offset, &snapshot.catalog)
    } else if is_trial_task(&file.path) {
        wb_ide::task_hover(root, offset)
    } else {
        None
    };
    let Some(hover) = hover else { return Ok(None) };
    Ok(Some(lsp::Hover {
        contents: lsp::HoverContents::Markup(markup(hover.markdown, snapshot.features.hover_markdown)),
        range: Some(file.range(snapshot, hover.range)),
    }))
}
