//! `run`: launch the runner one-shot, translate its stdout into canonical events, collect the outcome, and
//! end with exactly one terminal event.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_manifest::{FileSystem, ModelCatalog};
use wb_outcomes::Completeness;

use super::prepare::prepare_one;
use super::runner_output::{Line, MAX_STDOUT_LINE_BYTES, keep_tail, read_lines};
use super::{Options, Purpose, require_task};
use crate::adapters::TranslateState;
use crate::error::{EngineError, Result};
use crate::events::{Event, Stream, Translated};
use crate::outcome;
use crate::runtime::Exit;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    Completed,
    Failed(String),
    Cancelled,
}

/// The outcome of [`run`]: how it ended and the final answer.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub run_id: String,
    pub ending: Ending,
    pub final_text: String,
    /// The committed final outcome (`wbo_…`); `None` when collection failed or the runner never started.
    pub outcome_id: Option<String>,
}

/// Launches the runner one-shot and streams canonical events to `emit` until exactly one terminal event.
/// Setting `cancel` stops the runner and ends the run with `run.cancelled`.
pub fn run(
    fs: &dyn FileSystem,
    options: &Options,
    catalog: &ModelCatalog,
    cancel: Arc<AtomicBool>,
    emit: &mut dyn FnMut(&Event),
) -> Result<RunResult> {
    require_task(options)?;
    let started = Instant::now();
    let mut prepared = prepare_one(fs, options, catalog, Purpose::Run)?;
    let redactor = super::redactor(&prepared);
    let mut stream = Stream::new(prepared.run_id.clone(), prepared.adapter.name().to_owned(), redactor.clone());
    let mut send = |stream: &mut Stream, event: Translated| {
        for event in stream.stamp(event) {
            emit(&event);
        }
    };
    send(
        &mut stream,
        Translated::new(
            "run.started",
            json!({"workbench": prepared.package.name, "version": prepared.package.version, "runtime": prepared.runtime.name()}),
        ),
    );
    // `runs/<id>/outbox` under the Workbench home: private, like everything the engine keeps there.
    wb_outcomes::create_private_dir(&prepared.outbox).map_err(|e| EngineError::io("cannot create the outbox", e))?;
    // The baseline of every writable workspace, before the runner can touch it.
    let baselines =
        outcome::baseline(&options.workbench_home(), &prepared.workspaces, &prepared.runtime.working_copies());
    let mut launched = match prepared.runtime.launch(&prepared.translation) {
        Ok(launched) => launched,
        Err(error) => {
            let message = redactor.text(&error.to_string());
            send(
                &mut stream,
                Translated::new("run.failed", json!({"message": message, "duration_ms": elapsed(started)})),
            );
            prepared.cleanup()?;
            return Ok(RunResult {
                run_id: prepared.run_id.clone(),
                ending: Ending::Failed(message),
                final_text: String::new(),
                outcome_id: None,
            });
        }
    };
    send(&mut stream, Translated::new("run.ready", json!({})));
    let lines_rx = read_lines(launched.stdout.take());
    let (stderr_tail, stderr_reader) = keep_tail(launched.stderr.take());
    let mut state = TranslateState::default();
    let mut cancelled = false;
    let mut stdout_open = true;
    // Until the runner has exited: a runner that closed its stdout may live on, and still obeys the cancel flag.
    let status = loop {
        if cancel.load(Ordering::SeqCst) {
            prepared.runtime.cancel(&mut launched);
            cancelled = true;
            break None;
        }
        if !stdout_open {
            match launched.try_wait() {
                Some(exit) => break Some(exit),
                None => std::thread::sleep(Duration::from_millis(20)),
            }
            continue;
        }
        match lines_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Line::Out(line)) if line.dropped > 0 => send(&mut stream, oversized_line(&line)),
            Ok(Line::Out(line)) => {
                let trimmed = line.text.trim();
                if trimmed.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(trimmed) {
                    Ok(value) => {
                        for event in prepared.adapter.translate_event(&value, &mut state) {
                            send(&mut stream, event);
                        }
                    }
                    Err(_) => send(&mut stream, Translated::native("stdout")),
                }
            }
            Ok(Line::OutClosed) | Err(mpsc::RecvTimeoutError::Disconnected) => stdout_open = false,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    // The runner has exited: let the stderr reader take its last lines before a failure quotes them (bounded,
    // in case something the runner started still holds the pipe).
    if let Some(reader) = stderr_reader {
        let deadline = Instant::now() + Duration::from_secs(1);
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let duration = json!({"duration_ms": elapsed(started)});
    let (ending, terminal) = if cancelled {
        (Ending::Cancelled, Translated::new("run.cancelled", duration))
    } else {
        let success = status.as_ref().is_some_and(|s| s.success());
        match (&state.failed, success) {
            (None, true) => (Ending::Completed, Translated::new("run.completed", duration)),
            (failure, _) => {
                let detail = failure.clone().unwrap_or_else(|| {
                    let tail = stderr_tail.lock().map(|t| t.last().cloned().unwrap_or_default()).unwrap_or_default();
                    let ended = match &status {
                        Some(Exit { code: Some(code), .. }) => format!("The runner exited with status {code}"),
                        Some(Exit { cause: Some(cause), .. }) => format!("The runner's end is unknown: {cause}"),
                        _ => "The runner exited with a signal".to_owned(),
                    };
                    if tail.is_empty() { ended } else { format!("{ended}: {tail}") }
                });
                let message = redactor.text(&detail);
                let data = json!({"message": message, "duration_ms": elapsed(started)});
                (Ending::Failed(message), Translated::new("run.failed", data))
            }
        }
    };
    // Execution has stopped: collect and commit the final outcome, then announce it before the terminal event.
    // An orderly stop (the runner exited by itself, successfully or not) gives a complete collection; a
    // cancelled runner may have left work half-written, so its outcome is partial.
    let completeness = if cancelled { Completeness::Partial } else { Completeness::Complete };
    // A remote runtime brings the sandbox's changes and outbox back first (the sandbox still exists).
    let collected = match prepared.runtime.retrieve(&prepared.outbox) {
        Ok(()) => {
            outcome::collect(baselines, &prepared.run_id, &prepared.outbox, completeness, prepared.runtime.name())
        }
        Err(error) => Err(error.to_string()),
    };
    let outcome_id = match collected {
        Ok((outcome, receipt)) => {
            send(&mut stream, Translated::new("outcome.available", outcome::available_data(&outcome, &receipt)));
            Some(outcome.id)
        }
        Err(message) => {
            send(&mut stream, Translated::new("outcome.failed", json!({"message": redactor.text(&message)})));
            None
        }
    };
    send(&mut stream, terminal);
    let run_id = prepared.run_id.clone();
    prepared.cleanup()?;
    Ok(RunResult { run_id, ending, final_text: redactor.text(&state.final_text), outcome_id })
}

fn elapsed(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The warning that replaces a stdout line over the limit (it cannot be a whole native event).
fn oversized_line(line: &super::runner_output::OutputLine) -> Translated {
    Translated::new(
        "runner.event",
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
