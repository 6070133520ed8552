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

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg, OFlag};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io};
use crate::files::private_dir;
use crate::ids::random_hex;
use crate::manifest::{Entry, Fingerprint, Receipt, ReceiptState, State, WorkspaceRef, to_json};
use crate::snapshot::current_content;
use crate::store::{ContentStore, OutcomeStore};

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
    /// Called with the step's name after every file-system step of an apply or a recovery: the lease,
    /// each backup, the journal, each created directory, temp file, rename and removal, the receipt, each
    /// cleanup. The `wb-lsp` binary's crash test hook (`WB_LSP_CRASH_AT_STEP=N`) kills the process in the
    /// Nth call.
    pub step: Option<fn(&str)>,
}

impl Faults {
    fn at(&self, name: impl FnOnce() -> String) {
        if let Some(step) = self.step {
            step(&name());
        }
    }
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
    /// `<dest>.workbench-<txn>.tmp`.
    temp: PathBuf,
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
    /// The temp file that installs or restores this entry (`<path>.workbench-<txn>.tmp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    temp: Option<PathBuf>,
}

impl RecoveryEntry {
    fn temp(&self) -> PathBuf {
        self.temp.clone().unwrap_or_else(|| temp_for(&self.path, &random_hex(8)))
    }
}

/// `recovery.json`: written (and synced) before the first change; the receipt write is the commit point.
#[derive(Serialize, Deserialize)]
struct Recovery {
    version: u32,
    outcome_id: String,
    /// The receipt before the transaction.
    receipt: Receipt,
    entries: Vec<RecoveryEntry>,
    /// The directories missing before the transaction that installing may create (a rollback removes
    /// them when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    created_dirs: Vec<PathBuf>,
}

/// The lease: an exclusive `flock(2)` on `outcomes/<id>/application.lock`, held for a whole apply or
/// recovery. The kernel releases it when its holder exits, however it exits, so there is nothing stale to
/// detect (no pid, no `/proc`). A `flock` belongs to an open file description: a second open in the same
/// process (another thread's apply) conflicts with it just like another process's.
struct Lease {
    path: PathBuf,
    /// Unlocked (then closed) when dropped, after [`Lease`]'s own `drop` has removed the file.
    _file: Flock<fs::File>,
    faults: Faults,
}

const LEASE: &str = "application.lock";
/// What earlier versions left: a lock holding its holder's pid (`apply.lock`) and the temp files it was
/// published from (`.apply.lock.<pid>.<hex>.tmp`). They lock nothing now; recovery removes them.
const OLD_LEASE: &str = "apply.lock";
const OLD_LEASE_TEMP: &str = ".apply.lock.";

impl Lease {
    /// Opens (or creates) the lock file and locks it without waiting: a holder makes it [`Error::Busy`].
    /// The file is only ever removed by its holder, still locked (when the lease is released): a taker that
    /// opened it just before then locks a file that no longer is the lock file, sees that, and tries again.
    /// A killed holder leaves the file, unlocked, for the next taker.
    fn take(dir: &Path, outcome_id: &str, faults: Faults) -> Result<Lease> {
        let path = dir.join(LEASE);
        let failed = |e: std::io::Error| io(format!("Cannot lock {}", path.display()))(e);
        for _ in 0..16 {
            let file = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags((OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW).bits())
                .open(&path)
                .map_err(failed)?;
            let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(file) => file,
                Err((_, Errno::EWOULDBLOCK)) => return Err(Error::Busy(outcome_id.to_owned())),
                Err((_, errno)) => return Err(failed(errno.into())),
            };
            let locked = file.metadata().map_err(failed)?;
            match fs::symlink_metadata(&path) {
                Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {
                    faults.at(|| "lease: taken".to_owned());
                    return Ok(Lease { path, _file: file, faults });
                }
                // Released (and removed) by its holder between the open and the lock.
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(failed(e)),
            }
        }
        // Taken and released over and over meanwhile.
        Err(Error::Busy(outcome_id.to_owned()))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.faults.at(|| "lease: release".to_owned());
        // Still locked: nobody else can hold this file now, nor create another one in its place.
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
    let _lease = Lease::take(&dir, outcome_id, faults)?;
    recover_locked(&outcomes, &dir, faults)?;
    let receipt = outcomes.receipt(outcome_id)?;
    if receipt.state == ReceiptState::Present {
        return Err(Error::AlreadyPresent);
    }
    let bindings = outcomes.bindings(outcome_id)?;

    // Every check, before any write.
    let txn_id = random_hex(8);
    let mut created_dirs = std::collections::BTreeSet::new();
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
            let temp = temp_for(&dest, &txn_id);
            plan.push(Planned { label, dest, temp, root: root.clone(), entry, observed });
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::Conflict(conflicts));
    }
    if plan.is_empty() {
        if receipt.state != ReceiptState::Applied {
            write_receipt(&outcomes, &Receipt::new(outcome_id, ReceiptState::Applied), &faults)?;
        }
        return Ok(ApplyResult { applied: 0, unchanged });
    }

    // The transaction: backups and recovery.json first.
    let transactions = dir.join("transactions");
    private_dir(&transactions)?;
    let txn = transactions.join(&txn_id);
    private_dir(&txn.join("backups"))?;
    faults.at(|| "transaction created".to_owned());
    let mut recovery = Recovery {
        version: 1,
        outcome_id: outcome_id.to_owned(),
        receipt: receipt.clone(),
        entries: Vec::new(),
        created_dirs: created_dirs.into_iter().collect(),
    };
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
                temp: Some(item.temp.clone()),
            },
            Current::File { mode, .. } => {
                let backup = txn.join("backups").join(index.to_string());
                fs::copy(&item.dest, &backup).map_err(io(format!("Cannot back up {}", item.dest.display())))?;
                fs::set_permissions(&backup, fs::Permissions::from_mode(0o600))
                    .and_then(|()| fs::File::open(&backup)?.sync_all())
                    .map_err(io(format!("Cannot back up {}", item.dest.display())))?;
                faults.at(|| format!("backup {}", item.label));
                RecoveryEntry {
                    path: item.dest.clone(),
                    label: item.label.clone(),
                    original: "file".to_owned(),
                    backup: Some(backup),
                    mode: Some(*mode),
                    target: None,
                    after: item.entry.after().cloned(),
                    temp: Some(item.temp.clone()),
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
                temp: Some(item.temp.clone()),
            },
        };
        recovery.entries.push(entry);
    }
    write_atomic(&txn.join(JOURNAL), to_json(&recovery)?.as_bytes(), &faults, "journal")?;

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
            install(store, item, &mut created_dirs, &faults)?;
            installed = index + 1;
            if faults.crash_after_installs == Some(installed) {
                return Err(Error::Io {
                    context: "simulated crash".to_owned(),
                    source: std::io::Error::other("crash"),
                });
            }
        }
        write_receipt(&outcomes, &Receipt::new(outcome_id, ReceiptState::Applied), &faults)?;
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
                    let now = current(&item.dest, &item.label).ok();
                    if now.as_ref().is_some_and(|now| equals_after(now, item.entry.after())) {
                        if restore(original, &faults).is_err() {
                            restored = false;
                        }
                    } else if index < installed && now.as_ref() != Some(&item.observed) {
                        restored = false;
                    }
                }
                for dir in created_dirs.iter().rev() {
                    let _ = fs::remove_dir(dir);
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

fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The journal of a transaction.
const JOURNAL: &str = "recovery.json";

/// `<dest>.workbench-<hex>.tmp`.
fn temp_for(dest: &Path, hex: &str) -> PathBuf {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dest.with_file_name(format!("{name}.workbench-{hex}.tmp"))
}

/// Writes a small file atomically: a temp sibling `.<name>.<hex>.tmp` (0600, synced), then a rename.
fn write_atomic(path: &Path, bytes: &[u8], faults: &Faults, what: &str) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.{}.tmp", random_hex(8)));
    let result = (|| -> std::io::Result<()> {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        faults.at(|| format!("{what}: temp written"));
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map_err(io(format!("Cannot write {}", path.display())))?;
    faults.at(|| format!("{what}: renamed"));
    Ok(())
}

fn write_receipt(outcomes: &OutcomeStore<'_>, receipt: &Receipt, faults: &Faults) -> Result<()> {
    receipt.validate()?;
    let path = outcomes.dir(&receipt.outcome_id)?.join("application.json");
    write_atomic(&path, to_json(receipt)?.as_bytes(), faults, "receipt")
}

/// Removes a resolved transaction: the journal first (a kill during the removal of the backups must not
/// leave a journal whose backups are gone), then the directory, then `transactions/` when empty.
fn finish(txn: &Path, faults: &Faults) {
    if fs::remove_file(txn.join(JOURNAL)).is_ok() {
        faults.at(|| "journal removed".to_owned());
    }
    let _ = fs::remove_dir_all(txn);
    faults.at(|| "transaction removed".to_owned());
    if let Some(transactions) = txn.parent() {
        let _ = fs::remove_dir(transactions);
    }
}

fn install(store: &ContentStore, item: &Planned<'_>, created_dirs: &mut Vec<PathBuf>, faults: &Faults) -> Result<()> {
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
            faults.at(|| format!("install {}: directory {} created", item.label, relative(&dir, &item.root)));
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
            faults.at(|| format!("install {}: removed", item.label));
        }
        Some(after) => {
            let temp = &item.temp;
            let staged = (|| -> Result<()> {
                match after {
                    State::File { content, mode } => {
                        let bytes = store.read(&content.digest)?;
                        let mut file = fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .mode(0o600)
                            .open(temp)
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp created", item.label));
                        file.write_all(&bytes).map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp written", item.label));
                        file.set_permissions(fs::Permissions::from_mode(*mode))
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        file.sync_all().map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp mode set and synced", item.label));
                    }
                    State::Symlink { target, .. } => {
                        std::os::unix::fs::symlink(target, temp)
                            .map_err(io(format!("Cannot write {}", temp.display())))?;
                        faults.at(|| format!("install {}: temp created", item.label));
                    }
                }
                check_unchanged(Error::ChangedDuring)?;
                fs::rename(temp, &item.dest).map_err(io(format!("Cannot install {}", item.dest.display())))?;
                faults.at(|| format!("install {}: renamed", item.label));
                Ok(())
            })();
            if let Err(error) = staged {
                let _ = fs::remove_file(temp);
                return Err(error);
            }
        }
    }
    match current(&item.dest, &item.label) {
        Ok(now) if equals_after(&now, item.entry.after()) => Ok(()),
        _ => Err(Error::ChangedAfter(item.label.clone())),
    }
}

/// Puts an entry back in its original state, through its temp file and a rename.
fn restore(original: &RecoveryEntry, faults: &Faults) -> Result<()> {
    let dest = &original.path;
    let label = &original.label;
    if original.original == "absent" {
        return match fs::symlink_metadata(dest) {
            Ok(_) => {
                fs::remove_file(dest).map_err(io(format!("Cannot restore {}", dest.display())))?;
                faults.at(|| format!("restore {label}: removed"));
                Ok(())
            }
            Err(_) => Ok(()),
        };
    }
    let temp = original.temp();
    // A temp file left by a killed install or restore.
    let _ = fs::remove_file(&temp);
    let result = (|| -> std::io::Result<()> {
        if original.original == "file" {
            let backup = original.backup.as_deref().unwrap_or(Path::new(""));
            fs::copy(backup, &temp)?;
            fs::set_permissions(&temp, fs::Permissions::from_mode(original.mode.unwrap_or(0o644)))?;
            fs::File::open(&temp)?.sync_all()?;
        } else {
            std::os::unix::fs::symlink(original.target.clone().unwrap_or_default(), &temp)?;
        }
        faults.at(|| format!("restore {label}: temp written"));
        fs::rename(&temp, dest)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map_err(io(format!("Cannot restore {}", dest.display())))?;
    faults.at(|| format!("restore {label}: renamed"));
    Ok(())
}

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

fn recover_locked(outcomes: &OutcomeStore<'_>, dir: &Path, faults: Faults) -> Result<usize> {
    // Temp files of receipt writes that were killed (receipts are only written under the lease), and the
    // pid leases of earlier versions.
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".application.json.") && name.ends_with(".tmp") && fs::remove_file(entry.path()).is_ok()
            {
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
            match fs::remove_file(temp) {
                Ok(()) => faults.at(|| format!("recover {}: temp removed", entry.label)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => complete = false,
            }
        }
        if receipt.state == ReceiptState::Applied && recovery.receipt.state != ReceiptState::Applied {
            // Committed: only the cleanup was interrupted.
            if !complete {
                return Err(Error::RollbackFailed(txn));
            }
            finish(&txn, &faults);
            resolved += 1;
            continue;
        }
        for entry in recovery.entries.iter().rev() {
            let now = current(&entry.path, &entry.label).ok();
            let Some(now) = now else {
                complete = false;
                continue;
            };
            if equals_after(&now, entry.after.as_ref()) {
                if restore(entry, &faults).is_err() {
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
        for created in &dirs {
            if fs::remove_dir(created).is_ok() {
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
