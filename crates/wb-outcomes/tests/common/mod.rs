#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::fs;
use std::path::Path;

use tempfile::TempDir;
use wb_outcomes::{
    Changeset, Completeness, ContentStore, Outcome, OutcomeBudget, OutcomeStore, ReceiptState, Snapshot,
    WorkspaceBindings, WorkspaceRef,
};
use wb_testsupport::{assert_outcomes_schema, outcomes_validator};

pub const RUN_ID: &str = "wb_abcdefghij0123456789";

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("{error}: {text}"))
}

/// Validates a committed outcome's manifest and receipt files against the official schemas.
pub fn assert_schema_valid(home: &Path, outcome_id: &str) {
    let dir = home.join("outcomes").join(outcome_id);
    assert_outcomes_schema("outcome.schema.json", &json(&fs::read_to_string(dir.join("outcome.json")).unwrap()));
    assert_outcomes_schema(
        "application.schema.json",
        &json(&fs::read_to_string(dir.join("application.json")).unwrap()),
    );
}

pub fn outcome_schema_valid(outcome: &Outcome) -> bool {
    let value = serde_json::to_value(outcome).unwrap();
    outcomes_validator("outcome.schema.json").is_valid(&value)
}

pub struct Fixture {
    pub home: TempDir,
    pub store: ContentStore,
    /// Where the run edited files.
    pub run: TempDir,
    /// A copy of the baseline the pending outcome is applied to.
    pub target: TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let store = ContentStore::open(home.path()).unwrap();
        Fixture { home, store, run: tempfile::tempdir().unwrap(), target: tempfile::tempdir().unwrap() }
    }

    /// Runs `setup` in both workspaces, takes a baseline of the run workspace, runs `change` there, and
    /// commits a pending outcome bound to the target workspace.
    pub fn outcome(&self, setup: impl Fn(&Path), change: impl Fn(&Path)) -> Outcome {
        setup(self.run.path());
        setup(self.target.path());
        let before = Snapshot::baseline(self.run.path(), &self.store).unwrap();
        change(self.run.path());
        let after = Snapshot::capture(self.run.path()).unwrap();
        let mut budget = OutcomeBudget::new();
        let changeset =
            Changeset::between("changes", WorkspaceRef::Primary, &before, &after, &self.store, &mut budget).unwrap();
        let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
        outcome.changesets.push(changeset);
        let bindings = WorkspaceBindings { primary: Some(self.target.path().to_path_buf()), ..Default::default() };
        OutcomeStore::new(&self.store).commit(&outcome, ReceiptState::Pending, &bindings).unwrap();
        assert_schema_valid(self.home.path(), &outcome.id);
        outcome
    }

    pub fn receipt_state(&self, id: &str) -> ReceiptState {
        OutcomeStore::new(&self.store).receipt(id).unwrap().state
    }
}
