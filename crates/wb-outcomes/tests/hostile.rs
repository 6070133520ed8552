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
