//! `workspace/didChangeConfiguration`: reads the settings again, from the client when it answers
//! `workspace/configuration`, else from the notification, and re-checks every package.

use lsp_types as lsp;

use super::super::super::global_state::GlobalState;

/// Takes the raw parameters: a client that asks to be asked (`workspace/configuration`) may send no
/// `settings` at all.
pub fn handle(state: &mut GlobalState, params: serde_json::Value) -> anyhow::Result<()> {
    if state.client_supports_configuration() {
        return state.request_configuration();
    }
    if let Ok(params) = serde_json::from_value::<lsp::DidChangeConfigurationParams>(params)
        && state.apply_settings(&params.settings)
    {
        state.mark_all_dirty();
    }
    Ok(())
}
