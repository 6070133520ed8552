#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `wb-lsp clean [--older-than AGE] [--apply] [--json]` through the built binary: the preview changes nothing,
//! `--apply` removes exactly the old runs and outcomes, an outcome with an interrupted application is kept and
//! reported, and the JSON shape.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use wb_outcomes::{Completeness, ContentStore, Outcome, OutcomeStore, ReceiptState, WorkspaceBindings};

const OLD: &str = "2020-01-02T03:04:05.000Z";
const RUN_ID: &str = "wb_cleantest0123456789abcd";

struct Home {
    _temp: tempfile::TempDir,
    home: PathBuf,
    old: String,
    new: String,
    interrupted: String,
    old_run: PathBuf,
}

fn commit(store: &ContentStore, created_at: &str) -> String {
    let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
    outcome.created_at = created_at.to_owned();
    OutcomeStore::new(store).commit(&outcome, ReceiptState::Present, &WorkspaceBindings::default()).unwrap();
    outcome.id
}

fn home() -> Home {
    let temp = tempfile::tempdir().unwrap();
    let home = temp.path().join("workbench");
    let store = ContentStore::open(&home).unwrap();
    let old = commit(&store, OLD);
    let new = commit(&store, &wb_outcomes::now_utc());
    let interrupted = commit(&store, OLD);
    let txn = home.join("outcomes").join(&interrupted).join("transactions/abcd1234");
    fs::create_dir_all(&txn).unwrap();
    fs::write(txn.join("recovery.json"), "{}").unwrap();
    let old_run = home.join("runs/wb_oldrun0123456789abcdefgh");
    fs::create_dir_all(old_run.join("outbox")).unwrap();
    fs::write(old_run.join("outbox/report.md"), "report\n").unwrap();
    let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_577_934_245);
    for path in [old_run.join("outbox/report.md"), old_run.join("outbox"), old_run.clone()] {
        fs::File::open(&path).unwrap().set_modified(long_ago).unwrap();
    }
    fs::create_dir_all(home.join("runs/wb_newrun0123456789abcdefgh")).unwrap();
    Home { _temp: temp, home, old, new, interrupted, old_run }
}

fn clean(home: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_wb-lsp"))
        .arg("clean")
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("WORKBENCH_HOME", home)
        // What dead processes left (containers, stage directories) is looked for in this test's own places.
        .env("TMPDIR", home)
        .env("DOCKER_HOST", format!("unix://{}/no-engine.sock", home.display()))
        .output()
        .unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (output.status.code().unwrap_or(-1), text(output.stdout), text(output.stderr))
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn the_preview_changes_nothing_and_apply_removes_exactly_the_old() {
    let h = home();
    let outcomes_before = names(&h.home.join("outcomes"));
    let (code, stdout, stderr) = clean(&h.home, &[]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(names(&h.home.join("outcomes")), outcomes_before, "a preview removes nothing");
    assert!(h.old_run.exists());
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "Would remove:");
    assert!(lines[1].starts_with("  run\twb_oldrun0123456789abcdefgh\tmodified 2020-01-02T03:04:05Z\t"), "{stdout}");
    assert!(lines[2].starts_with(&format!("  outcome\t{}\tcreated {OLD}\tpresent\t", h.old)), "{stdout}");
    assert_eq!(lines[3], format!("Kept {}: interrupted application (run wb-lsp outcome ID --recover)", h.interrupted));
    assert!(
        lines[4].starts_with("Run wb-lsp clean --apply to remove 1 run(s), 1 outcome(s) and 0 blob(s) ("),
        "{stdout}"
    );
    assert_eq!(lines.len(), 5, "{stdout}");

    let (code, stdout, stderr) = clean(&h.home, &["--apply"]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    assert!(stdout.starts_with("Removed:\n"), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert_eq!(lines[3], format!("Kept {}: interrupted application (run wb-lsp outcome ID --recover)", h.interrupted));
    assert!(lines[4].starts_with("Removed 1 run(s), 1 outcome(s) and 0 blob(s) ("), "{stdout}");
    let mut expected = vec![h.new.clone(), h.interrupted.clone()];
    expected.sort();
    assert_eq!(names(&h.home.join("outcomes")), expected);
    assert_eq!(names(&h.home.join("runs")), ["wb_newrun0123456789abcdefgh"]);
    assert!(h.home.join("outcomes").join(&h.interrupted).join("transactions/abcd1234/recovery.json").exists());

    // Nothing left to remove; the interrupted one is still reported.
    let (code, stdout, _) = clean(&h.home, &["--apply"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        format!(
            "Nothing older than 30d to remove\nKept {}: interrupted application (run wb-lsp outcome ID --recover)\nRemoved 0 run(s), 0 outcome(s) and 0 blob(s) (0 B)\n",
            h.interrupted
        )
    );
}

#[test]
fn json_output_has_one_shape_for_the_preview_and_the_removal() {
    let h = home();
    let (code, stdout, _) = clean(&h.home, &["--json", "--older-than", "7d"]);
    assert_eq!(code, 0);
    let preview: Value = serde_json::from_str(&stdout).unwrap();
    let run_bytes = preview["runs"][0]["bytes"].as_u64().unwrap();
    let outcome_bytes = preview["outcomes"][0]["bytes"].as_u64().unwrap();
    assert_eq!(
        preview,
        json!({
            "older_than": "7d",
            "applied": false,
            "runs": [{"id": "wb_oldrun0123456789abcdefgh", "modified_at": "2020-01-02T03:04:05Z", "bytes": run_bytes}],
            "outcomes": [{
                "id": h.old, "run_id": RUN_ID, "created_at": OLD, "application_state": "present", "bytes": outcome_bytes,
            }],
            "blobs": {"count": 0, "bytes": 0},
            "kept": [{"id": h.interrupted, "reason": "interrupted application (run wb-lsp outcome ID --recover)"}],
            "bytes": run_bytes + outcome_bytes,
            // No service's key is set here: no sandbox is looked for.
            "sandboxes": [],
            // No sandbox is kept for a recovery.
            "recoveries": [],
            // No process left a container or a stage directory.
            "containers": [],
            "stage_directories": [],
        })
    );
    assert_eq!(run_bytes, 7);
    let (code, stdout, _) = clean(&h.home, &["--json", "--older-than", "7d", "--apply"]);
    assert_eq!(code, 0);
    let mut removed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(removed["applied"], true);
    removed["applied"] = json!(false);
    assert_eq!(removed, preview, "the removal reports what the preview showed");
    assert_eq!(names(&h.home.join("outcomes")).len(), 2);
}

#[test]
fn an_invalid_age_is_a_usage_error() {
    let h = home();
    let (code, stdout, stderr) = clean(&h.home, &["--older-than", "30", "--apply"]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "error: invalid value '30' for --older-than: a bare number is ambiguous for what clean removes; write 30d \
         for days or 30s for seconds (see docs/runs.md#durations)\n"
    );
    // Outside the grammar: the flag, the value and where the grammar is documented.
    for (bad, why) in [("soon", "expected a duration such as"), ("2mo", "months and years"), ("-1d", "negative")] {
        let (code, stdout, stderr) = clean(&h.home, &[&format!("--older-than={bad}"), "--apply"]);
        assert_eq!((code, stdout.as_str()), (2, ""), "{bad}");
        assert!(stderr.starts_with(&format!("error: invalid value '{bad}' for --older-than: ")), "{stderr}");
        assert!(stderr.contains(why) && stderr.ends_with("(see docs/runs.md#durations)\n"), "{stderr}");
    }
    assert_eq!(names(&h.home.join("outcomes")).len(), 3);
}

/// Issue 41: `--older-than` takes the one duration grammar of every duration flag, `1h30m` and `2w` included.
#[test]
fn older_than_takes_the_one_duration_grammar() {
    let h = home();
    for age in ["1h30m", "2w", "1w 2d", "PT12H"] {
        let (code, stdout, stderr) = clean(&h.home, &["--json", "--older-than", age]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{age}: {stdout}");
        let preview: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(preview["older_than"], age);
        assert_eq!(preview["outcomes"].as_array().unwrap().len(), 1, "{age}: the old outcome, not the new one");
    }
    let (code, stdout, _) = clean(&h.home, &["--older-than", "1h30m", "--apply"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(!h.old_run.exists(), "the old run is removed: {stdout}");
    assert_eq!(names(&h.home.join("outcomes")).len(), 2, "the new and the interrupted outcomes stay");
}
