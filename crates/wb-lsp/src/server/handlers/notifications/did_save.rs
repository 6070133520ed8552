//! `textDocument/didSave`: nothing to do. The open buffer's text is already what the checks read, and
//! changes on disk arrive as `workspace/didChangeWatchedFiles`.

use lsp_types as lsp;

use super::super::super::global_state::GlobalState;

pub fn handle(_: &mut GlobalState, _: lsp::DidSaveTextDocumentParams) -> anyhow::Result<()> {
    Ok(())
}
