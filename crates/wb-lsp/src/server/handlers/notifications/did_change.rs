//! `textDocument/didChange`: applies full and incremental changes, in order, to the open document.

use std::path::Path;
use std::sync::Arc;

use lsp_types as lsp;

use super::super::super::convert;
use super::super::super::global_state::GlobalState;
use super::super::super::snapshot::Document;

pub fn handle(state: &mut GlobalState, params: lsp::DidChangeTextDocumentParams) -> anyhow::Result<()> {
    let Some(path) = convert::url_to_path(&params.text_document.uri) else { return Ok(()) };
    apply_changes(state, &path, params.text_document.version, params.content_changes);
    state.mark_affected(&path);
    Ok(())
}

/// A change whose range does not fall on the text's character boundaries is skipped.
fn apply_changes(
    state: &mut GlobalState,
    path: &Path,
    version: i32,
    changes: Vec<lsp::TextDocumentContentChangeEvent>,
) {
    let Some(document) = state.documents.get(path) else { return };
    let mut text = document.text.to_string();
    // The document's own index serves the first change; a later one needs the index of the text as changed.
    let mut index = Some(Arc::clone(&document.index));
    for change in changes {
        match change.range {
            None => {
                text = change.text;
                index = None;
            }
            Some(range) => {
                let current = index.take().unwrap_or_else(|| Arc::new(wb_syntax::LineIndex::new(&text)));
                let range = convert::text_range(&current, range, state.encoding());
                if range.end <= text.len() && text.is_char_boundary(range.start) && text.is_char_boundary(range.end) {
                    text.replace_range(range.as_range(), &change.text);
                }
            }
        }
    }
    Arc::make_mut(&mut state.documents).insert(path.to_owned(), Document::new(text, version));
}
