//! Grading an attempt on this machine (the local runtime's grading): a fresh copy of the task's fixture, its
//! setup commands run there as before the agent started, the attempt's outcome laid onto it
//! (`wb_outcomes::apply_to_copy`: checked against its baseline, the receipt untouched), then the gates. The
//! directory the agent worked in is never read: whatever it left beside its changes does not reach the gates.

use std::path::Path;

use wb_manifest::trial_task::{Gate, TrialTask};
use wb_outcomes::ContentStore;

use super::fixture::{FixtureError, materialize};
use super::gates::run_gates;
use super::job::GateResult;
use super::schedule::GradeError;

/// Grades an attempt whose outcome is `outcome_id` (none: it changed nothing) in `scratch/graded` (`scratch` is
/// made when missing; `graded` must not exist); `env` is the environment the setup and the gates run with.
pub fn grade_local(
    task: &TrialTask,
    store: &ContentStore,
    outcome_id: Option<&str>,
    scratch: &Path,
    env: &[(String, String)],
) -> Result<Vec<GateResult>, GradeError> {
    grade_with(task, store, outcome_id, scratch, env, |gates, dir| Ok(run_gates(gates, dir, env)))
}

/// [`grade_local`], the gates run by `gates` on the graded directory (in a fresh container, for Docker).
pub fn grade_with(
    task: &TrialTask,
    store: &ContentStore,
    outcome_id: Option<&str>,
    scratch: &Path,
    env: &[(String, String)],
    gates: impl FnOnce(&[Gate], &Path) -> Result<Vec<GateResult>, GradeError>,
) -> Result<Vec<GateResult>, GradeError> {
    std::fs::create_dir_all(scratch).map_err(|source| FixtureError::Io {
        what: "cannot create",
        path: scratch.to_owned(),
        source,
    })?;
    let workspace = materialize(task, &scratch.join("graded"))?;
    set_up(task, &workspace, env).map_err(|e| GradeError::Runtime(e.to_string()))?;
    if let Some(outcome_id) = outcome_id {
        wb_outcomes::apply_to_copy(store, outcome_id, &workspace).map_err(|e| GradeError::Apply(e.to_string()))?;
    }
    gates(&task.gates, &workspace)
}

/// A setup command of a task that failed, with the end of its output.
#[derive(Debug, thiserror::Error)]
#[error("the task's setup `{command}` failed: {log}")]
pub struct SetupFailed {
    pub command: String,
    pub log: String,
}

/// Runs the task's setup commands in `workspace`, in order, as before an agent starts there: the first that
/// fails stops, with its output's end.
pub fn set_up(task: &TrialTask, workspace: &Path, env: &[(String, String)]) -> Result<(), SetupFailed> {
    for (index, command) in task.setup.iter().enumerate() {
        let setup = Gate { id: format!("setup-{index}"), title: None, run: command.clone(), timeout_seconds: None };
        let result = run_gates(std::slice::from_ref(&setup), workspace, env);
        if result.iter().any(|r| r.exit_code != Some(0)) {
            let log = result.first().map(|r| r.log.trim().to_owned()).unwrap_or_default();
            return Err(SetupFailed { command: command.clone(), log });
        }
    }
    Ok(())
}
