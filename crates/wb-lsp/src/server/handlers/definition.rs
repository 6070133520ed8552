//! `textDocument/definition`: path values open their file; `${VAR}` jumps to its `env` declaration.

use lsp_types as lsp;
use wb_syntax::TextRange;

use super::super::convert;
use super::super::snapshot::{Snapshot, is_manifest};
use super::File;

pub fn handle(
    snapshot: &Snapshot,
    params: lsp::GotoDefinitionParams,
) -> anyhow::Result<Option<lsp::GotoDefinitionResponse>> {
    let position = params.text_document_position_params;
    let Some(file) = File::open(snapshot, &position.text_document.uri) else { return Ok(None) };
    let Some(root) = file.parse.root.as_ref().filter(|_| is_manifest(&file.path)) else { return Ok(None) };
    let offset = file.offset(snapshot, position.position);
    let links = wb_ide::definition(&snapshot.overlay, &file.path, &file.text, root, offset);
    let locations: Vec<lsp::LocationLink> = links
        .into_iter()
        .filter_map(|link| {
            let uri = convert::path_to_url(&link.target)?;
            let target_range = match link.target_range {
                Some(range) if link.target == file.path => file.range(snapshot, range),
                Some(range) => {
                    let index = snapshot.index(&link.target)?;
                    convert::range(&index, range, snapshot.encoding)
                }
                None => convert::range(&wb_syntax::LineIndex::new(""), TextRange::empty(0), snapshot.encoding),
            };
            Some(lsp::LocationLink {
                origin_selection_range: Some(file.range(snapshot, link.origin)),
                target_uri: uri,
                target_range,
                target_selection_range: target_range,
            })
        })
        .collect();
    if locations.is_empty() {
        return Ok(None);
    }
    Ok(Some(lsp::GotoDefinitionResponse::Array(
        locations.into_iter().map(|l| lsp::Location { uri: l.target_uri, range: l.target_selection_range }).collect(),
    )))
}
