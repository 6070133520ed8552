//! Hostile outcomes end to end (issue 13), through a run with the fake runner: what the engine keeps under the
//! Workbench home is private, and a workspace that contains the home never captures the store.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::Value;
use wb_engine::{Ending, Options, RunMode, RunResult};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_testsupport::{self as support, TASK, World, opencode_world};

fn options(world: &World, script: &Path, home: &Path) -> Options {
    let mut inherited = world.inherited();
    inherited.insert("DATABASE_URL".to_owned(), "postgres://db.internal/ledger".to_owned());
    inherited.insert("OPENAI_API_KEY".to_owned(), "sk-openai-test-value".to_owned());
    inherited.insert("FAKE_RUNNER_SCRIPT".to_owned(), script.display().to_string());
    {
        let mut options = common::options(world, ".workbenches/oc-demo", TASK, inherited);
        options.request.settings.home = Some(home.to_path_buf());
        options
    }
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

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

/// Every directory a run creates under the Workbench home (runs, the run's outbox, blobs, outcomes, caches) is
/// 0700, whatever the umask lets through.
#[test]
fn directories_under_the_workbench_home_are_private() {
    let world = opencode_world();
    let home = world.home.join(".workbench");
    let script = support::outcome_stream(&world, "outcome", "reports/findings.html");
    let (result, events) = run(&options(&world, &script, &home));
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    let outcome = result.outcome_id.clone().unwrap();
    let run_dir = home.join("runs").join(&result.run_id);
    for dir in [
        home.clone(),
        home.join("runs"),
        run_dir.clone(),
        run_dir.join("outbox"),
        home.join("blobs"),
        home.join("outcomes"),
        home.join("outcomes").join(&outcome),
        home.join("cache/baselines"),
    ] {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
}

/// `WORKBENCH_HOME` inside the primary workspace: the outcome holds the runner's edits only, never the blobs,
/// outbox, caches or outcomes the engine wrote there.
#[test]
fn a_workspace_containing_the_workbench_home_never_captures_the_store() {
    let world = opencode_world();
    let home = world.work.join(".wbhome");
    let script = support::outcome_stream(&world, "outcome", "reports/findings.html");
    let (result, events) = run(&options(&world, &script, &home));
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    world.assert_edited();
    let outcome = result.outcome_id.clone().unwrap();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join("outcomes").join(&outcome).join("outcome.json")).unwrap(),
    )
    .unwrap();
    let paths: Vec<&str> =
        manifest["changesets"][0]["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(!paths.is_empty());
    assert!(paths.iter().all(|p| !p.starts_with(".wbhome")), "{paths:?}");
}
