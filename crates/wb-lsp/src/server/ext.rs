//! The protocol extensions (documented in `docs/lsp-extensions.md`): the `workbench.*` commands with their
//! arguments and results, the `workbench/runEvent` notification and the test hook request, as typed structs.

use std::path::PathBuf;

use lsp_types as lsp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const MIGRATE: &str = "workbench.migrate";
pub const CHECK_WORKSPACE: &str = "workbench.checkWorkspace";
pub const DRY_RUN: &str = "workbench.dryRun";
pub const SMOKE: &str = "workbench.smoke";
pub const RUN: &str = "workbench.run";
pub const RUNS: &str = "workbench.runs";
pub const ATTACH: &str = "workbench.attach";
pub const KILL: &str = "workbench.kill";
pub const SEND: &str = "workbench.send";
pub const OUTCOME: &str = "workbench.outcome";
pub const APPLY_OUTCOME: &str = "workbench.applyOutcome";
pub const OUTCOME_FILE: &str = "workbench.outcomeFile";
pub const TRIAL: &str = "workbench.trial";
pub const TRIALS: &str = "workbench.trials";
pub const OPEN_TRIAL_REPORT: &str = "workbench.openTrialReport";
pub const ANSWER: &str = "workbench.answer";

/// Every command the server executes, in the order `executeCommandProvider` lists them.
pub const COMMANDS: [&str; 16] = [
    MIGRATE,
    CHECK_WORKSPACE,
    DRY_RUN,
    SMOKE,
    RUN,
    RUNS,
    ATTACH,
    KILL,
    ANSWER,
    SEND,
    OUTCOME,
    APPLY_OUTCOME,
    OUTCOME_FILE,
    TRIAL,
    TRIALS,
    OPEN_TRIAL_REPORT,
];

/// `workbench/runEvent`: one canonical event of a `workbench.run`, server to client.
pub const RUN_EVENT: &str = "workbench/runEvent";

/// `workbench/inputRequested`: a run the client follows asks the person something, server to client.
pub const INPUT_REQUESTED: &str = "workbench/inputRequested";

/// `workbench/inputResolved`: a request the client was shown is answered or refused (here or elsewhere: the
/// CLI, another window, the input timeout), server to client: the client withdraws it.
pub const INPUT_RESOLVED: &str = "workbench/inputResolved";

/// The params of `workbench/inputRequested`: the run, the request as `run.json` keeps it (`id`, `kind`, and
/// `message` and `options`, or `questions`), and one line that says it (`kind · id: details`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequestedParams<'a> {
    pub run_id: &'a str,
    pub request: &'a wb_engine::input::Request,
    pub text: String,
}

/// The params of `workbench/inputResolved`: the run, the request's id, and how it ended (`answered`, `refused`)
/// with the event's `answer` or `reason`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResolvedParams<'a> {
    pub run_id: &'a str,
    pub id: &'a str,
    pub how: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
}

/// The argument of `workbench.answer`: `{runId, requestId, answer}` or `{runId, requestId, reject: true}`; the
/// answer as `wb-lsp answer` takes it (`allow`, `deny`, `allow_always`, a question's answer, or a JSON array of
/// answers, one per question).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerArguments {
    pub run_id: String,
    pub request_id: String,
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub reject: bool,
}

/// `event` is the canonical event, unchanged (one line of `wb-lsp run --json`); `text` is what a person reads
/// for it, line by line (none for `runner.event`), rendered by the server so every editor shows the same.
#[derive(Serialize)]
pub struct RunEventParams<'a> {
    pub event: &'a wb_engine::events::Event,
    pub text: Vec<String>,
}

/// One report of `workbench.smoke`: the engine's report (as `wb-lsp smoke --json`) and its `text`, line by
/// line (the editors choose the message level from `status`).
#[derive(Serialize)]
pub struct SmokeReport {
    #[serde(flatten)]
    pub report: wb_engine::Smoke,
    pub text: Vec<String>,
}

/// A request that panics in its handler, served only by a build with the `test-hooks` feature (the tests')
/// when the client's initialization options hold `"wbLspTestHooks": true`: tests use it to prove a failing
/// handler answers with an error and the server lives on.
#[cfg(feature = "test-hooks")]
pub enum DebugPanic {}

#[cfg(feature = "test-hooks")]
impl lsp::request::Request for DebugPanic {
    type Params = Value;
    type Result = ();
    const METHOD: &'static str = "wbLsp/debug/panic";
}

/// The argument of `workbench.dryRun`, `workbench.smoke` and `workbench.run` (and of their code lenses, which
/// carry only `uri`: unset fields are left out).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunArguments {
    pub uri: Option<lsp::Url>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workspaces: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_files: Vec<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_host_docker: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unchecked_gpu: bool,
    /// Run only: stop the run (as a cancel) once its reported cost crosses this many USD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Run only: stop the run (as a cancel) once it has gone on this many seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_duration_seconds: Option<u64>,
    /// Run only: keep the run open as a session after its first turn (answered when that turn has ended).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub session: bool,
}

impl RunArguments {
    /// The command's arguments: one object, or the manifest URI optionally followed by the task.
    pub fn from_params(params: &lsp::ExecuteCommandParams) -> anyhow::Result<RunArguments> {
        let mut arguments = match params.arguments.first() {
            Some(Value::String(uri)) => RunArguments { uri: lsp::Url::parse(uri).ok(), ..RunArguments::default() },
            Some(value @ Value::Object(_)) => serde_json::from_value(value.clone())?,
            _ => RunArguments::default(),
        };
        if arguments.task.is_none() {
            arguments.task = params.arguments.get(1).and_then(Value::as_str).map(str::to_owned);
        }
        Ok(arguments)
    }
}

/// The result of `workbench.run`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub run_id: String,
    pub ending: RunEnding,
    pub final_text: String,
    /// `null` when the run committed no outcome.
    pub outcome_id: Option<String>,
}

/// The argument of `workbench.send`: a session and its next turn's task.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendArguments {
    pub run_id: String,
    pub task: String,
}

/// The result of `workbench.send`, and of `workbench.run` with `session`: how the turn ended.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnResult {
    pub run_id: String,
    /// `null` when the session ended before the turn started.
    pub turn_index: Option<u64>,
    /// `completed`, `failed` or `cancelled` (the turn's), or `ended` (the session ended before the turn).
    pub status: String,
    /// The turn's last text.
    pub final_text: String,
    /// The turn's snapshot (`wbo_…`), when its outbox changed.
    pub snapshot_id: Option<String>,
}

/// The argument of `workbench.attach` and `workbench.kill`: `{runId}` (or the id alone).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunIdArguments {
    pub run_id: String,
}

impl RunIdArguments {
    pub fn from_params(params: &lsp::ExecuteCommandParams) -> anyhow::Result<RunIdArguments> {
        match params.arguments.first() {
            Some(Value::String(id)) => Ok(RunIdArguments { run_id: id.clone() }),
            Some(value @ Value::Object(_)) => Ok(serde_json::from_value(value.clone())?),
            _ => anyhow::bail!("the command takes the run's id: {{\"runId\": \"wb_…\"}}"),
        }
    }
}

/// The argument of `workbench.runs`: `{all?}` (finished and lost runs too).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunsArguments {
    #[serde(default)]
    pub all: bool,
}

/// How a run ended: `{"status": "completed"}`, `{"status": "failed", "message": ...}` or
/// `{"status": "cancelled"}`.
#[derive(Debug, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum RunEnding {
    Completed,
    Failed { message: String },
    Cancelled,
}

impl From<&wb_engine::Ending> for RunEnding {
    fn from(ending: &wb_engine::Ending) -> RunEnding {
        match ending {
            wb_engine::Ending::Completed => RunEnding::Completed,
            wb_engine::Ending::Failed(message) => RunEnding::Failed { message: message.clone() },
            wb_engine::Ending::Cancelled => RunEnding::Cancelled,
        }
    }
}

/// The argument of `workbench.outcome` and `workbench.applyOutcome`: the outcome id, or `{id, workspace?,
/// only?}` (`only`: the paths to take, as `--apply --only`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeArguments {
    pub id: String,
    pub workspace: Option<PathBuf>,
    #[serde(default)]
    pub only: Vec<String>,
}

impl OutcomeArguments {
    pub fn from_params(params: &lsp::ExecuteCommandParams) -> anyhow::Result<OutcomeArguments> {
        match params.arguments.first() {
            Some(Value::String(id)) => Ok(OutcomeArguments { id: id.clone(), workspace: None, only: Vec::new() }),
            Some(value @ Value::Object(_)) => Ok(serde_json::from_value(value.clone())?),
            _ => anyhow::bail!("the command takes an outcome id"),
        }
    }
}

/// The result of `workbench.outcome`: the outcome's manifest and receipt, the stored files an editor can open,
/// and its text: the summary `lines` (each naming the changeset or artifact it shows), the one-line `brief`, a
/// label per changeset and what the receipt state means for applying (`receiptText`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeResult {
    pub outcome: wb_outcomes::Outcome,
    pub receipt: wb_outcomes::Receipt,
    pub files: OutcomeFiles,
    pub lines: Vec<crate::render::outcome::SummaryLine>,
    pub brief: String,
    pub changesets: Vec<ChangesetText>,
    pub receipt_text: String,
    /// Every changed path: its label, kind, line counts, whether it is binary and whether it was taken.
    pub entries: Vec<wb_outcomes::review::FileChange>,
}

/// The argument of `workbench.outcomeFile`: `{id, path, side}` (`path` a label of `entries`, `side`
/// `before` or `after`).
#[derive(Debug, Deserialize)]
pub struct OutcomeFileArguments {
    pub id: String,
    pub path: String,
    pub side: wb_outcomes::review::Side,
}

/// `{"id": "primary", "text": "primary workspace: 1 added, 0 modified, 0 deleted"}`.
#[derive(Debug, Serialize)]
pub struct ChangesetText {
    pub id: String,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct OutcomeFiles {
    pub artifacts: Vec<ArtifactFile>,
    pub reviews: Vec<ReviewFile>,
}

/// An artifact's stored content.
#[derive(Debug, Serialize)]
pub struct ArtifactFile {
    pub id: String,
    pub name: String,
    pub file: PathBuf,
}

/// A changeset's stored review diff.
#[derive(Debug, Serialize)]
pub struct ReviewFile {
    pub changeset: String,
    pub file: PathBuf,
}

/// The result of `workbench.applyOutcome`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyOutcomeResult {
    pub outcome_id: String,
    pub applied: usize,
    pub unchanged: usize,
    /// `3 applied, 0 unchanged`.
    pub text: String,
    /// The receipt's state afterwards: `pending` while paths of the outcome are not taken yet.
    pub application_state: wb_outcomes::ReceiptState,
}

/// The argument of `workbench.migrate`: `[uri]`, the manifest's URI.
#[derive(Debug)]
pub struct MigrateArguments {
    pub uri: lsp::Url,
}

impl MigrateArguments {
    pub fn from_params(params: &lsp::ExecuteCommandParams) -> Option<MigrateArguments> {
        let uri = serde_json::from_value(params.arguments.first()?.clone()).ok()?;
        Some(MigrateArguments { uri })
    }
}

/// The result of `workbench.migrate`. `migrated` is true once the client applied the edit; `applied` and
/// `failureReason` are the client's answer to `workspace/applyEdit` (absent when there was nothing to migrate).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrateResult {
    pub migrated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

/// The result of `workbench.checkWorkspace`: how many manifests the server now knows.
#[derive(Debug, Serialize)]
pub struct CheckWorkspaceResult {
    pub packages: usize,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The JSON the editors read (docs/lsp-extensions.md), pinned field by field.
    #[test]
    fn results_keep_their_wire_format() {
        let run = |ending| {
            serde_json::to_value(RunResult {
                run_id: "wb_1".into(),
                ending,
                final_text: "done".into(),
                outcome_id: None,
            })
            .ok()
        };
        assert_eq!(
            run(RunEnding::Completed),
            Some(json!({"runId": "wb_1", "ending": {"status": "completed"}, "finalText": "done", "outcomeId": null}))
        );
        assert_eq!(
            run(RunEnding::Failed { message: "boom".into() }).map(|v| v["ending"].clone()),
            Some(json!({"status": "failed", "message": "boom"}))
        );
        assert_eq!(run(RunEnding::Cancelled).map(|v| v["ending"].clone()), Some(json!({"status": "cancelled"})));
        let applied = ApplyOutcomeResult {
            outcome_id: "wbo_1".into(),
            applied: 2,
            unchanged: 1,
            text: "2 applied".into(),
            application_state: wb_outcomes::ReceiptState::Pending,
        };
        assert_eq!(
            serde_json::to_value(applied).ok(),
            Some(
                json!({"outcomeId": "wbo_1", "applied": 2, "unchanged": 1, "text": "2 applied", "applicationState": "pending"})
            )
        );
        let nothing = MigrateResult { migrated: false, applied: None, failure_reason: None };
        assert_eq!(serde_json::to_value(nothing).ok(), Some(json!({"migrated": false})));
        assert_eq!(serde_json::to_value(CheckWorkspaceResult { packages: 3 }).ok(), Some(json!({"packages": 3})));
    }

    #[test]
    fn a_lens_argument_is_just_the_uri_and_arguments_read_both_shapes() {
        let uri = lsp::Url::parse("file:///repo/.workbenches/demo/workbench.yml").ok();
        let lens = RunArguments { uri: uri.clone(), ..RunArguments::default() };
        assert_eq!(
            serde_json::to_value(lens).ok(),
            Some(json!({"uri": "file:///repo/.workbenches/demo/workbench.yml"}))
        );
        let params = |arguments: Vec<Value>| lsp::ExecuteCommandParams {
            command: RUN.into(),
            arguments,
            work_done_progress_params: lsp::WorkDoneProgressParams::default(),
        };
        let positional = RunArguments::from_params(&params(vec![json!(uri), json!("say done")])).ok();
        assert_eq!(positional.as_ref().and_then(|a| a.task.as_deref()), Some("say done"));
        let object = RunArguments::from_params(&params(vec![
            json!({"uri": uri, "envFiles": [".env"], "allowHostDocker": true}),
        ]));
        let object = object.ok();
        assert_eq!(object.as_ref().map(|a| (a.env_files.len(), a.allow_host_docker)), Some((1, true)));
        assert!(RunArguments::from_params(&params(vec![json!({"uri": 7})])).is_err());
    }
}
