//! Every check before any write: each entry's workspace root and parents are safe, and its destination holds
//! the entry's after state (unchanged) or its before state; anything else is a conflict that rejects all.
//! Each workspace root is opened once here; installing goes down from that handle.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::state::temp_for;
use super::state::{Current, Parent, Place, Workspace, current_in, equals_after, equals_before};
use crate::error::{Error, Result};
use crate::manifest::{Entry, Outcome, Receipt, ReceiptState, WorkspaceBindings, WorkspaceRef};

pub(super) struct Planned<'a> {
    pub(super) label: String,
    pub(super) dest: PathBuf,
    /// `<dest>.workbench-<txn>.tmp`.
    pub(super) temp: PathBuf,
    pub(super) root: PathBuf,
    /// The workspace root (opened once, while planning) and the entry's path below it.
    pub(super) place: Place,
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
    /// With a selection: the entries left out that do not hold their after state yet (the outcome is not
    /// wholly applied after this apply).
    pub(super) remaining: usize,
}

/// Plans an outcome's application under the lease; `txn_id` names the temp files. `only`: the entries to take
/// (by label: `path`, or `name:path` in a named workspace); the others are only looked at, and a conflict
/// there does not stop the selected ones. A label the outcome lacks is an error.
pub(super) fn plan<'a>(
    outcome: &'a Outcome,
    bindings: &WorkspaceBindings,
    receipt: &Receipt,
    workspace_override: Option<&Path>,
    txn_id: &str,
    only: Option<&BTreeSet<String>>,
) -> Result<Plan<'a>> {
    let mut created_dirs = BTreeSet::new();
    let mut plan = Vec::new();
    let mut conflicts = Vec::new();
    let mut unchanged = 0;
    let mut remaining = 0;
    let mut seen = BTreeSet::new();
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
        let workspace = Workspace::open(&root)?;
        for entry in &changeset.entries {
            let path = entry.path();
            if wb_manifest::outbox_declaration::unsafe_path_reason(path).is_some() {
                return Err(Error::UnsafePath(path.to_owned()));
            }
            let place = Place { workspace: workspace.clone(), path: path.to_owned() };
            let dest = root.join(path);
            let label = format!("{prefix}{path}");
            let (observed, missing_from) = match place.parent()? {
                Parent::Open(dir) => (current_in(&dir, place.name(), &dest, &label)?, None),
                Parent::Missing(_, depth) => (Current::Absent, Some(depth)),
            };
            let selected = only.is_none_or(|only| only.contains(&label));
            if selected {
                seen.insert(label.clone());
            }
            if equals_after(&observed, entry.after()) {
                unchanged += usize::from(selected);
                continue;
            }
            if !selected {
                remaining += 1;
                continue;
            }
            if receipt.state == ReceiptState::Applied || !equals_before(&observed, entry.before()) {
                conflicts.push(label);
                continue;
            }
            if let Some(depth) = missing_from {
                created_dirs.extend((depth..place.parents().len()).map(|index| place.parent_path(index + 1)));
            }
            let temp = temp_for(&dest, txn_id);
            plan.push(Planned { label, dest, temp, root: root.clone(), place, entry, observed });
        }
        // Validation judged the links through the changeset alone; a destination other than the captured
        // workspace may hold links of its own that the new ones would lead through. (After the entries, so an
        // unsafe parent is reported as such.)
        if let Some(path) = changeset.escaping_link_in(&root) {
            return Err(Error::EscapingSymlink(format!("{prefix}{path}")));
        }
    }
    if let Some(missing) = only.and_then(|only| only.iter().find(|label| !seen.contains(*label))) {
        return Err(Error::NotInOutcome(missing.clone()));
    }
    if !conflicts.is_empty() {
        return Err(Error::Conflict(conflicts));
    }
    Ok(Plan { items: plan, created_dirs, unchanged, remaining })
}
