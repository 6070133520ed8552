//! `workbench.send` (the next turn of a session, followed to its end) and the following of one turn that
//! `workbench.run` with `session` shares (documented in `docs/lsp-extensions.md`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use crossbeam_channel::Sender;
use lsp_server::Message;
use lsp_types as lsp;
use serde_json::Value;
use wb_engine::runs;

use super::super::ext::{SendArguments, TurnResult};
use super::super::snapshot::Snapshot;
use super::execute::{CancelForward, Flags, begin, finish, forward_event, let_go};
use crate::supervisor;

/// `workbench.send`: queues the task in the session's inbox, then follows the turn that takes it (events as
/// `workbench/runEvent`, progress) and answers how it ended. The client's cancel cancels the turn (which ends
/// the session, as `kill` during a turn does).
pub fn send(
    _snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    flags: Flags,
) -> anyhow::Result<Option<Value>> {
    let arguments: SendArguments = match params.arguments.first() {
        Some(value) => {
            serde_json::from_value(value.clone()).context("the command takes {\"runId\": \"wb_…\", \"task\": \"…\"}")?
        }
        None => anyhow::bail!("the command takes {{\"runId\": \"wb_…\", \"task\": \"…\"}}"),
    };
    if arguments.task.trim().is_empty() {
        anyhow::bail!("The turn's task is empty");
    }
    let home = supervisor::home()?;
    let record = runs::read_record(&home, &arguments.run_id).with_context(|| format!("no run {}", arguments.run_id))?;
    if !record.session {
        anyhow::bail!("Run {} is not a session", record.run_id);
    }
    if !record.state().is_live() {
        anyhow::bail!("Session {} has ended ({})", record.run_id, record.state().as_str());
    }
    let input = wb_engine::sessions::queue(&home, &record.run_id, &arguments.task)
        .with_context(|| format!("cannot queue the turn for session {}", record.run_id))?;
    let token = params.work_done_progress_params.work_done_token.clone();
    begin(sender, &token, "Workbench turn", true, "queued");
    let _forward = CancelForward::start(Arc::clone(&flags.cancel), record.pid);
    follow_turn(sender, &token, &record.run_id, &flags.detach, Some(&input))
}

/// Follows one turn of session `run_id` (the first started, or the one that took input `input`) from its
/// `turn.started` to its `turn.completed`, forwarding its events, and answers how it ended.
pub(super) fn follow_turn(
    sender: &Sender<Message>,
    token: &Option<lsp::ProgressToken>,
    run_id: &str,
    detach: &AtomicBool,
    input: Option<&str>,
) -> anyhow::Result<Option<Value>> {
    let home = supervisor::home()?;
    let mut result = TurnResult { run_id: run_id.to_owned(), ..TurnResult::default() };
    let followed = supervisor::follow_turn(&home, run_id, Some(detach), input, &mut |value| {
        forward_event(sender, token, value);
        let data = value.get("data").unwrap_or(&Value::Null);
        match value.get("type").and_then(Value::as_str).unwrap_or_default() {
            "output.text" => {
                result.final_text = data.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
            }
            "outcome.available" if data.get("turn_index").is_some() => {
                result.snapshot_id = data.get("outcome_id").and_then(Value::as_str).map(str::to_owned);
            }
            _ => {}
        }
    });
    let (followed, end) = match followed {
        Ok(followed) => followed,
        Err(error) => {
            finish(sender, token, format!("failed: {error:#}"));
            return Err(error);
        }
    };
    result.turn_index = end.index;
    result.status = if end.index.is_none() || end.status.is_empty() { "ended".to_owned() } else { end.status };
    let_go(sender, token, run_id, followed)?;
    finish(sender, token, result.status.clone());
    Ok(Some(serde_json::to_value(result)?))
}
