//! One module per client notification, each applied on the loop thread in arrival order. A notification
//! with unreadable parameters, or one the server does not handle, is ignored (notifications get no answer).

mod cancel;
mod did_change;
mod did_change_configuration;
mod did_change_watched_files;
mod did_change_workspace_folders;
mod did_close;
mod did_open;
mod did_save;
mod initialized;
mod work_done_progress_cancel;

use lsp_server::{ExtractError, Notification};
use lsp_types::notification::{self as n, Notification as _};
use serde::de::DeserializeOwned;

use super::super::global_state::GlobalState;

pub fn handle(state: &mut GlobalState, notification: Notification) -> anyhow::Result<()> {
    let mut dispatcher = NotificationDispatcher { notification: Some(notification), state, outcome: Ok(()) };
    dispatcher
        .on(n::Initialized::METHOD, initialized::handle)
        .on(n::DidOpenTextDocument::METHOD, did_open::handle)
        .on(n::DidChangeTextDocument::METHOD, did_change::handle)
        .on(n::DidCloseTextDocument::METHOD, did_close::handle)
        .on(n::DidSaveTextDocument::METHOD, did_save::handle)
        .on(n::DidChangeWatchedFiles::METHOD, did_change_watched_files::handle)
        .on(n::DidChangeConfiguration::METHOD, did_change_configuration::handle)
        .on(n::DidChangeWorkspaceFolders::METHOD, did_change_workspace_folders::handle)
        .on(n::Cancel::METHOD, cancel::handle)
        .on(n::WorkDoneProgressCancel::METHOD, work_done_progress_cancel::handle);
    std::mem::replace(&mut dispatcher.outcome, Ok(()))
}

/// Routes one notification to the handler registered for its method.
struct NotificationDispatcher<'a> {
    notification: Option<Notification>,
    state: &'a mut GlobalState,
    outcome: anyhow::Result<()>,
}

impl NotificationDispatcher<'_> {
    fn on<P: DeserializeOwned>(
        &mut self,
        method: &str,
        handler: fn(&mut GlobalState, P) -> anyhow::Result<()>,
    ) -> &mut Self {
        let Some(notification) = self.notification.take() else { return self };
        match notification.extract::<P>(method) {
            Ok(params) => self.outcome = handler(self.state, params),
            Err(ExtractError::MethodMismatch(notification)) => self.notification = Some(notification),
            Err(ExtractError::JsonError { .. }) => {}
        }
        self
    }
}
