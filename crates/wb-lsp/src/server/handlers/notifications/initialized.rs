//! `initialized`: registers the file watchers, reads the settings and scans the workspace folders.

use lsp_types::{self as lsp, notification::Notification as _};

use super::super::super::global_state::{GlobalState, Outgoing};

/// The files whose changes can change a package's diagnostics.
const WATCHED: [&str; 6] =
    ["**/.workbenches/**/*", "**/workbench.yml", "**/SKILL.md", "**/*.md", "**/Dockerfile*", "**/*.json"];

pub fn handle(state: &mut GlobalState, _: lsp::InitializedParams) -> anyhow::Result<()> {
    if state.client_registers_watchers() {
        let watchers = WATCHED
            .iter()
            .map(|glob| lsp::FileSystemWatcher {
                glob_pattern: lsp::GlobPattern::String((*glob).to_owned()),
                kind: None,
            })
            .collect();
        let options = lsp::DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = lsp::Registration {
            id: "wb-lsp-watch".into(),
            method: lsp::notification::DidChangeWatchedFiles::METHOD.into(),
            register_options: serde_json::to_value(options).ok(),
        };
        state.request_client::<lsp::request::RegisterCapability>(
            lsp::RegistrationParams { registrations: vec![registration] },
            Outgoing::Other,
        )?;
    }
    if state.client_supports_configuration() {
        state.request_configuration()?;
    } else if let Some(options) = state.initialization_options().cloned() {
        state.apply_settings(&options);
    }
    for root in state.roots.clone() {
        state.scan_root(&root);
    }
    Ok(())
}
