#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

use common::{Fixture, RUN_ID};
use wb_outcomes::{
    Completeness, Error, Outcome, OutcomeBudget, OutcomeStore, ReceiptState, WorkspaceBindings, collect_outbox, export,
};
use wb_testsupport::{read, write};

#[test]
fn export_layout() {
    let fx = Fixture::new();
    let base = fx.outcome(
        |root| {
            write(root, "a.txt", "a\n");
            write(root, "gone.txt", "gone\n");
        },
        |root| {
            write(root, "a.txt", "A\n");
            fs::remove_file(root.join("gone.txt")).unwrap();
            write(root, "bin/run.sh", "#!/bin/sh\n");
            fs::set_permissions(root.join("bin/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
            symlink("../a.txt", root.join("bin/link")).unwrap();
        },
    );
    let outbox = tempfile::tempdir().unwrap();
    write(outbox.path(), "reports/r.html", "<p>r</p>");
    let collected = collect_outbox(outbox.path(), &fx.store, &mut OutcomeBudget::new()).unwrap();
    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    outcome.changesets = base.changesets.clone();
    outcome.artifacts = collected.artifacts;
    let mut unnamed = outcome.artifacts[0].clone();
    unnamed.id = "artifact_loose".into();
    unnamed.path = None;
    unnamed.name = "Loose / report?.html".into();
    outcome.artifacts.push(unnamed);
    OutcomeStore::new(&fx.store).commit(&outcome, ReceiptState::Pending, &WorkspaceBindings::default()).unwrap();
    let receipt_before = fs::read(fx.home.path().join("outcomes").join(&outcome.id).join("application.json")).unwrap();

    let parent = tempfile::tempdir().unwrap();
    let dest = parent.path().join("export");
    assert_eq!(export(&fx.store, &outcome.id, &dest).unwrap(), dest);
    assert_eq!(
        fs::read(dest.join("outcome.json")).unwrap(),
        fs::read(fx.home.path().join("outcomes").join(&outcome.id).join("outcome.json")).unwrap()
    );
    let files = dest.join("changesets/changes/files");
    assert_eq!(read(&files, "a.txt"), "A\n");
    assert!(!files.join("gone.txt").exists(), "deletions appear only in the manifest");
    assert_eq!(fs::metadata(files.join("bin/run.sh")).unwrap().permissions().mode() & 0o777, 0o755);
    assert_eq!(fs::read_link(files.join("bin/link")).unwrap().to_str(), Some("../a.txt"));
    assert!(read(&dest, "changesets/changes/changes.diff").contains("+A"));
    assert_eq!(read(&dest, "artifacts/reports/r.html"), "<p>r</p>");
    assert_eq!(fs::metadata(dest.join("artifacts/reports/r.html")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(read(&dest, "artifacts/Loose _ report_.html"), "<p>r</p>");
    // No temp sibling left; receipt unchanged.
    assert_eq!(fs::read_dir(parent.path()).unwrap().count(), 1);
    assert_eq!(
        fs::read(fx.home.path().join("outcomes").join(&outcome.id).join("application.json")).unwrap(),
        receipt_before
    );

    // The destination must not exist.
    let error = export(&fx.store, &outcome.id, &dest).unwrap_err();
    assert!(matches!(error, Error::ExportExists(_)));
    assert_eq!(error.to_string(), format!("Outcome export destination already exists: {}", dest.display()));
    let file_dest = parent.path().join("file");
    fs::write(&file_dest, "x").unwrap();
    assert!(matches!(export(&fx.store, &outcome.id, &file_dest), Err(Error::ExportExists(_))));
}
