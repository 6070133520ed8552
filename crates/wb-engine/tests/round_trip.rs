#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Outcome round trips through real runs (outcomes contract, engine facts (f)), for every runner.
//!
//! Each fake runner (`opencode`, `claude`, `pi`, installed as `fixtures/runners/shell_runner`, whose shell tool
//! really runs its command) replays its recorded `success.jsonl` stream plus native tool calls that rename a
//! file, retarget a symlink, `chmod a+x` a script, overwrite a binary file and add another (NUL bytes, invalid
//! UTF-8), add a relative symlink, write a `.env` (excluded), and write two outbox artifacts and an `outcome.json`
//! declaration. The stream itself edits `README.md`, adds `notes/hello.txt` and removes `obsolete.txt`.
//!
//! Then, for the committed outcome: the manifest's entries, stats, review diff, artifacts and links exactly;
//! every manifest and receipt against the official schemas; apply refused while the receipt is `present`; with
//! the receipt set to `pending` (what an isolated runtime records), conflicts and a path-escape corpus rejected
//! with the facts' texts and nothing changed; apply to a copy of the baseline reproduces the workspace after the
//! run (bytes, modes, symlink targets, deletions); retries skip what is applied and never overwrite later edits;
//! export writes the documented layout. In a plain and in a Git workspace.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::{Value, json};
use wb_engine::{Ending, Options, RunMode, RunResult};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_outcomes::{
    ApplyResult, ContentStore, Entry, Outcome, OutcomeStore, Receipt, ReceiptState, Snapshot, State, WorkspaceBindings,
    new_outcome_id,
};
use wb_testsupport::{self as support, FINAL, TASK, ToolCall, World, copy_tree, copy_tree_without_git, git};

// ---------------------------------------------------------------------------------------------------------------
// The runners

#[derive(Clone, Copy, Debug)]
enum Runner {
    OpenCode,
    ClaudeCode,
    Pi,
}

impl Runner {
    /// The runner's name in events and the directory of its recorded streams.
    fn name(self) -> &'static str {
        match self {
            Runner::OpenCode => "opencode",
            Runner::ClaudeCode => "claude-code",
            Runner::Pi => "pi",
        }
    }

    /// The runner's demo world, with the shell-running fake runners.
    fn world(self) -> World {
        let world = match self {
            Runner::OpenCode => support::opencode_world(),
            Runner::ClaudeCode => support::claude_world(),
            Runner::Pi => support::pi_world(),
        };
        world.install_shell_runners();
        world
    }

    /// The options of a run of the runner's demo package replaying `script`.
    fn options(self, world: &World, script: &Path) -> Options {
        let (source, credentials): (&str, &[(&str, &str)]) = match self {
            Runner::OpenCode => (
                ".workbenches/oc-demo",
                &[("DATABASE_URL", "postgres://db.internal/ledger"), ("OPENAI_API_KEY", "sk-openai-test-value")],
            ),
            Runner::ClaudeCode => (".workbenches/cc-demo", &[("ANTHROPIC_API_KEY", "sk-ant-test-value")]),
            Runner::Pi => (".workbenches/pi-demo", &[("GEMINI_API_KEY", "gemini-test-value")]),
        };
        let mut inherited = world.inherited();
        for (name, value) in credentials {
            inherited.insert((*name).to_owned(), (*value).to_owned());
        }
        inherited.insert("FAKE_RUNNER_SCRIPT".to_owned(), script.display().to_string());
        let workspaces = match self {
            // cc-demo requires a read-write `docs` workspace; the run leaves it alone (no changeset).
            Runner::ClaudeCode => vec![format!("docs={}", world.root.join("docs").display())],
            _ => Vec::new(),
        };
        {
            let mut options = common::options(world, source, TASK, inherited);
            options.request.settings.workspaces = workspaces;
            options
        }
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

// ---------------------------------------------------------------------------------------------------------------
// The workspace before and after

const README_OLD: &[u8] = b"# Old title\n\nThe ledger service.\n";
const README_NEW: &[u8] = b"# New title\n\nThe ledger service.\n";
const OBSOLETE: &[u8] = b"remove me\n";
const HELLO: &[u8] = b"hello from the fake runner\n";
const KEEP: &[u8] = b"left alone by the run\n";
const RUST: &[u8] = b"fn main() {\n    println!(\"ledger\");\n}\n";
const SCRIPT: &[u8] = b"#!/bin/sh\necho run\n";
/// Binary: NUL bytes and invalid UTF-8.
const BLOB_OLD: &[u8] = b"\x00\x01\x02\xffold\xfe\n";
const BLOB_NEW: &[u8] = b"\x00\xc3\x28new\xff\x00\x80";
const LOGO: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe";
const CHART: &[u8] = b"\x89PNG\r\n\x1a\n\x00chart\xc0";
const FINDINGS: &[u8] = b"<h1>Findings</h1>\n";
/// The committed version of `data/blob.bin` in a Git workspace (the baseline's is a dirty edit of it).
const BLOB_COMMITTED: &[u8] = b"\x00committed\xff";

/// Every path the run changes, in the manifest's (byte) order.
const CHANGED: [&str; 10] = [
    "README.md",
    "assets/logo.png",
    "current",
    "data/blob.bin",
    "notes/hello.txt",
    "notes/readme-link",
    "obsolete.txt",
    "scripts/run.sh",
    "src/new_name.rs",
    "src/old_name.rs",
];

fn put(root: &Path, path: &str, bytes: &[u8], mode: u32) {
    let full = root.join(path);
    fs::create_dir_all(full.parent().unwrap()).unwrap();
    fs::write(&full, bytes).unwrap();
    fs::set_permissions(&full, fs::Permissions::from_mode(mode)).unwrap();
}

/// The primary workspace before the run (the world already wrote `README.md` and `obsolete.txt`).
fn seed(work: &Path) {
    put(work, "README.md", README_OLD, 0o644);
    put(work, "obsolete.txt", OBSOLETE, 0o644);
    put(work, "keep.txt", KEEP, 0o644);
    put(work, "src/old_name.rs", RUST, 0o640);
    put(work, "scripts/run.sh", SCRIPT, 0o644);
    put(work, "data/blob.bin", BLOB_OLD, 0o644);
    symlink("src/old_name.rs", work.join("current")).unwrap();
}

fn git_head(root: &Path) -> String {
    git(root, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// Makes the seeded workspace a Git repository: everything committed except `obsolete.txt` (untracked), and
/// `data/blob.bin` dirty (its committed bytes differ from the baseline's).
fn make_git(work: &Path) {
    git(work, &["init", "-q"]);
    put(work, "data/blob.bin", BLOB_COMMITTED, 0o644);
    git(work, &["add", "-A"]);
    git(work, &["rm", "-q", "--cached", "obsolete.txt"]);
    git(work, &["commit", "-q", "-m", "base"]);
    put(work, "data/blob.bin", BLOB_OLD, 0o644);
}

/// `printf` octal escapes for arbitrary bytes.
fn printf_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:03o}")).collect()
}

/// The tool calls the runners carry out after their `success.jsonl` edits.
fn round_trip_calls() -> Vec<ToolCall> {
    let shell = |command: String| ToolCall::Shell { command };
    vec![
        shell("mv src/old_name.rs src/new_name.rs && ln -sfn src/new_name.rs current".to_owned()),
        shell("chmod a+x scripts/run.sh".to_owned()),
        shell(format!(
            "printf '{}' > data/blob.bin && mkdir -p assets && printf '{}' > assets/logo.png",
            printf_bytes(BLOB_NEW),
            printf_bytes(LOGO)
        )),
        shell("ln -s ../README.md notes/readme-link".to_owned()),
        shell("printf 'API_TOKEN=dotenv-test-value\\n' > .env".to_owned()),
        ToolCall::Write {
            path: "{{env:WORKBENCH_OUTPUT_DIR}}/reports/findings.html".to_owned(),
            content: String::from_utf8(FINDINGS.to_vec()).unwrap(),
        },
        shell(format!(
            "mkdir -p \"$WORKBENCH_OUTPUT_DIR/images\" && printf '{}' > \"$WORKBENCH_OUTPUT_DIR/images/chart.png\"",
            printf_bytes(CHART)
        )),
        ToolCall::Write {
            path: "{{env:WORKBENCH_OUTPUT_DIR}}/outcome.json".to_owned(),
            content: support::declaration("reports/findings.html").to_string(),
        },
    ]
}

/// One node of a workspace tree.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File { bytes: Vec<u8>, mode: u32 },
    Symlink(String),
}

/// Every directory, file (bytes and permission bits) and symlink (target) under `root`, without following
/// symlinks; paths the outcomes policy excludes (`.git`, `.env`, …) are left out.
fn tree(root: &Path) -> BTreeMap<String, Node> {
    fn walk(root: &Path, relative: &str, out: &mut BTreeMap<String, Node>) {
        let mut entries: Vec<_> = fs::read_dir(root.join(relative)).unwrap().flatten().collect();
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name().into_string().unwrap();
            let path = if relative.is_empty() { name } else { format!("{relative}/{name}") };
            if wb_outcomes::is_excluded(&path) {
                continue;
            }
            let meta = fs::symlink_metadata(entry.path()).unwrap();
            if meta.file_type().is_symlink() {
                let target = fs::read_link(entry.path()).unwrap().into_os_string().into_string().unwrap();
                out.insert(path, Node::Symlink(target));
            } else if meta.is_dir() {
                out.insert(path.clone(), Node::Dir);
                walk(root, &path, out);
            } else {
                let bytes = fs::read(entry.path()).unwrap();
                out.insert(path, Node::File { bytes, mode: meta.permissions().mode() & 0o777 });
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, "", &mut out);
    out
}

fn mode_of(root: &Path, path: &str) -> u32 {
    fs::symlink_metadata(root.join(path)).unwrap().permissions().mode() & 0o777
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", wb_outcomes::sha256_hex(bytes))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// Names below `root` that look like the engine's temporary files.
fn leftovers(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (path, _) in tree(root) {
        if path.contains(".workbench-") || path.ends_with(".tmp") {
            found.push(path);
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------------------------
// A finished run and its outcome

struct Ran {
    runner: Runner,
    git: bool,
    world: World,
    /// A copy of the primary workspace as it was before the run (the baseline).
    baseline: PathBuf,
    /// Outside every workspace: what an escape would reach.
    outside: PathBuf,
    store: ContentStore,
    id: String,
    manifest: Value,
}

impl Ran {
    fn home(&self) -> PathBuf {
        self.world.home.join(".workbench")
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.home().join("outcomes").join(id)
    }

    /// A fresh copy of the baseline at `copies/<name>`.
    fn copy(&self, name: &str) -> PathBuf {
        let target = self.world.root.join("copies").join(name);
        copy_tree(&self.baseline, &target);
        target
    }

    fn receipt(&self, id: &str) -> Value {
        read_json(&self.dir(id).join("application.json"))
    }

    /// Marks the run's outcome `pending`, as an isolated runtime (E2B, Daytona) records it, so it can be applied
    /// to other copies of the workspace.
    fn set_pending(&self) {
        OutcomeStore::new(&self.store).write_receipt(&Receipt::new(&self.id, ReceiptState::Pending)).unwrap();
        assert_eq!(self.receipt(&self.id)["state"], "pending");
    }

    fn apply(&self, id: &str, target: &Path) -> Result<ApplyResult, String> {
        wb_outcomes::apply(&self.store, id, Some(target)).map_err(|e| e.to_string())
    }

    fn transactions_empty(&self, id: &str) -> bool {
        fs::read_dir(self.dir(id).join("transactions")).map(|d| d.count() == 0).unwrap_or(true)
    }

    /// Applying `id` to `target` fails with `expected`, and nothing changed: the target, the outside directory,
    /// the receipt, no transaction or temporary file left, no lease held.
    fn assert_rejected(&self, id: &str, target: &Path, expected: &str) {
        let before = (tree(target), tree(&self.outside), self.receipt(id));
        let error = self.apply(id, target).expect_err("apply was rejected");
        assert_eq!(error, expected, "{:?}: {}", self.runner, target.display());
        assert_eq!((tree(target), tree(&self.outside), self.receipt(id)), before, "nothing changed");
        assert!(self.transactions_empty(id));
        assert!(!self.dir(id).join("apply.lock").exists());
        assert_eq!(leftovers(target), Vec::<String>::new());
    }

    /// A hand-written copy of `outcome` with the primary workspace bound to `primary` (see [`write_by_hand`]).
    fn write_by_hand(&self, outcome: &Outcome, primary: &Path) -> String {
        let bindings = WorkspaceBindings { primary: Some(primary.to_path_buf()), named: BTreeMap::new() };
        write_by_hand(&self.home(), outcome, &bindings)
    }
}

/// Writes a manifest as a copy tampered on disk would be (bypassing the validation of `commit`): a new id, a
/// `pending` receipt and these bindings. Returns the new id.
fn write_by_hand(home: &Path, outcome: &Outcome, bindings: &WorkspaceBindings) -> String {
    let mut outcome = outcome.clone();
    outcome.id = new_outcome_id();
    let dir = home.join("outcomes").join(&outcome.id);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("outcome.json"), serde_json::to_string_pretty(&outcome).unwrap()).unwrap();
    let receipt = Receipt::new(&outcome.id, ReceiptState::Pending);
    fs::write(dir.join("application.json"), serde_json::to_string_pretty(&receipt).unwrap()).unwrap();
    fs::write(dir.join("workspaces.json"), serde_json::to_string_pretty(bindings).unwrap()).unwrap();
    outcome.id
}

/// Seeds the workspace, runs `runner` with the round-trip tool calls, and checks the run and its events.
fn run_round_trip(runner: Runner, git: bool) -> Ran {
    let world = runner.world();
    seed(&world.work);
    if git {
        make_git(&world.work);
    }
    let baseline = world.root.join("baseline");
    copy_tree_without_git(&world.work, &baseline);
    let outside = world.dir("outside");
    put(&outside, "victim.txt", b"outside the workspace\n", 0o644);

    let script = support::stream_with_calls(&world, runner.name(), "round-trip", &round_trip_calls());
    let (result, events) = run(&runner.options(&world, &script));
    assert_eq!(result.ending, Ending::Completed, "{runner:?}: {events:#?}");
    assert_eq!(result.final_text, FINAL);
    support::check_events(&events, runner.name());
    let types = support::types(&events);
    let n = types.len();
    assert_eq!(types[n - 2..], ["outcome.available", "run.completed"], "{runner:?}");
    let id = result.outcome_id.clone().expect("an outcome");
    assert_eq!(
        events[n - 2]["data"],
        json!({"outcome_id": id, "completeness": "complete", "application_state": "present", "changesets": 1,
               "artifacts": 2, "links": 1, "warnings": 0, "summary": "Prepared a findings report"}),
        "{runner:?}"
    );

    let home = world.home.join(".workbench");
    let store = ContentStore::open(&home).unwrap();
    let manifest = read_json(&home.join("outcomes").join(&id).join("outcome.json"));
    assert_eq!(manifest["run_id"], json!(result.run_id));
    let outbox = home.join("runs").join(&result.run_id).join("outbox");
    support::assert_outcomes_schema("outbox.schema.json", &read_json(&outbox.join("outcome.json")));
    Ran { runner, git, world, baseline, outside, store, id, manifest }
}

// ---------------------------------------------------------------------------------------------------------------
// The checks

/// The manifest exactly: entries (renames are an add and a delete, modes, symlinks, binary contents), stats,
/// base, review diff, artifacts, links; every content in the store; manifest and receipt valid.
fn check_manifest(ran: &Ran) {
    let (work, base) = (&ran.world.work, &ran.baseline);
    support::assert_outcomes_schema("outcome.schema.json", &ran.manifest);
    support::assert_outcomes_schema("application.schema.json", &ran.receipt(&ran.id));
    assert_eq!(ran.receipt(&ran.id)["state"], "present");
    let mut keys: Vec<&String> = ran.manifest.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "artifacts",
            "changesets",
            "completeness",
            "created_at",
            "id",
            "links",
            "run_id",
            "summary",
            "version",
            "warnings"
        ]
    );
    assert_eq!(ran.manifest["warnings"], json!([]));

    let file = |bytes: &[u8], mode: u32| json!({"kind": "file", "digest": digest(bytes), "mode": mode, "size_bytes": bytes.len()});
    let content = |bytes: &[u8], media_type: &str| json!({"digest": digest(bytes), "media_type": media_type, "size_bytes": bytes.len()});
    let state = |bytes: &[u8], media_type: &str, path: &str| json!({"kind": "file", "content": content(bytes, media_type), "mode": mode_of(work, path)});
    let link = |root: &Path, path: &str, target: &str| json!({"kind": "symlink", "mode": mode_of(root, path), "target": target});
    let expected_entries = json!([
        {"path": "README.md", "operation": "modify", "before": file(README_OLD, 0o644),
         "after": state(README_NEW, "text/markdown", "README.md")},
        {"path": "assets/logo.png", "operation": "add", "after": state(LOGO, "image/png", "assets/logo.png")},
        {"path": "current", "operation": "modify", "before": link(base, "current", "src/old_name.rs"),
         "after": link(work, "current", "src/new_name.rs")},
        {"path": "data/blob.bin", "operation": "modify", "before": file(BLOB_OLD, 0o644),
         "after": state(BLOB_NEW, "application/octet-stream", "data/blob.bin")},
        {"path": "notes/hello.txt", "operation": "add", "after": state(HELLO, "text/plain", "notes/hello.txt")},
        {"path": "notes/readme-link", "operation": "add", "after": link(work, "notes/readme-link", "../README.md")},
        {"path": "obsolete.txt", "operation": "delete", "before": file(OBSOLETE, 0o644)},
        {"path": "scripts/run.sh", "operation": "modify", "before": file(SCRIPT, 0o644),
         "after": state(SCRIPT, "text/plain", "scripts/run.sh")},
        {"path": "src/new_name.rs", "operation": "add", "after": state(RUST, "text/plain", "src/new_name.rs")},
        {"path": "src/old_name.rs", "operation": "delete", "before": file(RUST, 0o640)},
    ]);
    // The modes the run set: `chmod a+x` and a rename that keeps 0640.
    assert_eq!(mode_of(work, "scripts/run.sh"), 0o755);
    assert_eq!(mode_of(work, "src/new_name.rs"), 0o640);

    let changesets = ran.manifest["changesets"].as_array().unwrap();
    assert_eq!(changesets.len(), 1, "{:?}: only the primary workspace changed", ran.runner);
    let changeset = &changesets[0];
    let entries = &changeset["entries"];
    let paths: Vec<&str> = entries.as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, CHANGED);
    for (actual, expected) in entries.as_array().unwrap().iter().zip(expected_entries.as_array().unwrap()) {
        assert_eq!(actual, expected, "{:?}", ran.runner);
    }
    assert_eq!(changeset["id"], "primary");
    assert_eq!(changeset["workspace"], json!({"kind": "primary"}));
    assert_eq!(changeset["stats"], json!({"additions": 4, "modifications": 4, "deletions": 2, "binary_files": 2}));
    let snapshot_digest = changeset["base"]["snapshot_digest"].as_str().unwrap();
    if ran.git {
        assert_eq!(changeset["base"]["git_revision"], json!(git_head(work)));
        assert!(wb_outcomes::is_digest(snapshot_digest));
    } else {
        assert!(changeset["base"].get("git_revision").is_none());
        // The documented snapshot digest of the baseline copy is the recorded base.
        assert_eq!(snapshot_digest, Snapshot::capture(base).unwrap().digest().unwrap());
    }

    // Every after content is in the store with the workspace's bytes.
    for entry in entries.as_array().unwrap() {
        if entry["after"]["kind"] == "file" {
            let path = entry["path"].as_str().unwrap();
            let bytes = ran.store.read(entry["after"]["content"]["digest"].as_str().unwrap()).unwrap();
            assert_eq!(bytes, fs::read(work.join(path)).unwrap(), "{path}");
        }
    }

    // The review diff: the text changes, the mode change, the symlinks; binary files marked, never inlined.
    let review = &changeset["review"];
    let diff_bytes = ran.store.read(review["digest"].as_str().unwrap()).unwrap();
    assert_eq!(*review, content(&diff_bytes, "text/x-diff"));
    let diff = String::from_utf8(diff_bytes).expect("the review diff is text");
    for fragment in [
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n-# Old title\n+# New title\n",
        "diff --git a/assets/logo.png b/assets/logo.png\nnew file mode 100644\nBinary files /dev/null and b/assets/logo.png differ\n",
        "diff --git a/current b/current\n--- a/current\n+++ b/current\n@@ -1 +1 @@\n-src/old_name.rs\n\\ No newline at end of file\n+src/new_name.rs\n",
        "diff --git a/data/blob.bin b/data/blob.bin\nBinary files a/data/blob.bin and b/data/blob.bin differ\n",
        "+hello from the fake runner\n",
        "diff --git a/notes/readme-link b/notes/readme-link\nnew file mode 120000\n",
        "+../README.md\n",
        "diff --git a/obsolete.txt b/obsolete.txt\ndeleted file mode 100644\n--- a/obsolete.txt\n+++ /dev/null\n",
        "-remove me\n",
        "diff --git a/scripts/run.sh b/scripts/run.sh\nold mode 100644\nnew mode 100755\ndiff --git a/src/new_name.rs",
        "diff --git a/src/old_name.rs b/src/old_name.rs\ndeleted file mode 100644\n",
        "+    println!(\"ledger\");\n",
    ] {
        assert!(diff.contains(fragment), "{:?}: the review diff lacks {fragment:?}:\n{diff}", ran.runner);
    }
    assert_eq!(diff.matches("diff --git ").count(), CHANGED.len());
    assert!(!diff.contains('\0') && !diff.contains("dotenv-test-value") && !diff.contains(".env"), "{diff}");

    // The outbox: the undeclared binary artifact with a guessed media type, the declared one with its metadata.
    assert_eq!(
        ran.manifest["artifacts"],
        json!([
            {"id": "artifact_1", "name": "chart.png", "path": "images/chart.png", "content": content(CHART, "image/png")},
            {"id": "artifact_2", "name": "Findings.html", "path": "reports/findings.html",
             "content": content(FINDINGS, "text/html"), "description": "The collected findings"},
        ])
    );
    assert_eq!(ran.store.read(&digest(CHART)).unwrap(), CHART);
    assert_eq!(
        ran.manifest["links"],
        json!([{"id": "link_1", "label": "Implementation PR", "uri": "https://github.com/example/project/pull/42",
                "kind": "pull_request"}])
    );
    assert_eq!(ran.manifest["summary"], "Prepared a findings report");

    // The excluded `.env` is in the workspace but in no entry; the untouched file is in none either.
    assert!(work.join(".env").is_file());
    assert!(!paths.contains(&".env") && !paths.contains(&"keep.txt"));
    // The library reads back what the engine committed.
    let loaded = OutcomeStore::new(&ran.store).load(&ran.id).unwrap();
    assert_eq!(serde_json::to_value(&loaded).unwrap(), ran.manifest);
}

/// Conflicts: every check happens before any write, and the whole apply is rejected.
fn check_conflicts(ran: &Ran) {
    // A local run already edited its workspace: its outcome is `present` and is never applied again.
    let before = tree(&ran.world.work);
    assert_eq!(
        wb_outcomes::apply(&ran.store, &ran.id, None).unwrap_err().to_string(),
        "Outcome changes are already present in the workspace"
    );
    assert_eq!(tree(&ran.world.work), before);
    assert_eq!(ran.receipt(&ran.id)["state"], "present");
    ran.set_pending();
    support::assert_outcomes_schema("application.schema.json", &ran.receipt(&ran.id));

    let conflict = |paths: &str| format!("Outcome conflicts with current workspace content: {paths}");
    type Change = fn(&Path);
    let cases: [(&str, Change, String); 4] = [
        (
            // The targets changed since: content, and a mode alone.
            "modified",
            |copy| {
                put(copy, "README.md", b"# Edited by the user\n", 0o644);
                fs::set_permissions(copy.join("scripts/run.sh"), fs::Permissions::from_mode(0o600)).unwrap();
            },
            conflict("README.md, scripts/run.sh"),
        ),
        (
            // A modified target deleted; a deleted one already gone is not a conflict.
            "deleted",
            |copy| {
                fs::remove_file(copy.join("data/blob.bin")).unwrap();
                fs::remove_file(copy.join("src/old_name.rs")).unwrap();
            },
            conflict("data/blob.bin"),
        ),
        (
            // Added paths that exist meanwhile, a symlink retargeted.
            "added meanwhile",
            |copy| {
                put(copy, "notes/hello.txt", b"someone else's notes\n", 0o644);
                put(copy, "notes/readme-link", b"a file, not a link\n", 0o644);
                fs::remove_file(copy.join("current")).unwrap();
                symlink("keep.txt", copy.join("current")).unwrap();
            },
            conflict("current, notes/hello.txt, notes/readme-link"),
        ),
        (
            // A target replaced by a symlink to a file outside: never written through.
            "symlinked target",
            |copy| {
                fs::remove_file(copy.join("README.md")).unwrap();
                symlink("../../outside/victim.txt", copy.join("README.md")).unwrap();
            },
            conflict("README.md"),
        ),
    ];
    for (name, change, expected) in cases {
        let copy = ran.copy(name);
        change(&copy);
        ran.assert_rejected(&ran.id, &copy, &expected);
    }
    assert_eq!(ran.receipt(&ran.id)["state"], "pending");
}

/// Escapes: unsafe roots and parents in the target, and manifests tampered on disk (`..`, absolute paths,
/// drive letters, backslashes, escaping symlink targets) are rejected before any write.
fn check_escapes(ran: &Ran) {
    let outside = &ran.outside;
    let root = &ran.world.root;

    // The target workspace: a symlinked parent (an existing directory and one the outcome would create), a file
    // where a directory must be, a directory where a file must be, an unsafe or missing root.
    let copy = ran.copy("symlinked-src");
    fs::remove_dir_all(copy.join("src")).unwrap();
    symlink(outside, copy.join("src")).unwrap();
    ran.assert_rejected(
        &ran.id,
        &copy,
        &format!("Outcome destination has an unsafe parent: {}", copy.join("src").display()),
    );
    let copy = ran.copy("symlinked-assets");
    symlink("../../outside", copy.join("assets")).unwrap();
    ran.assert_rejected(
        &ran.id,
        &copy,
        &format!("Outcome destination has an unsafe parent: {}", copy.join("assets").display()),
    );
    let copy = ran.copy("file-parent");
    put(&copy, "notes", b"a file where a directory must be\n", 0o644);
    ran.assert_rejected(
        &ran.id,
        &copy,
        &format!("Outcome destination has an unsafe parent: {}", copy.join("notes").display()),
    );
    let copy = ran.copy("directory-destination");
    fs::remove_file(copy.join("obsolete.txt")).unwrap();
    fs::create_dir(copy.join("obsolete.txt")).unwrap();
    ran.assert_rejected(&ran.id, &copy, "Outcome destination is not a file: obsolete.txt");
    let copy = ran.copy("linked-root");
    let linked = root.join("copies/linked-root-link");
    symlink(&copy, &linked).unwrap();
    ran.assert_rejected(&ran.id, &linked, &format!("Outcome workspace is unavailable or unsafe: {}", linked.display()));
    let missing = root.join("copies/missing");
    assert_eq!(
        ran.apply(&ran.id, &missing).unwrap_err(),
        format!("Outcome workspace is unavailable or unsafe: {}", missing.display())
    );
    assert!(!missing.exists());

    // Manifests tampered on disk. A faithful copy written the same way applies (the control), so each rejection
    // below is the tampering's.
    let outcome = OutcomeStore::new(&ran.store).load(&ran.id).unwrap();
    let control = ran.copy("control");
    let id = ran.write_by_hand(&outcome, &control);
    assert_eq!(ran.apply(&id, &control).unwrap(), ApplyResult { applied: CHANGED.len(), unchanged: 0 });
    assert_eq!(tree(&control), tree(&ran.world.work));

    let escape = outside.join("escape.txt");
    let renamed = |from: &str, to: String| {
        let mut tampered = outcome.clone();
        for entry in &mut tampered.changesets[0].entries {
            if entry.path() == from {
                match entry {
                    Entry::Add { path, .. } | Entry::Modify { path, .. } | Entry::Delete { path, .. } => {
                        *path = to.clone()
                    }
                }
            }
        }
        tampered
    };
    let retargeted = |at: &str, target: String| {
        let mut tampered = outcome.clone();
        for entry in &mut tampered.changesets[0].entries {
            if entry.path() == at
                && let Entry::Add { after: State::Symlink { target: t, .. }, .. } = entry
            {
                *t = target.clone();
            }
        }
        tampered
    };
    let inside = "must stay inside its workspace without `.`, `..` or empty segments";
    let relative = "must be a relative path without backslashes or drive letters";
    let corpus: Vec<(Outcome, String)> = vec![
        (renamed("notes/hello.txt", "../escape.txt".to_owned()), format!("Outcome path {inside}: ../escape.txt")),
        (
            renamed("notes/hello.txt", "notes/../../outside/escape.txt".to_owned()),
            format!("Outcome path {inside}: notes/../../outside/escape.txt"),
        ),
        (renamed("obsolete.txt", "./obsolete.txt".to_owned()), format!("Outcome path {inside}: ./obsolete.txt")),
        (renamed("README.md", "notes//README.md".to_owned()), format!("Outcome path {inside}: notes//README.md")),
        (
            renamed("notes/hello.txt", escape.display().to_string()),
            format!("Outcome path {relative}: {}", escape.display()),
        ),
        (renamed("notes/hello.txt", "C:/escape.txt".to_owned()), format!("Outcome path {relative}: C:/escape.txt")),
        (
            renamed("notes/hello.txt", "..\\..\\outside\\escape.txt".to_owned()),
            format!("Outcome path {relative}: ..\\..\\outside\\escape.txt"),
        ),
        (
            retargeted("notes/readme-link", "../../outside/victim.txt".to_owned()),
            "Escaping symlink is not allowed in outcome: notes/readme-link".to_owned(),
        ),
        (
            retargeted("notes/readme-link", outside.join("victim.txt").display().to_string()),
            "Escaping symlink is not allowed in outcome: notes/readme-link".to_owned(),
        ),
        (
            retargeted("notes/readme-link", "../notes/../../outside".to_owned()),
            "Escaping symlink is not allowed in outcome: notes/readme-link".to_owned(),
        ),
    ];
    for (index, (tampered, expected)) in corpus.into_iter().enumerate() {
        let copy = ran.copy(&format!("tampered-{index}"));
        let id = ran.write_by_hand(&tampered, &copy);
        ran.assert_rejected(&id, &copy, &expected);
        assert!(!escape.exists() && !root.join("escape.txt").exists() && !root.join("copies/escape.txt").exists());
    }
}

/// The round trip: the baseline plus the outcome is the workspace after the run; retries skip what is applied
/// and never overwrite later edits; entries already in their after state count as unchanged.
fn check_round_trip(ran: &Ran) {
    let work = &ran.world.work;
    let copy = ran.copy("round-trip");
    assert_eq!(ran.apply(&ran.id, &copy).unwrap(), ApplyResult { applied: CHANGED.len(), unchanged: 0 });
    assert_eq!(tree(&copy), tree(work), "{:?}: the applied copy is the workspace after the run", ran.runner);
    assert_eq!(Snapshot::capture(&copy).unwrap().digest().unwrap(), Snapshot::capture(work).unwrap().digest().unwrap());
    assert!(!copy.join("obsolete.txt").exists() && !copy.join("src/old_name.rs").exists());
    assert!(!copy.join(".env").exists(), "excluded files are not returned");
    assert_eq!(fs::read_link(copy.join("notes/readme-link")).unwrap(), Path::new("../README.md"));
    assert_eq!(fs::read(copy.join("data/blob.bin")).unwrap(), BLOB_NEW);
    let receipt = ran.receipt(&ran.id);
    support::assert_outcomes_schema("application.schema.json", &receipt);
    assert_eq!(receipt["state"], "applied");
    assert!(receipt["applied_at"].is_string());
    assert!(ran.transactions_empty(&ran.id) && !ran.dir(&ran.id).join("apply.lock").exists());
    assert_eq!(leftovers(&copy), Vec::<String>::new());

    // A retry: everything is in its after state.
    assert_eq!(ran.apply(&ran.id, &copy).unwrap(), ApplyResult { applied: 0, unchanged: CHANGED.len() });
    // Later unrelated edits stay.
    put(&copy, "keep.txt", b"edited later\n", 0o644);
    put(&copy, "later.txt", b"added later\n", 0o644);
    let edited = tree(&copy);
    assert_eq!(ran.apply(&ran.id, &copy).unwrap(), ApplyResult { applied: 0, unchanged: CHANGED.len() });
    assert_eq!(tree(&copy), edited);
    // A later edit of an applied path is never overwritten: once applied, it conflicts.
    put(&copy, "README.md", b"# Edited after the apply\n", 0o644);
    fs::remove_file(copy.join("notes/readme-link")).unwrap();
    ran.assert_rejected(
        &ran.id,
        &copy,
        "Outcome conflicts with current workspace content: README.md, notes/readme-link",
    );

    // Entries already in their after state are skipped (counted unchanged), the rest applied.
    ran.set_pending();
    let partial = ran.copy("partial");
    put(&partial, "README.md", README_NEW, 0o644);
    fs::remove_file(partial.join("obsolete.txt")).unwrap();
    assert_eq!(ran.apply(&ran.id, &partial).unwrap(), ApplyResult { applied: CHANGED.len() - 2, unchanged: 2 });
    assert_eq!(tree(&partial), tree(work));
    assert_eq!(ran.receipt(&ran.id)["state"], "applied");
}

/// Export: `outcome.json`, the after-files with their modes and symlinks, `changes.diff`, the artifacts (0600);
/// deletions only in the manifest; the receipt and manifest untouched; an existing destination refused.
fn check_export(ran: &Ran) {
    let dir = ran.dir(&ran.id);
    let manifest_bytes = fs::read(dir.join("outcome.json")).unwrap();
    let receipt_bytes = fs::read(dir.join("application.json")).unwrap();
    let parent = ran.world.dir("exports");
    let dest = parent.join("outcome");
    assert_eq!(wb_outcomes::export(&ran.store, &ran.id, &dest).unwrap(), dest);
    assert_eq!(fs::read(dest.join("outcome.json")).unwrap(), manifest_bytes);
    support::assert_outcomes_schema("outcome.schema.json", &read_json(&dest.join("outcome.json")));

    let exported = tree(&dest);
    let top: Vec<&String> = exported.keys().filter(|p| !p.contains('/')).collect();
    assert_eq!(top, ["artifacts", "changesets", "outcome.json"]);
    // The after-files are exactly the workspace's after-state of every added or modified path.
    let work = tree(&ran.world.work);
    let files: BTreeMap<String, Node> = exported
        .iter()
        .filter_map(|(path, node)| {
            let rest = path.strip_prefix("changesets/primary/files/")?;
            (*node != Node::Dir).then(|| (rest.to_owned(), node.clone()))
        })
        .collect();
    let expected: BTreeMap<String, Node> = CHANGED
        .iter()
        .filter(|p| !matches!(**p, "obsolete.txt" | "src/old_name.rs"))
        .map(|p| ((*p).to_owned(), work[*p].clone()))
        .collect();
    assert_eq!(files, expected, "{:?}", ran.runner);
    let review = ran.manifest["changesets"][0]["review"]["digest"].as_str().unwrap();
    assert_eq!(
        exported["changesets/primary/changes.diff"],
        Node::File { bytes: ran.store.read(review).unwrap(), mode: 0o600 }
    );
    assert_eq!(exported["artifacts/images/chart.png"], Node::File { bytes: CHART.to_vec(), mode: 0o600 });
    assert_eq!(exported["artifacts/reports/findings.html"], Node::File { bytes: FINDINGS.to_vec(), mode: 0o600 });
    let artifacts: Vec<&String> =
        exported.iter().filter(|(p, n)| p.starts_with("artifacts/") && **n != Node::Dir).map(|(p, _)| p).collect();
    assert_eq!(artifacts, ["artifacts/images/chart.png", "artifacts/reports/findings.html"]);

    // Inspecting and exporting change nothing; the destination must not exist.
    assert_eq!(fs::read(dir.join("application.json")).unwrap(), receipt_bytes);
    assert_eq!(fs::read(dir.join("outcome.json")).unwrap(), manifest_bytes);
    assert_eq!(
        wb_outcomes::export(&ran.store, &ran.id, &dest).unwrap_err().to_string(),
        format!("Outcome export destination already exists: {}", dest.display())
    );
    let siblings: Vec<String> =
        fs::read_dir(&parent).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect();
    assert_eq!(siblings, ["outcome"], "no temporary export directory is left");
}

fn round_trip(runner: Runner, git: bool) {
    let ran = run_round_trip(runner, git);
    check_manifest(&ran);
    check_conflicts(&ran);
    check_escapes(&ran);
    check_round_trip(&ran);
    check_export(&ran);
}

#[test]
fn opencode_round_trip() {
    round_trip(Runner::OpenCode, false);
}

#[test]
fn claude_code_round_trip() {
    round_trip(Runner::ClaudeCode, false);
}

#[test]
fn pi_round_trip() {
    round_trip(Runner::Pi, false);
}

#[test]
fn opencode_round_trip_in_a_git_workspace() {
    round_trip(Runner::OpenCode, true);
}

#[test]
fn claude_code_round_trip_in_a_git_workspace() {
    round_trip(Runner::ClaudeCode, true);
}

#[test]
fn pi_round_trip_in_a_git_workspace() {
    round_trip(Runner::Pi, true);
}

/// A run that leaves an escaping symlink (`..` past the root, an absolute target) in its workspace cannot
/// return it: collection fails visibly with the facts' text, before the terminal event, and nothing is committed.
#[test]
fn an_escaping_symlink_fails_the_collection() {
    let cases = [
        (Runner::OpenCode, "ln -s ../outside/victim.txt escape", "escape"),
        (Runner::ClaudeCode, "ln -s /etc/hostname absolute", "absolute"),
        (Runner::Pi, "mkdir -p notes && ln -s ../../outside notes/deep", "notes/deep"),
    ];
    for (runner, command, path) in cases {
        let world = runner.world();
        let script = support::stream_with_calls(
            &world,
            runner.name(),
            "escaping-symlink",
            &[ToolCall::Shell { command: command.to_owned() }],
        );
        let (result, events) = run(&runner.options(&world, &script));
        assert_eq!(result.ending, Ending::Completed, "{runner:?}: {events:#?}");
        assert!(fs::symlink_metadata(world.work.join(path)).unwrap().file_type().is_symlink());
        support::check_events(&events, runner.name());
        let types = support::types(&events);
        let n = types.len();
        assert_eq!(types[n - 2..], ["outcome.failed", "run.completed"], "{runner:?}");
        assert_eq!(events[n - 2]["data"]["message"], format!("Escaping symlink is not allowed in outcome: {path}"));
        assert_eq!(result.outcome_id, None);
        let outcomes = world.home.join(".workbench/outcomes");
        assert_eq!(fs::read_dir(&outcomes).map(|d| d.count()).unwrap_or(0), 0, "{runner:?}: nothing committed");
    }
}

/// In a Git workspace whose checkout converts line endings (`.gitattributes` `eol=crlf`), a clean tracked file's
/// bytes differ from its index blob: the `before` fingerprint is still the bytes the workspace had, so the
/// outcome applies to a copy of the baseline.
#[test]
fn a_git_checkout_with_converted_line_endings_round_trips() {
    const OLD: &[u8] = b"@echo off\r\necho old\r\n";
    const NEW: &[u8] = b"@echo off\r\necho new\r\n";
    let runner = Runner::Pi;
    let world = runner.world();
    put(&world.work, ".gitattributes", b"*.bat text eol=crlf\n", 0o644);
    put(&world.work, "build.bat", OLD, 0o644);
    git(&world.work, &["init", "-q"]);
    git(&world.work, &["add", "-A"]);
    git(&world.work, &["commit", "-q", "-m", "base"]);
    let status = Command::new("git").arg("-C").arg(&world.work).args(["status", "--porcelain"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "", "the checkout is clean");
    let blob = Command::new("git").arg("-C").arg(&world.work).args(["cat-file", "-p", ":build.bat"]).output().unwrap();
    assert_eq!(blob.stdout, b"@echo off\necho old\n", "the index blob has LF line endings");
    let baseline = world.root.join("baseline");
    copy_tree_without_git(&world.work, &baseline);

    let calls = [ToolCall::Shell { command: format!("printf '{}' > build.bat", printf_bytes(NEW)) }];
    let script = support::stream_with_calls(&world, runner.name(), "crlf", &calls);
    let (result, events) = run(&runner.options(&world, &script));
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    let id = result.outcome_id.expect("an outcome");
    let home = world.home.join(".workbench");
    let store = ContentStore::open(&home).unwrap();
    let manifest = read_json(&home.join("outcomes").join(&id).join("outcome.json"));
    support::assert_outcomes_schema("outcome.schema.json", &manifest);
    let entry = manifest["changesets"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "build.bat")
        .expect("build.bat changed")
        .clone();
    assert_eq!(entry["before"], json!({"kind": "file", "digest": digest(OLD), "mode": 0o644, "size_bytes": OLD.len()}));

    OutcomeStore::new(&store).write_receipt(&Receipt::new(&id, ReceiptState::Pending)).unwrap();
    let result = wb_outcomes::apply(&store, &id, Some(&baseline)).map_err(|e| e.to_string());
    assert_eq!(result.map(|r| r.unchanged), Ok(0));
    assert_eq!(tree(&baseline), tree(&world.work));
}

/// A run that edits a named read-write workspace (Claude Code's `docs`) returns a changeset for it. Applying with
/// a primary override leaves the named changeset bound where it was recorded (already in its after state there:
/// unchanged); a conflict there is labelled `docs:<path>`; without that binding the outcome is refused.
#[test]
fn a_named_workspace_changeset_round_trips() {
    const GUIDE_OLD: &[u8] = b"# Guide\n\nOld text.\n";
    const GUIDE_NEW: &[u8] = b"# Guide\n\nNew text.\n";
    let runner = Runner::ClaudeCode;
    let world = runner.world();
    let docs = world.root.join("docs");
    put(&docs, "guide.md", GUIDE_OLD, 0o644);
    put(&docs, "gone.md", b"remove me too\n", 0o644);
    let baseline = world.root.join("baseline");
    copy_tree(&world.work, &baseline);
    let unbound_copy = world.root.join("unbound");
    copy_tree(&world.work, &unbound_copy);
    let command = format!(
        "printf '{}' > \"$WORKBENCH_WORKSPACE_DOCS/guide.md\" && rm \"$WORKBENCH_WORKSPACE_DOCS/gone.md\"",
        printf_bytes(GUIDE_NEW)
    );
    let script = support::stream_with_calls(&world, runner.name(), "named", &[ToolCall::Shell { command }]);
    let (result, events) = run(&runner.options(&world, &script));
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    support::check_events(&events, runner.name());
    let id = result.outcome_id.expect("an outcome");
    let home = world.home.join(".workbench");
    let store = ContentStore::open(&home).unwrap();
    let manifest = read_json(&home.join("outcomes").join(&id).join("outcome.json"));
    support::assert_outcomes_schema("outcome.schema.json", &manifest);
    let changesets = manifest["changesets"].as_array().unwrap();
    let ids: Vec<&str> = changesets.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["primary", "workspace_docs"]);
    let named = &changesets[1];
    assert_eq!(named["workspace"], json!({"kind": "named", "name": "docs"}));
    assert_eq!(
        named["entries"],
        json!([
            {"path": "gone.md", "operation": "delete",
             "before": {"kind": "file", "digest": digest(b"remove me too\n"), "mode": 0o644, "size_bytes": 14}},
            {"path": "guide.md", "operation": "modify",
             "before": {"kind": "file", "digest": digest(GUIDE_OLD), "mode": 0o644, "size_bytes": GUIDE_OLD.len()},
             "after": {"kind": "file", "mode": 0o644,
                       "content": {"digest": digest(GUIDE_NEW), "media_type": "text/markdown", "size_bytes": GUIDE_NEW.len()}}},
        ])
    );
    assert_eq!(named["stats"], json!({"additions": 0, "modifications": 1, "deletions": 1, "binary_files": 0}));

    OutcomeStore::new(&store).write_receipt(&Receipt::new(&id, ReceiptState::Pending)).unwrap();
    let apply = |id: &str, target: Option<&Path>| wb_outcomes::apply(&store, id, target).map_err(|e| e.to_string());
    // A later edit in the named workspace conflicts, labelled with the workspace's name; nothing changes.
    put(&docs, "guide.md", b"edited by the user\n", 0o644);
    let before = (tree(&baseline), tree(&docs));
    assert_eq!(
        apply(&id, Some(&baseline)).unwrap_err(),
        "Outcome conflicts with current workspace content: docs:guide.md"
    );
    assert_eq!((tree(&baseline), tree(&docs)), before);
    // The named workspace as the run left it: its entries are unchanged, the primary ones applied to the copy.
    put(&docs, "guide.md", GUIDE_NEW, 0o644);
    assert_eq!(apply(&id, Some(&baseline)).unwrap(), ApplyResult { applied: 3, unchanged: 2 });
    assert_eq!(tree(&baseline), tree(&world.work));

    // Without a binding for `docs`, nothing is applied.
    let outcome = OutcomeStore::new(&store).load(&id).unwrap();
    let bindings = WorkspaceBindings { primary: Some(unbound_copy.clone()), named: BTreeMap::new() };
    let unbound = write_by_hand(&home, &outcome, &bindings);
    let before = tree(&unbound_copy);
    assert_eq!(apply(&unbound, None).unwrap_err(), "Outcome requires named workspace: docs");
    assert_eq!(tree(&unbound_copy), before);
}

/// Files a changeset cannot name (not UTF-8, control characters, backslashes...) are never dropped silently:
/// the outcome carries a warning for each one the run created, changed or deleted (a rename to such a name is
/// the deletion in the changeset plus a warning), none for those it left alone; the names in the messages are
/// escaped, and the manifest stays valid.
#[test]
fn unrepresentable_names_are_warned_about() {
    use std::os::unix::ffi::OsStrExt;
    const BACKSLASH: &str = "a changeset path must be a relative path without backslashes or drive letters";
    const CONTROL: &str = "a changeset path must not contain control characters";
    const UTF8: &str = "a changeset path must be UTF-8";
    let message = |name: &str, what: &str, reason: &str| {
        format!(
            "{name} is not in the outcome: it was {what} during the run, but its name cannot be carried by a \
             changeset ({reason})"
        )
    };
    let expected = [
        message("back\\\\slash.txt", "created", BACKSLASH),
        message("bell-\\u{7}.txt", "created", CONTROL),
        message("esc-\\u{1b}[31m.txt", "created", CONTROL),
        message("latin1-\\xe9.txt", "created", UTF8),
        message("pre-edit-\\u{1}.txt", "changed", CONTROL),
        message("pre-gone-\\xff.txt", "deleted", UTF8),
        message("renamed-\\u{1}.txt", "created", CONTROL),
    ];
    for (runner, in_git) in [(Runner::OpenCode, false), (Runner::ClaudeCode, false), (Runner::Pi, true)] {
        let world = runner.world();
        let raw = |name: &[u8]| world.work.join(std::ffi::OsStr::from_bytes(name));
        fs::write(raw(b"pre-edit-\x01.txt"), "one").unwrap();
        fs::write(raw(b"pre-gone-\xff.txt"), "bye").unwrap();
        fs::write(raw(b"same-\x02.txt"), "left alone").unwrap();
        fs::write(raw(b"rename-me.txt"), "renamed by the run\n").unwrap();
        if in_git {
            git(&world.work, &["init", "-q"]);
            git(&world.work, &["add", "-A"]);
            git(&world.work, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]);
        }
        let command = [
            "printf 'x' > \"$(printf 'latin1-\\351.txt')\"",
            "printf 'y' > \"$(printf 'bell-\\007.txt')\"",
            "printf 'e' > \"$(printf 'esc-\\033[31m.txt')\"",
            "printf 'b' > 'back\\slash.txt'",
            "printf 'two!' > \"$(printf 'pre-edit-\\001.txt')\"",
            "rm \"$(printf 'pre-gone-\\377.txt')\"",
            "mv rename-me.txt \"$(printf 'renamed-\\001.txt')\"",
            "printf 'z' > fine.txt",
        ]
        .join(" && ");
        let script =
            support::stream_with_calls(&world, runner.name(), "unrepresentable", &[ToolCall::Shell { command }]);
        let (result, events) = run(&runner.options(&world, &script));
        assert_eq!(result.ending, Ending::Completed, "{runner:?}: {events:#?}");
        assert!(raw(b"renamed-\x01.txt").exists() && !raw(b"pre-gone-\xff.txt").exists(), "{runner:?}: {events:#?}");
        let id = result.outcome_id.clone().unwrap_or_else(|| panic!("{runner:?}: {events:#?}"));
        let manifest: Value = serde_json::from_slice(
            &fs::read(world.home.join(".workbench/outcomes").join(&id).join("outcome.json")).unwrap(),
        )
        .unwrap();
        support::assert_outcomes_schema("outcome.schema.json", &manifest);
        let warnings: Vec<(&str, &str)> = manifest["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["code"].as_str().unwrap(), w["message"].as_str().unwrap()))
            .collect();
        assert!(warnings.iter().all(|(code, _)| *code == "unrepresentable_path"), "{warnings:?}");
        let messages: Vec<&str> = warnings.iter().map(|(_, m)| *m).collect();
        assert_eq!(messages, expected, "{runner:?}");
        // Escaped: no raw control character (nor escape sequence) in any message.
        assert!(messages.iter().all(|m| !m.chars().any(char::is_control)), "{messages:?}");
        let entries: Vec<(&str, &str)> = manifest["changesets"][0]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["operation"].as_str().unwrap(), e["path"].as_str().unwrap()))
            .collect();
        // The rename still records the deletion of the old name.
        assert!(entries.contains(&("add", "fine.txt")), "{runner:?}: {entries:?}");
        assert!(entries.contains(&("delete", "rename-me.txt")), "{runner:?}: {entries:?}");
        assert!(
            !entries.iter().any(|(_, p)| ["latin1-", "bell-", "esc-", "back", "pre-", "renamed-", "same-"]
                .iter()
                .any(|prefix| p.starts_with(prefix))),
            "{entries:?}"
        );
        let available = events.iter().find(|e| e["type"] == "outcome.available").unwrap();
        assert_eq!(available["data"]["warnings"], expected.len());
    }
}
