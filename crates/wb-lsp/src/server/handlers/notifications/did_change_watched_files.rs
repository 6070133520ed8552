//! `workspace/didChangeWatchedFiles`: manifests appear and vanish; every change re-checks what may read it.

use lsp_types as lsp;
use std::sync::Arc;

use super::super::super::convert;
use super::super::super::global_state::GlobalState;
use super::super::super::snapshot::is_manifest;

pub fn handle(state: &mut GlobalState, params: lsp::DidChangeWatchedFilesParams) -> anyhow::Result<()> {
    for change in params.changes {
        let Some(path) = convert::url_to_path(&change.uri) else { continue };
        if is_manifest(&path) {
            if change.typ == lsp::FileChangeType::DELETED && !state.documents.contains_key(&path) {
                Arc::make_mut(&mut state.manifests).remove(&path);
                state.clear_owner(&path)?;
            } else if wb_manifest::repository_root(&path).is_some() {
                Arc::make_mut(&mut state.manifests).insert(path.clone());
            }
        }
        state.mark_affected(&path);
    }
    Ok(())
}
