//! `wb-lsp outcome ID [--json] [--apply [--workspace DIR]] [--export DIR]` through the built binary, on the
//! outcome of a real `wb-lsp run` with the engine's fake OpenCode runner (one file written, one edited, one
//! deleted, an outbox artifact and declaration): inspect by outcome id and by run id, export layout, and
//! all-or-nothing apply onto a fresh copy of the workspace (conflict rejection, success counts, receipts).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wb_testsupport::{self as support, Output, TASK, World, finish, opencode_world};

fn wb(world: &World, args: &[&str], env: &[(&str, &str)]) -> Output {
    finish(world.command(env!("CARGO_BIN_EXE_wb-lsp")).args(args).envs(env.iter().copied()))
}

/// Runs the outcome stream through `wb-lsp run --json`; returns (run id, outcome id).
fn run_with_outcome(world: &World) -> (String, String) {
    run_with_outcome_and(world, &[])
}

/// [`run_with_outcome`] with more environment variables (`env` wins).
fn run_with_outcome_and(world: &World, env: &[(&str, &str)]) -> (String, String) {
    let script = support::outcome_stream(world, "outcome", "reports/findings.html");
    let work = world.work.display().to_string();
    let mut variables = vec![
        ("DATABASE_URL", "postgres://db.internal/ledger"),
        ("OPENAI_API_KEY", "sk-openai-test-value"),
        ("FAKE_RUNNER_SCRIPT", script.to_str().unwrap()),
    ];
    variables.extend_from_slice(env);
    let output = wb(world, &["run", ".workbenches/oc-demo", "--dir", &work, "--task", TASK, "--json"], &variables);
    assert_eq!(output.code, 0, "{output:?}");
    let events: Vec<Value> = output.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    support::check_events(&events, "opencode");
    let types = support::types(&events);
    assert_eq!(types[types.len() - 2..], ["outcome.available", "run.completed"]);
    world.assert_edited();
    let available = &events[events.len() - 2]["data"];
    (events[0]["run_id"].as_str().unwrap().to_owned(), available["outcome_id"].as_str().unwrap().to_owned())
}

fn outcome_dir(world: &World, id: &str) -> PathBuf {
    world.home.join(".workbench/outcomes").join(id)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

/// The workspace as it was before the run (what the success stream edits).
fn fresh_copy(world: &World, name: &str) -> PathBuf {
    let dir = world.root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "# Old title\n\nThe ledger service.\n").unwrap();
    std::fs::write(dir.join("obsolete.txt"), "remove me\n").unwrap();
    dir
}

#[test]
fn inspect_by_outcome_id_and_run_id() {
    let world = opencode_world();
    let (run_id, id) = run_with_outcome(&world);
    let receipt_before = std::fs::read(outcome_dir(&world, &id).join("application.json")).unwrap();

    let output = wb(&world, &["outcome", &id, "--json"], &[]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stderr, "");
    let value: Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(value["outcome"], read_json(&outcome_dir(&world, &id).join("outcome.json")));
    support::assert_outcomes_schema("outcome.schema.json", &value["outcome"]);
    support::assert_outcomes_schema("application.schema.json", &value["receipt"]);
    assert_eq!(value["receipt"]["state"], "present");
    assert_eq!(value["outcome"]["run_id"], json!(run_id));

    // A run id resolves to the run's final outcome.
    let output = wb(&world, &["outcome", &run_id], &[]);
    assert_eq!(output.code, 0, "{output:?}");
    let expected = format!(
        "Outcome {id} (run {run_id}, complete, present)
Summary: Prepared a findings report
Changeset primary (primary workspace): 1 added, 1 modified, 1 deleted
  M README.md
  A notes/hello.txt
  D obsolete.txt
Artifacts: 1
  Findings.html (reports/findings.html): text/html, 18 bytes
Links: 1
  Implementation PR [pull_request]: https://github.com/example/project/pull/42
"
    );
    assert_eq!(output.stdout, expected);
    let by_run = wb(&world, &["outcome", &run_id, "--json"], &[]);
    assert_eq!(serde_json::from_str::<Value>(&by_run.stdout).unwrap()["outcome"]["id"], json!(id));

    // Inspecting never changes the receipt.
    assert_eq!(std::fs::read(outcome_dir(&world, &id).join("application.json")).unwrap(), receipt_before);

    // Unknown ids.
    let missing = "wbo_00000000000000000000000000000000";
    let output = wb(&world, &["outcome", missing], &[]);
    assert_eq!((output.code, output.stdout.as_str()), (1, ""));
    assert_eq!(output.stderr, format!("error: Outcome not found: {missing}\n"));
    let output = wb(&world, &["outcome", "wb_00000000000000000000000000"], &[]);
    assert_eq!(output.code, 1);
    assert_eq!(output.stderr, "error: Run has no outcome: wb_00000000000000000000000000\n");
    let output = wb(&world, &["outcome", "nonsense"], &[]);
    assert_eq!(output.code, 1);
    assert_eq!(output.stderr, "error: Expected an outcome id (wbo_…) or a run id (wb_…): nonsense\n");

    // A store the file system cannot open is an I/O failure: exit 2, as for every command, not a refusal.
    let blocked = world.root.join("home-is-a-file");
    std::fs::write(&blocked, "").unwrap();
    let output = wb(&world, &["outcome", &id], &[("WORKBENCH_HOME", blocked.to_str().unwrap())]);
    assert_eq!((output.code, output.stdout.as_str()), (2, ""), "{output:?}");
    assert!(output.stderr.starts_with("error: ") && output.stderr.contains(blocked.to_str().unwrap()), "{output:?}");
}

/// An empty `WORKBENCH_HOME` is unset for the run that stores the outcome and for the lookup alike, so both use
/// `~/.workbench` (the engine used to take the empty value for a directory relative to where it ran, and the
/// lookup missed the run's outcome).
#[test]
fn an_empty_workbench_home_is_one_home_for_the_run_and_the_lookup() {
    let world = opencode_world();
    let (run_id, id) = run_with_outcome_and(&world, &[("WORKBENCH_HOME", "")]);
    assert!(outcome_dir(&world, &id).join("outcome.json").is_file());
    let output = wb(&world, &["outcome", &run_id, "--json"], &[("WORKBENCH_HOME", "")]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(serde_json::from_str::<Value>(&output.stdout).unwrap()["outcome"]["id"], json!(id));
}

#[test]
fn export_writes_the_layout_once() {
    let world = opencode_world();
    let (_, id) = run_with_outcome(&world);
    let receipt_before = std::fs::read(outcome_dir(&world, &id).join("application.json")).unwrap();
    let dest = world.root.join("exported");
    let output = wb(&world, &["outcome", &id, "--export", dest.to_str().unwrap()], &[]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stdout, format!("Exported outcome {id} to {}\n", dest.display()));
    assert_eq!(
        std::fs::read(dest.join("outcome.json")).unwrap(),
        std::fs::read(outcome_dir(&world, &id).join("outcome.json")).unwrap()
    );
    let files = dest.join("changesets/primary/files");
    assert_eq!(std::fs::read_to_string(files.join("README.md")).unwrap(), "# New title\n\nThe ledger service.\n");
    assert_eq!(std::fs::read_to_string(files.join("notes/hello.txt")).unwrap(), "hello from the fake runner\n");
    assert!(!files.join("obsolete.txt").exists(), "deletions appear only in the manifest");
    let diff = std::fs::read_to_string(dest.join("changesets/primary/changes.diff")).unwrap();
    assert!(diff.contains("+# New title"), "{diff}");
    let artifact = dest.join("artifacts/reports/findings.html");
    assert_eq!(std::fs::read_to_string(&artifact).unwrap(), "<h1>Findings</h1>\n");
    assert_eq!(mode(&artifact), 0o600);
    let mut top: Vec<String> =
        std::fs::read_dir(&dest).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    top.sort();
    assert_eq!(top, ["artifacts", "changesets", "outcome.json"]);

    // The destination must not exist; nothing is left beside it.
    let output = wb(&world, &["outcome", &id, "--export", dest.to_str().unwrap()], &[]);
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(output.stderr, format!("error: Outcome export destination already exists: {}\n", dest.display()));
    let leftovers: Vec<String> = std::fs::read_dir(&world.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".workbench-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // --json reports the destination.
    let json_dest = world.root.join("exported-json");
    let output = wb(&world, &["outcome", &id, "--export", json_dest.to_str().unwrap(), "--json"], &[]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&output.stdout).unwrap(),
        json!({"outcome_id": id, "export": json_dest.display().to_string()})
    );
    assert_eq!(std::fs::read(outcome_dir(&world, &id).join("application.json")).unwrap(), receipt_before);
}

#[test]
fn apply_is_all_or_nothing_onto_a_fresh_copy() {
    let world = opencode_world();
    let (_, id) = run_with_outcome(&world);
    let dir = outcome_dir(&world, &id);

    // A local run's changes are already in its workspace.
    let output = wb(&world, &["outcome", &id, "--apply"], &[]);
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(output.stderr, "error: Outcome changes are already present in the workspace\n");

    // Treat it as an isolated result not yet accepted (the receipt an E2B or Daytona run records).
    let pending = json!({"version": 1, "outcome_id": id, "state": "pending", "updated_at": "2026-01-01T00:00:00Z"});
    support::assert_outcomes_schema("application.schema.json", &pending);
    std::fs::write(dir.join("application.json"), pending.to_string()).unwrap();

    // A conflicting copy: the readme was edited since; nothing at all is written.
    let copy = fresh_copy(&world, "copy");
    std::fs::write(copy.join("README.md"), "# Someone else's title\n").unwrap();
    let output = wb(&world, &["outcome", &id, "--apply", "--workspace", copy.to_str().unwrap()], &[]);
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(output.stderr, "error: Outcome conflicts with current workspace content: README.md\n");
    assert!(copy.join("obsolete.txt").exists());
    assert!(!copy.join("notes").exists());
    assert_eq!(read_json(&dir.join("application.json"))["state"], "pending");

    // The original content: every entry is applied.
    std::fs::write(copy.join("README.md"), "# Old title\n\nThe ledger service.\n").unwrap();
    let output = wb(&world, &["outcome", &id, "--apply", "--workspace", copy.to_str().unwrap()], &[]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stdout, format!("Applied outcome {id}: 3 applied, 0 unchanged\n"));
    assert_eq!(std::fs::read_to_string(copy.join("README.md")).unwrap(), "# New title\n\nThe ledger service.\n");
    assert_eq!(std::fs::read_to_string(copy.join("notes/hello.txt")).unwrap(), "hello from the fake runner\n");
    assert!(!copy.join("obsolete.txt").exists());
    let receipt = read_json(&dir.join("application.json"));
    support::assert_outcomes_schema("application.schema.json", &receipt);
    assert_eq!(receipt["state"], "applied");
    assert!(receipt["applied_at"].is_string());

    // A retry finds everything in its after state.
    let output = wb(&world, &["outcome", &id, "--apply", "--workspace", copy.to_str().unwrap(), "--json"], &[]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&output.stdout).unwrap(),
        json!({"outcome_id": id, "applied": 0, "unchanged": 3, "application_state": "applied"})
    );
    // --workspace only goes with --apply.
    let output = wb(&world, &["outcome", &id, "--workspace", copy.to_str().unwrap()], &[]);
    assert_eq!(output.code, 2, "{output:?}");
}

#[test]
fn list_outcomes_and_recover_without_an_interrupted_application() {
    let world = opencode_world();
    let empty = wb(&world, &["outcomes"], &[]);
    assert_eq!((empty.code, empty.stdout.as_str()), (0, "No outcomes\n"), "{empty:?}");
    let (run_id, id) = run_with_outcome(&world);
    let listed = wb(&world, &["outcomes", "--json"], &[]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let value: Value = serde_json::from_str(&listed.stdout).unwrap();
    let rows = value.as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], json!(id));
    assert_eq!(rows[0]["run_id"], json!(run_id));
    assert_eq!(rows[0]["application_state"], "present");
    let human = wb(&world, &["outcomes"], &[]);
    assert!(human.stdout.starts_with(&format!("{id}\t{run_id}\t")), "{human:?}");
    let receipt_before = std::fs::read(outcome_dir(&world, &id).join("application.json")).unwrap();
    let recovered = wb(&world, &["outcome", &id, "--recover"], &[]);
    assert_eq!(recovered.code, 0, "{recovered:?}");
    assert_eq!(
        recovered.stdout,
        format!("Recovered outcome {id}: 0 interrupted application(s) finished or rolled back\n")
    );
    assert_eq!(std::fs::read(outcome_dir(&world, &id).join("application.json")).unwrap(), receipt_before);
    let conflicting = wb(&world, &["outcome", &id, "--recover", "--apply"], &[]);
    assert_eq!(conflicting.code, 2, "{conflicting:?}");
}
