//! Every check before any write: each entry's workspace root and parents are safe, and its destination holds
//! the entry's after state (unchanged) or its before state; anything else is a conflict that rejects all.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::journal::temp_for;
use super::state::{Current, check_parents, check_root, current, equals_after, equals_before};
use crate::error::{Error, Result};
use crate::manifest::{Entry, Outcome, Receipt, ReceiptState, WorkspaceBindings, WorkspaceRef};

pub(super) struct Planned<'a> {
    pub(super) label: String,
    pub(super) dest: PathBuf,
    /// `<dest>.workbench-<txn>.tmp`.
    pub(super) temp: PathBuf,
    pub(super) root: PathBuf,
    pub(super) entry: &'a Entry,
    pub(super) observed: Current,
}

/// What an apply will do.
pub(super) struct Plan<'a> {
    /// The entries to install, in order.
    pub(super) items: Vec<Planned<'a>>,
    /// The directories missing now that installing may create.
    pub(super) created_dirs: BTreeSet<PathBuf>,
    /// Entries already in their after state.
    pub(super) unchanged: usize,
}

/// Plans an outcome's application under the lease; `txn_id` names the temp files.
pub(super) fn plan<'a>(
    outcome: &'a Outcome,
    bindings: &WorkspaceBindings,
    receipt: &Receipt,
    workspace_override: Option<&Path>,
    txn_id: &str,
) -> Result<Plan<'a>> {
    let mut created_dirs = BTreeSet::new();
    let mut plan = Vec::new();
    let mut conflicts = Vec::new();
    let mut unchanged = 0;
    for changeset in &outcome.changesets {
        let (root, prefix) = match &changeset.workspace {
            WorkspaceRef::Primary => {
                let root = workspace_override
                    .map(Path::to_path_buf)
                    .or_else(|| bindings.primary.clone())
                    .ok_or_else(|| Error::UnsafeWorkspace(PathBuf::new()))?;
                (root, String::new())
            }
            WorkspaceRef::Named { name } => {
                let root =
                    bindings.named.get(name).cloned().ok_or_else(|| Error::MissingNamedWorkspace(name.clone()))?;
                (root, format!("{name}:"))
            }
        };
        let root = check_root(&root)?;
        for entry in &changeset.entries {
            let path = entry.path();
            if wb_manifest::outbox::unsafe_path_reason(path).is_some() {
                return Err(Error::UnsafePath(path.to_owned()));
            }
            check_parents(&root, path)?;
            let dest = root.join(path);
            let label = format!("{prefix}{path}");
            let observed = current(&dest, &label)?;
            if equals_after(&observed, entry.after()) {
                unchanged += 1;
                continue;
            }
            if receipt.state == ReceiptState::Applied || !equals_before(&observed, entry.before()) {
                conflicts.push(label);
                continue;
            }
            if observed == Current::Absent {
                let mut dir = dest.parent().map(Path::to_path_buf).unwrap_or_default();
                while dir.starts_with(&root) && dir != root && fs::symlink_metadata(&dir).is_err() {
                    created_dirs.insert(dir.clone());
                    if !dir.pop() {
                        break;
                    }
                }
            }
            let temp = temp_for(&dest, txn_id);
            plan.push(Planned { label, dest, temp, root: root.clone(), entry, observed });
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::Conflict(conflicts));
    }
    Ok(Plan { items: plan, created_dirs, unchanged })
}
