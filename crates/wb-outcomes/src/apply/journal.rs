//! The transaction journal (`transactions/<txn>/recovery.json`): each entry's original state, backup and temp
//! file name, written and synced before the first change, and removed once the transaction is resolved. Also
//! the receipt write, the transaction's commit point.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Faults;
use super::plan::Planned;
use super::state::{Current, Parent, Place, Workspace, temp_for};
use crate::error::{Error, Result, io};
use crate::files::{FileMode, private_dir, write_atomic_with};
use crate::ids::random_hex;
use crate::manifest::{Receipt, State, to_json};
use crate::store::OutcomeStore;

/// One entry of the journal: where it is, what it was (and its backup), what it becomes, and its temp file.
#[derive(Serialize, Deserialize)]
pub(super) struct RecoveryEntry {
    pub(super) path: PathBuf,
    /// The workspace root `path` is below (recovery opens it, then `path`'s parents, without following a
    /// symlink). Journals of earlier versions lack it: see [`RecoveryEntry::location`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) root: Option<PathBuf>,
    pub(super) label: String,
    /// `absent`, `file` or `symlink`.
    pub(super) original: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) backup: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) mode: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) target: Option<String>,
    /// The state being installed (`None` for a delete).
    pub(super) after: Option<State>,
    /// The temp file that installs or restores this entry (`<path>.workbench-<txn>.tmp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) temp: Option<PathBuf>,
}

impl RecoveryEntry {
    pub(super) fn temp(&self) -> PathBuf {
        self.temp.clone().unwrap_or_else(|| temp_for(&self.path, &random_hex(8)))
    }

    /// The workspace root and the entry's path below it: from `root`, or, in a journal of an earlier version,
    /// from the label (the path below the root, after a named workspace's `name:`), which `path` ends with.
    pub(super) fn location(&self) -> Option<(PathBuf, String)> {
        if let Some(root) = &self.root {
            let below = self.path.strip_prefix(root).ok()?.to_str()?.to_owned();
            return Some((root.clone(), below));
        }
        let path = self.path.to_str()?;
        let labels = [Some(self.label.as_str()), self.label.split_once(':').map(|(_, below)| below)];
        labels.into_iter().flatten().find_map(|below| {
            let root = path.strip_suffix(below)?.strip_suffix('/')?;
            Some((PathBuf::from(root), below.to_owned()))
        })
    }

    /// Opens the entry's workspace root (a real directory, not a symlink).
    pub(super) fn place(&self) -> Result<Place> {
        let (root, path) = self.location().ok_or_else(|| Error::UnsafeParent(self.path.clone()))?;
        Ok(Place { workspace: Workspace::open(&root)?, path })
    }
}

/// `recovery.json`: written (and synced) before the first change; the receipt write is the commit point.
#[derive(Serialize, Deserialize)]
pub(super) struct Recovery {
    pub(super) version: u32,
    pub(super) outcome_id: String,
    /// The receipt before the transaction.
    pub(super) receipt: Receipt,
    pub(super) entries: Vec<RecoveryEntry>,
    /// The directories missing before the transaction that installing may create (a rollback removes
    /// them when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) created_dirs: Vec<PathBuf>,
    /// A partial apply's transaction (`--only`): committed once `taken.json` names it, not by the receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) taken_commit: Option<String>,
}

/// The journal of a transaction.
pub(super) const JOURNAL: &str = "recovery.json";

/// Writes a small private file atomically (see [`crate::write_atomic`]), with a step before and after the
/// rename. The temp file is named `.<name>.<random>.tmp`: recovery removes a receipt's by that pattern.
pub(super) fn write_stepped(path: &Path, bytes: &[u8], faults: &Faults, what: &str) -> Result<()> {
    write_atomic_with(path, bytes, FileMode::Exactly(0o600), || faults.at(|| format!("{what}: temp written")))
        .map_err(io(format!("Cannot write {}", path.display())))?;
    faults.at(|| format!("{what}: renamed"));
    Ok(())
}

pub(super) fn write_receipt(outcomes: &OutcomeStore<'_>, receipt: &Receipt, faults: &Faults) -> Result<()> {
    receipt.validate()?;
    let path = outcomes.dir(&receipt.outcome_id)?.join("application.json");
    write_stepped(&path, to_json(receipt)?.as_bytes(), faults, "receipt")
}

/// Removes a resolved transaction: the journal first (a kill during the removal of the backups must not
/// leave a journal whose backups are gone), then the directory, then `transactions/` when empty.
pub(super) fn finish(txn: &Path, faults: &Faults) {
    if fs::remove_file(txn.join(JOURNAL)).is_ok() {
        faults.at(|| "journal removed".to_owned());
    }
    let _ = fs::remove_dir_all(txn);
    faults.at(|| "transaction removed".to_owned());
    if let Some(transactions) = txn.parent() {
        let _ = fs::remove_dir(transactions);
    }
}

/// Starts a transaction: `transactions/<txn>/`, a synced backup of every file about to change, then the
/// journal. Returns the transaction directory and its journal.
pub(super) fn begin(
    outcome_dir: &Path,
    txn_id: &str,
    receipt: &Receipt,
    plan: &[Planned<'_>],
    created_dirs: BTreeSet<PathBuf>,
    taken_commit: Option<&str>,
    faults: &Faults,
) -> Result<(PathBuf, Recovery)> {
    let transactions = outcome_dir.join("transactions");
    private_dir(&transactions)?;
    let txn = transactions.join(txn_id);
    private_dir(&txn.join("backups"))?;
    faults.at(|| "transaction created".to_owned());
    let mut recovery = Recovery {
        version: 1,
        outcome_id: receipt.outcome_id.clone(),
        receipt: receipt.clone(),
        entries: Vec::new(),
        created_dirs: created_dirs.into_iter().collect(),
        taken_commit: taken_commit.map(str::to_owned),
    };
    for (index, item) in plan.iter().enumerate() {
        let (original, backup, mode, target) = match &item.observed {
            Current::Absent => ("absent", None, None, None),
            Current::File { mode, .. } => {
                let backup = txn.join("backups").join(index.to_string());
                back_up(&item.place, &backup).map_err(io(format!("Cannot back up {}", item.dest.display())))?;
                faults.at(|| format!("backup {}", item.label));
                ("file", Some(backup), Some(*mode), None)
            }
            Current::Symlink { mode, target } => ("symlink", None, Some(*mode), Some(target.clone())),
        };
        recovery.entries.push(RecoveryEntry {
            path: item.dest.clone(),
            root: Some(item.root.clone()),
            label: item.label.clone(),
            original: original.to_owned(),
            backup,
            mode,
            target,
            after: item.entry.after().cloned(),
            temp: Some(item.temp.clone()),
        });
    }
    write_stepped(&txn.join(JOURNAL), to_json(&recovery)?.as_bytes(), faults, "journal")?;
    Ok((txn, recovery))
}

/// Copies the file at `place` (read through its parents opened without following a symlink) to a private,
/// synced `backup`.
fn back_up(place: &Place, backup: &Path) -> std::io::Result<()> {
    let Ok(Parent::Open(dir)) = place.parent() else { return Err(std::io::ErrorKind::NotFound.into()) };
    let mut source = dir.open_file(place.name())?;
    let mut file = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(backup)?;
    std::io::copy(&mut source, &mut file)?;
    file.sync_all()
}
