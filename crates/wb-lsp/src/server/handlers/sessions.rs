//! `workbench.send`: the next turn of a session, followed to its end (`follow_turn` in `execute.rs`, which
//! `workbench.run` with `session` shares; documented in `docs/lsp-extensions.md`).

use std::sync::Arc;

use anyhow::Context;
use crossbeam_channel::Sender;
use lsp_server::Message;
use lsp_types as lsp;
use serde_json::Value;
use wb_engine::runs;

use super::super::ext::SendArguments;
use super::super::snapshot::Snapshot;
use super::execute::{CancelForward, Flags, begin, follow_turn};
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
