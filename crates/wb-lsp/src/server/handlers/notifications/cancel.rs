//! `$/cancelRequest`: a run stops its runner (and answers with its `cancelled` ending once stopped); a command
//! that writes (`workbench.applyOutcome`) is not cancelled and answers with what it did; any other request
//! still pending is answered `RequestCancelled` now, and its late result dropped.

use std::sync::atomic::Ordering;

use lsp_server::{ErrorCode, RequestId, Response};
use lsp_types as lsp;

use super::super::super::global_state::GlobalState;

pub fn handle(state: &mut GlobalState, params: lsp::CancelParams) -> anyhow::Result<()> {
    let id: RequestId = match params.id {
        lsp::NumberOrString::Number(n) => n.into(),
        lsp::NumberOrString::String(s) => s.into(),
    };
    if let Some(run) = state.runs.get(&id) {
        run.cancel.store(true, Ordering::SeqCst);
    } else if state.mutations.contains_key(&id) {
        // Its writes may be done already: only its own answer can say so.
    } else if state.req_queue.incoming.complete(&id).is_some() {
        state.send(Response::new_err(id, ErrorCode::RequestCanceled as i32, "request cancelled".into()))?;
    }
    Ok(())
}
