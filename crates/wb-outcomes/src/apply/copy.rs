//! An outcome's primary changes laid onto a fresh copy of their baseline (a trial grades an attempt there, never
//! where the agent worked): every entry is checked against its before state and installed exactly as an apply
//! does, through directory handles that never follow a link, but with no lease, journal or receipt. The copy
//! is scratch, thrown away on any failure, and the outcome stays as it was (to apply, or present). Changes to
//! named workspaces are not laid: a copy stands for the primary workspace only.

use std::path::Path;

use super::install::install;
use super::plan::{Plan, plan};
use super::{ApplyResult, Faults};
use crate::error::Result;
use crate::ids::random_hex;
use crate::manifest::{Receipt, ReceiptState, WorkspaceBindings, WorkspaceRef};
use crate::store::{ContentStore, OutcomeStore};

/// Lays outcome `outcome_id`'s primary changes onto `copy`, a directory that holds their baseline.
pub fn apply_to_copy(store: &ContentStore, outcome_id: &str, copy: &Path) -> Result<ApplyResult> {
    let outcomes = OutcomeStore::new(store);
    let mut outcome = outcomes.load(outcome_id)?;
    outcome.changesets.retain(|changeset| changeset.workspace == WorkspaceRef::Primary);
    // Judged as an outcome not applied yet, whatever its receipt says: the copy is its baseline.
    let receipt = Receipt::new(outcome_id, ReceiptState::Pending);
    let Plan { items, unchanged, .. } =
        plan(&outcome, &WorkspaceBindings::default(), &receipt, Some(copy), &random_hex(8), None)?;
    let mut created = Vec::new();
    for item in &items {
        install(store, item, &mut created, &Faults::default())?;
    }
    Ok(ApplyResult { applied: items.len(), unchanged })
}
