//! All-or-nothing application of an outcome's changesets to their workspaces (engine facts (f), Apply).
//!
//! 1. Take the per-outcome lease (an exclusive `flock(2)` on `outcomes/<id>/application.lock`, which the
//!    kernel releases when its holder dies), and finish or roll back what an interrupted apply left
//!    ([`recover`]).
//! 2. Check every entry of every changeset before any write: safe root, safe parents, the destination is
//!    a file or symlink, and its current state equals `after` (skipped, "unchanged") or `before`. Any
//!    conflict rejects everything.
//! 3. Back up every destination about to change into a transaction directory
//!    (`outcomes/<id>/transactions/<txn>/`), then write its journal `recovery.json` (atomically, synced):
//!    the original state of every entry, its temp file name and the directories the apply may create.
//! 4. Install each entry with a temp file `<dest>.workbench-<txn>.tmp` and a rename, re-checking the
//!    destination before and after; then write the `applied` receipt: the commit point.
//! 5. Remove the journal first, then the transaction directory.
//! 6. On any failure, restore every backup (and the receipt); if that fails too, keep the backups.
//!
//! A kill at any point leaves every destination in its old or its new state (a rename replaces it whole)
//! and the journal tells the next apply or `recover` what to do: without a journal, nothing was changed;
//! with the `applied` receipt, the transaction is complete; otherwise it is rolled back. Temp files of the
//! transaction, the directories it created, and receipt temp files are removed. `tests/apply_crash.rs` of
//! `wb-lsp` kills a real process at every step ([`Faults::step`]) and at random times.
//!
//! Every look at a workspace and every change to it (reads, backups, temp files, renames, removals, created
//! directories, restores) goes through directory handles (`crate::beneath`): the root opened once per apply,
//! each directory below it opened once, component by component, with `O_NOFOLLOW | O_DIRECTORY`. A parent
//! swapped for a symlink after the checks is never followed: the entry is written into the directory that
//! was checked, or the apply fails and rolls back. `tests/hostile_apply.rs` races it.
//!
//! Each step has its file: `lease.rs` (1), `plan.rs` and `state.rs` (2; `state.rs` also holds the
//! workspace handles every step goes through), `journal.rs` (3, the receipt and the cleanup of 5),
//! `install.rs` (4, and the restores of 6), `recovery.rs` (finishing or rolling back), `faults.rs` (test-only
//! injection).

mod copy;
mod faults;
mod install;
mod journal;
mod lease;
mod plan;
mod recovery;
mod state;
mod taken;

use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::ids::random_hex;
use crate::manifest::{Receipt, ReceiptState};
use crate::store::{ContentStore, OutcomeStore};

pub use copy::apply_to_copy;
pub use faults::Faults;
pub use recovery::{recover, recover_with_faults};
pub use taken::taken;

use install::{install, restore};
use journal::{finish, write_receipt};
pub(crate) use lease::{Lease, is_held as lease_is_held};
use plan::Plan;
use recovery::recover_locked;
use state::{equals_after, remove_empty_dir};

/// What an apply did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ApplyResult {
    /// Entries installed.
    pub applied: usize,
    /// Entries already in their after state.
    pub unchanged: usize,
}

/// Applies an outcome. `workspace_override` replaces the primary workspace binding only.
pub fn apply(store: &ContentStore, outcome_id: &str, workspace_override: Option<&Path>) -> Result<ApplyResult> {
    apply_with_faults(store, outcome_id, workspace_override, Faults::default())
}

#[doc(hidden)]
pub fn apply_with_faults(
    store: &ContentStore,
    outcome_id: &str,
    workspace_override: Option<&Path>,
    faults: Faults,
) -> Result<ApplyResult> {
    apply_selected(store, outcome_id, workspace_override, None, faults)
}

/// Applies only the entries `only` names (labels: `path`, or `name:path` in a named workspace), with every
/// guarantee of a whole apply: each selected entry's destination checked first (a conflict on a path left out
/// does not matter), journalled, installed, rolled back on failure. A selected path that already holds the
/// outcome's content counts as applied. The receipt becomes `applied` once every entry of the outcome holds
/// its content; until then it stays `pending` and the taken paths are recorded beside it ([`taken`]).
pub fn apply_only(
    store: &ContentStore,
    outcome_id: &str,
    workspace_override: Option<&Path>,
    only: &[String],
) -> Result<ApplyResult> {
    apply_only_with_faults(store, outcome_id, workspace_override, only, Faults::default())
}

#[doc(hidden)]
pub fn apply_only_with_faults(
    store: &ContentStore,
    outcome_id: &str,
    workspace_override: Option<&Path>,
    only: &[String],
    faults: Faults,
) -> Result<ApplyResult> {
    let only: std::collections::BTreeSet<String> = only.iter().cloned().collect();
    apply_selected(store, outcome_id, workspace_override, Some(&only), faults)
}

fn apply_selected(
    store: &ContentStore,
    outcome_id: &str,
    workspace_override: Option<&Path>,
    only: Option<&std::collections::BTreeSet<String>>,
    faults: Faults,
) -> Result<ApplyResult> {
    let outcomes = OutcomeStore::new(store);
    let dir = outcomes.dir(outcome_id)?;
    let outcome = outcomes.load(outcome_id)?;
    let _lease = Lease::take(&dir, outcome_id, faults)?;
    recover_locked(&outcomes, &dir, faults)?;
    let receipt = outcomes.receipt(outcome_id)?;
    if receipt.state == ReceiptState::Present {
        return Err(Error::AlreadyPresent);
    }
    let bindings = outcomes.bindings(outcome_id)?;

    // Every check, before any write.
    let txn_id = random_hex(8);
    let Plan { items: plan, created_dirs, unchanged, remaining } =
        plan::plan(&outcome, &bindings, &receipt, workspace_override, &txn_id, only)?;
    // Some of the outcome stays out after this apply: its commit point is the record of what was taken, and
    // the receipt stays as it is.
    let partial = remaining > 0;
    let selected = || only.into_iter().flatten().cloned();
    if plan.is_empty() {
        if partial {
            taken::record(&dir, selected(), None, &faults)?;
        } else if receipt.state != ReceiptState::Applied {
            write_receipt(&outcomes, &Receipt::new(outcome_id, ReceiptState::Applied), &faults)?;
        }
        return Ok(ApplyResult { applied: 0, unchanged });
    }

    // The transaction: backups and recovery.json first.
    let commit = partial.then_some(txn_id.as_str());
    let (txn, recovery) = journal::begin(&dir, &txn_id, &receipt, &plan, created_dirs, commit, &faults)?;

    let mut created_dirs = Vec::new();
    let mut installed = 0;
    let result = (|| -> Result<()> {
        for (index, item) in plan.iter().enumerate() {
            if faults.fail_before_install == Some(index) {
                return Err(Error::Io {
                    context: format!("Cannot install {}", item.dest.display()),
                    cause: std::io::Error::other("injected failure"),
                });
            }
            if faults.touch_before_install == Some(index) {
                let _ = fs::write(&item.dest, "concurrent edit\n");
            }
            install(store, item, &mut created_dirs, &faults)?;
            installed = index + 1;
            if faults.crash_after_installs == Some(installed) {
                return Err(Error::Io { context: "simulated crash".to_owned(), cause: std::io::Error::other("crash") });
            }
        }
        if partial {
            taken::record(&dir, selected(), Some(&txn_id), &faults)?;
        } else {
            write_receipt(&outcomes, &Receipt::new(outcome_id, ReceiptState::Applied), &faults)?;
        }
        if faults.crash_after_receipt {
            return Err(Error::Io { context: "simulated crash".to_owned(), cause: std::io::Error::other("crash") });
        }
        Ok(())
    })();
    if faults.crash_after_installs.is_some() || faults.crash_after_receipt {
        // A simulated kill: no rollback, the transaction directory stays for `recover`.
        return result.map(|()| ApplyResult { applied: plan.len(), unchanged });
    }
    match result {
        Ok(()) => {
            finish(&txn, &faults);
            Ok(ApplyResult { applied: plan.len(), unchanged })
        }
        Err(error) => {
            let mut restored = !faults.fail_rollback;
            if restored {
                // Entries before `installed` were installed; the one at `installed` may have been. Only a
                // destination still in its after state is restored: a later unrelated edit is never
                // overwritten (it makes the rollback incomplete instead).
                for (index, (item, original)) in
                    plan.iter().zip(&recovery.entries).enumerate().take(installed + 1).rev()
                {
                    let now = item.place.current(&item.label).ok();
                    if now.as_ref().is_some_and(|now| equals_after(now, item.entry.after())) {
                        if restore(original, &item.place, &faults).is_err() {
                            restored = false;
                        }
                    } else if index < installed && now.as_ref() != Some(&item.observed) {
                        restored = false;
                    }
                }
                for dir in created_dirs.iter().rev() {
                    remove_empty_dir(&dir.place.workspace, &dir.path);
                }
                if write_receipt(&outcomes, &receipt, &faults).is_err() {
                    restored = false;
                }
            }
            if restored {
                finish(&txn, &faults);
                Err(error)
            } else {
                Err(Error::RollbackFailed(txn))
            }
        }
    }
}
