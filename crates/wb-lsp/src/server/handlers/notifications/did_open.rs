//! `textDocument/didOpen`: the document's text now wins over the disk; an opened manifest becomes known.

use std::sync::Arc;

use lsp_types as lsp;

use super::super::super::convert;
use super::super::super::global_state::GlobalState;
use super::super::super::snapshot::{Document, is_manifest};

pub fn handle(state: &mut GlobalState, params: lsp::DidOpenTextDocumentParams) -> anyhow::Result<()> {
    let Some(path) = convert::url_to_path(&params.text_document.uri) else { return Ok(()) };
    let document = Document::new(params.text_document.text, params.text_document.version);
    Arc::make_mut(&mut state.documents).insert(path.clone(), document);
    if is_manifest(&path) {
        Arc::make_mut(&mut state.manifests).insert(path.clone());
    }
    state.mark_affected(&path);
    Ok(())
}
