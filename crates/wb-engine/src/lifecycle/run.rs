//! `run`: launch the runner one-shot, translate its stdout into canonical events, collect the outcome, and
//! end with exactly one terminal event.

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_manifest::{FileSystem, ModelCatalog};
use wb_outcomes::Completeness;

use super::prepare::prepare_one;
use super::{Options, Purpose, require_task};
use crate::adapters::TranslateState;
use crate::error::{EngineError, Result};
use crate::events::{Event, Redactor, Stream, Translated};
use crate::outcome;

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
    let redactor = Redactor::new(prepared.env.values());
    let mut stream = Stream::new(prepared.run_id.clone(), prepared.adapter.name().to_owned(), redactor.clone());
    let mut send = |stream: &mut Stream, event: Translated| {
        if let Some(event) = stream.stamp(event) {
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
    let baselines = outcome::baseline(&options.workbench_home(), &prepared.workspaces);
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
    loop {
        if cancel.load(Ordering::SeqCst) {
            prepared.runtime.cancel(&mut launched);
            cancelled = true;
            break;
        }
        match lines_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Line::Out(line)) => {
                let trimmed = line.trim();
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
            Ok(Line::OutClosed) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    let status = if cancelled { None } else { launched.wait() };
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
        let success = status.is_some_and(|s| s.success());
        match (&state.failed, success) {
            (None, true) => (Ending::Completed, Translated::new("run.completed", duration)),
            (failure, _) => {
                let detail = failure.clone().unwrap_or_else(|| {
                    let tail = stderr_tail.lock().map(|t| t.last().cloned().unwrap_or_default()).unwrap_or_default();
                    let code = status.and_then(|s| s.code).map_or("a signal".to_owned(), |c| format!("status {c}"));
                    if tail.is_empty() {
                        format!("The runner exited with {code}")
                    } else {
                        format!("The runner exited with {code}: {tail}")
                    }
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
    let collected =
        outcome::collect(baselines, &prepared.run_id, &prepared.outbox, completeness, prepared.runtime.name());
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

/// What the stdout reader sends: a line, then that the stream ended.
enum Line {
    Out(String),
    OutClosed,
}

/// Reads the runner's stdout on a thread of its own, so the loop can also watch the cancel flag.
fn read_lines(stdout: Option<Box<dyn Read + Send>>) -> mpsc::Receiver<Line> {
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = stdout {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Line::Out(line)).is_err() {
                    break;
                }
            }
            let _ = tx.send(Line::OutClosed);
        });
    }
    rx
}

/// The last lines of the runner's stderr a failure quotes.
const STDERR_TAIL_LINES: usize = 20;

/// Keeps the last lines of the runner's stderr, read on a thread of its own.
fn keep_tail(stderr: Option<Box<dyn Read + Send>>) -> (Arc<Mutex<Vec<String>>>, Option<JoinHandle<()>>) {
    let tail = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = stderr.map(|stderr| {
        let tail = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(std::result::Result::ok) {
                if let Ok(mut tail) = tail.lock() {
                    tail.push(line);
                    if tail.len() > STDERR_TAIL_LINES {
                        tail.remove(0);
                    }
                }
            }
        })
    });
    (tail, reader)
}
