//! Following a run from outside its owner: its log replayed from the start, then read as it grows, to its
//! terminal event (or until its owner is gone, or the follower stops); one turn of a session followed the same
//! way; the result its owner keeps at the end. What a follower does with each event (print it, forward it to an
//! editor) is the caller's.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::log::{LogReader, Logged};
use super::{RunState, read_record, read_result};
use crate::events::EventKind;

/// How often a followed run's log and record are looked at.
const POLL: Duration = Duration::from_millis(50);

/// How following a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Followed {
    /// Its terminal event was read: how it ended, and whether its outcome failed (`outcome.failed`).
    Ended { state: RunState, outcome_failed: bool },
    /// Its owner ended before a terminal event.
    Lost,
    /// The follower was asked to stop (the run goes on).
    Stopped,
    /// The event the follower waited for was read (the run goes on).
    Reached,
}

/// Replays a run's log from its start, then follows it until its terminal event: each event goes to
/// `on_event` exactly once, in order. `stop` set ends the following (not the run).
pub fn follow(
    home: &Path,
    run_id: &str,
    stop: Option<&AtomicBool>,
    on_event: &mut dyn FnMut(&Logged),
) -> std::io::Result<Followed> {
    follow_until(home, run_id, stop, &mut |event| {
        on_event(event);
        false
    })
}

/// [`follow`], ending early ([`Followed::Reached`]) after the event for which `on_event` returns true.
pub fn follow_until(
    home: &Path,
    run_id: &str,
    stop: Option<&AtomicBool>,
    on_event: &mut dyn FnMut(&Logged) -> bool,
) -> std::io::Result<Followed> {
    let mut reader = LogReader::open(home, run_id)
        .map_err(|error| std::io::Error::new(error.kind(), format!("cannot read the log of run {run_id}: {error}")))?;
    let (mut outcome_failed, mut owner_gone) = (false, false);
    loop {
        let events = reader.read_new()?;
        for logged in &events {
            let reached = on_event(logged);
            let kind = logged.event().and_then(|event| event.known());
            outcome_failed |= kind == Some(EventKind::OutcomeFailed);
            let state = match kind {
                Some(EventKind::RunCompleted) => Some(RunState::Completed),
                Some(EventKind::RunFailed) => Some(RunState::Failed),
                Some(EventKind::RunCancelled) => Some(RunState::Cancelled),
                _ => None,
            };
            if let Some(state) = state {
                return Ok(Followed::Ended { state, outcome_failed });
            }
            if reached {
                return Ok(Followed::Reached);
            }
        }
        if !events.is_empty() {
            continue;
        }
        if stop.is_some_and(|stop| stop.load(Ordering::SeqCst)) {
            return Ok(Followed::Stopped);
        }
        // Nothing new: the run may have been lost (its owner gone before a terminal event). Once the record
        // says so the log is read once more, so an event written just before the owner ended is not missed.
        if owner_gone {
            return Ok(Followed::Lost);
        }
        owner_gone = read_record(home, run_id)?.state() == RunState::Lost;
        if !owner_gone {
            std::thread::sleep(POLL);
        }
    }
}

/// How a followed turn of a session ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnEnd {
    /// The turn's index; `None` when the session ended before it took the turn.
    pub index: Option<u64>,
    /// Its `turn.completed` status (`completed`, `failed`, `cancelled`); empty when it did not complete.
    pub status: String,
}

/// Follows one turn of session `run_id`: the one started for queued input `input`, or (`None`) the first one
/// started. `on_event` gets the turn's events from its `turn.started` to its `turn.completed`, and for the first
/// turn the session's events before it too; the following ends there ([`Followed::Reached`]), or at the session's
/// end.
pub fn follow_turn(
    home: &Path,
    run_id: &str,
    stop: Option<&AtomicBool>,
    input: Option<&str>,
    on_event: &mut dyn FnMut(&Logged),
) -> std::io::Result<(Followed, TurnEnd)> {
    let mut end = TurnEnd::default();
    let followed = follow_until(home, run_id, stop, &mut |logged| {
        let event = logged.event();
        let is = |kind: EventKind| event.is_some_and(|event| event.is(kind));
        let turn_index = event.and_then(|event| event.data.get("turn_index")).and_then(Value::as_u64);
        if end.index.is_none() {
            let ours = is(EventKind::TurnStarted)
                && input.is_none_or(|id| event.and_then(|event| event.text("input_id")) == Some(id));
            if ours {
                end.index = turn_index;
            } else if input.is_some() {
                // Earlier turns are not this follower's.
                return false;
            }
        }
        on_event(logged);
        if is(EventKind::TurnCompleted) && turn_index.is_some() && turn_index == end.index {
            end.status = event.and_then(|event| event.text("status")).unwrap_or_default().to_owned();
            return true;
        }
        false
    })?;
    Ok((followed, end))
}

/// What a finished run returned, once its owner has kept it (after its cleanup): `None` when the owner ended
/// without keeping one.
pub fn result_of(home: &Path, run_id: &str) -> Option<crate::RunResult> {
    loop {
        if let Ok(result) = read_result(home, run_id) {
            return Some(result);
        }
        let record = read_record(home, run_id).ok()?;
        if !record.owner_alive() {
            // Kept just before the owner ended?
            return read_result(home, run_id).ok();
        }
        std::thread::sleep(POLL);
    }
}
