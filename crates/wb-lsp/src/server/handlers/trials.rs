//! Trials in the editor: on a manifest whose package has trial tasks, a code lens that runs a trial and one
//! with the latest trial's line (opening its report); `workbench.trial` runs `wb-lsp trial --json` (this
//! binary) with progress, its cancel stopping admission as Ctrl-C does; `workbench.trials` lists the jobs;
//! `workbench.openTrialReport` answers a job's `report.html` and asks the client to show it.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use crossbeam_channel::Sender;
use lsp_server::{Message, Request, RequestId};
use lsp_types as lsp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wb_engine::trials::job::{self, Job};

use super::super::convert;
use super::super::ext;
use super::super::snapshot::Snapshot;
use super::execute::{CancelForward, Flags, begin, finish, report};
use crate::supervisor;

/// The most jobs read to find a package's latest.
const JOBS_READ: usize = 64;
/// The longest line of `wb-lsp trial --json` read (a report of hundreds of attempts with their gate logs).
const LINE_LIMIT: u64 = 64 * 1024 * 1024;

/// The argument of `workbench.trial`: the manifest, and what `wb-lsp trial` takes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialArguments {
    pub uri: Option<lsp::Url>,
    pub reps: Option<u32>,
    pub arms: Option<String>,
    pub parallel: Option<u32>,
    pub runtime: Option<String>,
    pub max_cost_usd: Option<f64>,
}

/// The argument of `workbench.trials` and `workbench.openTrialReport`: a job, or a manifest (its package's
/// latest job); `open` (default true) asks the client to show the report (`window/showDocument`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobArguments {
    pub job_id: Option<String>,
    pub uri: Option<lsp::Url>,
    pub open: Option<bool>,
}

fn arguments<T: for<'de> Deserialize<'de> + Default>(params: &lsp::ExecuteCommandParams) -> anyhow::Result<T> {
    match params.arguments.first() {
        Some(Value::String(uri)) => Ok(serde_json::from_value(serde_json::json!({"uri": uri}))?),
        Some(value @ Value::Object(_)) => Ok(serde_json::from_value(value.clone())?),
        _ => Ok(T::default()),
    }
}

/// A job as the editors list it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialJob {
    pub job_id: String,
    pub kind: job::JobKind,
    pub workbench: String,
    pub version: String,
    pub created_at: String,
    pub total: usize,
    pub done: usize,
    pub works: usize,
    pub spent_usd: f64,
    /// The line the code lens shows.
    pub summary: String,
    /// `report.html` when it has been written.
    pub report_html: Option<PathBuf>,
}

impl TrialJob {
    fn of(home: &Path, trial: &Job) -> TrialJob {
        let (done, works) = trial.progress();
        let report = job::job_dir(home, &trial.job_id).join("report.html");
        TrialJob {
            job_id: trial.job_id.clone(),
            kind: trial.kind,
            workbench: trial.workbench.clone(),
            version: trial.workbench_version.clone(),
            created_at: trial.created_at.clone(),
            total: trial.attempts.len(),
            done,
            works,
            spent_usd: trial.spent_usd(),
            summary: crate::render::trial::summary(trial),
            report_html: report.is_file().then_some(report),
        }
    }
}

/// The jobs of the package whose manifest is `manifest` (all jobs when none), newest first.
fn jobs_of(home: &Path, manifest: Option<&Path>) -> Vec<Job> {
    let real = manifest.and_then(|m| m.canonicalize().ok());
    job::list(home, JOBS_READ)
        .into_iter()
        .filter(|trial| match (&real, manifest) {
            (Some(real), _) => trial.package.canonicalize().is_ok_and(|p| &p == real),
            (None, Some(manifest)) => trial.package == manifest,
            (None, None) => true,
        })
        .collect()
}

/// The trial lenses of a manifest: run one (when its package has tasks), and the latest trial's line.
pub fn lenses(path: &Path, range: lsp::Range, uri: &lsp::Url) -> Vec<lsp::CodeLens> {
    let package_dir = path.parent().unwrap_or(Path::new("/"));
    if !package_dir.join(wb_manifest::trial_task::TRIALS_DIR).is_dir() {
        return Vec::new();
    }
    let lens = |title: String, command: &str, argument: Value| lsp::CodeLens {
        range,
        command: Some(lsp::Command { title, command: command.to_owned(), arguments: Some(vec![argument]) }),
        data: None,
    };
    let mut lenses = vec![lens("⚗ Run trials".to_owned(), ext::TRIAL, serde_json::json!({"uri": uri}))];
    if let Ok(home) = supervisor::home()
        && let Some(latest) = jobs_of(&home, Some(path)).into_iter().find(|j| j.kind == job::JobKind::Trial)
    {
        let summary = crate::render::trial::summary(&latest);
        lenses.push(lens(summary, ext::OPEN_TRIAL_REPORT, serde_json::json!({"jobId": latest.job_id})));
    }
    lenses
}

/// `workbench.trials`: the jobs of a manifest's package (or every job), newest first.
pub fn trials(_snapshot: &Snapshot, params: lsp::ExecuteCommandParams) -> anyhow::Result<Option<Value>> {
    let arguments: JobArguments = arguments(&params)?;
    let home = supervisor::home()?;
    let manifest = arguments.uri.as_ref().and_then(convert::url_to_path);
    let jobs: Vec<TrialJob> = jobs_of(&home, manifest.as_deref()).iter().map(|j| TrialJob::of(&home, j)).collect();
    Ok(Some(serde_json::to_value(jobs)?))
}

/// Ids of the `window/showDocument` requests this server sends (their answers are not waited for).
static SHOW_DOCUMENT: AtomicU64 = AtomicU64::new(0);

/// `workbench.openTrialReport`: a job's (or a manifest's latest job's) report, shown by the client when it
/// can show documents and `open` is not false; answers the job with `reportHtml`.
pub fn open_report(
    snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    _flags: Flags,
) -> anyhow::Result<Option<Value>> {
    let arguments: JobArguments = arguments(&params)?;
    let home = supervisor::home()?;
    let trial = match (&arguments.job_id, arguments.uri.as_ref().and_then(convert::url_to_path)) {
        (Some(id), _) => job::load(&home, id)?,
        (None, manifest) => jobs_of(&home, manifest.as_deref())
            .into_iter()
            .find(|j| j.kind == job::JobKind::Trial)
            .ok_or_else(|| anyhow::anyhow!("no trial has been run for this package: run one first"))?,
    };
    let listed = TrialJob::of(&home, &trial);
    let Some(report) = &listed.report_html else {
        anyhow::bail!("trial {} has no report yet (it is still running?)", trial.job_id);
    };
    if arguments.open.unwrap_or(true) && snapshot.features.show_document {
        let uri =
            lsp::Url::from_file_path(report).map_err(|()| anyhow::anyhow!("{} is not a path", report.display()))?;
        let params = lsp::ShowDocumentParams { uri, external: Some(true), take_focus: Some(true), selection: None };
        let id = RequestId::from(format!("wb-show-document-{}", SHOW_DOCUMENT.fetch_add(1, Ordering::SeqCst)));
        let request = Request::new(id, "window/showDocument".to_owned(), params);
        let _ = sender.send(Message::Request(request));
    }
    Ok(Some(serde_json::to_value(listed)?))
}

/// `workbench.trial`: runs `wb-lsp trial MANIFEST --json` with progress (`done/total · works · cost`); the
/// client's cancel stops admitting (the running attempts finish and are graded); the session's end lets the
/// trial go on alone. Answers the job (its report included) and the exit status.
pub fn trial(
    _snapshot: &Snapshot,
    params: lsp::ExecuteCommandParams,
    sender: &Sender<Message>,
    flags: Flags,
) -> anyhow::Result<Option<Value>> {
    let arguments: TrialArguments = arguments(&params)?;
    let manifest = arguments
        .uri
        .as_ref()
        .and_then(convert::url_to_path)
        .ok_or_else(|| anyhow::anyhow!("workbench.trial takes the manifest's URI: {{\"uri\": …}}"))?;
    let mut command = Command::new(supervisor::program()?);
    command.arg("trial").arg(&manifest).arg("--json");
    if let Some(reps) = arguments.reps {
        command.args(["--reps", &reps.to_string()]);
    }
    if let Some(parallel) = arguments.parallel {
        command.args(["--parallel", &parallel.to_string()]);
    }
    if let Some(arms) = &arguments.arms {
        command.args(["--arms", arms]);
    }
    if let Some(runtime) = &arguments.runtime {
        command.args(["--runtime", runtime]);
    }
    if let Some(cost) = arguments.max_cost_usd {
        command.args(["--max-cost", &cost.to_string()]);
    }
    let cwd = wb_manifest::repository_root(&manifest).unwrap_or_else(|| manifest.clone());
    let mut child = command
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start the trial: {e}"))?;
    let token = params.work_done_progress_params.work_done_token.clone();
    begin(sender, &token, "Workbench trial", true, "starting");
    // The client's cancel is the trial's Ctrl-C: nothing new starts, the running attempts finish.
    let forward = CancelForward::start(std::sync::Arc::clone(&flags.cancel), child.id());
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(stderr) = stderr {
            let mut limited = stderr.take(64 * 1024);
            let _ = limited.read_to_string(&mut text);
            // The rest is read and dropped: a full pipe would stall the trial.
            let _ = std::io::copy(&mut limited.into_inner(), &mut std::io::sink());
        }
        text
    });
    let mut job_id = None;
    let mut last_report = None;
    if let Some(stdout) = child.stdout.take() {
        let mut reader = BufReader::new(stdout);
        loop {
            if flags.detach.load(Ordering::SeqCst) {
                break;
            }
            let mut line = Vec::new();
            match (&mut reader).take(LINE_LIMIT).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let Ok(value) = serde_json::from_slice::<Value>(&line) else { continue };
            match value["type"].as_str() {
                Some("attempt") => {
                    job_id = value["job_id"].as_str().map(str::to_owned);
                    let message = format!(
                        "{}/{} · {} works · ${:.2}",
                        value["done"],
                        value["total"],
                        value["works"],
                        value["spent_usd"].as_f64().unwrap_or(0.0)
                    );
                    report(sender, &token, true, Some(message));
                }
                Some("report") => last_report = Some(value["report"].clone()),
                _ => {}
            }
        }
    }
    if flags.detach.load(Ordering::SeqCst) {
        drop(forward);
        finish(sender, &token, "left to run on its own".to_owned());
        return Ok(None);
    }
    let status = child.wait().map_err(|e| anyhow::anyhow!("waiting for the trial: {e}"))?;
    drop(forward);
    let errors = errors.join().unwrap_or_default();
    let job_id = job_id.or_else(|| {
        errors.lines().find_map(|l| l.strip_prefix("trial ")).and_then(|rest| rest.split(':').next()).map(str::to_owned)
    });
    let Some(job_id) = job_id else {
        let why = errors.lines().find(|l| l.starts_with("error")).unwrap_or("the trial did not start").to_owned();
        finish(sender, &token, format!("failed: {why}"));
        anyhow::bail!("{why}");
    };
    let home = supervisor::home()?;
    let trial = job::load(&home, &job_id)?;
    let listed = TrialJob::of(&home, &trial);
    finish(sender, &token, listed.summary.clone());
    let answer = serde_json::json!({"job": listed, "exitCode": status.code(), "report": last_report});
    Ok(Some(answer))
}
