#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::symlink;

use wb_outcomes::{
    Changeset, ContentStore, Entry, Error, Fingerprint, OutcomeBudget, Snapshot, State, WorkspaceRef, is_excluded,
};
use wb_testsupport::{chmod, git, write};

fn between(store: &ContentStore, before: &Snapshot, after: &Snapshot) -> wb_outcomes::Result<Changeset> {
    Changeset::between("changes", WorkspaceRef::Primary, before, after, store, &mut OutcomeBudget::new())
}

#[test]
fn exclusions() {
    for path in [
        ".git/config",
        "a/.hg/x",
        ".svn/x",
        "home/.ssh/config",
        ".aws/credentials",
        ".gnupg/k",
        "web/node_modules/x/index.js",
        ".env",
        "app/.env.local",
        ".ENV.production",
        ".npmrc",
        ".netrc",
        ".pypirc",
        "id_rsa",
        "keys/id_ed25519",
        "credentials",
        "tls/server.pem",
        "server.KEY",
        "cert.p12",
        "cert.pfx",
        "prod.kubeconfig",
    ] {
        assert!(is_excluded(path), "{path}");
    }
    for path in [".env.example", ".env.sample", "src/main.rs", "environment.txt", "keys.txt", "gitconfig"] {
        assert!(!is_excluded(path), "{path}");
    }
}

#[test]
fn directory_walk_entries_states_stats_and_review() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "keep.txt", "same\n");
    write(root, "edit.txt", "one\ntwo\n");
    write(root, "gone.txt", "bye\n");
    write(root, "mode.sh", "echo\n");
    write(root, "bin.dat", "x");
    write(root, ".env", "SECRET=1\n");
    write(root, "node_modules/m/index.js", "x");
    fs::create_dir(root.join("empty")).unwrap();
    symlink("keep.txt", root.join("link")).unwrap();
    let before = Snapshot::baseline(root, &store).unwrap();
    assert!(!before.is_git());
    let names: Vec<&String> = before.files().keys().collect();
    assert_eq!(names, ["bin.dat", "edit.txt", "gone.txt", "keep.txt", "link", "mode.sh"]);

    write(root, "edit.txt", "one\nTWO\n");
    fs::remove_file(root.join("gone.txt")).unwrap();
    write(root, "new/added.txt", "fresh\n");
    chmod(root, "mode.sh", 0o755);
    fs::write(root.join("bin.dat"), [0u8, 1, 2]).unwrap();
    write(root, ".env", "SECRET=2\n");
    fs::remove_file(root.join("link")).unwrap();
    symlink("edit.txt", root.join("link")).unwrap();
    fs::create_dir(root.join("empty2")).unwrap();
    let after = Snapshot::capture(root).unwrap();
    let changeset = between(&store, &before, &after).unwrap();

    let summary: Vec<(String, &str)> = changeset
        .entries
        .iter()
        .map(|e| {
            let op = match e {
                Entry::Add { .. } => "add",
                Entry::Modify { .. } => "modify",
                Entry::Delete { .. } => "delete",
            };
            (e.path().to_owned(), op)
        })
        .collect();
    let expected: Vec<(String, &str)> = [
        ("bin.dat", "modify"),
        ("edit.txt", "modify"),
        ("gone.txt", "delete"),
        ("link", "modify"),
        ("mode.sh", "modify"),
        ("new/added.txt", "add"),
    ]
    .iter()
    .map(|(p, o)| ((*p).to_owned(), *o))
    .collect();
    assert_eq!(summary, expected);
    assert_eq!(changeset.stats.additions, 1);
    assert_eq!(changeset.stats.modifications, 4);
    assert_eq!(changeset.stats.deletions, 1);
    assert_eq!(changeset.stats.binary_files, 1);
    match &changeset.entries[1] {
        Entry::Modify {
            before: Fingerprint::File { digest, mode, size_bytes },
            after: State::File { content, mode: m },
            ..
        } => {
            assert_eq!(digest, &format!("sha256:{}", wb_outcomes::sha256_hex(b"one\ntwo\n")));
            assert_eq!(*size_bytes, 8);
            assert_eq!((*mode, *m), (0o644 & *mode, *mode));
            assert_eq!(store.read(&content.digest).unwrap(), b"one\nTWO\n");
            assert_eq!(content.media_type, "text/plain");
        }
        other => panic!("{other:?}"),
    }
    match &changeset.entries[3] {
        Entry::Modify {
            before: Fingerprint::Symlink { target, .. }, after: State::Symlink { target: t, .. }, ..
        } => {
            assert_eq!((target.as_str(), t.as_str()), ("keep.txt", "edit.txt"));
        }
        other => panic!("{other:?}"),
    }
    match &changeset.entries[4] {
        Entry::Modify { before: Fingerprint::File { mode, .. }, after: State::File { mode: m, .. }, .. } => {
            assert_eq!((*mode & 0o111, *m), (0, 0o755));
        }
        other => panic!("{other:?}"),
    }
    let diff = String::from_utf8(store.read(&changeset.review.as_ref().unwrap().digest).unwrap()).unwrap();
    for expected in [
        "diff --git a/edit.txt b/edit.txt\n--- a/edit.txt\n+++ b/edit.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n",
        "deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n",
        "new file mode 100644\n--- /dev/null\n+++ b/new/added.txt\n",
        "Binary files a/bin.dat and b/bin.dat differ\n",
        "old mode 100644\nnew mode 100755\n",
    ] {
        assert!(diff.contains(expected), "{expected}\n---\n{diff}");
    }
    assert!(!diff.contains("SECRET"));
    assert_eq!(changeset.base.snapshot_digest, before.digest().unwrap());
    assert!(changeset.base.git_revision.is_none());

    // Snapshot digests are stable, and change with content.
    let again = Snapshot::capture(root).unwrap();
    assert_eq!(again.digest().unwrap(), after.digest().unwrap());
    assert_ne!(after.digest().unwrap(), before.digest().unwrap());

    // No changes: no entries and no review.
    let empty = between(&store, &after, &again).unwrap();
    assert!(empty.entries.is_empty() && empty.review.is_none());
}

#[test]
fn touched_but_identical_files_are_not_changes() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    write(ws.path(), "a.txt", "a");
    let before = Snapshot::baseline(ws.path(), &store).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    write(ws.path(), "a.txt", "a");
    let after = Snapshot::capture(ws.path()).unwrap();
    assert!(between(&store, &before, &after).unwrap().entries.is_empty());
    assert_eq!(after.hashed_paths(), ["a.txt"]);
}

#[test]
fn escaping_symlinks_are_rejected() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let before = Snapshot::baseline(ws.path(), &store).unwrap();
    fs::create_dir(ws.path().join("d")).unwrap();
    symlink("../../outside", ws.path().join("d/link")).unwrap();
    let after = Snapshot::capture(ws.path()).unwrap();
    let error = between(&store, &before, &after).unwrap_err();
    assert_eq!(error.to_string(), "Escaping symlink is not allowed in outcome: d/link");
    fs::remove_file(ws.path().join("d/link")).unwrap();
    symlink("/etc/passwd", ws.path().join("d/link")).unwrap();
    let after = Snapshot::capture(ws.path()).unwrap();
    assert!(matches!(between(&store, &before, &after), Err(Error::EscapingSymlink(_))));
    fs::remove_file(ws.path().join("d/link")).unwrap();
    symlink("../ok", ws.path().join("d/link")).unwrap();
    let after = Snapshot::capture(ws.path()).unwrap();
    assert_eq!(between(&store, &before, &after).unwrap().entries.len(), 1);
}

#[test]
fn git_workspaces_use_tracked_and_unignored_files_and_dirty_baselines() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    git(root, &["init", "-q"]);
    write(root, ".gitignore", "build/\n*.log\n");
    write(root, "src/lib.rs", "fn a() {}\n");
    write(root, "dirty.txt", "committed\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
    write(root, "dirty.txt", "dirty before the run\n");
    write(root, "untracked.txt", "u\n");
    write(root, "build/out.o", "o");
    write(root, "x.log", "l");
    let before = Snapshot::baseline(root, &store).unwrap();
    assert!(before.is_git());
    assert!(before.git_revision().is_some_and(|r| r.len() == 40));
    let names: BTreeSet<&str> = before.files().keys().map(String::as_str).collect();
    assert_eq!(names, BTreeSet::from([".gitignore", "dirty.txt", "src/lib.rs", "untracked.txt"]));
    // Only the files Git cannot give back were read.
    let hashed: BTreeSet<String> = before.hashed_paths().into_iter().collect();
    assert_eq!(hashed, BTreeSet::from(["dirty.txt".to_owned(), "untracked.txt".to_owned()]));

    write(root, "dirty.txt", "changed by the run\n");
    write(root, "src/lib.rs", "fn b() {}\n");
    write(root, "build/new.o", "ignored");
    let after = Snapshot::capture(root).unwrap();
    let changeset = between(&store, &before, &after).unwrap();
    let paths: Vec<&str> = changeset.entries.iter().map(Entry::path).collect();
    assert_eq!(paths, ["dirty.txt", "src/lib.rs"]);
    // The before fingerprint of a dirty file is its dirty baseline, not HEAD.
    match &changeset.entries[0] {
        Entry::Modify { before: Fingerprint::File { digest, .. }, .. } => {
            assert_eq!(digest, &format!("sha256:{}", wb_outcomes::sha256_hex(b"dirty before the run\n")));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(changeset.base.git_revision.as_deref(), before.git_revision());
    let diff = String::from_utf8(store.read(&changeset.review.as_ref().unwrap().digest).unwrap()).unwrap();
    assert!(diff.contains("-fn a() {}\n+fn b() {}\n"), "{diff}");
}

fn generate(root: &std::path::Path, count: usize) {
    for i in 0..count {
        let dir = root.join(format!("d{:03}", i % 200));
        if i < 200 {
            fs::create_dir_all(&dir).unwrap();
        }
        fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
}

/// 20,000 files, 3 changes: only the changed files are hashed (baseline and comparison).
#[test]
fn large_git_workspace_hashes_only_changed_files() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    git(root, &["init", "-q"]);
    generate(root, 20_000);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
    let before = Snapshot::baseline(root, &store).unwrap();
    assert_eq!(before.len(), 20_000);
    assert!(before.hashed_paths().is_empty(), "{:?}", before.hashed_paths().len());
    write(root, "d007/f7.txt", "changed\n");
    fs::remove_file(root.join("d011/f11.txt")).unwrap();
    write(root, "added.txt", "new\n");
    let after = Snapshot::capture(root).unwrap();
    let changeset = between(&store, &before, &after).unwrap();
    assert_eq!(changeset.entries.len(), 3);
    let changed: BTreeSet<String> =
        ["d007/f7.txt", "d011/f11.txt", "added.txt"].iter().map(|s| (*s).to_owned()).collect();
    let mut hashed: Vec<String> = before.hashed_paths();
    hashed.extend(after.hashed_paths());
    assert!(hashed.iter().all(|p| changed.contains(p)), "{hashed:?}");
    assert!(hashed.len() <= 4, "{hashed:?}");
}

/// Non-Git baselines reuse the digests of files whose metadata is unchanged since an earlier baseline.
#[test]
fn non_git_baselines_reuse_settled_digests() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    for i in 0..50 {
        write(ws.path(), &format!("f{i}.txt"), format!("{i}\n"));
    }
    // Files changed within 2 s of a baseline are never cached.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let first = Snapshot::baseline(ws.path(), &store).unwrap();
    assert_eq!(first.hashed_paths().len(), 50);
    let second = Snapshot::baseline(ws.path(), &store).unwrap();
    assert!(second.hashed_paths().is_empty());
    assert_eq!(second.digest().unwrap(), first.digest().unwrap());
    write(ws.path(), "f7.txt", "changed\n");
    let third = Snapshot::baseline(ws.path(), &store).unwrap();
    assert_eq!(third.hashed_paths(), ["f7.txt"]);
    // The changeset from a cached baseline still has the right before state.
    write(ws.path(), "f8.txt", "changed too\n");
    let after = Snapshot::capture(ws.path()).unwrap();
    let changeset = between(&store, &third, &after).unwrap();
    assert_eq!(changeset.entries.len(), 1);
    match &changeset.entries[0] {
        Entry::Modify { before: Fingerprint::File { digest, .. }, .. } => {
            assert_eq!(digest, &format!("sha256:{}", wb_outcomes::sha256_hex(b"8\n")));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(after.hashed_paths(), ["f8.txt"]);
}

fn raw(root: &std::path::Path, name: &[u8]) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    root.join(std::ffi::OsStr::from_bytes(name))
}

fn put_raw(root: &std::path::Path, name: &[u8], content: &str) {
    let path = raw(root, name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// Files and symlinks whose names no changeset can carry (every reason of `unsafe_path_reason`, and names that
/// are not UTF-8) are warned about when they are created, changed or deleted, never when they are left alone;
/// a rename to such a name is the deletion in the changeset plus a warning. Names are escaped and cut.
#[test]
fn unrepresentable_names_are_warned_about_when_created_changed_or_deleted() {
    const BACKSLASH: &str = "a changeset path must be a relative path without backslashes or drive letters";
    const CONTROL: &str = "a changeset path must not contain control characters";
    const UTF8: &str = "a changeset path must be UTF-8";
    let long_dir = [b'\x01'; 250];
    let mut long = long_dir.to_vec();
    long.push(b'/');
    long.extend([b'\x02'; 250]);
    for in_git in [false, true] {
        let home = tempfile::tempdir().unwrap();
        let store = ContentStore::open(home.path()).unwrap();
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        put_raw(root, b"edit-\x01.txt", "one");
        put_raw(root, b"gone-\xff.txt", "bye");
        put_raw(root, b"same-\x02.txt", "same");
        put_raw(root, b"c:drive.txt", "left alone");
        put_raw(root, b"dir-\xfe/inner.txt", "inner");
        symlink("notes.txt", raw(root, b"link-\x03")).unwrap();
        write(root, "notes.txt", "notes\n");
        if in_git {
            git(root, &["init", "-q"]);
            git(root, &["add", "-A"]);
            git(root, &["commit", "-q", "-m", "init"]);
        }
        let before = Snapshot::baseline(root, &store).unwrap();
        assert_eq!(before.is_git(), in_git);
        assert_eq!(before.files().keys().collect::<Vec<_>>(), ["notes.txt"]);
        assert_eq!(
            before.unrepresentable(),
            [
                "c:drive.txt",
                "dir-\\xfe/inner.txt",
                "edit-\\u{1}.txt",
                "gone-\\xff.txt",
                "link-\\u{3}",
                "same-\\u{2}.txt"
            ]
        );

        put_raw(root, b"edit-\x01.txt", "two!");
        put_raw(root, b"dir-\xfe/inner.txt", "inner, changed");
        fs::remove_file(raw(root, b"gone-\xff.txt")).unwrap();
        fs::remove_file(raw(root, b"link-\x03")).unwrap();
        symlink("elsewhere.txt", raw(root, b"link-\x03")).unwrap();
        fs::rename(root.join("notes.txt"), raw(root, b"notes\x01.txt")).unwrap();
        put_raw(root, b"back\\slash.txt", "b");
        put_raw(root, b"d:new.txt", "d");
        put_raw(root, b"esc-\x1b[31m\x9b.txt", "e");
        put_raw(root, b"csi-\xc2\x9b.txt", "c");
        put_raw(root, b"quote-'\"\xc3\xa9.txt", "q");
        put_raw(root, &long, "l");
        // Excluded names stay out even when they cannot be carried.
        put_raw(root, b".env.\xff", "SECRET=1");
        put_raw(root, b"node_modules/\xff.js", "x");
        let after = Snapshot::capture(root).unwrap();
        let changeset = between(&store, &before, &after).unwrap();
        // The rename is the deletion; the file with quotes and `é` in its name is carried like any other.
        let entries: Vec<(&str, &str)> = changeset
            .entries
            .iter()
            .map(|e| match e {
                Entry::Add { path, .. } => ("add", path.as_str()),
                Entry::Modify { path, .. } => ("modify", path.as_str()),
                Entry::Delete { path, .. } => ("delete", path.as_str()),
            })
            .collect();
        assert_eq!(entries, [("delete", "notes.txt"), ("add", "quote-'\"é.txt")]);

        let messages = Snapshot::unrepresentable_warnings(&before, &after, None);
        let message = |name: &str, what: &str, reason: &str| {
            format!(
                "{name} is not in the outcome: it was {what} during the run, but its name cannot be carried by a \
                 changeset ({reason})"
            )
        };
        let cut = format!("{}…", "\\u{1}".repeat(1024 / 5));
        assert_eq!(
            messages,
            [
                message(&cut, "created", CONTROL),
                message("back\\\\slash.txt", "created", BACKSLASH),
                message("csi-\\u{9b}.txt", "created", CONTROL),
                message("d:new.txt", "created", BACKSLASH),
                message("dir-\\xfe/inner.txt", "changed", UTF8),
                message("edit-\\u{1}.txt", "changed", CONTROL),
                // U+009B (CSI) is a control character too: `\xc2\x9b` in UTF-8 would be one, a lone 0x9b is no UTF-8.
                message("esc-\\u{1b}[31m\\x9b.txt", "created", UTF8),
                message("gone-\\xff.txt", "deleted", UTF8),
                message("link-\\u{3}", "changed", CONTROL),
                message("notes\\u{1}.txt", "created", CONTROL),
            ],
            "in Git: {in_git}"
        );
        for message in &messages {
            assert!(!message.chars().any(char::is_control), "{message:?}");
            assert!(message.chars().count() < 1400, "{message:?}");
        }
        // A named workspace prefixes its name; nothing is reported between a snapshot and itself.
        assert!(Snapshot::unrepresentable_warnings(&before, &after, Some("docs"))[1].starts_with("docs:back\\\\slash"));
        assert!(Snapshot::unrepresentable_warnings(&after, &after, None).is_empty());
    }
}

/// A run that creates very many such names gets 100 warnings and one that counts the rest.
#[test]
fn unrepresentable_warnings_are_capped() {
    let ws = tempfile::tempdir().unwrap();
    let before = Snapshot::capture(ws.path()).unwrap();
    for i in 0..105 {
        put_raw(ws.path(), format!("many-\x01-{i:03}").as_bytes(), "x");
    }
    let after = Snapshot::capture(ws.path()).unwrap();
    let messages = Snapshot::unrepresentable_warnings(&before, &after, Some("docs"));
    assert_eq!(messages.len(), 101);
    assert!(messages[99].starts_with("docs:many-\\u{1}-099 is not in the outcome"), "{}", messages[99]);
    assert_eq!(
        messages[100],
        "docs:5 more created, changed or deleted files are not in the outcome: their names cannot be carried by a \
         changeset"
    );
}

fn git_output(root: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git").arg("-C").arg(root).args(args).env("GIT_NO_LAZY_FETCH", "1").output().unwrap()
}

/// A file marked assume-unchanged (whose edits `git ls-files -m` does not show) is hashed at baseline: its
/// previous content is what was on disk, not the index blob.
#[test]
fn assume_unchanged_files_are_not_taken_from_git() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    git(root, &["init", "-q"]);
    write(root, "f.txt", "aaaa\n");
    write(root, "g.txt", "clean\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
    git(root, &["update-index", "--assume-unchanged", "f.txt"]);
    write(root, "f.txt", "bbbb\n");
    let before = Snapshot::baseline(root, &store).unwrap();
    assert_eq!(before.hashed_paths(), ["f.txt"]);
    write(root, "f.txt", "cccc\n");
    let after = Snapshot::capture(root).unwrap();
    let changeset = between(&store, &before, &after).unwrap();
    match &changeset.entries[..] {
        [Entry::Modify { before: Fingerprint::File { digest, .. }, .. }] => {
            assert_eq!(digest, &format!("sha256:{}", wb_outcomes::sha256_hex(b"bbbb\n")));
        }
        other => panic!("{other:?}"),
    }
}

/// In a sparse, partial clone the blobs of files outside the sparse checkout are missing; snapshots never fetch
/// them (no lazy fetch, no batch-check of paths that are not on disk).
#[test]
fn sparse_partial_clones_fetch_nothing() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    let clone = dir.path().join("clone");
    write(&origin, "a.txt", "in the sparse checkout\n");
    write(&origin, "far/b.txt", "outside it\n");
    git(&origin, &["init", "-q"]);
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "init"]);
    git(&origin, &["config", "uploadpack.allowFilter", "true"]);
    git(&origin, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
    let url = format!("file://{}", origin.display());
    git(dir.path(), &["clone", "-q", "--filter=blob:none", "--no-checkout", &url, "clone"]);
    git(&clone, &["sparse-checkout", "set", "--no-cone", "/a.txt"]);
    git(&clone, &["checkout", "-q"]);
    assert!(clone.join("a.txt").exists() && !clone.join("far/b.txt").exists());
    let far = String::from_utf8(git_output(&clone, &["rev-parse", "HEAD:far/b.txt"]).stdout).unwrap();
    let far = far.trim();
    let missing = || !git_output(&clone, &["cat-file", "-e", far]).status.success();
    assert!(missing());

    let before = Snapshot::baseline(&clone, &store).unwrap();
    assert!(before.hashed_paths().is_empty(), "{:?}", before.hashed_paths());
    write(&clone, "a.txt", "changed\n");
    let after = Snapshot::capture(&clone).unwrap();
    let changeset = between(&store, &before, &after).unwrap();
    assert_eq!(changeset.entries.iter().map(Entry::path).collect::<Vec<_>>(), ["a.txt"]);
    assert!(missing(), "a snapshot fetched a missing blob");
}

/// Run from a Git hook (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE` set to another repository), a snapshot
/// still lists the workspace's own repository. The environment is set in a child process (this test, run again).
#[test]
fn git_environment_of_a_hook_is_ignored() {
    const CHILD: &str = "WB_OUTCOMES_TEST_HOOK_WORKSPACE";
    if let Some(ws) = std::env::var_os(CHILD) {
        let snapshot = Snapshot::capture(std::path::Path::new(&ws)).unwrap();
        assert!(snapshot.is_git());
        assert_eq!(snapshot.files().keys().collect::<Vec<_>>(), ["mine.txt", "untracked.txt"]);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ws, other) = (dir.path().join("ws"), dir.path().join("other"));
    for (root, name) in [(&ws, "mine.txt"), (&other, "theirs.txt")] {
        write(root, name, "x\n");
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "init"]);
    }
    write(&ws, "untracked.txt", "u\n");
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "git_environment_of_a_hook_is_ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, &ws)
        .env("GIT_DIR", other.join(".git"))
        .env("GIT_WORK_TREE", &other)
        .env("GIT_INDEX_FILE", other.join(".git/index"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Clean tracked files: their blob sizes are remembered in the home (one Git per home, not per baseline), a
/// damaged record of them only makes a baseline read the files itself, and the previous bytes of several
/// changed files come from their blobs (read in one batch) exactly.
#[test]
fn blob_sizes_are_remembered_and_previous_bytes_come_from_the_blobs() {
    let home = tempfile::tempdir().unwrap();
    let store = ContentStore::open(home.path()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    git(root, &["init", "-q"]);
    let committed = |i: usize| format!("committed {i}\n").repeat(i + 1);
    for i in 0..6 {
        write(root, &format!("f{i}.txt"), committed(i));
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
    let sizes = home.path().join("cache/blob-sizes");

    let before = Snapshot::baseline(root, &store).unwrap();
    assert!(before.hashed_paths().is_empty(), "{:?}", before.hashed_paths());
    let recorded = fs::read_to_string(&sizes).unwrap();
    assert_eq!(recorded.lines().count(), 6, "{recorded}");
    for i in 0..6 {
        let oid = String::from_utf8(git_output(root, &["rev-parse", &format!("HEAD:f{i}.txt")]).stdout).unwrap();
        assert!(recorded.contains(&format!("{} {}\n", oid.trim(), committed(i).len())), "{recorded}");
    }
    // Remembered: a second baseline learns nothing new, and still reads no file.
    let again = Snapshot::baseline(root, &store).unwrap();
    assert!(again.hashed_paths().is_empty());
    assert_eq!(fs::read_to_string(&sizes).unwrap(), recorded);

    for i in 0..3 {
        write(root, &format!("f{i}.txt"), "changed\n");
    }
    fs::remove_file(root.join("f3.txt")).unwrap();
    let after = Snapshot::capture(root).unwrap();
    let changeset = between(&store, &again, &after).unwrap();
    let before_digests: Vec<(String, String)> = changeset
        .entries
        .iter()
        .filter_map(|entry| match entry {
            Entry::Modify { path, before: Fingerprint::File { digest, .. }, .. }
            | Entry::Delete { path, before: Fingerprint::File { digest, .. } } => Some((path.clone(), digest.clone())),
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String)> = (0..4)
        .map(|i| (format!("f{i}.txt"), format!("sha256:{}", wb_outcomes::sha256_hex(committed(i).as_bytes()))))
        .collect();
    assert_eq!(before_digests, expected);
    git(root, &["checkout", "-q", "--", "."]);

    // Every size recorded wrong: no blob is trusted, each file is read and kept instead.
    let wrong: String = recorded
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(oid, size)| format!("{oid} {}\n", size.parse::<u64>().unwrap() + 1))
        .collect();
    fs::write(&sizes, wrong).unwrap();
    let distrusted = Snapshot::baseline(root, &store).unwrap();
    assert_eq!(distrusted.hashed_paths().len(), 6, "{:?}", distrusted.hashed_paths());
    write(root, "f5.txt", "changed\n");
    let after = Snapshot::capture(root).unwrap();
    let changeset = between(&store, &distrusted, &after).unwrap();
    match &changeset.entries[..] {
        [Entry::Modify { before: Fingerprint::File { digest, .. }, .. }] => {
            assert_eq!(digest, &format!("sha256:{}", wb_outcomes::sha256_hex(committed(5).as_bytes())));
        }
        other => panic!("{other:?}"),
    }
}
