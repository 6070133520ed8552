#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Hostile workspaces against apply (issue 13, item 3): a parent directory swapped for a symlink to an outside
//! directory while applies run never redirects a write, and every apply either succeeds in the real
//! directory or fails with the workspace in its old state (after recovery when the rollback itself was
//! refused).

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::Fixture;
use wb_outcomes::{Error, OutcomeStore, Receipt, ReceiptState, apply, recover};
use wb_testsupport::write;

fn setup(root: &Path) {
    write(root, "a.txt", "a\n");
    write(root, "sub/b.txt", "b\n");
}

fn change(root: &Path) {
    write(root, "a.txt", "A\n");
    write(root, "sub/b.txt", "B\n");
    write(root, "sub/new.txt", "new\n");
    write(root, "sub/deeper/c.txt", "c\n");
}

/// Every path below `root` with its content (`None` for a directory); symlinks are never expected.
fn tree(root: &Path) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let kind = entry.file_type().unwrap();
            assert!(!kind.is_symlink(), "a symlink in the workspace: {name}");
            if kind.is_dir() {
                out.insert(name, None);
                stack.push(path);
            } else {
                out.insert(name, Some(fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out
}

/// What the outside directory looks like: its entries, and its own and its file's change times (creating,
/// renaming or removing anything in it, or writing its file, changes them).
fn outside_state(outside: &Path) -> (Vec<String>, i64, i64, i64, i64, String) {
    let mut names: Vec<String> =
        fs::read_dir(outside).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let dir = fs::metadata(outside).unwrap();
    let file = fs::metadata(outside.join("b.txt")).unwrap();
    (
        names,
        dir.mtime_nsec(),
        dir.ctime_nsec(),
        file.mtime_nsec(),
        file.ctime_nsec(),
        fs::read_to_string(outside.join("b.txt")).unwrap(),
    )
}

/// Swaps `<root>/sub` for a symlink to `outside` and back until told to stop, leaving the real directory in
/// place for `pause` between swaps (so that some applies get through); always stops with the real directory
/// back in place.
fn swap_until(stop: &AtomicBool, root: &Path, outside: &Path, pause: Duration) {
    let (sub, real) = (root.join("sub"), root.join("sub.real"));
    while !stop.load(Ordering::Relaxed) {
        if fs::rename(&sub, &real).is_ok() {
            let _ = symlink(outside, &sub);
            std::thread::yield_now();
            let _ = fs::remove_file(&sub);
            let _ = fs::rename(&real, &sub);
        }
        std::thread::sleep(pause);
    }
    // The apply may have made a `sub` of its own while the real one was away (and removed it again when it
    // rolled back): the real one goes back now.
    if fs::symlink_metadata(&real).is_ok() {
        let _ = fs::remove_file(&sub);
        fs::rename(&real, &sub).unwrap();
    }
}

#[test]
fn a_parent_swapped_for_a_symlink_mid_apply_never_redirects_a_write() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    let outside = tempfile::tempdir().unwrap();
    // The same bytes as the real `sub/b.txt`: through the symlink it looks like the before state.
    write(outside.path(), "b.txt", "b\n");
    let untouched = outside_state(outside.path());
    let old = tree(target);
    let new = {
        let copy = tempfile::tempdir().unwrap();
        setup(copy.path());
        change(copy.path());
        tree(copy.path())
    };
    let outcomes = OutcomeStore::new(&fx.store);
    let (mut succeeded, mut failed) = (0, 0);
    for round in 0..300 {
        let stop = AtomicBool::new(false);
        let pause = Duration::from_micros(50 * (round % 20));
        let result = std::thread::scope(|scope| {
            scope.spawn(|| swap_until(&stop, target, outside.path(), pause));
            let result = apply(&fx.store, &outcome.id, None);
            stop.store(true, Ordering::Relaxed);
            result
        });
        assert_eq!(outside_state(outside.path()), untouched, "round {round}: written outside ({result:?})");
        match result {
            Ok(_) => {
                succeeded += 1;
                assert_eq!(tree(target), new, "round {round}");
                assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Applied);
                // Back to the old state for the next round.
                fs::remove_dir_all(target.join("sub")).unwrap();
                setup(target);
                outcomes.write_receipt(&Receipt::new(&outcome.id, ReceiptState::Pending)).unwrap();
            }
            Err(error) => {
                failed += 1;
                if matches!(error, Error::RollbackFailed(_)) {
                    // A restore refused to go through the symlink: recovery, with the directory back, finishes it.
                    assert_eq!(recover(&fx.store, &outcome.id).unwrap(), 1, "round {round}");
                }
                assert_eq!(tree(target), old, "round {round}: {error}");
                assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending, "round {round}");
            }
        }
        assert_eq!(outside_state(outside.path()), untouched, "round {round}: written outside");
    }
    eprintln!("{succeeded} applies succeeded, {failed} failed cleanly");
    // Undisturbed, the apply completes.
    apply(&fx.store, &outcome.id, None).unwrap();
    assert_eq!(tree(target), new);
}

/// The workspace whose `sub` [`swap_sub_at_journal`] swaps, and the directory its symlink points to.
static SWAP: std::sync::Mutex<Option<(std::path::PathBuf, std::path::PathBuf)>> = std::sync::Mutex::new(None);

/// A step hook: once the journal is written (every check done, nothing installed yet), `sub` becomes a
/// symlink to the outside directory.
fn swap_sub_at_journal(name: &str) {
    if name != "journal: renamed" {
        return;
    }
    if let Some((root, outside)) = SWAP.lock().unwrap().take() {
        fs::rename(root.join("sub"), root.join("sub.real")).unwrap();
        symlink(outside, root.join("sub")).unwrap();
    }
}

/// The same race, at the worst moment every time: after the checks, before the first install.
#[test]
fn a_parent_swapped_after_the_checks_is_never_followed() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "b.txt", "b\n");
    let untouched = outside_state(outside.path());
    *SWAP.lock().unwrap() = Some((target.to_path_buf(), outside.path().to_path_buf()));
    let faults = wb_outcomes::apply::Faults { step: Some(swap_sub_at_journal), ..Default::default() };
    let result = wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, faults);
    assert_eq!(outside_state(outside.path()), untouched, "written outside: {result:?}");
    // Every entry went into the directory that was checked, wherever it is now.
    assert_eq!(result.unwrap().applied, 4);
    fs::remove_file(target.join("sub")).unwrap();
    fs::rename(target.join("sub.real"), target.join("sub")).unwrap();
    let new = {
        let copy = tempfile::tempdir().unwrap();
        setup(copy.path());
        change(copy.path());
        tree(copy.path())
    };
    assert_eq!(tree(target), new);
}

/// Recovery after a kill, with a parent swapped for a symlink meanwhile: it refuses to go through it (the
/// backups stay), and finishes once the directory is back.
#[test]
fn recovery_never_restores_through_a_symlinked_parent() {
    let fx = Fixture::new();
    let outcome = fx.outcome(setup, change);
    let target = fx.target.path();
    let crash = wb_outcomes::apply::Faults { crash_after_installs: Some(4), ..Default::default() };
    assert!(wb_outcomes::apply::apply_with_faults(&fx.store, &outcome.id, None, crash).is_err());
    // Outside, the after state of `sub/b.txt`: a recovery that follows the symlink "restores" it there.
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "b.txt", "B\n");
    write(outside.path(), "new.txt", "new\n");
    let untouched = outside_state(outside.path());
    fs::rename(target.join("sub"), target.join("sub.real")).unwrap();
    symlink(outside.path(), target.join("sub")).unwrap();
    let error = recover(&fx.store, &outcome.id).unwrap_err();
    assert!(matches!(error, Error::RollbackFailed(_)), "{error}");
    assert_eq!(outside_state(outside.path()), untouched, "restored outside");
    assert_eq!(fs::read_to_string(outside.path().join("new.txt")).unwrap(), "new\n");
    fs::remove_file(target.join("sub")).unwrap();
    fs::rename(target.join("sub.real"), target.join("sub")).unwrap();
    assert_eq!(recover(&fx.store, &outcome.id).unwrap(), 1);
    let old = {
        let copy = tempfile::tempdir().unwrap();
        setup(copy.path());
        tree(copy.path())
    };
    assert_eq!(tree(target), old);
    assert_eq!(fx.receipt_state(&outcome.id), ReceiptState::Pending);
}
