//! The final outcome of real runs with the fake runners (outcomes contract, engine facts (f)): the baseline
//! before launch, the changeset and the outbox after the runner stops, the committed manifest and `present`
//! receipt (validated against the official schemas), and `outcome.available` / `outcome.failed` before the
//! terminal event.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::{Value, json};
use wb_engine::{Ending, Options, RunMode, RunResult};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_testsupport::{self as support, OPENCODE, TASK, World, opencode_world};

fn options(world: &World, script: &Path) -> Options {
    let mut inherited = world.inherited();
    inherited.insert("DATABASE_URL".to_owned(), "postgres://db.internal/ledger".to_owned());
    inherited.insert("OPENAI_API_KEY".to_owned(), "sk-openai-test-value".to_owned());
    inherited.insert("FAKE_RUNNER_SCRIPT".to_owned(), script.display().to_string());
    common::options(world, ".workbenches/oc-demo", TASK, inherited)
}

fn run(options: &Options) -> (RunResult, Vec<Value>) {
    let mut events = Vec::new();
    let result = wb_engine::run(
        &OsFileSystem,
        options,
        &RunMode::default(),
        ModelCatalog::embedded(),
        Arc::new(AtomicBool::new(false)),
        &mut |e| {
            events.push(serde_json::to_value(e).unwrap());
        },
    )
    .unwrap();
    (result, events)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", wb_outcomes::sha256_hex(bytes))
}

#[test]
fn a_run_commits_its_outcome_before_the_terminal_event() {
    let world = opencode_world();
    assert!(OPENCODE.contains("oc-demo"));
    let script = support::outcome_stream(&world, "outcome", "reports/findings.html");
    let (result, events) = run(&options(&world, &script));
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    support::check_events(&events, "opencode");
    world.assert_edited();
    let types = support::types(&events);
    let n = types.len();
    assert_eq!(types[n - 2..], ["outcome.available", "run.completed"]);
    assert!(!types.contains(&"outcome.failed".to_owned()));
    let available = &events[n - 2]["data"];
    let id = available["outcome_id"].as_str().unwrap().to_owned();
    assert_eq!(result.outcome_id.as_deref(), Some(id.as_str()));
    assert_eq!(
        *available,
        json!({"outcome_id": id, "completeness": "complete", "application_state": "present", "changesets": 1,
               "artifacts": 1, "links": 1, "warnings": 0, "summary": "Prepared a findings report"})
    );

    // The committed manifest and receipt, on disk, with private modes.
    let home = world.home.join(".workbench");
    let dir = home.join("outcomes").join(&id);
    let manifest = read_json(&dir.join("outcome.json"));
    let receipt = read_json(&dir.join("application.json"));
    support::assert_outcomes_schema("outcome.schema.json", &manifest);
    support::assert_outcomes_schema("application.schema.json", &receipt);
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(dir.join("outcome.json")).unwrap().permissions().mode() & 0o777, 0o600);
    }
    assert_eq!(receipt["state"], "present");
    assert_eq!(receipt["outcome_id"], json!(id));
    assert!(receipt.get("applied_at").is_none());
    assert_eq!(manifest["run_id"], json!(result.run_id));
    assert_eq!(manifest["completeness"], "complete");
    assert_eq!(manifest["summary"], "Prepared a findings report");

    let changesets = manifest["changesets"].as_array().unwrap();
    assert_eq!(changesets.len(), 1);
    let changeset = &changesets[0];
    assert_eq!(changeset["id"], "primary");
    assert_eq!(changeset["workspace"], json!({"kind": "primary"}));
    assert!(changeset["base"]["snapshot_digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(changeset["stats"], json!({"additions": 1, "modifications": 1, "deletions": 1, "binary_files": 0}));
    let old_readme = b"# Old title\n\nThe ledger service.\n";
    let new_readme = b"# New title\n\nThe ledger service.\n";
    let hello = b"hello from the fake runner\n";
    let entries = changeset["entries"].as_array().unwrap();
    let summary: Vec<(&str, &str)> =
        entries.iter().map(|e| (e["operation"].as_str().unwrap(), e["path"].as_str().unwrap())).collect();
    assert_eq!(summary, [("modify", "README.md"), ("add", "notes/hello.txt"), ("delete", "obsolete.txt")]);
    assert_eq!(entries[0]["before"]["digest"], json!(digest(old_readme)));
    assert_eq!(entries[0]["before"]["size_bytes"], json!(old_readme.len()));
    assert_eq!(entries[0]["after"]["content"]["digest"], json!(digest(new_readme)));
    assert_eq!(entries[1]["after"]["kind"], "file");
    assert_eq!(entries[1]["after"]["content"]["digest"], json!(digest(hello)));
    assert!(entries[1].get("before").is_none());
    assert_eq!(entries[2]["before"]["digest"], json!(digest(b"remove me\n")));
    assert!(entries[2].get("after").is_none());
    let review = changeset["review"]["digest"].as_str().unwrap();
    let store = wb_outcomes::ContentStore::open(&home).unwrap();
    let diff = String::from_utf8(store.read(review).unwrap()).unwrap();
    assert!(diff.contains("-# Old title") && diff.contains("+# New title"), "{diff}");
    assert_eq!(store.read(&digest(hello)).unwrap(), hello);

    // The outbox: one artifact with the declared metadata, one link; the declaration is not an artifact.
    let artifacts = manifest["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.len(), 1, "{artifacts:#?}");
    assert_eq!(artifacts[0]["path"], "reports/findings.html");
    assert_eq!(artifacts[0]["name"], "Findings.html");
    assert_eq!(artifacts[0]["description"], "The collected findings");
    assert_eq!(
        artifacts[0]["content"],
        json!({"digest": digest(b"<h1>Findings</h1>\n"), "media_type": "text/html", "size_bytes": 18})
    );
    let links = manifest["links"].as_array().unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0]["label"], "Implementation PR");
    assert_eq!(links[0]["uri"], "https://github.com/example/project/pull/42");
    assert_eq!(links[0]["kind"], "pull_request");
    assert_eq!(manifest["warnings"], json!([]));
    let outbox = home.join("runs").join(&result.run_id).join("outbox");
    support::assert_outcomes_schema("outbox.schema.json", &read_json(&outbox.join("outcome.json")));
}

#[test]
fn a_failed_collection_emits_outcome_failed_never_an_empty_outcome() {
    let world = opencode_world();
    let script = support::outcome_stream(&world, "missing", "reports/missing.html");
    let (result, events) = run(&options(&world, &script));
    // The run itself succeeded; its terminal status stays the authority.
    assert_eq!(result.ending, Ending::Completed);
    support::check_events(&events, "opencode");
    let types = support::types(&events);
    let n = types.len();
    assert_eq!(types[n - 2..], ["outcome.failed", "run.completed"]);
    assert!(!types.contains(&"outcome.available".to_owned()));
    let message = events[n - 2]["data"]["message"].as_str().unwrap();
    assert!(message.starts_with("Outcome collection failed: "), "{message}");
    assert!(message.contains("reports/missing.html"), "{message}");
    assert_eq!(result.outcome_id, None);
    let outcomes = world.home.join(".workbench/outcomes");
    let committed = std::fs::read_dir(&outcomes).map(|d| d.count()).unwrap_or(0);
    assert_eq!(committed, 0, "nothing is committed for a failed collection");
}

#[test]
fn a_failed_run_still_returns_its_outcome_and_a_run_without_changes_an_empty_one() {
    let world = opencode_world();
    let (result, events) = run(&options(&world, &support::stream("opencode", "failure")));
    assert!(matches!(result.ending, Ending::Failed(_)), "{:?}", result.ending);
    support::check_events(&events, "opencode");
    let types = support::types(&events);
    assert_eq!(types[types.len() - 2..], ["outcome.available", "run.failed"]);
    let available = &events[events.len() - 2]["data"];
    assert_eq!(available["completeness"], "complete");
    assert_eq!(available["application_state"], "present");

    // No stream: the runner changes nothing and writes nothing: an outcome with no changesets.
    let world = opencode_world();
    let mut options = options(&world, Path::new("/nonexistent"));
    options.context.inherited.remove("FAKE_RUNNER_SCRIPT");
    let (result, events) = run(&options);
    assert_eq!(result.ending, Ending::Completed);
    let available = &events[events.len() - 2];
    assert_eq!(available["type"], "outcome.available");
    assert_eq!(available["data"]["changesets"], 0);
    assert_eq!(available["data"]["artifacts"], 0);
    assert!(available["data"].get("summary").is_none());
    let manifest = read_json(
        &world
            .home
            .join(".workbench/outcomes")
            .join(available["data"]["outcome_id"].as_str().unwrap())
            .join("outcome.json"),
    );
    support::assert_outcomes_schema("outcome.schema.json", &manifest);
}
