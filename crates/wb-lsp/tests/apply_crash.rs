#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Crash safety of `wb-lsp outcome ID --apply` with real `kill -9`s (issue 7): a separate `wb-lsp` process
//! is killed with SIGKILL
//!
//! - at every file-system step of an apply, one by one (the hidden hook `WB_LSP_CRASH_AT_STEP=N` makes the
//!   process kill itself at its Nth step: lease (a `flock(2)` the kernel releases on the kill), backups,
//!   journal, temp files, renames, removals, receipt, cleanup), then also at every step of the recovery
//!   that follows such a crash;
//! - after random short delays, during the apply of a large outcome (243 entries, three of 2 MiB).
//!
//! After every kill: every target path holds exactly its old or its new state (bytes, mode, symlink
//! target; never a temp file or partial content), the receipt is `pending`, or `applied` only with every
//! path new. Then recovery, alternately by the next `--apply` and by `--recover`: afterwards either every
//! path is new and the receipt `applied` (with `applied_at`), or every path is old and the receipt
//! byte-for-byte unchanged; the workspaces hold no temp file or created directory beyond that state, the
//! outcome directory no journal, backup, lease or temp file; and a following `--apply` completes.
//!
//! The outcome has two changesets (the primary workspace and a named `docs` workspace) with adds,
//! modifies (content, mode only, content and mode, symlink target, file to symlink), deletes (a file, a
//! symlink), new nested directories and a 1 MiB file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use wb_outcomes::{
    Changeset, Completeness, ContentStore, Outcome, OutcomeBudget, OutcomeStore, ReceiptState, Snapshot,
    WorkspaceBindings, WorkspaceRef,
};
use wb_testsupport::{chmod, outcomes_validator, write};

const RUN_ID: &str = "wb_crashtest01234567890";
const SIGKILL: i32 = 9;

/// One path of a workspace as the test sees it.
#[derive(Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File { digest: String, size: usize, mode: u32 },
    Link(PathBuf),
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Dir => write!(f, "dir"),
            Node::File { digest, size, mode } => write!(f, "file {size} bytes {mode:o} {}", &digest[..12]),
            Node::Link(target) => write!(f, "symlink -> {}", target.display()),
        }
    }
}

type Tree = BTreeMap<String, Node>;

fn tree(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                out.insert(rel, Node::Link(fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                out.insert(rel, Node::Dir);
                walk(root, &path, out);
            } else {
                let bytes = fs::read(&path).unwrap();
                let mode = meta.permissions().mode() & 0o777;
                out.insert(rel, Node::File { digest: wb_outcomes::sha256_hex(&bytes), size: bytes.len(), mode });
            }
        }
    }
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

/// Deterministic pseudo-random bytes (xorshift).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// A scratch directory, on tmpfs (`/dev/shm`) when it has room: a kill stops the process between the same
/// system calls on any file system, and tmpfs makes the many `fsync`s of the applies cheap.
fn scratch() -> TempDir {
    let roomy = Command::new("df")
        .args(["-Pk", "/dev/shm"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|text| text.lines().nth(1)?.split_whitespace().nth(3)?.parse::<u64>().ok())
        .is_some_and(|kib| kib > 512 * 1024);
    if roomy && let Ok(dir) = tempfile::tempdir_in("/dev/shm") {
        return dir;
    }
    tempfile::tempdir().unwrap()
}

/// A workspace of the outcome: its name (`None`: primary), how it looks before and what the run changed.
struct Spec {
    name: Option<&'static str>,
    setup: fn(&Path),
    change: fn(&Path),
}

fn primary_setup(root: &Path) {
    write(root, "keep.txt", "untouched\n");
    write(root, "a.txt", "a\n");
    write(root, "mode.sh", "#!/bin/sh\necho mode only\n");
    write(root, "both.sh", "#!/bin/sh\necho old\n");
    write(root, "gone.txt", "gone\n");
    write(root, "sub/b.txt", "b\n");
    write(root, "sub/stays.txt", "stays\n");
    write(root, "swap", "a file that becomes a symlink\n");
    write(root, "big.bin", noise(1, 1 << 20));
    symlink("a.txt", root.join("relink")).unwrap();
    symlink("keep.txt", root.join("unlink")).unwrap();
}

fn primary_change(root: &Path) {
    write(root, "a.txt", "A, edited\n");
    chmod(root, "mode.sh", 0o755);
    write(root, "both.sh", "#!/bin/sh\necho new\n");
    chmod(root, "both.sh", 0o700);
    fs::remove_file(root.join("gone.txt")).unwrap();
    write(root, "sub/b.txt", "B\n");
    fs::remove_file(root.join("swap")).unwrap();
    symlink("sub/b.txt", root.join("swap")).unwrap();
    write(root, "big.bin", noise(2, (1 << 20) + 17));
    fs::remove_file(root.join("relink")).unwrap();
    symlink("keep.txt", root.join("relink")).unwrap();
    fs::remove_file(root.join("unlink")).unwrap();
    symlink("a.txt", root.join("link")).unwrap();
    write(root, "new/deep/c.sh", "#!/bin/sh\necho added\n");
    chmod(root, "new/deep/c.sh", 0o755);
}

fn docs_setup(root: &Path) {
    write(root, "guide.md", "# Guide\n");
    write(root, "old.md", "# Old\n");
}

fn docs_change(root: &Path) {
    write(root, "guide.md", "# Guide\n\nRewritten.\n");
    fs::remove_file(root.join("old.md")).unwrap();
    write(root, "img/logo.bin", noise(3, 4096));
}

/// A large outcome for the random-timing kills: many small files modified, added and deleted, and a few
/// big ones.
fn large_setup(root: &Path) {
    for i in 0..120 {
        write(root, &format!("src/m{:02}/f{i:03}.txt", i % 12), format!("old {i}\n"));
    }
    for i in 0..3 {
        write(root, &format!("blobs/big{i}.bin"), noise(10 + i, 2 << 20));
    }
}

fn large_change(root: &Path) {
    for i in 0..120 {
        let path = format!("src/m{:02}/f{i:03}.txt", i % 12);
        match i % 3 {
            0 => write(root, &path, format!("new {i}\n")),
            1 => fs::remove_file(root.join(&path)).unwrap(),
            _ => chmod(root, &path, 0o600),
        }
        write(root, &format!("added/a{:02}/n{i:03}.txt", i % 10), format!("added {i}\n"));
    }
    for i in 0..3 {
        write(root, &format!("blobs/big{i}.bin"), noise(20 + i, (2 << 20) + 5));
    }
}

struct Workspace {
    /// The label prefix of the workspace's paths in messages.
    label: String,
    live: PathBuf,
    pristine: PathBuf,
    /// The paths of the changeset's entries.
    targets: BTreeSet<String>,
    old: Tree,
    new: Tree,
}

struct World {
    _dir: TempDir,
    home: PathBuf,
    outcome_id: String,
    /// application.json before any apply.
    receipt: Vec<u8>,
    workspaces: Vec<Workspace>,
    entries: usize,
}

/// How the state after a crash must be resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Settled {
    Old,
    New,
}

/// What a killed process left.
#[derive(Debug)]
struct Crashed {
    receipt_applied: bool,
    all_new: bool,
    all_old: bool,
}

impl World {
    /// Commits a pending outcome with one changeset per spec (the run's edits, captured the way the engine
    /// does), bound to live copies of the workspaces' old state; records the old and the new trees.
    fn new(specs: &[Spec]) -> World {
        let dir = scratch();
        let home = dir.path().join("home");
        let store = ContentStore::open(&home).unwrap();
        let mut outcome = Outcome::new(RUN_ID, Completeness::Complete);
        let mut bindings = WorkspaceBindings::default();
        let mut workspaces = Vec::new();
        let mut runs = Vec::new();
        for spec in specs {
            let key = spec.name.unwrap_or("primary");
            let run = dir.path().join(format!("run-{key}"));
            let pristine = dir.path().join(format!("pristine-{key}"));
            let live = dir.path().join(format!("ws-{key}"));
            for root in [&run, &pristine] {
                fs::create_dir_all(root).unwrap();
                (spec.setup)(root);
            }
            let before = Snapshot::baseline(&run, &store).unwrap();
            (spec.change)(&run);
            let after = Snapshot::capture(&run).unwrap();
            let (id, workspace) = match spec.name {
                None => ("primary_changes".to_owned(), WorkspaceRef::Primary),
                Some(name) => (format!("{name}_changes"), WorkspaceRef::Named { name: name.to_owned() }),
            };
            let changeset =
                Changeset::between(&id, workspace, &before, &after, &store, &mut OutcomeBudget::new()).unwrap();
            let targets: BTreeSet<String> = changeset.entries.iter().map(|e| e.path().to_owned()).collect();
            outcome.changesets.push(changeset);
            match spec.name {
                None => bindings.primary = Some(live.clone()),
                Some(name) => {
                    bindings.named.insert(name.to_owned(), live.clone());
                }
            }
            let label = spec.name.map(|n| format!("{n}:")).unwrap_or_default();
            let old = tree(&pristine);
            workspaces.push(Workspace { label, live, pristine, targets, old, new: Tree::new() });
            runs.push(run);
        }
        OutcomeStore::new(&store).commit(&outcome, ReceiptState::Pending, &bindings).unwrap();
        let entries = outcome.changesets.iter().map(|c| c.entries.len()).sum();
        let receipt = fs::read(home.join("outcomes").join(&outcome.id).join("application.json")).unwrap();
        let mut world = World { _dir: dir, home, outcome_id: outcome.id, receipt, workspaces, entries };

        // The new state: a clean apply, which must reproduce the run's edits exactly.
        world.reset();
        let output = world.wb(&["--apply"], None);
        assert!(output.status.success(), "{}", describe(&output));
        for (workspace, run) in world.workspaces.iter_mut().zip(&runs) {
            workspace.new = tree(&workspace.live);
            assert_eq!(workspace.new, tree(run), "{}", workspace.label);
            assert_ne!(workspace.new, workspace.old);
        }
        world.check_settled(Settled::New, "a clean apply");
        world
    }

    fn outcome_dir(&self) -> PathBuf {
        self.home.join("outcomes").join(&self.outcome_id)
    }

    /// Back to the old state: the workspaces, the receipt, no journal.
    fn reset(&self) {
        for workspace in &self.workspaces {
            if workspace.live.exists() {
                fs::remove_dir_all(&workspace.live).unwrap();
            }
            let status = Command::new("cp").arg("-a").arg(&workspace.pristine).arg(&workspace.live).status().unwrap();
            assert!(status.success());
        }
        for entry in fs::read_dir(self.outcome_dir()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "outcome.json" || name == "workspaces.json" {
                continue;
            }
            if path.is_dir() {
                fs::remove_dir_all(&path).unwrap();
            } else {
                fs::remove_file(&path).unwrap();
            }
        }
        fs::write(self.outcome_dir().join("application.json"), &self.receipt).unwrap();
    }

    fn command(&self, args: &[&str], crash_at: Option<usize>) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wb-lsp"));
        command
            .arg("outcome")
            .arg(&self.outcome_id)
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("WORKBENCH_HOME", &self.home)
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(step) = crash_at {
            command.env("WB_LSP_CRASH_AT_STEP", step.to_string());
        }
        command
    }

    fn wb(&self, args: &[&str], crash_at: Option<usize>) -> Output {
        self.command(args, crash_at).output().unwrap()
    }

    fn receipt_value(&self) -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(self.outcome_dir().join("application.json")).unwrap()).unwrap()
    }

    /// The invariant right after a kill.
    fn check_crashed(&self, context: &str) -> Crashed {
        let mut all_new = true;
        let mut all_old = true;
        for workspace in &self.workspaces {
            let now = tree(&workspace.live);
            for path in &workspace.targets {
                let state = now.get(path);
                let (old, new) = (workspace.old.get(path), workspace.new.get(path));
                assert!(
                    state == old || state == new,
                    "{context}: {}{path} is {state:?}, neither its old state {old:?} nor its new state {new:?}",
                    workspace.label
                );
                all_new &= state == new;
                all_old &= state == old;
            }
            for (path, node) in &now {
                if workspace.targets.contains(path) {
                    continue;
                }
                let expected = workspace.old.get(path).or_else(|| workspace.new.get(path));
                if expected == Some(node) {
                    continue;
                }
                // A temp file beside a target (it never replaces one).
                let name = Path::new(path).file_name().unwrap().to_string_lossy().into_owned();
                let sibling = Path::new(path).with_file_name("");
                let is_temp = name.ends_with(".tmp")
                    && workspace.targets.iter().any(|t| {
                        let t = Path::new(t);
                        t.with_file_name("") == sibling
                            && name.starts_with(&format!("{}.workbench-", t.file_name().unwrap().to_string_lossy()))
                    });
                assert!(is_temp, "{context}: unexpected {}{path}: {node:?} (expected {expected:?})", workspace.label);
            }
            for (path, node) in &workspace.old {
                if !workspace.targets.contains(path) && workspace.new.get(path) == Some(node) {
                    assert_eq!(now.get(path), Some(node), "{context}: {}{path} changed", workspace.label);
                }
            }
        }
        let receipt = self.receipt_value();
        let state = receipt["state"].as_str().unwrap().to_owned();
        assert!(state == "pending" || state == "applied", "{context}: receipt {receipt}");
        let receipt_applied = state == "applied";
        if receipt_applied {
            assert!(all_new, "{context}: the receipt is applied but not every path is new");
            assert!(receipt["applied_at"].is_string(), "{context}: {receipt}");
        } else {
            assert_eq!(
                fs::read(self.outcome_dir().join("application.json")).unwrap(),
                self.receipt,
                "{context}: the pending receipt changed"
            );
        }
        Crashed { receipt_applied, all_new, all_old }
    }

    /// The invariant once resolved: exactly the old or exactly the new state everywhere, with the matching
    /// receipt, and no leftovers.
    fn check_settled(&self, expected: Settled, context: &str) {
        for workspace in &self.workspaces {
            let now = tree(&workspace.live);
            let want = match expected {
                Settled::Old => &workspace.old,
                Settled::New => &workspace.new,
            };
            if now != *want {
                let mut diff = Vec::new();
                for path in now.keys().chain(want.keys()).collect::<BTreeSet<_>>() {
                    if now.get(path) != want.get(path) {
                        diff.push(format!("{path}: {:?} (expected {:?})", now.get(path), want.get(path)));
                    }
                }
                panic!("{context}: {}workspace not in its {expected:?} state:\n{}", workspace.label, diff.join("\n"));
            }
        }
        match expected {
            Settled::Old => assert_eq!(
                String::from_utf8_lossy(&fs::read(self.outcome_dir().join("application.json")).unwrap()),
                String::from_utf8_lossy(&self.receipt),
                "{context}: the receipt changed"
            ),
            Settled::New => {
                let receipt = self.receipt_value();
                assert_eq!(receipt["state"], "applied", "{context}: {receipt}");
                assert!(receipt["applied_at"].is_string(), "{context}: {receipt}");
                let errors: Vec<String> = receipt_schema().iter_errors(&receipt).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{receipt}: {errors:?}");
            }
        }
        let mut names: Vec<String> = Vec::new();
        for entry in fs::read_dir(self.outcome_dir()).unwrap() {
            names.push(entry.unwrap().file_name().to_string_lossy().into_owned());
        }
        names.sort();
        assert_eq!(
            names,
            ["application.json", "outcome.json", "workspaces.json"],
            "{context}: leftovers in the outcome directory"
        );
    }

    /// Runs a recovery of the given kind after a crash; checks the settled state and that a following
    /// apply completes.
    fn recover(&self, by: Recovery, crashed: &Crashed, context: &str) -> Settled {
        let settled = match by {
            Recovery::Apply => {
                let output = self.wb(&["--apply"], None);
                assert!(output.status.success(), "{context}: the next apply failed: {}", describe(&output));
                Settled::New
            }
            Recovery::Recover => {
                let output = self.wb(&["--recover"], None);
                assert!(output.status.success(), "{context}: --recover failed: {}", describe(&output));
                // The commit point is the receipt: a crash after it is finished, any other rolled back.
                if crashed.receipt_applied { Settled::New } else { Settled::Old }
            }
        };
        self.check_settled(settled, context);
        // Idempotent: nothing is left to recover.
        let output = self.wb(&["--recover", "--json"], None);
        assert!(output.status.success(), "{context}: {}", describe(&output));
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()["recovered"],
            0,
            "{context}: {}",
            describe(&output)
        );
        self.check_settled(settled, context);
        // A following apply completes.
        let output = self.wb(&["--apply", "--json"], None);
        assert!(output.status.success(), "{context}: the following apply failed: {}", describe(&output));
        let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let applied = result["applied"].as_u64().unwrap() as usize;
        let unchanged = result["unchanged"].as_u64().unwrap() as usize;
        assert_eq!(applied + unchanged, self.entries, "{context}: {result}");
        assert_eq!(applied == 0, settled == Settled::New, "{context}: {result}");
        self.check_settled(Settled::New, &format!("{context}, then a following apply"));
        settled
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Recovery {
    /// The next `--apply` recovers first.
    Apply,
    /// `--recover`.
    Recover,
}

/// The official schema of receipts.
fn receipt_schema() -> &'static jsonschema::Validator {
    static SCHEMA: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| outcomes_validator("application.schema.json"))
}

fn describe(output: &Output) -> String {
    format!(
        "{:?}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The step a process killed itself in (`crash at step N: NAME` on stderr).
fn crash_step(output: &Output, step: usize) -> String {
    assert_eq!(output.status.signal(), Some(SIGKILL), "not killed at step {step}: {}", describe(output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let prefix = format!("crash at step {step}: ");
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no crash message: {stderr}"))
        .to_owned()
}

fn specs() -> Vec<Spec> {
    vec![
        Spec { name: None, setup: primary_setup, change: primary_change },
        Spec { name: Some("docs"), setup: docs_setup, change: docs_change },
    ]
}

/// Kills `--apply` at every step N = 0, 1, … until it completes, each time recovered once by the next
/// `--apply` and once by `--recover`.
#[test]
fn a_kill_at_every_step_of_an_apply_is_finished_or_rolled_back() {
    let world = World::new(&specs());
    let mut steps: Vec<String> = Vec::new();
    let mut settled = BTreeMap::new();
    for by in [Recovery::Apply, Recovery::Recover] {
        let mut names = Vec::new();
        for step in 0.. {
            assert!(step < 1000, "the apply never completes");
            world.reset();
            let output = world.wb(&["--apply"], Some(step));
            if output.status.success() {
                world.check_settled(Settled::New, &format!("not killed at step {step}"));
                break;
            }
            let name = crash_step(&output, step);
            let context = format!("killed at step {step} ({name}), recovered by {by:?}");
            let crashed = world.check_crashed(&context);
            let result = world.recover(by, &crashed, &context);
            *settled.entry((by, result)).or_insert(0) += 1;
            names.push(name);
        }
        if by == Recovery::Apply {
            steps = names;
        } else {
            assert_eq!(names, steps, "the same steps every time");
        }
    }
    eprintln!("{} crash points: {}", steps.len(), steps.join(" | "));
    eprintln!("resolutions: {settled:?}");
    // Every kind of step is covered.
    for kind in ["lease", "backup", "journal", "temp created", "temp written", "renamed", "removed", "receipt"] {
        assert!(steps.iter().any(|s| s.contains(kind)), "no {kind} step in {steps:?}");
    }
    assert!(settled.contains_key(&(Recovery::Recover, Settled::Old)));
    assert!(settled.contains_key(&(Recovery::Recover, Settled::New)));
}

/// A crash during the recovery of a crash: kills the recovering process (`--recover`, or the next
/// `--apply`, which recovers first) at every one of its recovery steps, after an apply killed half-way
/// through its installs (with a temp file written), one killed with its receipt written to a temp file only (everything to roll
/// back), and one killed right after its receipt (the commit point).
#[test]
fn a_kill_during_recovery_is_recovered_again() {
    let world = World::new(&specs());
    // Find the apply's steps: the middle install and the receipt.
    let mut names = Vec::new();
    for step in 0.. {
        world.reset();
        let output = world.wb(&["--apply"], Some(step));
        if output.status.success() {
            break;
        }
        names.push(crash_step(&output, step));
    }
    let installs: Vec<usize> = (0..names.len()).filter(|&i| names[i].contains("temp written")).collect();
    let middle = installs[installs.len() / 2];
    let receipt_temp = names.iter().position(|n| n == "receipt: temp written").unwrap();
    let receipt = names.iter().position(|n| n == "receipt: renamed").unwrap();
    let mut kills = 0;
    let mut recovery_steps = BTreeSet::new();
    for first in [middle, receipt_temp, receipt] {
        for by in [Recovery::Recover, Recovery::Apply] {
            let args: &[&str] = if by == Recovery::Apply { &["--apply"] } else { &["--recover"] };
            for step in 0.. {
                assert!(step < 1000, "the recovery never completes");
                world.reset();
                let output = world.wb(&["--apply"], Some(first));
                let first_name = crash_step(&output, first);
                let crashed = world.check_crashed(&format!("killed at {first_name}"));
                let output = world.wb(args, Some(step));
                if output.status.success() {
                    let settled = match by {
                        Recovery::Apply => Settled::New,
                        Recovery::Recover if crashed.receipt_applied => Settled::New,
                        Recovery::Recover => Settled::Old,
                    };
                    world.check_settled(settled, &format!("{by:?} not killed at step {step}"));
                    break;
                }
                let name = crash_step(&output, step);
                kills += 1;
                recovery_steps.insert(name.clone());
                let context = format!("killed at {first_name}, then {by:?} killed at step {step} ({name})");
                let again = world.check_crashed(&context);
                if crashed.receipt_applied {
                    assert!(again.receipt_applied && again.all_new, "{context}");
                }
                world.recover(by, &again, &context);
                if name == "transaction created" {
                    // The recovering apply is past its recovery: the rest is the first test's.
                    break;
                }
            }
        }
    }
    eprintln!("{kills} kills during recovery, in the steps: {}", Vec::from_iter(recovery_steps.clone()).join(" | "));
    for kind in ["recover", "restore", "temp removed", "receipt temp removed", "journal removed"] {
        assert!(recovery_steps.iter().any(|s| s.contains(kind)), "no {kind} step in {recovery_steps:?}");
    }
}

/// The lease is a kernel lock (`flock(2)` on `application.lock`): while another process holds it, `--apply`
/// and `--recover` fail with the busy text and change nothing; once it is released (its file left behind,
/// as a killed holder leaves it) the next `--apply` completes and removes the file.
#[test]
fn a_held_lease_makes_another_process_busy() {
    let world = World::new(&specs());
    world.reset();
    let lock = world.outcome_dir().join("application.lock");
    let file = fs::OpenOptions::new().write(true).create(true).truncate(false).open(&lock).unwrap();
    let held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e).unwrap();
    let busy = format!("error: Outcome is being applied by another process: {}\n", world.outcome_id);
    for args in [&["--apply"][..], &["--recover"]] {
        let output = world.wb(args, None);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", describe(&output));
        assert_eq!(String::from_utf8_lossy(&output.stderr), busy, "{args:?}");
    }
    assert!(world.check_crashed("busy").all_old);
    drop(held);
    assert!(lock.exists());
    let output = world.wb(&["--apply"], None);
    assert!(output.status.success(), "{}", describe(&output));
    world.check_settled(Settled::New, "applied once the lease was released");
}

/// A small xorshift generator (a fixed seed: reproducible).
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}

/// SIGKILLs the apply of a large outcome after random short delays, across the whole apply.
#[test]
fn random_kills_during_a_large_apply() {
    let world = World::new(&[Spec { name: None, setup: large_setup, change: large_change }]);
    // How long a whole apply takes, process start included (the fastest of three).
    let mut duration = Duration::MAX;
    for _ in 0..3 {
        world.reset();
        let start = Instant::now();
        let output = world.wb(&["--apply"], None);
        duration = duration.min(start.elapsed());
        assert!(output.status.success(), "{}", describe(&output));
    }
    // Kills land uniformly in the window; a run that completes first narrows it (the machine is busier or
    // idler than when measured).
    let mut window = u64::try_from(duration.as_micros()).unwrap();
    let mut random = Random(0x5eed_cafe_f00d_d00d);
    let iterations = 40;
    let (mut killed, mut completed, mut partial, mut committed) = (0, 0, 0, 0);
    for i in 0..iterations {
        world.reset();
        let delay = Duration::from_micros(random.below(window));
        let mut child = world.command(&["--apply"], None).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        let by = if i % 2 == 0 { Recovery::Apply } else { Recovery::Recover };
        let context = format!("iteration {i}: killed after {delay:?}, recovered by {by:?}");
        if output.status.success() {
            completed += 1;
            window = window * 3 / 4;
            world.check_settled(Settled::New, &context);
            continue;
        }
        assert_eq!(output.status.signal(), Some(SIGKILL), "{context}: {}", describe(&output));
        killed += 1;
        let crashed = world.check_crashed(&context);
        if !crashed.all_new && !crashed.all_old {
            partial += 1;
        }
        if crashed.receipt_applied {
            committed += 1;
        }
        world.recover(by, &crashed, &context);
    }
    eprintln!(
        "apply of {} entries takes {duration:?}; {iterations} runs: {killed} killed ({partial} with some paths \
         new and some old, {committed} after the receipt), {completed} completed",
        world.entries
    );
    assert!(killed >= iterations / 3, "{killed} of {iterations} killed");
    assert!(partial > 0, "no kill landed among the installs");
}

/// The paths `--apply --only` takes in the partial tests: a modify, an add in new directories, a named
/// workspace's modify.
const SELECTED: [&str; 3] = ["a.txt", "new/deep/c.sh", "docs:guide.md"];

impl World {
    /// After a partial apply (or a kill during one): each selected target old or new (all new with `new`), every
    /// other target old, the receipt the pending one byte for byte. Returns whether the selected are all new.
    fn check_partial(&self, context: &str, new: Option<bool>) -> bool {
        let mut selected_new = true;
        for workspace in &self.workspaces {
            let now = tree(&workspace.live);
            for path in &workspace.targets {
                let label = format!("{}{path}", workspace.label);
                let state = now.get(path);
                let (old, newer) = (workspace.old.get(path), workspace.new.get(path));
                if SELECTED.contains(&label.as_str()) {
                    assert!(state == old || state == newer, "{context}: {label} is {state:?}");
                    selected_new &= state == newer;
                } else {
                    assert_eq!(state, old, "{context}: {label} was not selected but changed");
                }
            }
        }
        if let Some(new) = new {
            assert_eq!(selected_new, new, "{context}: the selected paths");
        }
        assert_eq!(fs::read(self.outcome_dir().join("application.json")).unwrap(), self.receipt, "{context}");
        let mut names: Vec<String> = fs::read_dir(self.outcome_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "taken.json")
            .collect();
        names.sort();
        if new.is_some() {
            assert_eq!(names, ["application.json", "outcome.json", "workspaces.json"], "{context}: leftovers");
        }
        selected_new
    }

    fn partial_args(&self) -> Vec<&'static str> {
        let mut args = vec!["--apply", "--only"];
        args.extend(SELECTED);
        args
    }
}

/// `--apply --only` killed at every step: each selected path is old or new, the rest old, the receipt still
/// pending; `--recover` finishes a partial apply whose record of what was taken was written (its commit point)
/// and rolls back any other. Then the selected paths are taken again, and a whole apply takes the rest: the
/// receipt goes from `pending` to `applied`.
#[test]
fn a_kill_at_every_step_of_a_partial_apply_is_finished_or_rolled_back() {
    let world = World::new(&specs());
    let mut outcomes = BTreeSet::new();
    for step in 0.. {
        assert!(step < 1000, "the partial apply never completes");
        world.reset();
        let output = world.wb(&world.partial_args(), Some(step));
        if output.status.success() {
            world.check_partial(&format!("not killed at step {step}"), Some(true));
            let taken: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(world.outcome_dir().join("taken.json")).unwrap()).unwrap();
            let mut listed: Vec<&str> = taken["paths"].as_array().unwrap().iter().filter_map(|p| p.as_str()).collect();
            listed.sort_unstable();
            let mut expected = SELECTED.to_vec();
            expected.sort_unstable();
            assert_eq!(listed, expected);
            break;
        }
        let name = crash_step(&output, step);
        let context = format!("partial apply killed at step {step} ({name})");
        let was_new = world.check_partial(&context, None);
        let recovered = world.wb(&["--recover"], None);
        assert!(recovered.status.success(), "{context}: {}", describe(&recovered));
        let committed = fs::read_to_string(world.outcome_dir().join("taken.json")).is_ok_and(|t| t.contains("a.txt"));
        let now_new = world.check_partial(&context, Some(committed));
        assert!(!was_new || now_new || !committed, "{context}");
        outcomes.insert(now_new);
        // Taken again (or unchanged), then the rest: the whole outcome applied.
        let again = world.wb(&world.partial_args(), None);
        assert!(again.status.success(), "{context}: {}", describe(&again));
        world.check_partial(&context, Some(true));
        let rest = world.wb(&["--apply"], None);
        assert!(rest.status.success(), "{context}: {}", describe(&rest));
        let receipt = world.receipt_value();
        assert_eq!(receipt["state"], "applied", "{context}");
        for workspace in &world.workspaces {
            assert_eq!(tree(&workspace.live), workspace.new, "{context}: {}", workspace.label);
        }
    }
    assert_eq!(outcomes, BTreeSet::from([false, true]), "both a rollback and a finished partial apply were seen");
}

/// A conflict on a path left out does not stop the selected ones; one on a selected path refuses before
/// anything is written. A path the outcome does not change is refused. Taking every path one by one ends with
/// the receipt `applied`.
#[test]
fn a_partial_apply_checks_only_what_it_takes() {
    let world = World::new(&specs());
    world.reset();
    let primary = &world.workspaces[0].live;
    fs::write(primary.join("sub/b.txt"), "edited by hand\n").unwrap();
    let output = world.wb(&["--apply", "--only", "a.txt", "--json"], None);
    assert!(output.status.success(), "{}", describe(&output));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((result["applied"].as_u64(), result["application_state"].as_str()), (Some(1), Some("pending")));
    assert_eq!(fs::read_to_string(primary.join("a.txt")).unwrap(), "A, edited\n");

    let before = tree(primary);
    let output = world.wb(&["--apply", "--only", "sub/b.txt", "new/deep/c.sh"], None);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("conflicts with current workspace content: sub/b.txt"));
    assert_eq!(tree(primary), before, "a refused partial apply wrote something");
    let output = world.wb(&["--apply", "--only", "keep.txt"], None);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("changes no such path: keep.txt"));

    // The summary says what was taken while the receipt is pending.
    let shown = world.wb(&[], None);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("M a.txt (taken)"), "{text}");
    assert!(text.contains("M sub/b.txt\n"), "{text}");

    // Put back, then every path one at a time: the last one makes the receipt applied.
    fs::write(primary.join("sub/b.txt"), "b\n").unwrap();
    let labels: Vec<String> =
        world.workspaces.iter().flat_map(|w| w.targets.iter().map(move |t| format!("{}{t}", w.label))).collect();
    for (index, label) in labels.iter().enumerate() {
        let output = world.wb(&["--apply", "--only", label, "--json"], None);
        assert!(output.status.success(), "{label}: {}", describe(&output));
        let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let last = index + 1 == labels.len();
        assert_eq!(result["application_state"], if last { "applied" } else { "pending" }, "{label}: {result}");
    }
    world.check_settled_new_with_taken();
}

impl World {
    fn check_settled_new_with_taken(&self) {
        for workspace in &self.workspaces {
            assert_eq!(tree(&workspace.live), workspace.new, "{}", workspace.label);
        }
        let receipt = self.receipt_value();
        assert_eq!(receipt["state"], "applied");
        let errors: Vec<String> = receipt_schema().iter_errors(&receipt).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{receipt}: {errors:?}");
    }
}

/// `--diff`: every file's unified diff, or only the paths asked for; coloured only when asked (the output is a
/// pipe here, so never paged); a path the outcome does not change is refused.
#[test]
fn the_diff_shows_every_file_or_the_ones_asked_for() {
    let world = World::new(&specs());
    let all = world.wb(&["--diff"], None);
    assert!(all.status.success(), "{}", describe(&all));
    let text = String::from_utf8_lossy(&all.stdout);
    for expected in [
        "diff --git a/a.txt b/a.txt\n",
        "-a\n+A, edited\n",
        "old mode 100644\nnew mode 100755\n",
        "Binary files a/big.bin and b/big.bin differ\n",
        "# workspace docs\ndiff --git a/guide.md b/guide.md\n",
        "deleted file mode 100644\n",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from:\n{text}");
    }
    assert!(!text.contains('\x1b'), "coloured on a pipe");

    let some = world.wb(&["--diff", "a.txt", "docs:guide.md"], None);
    assert!(some.status.success(), "{}", describe(&some));
    let text = String::from_utf8_lossy(&some.stdout);
    let files: Vec<&str> = text.lines().filter(|l| l.starts_with("diff --git ")).collect();
    assert_eq!(files, ["diff --git a/a.txt b/a.txt", "diff --git a/guide.md b/guide.md"], "{text}");

    let coloured = world.wb(&["--diff", "a.txt", "--color", "always"], None);
    let text = String::from_utf8_lossy(&coloured.stdout);
    assert!(text.contains("\x1b[32m+A, edited\x1b[m"), "{text:?}");

    let missing = world.wb(&["--diff", "nope.txt"], None);
    assert_eq!(missing.status.code(), Some(1), "{}", describe(&missing));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("changes no such path: nope.txt"));
}

fn hostile_setup(root: &Path) {
    write(root, "notes.txt", "old\n");
}

fn hostile_change(root: &Path) {
    write(root, "notes.txt", "\x1b]0;owned\x07new\r\x1b[2K\u{9b}1A\n");
}

/// `--diff` never sends the agent's escape sequences (content or file names) to the terminal: they are shown
/// escaped (issue 40; checked once to fail before the fix).
#[test]
fn the_diff_escapes_the_agents_control_characters() {
    let world = World::new(&[Spec { name: None, setup: hostile_setup, change: hostile_change }]);
    for args in [&["--diff"][..], &["--diff", "--color", "always"][..]] {
        let output = world.command(args, None).env("PAGER", "cat").output().unwrap();
        assert!(output.status.success(), "{}", describe(&output));
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("+\\u{1b}]0;owned\\u{7}new\\r") && text.contains("\\u{1b}[2K\\u{9b}1A"), "{text:?}");
        let raw: Vec<&str> = text
            .split('\x1b')
            .skip(1)
            .filter(|rest| !rest.starts_with("[1m") && !rest.starts_with("[3") && !rest.starts_with("[m"))
            .collect();
        assert!(
            raw.is_empty() && !text.contains('\x07') && !text.contains('\r') && !text.contains('\u{9b}'),
            "{args:?}: {text:?}"
        );
    }
}

/// On a terminal (`script` gives the diff one), a pager that cannot start is an error naming it, never an
/// empty success; `PAGER=cat` shows the diff escaped.
#[test]
fn a_pager_that_cannot_start_fails_loudly() {
    let world = World::new(&[Spec { name: None, setup: hostile_setup, change: hostile_change }]);
    let on_terminal = |pager: &str| {
        let line = format!("'{}' outcome {} --diff", env!("CARGO_BIN_EXE_wb-lsp"), world.outcome_id);
        let mut command = Command::new("script");
        command
            .args(["-qec", &line, "/dev/null"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &world.home)
            .env("WORKBENCH_HOME", &world.home)
            .env("PAGER", pager)
            .current_dir(&world.home)
            .stdin(Stdio::null());
        command.output().unwrap()
    };
    let failed = on_terminal("/nonexistent/pager");
    let text = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(2), "{text}");
    assert!(text.contains("the pager `/nonexistent/pager` failed"), "{text}");
    let shown = on_terminal("cat");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{text}");
    assert!(text.contains("\\u{1b}]0;owned\\u{7}new") && !text.contains("\x1b]0;"), "{text:?}");
}
