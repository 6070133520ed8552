//! `textDocument/didClose`: the disk wins again; diagnostics of what no longer exists are withdrawn.

use std::sync::Arc;

use lsp_types as lsp;

use super::super::super::convert;
use super::super::super::global_state::GlobalState;
use super::super::super::snapshot::{is_manifest, is_open_owner};

pub fn handle(state: &mut GlobalState, params: lsp::DidCloseTextDocumentParams) -> anyhow::Result<()> {
    let Some(path) = convert::url_to_path(&params.text_document.uri) else { return Ok(()) };
    Arc::make_mut(&mut state.documents).remove(&path);
    if is_manifest(&path) && !path.exists() {
        Arc::make_mut(&mut state.manifests).remove(&path);
        state.clear_owner(&path)?;
    }
    // A closed SKILL.md or outbox declaration is checked only while open.
    if is_open_owner(&path) {
        state.clear_owner(&path)?;
    }
    state.mark_affected(&path);
    Ok(())
}
