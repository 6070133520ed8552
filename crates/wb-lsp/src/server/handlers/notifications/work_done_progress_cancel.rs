//! `window/workDoneProgress/cancel`: stops the run reporting on that token.

use std::sync::atomic::Ordering;

use lsp_types as lsp;

use super::super::super::global_state::GlobalState;

pub fn handle(state: &mut GlobalState, params: lsp::WorkDoneProgressCancelParams) -> anyhow::Result<()> {
    for run in state.runs.values() {
        if run.token.as_ref() == Some(&params.token) {
            run.cancel.store(true, Ordering::SeqCst);
        }
    }
    Ok(())
}
