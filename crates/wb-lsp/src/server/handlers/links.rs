//! `textDocument/documentLink`: every path the manifest names.

use lsp_types as lsp;

use super::super::convert;
use super::super::snapshot::{Snapshot, is_manifest};
use super::File;

pub fn handle(snapshot: &Snapshot, params: lsp::DocumentLinkParams) -> anyhow::Result<Option<Vec<lsp::DocumentLink>>> {
    let Some(file) = File::open(snapshot, &params.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref().filter(|_| is_manifest(&file.path)) else { return Ok(None) };
    let links = wb_ide::document_links(&snapshot.overlay, &file.path, root)
        .into_iter()
        .filter_map(|link| {
            Some(lsp::DocumentLink {
                range: file.range(snapshot, link.origin),
                target: Some(convert::path_to_url(&link.target)?),
                tooltip: Some(link.target.display().to_string()),
                data: None,
            })
        })
        .collect();
    Ok(Some(links))
}
