#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use common::{Fixture, RUN_ID, assert_schema_valid};
use wb_outcomes::{
    ApplyResult, Completeness, Error, Outcome, OutcomeStore, ReceiptState, WorkspaceBindings, apply, apply_to_copy,
};
use wb_testsupport::{chmod, read, write};

fn setup(root: &Path) {
    write(root, "a.txt", "a\n");
    write(root, "sub/b.txt", "b\n");
    write(root, "gone.txt", "gone\n");
    write(root, "z.txt", "z\n");
}

fn change(root: &Path) {
    write(root, "a.txt", "A\n");
    write(root, "sub/b.txt", "B\n");
    fs::remove_file(root.join("gone.txt")).unwrap();
    write(root, "new/deep/c.txt", "c\n");
    chmod(root, "new/deep/c.txt", 0o755);
    symlink("a.txt", root.join("link")).unwrap();
    write(root, "z.txt", "Z\n");
}

fn transactions_empty(fx: &Fixture, id: &str) -> bool {
    let dir = fx.home.path().join("outcomes").join(id).join("transactions");
    fs::read_dir(dir).map(|d| d.count() == 0).unwrap_or(true)
}

#[test]
fn applies_everything_then_skips_on_retry() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    let result = apply(&fx.store, &outcome.id, None).unwrap();
    assert_eq!(result, ApplyResult { applied: 6, unchanged: 0 });
    assert_eq!(read(target, "a.txt"), "A\n");
    assert_eq!(read(target, "sub/b.txt"), "B\n");
    assert!(!target.join("gone.txt").exists());
    assert_eq!(read(target, "new/deep/c.txt"), "c\n");
    assert_eq!(fs::metadata(target.join("new/deep/c.txt")).unwrap().permissions().mode() & 0o777, 0o755);
    assert_eq!(fs::read_link(target.join("link")).unwrap().to_str(), Some("a.txt"));
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Applied);
    assert_schema_valid(fx.home.path(), &outcome.id);
    assert!(transactions_empty(&fx, &outcome.id));
    assert!(!fx.home.path().join("outcomes").join(&outcome.id).join("application.lock").exists());
    // No temp files left in the workspace.
    let leftovers: Vec<_> = fs::read_dir(target)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".workbench-"))
        .collect();
    assert!(leftovers.is_empty());
    // A retry: everything already in its after state.
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap(), ApplyResult { applied: 0, unchanged: 6 });
    // A later unrelated edit is never overwritten: once applied, a non-matching entry conflicts.
    write(target, "a.txt", "user edit\n");
    assert_eq!(
        apply(&fx.store, &outcome.id, None).unwrap_err().to_string(),
        "Outcome conflicts with current workspace content: a.txt"
    );
    assert_eq!(read(target, "a.txt"), "user edit\n");
}

#[test]
fn partially_applied_entries_count_as_unchanged() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    write(fx.target.path(), "a.txt", "A\n");
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap(), ApplyResult { applied: 5, unchanged: 1 });
}

#[test]
fn a_conflict_in_the_last_entry_leaves_everything_untouched() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    write(target, "z.txt", "edited by the user\n");
    write(target, "new/deep/c.txt", "someone else\n");
    let error = apply(&fx.store, &outcome.id, None).unwrap_err();
    assert_eq!(error.to_string(), "Outcome conflicts with current workspace content: new/deep/c.txt, z.txt");
    assert_eq!(read(target, "a.txt"), "a\n");
    assert_eq!(read(target, "sub/b.txt"), "b\n");
    assert_eq!(read(target, "gone.txt"), "gone\n");
    assert!(!target.join("link").exists());
    assert_eq!(read(target, "z.txt"), "edited by the user\n");
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
    assert!(transactions_empty(&fx, &outcome.id));
}

#[test]
fn present_outcomes_are_not_applied() {
    let fx = Fixture::new();
    let outcome = Outcome::new(RUN_ID, Completeness::Complete);
    OutcomeStore::new(&fx.store).commit(&outcome, ReceiptState::Present, &WorkspaceBindings::default()).unwrap();
    assert_eq!(
        apply(&fx.store, &outcome.id, None).unwrap_err().to_string(),
        "Outcome changes are already present in the workspace"
    );
}

#[test]
fn unsafe_roots_parents_and_destinations() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();

    let missing = target.join("missing");
    assert_eq!(
        apply(&fx.store, &outcome.id, Some(&missing)).unwrap_err().to_string(),
        format!("Outcome workspace is unavailable or unsafe: {}", missing.display())
    );
    let linked = fx.home.path().join("linked-root");
    symlink(target, &linked).unwrap();
    assert!(matches!(apply(&fx.store, &outcome.id, Some(&linked)), Err(Error::UnsafeWorkspace(_))));

    // A symlinked parent.
    let elsewhere = tempfile::tempdir().unwrap();
    write(elsewhere.path(), "b.txt", "b\n");
    fs::rename(target.join("sub"), target.join("sub-moved")).unwrap();
    symlink(elsewhere.path(), target.join("sub")).unwrap();
    assert_eq!(
        apply(&fx.store, &outcome.id, None).unwrap_err().to_string(),
        format!("Outcome destination has an unsafe parent: {}", target.join("sub").display())
    );
    assert_eq!(read(elsewhere.path(), "b.txt"), "b\n");
    fs::remove_file(target.join("sub")).unwrap();
    // A parent that is a file.
    write(target, "sub", "file");
    assert!(matches!(apply(&fx.store, &outcome.id, None), Err(Error::UnsafeParent(_))));
    fs::remove_file(target.join("sub")).unwrap();
    fs::rename(target.join("sub-moved"), target.join("sub")).unwrap();

    // A destination that is a directory.
    fs::create_dir(target.join("link")).unwrap();
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap_err().to_string(), "Outcome destination is not a file: link");
    fs::remove_dir(target.join("link")).unwrap();
    assert_eq!(read(target, "a.txt"), "a\n");
    // The override applies cleanly to a fresh copy.
    let copy = tempfile::tempdir().unwrap();
    setup(copy.path());
    assert_eq!(apply(&fx.store, &outcome.id, Some(copy.path())).unwrap().applied, 6);
    assert_eq!(read(copy.path(), "a.txt"), "A\n");
    assert_eq!(read(target, "a.txt"), "a\n");
}

#[test]
fn named_workspaces_need_a_binding_and_prefix_conflicts() {
    let fx = Fixture::new();
    let base = fx.outcome(setup, change);
    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    let mut named = base.changesets[0].clone();
    named.id = "docs_changes".into();
    named.workspace = wb_outcomes::WorkspaceRef::Named { name: "docs".into() };
    outcome.changesets.push(named);
    OutcomeStore::new(&fx.store).commit(&outcome, ReceiptState::Pending, &WorkspaceBindings::default()).unwrap();
    assert_schema_valid(fx.home.path(), &outcome.id);
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap_err().to_string(), "Outcome requires named workspace: docs");

    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    let mut named = base.changesets[0].clone();
    named.id = "docs_changes".into();
    named.workspace = wb_outcomes::WorkspaceRef::Named { name: "docs".into() };
    outcome.changesets.push(base.changesets[0].clone());
    outcome.changesets.push(named);
    let docs = tempfile::tempdir().unwrap();
    setup(docs.path());
    write(docs.path(), "a.txt", "docs edit\n");
    let bindings = WorkspaceBindings {
        primary: Some(fx.target.path().to_path_buf()),
        named: [("docs".to_owned(), docs.path().to_path_buf())].into_iter().collect(),
    };
    OutcomeStore::new(&fx.store).commit(&outcome, ReceiptState::Pending, &bindings).unwrap();
    write(fx.target.path(), "sub/b.txt", "primary edit\n");
    assert_eq!(
        apply(&fx.store, &outcome.id, None).unwrap_err().to_string(),
        "Outcome conflicts with current workspace content: sub/b.txt, docs:a.txt"
    );
    assert_eq!(read(fx.target.path(), "a.txt"), "a\n");
}

#[test]
fn a_failure_mid_install_rolls_everything_back() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    // Corrupt the content of the last file entry (z.txt): its install fails after the others are done.
    let z = outcome.changesets[0].entries.iter().find(|e| e.path() == "z.txt").unwrap();
    let Some(wb_outcomes::State::File { content, .. }) = z.after() else { panic!() };
    let blob = fx.store.path_of(&content.digest).unwrap();
    fs::write(&blob, "corrupt").unwrap();
    let error = apply(&fx.store, &outcome.id, None).unwrap_err();
    assert!(matches!(error, Error::DigestMismatch(_)), "{error}");
    assert_eq!(read(target, "a.txt"), "a\n");
    assert_eq!(read(target, "sub/b.txt"), "b\n");
    assert_eq!(read(target, "gone.txt"), "gone\n");
    assert_eq!(read(target, "z.txt"), "z\n");
    assert!(!target.join("link").exists());
    assert!(!target.join("new").exists(), "created directories are removed");
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
    assert!(transactions_empty(&fx, &outcome.id));
}

#[test]
fn an_injected_failure_rolls_back_and_a_failed_rollback_keeps_backups() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    let faults = wb_outcomes::apply::Faults { fail_before_install: Some(3), ..Default::default() };
    assert!(wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, faults).is_err());
    assert_eq!(read(target, "a.txt"), "a\n");
    assert_eq!(read(target, "gone.txt"), "gone\n");
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);

    let faults = wb_outcomes::apply::Faults { fail_before_install: Some(3), fail_rollback: true, ..Default::default() };
    let error = wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, faults).unwrap_err();
    let Error::RollbackFailed(dir) = &error else { panic!("{error}") };
    assert_eq!(
        error.to_string(),
        format!(
            "Outcome application failed and could not fully roll back. Recovery backups remain at {}",
            dir.display()
        )
    );
    let recovery: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("recovery.json")).unwrap()).unwrap();
    assert_eq!(recovery["outcome_id"], outcome.id.as_str());
    assert_eq!(recovery["entries"].as_array().unwrap().len(), 6);
    let a_backup = recovery["entries"][0]["backup"].as_str().unwrap();
    assert_eq!(fs::read_to_string(a_backup).unwrap(), "a\n");
}

#[test]
fn a_concurrent_edit_during_install_is_kept_and_the_rest_rolled_back() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    // Plan order is path order: a.txt, gone.txt, link, new/deep/c.txt, sub/b.txt, z.txt.
    let faults = wb_outcomes::apply::Faults { touch_before_install: Some(4), ..Default::default() };
    let error = wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, faults).unwrap_err();
    assert_eq!(error.to_string(), "Workspace changed during outcome application: sub/b.txt");
    assert_eq!(read(target, "sub/b.txt"), "concurrent edit\n");
    assert_eq!(read(target, "a.txt"), "a\n");
    assert_eq!(read(target, "gone.txt"), "gone\n");
    assert!(!target.join("link").exists());
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
    assert!(transactions_empty(&fx, &outcome.id));
}

fn faults() -> wb_outcomes::apply::Faults {
    wb_outcomes::apply::Faults::default()
}

#[test]
fn an_interrupted_apply_is_rolled_back_by_recover_or_the_next_apply() {
    for crash_after in 1..=6 {
        let fx = Fixture::new();
        let outcome = fx.outcome(setup, change);
        let target = fx.target.path();
        let crash = wb_outcomes::apply::Faults { crash_after_installs: Some(crash_after), ..faults() };
        assert!(wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, crash).is_err());
        assert!(!transactions_empty(&fx, &outcome.id), "the journal stays after a crash");
        if crash_after % 2 == 0 {
            assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap(), 1);
            // Every file is back to its old state, the receipt too.
            assert_eq!(read(target, "a.txt"), "a\n");
            assert_eq!(read(target, "sub/b.txt"), "b\n");
            assert_eq!(read(target, "gone.txt"), "gone\n");
            assert_eq!(read(target, "z.txt"), "z\n");
            assert!(!target.join("link").exists());
            assert!(!target.join("new/deep/c.txt").exists());
            assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
            assert!(transactions_empty(&fx, &outcome.id));
            assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap(), 0);
        }
        // The next apply recovers first, then applies everything.
        assert_eq!(apply(&fx.store, &outcome.id, None).unwrap(), ApplyResult { applied: 6, unchanged: 0 });
        assert_eq!(read(target, "z.txt"), "Z\n");
        assert!(transactions_empty(&fx, &outcome.id));
    }
}

#[test]
fn an_apply_interrupted_after_its_receipt_is_complete() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let crash = wb_outcomes::apply::Faults { crash_after_receipt: true, ..faults() };
    assert!(wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, crash).is_err());
    assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap(), 1);
    assert_eq!(read(fx.target.path(), "a.txt"), "A\n");
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Applied);
    assert_schema_valid(fx.home.path(), &outcome.id);
    assert!(transactions_empty(&fx, &outcome.id));
}

#[test]
fn recovery_never_overwrites_a_later_edit() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let crash = wb_outcomes::apply::Faults { crash_after_installs: Some(2), ..faults() };
    assert!(wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, crash).is_err());
    write(fx.target.path(), "a.txt", "edited after the crash\n");
    let error = wb_outcomes::recover(&fx.store, &outcome.id).unwrap_err();
    assert!(matches!(error, Error::RollbackFailed(_)), "{error}");
    assert_eq!(read(fx.target.path(), "a.txt"), "edited after the crash\n");
    // gone.txt (the second entry) was restored.
    assert_eq!(read(fx.target.path(), "gone.txt"), "gone\n");
}

thread_local! {
    static CRASH_AT: std::cell::RefCell<&'static str> = const { std::cell::RefCell::new("") };
}

/// A step hook that "crashes" (panics, without any rollback) at the step named in `CRASH_AT`.
fn crash_at_named_step(name: &str) {
    if CRASH_AT.with(|c| *c.borrow() == name) {
        panic!("simulated crash at {name}");
    }
}

fn crash_at(fx: &Fixture, id: &str, step: &'static str) {
    CRASH_AT.with(|c| *c.borrow_mut() = step);
    let faults = wb_outcomes::apply::Faults { step: Some(crash_at_named_step), ..faults() };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wb_outcomes::apply::apply_with_faults(&fx.store, id, None, faults)
    }));
    CRASH_AT.with(|c| *c.borrow_mut() = "");
    assert!(result.is_err(), "no step {step}");
}

fn workspace_names(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            names.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    names.sort();
    names
}

#[test]
fn recovery_removes_the_temp_files_and_directories_of_a_crashed_install() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    let before = workspace_names(target);
    crash_at(&fx, &outcome.id, "install new/deep/c.txt: temp written");
    let names = workspace_names(target);
    assert!(names.iter().any(|n| n.starts_with("new/deep/c.txt.workbench-")), "{names:?}");
    assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap(), 1);
    assert_eq!(workspace_names(target), before, "no temp file, no created directory");
    assert_eq!(read(target, "a.txt"), "a\n");
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
    assert!(transactions_empty(&fx, &outcome.id));
}

#[test]
fn a_crash_while_cleaning_up_is_resolved() {
    for step in ["journal removed", "receipt: temp written"] {
        let fx = Fixture::new();
        let outcome = fx.outcome(setup, change);
        crash_at(&fx, &outcome.id, step);
        assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap(), 1, "{step}");
        let dir = fx.home.path().join("outcomes").join(&outcome.id);
        let mut names: Vec<String> =
            fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["application.json", "outcome.json", "workspaces.json"], "{step}");
        let expected = if step == "journal removed" { "A\n" } else { "a\n" };
        assert_eq!(read(fx.target.path(), "a.txt"), expected, "{step}");
        assert_eq!(apply(&fx.store, &outcome.id, None).unwrap().applied, if expected == "A\n" { 0 } else { 6 });
    }
}

/// The lease of earlier versions: a lock file holding its holder's pid, published from a temp file.
#[test]
fn pid_leases_of_earlier_versions_block_nothing_and_are_removed() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let dir = fx.home.path().join("outcomes").join(&outcome.id);
    // A live pid (this process), an empty lock, a temp file of a live taker: nothing is stale or live now.
    fs::write(dir.join("apply.lock"), format!("{}\n", std::process::id())).unwrap();
    let temp = dir.join(format!(".apply.lock.{}.beef.tmp", std::process::id()));
    fs::write(&temp, format!("{}\n", std::process::id())).unwrap();
    assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap(), 0);
    assert!(!dir.join("apply.lock").exists() && !temp.exists());
    fs::write(dir.join("apply.lock"), "").unwrap();
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap().applied, 6);
    let mut names: Vec<String> =
        fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["application.json", "outcome.json", "workspaces.json"]);
}

/// Locks `application.lock` the way the lease does, through a new open file description.
fn hold_lock(dir: &Path) -> nix::fcntl::Flock<fs::File> {
    let file =
        fs::OpenOptions::new().write(true).create(true).truncate(false).open(dir.join("application.lock")).unwrap();
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e).unwrap()
}

#[test]
fn a_held_lock_makes_apply_and_recover_busy_until_released() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let dir = fx.home.path().join("outcomes").join(&outcome.id);
    let busy = format!("Outcome is being applied by another process: {}", outcome.id);
    // Held by another thread of this process.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn({
        let dir = dir.clone();
        move || {
            let lock = hold_lock(&dir);
            locked_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            drop(lock);
        }
    });
    locked_rx.recv().unwrap();
    let error = apply(&fx.store, &outcome.id, None).unwrap_err();
    assert!(matches!(error, Error::Busy(_)));
    assert_eq!(error.to_string(), busy);
    assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap_err().to_string(), busy);
    // Nothing was touched, and the holder's lock file is left alone.
    assert_eq!(read(fx.target.path(), "a.txt"), "a\n");
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
    assert!(dir.join("application.lock").exists());
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    // Released (its file left behind, as a killed holder leaves it): the next apply takes it and removes it.
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap().applied, 6);
    assert!(!dir.join("application.lock").exists());

    // Held by another process (a shell that locks its fd 9 with `flock(1)`, then becomes `sleep`): released
    // when that process is killed.
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let dir = fx.home.path().join("outcomes").join(&outcome.id);
    let lock = dir.join("application.lock");
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Killed(
        std::process::Command::new("sh")
            .args(["-c", "exec 9>>\"$0\" && flock -x -n 9 && echo locked && exec sleep 600"])
            .arg(&lock)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.0.stdout.take().unwrap()), &mut line).unwrap();
    // flock(1) is util-linux's (essential on Debian: always installed).
    assert_eq!(line, "locked\n", "flock(1) could not take the lease's lock (util-linux is needed)");
    assert_eq!(
        apply(&fx.store, &outcome.id, None).unwrap_err().to_string(),
        format!("Outcome is being applied by another process: {}", outcome.id)
    );
    assert_eq!(read(fx.target.path(), "a.txt"), "a\n");
    drop(child);
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap().applied, 6);
    assert!(!lock.exists());
}

static SECOND: std::sync::Mutex<Option<(std::path::PathBuf, String)>> = std::sync::Mutex::new(None);
static SECOND_ERRORS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A step hook: once the first apply holds its lease, another thread applies and recovers the same outcome.
fn apply_again_from_another_thread(name: &str) {
    if name != "lease: taken" {
        return;
    }
    let Some((home, id)) = SECOND.lock().unwrap().take() else { return };
    let errors = std::thread::spawn(move || {
        let store = wb_outcomes::ContentStore::open(&home).unwrap();
        vec![
            apply(&store, &id, None).map(|_| ()).unwrap_err().to_string(),
            wb_outcomes::recover(&store, &id).map(|_| ()).unwrap_err().to_string(),
        ]
    })
    .join()
    .unwrap();
    SECOND_ERRORS.lock().unwrap().extend(errors);
}

#[test]
fn two_threads_applying_the_same_outcome_exclude_each_other() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    *SECOND.lock().unwrap() = Some((fx.home.path().to_path_buf(), outcome.id.clone()));
    let faults = wb_outcomes::apply::Faults { step: Some(apply_again_from_another_thread), ..faults() };
    let result = wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, faults).unwrap();
    assert_eq!(result, ApplyResult { applied: 6, unchanged: 0 });
    let busy = format!("Outcome is being applied by another process: {}", outcome.id);
    assert_eq!(*SECOND_ERRORS.lock().unwrap(), [busy.clone(), busy]);
    assert_eq!(read(fx.target.path(), "a.txt"), "A\n");
    assert!(!fx.home.path().join("outcomes").join(&outcome.id).join("application.lock").exists());
}

static INSIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static MOST_INSIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A step hook counting the holders of the lease at once.
fn count_holders(name: &str) {
    use std::sync::atomic::Ordering::SeqCst;
    match name {
        "lease: taken" => {
            let inside = INSIDE.fetch_add(1, SeqCst) + 1;
            MOST_INSIDE.fetch_max(inside, SeqCst);
            std::thread::yield_now();
        }
        "lease: release" => {
            INSIDE.fetch_sub(1, SeqCst);
        }
        _ => {}
    }
}

/// Threads taking and releasing the lease as fast as they can (each release removes the lock file, each
/// take may create it again): never two holders at once.
#[test]
fn the_lease_has_one_holder_at_most_under_contention() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let faults = wb_outcomes::apply::Faults { step: Some(count_holders), ..faults() };
    let (taken, busy): (Vec<usize>, Vec<usize>) = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let (mut taken, mut busy) = (0, 0);
                    for _ in 0..1000 {
                        match wb_outcomes::apply::recover_with_faults(&fx.store, &outcome.id, faults) {
                            Ok(0) => taken += 1,
                            Err(Error::Busy(_)) => busy += 1,
                            other => panic!("{other:?}"),
                        }
                    }
                    (taken, busy)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).unzip()
    });
    assert_eq!(MOST_INSIDE.load(std::sync::atomic::Ordering::SeqCst), 1, "taken {taken:?}, busy {busy:?}");
    assert!(taken.iter().sum::<usize>() > 0);
    assert!(!fx.home.path().join("outcomes").join(&outcome.id).join("application.lock").exists());
    assert_eq!(apply(&fx.store, &outcome.id, None).unwrap().applied, 6);
}

/// A journal written before entries named their workspace root (no `root`): recovery finds each root from the
/// entry's label, in the primary and in a named workspace.
#[test]
fn a_journal_of_an_earlier_version_is_still_recovered() {
    let fx = Fixture::new();
    let base = fx.outcome(setup, change);
    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    let mut named = base.changesets[0].clone();
    named.id = "docs_changes".into();
    named.workspace = wb_outcomes::WorkspaceRef::Named { name: "docs".into() };
    outcome.changesets.push(base.changesets[0].clone());
    outcome.changesets.push(named);
    let docs = tempfile::tempdir().unwrap();
    setup(docs.path());
    let bindings = WorkspaceBindings {
        primary: Some(fx.target.path().to_path_buf()),
        named: [("docs".to_owned(), docs.path().to_path_buf())].into_iter().collect(),
    };
    OutcomeStore::new(&fx.store).commit(&outcome, ReceiptState::Pending, &bindings).unwrap();
    let crash = wb_outcomes::apply::Faults { crash_after_installs: Some(12), ..faults() };
    assert!(wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, crash).is_err());
    assert_eq!(read(docs.path(), "sub/b.txt"), "B\n");
    let transactions = fx.home.path().join("outcomes").join(&outcome.id).join("transactions");
    let txn = fs::read_dir(&transactions).unwrap().next().unwrap().unwrap().path();
    let journal = txn.join("recovery.json");
    let mut recovery: serde_json::Value = serde_json::from_str(&fs::read_to_string(&journal).unwrap()).unwrap();
    for entry in recovery["entries"].as_array_mut().unwrap() {
        assert!(entry.as_object_mut().unwrap().remove("root").is_some());
    }
    fs::write(&journal, recovery.to_string()).unwrap();
    assert_eq!(wb_outcomes::recover(&fx.store, &outcome.id).unwrap(), 1);
    for root in [fx.target.path(), docs.path()] {
        assert_eq!(read(root, "a.txt"), "a\n");
        assert_eq!(read(root, "sub/b.txt"), "b\n");
        assert_eq!(read(root, "gone.txt"), "gone\n");
        assert!(!root.join("link").exists() && !root.join("new").exists());
    }
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
}

/// A link the outcome makes is judged through the destination's own links as well: `c -> b/b/../../etc`
/// stays inside the workspace it was captured in, and leads out of a destination whose `b` is `.`.
#[test]
fn a_link_leading_out_through_the_destinations_links_is_refused() {
    let fx = Fixture::new();
    let outcome = fx.outcome(
        |root| write(root, "b/b/keep.txt", "keep\n"),
        |root| symlink("b/b/../../etc", root.join("c")).unwrap(),
    );
    let elsewhere = tempfile::tempdir().unwrap();
    symlink(".", elsewhere.path().join("b")).unwrap();
    assert_eq!(
        apply(&fx.store, &outcome.id, Some(elsewhere.path())).unwrap_err().to_string(),
        "Escaping symlink is not allowed in outcome: c"
    );
    assert!(fs::symlink_metadata(elsewhere.path().join("c")).is_err(), "nothing is written");
    // Where `b` is a real directory, the same outcome applies.
    let copy = tempfile::tempdir().unwrap();
    write(copy.path(), "b/b/keep.txt", "keep\n");
    assert_eq!(apply(&fx.store, &outcome.id, Some(copy.path())).unwrap().applied, 1);
    assert_eq!(fs::read_link(copy.path().join("c")).unwrap().to_str(), Some("b/b/../../etc"));
}

/// A trial's grading: the outcome's changes laid onto a fresh copy of their baseline, whatever its receipt (a
/// local run's outcome is already present where the agent worked); the receipt and the workspace the agent
/// used are untouched, and a copy that is not the baseline is refused whole.
#[test]
fn an_outcome_is_laid_onto_a_copy_of_its_baseline_without_its_receipt() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let receipt = fx.receipt_state(&outcome.id);
    let copy = tempfile::tempdir().unwrap();
    setup(copy.path());
    let result = apply_to_copy(&fx.store, &outcome.id, copy.path()).unwrap();
    assert_eq!(result, ApplyResult { applied: 6, unchanged: 0 });
    assert_eq!(read(copy.path(), "a.txt"), "A\n");
    assert!(!copy.path().join("gone.txt").exists());
    assert_eq!(read(copy.path(), "new/deep/c.txt"), "c\n");
    assert_eq!(fs::read_link(copy.path().join("link")).unwrap().to_str(), Some("a.txt"));
    assert_eq!(fx.receipt_state(&outcome.id), receipt, "the receipt is not the copy's");
    assert_eq!(read(fx.target.path(), "a.txt"), "a\n", "the outcome's own workspace is untouched");

    let other = tempfile::tempdir().unwrap();
    setup(other.path());
    write(other.path(), "z.txt", "not the baseline\n");
    let refused = apply_to_copy(&fx.store, &outcome.id, other.path()).unwrap_err();
    assert_eq!(refused.to_string(), "Outcome conflicts with current workspace content: z.txt");
    assert_eq!(read(other.path(), "a.txt"), "a\n", "nothing laid when one entry conflicts");
}
