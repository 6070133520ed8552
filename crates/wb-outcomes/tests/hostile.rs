//! Hostile workspaces (issue 13): what an agent can write into its workspace never runs on the host, never
//! reaches outside the workspace through an outcome, and never wedges the snapshot.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use tempfile::TempDir;
use wb_outcomes::{Changeset, ContentStore, OutcomeBudget, Snapshot, WorkspaceRef};
use wb_testsupport::{git, write};

/// A Git workspace with one commit, a store, and a scratch directory (outside the workspace) for the marker
/// command the agent's configuration names.
struct Hostile {
    _dirs: (TempDir, TempDir, TempDir),
    root: PathBuf,
    scratch: PathBuf,
    store: ContentStore,
}

impl Hostile {
    fn new() -> Hostile {
        let (ws, home, scratch) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = ws.path().to_path_buf();
        git(&root, &["init", "-q"]);
        write(&root, "a.txt", "one\n");
        write(&root, "src/lib.rs", "fn a() {}\n");
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "init"]);
        let store = ContentStore::open(home.path()).unwrap();
        let scratch_path = scratch.path().to_path_buf();
        Hostile { _dirs: (ws, home, scratch), root, scratch: scratch_path, store }
    }

    fn marker(&self) -> PathBuf {
        self.scratch.join("marker")
    }

    /// A command that leaves the marker, then copies its input to its output (`cat`) or fails.
    fn command(&self, name: &str, then: &str) -> String {
        let path = self.scratch.join(name);
        fs::write(&path, format!("#!/bin/sh\ntouch '{}'\n{then}\n", self.marker().display())).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn config(&self, key: &str, value: &str) {
        git(&self.root, &["config", key, value]);
    }

    /// A tracked file whose stat data no longer matches the index (same size, other mtime): Git would compare
    /// its contents, through the configured filters.
    fn touch_tracked(&self) {
        let file = fs::File::options().write(true).open(self.root.join("a.txt")).unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000)).unwrap();
    }

    /// Baseline, an edit, capture and changeset, as a run does; the marker must never appear and the snapshot
    /// must still be right.
    fn snapshot_runs_nothing(&self) {
        let before = Snapshot::baseline(&self.root, &self.store).unwrap();
        assert!(before.is_git());
        write(&self.root, "src/lib.rs", "fn b() {}\n");
        let after = Snapshot::capture(&self.root).unwrap();
        let changeset = Changeset::between(
            "primary",
            WorkspaceRef::Primary,
            &before,
            &after,
            &self.store,
            &mut OutcomeBudget::new(),
        )
        .unwrap();
        assert!(changeset.entries.iter().any(|e| e.path() == "src/lib.rs"), "{:?}", changeset.entries);
        assert!(!self.marker().exists(), "the workspace's Git configuration ran a command on the host");
    }
}

#[test]
fn git_fsmonitor_of_the_workspace_is_not_run() {
    let h = Hostile::new();
    h.config("core.fsmonitor", &h.command("fsmonitor", "exit 1"));
    h.snapshot_runs_nothing();
}

#[test]
fn git_fsmonitor_from_an_included_file_is_not_run() {
    let h = Hostile::new();
    fs::write(h.root.join(".git/agent.cfg"), format!("[core]\n\tfsmonitor = {}\n", h.command("fsmonitor", "exit 1")))
        .unwrap();
    h.config("include.path", "agent.cfg");
    h.snapshot_runs_nothing();
}

#[test]
fn git_fsmonitor_from_an_include_if_is_not_run() {
    let h = Hostile::new();
    fs::write(h.scratch.join("agent.cfg"), format!("[core]\n\tfsmonitor = {}\n", h.command("fsmonitor", "exit 1")))
        .unwrap();
    h.config("includeIf.gitdir:/.path", &h.scratch.join("agent.cfg").to_string_lossy());
    h.snapshot_runs_nothing();
}

#[test]
fn git_clean_filter_from_gitattributes_is_not_run() {
    let h = Hostile::new();
    write(&h.root, ".gitattributes", "* filter=agent\n");
    git(&h.root, &["add", ".gitattributes"]);
    git(&h.root, &["commit", "-q", "-m", "attributes"]);
    h.config("filter.agent.clean", &h.command("clean", "exec cat"));
    h.config("filter.agent.smudge", &h.command("smudge", "exec cat"));
    h.touch_tracked();
    h.snapshot_runs_nothing();
}

#[test]
fn git_process_filter_from_info_attributes_is_not_run() {
    let h = Hostile::new();
    write(&h.root, ".git/info/attributes", "* filter=agent\n");
    h.config("filter.agent.process", &h.command("process", "exit 1"));
    h.config("filter.agent.required", "true");
    h.touch_tracked();
    h.snapshot_runs_nothing();
}

#[test]
fn git_textconv_external_diff_pager_and_editor_are_not_run() {
    let h = Hostile::new();
    write(&h.root, ".git/info/attributes", "* diff=agent\n");
    h.config("diff.agent.textconv", &h.command("textconv", "exec cat"));
    h.config("diff.agent.command", &h.command("diff-command", "exit 0"));
    h.config("diff.external", &h.command("external", "exit 0"));
    h.config("core.pager", &h.command("pager", "exec cat"));
    h.config("core.editor", &h.command("editor", "exit 0"));
    h.config("gpg.program", &h.command("gpg", "exit 1"));
    h.touch_tracked();
    h.snapshot_runs_nothing();
}

#[test]
fn git_hooks_are_not_run() {
    let h = Hostile::new();
    let hooks = h.root.join(".git/hooks");
    let names = ["post-index-change", "post-checkout", "pre-commit", "reference-transaction", "fsmonitor-watchman"];
    let hook = h.command("hook", "exit 0");
    for name in names {
        fs::copy(&hook, hooks.join(name)).unwrap();
    }
    h.config("core.hooksPath", &hooks.to_string_lossy());
    h.touch_tracked();
    h.snapshot_runs_nothing();
}

/// A missing blob in a partial clone whose promisor remote is an `ext::` command (allowed by the repository's
/// own `protocol.ext.allow`) or an SSH URL with the agent's `core.sshCommand`: nothing is fetched, nothing runs.
#[test]
fn git_lazy_fetch_through_the_agents_transport_is_not_run() {
    for (url, key, value) in
        [("ext::{cmd} %S", "protocol.ext.allow", "always"), ("ssh://agent/x", "core.sshCommand", "{cmd}")]
    {
        let h = Hostile::new();
        let cmd = h.command("transport", "exit 1");
        write(&h.root, "ghost.txt", "ghost\n");
        git(
            &h.root,
            &["update-index", "--add", "--cacheinfo", "100644,0123456789abcdef0123456789abcdef01234567,ghost.txt"],
        );
        h.config("core.repositoryformatversion", "1");
        h.config("extensions.partialClone", "origin");
        h.config("remote.origin.url", &url.replace("{cmd}", &cmd));
        h.config("remote.origin.promisor", "true");
        h.config("protocol.allow", "always");
        h.config(key, &value.replace("{cmd}", &cmd));
        h.snapshot_runs_nothing();
    }
}

/// Without `git ls-files -m` (which would run the filters), a tracked file whose stat data changed is settled by
/// hashing its raw bytes: a touched clean file is still given back from its blob, a same-size edit is not.
#[test]
fn stat_changes_are_settled_by_the_raw_bytes() {
    let h = Hostile::new();
    h.touch_tracked();
    write(&h.root, "src/lib.rs", "fn z() {}\n");
    let before = Snapshot::baseline(&h.root, &h.store).unwrap();
    assert_eq!(before.hashed_paths(), ["src/lib.rs"]);
    fs::remove_file(h.root.join("a.txt")).unwrap();
    fs::remove_file(h.root.join("src/lib.rs")).unwrap();
    let after = Snapshot::capture(&h.root).unwrap();
    let changeset =
        Changeset::between("primary", WorkspaceRef::Primary, &before, &after, &h.store, &mut OutcomeBudget::new())
            .unwrap();
    let digests: Vec<String> = changeset
        .entries
        .iter()
        .map(|e| match e.before() {
            Some(wb_outcomes::Fingerprint::File { digest, .. }) => digest.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        digests,
        [b"one\n".as_slice(), b"fn z() {}\n"].map(|b| format!("sha256:{}", wb_outcomes::sha256_hex(b)))
    );
}

fn between(store: &ContentStore, before: &Snapshot, after: &Snapshot) -> wb_outcomes::Result<Changeset> {
    Changeset::between("primary", WorkspaceRef::Primary, before, after, store, &mut OutcomeBudget::new())
}

/// A non-Git workspace (or a Git one) with `files`, its store and baseline.
fn workspace(files: &[(&str, &str)], in_git: bool) -> (TempDir, TempDir, ContentStore) {
    let ws = tempfile::tempdir().unwrap();
    for (path, content) in files {
        write(ws.path(), path, content);
    }
    if in_git {
        git(ws.path(), &["init", "-q"]);
        git(ws.path(), &["add", "-A"]);
        git(ws.path(), &["commit", "-q", "-m", "init"]);
    }
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    (ws, home, store)
}

/// `b -> .` makes `b/b/../..` the workspace's parent: a target that is inside only when counted lexically is
/// judged through the links the run made, and through links the snapshot leaves out (`node_modules`).
#[test]
fn symlink_chains_out_of_the_workspace_are_not_captured() {
    for (links, escaping) in [
        (&[(".", "b"), ("b/b/../../etc", "c")][..], "c"),
        (&[(".", "d/b"), ("b/b/../../../etc", "d/c")][..], "d/c"),
        (&[("/", "node_modules/x"), ("node_modules/x/etc", "c")][..], "c"),
    ] {
        let (ws, _home, store) = workspace(&[("d/keep.txt", "keep\n")], false);
        let before = Snapshot::baseline(ws.path(), &store).unwrap();
        for (target, link) in links {
            fs::create_dir_all(ws.path().join(link).parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target, ws.path().join(link)).unwrap();
        }
        let after = Snapshot::capture(ws.path()).unwrap();
        match between(&store, &before, &after) {
            Err(wb_outcomes::Error::EscapingSymlink(path)) => assert_eq!(path, escaping),
            other => panic!("{links:?}: {other:?}"),
        }
    }
    // A chain that stays inside is still recorded.
    let (ws, _home, store) = workspace(&[("d/keep.txt", "keep\n")], false);
    let before = Snapshot::baseline(ws.path(), &store).unwrap();
    std::os::unix::fs::symlink("d", ws.path().join("b")).unwrap();
    std::os::unix::fs::symlink("b/../d/keep.txt", ws.path().join("c")).unwrap();
    let after = Snapshot::capture(ws.path()).unwrap();
    assert_eq!(between(&store, &before, &after).unwrap().entries.len(), 2);
}

/// An outcome written by hand (not by capture) with the chain: it does not validate, so it is neither exported
/// nor applied.
#[test]
fn symlink_chains_in_a_manifest_are_neither_exported_nor_applied() {
    use wb_outcomes::{Base, Completeness, Entry, Outcome, Receipt, ReceiptState, State, Stats, WorkspaceBindings};
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let target = tempfile::tempdir().unwrap();
    let link = |path: &str, target: &str| Entry::Add {
        path: path.to_owned(),
        after: State::Symlink { mode: 0o777, target: target.to_owned() },
    };
    let mut outcome = Outcome::new("wb_abcdefghij0123456789", Completeness::Complete);
    outcome.changesets.push(Changeset {
        id: "primary".to_owned(),
        workspace: WorkspaceRef::Primary,
        base: Base { snapshot_digest: format!("sha256:{}", "0".repeat(64)), git_revision: None },
        entries: vec![link("b", "."), link("c", "b/b/../../etc")],
        review: None,
        stats: Stats { additions: 2, ..Stats::default() },
    });
    assert_eq!(outcome.validate().unwrap_err().to_string(), "Escaping symlink is not allowed in outcome: c");
    let dir = home.path().join("outcomes").join(&outcome.id);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("outcome.json"), serde_json::to_string_pretty(&outcome).unwrap()).unwrap();
    let receipt = Receipt::new(&outcome.id, ReceiptState::Pending);
    fs::write(dir.join("application.json"), serde_json::to_string_pretty(&receipt).unwrap()).unwrap();
    let bindings = WorkspaceBindings { primary: Some(target.path().to_path_buf()), ..WorkspaceBindings::default() };
    fs::write(dir.join("workspaces.json"), serde_json::to_string(&bindings).unwrap()).unwrap();

    let exported = home.path().join("exported");
    assert!(matches!(wb_outcomes::export(&store, &outcome.id, &exported), Err(wb_outcomes::Error::EscapingSymlink(_))));
    assert!(!exported.exists());
    assert!(matches!(wb_outcomes::apply(&store, &outcome.id, None), Err(wb_outcomes::Error::EscapingSymlink(_))));
    assert!(fs::symlink_metadata(target.path().join("c")).is_err(), "the link was applied");
}

/// A directory replaced by a file and a file by a directory are a deletion and an addition, recorded with the
/// unrelated edit (not a failed outcome).
#[test]
fn replacing_a_directory_with_a_file_and_back_is_recorded() {
    use wb_outcomes::Entry;
    for in_git in [false, true] {
        let files = [("dir/inner.txt", "inner\n"), ("file", "was a file\n"), ("other.txt", "one\n")];
        let (ws, _home, store) = workspace(&files, in_git);
        let root = ws.path();
        let before = Snapshot::baseline(root, &store).unwrap();
        fs::remove_dir_all(root.join("dir")).unwrap();
        write(root, "dir", "now a file\n");
        fs::remove_file(root.join("file")).unwrap();
        write(root, "file/inner.txt", "now a directory\n");
        write(root, "other.txt", "two\n");
        let after = Snapshot::capture(root).unwrap();
        let changeset = between(&store, &before, &after).unwrap_or_else(|e| panic!("in Git: {in_git}: {e}"));
        let kinds: Vec<(&str, &str)> = changeset
            .entries
            .iter()
            .map(|e| {
                let kind = match e {
                    Entry::Add { .. } => "add",
                    Entry::Modify { .. } => "modify",
                    Entry::Delete { .. } => "delete",
                };
                (e.path(), kind)
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("dir", "add"),
                ("dir/inner.txt", "delete"),
                ("file", "delete"),
                ("file/inner.txt", "add"),
                ("other.txt", "modify")
            ],
            "in Git: {in_git}"
        );
        // Both paths present in one state still conflict.
        let mut broken = changeset.clone();
        broken.entries.retain(|e| e.path() != "dir/inner.txt");
        broken
            .entries
            .push(Entry::Add { path: "dir/x".to_owned(), after: changeset.entries[0].after().unwrap().clone() });
        broken.stats.deletions -= 1;
        broken.stats.additions += 1;
        assert_eq!(broken.validate().unwrap_err().to_string(), "Outcome change file and directory paths conflict");
    }
}

/// A workspace that contains the Workbench home (or is it) never captures the store: not at baseline (which
/// writes blobs there), not after (the outcome's own files), in Git or not.
#[test]
fn a_workbench_home_inside_the_workspace_is_never_captured() {
    for (in_git, home_at) in [(false, ".wbhome"), (true, ".wbhome"), (false, "")] {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        write(root, "src/a.txt", "a\n");
        if in_git {
            git(root, &["init", "-q"]);
        }
        let home = root.join(home_at);
        let store = ContentStore::open(&home).unwrap();
        write(&home, "outcomes/wbo_x/outcome.json", "{}\n");
        write(&home, "cache/baselines/x", "x\n");
        let before = Snapshot::baseline(root, &store).unwrap();
        write(root, "src/a.txt", "b\n");
        write(&home, "runs/wb_x/outbox/report.txt", "report\n");
        for after in [Snapshot::capture_excluding_home(root, &home).unwrap(), Snapshot::capture(root).unwrap()] {
            let changeset = between(&store, &before, &after).unwrap();
            let paths: Vec<&str> = changeset.entries.iter().map(|e| e.path()).collect();
            assert_eq!(paths, ["src/a.txt"], "in Git: {in_git}, home at {home_at:?}");
        }
        let listed: Vec<&String> = before.files().keys().collect();
        assert_eq!(listed, ["src/a.txt"], "in Git: {in_git}, home at {home_at:?}");
    }
}

/// 2,000 nested directories, walked on a thread with a 256 KiB stack: the snapshot walk and the outbox walk are
/// iterative.
#[test]
fn deep_trees_are_walked_without_recursion() {
    let ws = tempfile::tempdir().unwrap();
    let deep: PathBuf = std::iter::repeat_n("d", 2000).collect();
    fs::create_dir_all(ws.path().join("w").join(&deep)).unwrap();
    fs::write(ws.path().join("w").join(&deep).join("f"), "deep\n").unwrap();
    fs::create_dir_all(ws.path().join("o").join(&deep)).unwrap();
    fs::write(ws.path().join("o").join(&deep).join("f"), "deep\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let (root, home_path) = (ws.path().to_path_buf(), home.path().to_path_buf());
    let walked = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let store = ContentStore::open(&home_path).unwrap();
            let snapshot = Snapshot::capture(&root.join("w")).unwrap();
            let collected = wb_outcomes::collect_outbox(&root.join("o"), &store, &mut OutcomeBudget::new()).unwrap();
            (snapshot.len(), collected.artifacts.len())
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(walked, (1, 1));
}

/// Applied elsewhere, a link is judged through the destination's own links too: `c -> b/b/../../etc` is inside
/// the workspace it was captured in, and leads out of one whose `b` is `.`.
#[test]
fn a_destinations_own_links_are_followed_when_judging_a_changeset() {
    let (ws, _home, store) = workspace(&[("b/b/keep.txt", "keep\n")], false);
    let before = Snapshot::baseline(ws.path(), &store).unwrap();
    std::os::unix::fs::symlink("b/b/../../etc", ws.path().join("c")).unwrap();
    let after = Snapshot::capture(ws.path()).unwrap();
    let changeset = between(&store, &before, &after).unwrap();
    assert_eq!(changeset.escaping_link_in(ws.path()), None);
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(".", elsewhere.path().join("b")).unwrap();
    assert_eq!(changeset.escaping_link_in(elsewhere.path()), Some("c"));
    // The changeset's own after-state wins over the disk: a link it deletes is not followed.
    let mut replaced = changeset.clone();
    replaced.entries.push(wb_outcomes::Entry::Delete {
        path: "b".to_owned(),
        before: wb_outcomes::Fingerprint::Symlink { mode: 0o777, target: ".".to_owned() },
    });
    assert_eq!(replaced.escaping_link_in(elsewhere.path()), None);
}

/// A FIFO the agent leaves as a `.gitignore`, or names as `core.excludesFile`, blocks `git ls-files` for ever:
/// the snapshot fails within the deadline instead of wedging the engine. Run in a child process (this test
/// again), whose Git deadline is shortened without touching the other tests'.
#[test]
fn a_fifo_left_for_git_cannot_wedge_the_snapshot() {
    const CHILD: &str = "WB_OUTCOMES_HOSTILE_FIFO_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "a_fifo_left_for_git_cannot_wedge_the_snapshot", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
        return;
    }
    wb_outcomes::set_git_deadline(std::time::Duration::from_secs(2));
    for in_config in [false, true] {
        let h = Hostile::new();
        let fifo = if in_config { h.scratch.join("excludes") } else { h.root.join("src/.gitignore") };
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        if in_config {
            h.config("core.excludesFile", &fifo.to_string_lossy());
        }
        let started = std::time::Instant::now();
        let error = Snapshot::baseline(&h.root, &h.store).unwrap_err().to_string();
        assert!(error.contains("git ls-files failed"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    }
}

/// A file swapped for a symlink to a host file, or for a FIFO, between the capture and the reading of its bytes:
/// the outcome never carries the host file, and the engine never blocks on the FIFO.
#[test]
fn a_file_swapped_after_capture_is_never_read_through_a_link_or_a_fifo() {
    let secret = tempfile::tempdir().unwrap();
    write(secret.path(), "secret.txt", "host secret\n");
    for swap_for_fifo in [false, true] {
        let (ws, _home, store) = workspace(&[("a.txt", "one\n")], false);
        let before = Snapshot::baseline(ws.path(), &store).unwrap();
        write(ws.path(), "a.txt", "changed\n");
        let after = Snapshot::capture(ws.path()).unwrap();
        let file = ws.path().join("a.txt");
        fs::remove_file(&file).unwrap();
        if swap_for_fifo {
            nix::unistd::mkfifo(&file, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        } else {
            std::os::unix::fs::symlink(secret.path().join("secret.txt"), &file).unwrap();
        }
        let error = between(&store, &before, &after).unwrap_err().to_string();
        assert!(error.starts_with("Workspace snapshot failed: "), "{error}");
        assert!(!store.contains(&format!("sha256:{}", wb_outcomes::sha256_hex(b"host secret\n"))));
    }
}
