//! Recovery: finishing or rolling back what an interrupted apply left, from its journal.

use std::fs;
use std::path::{Path, PathBuf};

use super::Faults;
use super::install::{remove_temp, restore};
use super::journal::{JOURNAL, Recovery, RecoveryEntry, finish, write_receipt};
use super::lease::{Lease, OLD_LEASE, OLD_LEASE_TEMP};
use super::state::{Current, Workspace, equals_after, remove_empty_dir};
use crate::error::{Error, Result, io};
use crate::manifest::ReceiptState;
use crate::snapshot::current_content;
use crate::store::{ContentStore, OutcomeStore};

/// Finishes or rolls back the transactions an interrupted apply left behind (for example after a kill):
/// a transaction whose `applied` receipt was written is complete and only cleaned up; any other one is
/// rolled back entry by entry (an entry still in its after state is restored from its backup, one already
/// in its original state is left alone), the directories it created removed when empty, and the previous
/// receipt restored. The temp files of the transaction are removed in both cases. An entry in neither
/// state was edited since, and is never overwritten: the backups are kept and reported. Returns how many
/// transactions were resolved. `apply` runs this first, under the same lease. Recovery is itself
/// interruptible: a kill during it leaves a state the next recovery resolves the same way.
pub fn recover(store: &ContentStore, outcome_id: &str) -> Result<usize> {
    recover_with_faults(store, outcome_id, Faults::default())
}

/// [`recover`] with test-only fault injection ([`Faults::step`]).
#[doc(hidden)]
pub fn recover_with_faults(store: &ContentStore, outcome_id: &str, faults: Faults) -> Result<usize> {
    let outcomes = OutcomeStore::new(store);
    let dir = outcomes.dir(outcome_id)?;
    if !dir.join("outcome.json").is_file() {
        return Err(Error::NotFound(outcome_id.to_owned()));
    }
    let _lease = Lease::take(&dir, outcome_id, faults)?;
    recover_locked(&outcomes, &dir, faults)
}

pub(super) fn recover_locked(outcomes: &OutcomeStore<'_>, dir: &Path, faults: Faults) -> Result<usize> {
    // Temp files of receipt writes that were killed (receipts are only written under the lease), and the
    // pid leases of earlier versions.
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let receipt_temp = name.starts_with(".application.json.") || name.starts_with(".taken.json.");
            if receipt_temp && name.ends_with(".tmp") && fs::remove_file(entry.path()).is_ok() {
                faults.at(|| "recover: receipt temp removed".to_owned());
            }
            let old_lease = name == OLD_LEASE || (name.starts_with(OLD_LEASE_TEMP) && name.ends_with(".tmp"));
            if old_lease && fs::remove_file(entry.path()).is_ok() {
                faults.at(|| "recover: old lease removed".to_owned());
            }
        }
    }
    let Ok(entries) = fs::read_dir(dir.join("transactions")) else { return Ok(0) };
    let mut transactions: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    transactions.sort();
    if transactions.is_empty() {
        // Killed after removing the last transaction.
        let _ = fs::remove_dir(dir.join("transactions"));
    }
    let mut resolved = 0;
    for txn in transactions {
        let text = match fs::read_to_string(txn.join(JOURNAL)) {
            Ok(text) => text,
            // Killed before the journal was complete (nothing was changed yet), or after the resolved
            // transaction's journal was removed.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                finish(&txn, &faults);
                resolved += 1;
                continue;
            }
            Err(e) => return Err(io(format!("Cannot read {}", txn.display()))(e)),
        };
        let recovery: Recovery = serde_json::from_str(&text).map_err(|_| Error::RollbackFailed(txn.clone()))?;
        let receipt = outcomes.receipt(&recovery.outcome_id)?;
        let mut complete = true;
        // Temp files of killed installs or restores: never an entry's content.
        for entry in &recovery.entries {
            let Some(temp) = &entry.temp else { continue };
            match entry.place().map(|place| remove_temp(&place, temp)) {
                Ok(Ok(true)) => faults.at(|| format!("recover {}: temp removed", entry.label)),
                Ok(Ok(false)) => {}
                _ => complete = false,
            }
        }
        let committed = match &recovery.taken_commit {
            // A partial apply commits by naming its transaction in `taken.json`.
            Some(txn_id) => super::taken::read(dir)?.last_transaction.as_deref() == Some(txn_id.as_str()),
            None => receipt.state == ReceiptState::Applied && recovery.receipt.state != ReceiptState::Applied,
        };
        if committed {
            // Committed: only the cleanup was interrupted.
            if !complete {
                return Err(Error::RollbackFailed(txn));
            }
            finish(&txn, &faults);
            resolved += 1;
            continue;
        }
        for entry in recovery.entries.iter().rev() {
            let Ok(place) = entry.place() else {
                complete = false;
                continue;
            };
            let Ok(now) = place.current(&entry.label) else {
                complete = false;
                continue;
            };
            if equals_after(&now, entry.after.as_ref()) {
                if restore(entry, &place, &faults).is_err() {
                    complete = false;
                }
            } else if !is_original(&now, entry) {
                complete = false;
            }
        }
        if !complete {
            return Err(Error::RollbackFailed(txn));
        }
        // Deepest first; a directory that is not empty (edited since) stays.
        let mut dirs = recovery.created_dirs.clone();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        let mut roots: Vec<PathBuf> =
            recovery.entries.iter().filter_map(RecoveryEntry::location).map(|(root, _)| root).collect();
        // The innermost workspace a directory is in (a named workspace may lie inside the primary one).
        roots.sort_by_key(|root| std::cmp::Reverse(root.components().count()));
        roots.dedup();
        for created in &dirs {
            if remove_created(&roots, created) {
                faults.at(|| "recover: created directory removed".to_owned());
            }
        }
        if receipt != recovery.receipt {
            write_receipt(outcomes, &recovery.receipt, &faults)?;
        }
        finish(&txn, &faults);
        resolved += 1;
    }
    Ok(resolved)
}

/// Removes a directory the transaction created, if empty, through its workspace root's handle.
fn remove_created(roots: &[PathBuf], created: &Path) -> bool {
    roots.iter().find_map(|root| {
        let below = created.strip_prefix(root).ok()?.to_str()?;
        Some(Workspace::open(root).is_ok_and(|workspace| remove_empty_dir(&workspace, below)))
    }) == Some(true)
}

fn is_original(now: &Current, entry: &RecoveryEntry) -> bool {
    match (now, entry.original.as_str()) {
        (Current::Absent, "absent") => true,
        (Current::Symlink { target, .. }, "symlink") => Some(target) == entry.target.as_ref(),
        (Current::File { digest, mode, .. }, "file") => {
            let backup = entry.backup.as_deref().unwrap_or(Path::new(""));
            Some(*mode) == entry.mode && current_content(backup).is_ok_and(|c| c.digest == *digest)
        }
        _ => false,
    }
}
