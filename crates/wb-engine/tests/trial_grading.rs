//! Grading a trial attempt on this machine: the attempt's outcome laid onto a fresh copy of the task's fixture
//! (after the task's setup), the gates run there; what the agent left outside its changes never reaches them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use wb_engine::trials::gates::verdict;
use wb_engine::trials::grade::grade_local;
use wb_engine::trials::job::Verdict;
use wb_manifest::trial_task::{Fixture, FixtureSource, Gate, TrialTask};
use wb_outcomes::{
    Changeset, Completeness, ContentStore, Outcome, OutcomeBudget, OutcomeStore, ReceiptState, Snapshot,
    WorkspaceBindings, WorkspaceRef,
};

fn task(fixture: PathBuf) -> TrialTask {
    TrialTask {
        dir: fixture.parent().unwrap().to_path_buf(),
        id: "fix".into(),
        title: "Fix".into(),
        workbench: None,
        fixture: Fixture { source: FixtureSource::Dir(fixture), overlay: None },
        timeout_minutes: None,
        setup: vec!["echo prepared > setup.txt".into()],
        gates: vec![
            Gate { id: "fixed".into(), title: None, run: "grep -q fixed answer.txt".into(), timeout_seconds: None },
            Gate { id: "setup".into(), title: None, run: "test -f setup.txt".into(), timeout_seconds: None },
            Gate { id: "clean".into(), title: None, run: "test ! -e planted.txt".into(), timeout_seconds: None },
        ],
        criteria: Vec::new(),
    }
}

/// An attempt: the agent's workspace from the fixture (after setup), its change, a present outcome of it.
fn attempt(store: &ContentStore, fixture: &Path, workspace: &Path, answer: &str) -> String {
    wb_testsupport::copy_tree(fixture, workspace);
    std::fs::write(workspace.join("setup.txt"), "prepared\n").unwrap();
    let before = Snapshot::baseline(workspace, store).unwrap();
    std::fs::write(workspace.join("answer.txt"), answer).unwrap();
    let after = Snapshot::capture(workspace).unwrap();
    let mut budget = OutcomeBudget::new();
    let changeset = Changeset::between("changes", WorkspaceRef::Primary, &before, &after, store, &mut budget).unwrap();
    let mut outcome = Outcome::new("wb_abcdefghij0123456789", Completeness::Complete);
    outcome.changesets.push(changeset);
    let bindings = WorkspaceBindings { primary: Some(workspace.to_path_buf()), ..Default::default() };
    OutcomeStore::new(store).commit(&outcome, ReceiptState::Present, &bindings).unwrap();
    outcome.id
}

#[test]
fn an_attempt_is_graded_on_a_fresh_copy_with_its_changes() {
    let temp = tempfile::tempdir().unwrap();
    let fixture = temp.path().join("task/fixture");
    std::fs::create_dir_all(&fixture).unwrap();
    std::fs::write(fixture.join("answer.txt"), "broken\n").unwrap();
    let home = temp.path().join("home");
    let store = ContentStore::open(&home).unwrap();

    let worked = temp.path().join("worked");
    let id = attempt(&store, &fixture, &worked, "fixed\n");
    let gates = grade_local(&task(fixture.clone()), &store, Some(&id), &temp.path().join("grade-1"), &[]).unwrap();
    assert_eq!(verdict(&gates), Verdict::Works, "{gates:#?}");
    assert_eq!(std::fs::read_to_string(fixture.join("answer.txt")).unwrap(), "broken\n", "the fixture is untouched");

    // The agent planted a file its outcome does not carry (ignored, say): the fresh copy has none of it.
    std::fs::write(worked.join("planted.txt"), "x").unwrap();
    let gates = grade_local(&task(fixture.clone()), &store, Some(&id), &temp.path().join("grade-2"), &[]).unwrap();
    assert_eq!(verdict(&gates), Verdict::Works, "{gates:#?}");

    // An attempt that changed nothing fails the gate that needs the fix.
    let gates = grade_local(&task(fixture), &store, None, &temp.path().join("grade-3"), &[]).unwrap();
    assert_eq!(verdict(&gates), Verdict::Failed);
    assert_eq!(gates.iter().map(|g| g.exit_code).collect::<Vec<_>>(), [Some(1), Some(0), Some(0)]);
}
