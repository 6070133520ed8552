//! The final outcome of a run (outcomes contract, engine facts (f)): a baseline snapshot of each writable
//! workspace before launch; after execution stops, the changesets against those baselines and the outbox,
//! committed to `$WORKBENCH_HOME/outcomes/<wbo_id>/` before `outcome.available` is emitted.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use wb_manifest::Access;
use wb_outcomes::{
    Changeset, Completeness, ContentStore, Outcome, OutcomeBudget, OutcomeStore, Receipt, ReceiptState, Snapshot,
    WorkspaceBindings, WorkspaceRef, collect_outbox,
};

use crate::bindings::BoundWorkspace;
use crate::error::{EngineError, Result};

/// The baselines taken before launch, or why they could not be taken (reported by `outcome.failed`).
pub(crate) struct Baselines {
    store: Result<ContentStore>,
    /// Each writable workspace, its baseline and the directory snapshotted (the workspace itself, or the
    /// working copy a remote runtime staged it from).
    workspaces: Vec<(BoundWorkspace, Snapshot, std::path::PathBuf)>,
    error: Option<EngineError>,
}

/// Snapshots every writable workspace (the primary one and read-write named ones), dirty files included.
/// `copies` maps a host workspace to the working copy a remote runtime staged (the baseline is taken there, so
/// a changeset's `before` is what the sandbox started from).
pub(crate) fn baseline(
    home: &Path,
    workspaces: &[BoundWorkspace],
    copies: &[(std::path::PathBuf, std::path::PathBuf)],
) -> Baselines {
    let store = ContentStore::open(home).map_err(EngineError::Store);
    let mut taken = Vec::new();
    let mut error = None;
    if let Ok(store) = &store {
        for workspace in workspaces.iter().filter(|w| w.name.is_none() || w.access == Access::ReadWrite) {
            let copy = copies.iter().find(|(host, _)| *host == workspace.path).map(|(_, copy)| copy.clone());
            let snapshot = match &copy {
                Some(copy) => Snapshot::baseline_uncached(copy, store),
                None => Snapshot::baseline(&workspace.path, store),
            };
            let root = copy.unwrap_or_else(|| workspace.path.clone());
            match snapshot {
                Ok(snapshot) => taken.push((workspace.clone(), snapshot, root)),
                Err(e) => {
                    error = Some(EngineError::message(format!(
                        "Cannot take the baseline of {}: {e}",
                        workspace.path.display()
                    )));
                    break;
                }
            }
        }
    }
    Baselines { store, workspaces: taken, error }
}

/// A changeset id for a workspace: `primary`, or `workspace_<name>` (`-` → `_`), unique in the outcome.
fn changeset_id(name: Option<&str>, used: &mut BTreeSet<String>) -> String {
    let base = match name {
        None => "primary".to_owned(),
        Some(name) => {
            let slug: String = name
                .chars()
                .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '_' })
                .take(100)
                .collect();
            format!("workspace_{slug}")
        }
    };
    let mut id = base.clone();
    let mut n = 2;
    while used.contains(&id) {
        id = format!("{base}_{n}");
        n += 1;
    }
    used.insert(id.clone());
    id
}

/// Collects and commits the final outcome. `pending`: the runner edited copies in a sandbox (receipt
/// `pending` until applied); otherwise it edited the host in place (receipt `present`). Changesets without
/// entries are left out. `warnings` come first (a recovery's).
pub(crate) fn collect(
    baselines: Baselines,
    run_id: &str,
    outbox: &Path,
    completeness: Completeness,
    pending: bool,
    warnings: Vec<wb_outcomes::Warning>,
) -> Result<(Outcome, Receipt)> {
    let store = baselines.store?;
    if let Some(error) = baselines.error {
        return Err(error);
    }
    let mut budget = OutcomeBudget::new();
    let mut outcome = Outcome::new(run_id, completeness);
    outcome.warnings = warnings;
    let mut bindings = WorkspaceBindings::default();
    let mut used = BTreeSet::new();
    for (workspace, before, root) in &baselines.workspaces {
        // A workspace that contains the Workbench home never captures the store.
        let after = Snapshot::capture_excluding_home(root, store.home())
            .map_err(|e| EngineError::message(format!("Cannot snapshot {}: {e}", workspace.path.display())))?;
        let reference = match &workspace.name {
            None => WorkspaceRef::Primary,
            Some(name) => WorkspaceRef::Named { name: name.clone() },
        };
        // Files created, changed or deleted under names no changeset can carry: said, never silently dropped.
        for message in Snapshot::unrepresentable_warnings(before, &after, workspace.name.as_deref()) {
            outcome.warnings.push(wb_outcomes::Warning { code: "unrepresentable_path".to_owned(), message });
        }
        let id = changeset_id(workspace.name.as_deref(), &mut used);
        let changeset = Changeset::between(&id, reference, before, &after, &store, &mut budget)?;
        // Every writable workspace is recorded, changed or not: whose outcome it is (`wb-lsp mcp` shows an
        // agent only the outcomes of runs that worked beneath its root).
        match &workspace.name {
            None => bindings.primary = Some(workspace.path.clone()),
            Some(name) => {
                bindings.named.insert(name.clone(), workspace.path.clone());
            }
        }
        if changeset.entries.is_empty() {
            continue;
        }
        outcome.changesets.push(changeset);
    }
    let collected = collect_outbox(outbox, &store, &mut budget)?;
    outcome.summary = collected.summary;
    outcome.artifacts = collected.artifacts;
    outcome.links = collected.links;
    let state = if pending { ReceiptState::Pending } else { ReceiptState::Present };
    let receipt = OutcomeStore::new(&store).commit(&outcome, state, &bindings)?;
    Ok((outcome, receipt))
}

/// What a session's last turn snapshot held (at first: an empty outbox), so an unchanged result makes no new one.
#[derive(Default)]
pub(crate) struct TurnSnapshots {
    last: Option<(Option<String>, Vec<wb_outcomes::Artifact>, Vec<wb_outcomes::Link>)>,
}

/// The snapshot of a session's outbox after completed turn `turn_index` (outcomes contract: partial, the turn's
/// index, no changesets, receipt `present`), committed; `None` when the outbox holds what the last snapshot
/// held (or, before any, nothing). Content is stored by digest, so an earlier snapshot's files keep their bytes.
pub(crate) fn snapshot_turn(
    home: &Path,
    run_id: &str,
    outbox: &Path,
    turn_index: u64,
    snapshots: &mut TurnSnapshots,
) -> Result<Option<(Outcome, Receipt)>> {
    let store = ContentStore::open(home).map_err(EngineError::Store)?;
    let collected = collect_outbox(outbox, &store, &mut OutcomeBudget::new())?;
    let held = (collected.summary, collected.artifacts, collected.links);
    let unchanged = match &snapshots.last {
        Some(last) => *last == held,
        None => held.0.is_none() && held.1.is_empty() && held.2.is_empty(),
    };
    if unchanged {
        return Ok(None);
    }
    let mut outcome = Outcome::new(run_id, Completeness::Partial);
    outcome.turn_index = Some(turn_index);
    (outcome.summary, outcome.artifacts, outcome.links) = held.clone();
    let receipt = OutcomeStore::new(&store).commit(&outcome, ReceiptState::Present, &WorkspaceBindings::default())?;
    snapshots.last = Some(held);
    Ok(Some((outcome, receipt)))
}

/// The data of `outcome.available`: ids, states and counts, never contents.
pub(crate) fn available_data(outcome: &Outcome, receipt: &Receipt) -> Value {
    let mut data = json!({
        "outcome_id": outcome.id,
        "completeness": outcome.completeness,
        "application_state": receipt.state,
        "changesets": outcome.changesets.len(),
        "artifacts": outcome.artifacts.len(),
        "links": outcome.links.len(),
        "warnings": outcome.warnings.len(),
    });
    if let (Some(summary), Some(object)) = (&outcome.summary, data.as_object_mut()) {
        object.insert("summary".to_owned(), Value::from(summary.as_str()));
    }
    if let (Some(turn), Some(object)) = (outcome.turn_index, data.as_object_mut()) {
        object.insert("turn_index".to_owned(), Value::from(turn));
    }
    data
}
