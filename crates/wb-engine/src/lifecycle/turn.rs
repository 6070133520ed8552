//! One turn of the runner, as a one-shot run (`run.rs`) and each turn of a session (`session.rs`) follow it: the
//! run's events on their way out, the runner's stdout translated into them until it exits or is cancelled, and
//! how the turn ended.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::asking::{Asking, Inputs};
use super::prepare::Prepared;
use super::runner_output::{Line, MAX_STDOUT_LINE_BYTES, keep_tail, read_lines};
use crate::adapters::TranslateState;
use crate::events::{Event, EventKind, Stream, Translated};
use crate::runtime::{Exit, Launched};

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "message")]
pub enum Ending {
    Completed,
    Failed(String),
    Cancelled,
}

/// The run's events on their way out: stamped, redacted and emitted in order. It owns the run's ending: should
/// it be dropped before a terminal event went out (an early return, a panic), it emits `run.failed`, so every
/// run that emitted `run.started` ends with exactly one terminal event.
pub(super) struct Events<'a> {
    pub(super) stream: Stream,
    pub(super) emit: &'a mut dyn FnMut(&Event),
    pub(super) started: Instant,
}

impl Events<'_> {
    pub(super) fn send(&mut self, event: Translated) {
        for event in self.stream.stamp(event) {
            (self.emit)(&event);
        }
    }

    /// Text held back because it could begin a bound value goes out (the runner has stopped writing).
    pub(super) fn flush_text(&mut self) {
        for event in self.stream.flush_text() {
            (self.emit)(&event);
        }
    }

    pub(super) fn failed(&mut self, message: &str) -> Translated {
        Translated::new(EventKind::RunFailed, json!({"message": message, "duration_ms": elapsed(self.started)}))
    }
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        if self.stream.is_finished() {
            return;
        }
        let message = if std::thread::panicking() {
            "The engine failed unexpectedly during the run"
        } else {
            "The run ended without a result"
        };
        // Emitting may itself fail while a panic unwinds; that must not abort the process.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.flush_text();
            let failed = self.failed(message);
            self.send(failed);
        }));
    }
}

/// How the runner's turns ended: the run's ending and terminal event, the last turn's final text, and whether
/// it was cancelled.
pub(super) struct Turns {
    pub(super) ending: Ending,
    pub(super) terminal: Translated,
    pub(super) final_text: String,
    pub(super) cancelled: bool,
}

/// Follows one launched turn of the runner to its end: the run's ending were it the last turn, its terminal
/// event, and the translation state (final text, conversation).
pub(super) fn one_turn(
    prepared: &mut Prepared,
    mut launched: Launched,
    (cancel, stop_reason): (&AtomicBool, &Mutex<Option<String>>),
    inputs: Option<&Inputs>,
    events: &mut Events<'_>,
) -> (Ending, Translated, TranslateState) {
    let (status, state, cancelled, stderr_tail) = follow(prepared, &mut launched, cancel, inputs, events);
    if cancelled {
        let mut data = json!({"duration_ms": elapsed(events.started)});
        if let Some(reason) = stop_reason.lock().ok().and_then(|reason| reason.clone()) {
            data["message"] = Value::from(reason);
        }
        return (Ending::Cancelled, Translated::new(EventKind::RunCancelled, data), state);
    }
    let success = status.as_ref().is_some_and(Exit::success);
    match (&state.failed, success) {
        (None, true) => {
            let completed = Translated::new(EventKind::RunCompleted, json!({"duration_ms": elapsed(events.started)}));
            (Ending::Completed, completed, state)
        }
        (failure, _) => {
            let message = failure.clone().unwrap_or_else(|| {
                let ended = match &status {
                    Some(Exit { code: Some(code), .. }) => format!("The runner exited with status {code}"),
                    Some(Exit { cause: Some(cause), .. }) => format!("The runner's end is unknown: {cause}"),
                    _ => "The runner exited with a signal".to_owned(),
                };
                if stderr_tail.is_empty() { ended } else { format!("{ended}: {stderr_tail}") }
            });
            let failed = events.failed(&message);
            (Ending::Failed(message), failed, state)
        }
    }
}

/// Follows the launched runner until it has exited (or was cancelled): its stdout translated into events.
/// Returns how it ended, the translation state, whether it was cancelled, and the last line of its stderr.
fn follow(
    prepared: &mut Prepared,
    launched: &mut Launched,
    cancel: &AtomicBool,
    inputs: Option<&Inputs>,
    events: &mut Events<'_>,
) -> (Option<Exit>, TranslateState, bool, String) {
    // A runner that is a server (OpenCode's) is reached through a bridge that looks like any runner's stdio.
    let bridged =
        prepared.adapter.bridge(&prepared.translation, launched.server, &mut launched.stdout, &mut launched.stdin);
    let serving = bridged.is_some();
    let mut unreachable = None;
    match bridged {
        Some(Ok((stdin, stdout))) => (launched.stdin, launched.stdout) = (Some(stdin), Some(stdout)),
        Some(Err(error)) => unreachable = Some(format!("The engine cannot reach the runner's server: {error}")),
        None => {}
    }
    let lines_rx = read_lines(launched.stdout.take());
    let (stderr_tail, stderr_reader) = keep_tail(launched.stderr.take());
    let mut state = TranslateState { price: prepared.price, ..TranslateState::default() };
    let (mut asking, problem) = Asking::start(inputs, launched, prepared.translation.stdin.as_deref());
    if let Some(problem) = unreachable.or(problem) {
        state.failed = Some(problem);
    }
    let mut cancelled = false;
    let mut stdout_open = true;
    // Until the runner has exited: a runner that closed its stdout may live on, and still obeys the cancel flag.
    let status = loop {
        if cancel.load(Ordering::SeqCst) {
            // The runner already gave its final result (the cost that crossed a cap may arrive in it): the run
            // completed. It is given a moment to exit by itself, then stopped, and its ending stays its own.
            if state.finished {
                break Some(finish_after_result(prepared, launched));
            }
            prepared.runtime.cancel(launched);
            cancelled = true;
            break None;
        }
        if asking.waiting() {
            for said in asking.settle(prepared.adapter.as_ref(), &mut state) {
                events.send(said);
            }
        }
        for said in asking.poll(prepared.adapter.as_ref(), &mut state) {
            asking.note(&said);
            events.send(said);
        }
        if !stdout_open && serving {
            // A server does not exit by itself: the bridge ended with the turn (or failed), so it is stopped.
            if !state.finished && state.failed.is_none() {
                state.failed = Some("The runner's server stopped before the turn ended".to_owned());
            }
            prepared.runtime.cancel(launched);
            break Some(Exit { code: Some(0), cause: None });
        }
        if !stdout_open {
            match launched.try_wait() {
                Some(exit) => break Some(exit),
                None => std::thread::sleep(Duration::from_millis(20)),
            }
            continue;
        }
        match lines_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Line::Out(line)) if line.dropped > 0 => events.send(oversized_line(&line)),
            Ok(Line::Out(line)) => {
                let trimmed = line.text.trim();
                if trimmed.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(trimmed) {
                    Ok(value) => {
                        for event in prepared.adapter.translate_event(&value, &mut state) {
                            asking.note(&event);
                            events.send(event);
                        }
                        // The runner gave its result: it reads nothing more, and ends once its stdin closes.
                        if state.finished {
                            asking.close();
                        }
                    }
                    Err(_) => events.send(Translated::native("stdout")),
                }
            }
            Ok(Line::OutClosed) | Err(mpsc::RecvTimeoutError::Disconnected) => stdout_open = false,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    for said in asking.abandon("the turn ended before it was answered") {
        events.send(said);
    }
    asking.close();
    // The runner has exited: let the stderr reader take its last lines before a failure quotes them (bounded,
    // in case something the runner started still holds the pipe).
    if let Some(reader) = stderr_reader {
        let deadline = Instant::now() + Duration::from_secs(1);
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let tail = stderr_tail.lock().map(|t| t.last().cloned().unwrap_or_default()).unwrap_or_default();
    (status, state, cancelled, tail)
}

/// Waits up to two seconds for a runner that reported its final result to exit; stops it if it does not. Its
/// result is what the run did: a success, whatever stopped the process afterwards.
fn finish_after_result(prepared: &mut Prepared, launched: &mut Launched) -> Exit {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Some(exit) = launched.try_wait() {
            return exit;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    prepared.runtime.cancel(launched);
    Exit { code: Some(0), cause: None }
}

pub(super) fn elapsed(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The warning that replaces a stdout line over the limit (it cannot be a whole native event).
fn oversized_line(line: &super::runner_output::OutputLine) -> Translated {
    Translated::new(
        EventKind::RunnerEvent,
        json!({
            "native_type": "stdout",
            "warning": format!(
                "A line of the runner's output was longer than {} MiB ({} bytes more): it was dropped",
                MAX_STDOUT_LINE_BYTES / (1024 * 1024),
                line.dropped
            ),
        }),
    )
}
