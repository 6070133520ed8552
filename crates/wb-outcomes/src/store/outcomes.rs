//! Where outcomes live: `$WORKBENCH_HOME/outcomes/<wbo_id>/{outcome.json,application.json,workspaces.json}`,
//! committed once and read back, and which outcome a run id stands for.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::ContentStore;
use crate::error::{Error, Result, io};
use crate::files::{private_dir, write_new, write_private};
use crate::manifest::{Outcome, Receipt, ReceiptState, WorkspaceBindings, is_id_of, to_json};

/// The outcomes of a Workbench home.
#[derive(Debug)]
pub struct OutcomeStore<'a> {
    pub content: &'a ContentStore,
}

impl<'a> OutcomeStore<'a> {
    pub fn new(content: &'a ContentStore) -> OutcomeStore<'a> {
        OutcomeStore { content }
    }

    pub fn dir(&self, outcome_id: &str) -> Result<PathBuf> {
        if !is_id_of(outcome_id, "wbo_") {
            return Err(Error::Invalid(format!("Invalid outcome id: {outcome_id}")));
        }
        Ok(self.content.home().join("outcomes").join(outcome_id))
    }

    /// Validates and commits a manifest (written once, never replaced), its receipt and its bindings.
    /// Every referenced content must already be in the store.
    pub fn commit(&self, outcome: &Outcome, state: ReceiptState, bindings: &WorkspaceBindings) -> Result<Receipt> {
        outcome.validate()?;
        for content in outcome.contents() {
            if !self.content.contains(&content.digest) {
                return Err(Error::MissingContent(content.digest.clone()));
            }
        }
        let text = to_json(outcome)?;
        if text.len() as u64 > self.content.limits().per_manifest {
            return Err(Error::Quota(self.content.limits().per_manifest));
        }
        let dir = self.dir(&outcome.id)?;
        private_dir(dir.parent().unwrap_or(Path::new("/")))?;
        fs::DirBuilder::new().mode(0o700).create(&dir).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::AlreadyExists(outcome.id.clone())
            } else {
                Error::Io { context: format!("Cannot create {}", dir.display()), cause: e }
            }
        })?;
        write_private(&dir.join("workspaces.json"), to_json(bindings)?.as_bytes())?;
        let receipt = Receipt::new(&outcome.id, state);
        write_private(&dir.join("application.json"), to_json(&receipt)?.as_bytes())?;
        // The manifest last: its presence marks a committed outcome.
        write_new(&dir.join("outcome.json"), text.as_bytes())?;
        Ok(receipt)
    }

    pub fn load(&self, outcome_id: &str) -> Result<Outcome> {
        let path = self.dir(outcome_id)?.join("outcome.json");
        let text = read_existing(&path, outcome_id)?;
        Outcome::parse(&text)
    }

    pub fn receipt(&self, outcome_id: &str) -> Result<Receipt> {
        let path = self.dir(outcome_id)?.join("application.json");
        let text = read_existing(&path, outcome_id)?;
        let receipt: Receipt =
            serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("Invalid outcome receipt: {e}")))?;
        receipt.validate()?;
        Ok(receipt)
    }

    pub fn write_receipt(&self, receipt: &Receipt) -> Result<()> {
        receipt.validate()?;
        write_private(&self.dir(&receipt.outcome_id)?.join("application.json"), to_json(receipt)?.as_bytes())
    }

    /// The outcome an id names: a `wbo_` outcome id as it is; a `wb_` run id, the run's final outcome (its
    /// newest outcome without a turn index).
    pub fn resolve(&self, id: &str) -> Result<String> {
        if id.starts_with("wbo_") {
            return Ok(id.to_owned());
        }
        if !id.starts_with("wb_") {
            return Err(Error::UnknownId(id.to_owned()));
        }
        let committed = match committed_outcomes(self.content.home()) {
            Ok(committed) => committed,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::RunHasNoOutcome(id.to_owned())),
            Err(e) => return Err(io(format!("Cannot read {}", outcomes_dir(self.content.home()).display()))(e)),
        };
        committed
            .into_iter()
            .map(|(_, outcome)| outcome)
            .filter(|outcome| outcome.run_id == id && outcome.turn_index.is_none())
            .fold(None, |newest: Option<Outcome>, outcome| match newest {
                Some(newest) if outcome.created_at <= newest.created_at => Some(newest),
                _ => Some(outcome),
            })
            .map(|outcome| outcome.id)
            .ok_or_else(|| Error::RunHasNoOutcome(id.to_owned()))
    }

    pub fn bindings(&self, outcome_id: &str) -> Result<WorkspaceBindings> {
        let path = self.dir(outcome_id)?.join("workspaces.json");
        match fs::read_to_string(&path) {
            Ok(text) => {
                serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("Invalid outcome bindings: {e}")))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(WorkspaceBindings::default()),
            Err(e) => Err(Error::Io { context: format!("Cannot read {}", path.display()), cause: e }),
        }
    }
}

fn read_existing(path: &Path, outcome_id: &str) -> Result<String> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotFound(outcome_id.to_owned())),
        Err(e) => Err(io(format!("Cannot read {}", path.display()))(e)),
    }
}

/// A committed outcome as `wb-lsp outcomes` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedOutcome {
    pub outcome: Outcome,
    /// The receipt's `state`, or `unknown` when the receipt cannot be read.
    pub application_state: String,
}

/// Every committed outcome of a Workbench home, newest first (then by id). Reads only: unlike opening a
/// [`ContentStore`], listing creates nothing. Unreadable or invalid outcomes are left out.
pub fn list_outcomes(home: &Path) -> Vec<ListedOutcome> {
    let mut listed: Vec<ListedOutcome> = committed_outcomes(home)
        .unwrap_or_default()
        .into_iter()
        .map(|(dir, outcome)| {
            let application_state = fs::read_to_string(dir.join("application.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|receipt| receipt.get("state").and_then(|s| s.as_str()).map(str::to_owned))
                .unwrap_or_else(|| "unknown".to_owned());
            ListedOutcome { outcome, application_state }
        })
        .collect();
    listed
        .sort_by(|a, b| b.outcome.created_at.cmp(&a.outcome.created_at).then_with(|| a.outcome.id.cmp(&b.outcome.id)));
    listed
}

fn outcomes_dir(home: &Path) -> PathBuf {
    home.join("outcomes")
}

/// The directory and manifest of every readable, valid `outcomes/*/outcome.json`, in directory order.
fn committed_outcomes(home: &Path) -> std::io::Result<Vec<(PathBuf, Outcome)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(outcomes_dir(home))?.flatten() {
        let Ok(text) = fs::read_to_string(entry.path().join("outcome.json")) else { continue };
        let Ok(outcome) = Outcome::parse(&text) else { continue };
        found.push((entry.path(), outcome));
    }
    Ok(found)
}
