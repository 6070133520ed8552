//! All-or-nothing application of an outcome's changesets to their workspaces (engine facts (f), Apply).
//!
//! 1. Take the per-outcome lease (`outcomes/<id>/apply.lock`, created exclusively).
//! 2. Check every entry of every changeset before any write: safe root, safe parents, the destination is
//!    a file or symlink, and its current state equals `after` (skipped, "unchanged") or `before`. Any
//!    conflict rejects everything.
//! 3. Back up every destination about to change into a transaction directory with `recovery.json`.
//! 4. Install each entry with a temp file `<dest>.workbench-<hex>.tmp` and a rename, re-checking the
//!    destination before and after; then write the `applied` receipt.
//! 5. On any failure, restore every backup (and the receipt); if that fails too, keep the backups.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io};
use crate::manifest::{Entry, Fingerprint, OutcomeStore, Receipt, ReceiptState, State, WorkspaceRef, to_json};
use crate::snapshot::current_content;
use crate::store::ContentStore;
use crate::util::{atomic_write, private_dir, random_hex};

/// What an apply did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ApplyResult {
    /// Entries installed.
    pub applied: usize,
    /// Entries already in their after state.
    pub unchanged: usize,
}

/// Test-only fault injection.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Fail just before installing the entry with this index (in plan order).
    pub fail_before_install: Option<usize>,
    /// Make every restore fail.
    pub fail_rollback: bool,
    /// Write to the destination of the entry with this index just before it is installed (a concurrent
    /// edit).
    pub touch_before_install: Option<usize>,
    /// Stop without any rollback once this many entries are installed (a simulated kill).
    pub crash_after_installs: Option<usize>,
    /// Stop without cleanup right after the receipt is written (a simulated kill).
    pub crash_after_receipt: bool,
}

/// Applies an outcome. `workspace_override` replaces the primary workspace binding only.
pub fn apply(store: &ContentStore, outcome_id: &str, workspace_override: Option<&Path>) -> Result<ApplyResult> {
    apply_with_faults(store, outcome_id, workspace_override, Faults::default())
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Current {
    Absent,
    File { digest: String, mode: u32, size: u64 },
    Symlink { mode: u32, target: String },
}

struct Planned<'a> {
    label: String,
    dest: PathBuf,
    root: PathBuf,
    entry: &'a Entry,
    observed: Current,
}

#[derive(Serialize, Deserialize)]
struct RecoveryEntry {
    path: PathBuf,
    label: String,
    /// `absent`, `file` or `symlink`.
    original: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    backup: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    /// The state being installed (`None` for a delete).
    after: Option<State>,
}

/// `recovery.json`: written (and synced) before the first change; the receipt write is the commit point.
#[derive(Serialize, Deserialize)]
struct Recovery {
    version: u32,
    outcome_id: String,
    /// The receipt before the transaction.
    receipt: Receipt,
    entries: Vec<RecoveryEntry>,
}

struct Lease {
    path: PathBuf,
}

impl Lease {
    fn take(dir: &Path, outcome_id: &str) -> Result<Lease> {
        let path = dir.join("apply.lock");
        for _ in 0..2 {
            match fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path) {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(Lease { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // A lease whose process is gone is stale.
                    let holder = fs::read_to_string(&path).unwrap_or_default();
                    let alive =
                        holder.trim().parse::<u32>().is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
                    if alive || holder.trim().is_empty() {
                        return Err(Error::Busy(outcome_id.to_owned()));
                    }
                    let _ = fs::remove_file(&path);
                }
                Err(e) => return Err(io(format!("Cannot create {}", path.display()))(e)),
            }
        }
        Err(Error::Busy(outcome_id.to_owned()))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn current(dest: &Path, label: &str) -> Result<Current> {
    let meta = match fs::symlink_metadata(dest) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Current::Absent),
        Err(e) => return Err(io(format!("Cannot inspect {}", dest.display()))(e)),
    };
    let mode = meta.permissions().mode() & 0o777;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(dest).map_err(io(format!("Cannot read {}", dest.display())))?;
        return Ok(Current::Symlink { mode, target: target.to_string_lossy().into_owned() });
    }
    if !meta.is_file() {
        return Err(Error::NotAFile(label.to_owned()));
    }
    let content = current_content(dest).map_err(io(format!("Cannot read {}", dest.display())))?;
    Ok(Current::File { digest: content.digest, mode, size: content.size_bytes })
}

fn equals_after(current: &Current, after: Option<&State>) -> bool {
    match (current, after) {
        (Current::Absent, None) => true,
        (Current::File { digest, mode, .. }, Some(State::File { content, mode: m })) => {
            *digest == content.digest && mode == m
        }
        (Current::Symlink { target, .. }, Some(State::Symlink { target: t, .. })) => target == t,
        _ => false,
    }
}

fn equals_before(current: &Current, before: Option<&Fingerprint>) -> bool {
    match (current, before) {
        (Current::Absent, None) => true,
        (Current::File { digest, mode, size }, Some(Fingerprint::File { digest: d, mode: m, size_bytes })) => {
            digest == d && mode == m && size == size_bytes
        }
        (Current::Symlink { target, .. }, Some(Fingerprint::Symlink { target: t, .. })) => target == t,
        _ => false,
    }
}

/// Checks that every existing ancestor of `dest` below `root` is a real directory.
fn check_parents(root: &Path, path: &str) -> Result<()> {
    let mut dir = root.to_path_buf();
    let segments: Vec<&str> = path.split('/').collect();
    for segment in &segments[..segments.len().saturating_sub(1)] {
        dir.push(segment);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() && !meta.file_type().is_symlink() => {}
            Ok(_) => return Err(Error::UnsafeParent(dir)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) => return Err(Error::UnsafeParent(dir)),
        }
    }
    Ok(())
}

fn check_root(root: &Path) -> Result<PathBuf> {
    let meta = fs::symlink_metadata(root).map_err(|_| Error::UnsafeWorkspace(root.to_path_buf()))?;
    if !meta.is_dir() || meta.file_type().is_symlink() {
        return Err(Error::UnsafeWorkspace(root.to_path_buf()));
    }
    Ok(root.to_path_buf())
}

#[doc(hidden)]
pub fn apply_with_faults(
    store: &ContentStore,
    outcome_id: &str,
    workspace_override: Option<&Path>,
    faults: Faults,
) -> Result<ApplyResult> {
    let outcomes = OutcomeStore::new(store);
    let dir = outcomes.dir(outcome_id)?;
    let outcome = outcomes.load(outcome_id)?;
    let _lease = Lease::take(&dir, outcome_id)?;
    recover_locked(&outcomes, &dir)?;
    let receipt = outcomes.receipt(outcome_id)?;
    if receipt.state == ReceiptState::Present {
        return Err(Error::AlreadyPresent);
    }
    let bindings = outcomes.bindings(outcome_id)?;

    // Every check, before any write.
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
            plan.push(Planned { label, dest, root: root.clone(), entry, observed });
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::Conflict(conflicts));
    }
    if plan.is_empty() {
        if receipt.state != ReceiptState::Applied {
            outcomes.write_receipt(&Receipt::new(outcome_id, ReceiptState::Applied))?;
        }
        return Ok(ApplyResult { applied: 0, unchanged });
    }

    // The transaction: backups and recovery.json first.
    let transactions = dir.join("transactions");
    private_dir(&transactions)?;
    let txn = transactions.join(random_hex(8));
    private_dir(&txn.join("backups"))?;
    let mut recovery =
        Recovery { version: 1, outcome_id: outcome_id.to_owned(), receipt: receipt.clone(), entries: Vec::new() };
    for (index, item) in plan.iter().enumerate() {
        let entry = match &item.observed {
            Current::Absent => RecoveryEntry {
                path: item.dest.clone(),
                label: item.label.clone(),
                original: "absent".to_owned(),
                backup: None,
                mode: None,
                target: None,
                after: item.entry.after().cloned(),
            },
            Current::File { mode, .. } => {
                let backup = txn.join("backups").join(index.to_string());
                fs::copy(&item.dest, &backup).map_err(io(format!("Cannot back up {}", item.dest.display())))?;
                fs::set_permissions(&backup, fs::Permissions::from_mode(0o600))
                    .and_then(|()| fs::File::open(&backup)?.sync_all())
                    .map_err(io(format!("Cannot back up {}", item.dest.display())))?;
                RecoveryEntry {
                    path: item.dest.clone(),
                    label: item.label.clone(),
                    original: "file".to_owned(),
                    backup: Some(backup),
                    mode: Some(*mode),
                    target: None,
                    after: item.entry.after().cloned(),
                }
            }
            Current::Symlink { mode, target } => RecoveryEntry {
                path: item.dest.clone(),
                label: item.label.clone(),
                original: "symlink".to_owned(),
                backup: None,
                mode: Some(*mode),
                target: Some(target.clone()),
                after: item.entry.after().cloned(),
            },
        };
        recovery.entries.push(entry);
    }
    atomic_write(&txn.join("recovery.json"), to_json(&recovery)?.as_bytes(), 0o600)?;

    let mut created_dirs = Vec::new();
    let mut installed = 0;
    let result = (|| -> Result<()> {
        for (index, item) in plan.iter().enumerate() {
            if faults.fail_before_install == Some(index) {
                return Err(Error::Io {
                    context: format!("Cannot install {}", item.dest.display()),
                    source: std::io::Error::other("injected failure"),
                });
            }
            if faults.touch_before_install == Some(index) {
                let _ = fs::write(&item.dest, "concurrent edit\n");
            }
            install(store, item, &mut created_dirs)?;
            installed = index + 1;
            if faults.crash_after_installs == Some(installed) {
                return Err(Error::Io {
                    context: "simulated crash".to_owned(),
                    source: std::io::Error::other("crash"),
                });
            }
        }
        outcomes.write_receipt(&Receipt::new(outcome_id, ReceiptState::Applied))?;
        if faults.crash_after_receipt {
            return Err(Error::Io { context: "simulated crash".to_owned(), source: std::io::Error::other("crash") });
        }
        Ok(())
    })();
    if faults.crash_after_installs.is_some() || faults.crash_after_receipt {
        // A simulated kill: no rollback, the transaction directory stays for `recover`.
        return result.map(|()| ApplyResult { applied: plan.len(), unchanged });
    }
    match result {
        Ok(()) => {
            let _ = fs::remove_dir_all(&txn);
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
                    let now = current(&item.dest, &item.label).ok();
                    if now.as_ref().is_some_and(|now| equals_after(now, item.entry.after())) {
                        if restore(&item.dest, original).is_err() {
                            restored = false;
                        }
                    } else if index < installed && now.as_ref() != Some(&item.observed) {
                        restored = false;
                    }
                }
                for dir in created_dirs.iter().rev() {
                    let _ = fs::remove_dir(dir);
                }
                if outcomes.write_receipt(&receipt).is_err() {
                    restored = false;
                }
            }
            if restored {
                let _ = fs::remove_dir_all(&txn);
                Err(error)
            } else {
                Err(Error::RollbackFailed(txn))
            }
        }
    }
}

fn temp_for(dest: &Path) -> PathBuf {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dest.with_file_name(format!("{name}.workbench-{}.tmp", random_hex(8)))
}

fn install(store: &ContentStore, item: &Planned<'_>, created_dirs: &mut Vec<PathBuf>) -> Result<()> {
    let path = item.entry.path();
    // Parents: create the missing ones, then check the chain again.
    if let Some(parent) = item.dest.parent() {
        let mut missing = Vec::new();
        let mut dir = parent.to_path_buf();
        while dir != item.root && fs::symlink_metadata(&dir).is_err() {
            missing.push(dir.clone());
            if !dir.pop() {
                break;
            }
        }
        for dir in missing.into_iter().rev() {
            fs::create_dir(&dir).map_err(io(format!("Cannot create {}", dir.display())))?;
            created_dirs.push(dir);
        }
    }
    check_parents(&item.root, path)?;
    let check_unchanged = |text: fn(String) -> Error| -> Result<()> {
        match current(&item.dest, &item.label) {
            Ok(now) if now == item.observed => Ok(()),
            _ => Err(text(item.label.clone())),
        }
    };
    match item.entry.after() {
        None => {
            check_unchanged(Error::ChangedDuring)?;
            fs::remove_file(&item.dest).map_err(io(format!("Cannot remove {}", item.dest.display())))?;
        }
        Some(after) => {
            let temp = temp_for(&item.dest);
            let staged = (|| -> Result<()> {
                match after {
                    State::File { content, mode } => {
                        let bytes = store.read(&content.digest)?;
                        let mut file = fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .mode(0o600)
                            .open(&temp)
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        file.write_all(&bytes).map_err(io(format!("Cannot write {}", temp.display())))?;
                        file.set_permissions(fs::Permissions::from_mode(*mode))
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        file.sync_all().map_err(io(format!("Cannot write {}", temp.display())))?;
                    }
                    State::Symlink { target, .. } => {
                        std::os::unix::fs::symlink(target, &temp)
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                    }
                }
                check_unchanged(Error::ChangedDuring)?;
                fs::rename(&temp, &item.dest).map_err(io(format!("Cannot install {}", item.dest.display())))
            })();
            if let Err(error) = staged {
                let _ = fs::remove_file(&temp);
                return Err(error);
            }
        }
    }
    match current(&item.dest, &item.label) {
        Ok(now) if equals_after(&now, item.entry.after()) => Ok(()),
        _ => Err(Error::ChangedAfter(item.label.clone())),
    }
}

fn restore(dest: &Path, original: &RecoveryEntry) -> Result<()> {
    match original.original.as_str() {
        "absent" => match fs::symlink_metadata(dest) {
            Ok(_) => fs::remove_file(dest).map_err(io(format!("Cannot restore {}", dest.display()))),
            Err(_) => Ok(()),
        },
        "file" => {
            let backup = original.backup.as_deref().unwrap_or(Path::new(""));
            let temp = temp_for(dest);
            let result = fs::copy(backup, &temp)
                .and_then(|_| fs::set_permissions(&temp, fs::Permissions::from_mode(original.mode.unwrap_or(0o644))))
                .and_then(|()| fs::rename(&temp, dest));
            if result.is_err() {
                let _ = fs::remove_file(&temp);
            }
            result.map_err(io(format!("Cannot restore {}", dest.display())))
        }
        _ => {
            let temp = temp_for(dest);
            let target = original.target.clone().unwrap_or_default();
            let result = std::os::unix::fs::symlink(&target, &temp).and_then(|()| fs::rename(&temp, dest));
            if result.is_err() {
                let _ = fs::remove_file(&temp);
            }
            result.map_err(io(format!("Cannot restore {}", dest.display())))
        }
    }
}

/// Finishes or rolls back the transactions an interrupted apply left behind (for example after a kill):
/// a transaction whose `applied` receipt was written is complete and only cleaned up; any other one is
/// rolled back entry by entry (an entry still in its after state is restored from its backup, one already
/// in its original state is left alone) and the previous receipt restored. An entry in neither state was
/// edited since, and is never overwritten: the backups are kept and reported. Returns how many
/// transactions were resolved. `apply` runs this first, under the same lease.
pub fn recover(store: &ContentStore, outcome_id: &str) -> Result<usize> {
    let outcomes = OutcomeStore::new(store);
    let dir = outcomes.dir(outcome_id)?;
    if !dir.join("outcome.json").is_file() {
        return Err(Error::NotFound(outcome_id.to_owned()));
    }
    let _lease = Lease::take(&dir, outcome_id)?;
    recover_locked(&outcomes, &dir)
}

fn recover_locked(outcomes: &OutcomeStore<'_>, dir: &Path) -> Result<usize> {
    let Ok(entries) = fs::read_dir(dir.join("transactions")) else { return Ok(0) };
    let mut transactions: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    transactions.sort();
    let mut resolved = 0;
    for txn in transactions {
        let text = match fs::read_to_string(txn.join("recovery.json")) {
            Ok(text) => text,
            // Interrupted before recovery.json was complete: nothing was changed yet.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = fs::remove_dir_all(&txn);
                resolved += 1;
                continue;
            }
            Err(e) => return Err(io(format!("Cannot read {}", txn.display()))(e)),
        };
        let recovery: Recovery = serde_json::from_str(&text).map_err(|_| Error::RollbackFailed(txn.clone()))?;
        let receipt = outcomes.receipt(&recovery.outcome_id)?;
        if receipt.state == ReceiptState::Applied && recovery.receipt.state != ReceiptState::Applied {
            let _ = fs::remove_dir_all(&txn);
            resolved += 1;
            continue;
        }
        let mut complete = true;
        for entry in recovery.entries.iter().rev() {
            let now = current(&entry.path, &entry.label).ok();
            let Some(now) = now else {
                complete = false;
                continue;
            };
            if equals_after(&now, entry.after.as_ref()) {
                if restore(&entry.path, entry).is_err() {
                    complete = false;
                }
            } else if !is_original(&now, entry) {
                complete = false;
            }
        }
        if !complete {
            return Err(Error::RollbackFailed(txn));
        }
        outcomes.write_receipt(&recovery.receipt)?;
        let _ = fs::remove_dir_all(&txn);
        resolved += 1;
    }
    Ok(resolved)
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
