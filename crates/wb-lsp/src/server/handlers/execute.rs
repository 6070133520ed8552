//! `workspace/executeCommand` for the execution core: `workbench.dryRun`, `workbench.smoke` and
//! `workbench.run` (documented in `docs/lsp-extensions.md`), and the code lenses that offer them.
//!
//! Arguments: one object `{uri, task?, runtime?, workspaces?, env?, envFiles?, dir?, allowHostDocker?,
//! allowUncheckedGpu?}` (or just the manifest URI). A run streams its canonical events to the client as
//! `workbench/runEvent` notifications and reports `$/progress` when the client supplied a work-done token.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;

use crossbeam_channel::Sender;
use lsp_server::{Message, Notification};
use lsp_types as lsp;
use serde_json::Value;
use wb_engine::events::EventKind;
use wb_engine::runs::{self, Followed, Logged};
use wb_engine::{Ending, Options, Request, RunLimits, RunMode, RunRequest, SessionOptions, Settings};

use super::super::convert;
use super::super::ext::{
    self, ApplyOutcomeResult, ArtifactFile, ChangesetText, OutcomeArguments, OutcomeFiles, OutcomeResult, ReviewFile,
    RunArguments, RunEnding, RunEventParams, RunIdArguments, RunResult, RunsArguments, SmokeReport, TurnResult,
};
use super::super::snapshot::{Snapshot, is_manifest};
use crate::render;
use crate::supervisor::{self, Start};

/// What the person asked for through the editor.
fn request(arguments: &RunArguments) -> anyhow::Result<Request> {
    let uri = arguments.uri.as_ref().ok_or_else(|| anyhow::anyhow!("the command takes the manifest's URI"))?;
    let manifest = convert::url_to_path(uri).ok_or_else(|| anyhow::anyhow!("not a file URI: {uri}"))?;
    if !is_manifest(&manifest) {
        anyhow::bail!("not a Workbench manifest: {}", manifest.display());
    }
    let package = manifest.parent().map(PathBuf::from).unwrap_or_default();
    // The primary workspace defaults to the repository the package belongs to.
    let repository = wb_manifest::repository_root(&manifest).unwrap_or_else(|| package.clone());
    Ok(Request {
        settings: Settings {
            source: manifest.display().to_string(),
            cwd: repository.clone(),
            primary: Some(arguments.dir.clone().unwrap_or(repository)),
            runtime: arguments.runtime.clone(),
            workspaces: arguments.workspaces.clone(),
            env_files: arguments.env_files.clone(),
            allow_host_docker: arguments.allow_host_docker,
            allow_unchecked_gpu: arguments.allow_unchecked_gpu,
            home: None,
            bare: false,
        },
        env: arguments.env.clone(),
        task: arguments.task.clone(),
    })
}

/// An execution command handler: the snapshot, the request's parameters, the channel to the client (for
/// progress and events) and the flags that stop it.
pub type Handler = fn(&Snapshot, lsp::ExecuteCommandParams, &Sender<Message>, Flags) -> anyhow::Result<Option<Value>>;

/// What stops an execution command: `cancel` (the client cancelled: a run is cancelled) and `detach` (the
/// session ends: a run goes on under its supervisor, the command stops following it).
pub struct Flags {
    pub cancel: Arc<AtomicBool>,
    pub detach: Arc<AtomicBool>,
}

/// Sends the runtime's preparation messages (image builds and pulls) as `$/progress` reports.
fn preparation_progress(
    sender: &Sender<Message>,
    token: &Option<lsp::ProgressToken>,
) -> Option<wb_engine::lifecycle::Progress> {
    let token = token.clone()?;
    let sender = sender.clone();
    Some(wb_engine::lifecycle::Progress(Arc::new(move |message: &str| {
        report(&sender, &Some(token.clone()), false, Some(message.to_owned()));
    })))
}

/// Opens the request's progress: `cancellable` for a run, which the client may stop.
pub(super) fn begin(
    sender: &Sender<Message>,
    token: &Option<lsp::ProgressToken>,
    title: &str,
    cancellable: bool,
    message: &str,
) {
    progress(
        sender,
        token,
        lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
            title: title.to_owned(),
            cancellable: Some(cancellable),
            message: Some(message.to_owned()),
            percentage: None,
        }),
    );
}

fn end(sender: &Sender<Message>, token: &Option<lsp::ProgressToken>, ok: bool) {
    let message = Some(if ok { "done".to_owned() } else { "failed".to_owned() });
    progress(sender, token, lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd { message }));
}

/// A command that prepares without launching (dry run, smoke): progress on the request's token around it.
fn preparing<T: serde::Serialize>(
    snapshot: &Snapshot,
    params: &lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    title: &str,
    work: impl FnOnce(&Snapshot, &Options) -> wb_engine::Result<T>,
) -> anyhow::Result<Option<Value>> {
    let token = params.work_done_progress_params.work_done_token.clone();
    let context = wb_engine::Context {
        inherited: wb_engine::bindings::process_environment(),
        progress: preparation_progress(sender, &token),
        ..wb_engine::Context::default()
    };
    let options = Options { request: request(&RunArguments::from_params(params)?)?, context };
    begin(sender, &token, title, false, "preparing");
    let result = work(snapshot, &options);
    end(sender, &token, result.is_ok());
    Ok(Some(serde_json::to_value(result?)?))
}

pub fn dry_run(
    snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    _flags: Flags,
) -> anyhow::Result<Option<Value>> {
    preparing(snapshot, &params, sender, "Workbench dry run", |snapshot, options| {
        wb_engine::dry_run(&snapshot.overlay, options, None, &snapshot.catalog)
    })
}

pub fn smoke(
    snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    _flags: Flags,
) -> anyhow::Result<Option<Value>> {
    preparing(snapshot, &params, sender, "Workbench smoke", |snapshot, options| {
        let reports = wb_engine::smoke(&snapshot.overlay, options, &snapshot.catalog)?;
        let with_text = |report| SmokeReport { text: render::smoke::smoke_lines(&report), report };
        Ok(reports.into_iter().map(with_text).collect::<Vec<_>>())
    })
}

fn progress(sender: &Sender<Message>, token: &Option<lsp::ProgressToken>, value: lsp::WorkDoneProgress) {
    if let Some(token) = token {
        let params = lsp::ProgressParams { token: token.clone(), value: lsp::ProgressParamsValue::WorkDone(value) };
        let _ = sender.send(Message::Notification(Notification::new("$/progress".to_owned(), params)));
    }
}

/// Runs a Workbench under its own supervisor (the run outlives this server), streaming its events; the
/// client's cancel cancels it, the session's end lets go of it.
pub fn run(
    snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    flags: Flags,
) -> anyhow::Result<Option<Value>> {
    let arguments = RunArguments::from_params(&params)?;
    let request = request(&arguments)?;
    refuse_unsaved(snapshot, &request)?;
    let token = params.work_done_progress_params.work_done_token.clone();
    begin(sender, &token, "Workbench run", true, "starting");
    let limits = RunLimits {
        max_cost_usd: arguments.max_cost_usd,
        max_duration: arguments.max_duration_seconds.map(std::time::Duration::from_secs),
        input: wb_engine::input::InputPolicy::default(),
    };
    let session = arguments.session.then_some(SessionOptions { idle_timeout: std::time::Duration::from_secs(30 * 60) });
    let request = RunRequest { request, mode: RunMode::start(limits, session), run_id: None };
    let starting = match supervisor::spawn(&request) {
        Ok(starting) => starting,
        Err(error) => {
            finish(sender, &token, format!("failed: {error:#}"));
            return Err(error);
        }
    };
    let _forward = CancelForward::start(Arc::clone(&flags.cancel), starting.pid());
    let started = starting.wait_started(&mut |message| report(sender, &token, true, Some(message.to_owned())));
    let run_id = match started {
        Ok(Start::Started { run_id, child }) => {
            // Reaped when it ends, whether or not this server still follows the run.
            std::thread::spawn(move || {
                let mut child = child;
                let _ = child.wait();
            });
            run_id
        }
        Ok(Start::Failed(failure)) => {
            finish(sender, &token, format!("failed: {}", failure.message));
            match failure.location {
                Some((path, line, column)) => {
                    anyhow::bail!("{}\n  --> {}:{line}:{column}", failure.message, path.display())
                }
                None => anyhow::bail!("{}", failure.message),
            }
        }
        Err(error) => {
            finish(sender, &token, format!("failed: {error:#}"));
            return Err(error);
        }
    };
    if arguments.session {
        return follow_turn(sender, &token, &run_id, &flags.detach, None);
    }
    follow_run(sender, &token, &run_id, &flags.detach)
}

/// `workbench.attach`: replays a run's events (also one this server did not start), then follows it to its
/// end as `workbench/runEvent` notifications and progress; answers as `workbench.run` does. The client's
/// cancel cancels the run; the session's end lets go of it.
pub fn attach(
    _snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    flags: Flags,
) -> anyhow::Result<Option<Value>> {
    let run_id = RunIdArguments::from_params(&params)?.run_id;
    let home = supervisor::home()?;
    let record = runs::read_record(&home, &run_id).with_context(|| format!("no run {run_id}"))?;
    let token = params.work_done_progress_params.work_done_token.clone();
    begin(sender, &token, "Workbench run", true, "attached");
    let _forward = CancelForward::start(Arc::clone(&flags.cancel), record.pid);
    follow_run(sender, &token, &run_id, &flags.detach)
}

/// Follows a started run's log to its end: each event to the client, then the run's result.
fn follow_run(
    sender: &Sender<Message>,
    token: &Option<lsp::ProgressToken>,
    run_id: &str,
    detach: &AtomicBool,
) -> anyhow::Result<Option<Value>> {
    let home = supervisor::home()?;
    let followed = runs::follow(&home, run_id, Some(detach), &mut |value| forward_event(sender, token, value));
    let followed = match followed {
        Ok(followed) => followed,
        Err(error) => {
            finish(sender, token, format!("failed: {error:#}"));
            return Err(error.into());
        }
    };
    let_go(sender, token, run_id, followed)?;
    let result =
        runs::result_of(&home, run_id).with_context(|| format!("the supervisor of run {run_id} kept no result"))?;
    finish(
        sender,
        token,
        match &result.ending {
            Ending::Completed => "completed".to_owned(),
            Ending::Failed(message) => format!("failed: {message}"),
            Ending::Cancelled => "cancelled".to_owned(),
        },
    );
    let result = RunResult {
        ending: RunEnding::from(&result.ending),
        run_id: result.run_id,
        final_text: result.final_text,
        outcome_id: result.outcome_id,
    };
    Ok(Some(serde_json::to_value(result)?))
}

/// A follow that stopped without the run's end: the editor's session ended (the run goes on, the error says
/// how to find it again) or the run was lost. `Ok` otherwise.
pub(super) fn let_go(
    sender: &Sender<Message>,
    token: &Option<lsp::ProgressToken>,
    run_id: &str,
    followed: Followed,
) -> anyhow::Result<()> {
    match followed {
        Followed::Stopped => {
            finish(sender, token, "goes on".to_owned());
            anyhow::bail!("The session ended while run {run_id} goes on: attach to it again (wb-lsp attach {run_id})")
        }
        Followed::Lost => {
            finish(sender, token, "lost".to_owned());
            anyhow::bail!("Run {run_id} is lost: its supervisor ended before the run did")
        }
        Followed::Ended { .. } | Followed::Reached => Ok(()),
    }
}

/// One logged event to the client: a `workbench/runEvent` notification and a progress report (nothing for a
/// line of the log that is not an event).
pub(super) fn forward_event(sender: &Sender<Message>, token: &Option<lsp::ProgressToken>, logged: &Logged) {
    let Some(event) = logged.event() else { return };
    let params = RunEventParams { event, text: render::event::event_lines(event) };
    let _ = sender.send(Message::Notification(Notification::new(ext::RUN_EVENT.to_owned(), params)));
    super::answering::notify_input(sender, event);
    let message = match event.known() {
        Some(EventKind::ToolStarted) => event.text("name").map(|n| format!("tool {n}")),
        Some(EventKind::OutputText) => Some("writing".to_owned()),
        Some(EventKind::PlanUpdated) => Some(format!("plan {}", wb_engine::plan::PlanSummary::of(&event.data).line())),
        _ => Some(event.kind.clone()),
    };
    report(sender, token, true, message);
}

/// One `report` on a command's progress.
pub(super) fn report(
    sender: &Sender<Message>,
    token: &Option<lsp::ProgressToken>,
    cancellable: bool,
    message: Option<String>,
) {
    let report = lsp::WorkDoneProgressReport { cancellable: Some(cancellable), message, percentage: None };
    progress(sender, token, lsp::WorkDoneProgress::Report(report));
}

/// Ends a command's progress with `message`.
pub(super) fn finish(sender: &Sender<Message>, token: &Option<lsp::ProgressToken>, message: String) {
    progress(sender, token, lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd { message: Some(message) }));
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
    let followed = runs::follow_turn(&home, run_id, Some(detach), input, &mut |logged| {
        forward_event(sender, token, logged);
        let Some(event) = logged.event() else { return };
        match event.known() {
            Some(EventKind::OutputText) => result.final_text = event.text("text").unwrap_or_default().to_owned(),
            Some(EventKind::OutcomeAvailable) if event.data.get("turn_index").is_some() => {
                result.snapshot_id = event.text("outcome_id").map(str::to_owned);
            }
            _ => {}
        }
    });
    let (followed, end) = match followed {
        Ok(followed) => followed,
        Err(error) => {
            finish(sender, token, format!("failed: {error:#}"));
            return Err(error.into());
        }
    };
    result.turn_index = end.index;
    result.status = if end.index.is_none() || end.status.is_empty() { "ended".to_owned() } else { end.status };
    let_go(sender, token, run_id, followed)?;
    finish(sender, token, result.status.clone());
    Ok(Some(serde_json::to_value(result)?))
}

/// Passes the client's cancel on to a run's supervisor (SIGINT, once) while a command follows the run.
pub(super) struct CancelForward {
    done: Arc<AtomicBool>,
}

impl CancelForward {
    pub(super) fn start(cancel: Arc<AtomicBool>, pid: u32) -> CancelForward {
        let done = Arc::new(AtomicBool::new(false));
        let finished = Arc::clone(&done);
        std::thread::spawn(move || {
            while !finished.load(Ordering::SeqCst) {
                if cancel.load(Ordering::SeqCst) {
                    let _ = supervisor::interrupt(pid);
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        CancelForward { done }
    }
}

impl Drop for CancelForward {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

/// A run reads its package from disk (its supervisor outlives this server and its buffers): an open file of
/// the package whose buffer differs from the disk must be saved first.
fn refuse_unsaved(snapshot: &Snapshot, request: &Request) -> anyhow::Result<()> {
    let package = PathBuf::from(&request.settings.source);
    let Some(package) = package.parent() else { return Ok(()) };
    let mut unsaved: Vec<&PathBuf> = snapshot
        .overlay
        .documents
        .iter()
        .filter(|(path, document)| {
            path.starts_with(package) && std::fs::read(path).ok().as_deref() != Some(document.text.as_bytes())
        })
        .map(|(path, _)| path)
        .collect();
    unsaved.sort();
    match unsaved.first() {
        None => Ok(()),
        Some(first) => anyhow::bail!(
            "Save {} first: a run reads its package from disk{}",
            first.display(),
            if unsaved.len() > 1 { format!(" ({} unsaved files)", unsaved.len()) } else { String::new() }
        ),
    }
}

/// `workbench.runs`: the runs under the Workbench home, newest first, as `wb-lsp runs --json` lists them
/// (`{all: true}`: finished and lost ones too).
pub fn runs(_snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let arguments: RunsArguments = match params.arguments.first() {
        Some(value) => serde_json::from_value(value.clone())?,
        None => RunsArguments::default(),
    };
    let records: Vec<Value> = runs::list(&supervisor::home()?)
        .iter()
        .filter(|record| arguments.all || record.state().is_live())
        .map(runs::record_json)
        .collect();
    Ok(Some(Value::Array(records)))
}

/// `workbench.kill`: cancels a running run (its runner stops, its partial outcome is collected); answers
/// once asked, not once stopped (a follower sees the end).
pub fn kill(_snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let run_id = RunIdArguments::from_params(&params)?.run_id;
    let record = runs::read_record(&supervisor::home()?, &run_id).with_context(|| format!("no run {run_id}"))?;
    if !record.state().is_live() {
        anyhow::bail!("Run {run_id} is not running ({})", record.state().as_str());
    }
    supervisor::interrupt(record.pid).with_context(|| format!("cannot signal the supervisor of run {run_id}"))?;
    Ok(Some(serde_json::json!({"runId": run_id, "asked": true})))
}

fn outcome_store() -> anyhow::Result<wb_outcomes::ContentStore> {
    // Without a home there is no store: the error says what to set (never a shared fallback).
    Ok(wb_outcomes::ContentStore::open(&wb_outcomes::try_default_home()?)?)
}

/// `workbench.outcome`: an outcome's manifest and receipt, plus the stored files an editor can open (each
/// artifact's content and each changeset's review diff). Never changes anything.
pub fn outcome(snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let _ = snapshot;
    let arguments = OutcomeArguments::from_params(&params)?;
    let store = outcome_store()?;
    let outcomes = wb_outcomes::OutcomeStore::new(&store);
    // A run id names the run's final outcome, as in `wb-lsp outcome`.
    let id = outcomes.resolve(&arguments.id)?;
    let outcome = outcomes.load(&id)?;
    let receipt = outcomes.receipt(&id)?;
    let artifacts = outcome
        .artifacts
        .iter()
        .filter_map(|a| {
            let file = store.path_of(&a.content.digest).ok()?;
            Some(ArtifactFile { id: a.id.clone(), name: a.name.clone(), file })
        })
        .collect();
    let reviews = outcome
        .changesets
        .iter()
        .filter_map(|c| {
            Some(ReviewFile { changeset: c.id.clone(), file: store.path_of(&c.review.as_ref()?.digest).ok()? })
        })
        .collect();
    let taken = wb_outcomes::apply::taken(&store, &id)?;
    let lines = render::outcome::summary_lines(&outcome, &receipt, &taken);
    let entries = wb_outcomes::review::file_changes(&store, &outcome, &taken)?;
    let changesets = outcome
        .changesets
        .iter()
        .map(|c| ChangesetText { id: c.id.clone(), text: render::outcome::changeset_label(c) })
        .collect();
    let result = OutcomeResult {
        brief: render::outcome::brief(&outcome),
        receipt_text: render::outcome::receipt_explanation(&receipt.state).to_owned(),
        lines,
        changesets,
        outcome,
        receipt,
        files: OutcomeFiles { artifacts, reviews },
        entries,
    };
    Ok(Some(serde_json::to_value(result)?))
}

/// `workbench.applyOutcome`: applies a pending outcome to its workspaces, all or nothing.
pub fn apply_outcome(snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let _ = snapshot;
    let arguments = OutcomeArguments::from_params(&params)?;
    let store = outcome_store()?;
    let outcomes = wb_outcomes::OutcomeStore::new(&store);
    let id = outcomes.resolve(&arguments.id)?;
    let workspace = arguments.workspace.as_deref();
    let result = if arguments.only.is_empty() {
        wb_outcomes::apply(&store, &id, workspace)?
    } else {
        wb_outcomes::apply::apply_only(&store, &id, workspace, &arguments.only)?
    };
    let result = ApplyOutcomeResult {
        application_state: outcomes.receipt(&id)?.state,
        outcome_id: id,
        applied: result.applied,
        unchanged: result.unchanged,
        text: render::outcome::applied_counts(result.applied, result.unchanged),
    };
    Ok(Some(serde_json::to_value(result)?))
}

/// `workbench.outcomeFile`: one side of one changed path, for the editor's diff view (text, a link target,
/// binary, absent, or not kept). Never changes anything.
pub fn outcome_file(snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let _ = snapshot;
    let arguments: ext::OutcomeFileArguments =
        serde_json::from_value(params.arguments.first().cloned().unwrap_or_default())
            .context("workbench.outcomeFile takes {id, path, side}")?;
    let store = outcome_store()?;
    let outcomes = wb_outcomes::OutcomeStore::new(&store);
    let id = outcomes.resolve(&arguments.id)?;
    let outcome = outcomes.load(&id)?;
    let bindings = outcomes.bindings(&id)?;
    let side = wb_outcomes::review::side_content(&store, &outcome, &bindings, &arguments.path, arguments.side)?;
    Ok(Some(serde_json::to_value(side)?))
}
