//! A session's turns (`run --session`, `send`, `resume`): each launched with the runner's conversation carried
//! on, followed between `turn.started` and `turn.completed`, its outbox snapshotted when it completed with a
//! changed result, and the next taken from the session's inbox (`crate::sessions`).

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde_json::{Value, json};

use super::asking::Inputs;
use super::prepare::Prepared;
use super::turn::{Ending, Events, Turns, elapsed, one_turn};
use super::{Options, RunMode, SessionOptions};
use crate::events::{EventKind, Translated};
use crate::outcome;
use crate::sessions::{self, Waited};

/// The turns of a session, until a turn does not complete, the session is ended while idle (`kill`, a limit),
/// or it stays idle too long. A resumed session (`RunMode::Session::resume_from`) first takes its earlier
/// conversation and files; without a task it starts idle.
pub(super) fn turns(
    prepared: &mut Prepared,
    options: &Options,
    mode: &RunMode,
    session: SessionOptions,
    (stops, inputs): ((&AtomicBool, &Mutex<Option<String>>), &Inputs),
    events: &mut Events<'_>,
) -> Turns {
    let home = options.workbench_home();
    let first_command = prepared.translation.command.clone();
    let store = prepared.adapter.conversation_store();
    let mut snapshots = outcome::TurnSnapshots::default();
    let mut conversation: Option<String> = None;
    let mut resumed = false;
    // What the session was started with, kept so `resume` can start it again.
    if let Err(error) = sessions::save_options(&home, &prepared.run_id, &options.request, mode) {
        let message = format!("Cannot keep the options of session {}: {error}", prepared.run_id);
        return session_failed(events, message, String::new());
    }
    if mode.resume_from().is_some() {
        (conversation, resumed) = (prepared.resumed_conversation.clone(), true);
    }
    let mut next = options.request.task.clone().filter(|task| !task.trim().is_empty()).map(|task| (task, None));
    let mut final_text = String::new();
    let mut turn = 0_u64;
    events.send(Translated::new(EventKind::RunReady, json!({})));
    loop {
        let (task, input_id) = match next.take() {
            Some(next) => next,
            None => match sessions::wait_for_turn(&home, &prepared.run_id, stops.0, session.idle_timeout) {
                Waited::Turn(queued) => (queued.task, Some(queued.input_id)),
                Waited::Ended | Waited::IdleTimeout => {
                    let terminal =
                        Translated::new(EventKind::RunCompleted, json!({"duration_ms": elapsed(events.started)}));
                    return Turns { ending: Ending::Completed, terminal, final_text, cancelled: false };
                }
                Waited::Failed(message) => return session_failed(events, message, final_text),
            },
        };
        turn += 1;
        // The first turn of a new session runs the staged command; every other carries the conversation on.
        if turn > 1 || resumed {
            match prepared.adapter.next_turn(&first_command, &task, conversation.as_deref()) {
                Ok(command) => prepared.translation.command = command,
                Err(error) => return session_failed(events, error.to_string(), final_text),
            }
            prepared.translation.server = prepared.adapter.server_port(&prepared.translation.command);
            prepared.translation.stdin =
                prepared.adapter.opening_input(&prepared.translation.command, &task, conversation.as_deref());
        }
        let launched = match prepared.runtime.launch(&prepared.translation) {
            Ok(launched) => {
                crate::leftovers::note_runner(&home, &prepared.run_id, &launched);
                launched
            }
            Err(error) => return session_failed(events, error.to_string(), final_text),
        };
        let started = Instant::now();
        let mut data = json!({"turn_index": turn});
        if let Some(id) = &input_id {
            data["input_id"] = Value::from(id.as_str());
        }
        events.send(Translated::new(EventKind::TurnStarted, data));
        let (ending, terminal, state) = one_turn(prepared, launched, stops, Some(inputs), events);
        events.flush_text();
        conversation = state.conversation.clone().or(conversation);
        final_text = state.final_text;
        keep_conversation(prepared, &home, conversation.as_deref(), store, events);
        // A completed turn's outbox is snapshotted (when its result changed) before the turn is said complete,
        // so whoever follows the turn to `turn.completed` has seen its snapshot.
        if ending == Ending::Completed {
            snapshot(prepared, &home, turn, &mut snapshots, events);
        }
        let status = match &ending {
            Ending::Completed => "completed",
            Ending::Failed(_) => "failed",
            Ending::Cancelled => "cancelled",
        };
        events.send(Translated::new(
            EventKind::TurnCompleted,
            json!({"turn_index": turn, "status": status, "duration_ms": elapsed(started)}),
        ));
        if ending != Ending::Completed {
            let cancelled = ending == Ending::Cancelled;
            return Turns { ending, terminal, final_text, cancelled };
        }
    }
}

/// Keeps the runner's conversation for `resume` after a turn: its id, and its store in the staged directory (a
/// sandbox's comes home first). A failure is said as a warning: the session goes on, only `resume` would lack it.
fn keep_conversation(
    prepared: &mut Prepared,
    home: &Path,
    conversation: Option<&str>,
    store: Option<&'static str>,
    events: &mut Events<'_>,
) {
    let Some(stage) = prepared.stage_dir().map(Path::to_path_buf) else { return };
    let fetched = match store {
        Some(store) => prepared.runtime.retrieve_stage(store, &stage.join(store)).map_err(|error| error.to_string()),
        None => Ok(()),
    };
    let kept = fetched.and_then(|()| {
        sessions::save_conversation(home, &prepared.run_id, conversation, &stage, store).map_err(|e| e.to_string())
    });
    if let Err(error) = kept {
        let warning = format!("The conversation was not kept for resume: {error}");
        events
            .send(Translated::new(EventKind::RunnerEvent, json!({"native_type": "conversation", "warning": warning})));
    }
}

/// Snapshots the outbox after turn `turn`, announcing the snapshot (or its failure).
fn snapshot(
    prepared: &mut Prepared,
    home: &Path,
    turn: u64,
    snapshots: &mut outcome::TurnSnapshots,
    events: &mut Events<'_>,
) {
    // A sandbox's outbox comes home first.
    let snapshot = prepared
        .runtime
        .retrieve_outbox(&prepared.outbox)
        .and_then(|()| outcome::snapshot_turn(home, &prepared.run_id, &prepared.outbox, turn, snapshots));
    match snapshot {
        Ok(Some((outcome, receipt))) => {
            events.send(Translated::new(EventKind::OutcomeAvailable, outcome::available_data(&outcome, &receipt)));
        }
        Ok(None) => {}
        Err(error) => {
            events.send(Translated::new(
                EventKind::OutcomeFailed,
                json!({"turn_index": turn, "message": error.to_string()}),
            ));
        }
    }
}

/// A session that cannot go on to its next turn: it fails, and its final outcome is collected.
fn session_failed(events: &mut Events<'_>, message: String, final_text: String) -> Turns {
    let terminal = events.failed(&message);
    Turns { ending: Ending::Failed(message), terminal, final_text, cancelled: false }
}
