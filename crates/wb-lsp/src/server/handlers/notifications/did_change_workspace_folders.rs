//! `workspace/didChangeWorkspaceFolders`: forgets the packages of removed folders, scans added ones.

use std::path::PathBuf;
use std::sync::Arc;

use lsp_types as lsp;

use super::super::super::convert;
use super::super::super::global_state::GlobalState;

pub fn handle(state: &mut GlobalState, params: lsp::DidChangeWorkspaceFoldersParams) -> anyhow::Result<()> {
    for removed in params.event.removed {
        let Some(path) = convert::url_to_path(&removed.uri) else { continue };
        state.roots.retain(|root| *root != path);
        let gone: Vec<PathBuf> = state.manifests.iter().filter(|m| m.starts_with(&path)).cloned().collect();
        for manifest in gone {
            Arc::make_mut(&mut state.manifests).remove(&manifest);
            state.clear_owner(&manifest)?;
        }
    }
    for added in params.event.added {
        let Some(path) = convert::url_to_path(&added.uri) else { continue };
        state.roots.push(path.clone());
        state.scan_root(&path);
    }
    Ok(())
}
