//! Calibrating a task's gates before any agent is paid: on the untouched fixture they must fail (else they do
//! not check the task), on the `expert` reference every gate must pass (else no agent can work), and on every
//! other reference (a naive solution) they must fail (else they accept what the task's author calls wrong).
//! Each subject is a fresh fixture after the task's setup, a reference laid over it as an overlay.

use std::path::Path;

use serde::Serialize;
use wb_manifest::trial_task::TrialTask;

use super::fixture::{FixtureError, materialize};
use super::gates::{run_gates, verdict};
use super::job::{GateResult, Verdict};
use super::schedule::GradeError;
use crate::adapters::package_files::{Links, copy_tree};

/// The reference every gate must pass.
pub const EXPERT: &str = "expert";
/// The directory of a task that holds its references.
pub const REFERENCES_DIR: &str = "references";

/// What the gates gave on one subject, and whether that is what they should.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    /// `fixture`, or `reference <name>`.
    pub subject: String,
    /// `fail` or `pass`.
    pub expected: &'static str,
    pub verdict: Verdict,
    pub ok: bool,
    /// What is wrong, in a sentence, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub gates: Vec<GateResult>,
}

/// Calibrates `task`'s gates in `scratch` (made when missing; emptied after).
pub fn calibrate(task: &TrialTask, scratch: &Path, env: &[(String, String)]) -> Result<Vec<Calibration>, GradeError> {
    let io = |source| FixtureError::Io { what: "cannot create", path: scratch.to_owned(), source };
    std::fs::create_dir_all(scratch).map_err(io)?;
    let mut subjects: Vec<(String, Option<std::path::PathBuf>)> = vec![("fixture".to_owned(), None)];
    let references = task.dir.join(REFERENCES_DIR);
    if let Ok(entries) = std::fs::read_dir(&references) {
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        subjects.extend(names.into_iter().map(|name| (format!("reference {name}"), Some(references.join(name)))));
    }
    let mut calibrations = Vec::new();
    for (index, (subject, overlay)) in subjects.into_iter().enumerate() {
        let workspace = materialize(task, &scratch.join(format!("{index}")))?;
        super::grade::set_up(task, &workspace, env).map_err(|e| GradeError::Runtime(e.to_string()))?;
        if let Some(overlay) = &overlay {
            copy_tree(overlay, overlay, &workspace, Links::FollowInside)
                .map_err(|e| GradeError::Apply(format!("cannot lay {subject} over the fixture: {e}")))?;
        }
        let gates = run_gates(&task.gates, &workspace, env);
        let verdict = verdict(&gates);
        let must_pass = subject == format!("reference {EXPERT}");
        let problem = match (must_pass, verdict) {
            (true, Verdict::Works) | (false, Verdict::Failed) => None,
            (true, _) => Some(format!("the {EXPERT} reference does not pass every gate: no agent can work")),
            (false, Verdict::Works) if overlay.is_none() => {
                Some("the untouched fixture passes every gate: the gates do not check the task".to_owned())
            }
            (false, Verdict::Works) => Some(format!("{subject} passes every gate: the gates accept a wrong solution")),
            (false, _) => Some(format!("{subject}: a gate timed out or could not start")),
        };
        let _ = std::fs::remove_dir_all(scratch.join(format!("{index}")));
        calibrations.push(Calibration {
            subject,
            expected: if must_pass { "pass" } else { "fail" },
            verdict,
            ok: problem.is_none(),
            problem,
            gates,
        });
    }
    Ok(calibrations)
}
