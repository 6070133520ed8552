#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Retention (`wb-lsp clean`): what is old, what may go (never an outcome with an interrupted application),
//! and removing exactly that, with the blobs no remaining outcome references.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use wb_outcomes::retention::{Kept, clean, preview};
use wb_outcomes::{
    Artifact, Completeness, ContentStore, Outcome, OutcomeBudget, OutcomeStore, ReceiptState, WorkspaceBindings,
};

const OLD: &str = "2020-01-02T03:04:05.000Z";
const RUN_ID: &str = "wb_retentiontest0123456789";

/// Sets the modification time of a file or directory (and of everything below a directory) to long ago.
fn age(path: &Path) {
    let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_577_934_245);
    let meta = fs::symlink_metadata(path).unwrap();
    if meta.is_dir() {
        for entry in fs::read_dir(path).unwrap() {
            age(&entry.unwrap().path());
        }
    }
    fs::File::open(path).unwrap().set_modified(long_ago).unwrap();
}

/// Commits an outcome created at `created_at` with one artifact holding `bytes`; returns its id and its
/// blob's path.
fn outcome(store: &ContentStore, created_at: &str, bytes: &str) -> (String, PathBuf) {
    let content = store.put_bytes(bytes.as_bytes(), "text/plain", &mut OutcomeBudget::new()).unwrap();
    let blob = store.path_of(&content.digest).unwrap();
    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    outcome.created_at = created_at.to_owned();
    outcome.artifacts.push(Artifact {
        id: "report".into(),
        name: "report.txt".into(),
        path: None,
        content,
        description: None,
    });
    OutcomeStore::new(store).commit(&outcome, ReceiptState::Pending, &WorkspaceBindings::default()).unwrap();
    (outcome.id, blob)
}

/// Every path below `root` with its size and modification time.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let meta = fs::symlink_metadata(entry.path()).unwrap();
            out.insert(entry.path(), (meta.len(), meta.modified().unwrap()));
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    out
}

struct Home {
    _temp: tempfile::TempDir,
    home: PathBuf,
    old: String,
    old_blob: PathBuf,
    new: String,
    shared_blob: PathBuf,
    interrupted: String,
    old_run: PathBuf,
    new_run: PathBuf,
}

/// A home with an old outcome (its own blob), a new one, an old one sharing its blob with the new one, an
/// old one whose application was interrupted (a journal left in `transactions/`), an old run and a new run.
fn home() -> Home {
    let temp = tempfile::tempdir().unwrap();
    let home = temp.path().to_path_buf();
    let store = ContentStore::open(&home).unwrap();
    let (old, old_blob) = outcome(&store, OLD, "old only\n");
    let (new, shared_blob) = outcome(&store, &wb_outcomes::now_utc(), "shared\n");
    let (_, shared_again) = outcome(&store, OLD, "shared\n");
    assert_eq!(shared_again, shared_blob);
    let (interrupted, _) = outcome(&store, OLD, "interrupted\n");
    let txn = home.join("outcomes").join(&interrupted).join("transactions/abcd1234");
    fs::create_dir_all(&txn).unwrap();
    fs::write(txn.join("recovery.json"), "{}").unwrap();
    let old_run = home.join("runs/wb_oldrun0123456789abcdefgh");
    let new_run = home.join("runs/wb_newrun0123456789abcdefgh");
    for run in [&old_run, &new_run] {
        fs::create_dir_all(run.join("outbox")).unwrap();
        fs::write(run.join("outbox/report.md"), "report\n").unwrap();
    }
    age(&old_run);
    age(&home.join("blobs"));
    Home { _temp: temp, home, old, old_blob, new, shared_blob, interrupted, old_run, new_run }
}

const THIRTY_DAYS: std::time::Duration = std::time::Duration::from_secs(720 * 3600);

#[test]
fn a_preview_lists_the_old_and_changes_nothing() {
    let h = home();
    let before = snapshot(&h.home);
    let cleaning = preview(&h.home, THIRTY_DAYS, &HashSet::new());
    assert_eq!(snapshot(&h.home), before, "a preview changes nothing");
    let runs: Vec<&str> = cleaning.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(runs, ["wb_oldrun0123456789abcdefgh"]);
    assert_eq!(cleaning.runs[0].bytes, 7);
    let mut outcomes: Vec<&str> = cleaning.outcomes.iter().map(|o| o.id.as_str()).collect();
    outcomes.sort();
    assert_eq!(outcomes.len(), 2, "the old one and the old one sharing a blob: {outcomes:?}");
    assert!(outcomes.contains(&h.old.as_str()) && !outcomes.contains(&h.new.as_str()));
    assert!(cleaning.outcomes.iter().all(|o| o.created_at == OLD && o.application_state == "pending"));
    // Only the old outcome's own blob goes: the shared one stays for the new outcome, the interrupted
    // one's stays with it.
    assert_eq!((cleaning.blobs.count, cleaning.blobs.bytes), (1, 9));
    assert_eq!(
        cleaning.kept,
        [Kept {
            id: h.interrupted.clone(),
            reason: "interrupted application (run wb-lsp outcome ID --recover)".into()
        }]
    );
    // A run still going on stays however old its files are (a quiet runner writes nothing for hours).
    let active: HashSet<String> = ["wb_oldrun0123456789abcdefgh".to_owned()].into();
    let quiet = preview(&h.home, THIRTY_DAYS, &active);
    assert!(quiet.runs.is_empty(), "{quiet:?}");
    assert!(
        quiet
            .kept
            .contains(&Kept { id: active.iter().next().unwrap().clone(), reason: "the run is still going on".into() })
    );
    assert!(clean(&h.home, THIRTY_DAYS, &active).unwrap().runs.is_empty());
    assert!(h.old_run.exists());
    // Nothing is older than a century.
    let none = preview(&h.home, std::time::Duration::from_secs(24 * 365 * 100 * 3600), &HashSet::new());
    assert!(none.runs.is_empty() && none.outcomes.is_empty() && none.blobs.count == 0 && none.kept.is_empty());
}

#[test]
fn clean_removes_exactly_the_old_and_keeps_an_interrupted_application() {
    let h = home();
    let previewed = preview(&h.home, THIRTY_DAYS, &HashSet::new());
    let cleaned = clean(&h.home, THIRTY_DAYS, &HashSet::new()).unwrap();
    assert_eq!(cleaned, previewed, "clean removes what the preview showed");
    let outcomes = h.home.join("outcomes");
    assert!(!outcomes.join(&h.old).exists() && !h.old_blob.exists() && !h.old_run.exists());
    assert!(outcomes.join(&h.new).join("outcome.json").exists() && h.shared_blob.exists() && h.new_run.exists());
    assert!(outcomes.join(&h.interrupted).join("transactions/abcd1234/recovery.json").exists());
    let mut left: Vec<String> =
        fs::read_dir(&outcomes).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    let mut expected = vec![h.new.clone(), h.interrupted.clone()];
    expected.sort();
    assert_eq!(left, expected);
    // The remaining outcomes still read whole.
    let store = ContentStore::open(&h.home).unwrap();
    let new = OutcomeStore::new(&store).load(&h.new).unwrap();
    assert_eq!(store.read(&new.artifacts[0].content.digest).unwrap(), b"shared\n");
    // Again: only the interrupted one is reported.
    let again = clean(&h.home, THIRTY_DAYS, &HashSet::new()).unwrap();
    assert!(again.runs.is_empty() && again.outcomes.is_empty() && again.blobs.count == 0);
    assert_eq!(again.kept.len(), 1);
}

/// An apply in progress (its lease held) keeps an old outcome, in the preview and in the clean.
#[test]
fn an_outcome_being_applied_is_kept() {
    let h = home();
    let dir = h.home.join("outcomes").join(&h.old);
    let file =
        fs::OpenOptions::new().write(true).create(true).truncate(false).open(dir.join("application.lock")).unwrap();
    let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e).unwrap();
    let being_applied = Kept { id: h.old.clone(), reason: "being applied".into() };
    assert!(preview(&h.home, THIRTY_DAYS, &HashSet::new()).kept.contains(&being_applied));
    let cleaned = clean(&h.home, THIRTY_DAYS, &HashSet::new()).unwrap();
    assert!(cleaned.kept.contains(&being_applied));
    assert!(dir.join("outcome.json").exists() && h.old_blob.exists(), "its blob stays too");
    drop(lock);
    assert!(clean(&h.home, THIRTY_DAYS, &HashSet::new()).unwrap().outcomes.iter().any(|o| o.id == h.old));
    assert!(!dir.exists() && !h.old_blob.exists());
}
