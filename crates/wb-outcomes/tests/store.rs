#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;

use wb_outcomes::{ContentStore, Error, Limits, OutcomeBudget, sha256_hex};

#[test]
fn layout_permissions_and_verification() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let mut budget = OutcomeBudget::new();
    let content = store.put_bytes(b"hello", "text/plain", &mut budget).unwrap();
    let hex = sha256_hex(b"hello");
    assert_eq!(content.digest, format!("sha256:{hex}"));
    assert_eq!(content.size_bytes, 5);
    let path = home.path().join("blobs/sha256").join(&hex[..2]).join(&hex[2..]);
    assert_eq!(store.path_of(&content.digest).unwrap(), path);
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    for dir in [home.path().join("blobs"), home.path().join("blobs/sha256"), path.parent().unwrap().to_path_buf()] {
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700, "{}", dir.display());
    }
    // No temp files left behind.
    assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    assert_eq!(store.read(&content.digest).unwrap(), b"hello");

    // From a file, streamed.
    let source = home.path().join("source.bin");
    fs::write(&source, vec![7u8; 300_000]).unwrap();
    let file_content = store.put_file(&source, "application/octet-stream", &mut budget).unwrap();
    assert_eq!(file_content.digest, format!("sha256:{}", sha256_hex(&vec![7u8; 300_000])));
    assert_eq!(budget.bytes(), 300_005);
    // Larger files are streamed.
    let large: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    fs::write(&source, &large).unwrap();
    let streamed = store.put_file(&source, "application/octet-stream", &mut budget).unwrap();
    assert_eq!(streamed.digest, format!("sha256:{}", sha256_hex(&large)));
    assert_eq!(store.read(&streamed.digest).unwrap(), large);
    assert_eq!(fs::metadata(store.path_of(&streamed.digest).unwrap()).unwrap().permissions().mode() & 0o777, 0o600);

    // Verified on read.
    fs::write(&path, b"HELLO").unwrap();
    assert!(matches!(store.read(&content.digest), Err(Error::DigestMismatch(_))));
    assert_eq!(store.read("sha256:xyz").unwrap_err().to_string(), "Invalid outcome digest: sha256:xyz");
    let missing = format!("sha256:{}", "0".repeat(64));
    assert!(matches!(store.read(&missing), Err(Error::MissingContent(_))));
}

#[test]
fn quotas_never_delete() {
    let home = tempfile::tempdir().unwrap();
    let limits = Limits { per_blob: 10, per_outcome: 15, total: 25, per_manifest: 1000 };
    let store = ContentStore::with_limits(home.path(), limits).unwrap();
    let mut budget = OutcomeBudget::new();
    let message = |n: u64| {
        format!("Outcome storage quota exceeded ({n} bytes). Review wb clean before removing retained results.")
    };
    assert_eq!(store.put_bytes(&[1u8; 11], "x/y", &mut budget).unwrap_err().to_string(), message(10));
    let first = store.put_bytes(&[1u8; 10], "x/y", &mut budget).unwrap();
    // The same content again is free for this outcome.
    store.put_bytes(&[1u8; 10], "x/y", &mut budget).unwrap();
    assert_eq!(store.put_bytes(&[2u8; 6], "x/y", &mut budget).unwrap_err().to_string(), message(15));
    let mut other = OutcomeBudget::new();
    store.put_bytes(&[3u8; 10], "x/y", &mut other).unwrap();
    let mut third = OutcomeBudget::new();
    let error = store.put_bytes(&[4u8; 10], "x/y", &mut third).unwrap_err();
    assert_eq!(error.to_string(), message(25));
    // Nothing was evicted.
    assert_eq!(store.read(&first.digest).unwrap(), vec![1u8; 10]);
    assert_eq!(store.total_bytes(), 20);
    // Reopening measures the same usage.
    assert_eq!(ContentStore::with_limits(home.path(), limits).unwrap().total_bytes(), 20);
    // A file over the blob limit.
    let big = home.path().join("big");
    fs::write(&big, [0u8; 11]).unwrap();
    assert_eq!(store.put_file(&big, "x/y", &mut third).unwrap_err().to_string(), message(10));
}

#[test]
fn a_run_id_names_its_newest_final_outcome_and_listing_creates_nothing() {
    use wb_outcomes::{Completeness, Outcome, OutcomeStore, ReceiptState, WorkspaceBindings, list_outcomes};

    let temp = tempfile::tempdir().unwrap();
    let home = temp.path().join("home");
    assert!(list_outcomes(&home).is_empty());
    assert!(!home.exists());
    let store = ContentStore::open(&home).unwrap();
    let outcomes = OutcomeStore::new(&store);
    let run = "wb_abcdefghij0123456789";
    assert_eq!(outcomes.resolve(run).unwrap_err().to_string(), format!("Run has no outcome: {run}"));

    let at = |run_id: &str, completeness, created_at: &str, turn_index| {
        let mut outcome = Outcome::new(run_id, completeness);
        outcome.created_at = created_at.to_owned();
        outcome.turn_index = turn_index;
        outcomes.commit(&outcome, ReceiptState::Present, &WorkspaceBindings::default()).unwrap();
        outcome.id
    };
    let older = at(run, Completeness::Complete, "2026-01-01T00:00:00.000Z", None);
    let newer = at(run, Completeness::Complete, "2026-01-02T00:00:00.000Z", None);
    let turn = at(run, Completeness::Partial, "2026-01-03T00:00:00.000Z", Some(1));
    let other = at("wb_zyxwvutsrq9876543210", Completeness::Complete, "2026-01-04T00:00:00.000Z", None);

    // The newest outcome without a turn index; an outcome id stands for itself.
    assert_eq!(outcomes.resolve(run).unwrap(), newer);
    assert_eq!(outcomes.resolve(&older).unwrap(), older);
    let unknown_run = "wb_00000000000000000000";
    assert_eq!(outcomes.resolve(unknown_run).unwrap_err().to_string(), format!("Run has no outcome: {unknown_run}"));
    assert_eq!(
        outcomes.resolve("nonsense").unwrap_err().to_string(),
        "Expected an outcome id (wbo_…) or a run id (wb_…): nonsense"
    );

    // Newest first, with each receipt's state.
    let listed = list_outcomes(&home);
    let rows: Vec<(&str, &str)> =
        listed.iter().map(|l| (l.outcome.id.as_str(), l.application_state.as_str())).collect();
    assert_eq!(rows, [(other.as_str(), "present"), (&turn, "present"), (&newer, "present"), (&older, "present")]);
}
