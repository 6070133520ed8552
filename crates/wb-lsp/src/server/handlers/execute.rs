//! `workspace/executeCommand` for the execution core: `workbench.dryRun`, `workbench.smoke` and
//! `workbench.run` (documented in `docs/lsp-extensions.md`), and the code lenses that offer them.
//!
//! Arguments: one object `{uri, task?, runtime?, workspaces?, env?, envFiles?, dir?, allowHostDocker?,
//! allowUncheckedGpu?}` (or just the manifest URI). A run streams its canonical events to the client as
//! `workbench/runEvent` notifications and reports `$/progress` when the client supplied a work-done token.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crossbeam_channel::Sender;
use lsp_server::{Message, Notification};
use lsp_types as lsp;
use serde::Deserialize;
use serde_json::{Value, json};
use wb_engine::{Ending, Options};

use super::super::convert;
use super::super::state::{Snapshot, is_manifest};

pub const DRY_RUN: &str = "workbench.dryRun";
pub const SMOKE: &str = "workbench.smoke";
pub const RUN: &str = "workbench.run";
pub const RUN_EVENT: &str = "workbench/runEvent";
pub const OUTCOME: &str = "workbench.outcome";
pub const APPLY_OUTCOME: &str = "workbench.applyOutcome";

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Arguments {
    uri: Option<lsp::Url>,
    task: Option<String>,
    runtime: Option<String>,
    #[serde(default)]
    workspaces: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    env_files: Vec<PathBuf>,
    dir: Option<PathBuf>,
    #[serde(default)]
    allow_host_docker: bool,
    #[serde(default)]
    allow_unchecked_gpu: bool,
}

fn arguments(params: &lsp::ExecuteCommandParams) -> anyhow::Result<Arguments> {
    let mut arguments = match params.arguments.first() {
        Some(Value::String(uri)) => Arguments { uri: lsp::Url::parse(uri).ok(), ..Arguments::default() },
        Some(value @ Value::Object(_)) => serde_json::from_value(value.clone())?,
        _ => Arguments::default(),
    };
    if arguments.task.is_none() {
        arguments.task = params.arguments.get(1).and_then(Value::as_str).map(str::to_owned);
    }
    Ok(arguments)
}

fn options(arguments: &Arguments) -> anyhow::Result<Options> {
    let uri = arguments.uri.as_ref().ok_or_else(|| anyhow::anyhow!("the command takes the manifest's URI"))?;
    let manifest = convert::url_to_path(uri).ok_or_else(|| anyhow::anyhow!("not a file URI: {uri}"))?;
    if !is_manifest(&manifest) {
        anyhow::bail!("not a Workbench manifest: {}", manifest.display());
    }
    let package = manifest.parent().map(PathBuf::from).unwrap_or_default();
    // The primary workspace defaults to the repository the package belongs to.
    let repository = wb_manifest::repository_root(&manifest).unwrap_or_else(|| package.clone());
    Ok(Options {
        source: manifest.display().to_string(),
        cwd: repository.clone(),
        primary: Some(arguments.dir.clone().unwrap_or(repository)),
        runtime: arguments.runtime.clone(),
        workspaces: arguments.workspaces.clone(),
        env: arguments.env.clone(),
        env_files: arguments.env_files.clone(),
        allow_host_docker: arguments.allow_host_docker,
        allow_unchecked_gpu: arguments.allow_unchecked_gpu,
        task: arguments.task.clone(),
        // Variables that are not UTF-8 cannot be bound; they are skipped rather than crashing the server.
        inherited: std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect(),
        progress: None,
        home: None,
        stage_dir: None,
    })
}

/// An execution command handler: the snapshot, the request's parameters, the channel to the client (for
/// progress and events) and the cancel flag.
pub type Handler =
    fn(&Snapshot, lsp::ExecuteCommandParams, &Sender<Message>, Arc<AtomicBool>) -> anyhow::Result<Option<Value>>;

/// Sends the runtime's preparation messages (image builds and pulls) as `$/progress` reports.
fn preparation_progress(
    sender: &Sender<Message>,
    token: &Option<lsp::ProgressToken>,
) -> Option<wb_engine::lifecycle::Progress> {
    let token = token.clone()?;
    let sender = sender.clone();
    Some(wb_engine::lifecycle::Progress(Arc::new(move |message: &str| {
        let report = lsp::WorkDoneProgress::Report(lsp::WorkDoneProgressReport {
            cancellable: Some(false),
            message: Some(message.to_owned()),
            percentage: None,
        });
        progress(&sender, &Some(token.clone()), report);
    })))
}

fn begin(sender: &Sender<Message>, token: &Option<lsp::ProgressToken>, title: &str) {
    progress(
        sender,
        token,
        lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
            title: title.to_owned(),
            cancellable: Some(false),
            message: Some("preparing".to_owned()),
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
    let mut options = options(&arguments(params)?)?;
    options.progress = preparation_progress(sender, &token);
    begin(sender, &token, title);
    let result = work(snapshot, &options);
    end(sender, &token, result.is_ok());
    Ok(Some(serde_json::to_value(result?)?))
}

pub fn dry_run(
    snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    _cancel: Arc<AtomicBool>,
) -> anyhow::Result<Option<Value>> {
    preparing(snapshot, &params, sender, "Workbench dry run", |snapshot, options| {
        wb_engine::dry_run(&snapshot.overlay, options, &snapshot.catalog)
    })
}

pub fn smoke(
    snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    _cancel: Arc<AtomicBool>,
) -> anyhow::Result<Option<Value>> {
    preparing(snapshot, &params, sender, "Workbench smoke", |snapshot, options| {
        wb_engine::smoke(&snapshot.overlay, options, &snapshot.catalog)
    })
}

fn progress(sender: &Sender<Message>, token: &Option<lsp::ProgressToken>, value: lsp::WorkDoneProgress) {
    if let Some(token) = token {
        let params = lsp::ProgressParams { token: token.clone(), value: lsp::ProgressParamsValue::WorkDone(value) };
        let _ = sender.send(Message::Notification(Notification::new("$/progress".to_owned(), params)));
    }
}

/// Runs a Workbench, streaming events; `cancel` stops it (`$/cancelRequest` or a cancelled progress).
pub fn run(
    snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<Option<Value>> {
    let mut options = options(&arguments(&params)?)?;
    let token = params.work_done_progress_params.work_done_token.clone();
    options.progress = preparation_progress(sender, &token);
    progress(
        sender,
        &token,
        lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
            title: "Workbench run".to_owned(),
            cancellable: Some(true),
            message: Some("starting".to_owned()),
            percentage: None,
        }),
    );
    let mut emit = |event: &wb_engine::events::Event| {
        let notification = Notification::new(RUN_EVENT.to_owned(), json!({ "event": event }));
        let _ = sender.send(Message::Notification(notification));
        let message = match event.kind.as_str() {
            "tool.started" => event.data.get("name").and_then(Value::as_str).map(|n| format!("tool {n}")),
            "output.text" => Some("writing".to_owned()),
            other => Some(other.to_owned()),
        };
        progress(
            sender,
            &token,
            lsp::WorkDoneProgress::Report(lsp::WorkDoneProgressReport {
                cancellable: Some(true),
                message,
                percentage: None,
            }),
        );
    };
    let result = wb_engine::run(&snapshot.overlay, &options, &snapshot.catalog, cancel, &mut emit);
    let end_message = match &result {
        Ok(result) => match &result.ending {
            Ending::Completed => "completed".to_owned(),
            Ending::Failed(message) => format!("failed: {message}"),
            Ending::Cancelled => "cancelled".to_owned(),
        },
        Err(error) => format!("failed: {error}"),
    };
    progress(sender, &token, lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd { message: Some(end_message) }));
    let result = result?;
    let ending = match &result.ending {
        Ending::Completed => json!({"status": "completed"}),
        Ending::Failed(message) => json!({"status": "failed", "message": message}),
        Ending::Cancelled => json!({"status": "cancelled"}),
    };
    Ok(Some(json!({
        "runId": result.run_id,
        "ending": ending,
        "finalText": result.final_text,
        "outcomeId": result.outcome_id,
    })))
}

/// Code lenses above a manifest: Dry run, Smoke, Run. Clients that can ask for a task (the VS Code
/// extension) fill it in; others get an error asking for one.
pub fn code_lens(snapshot: &Snapshot, params: lsp::CodeLensParams) -> anyhow::Result<Option<Vec<lsp::CodeLens>>> {
    let uri = params.text_document.uri;
    let Some(path) = convert::url_to_path(&uri) else { return Ok(None) };
    if !is_manifest(&path) || wb_manifest::repository_root(&path).is_none() {
        return Ok(None);
    }
    let Some(index) = snapshot.index(&path) else { return Ok(None) };
    let range = convert::range(&index, wb_syntax::TextRange::empty(0), snapshot.encoding);
    let lens = |title: &str, command: &str| lsp::CodeLens {
        range,
        command: Some(lsp::Command {
            title: title.to_owned(),
            command: command.to_owned(),
            arguments: Some(vec![json!({"uri": uri})]),
        }),
        data: None,
    };
    Ok(Some(vec![lens("▶ Dry run", DRY_RUN), lens("✓ Smoke", SMOKE), lens("▶ Run", RUN)]))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutcomeArguments {
    id: String,
    workspace: Option<PathBuf>,
}

fn outcome_arguments(params: &lsp::ExecuteCommandParams) -> anyhow::Result<OutcomeArguments> {
    match params.arguments.first() {
        Some(Value::String(id)) => Ok(OutcomeArguments { id: id.clone(), workspace: None }),
        Some(value @ Value::Object(_)) => Ok(serde_json::from_value(value.clone())?),
        _ => anyhow::bail!("the command takes an outcome id"),
    }
}

fn outcome_store() -> anyhow::Result<wb_outcomes::ContentStore> {
    Ok(wb_outcomes::ContentStore::open(&wb_outcomes::default_home())?)
}

/// `workbench.outcome`: an outcome's manifest and receipt, plus the stored files an editor can open (each
/// artifact's content and each changeset's review diff). Never changes anything.
pub fn outcome(snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let _ = snapshot;
    let arguments = outcome_arguments(&params)?;
    let store = outcome_store()?;
    let outcomes = wb_outcomes::OutcomeStore::new(&store);
    let outcome = outcomes.load(&arguments.id)?;
    let receipt = outcomes.receipt(&arguments.id)?;
    let artifacts: Vec<Value> = outcome
        .artifacts
        .iter()
        .filter_map(|a| Some(json!({"id": a.id, "name": a.name, "file": store.path_of(&a.content.digest).ok()?})))
        .collect();
    let reviews: Vec<Value> = outcome
        .changesets
        .iter()
        .filter_map(|c| Some(json!({"changeset": c.id, "file": store.path_of(&c.review.as_ref()?.digest).ok()?})))
        .collect();
    Ok(Some(json!({"outcome": outcome, "receipt": receipt, "files": {"artifacts": artifacts, "reviews": reviews}})))
}

/// `workbench.applyOutcome`: applies a pending outcome to its workspaces, all or nothing.
pub fn apply_outcome(snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let _ = snapshot;
    let arguments = outcome_arguments(&params)?;
    let store = outcome_store()?;
    let result = wb_outcomes::apply(&store, &arguments.id, arguments.workspace.as_deref())?;
    Ok(Some(json!({"outcomeId": arguments.id, "applied": result.applied, "unchanged": result.unchanged})))
}
