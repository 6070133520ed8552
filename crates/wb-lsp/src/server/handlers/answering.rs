//! What a run asks, in the editor: `workbench/inputRequested` and `workbench/inputResolved` for the runs a client
//! follows (started or attached there), and `workbench.answer`, which answers a request as `wb-lsp answer` does.

use crossbeam_channel::Sender;
use lsp_server::{Message, Notification};
use lsp_types as lsp;
use serde_json::Value;
use wb_engine::events::{Event, EventKind};
use wb_engine::input::Request;
use wb_engine::runs::answers::{Given, answer as answer_run};

use super::super::ext::{self, AnswerArguments, InputRequestedParams, InputResolvedParams};
use super::super::snapshot::Snapshot;
use crate::supervisor;

/// The notification that goes with `event`, when it asks the person or answers what was asked.
pub(super) fn notify_input(sender: &Sender<Message>, event: &Event) {
    let Some(kind) = event.known() else { return };
    let notification = match kind {
        EventKind::InputRequested | EventKind::QuestionRequested => {
            let Some(request) = Request::from_event(event) else { return };
            // A replayed request (`workbench.attach`) that was answered since is not asked again.
            if !still_pending(&event.run_id, &request.id) {
                return;
            }
            let params = InputRequestedParams { run_id: &event.run_id, request: &request, text: request.details() };
            Notification::new(ext::INPUT_REQUESTED.to_owned(), params)
        }
        EventKind::InputAccepted
        | EventKind::InputRejected
        | EventKind::QuestionAnswered
        | EventKind::QuestionRejected => {
            let Some(id) = event.text("id") else { return };
            let refused = matches!(kind, EventKind::InputRejected | EventKind::QuestionRejected);
            let params = InputResolvedParams {
                run_id: &event.run_id,
                id,
                how: if refused { "refused" } else { "answered" },
                answer: event.text("answer"),
                reason: event.text("reason"),
            };
            Notification::new(ext::INPUT_RESOLVED.to_owned(), params)
        }
        _ => return,
    };
    let _ = sender.send(Message::Notification(notification));
}

/// Whether request `id` of run `run_id` still waits, as the run's record says (when it cannot be read: yes).
fn still_pending(run_id: &str, id: &str) -> bool {
    let Ok(home) = supervisor::home() else { return true };
    wb_engine::runs::read_record(&home, run_id).map_or(true, |record| record.pending.iter().any(|p| p.id == id))
}

/// `workbench.answer`: answers request `requestId` of run `runId` (checked against the request, written once:
/// the first answer wins); the run says it took it with `workbench/inputResolved`.
pub fn answer(_snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let Some(argument) = params.arguments.first() else {
        anyhow::bail!("workbench.answer takes {{\"runId\", \"requestId\", \"answer\"}} (or \"reject\": true)");
    };
    let arguments: AnswerArguments = serde_json::from_value(argument.clone())?;
    let given = match (&arguments.answer, arguments.reject) {
        (_, true) => Given::Reject,
        (Some(text), false) => Given::Text(text),
        (None, false) => anyhow::bail!("{}", wb_engine::input::AnswerError::NoAnswer),
    };
    let (request, answer) = answer_run(&supervisor::home()?, &arguments.run_id, &arguments.request_id, given)?;
    Ok(Some(serde_json::json!({"runId": arguments.run_id, "requestId": request.id, "answer": answer})))
}
