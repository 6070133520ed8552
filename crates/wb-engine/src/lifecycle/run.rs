//! `run`: launch the runner one-shot, translate its stdout into canonical events, collect the outcome, and
//! end with exactly one terminal event.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use wb_manifest::{FileSystem, ModelCatalog};
use wb_outcomes::Completeness;

use super::asking::Inputs;
use super::limits::Limits;
use super::prepare::{Prepared, prepare_one};
use super::turn::{Ending, Events, Turns, one_turn};
use super::{Options, Purpose, RunMode, require_task};
use crate::error::{EngineError, Result};
use crate::events::{Event, EventKind, Stream, Translated};
use crate::outcome;
use crate::runs::{RunLog, RunRecord, RunStatus};

/// The outcome of [`run`]: how it ended and the final answer (its supervisor keeps it beside the run's log:
/// [`crate::runs::write_result`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    pub run_id: String,
    pub ending: Ending,
    pub final_text: String,
    /// The committed final outcome (`wbo_…`); `None` when collection failed or the runner never started.
    pub outcome_id: Option<String>,
    /// Why the final outcome could not be collected (`outcome.failed`): the run's terminal event stays the
    /// authority on whether the runner's work succeeded, but the work did not reach the user, so the CLI exits
    /// non-zero.
    pub outcome_error: Option<String>,
    /// What went wrong after the run had ended (its cleanup); never the run's result, said beside it.
    pub warnings: Vec<String>,
}

/// Launches the runner one-shot and streams canonical events to `emit` until exactly one terminal event.
/// Setting `cancel` stops the runner and ends the run with `run.cancelled`. An error is returned only before
/// `run.started`; after it, every failure is the run's `run.failed`.
pub fn run(
    fs: &dyn FileSystem,
    options: &Options,
    mode: &RunMode,
    catalog: &ModelCatalog,
    cancel: Arc<AtomicBool>,
    emit: &mut dyn FnMut(&Event),
) -> Result<RunResult> {
    require_task(options, Some(mode))?;
    if let RunMode::Adopt { run_id, env_names, .. } = mode {
        require_env_again(run_id, env_names, options)?;
    }
    let adopting = mode.adopting();
    let started = Instant::now();
    let mut options = options.clone();
    options.context.cancel = Some(Arc::clone(&cancel));
    let options = &options;
    // An adopted run is claimed before its sandbox is touched: one process adopts it.
    let claim = match adopting {
        Some(id) => Some(
            RunLog::claim(&options.workbench_home(), id)
                .map_err(|error| EngineError::message(format!("Cannot adopt run {id}: {error}")))?,
        ),
        None => None,
    };
    let mut prepared = prepare_one(fs, options, catalog, Purpose::Run(mode))?;
    // An adopted run's log carries on: the events its runner's output gives again up to the last one logged
    // are already there, and are neither logged nor emitted twice.
    let (mut log, logged_through) = match (adopting, claim) {
        (Some(id), Some(claim)) => RunLog::reopen(&options.workbench_home(), id, claim)
            .map_err(|error| EngineError::io(format!("Cannot open the log of run {id}"), error))?,
        _ => {
            let log = RunLog::create(&options.workbench_home(), record(&prepared, options, mode))
                .map_err(|error| EngineError::io(format!("Cannot create the log of run {}", prepared.run_id), error))?;
            (log, 0)
        }
    };
    if let (Some(id), Some(adopted)) = (adopting, &options.context.on_adopted) {
        (adopted.0)(id);
    }
    // A remote run can be adopted should its supervisor die: what it was started with is kept for that.
    if prepared.runtime.placement() == crate::runtime::Placement::Sandbox
        && adopting.is_none()
        && let Err(error) =
            crate::sessions::save_options(&options.workbench_home(), &prepared.run_id, &options.request, mode)
    {
        prepared.warnings.push(format!("The run cannot be adopted should its supervisor die: {error}"));
    }
    let limits = Limits::start(options, mode.limits(), Arc::clone(&cancel));
    let redactor = super::redactor(&prepared);
    let stream = Stream::new(prepared.run_id.clone(), prepared.adapter.name().to_owned(), redactor.clone());
    let mut logged = |event: &Event| {
        if event.sequence <= logged_through {
            return;
        }
        // The terminal event says what the run cost: the sum of the runner's reports, null when it made none.
        let event = match event.known() {
            Some(kind) if kind.is_terminal() => {
                let mut terminal = event.clone();
                if let Some(data) = terminal.data.as_object_mut() {
                    data.insert("cost_usd".to_owned(), log.record().cost_usd.map_or(Value::Null, Value::from));
                }
                std::borrow::Cow::Owned(terminal)
            }
            _ => std::borrow::Cow::Borrowed(event),
        };
        log.append(&event);
        limits.observe(log.record());
        emit(&event);
    };
    let mut events = Events { stream, emit: &mut logged, started };
    events.send(Translated::new(
        EventKind::RunStarted,
        json!({"workbench": prepared.package.name, "version": prepared.package.version, "runtime": prepared.runtime.name()}),
    ));
    let Executed { ending, final_text, outcome_id, outcome_error } =
        execute(&mut prepared, options, mode, (&cancel, &limits.reason), &mut events);
    drop(events);
    drop(limits);
    let mut warnings = match prepared.cleanup() {
        Ok(()) => Vec::new(),
        Err(error) => vec![redactor.text(&format!("Cleaning up after the run failed: {error}"))],
    };
    if let Some(failure) = log.failure() {
        warnings.push(format!("The run's log is incomplete: {failure}"));
    }
    let ending = match ending {
        Ending::Failed(message) => Ending::Failed(redactor.text(&message)),
        other => other,
    };
    Ok(RunResult {
        run_id: prepared.run_id.clone(),
        ending,
        final_text: redactor.text(&final_text),
        outcome_id,
        outcome_error: outcome_error.map(|e| redactor.text(&e)),
        warnings,
    })
}

/// An adopted run started with `--env` needs each of those variables given again: their values were never kept
/// (they are bound, and redacted, from what this adoption is given).
fn require_env_again(id: &str, env_names: &[String], options: &Options) -> Result<()> {
    let given: Vec<&str> =
        options.request.env.iter().filter_map(|entry| entry.split_once('=')).map(|(name, _)| name).collect();
    let missing: Vec<&str> = env_names.iter().map(String::as_str).filter(|name| !given.contains(name)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let flags: Vec<String> = missing.iter().map(|name| format!("--env {name}=...")).collect();
    Err(EngineError::message(format!(
        "Cannot adopt run {id}: it was started with --env {}, whose value is never kept; give it again: wb-lsp attach {id} {}",
        missing.join(", --env "),
        flags.join(" ")
    )))
}

/// The record a run's log starts with.
fn record(prepared: &Prepared, options: &Options, mode: &RunMode) -> RunRecord {
    let pid = std::process::id();
    RunRecord {
        run_id: prepared.run_id.clone(),
        workbench: prepared.package.name.clone(),
        version: prepared.package.version.clone(),
        runtime: prepared.runtime.name().to_owned(),
        runner: prepared.adapter.name().to_owned(),
        task_digest: crate::runs::task_digest(options.request.task.as_deref().unwrap_or_default()),
        pid,
        interrupt_cancels: options.context.interrupt_cancels,
        pid_start: crate::runs::process_start(pid),
        started_at: wb_outcomes::now_utc(),
        ended_at: None,
        // A session resumed without a task waits for its first turn from the start.
        status: if mode.session().is_some() && options.request.task.as_deref().is_none_or(|t| t.trim().is_empty()) {
            RunStatus::Idle
        } else {
            RunStatus::Running
        },
        outcome_id: None,
        cost_usd: None,
        last_sequence: 0,
        activity: None,
        message: None,
        session: mode.session().is_some(),
        turns: 0,
        resumed_from: mode.resume_from().map(str::to_owned),
        pending: Vec::new(),
        plan: None,
    }
}

/// What [`execute`] found.
struct Executed {
    ending: Ending,
    final_text: String,
    outcome_id: Option<String>,
    outcome_error: Option<String>,
}

/// Everything after `run.started`, through the terminal event: the runner's turn (a session's turns, one after
/// another), then the final outcome.
fn execute(
    prepared: &mut Prepared,
    options: &Options,
    mode: &RunMode,
    stops: (&AtomicBool, &Mutex<Option<String>>),
    events: &mut Events<'_>,
) -> Executed {
    let fail = |events: &mut Events<'_>, message: String| {
        let failed = events.failed(&message);
        events.send(failed);
        Executed { ending: Ending::Failed(message), final_text: String::new(), outcome_id: None, outcome_error: None }
    };
    // `runs/<id>/outbox` under the Workbench home: private, like everything the engine keeps there.
    if let Err(error) = wb_outcomes::create_private_dir(&prepared.outbox) {
        return fail(events, format!("Cannot create the outbox {}: {error}", prepared.outbox.display()));
    }
    // The baseline of every writable workspace, before the runner can touch it.
    let baselines = outcome::baseline(&options.workbench_home(), &prepared.workspaces, &prepared.working_copies);
    let inputs =
        Inputs::new(crate::runs::RunDir::new(&options.workbench_home(), &prepared.run_id), mode.limits().input);
    let Turns { ending, terminal, final_text, cancelled } = match mode.session() {
        None => {
            let launched = match prepared.adopted.take() {
                Some(adopted) => adopted,
                None => match prepared.runtime.launch(&prepared.translation) {
                    Ok(launched) => {
                        crate::leftovers::note_runner(&options.workbench_home(), &prepared.run_id, &launched);
                        launched
                    }
                    Err(error) => return fail(events, error.to_string()),
                },
            };
            events.send(Translated::new(EventKind::RunReady, json!({})));
            let (ending, terminal, state) = one_turn(prepared, launched, stops, Some(&inputs), events);
            let cancelled = ending == Ending::Cancelled;
            Turns { ending, terminal, final_text: state.final_text, cancelled }
        }
        Some(session) => super::session::turns(prepared, options, mode, session, (stops, &inputs), events),
    };
    events.flush_text();
    // Execution has stopped: collect and commit the final outcome, then announce it before the terminal event.
    // An orderly stop (the runner exited by itself, successfully or not) gives a complete collection; a
    // cancelled runner may have left work half-written, so its outcome is partial.
    let completeness = if cancelled { Completeness::Partial } else { Completeness::Complete };
    // A remote runtime brings the sandbox's changes and outbox back first (the sandbox still exists); Docker
    // checks that the container left no Git metadata behind. Neither is cancelled by the run's flag.
    let collected = match prepared.runtime.retrieve(&prepared.outbox) {
        Ok(()) => {
            let pending = prepared.runtime.placement() == crate::runtime::Placement::Sandbox;
            outcome::collect(baselines, &prepared.run_id, &prepared.outbox, completeness, pending, Vec::new())
        }
        Err(error) => Err(error),
    };
    let (outcome_id, outcome_error) = match collected {
        Ok((outcome, receipt)) => {
            events.send(Translated::new(EventKind::OutcomeAvailable, outcome::available_data(&outcome, &receipt)));
            (Some(outcome.id), None)
        }
        Err(error) => {
            let mut message = super::redactor(prepared).text(&error.to_string());
            let mut data = json!({});
            // A service that keeps recoveries keeps the sandbox behind a checkpoint (E2B): said here.
            if let Some(kept) = prepared.runtime.keep_for_recovery(&message) {
                message = format!("{message}. {}", kept.note);
                if kept.kept {
                    data["recovery"] = json!({"sandbox_id": kept.sandbox_id, "paused": kept.paused});
                }
            }
            data["message"] = Value::from(message.clone());
            events.send(Translated::new(EventKind::OutcomeFailed, data));
            (None, Some(message))
        }
    };
    events.send(terminal);
    Executed { ending, final_text, outcome_id, outcome_error }
}
