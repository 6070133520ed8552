//! Git, asked the way `git status` would be: which files a Git workspace holds, its `HEAD`, and which clean
//! tracked files can be given back from their index blobs (so a baseline need not read them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use super::{Kind, Snapshot};
use crate::error::{Error, Result};

/// `git -C <root>`, isolated from the surroundings: a run started from a Git hook (which sets `GIT_DIR`,
/// `GIT_INDEX_FILE`...) still looks at the workspace's own repository; nothing prompts, takes optional locks or
/// goes to the network (a partial clone would otherwise fetch missing blobs on `cat-file`; `protocol.allow=never`
/// also stops it on Git before 2.44, which ignores `GIT_NO_LAZY_FETCH`).
fn git_command(root: &Path) -> Command {
    let mut command = Command::new("git");
    for name in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
    ] {
        command.env_remove(name);
    }
    command
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .arg("-C")
        .arg(root)
        .args(["-c", "protocol.allow=never"]);
    command
}

pub(super) fn git(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let output = git_command(root)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    output.status.success().then_some(output.stdout)
}

/// Runs Git with `input` on its standard input (written from a thread, so a large input cannot deadlock
/// against the output).
fn git_with_input(root: &Path, args: &[&str], input: Vec<u8>) -> Option<Vec<u8>> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child =
        git_command(root).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().ok()?;
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(stdin) = stdin.as_mut() {
            let _ = stdin.write_all(&input);
        }
    });
    let output = child.wait_with_output().ok()?;
    let _ = writer.join();
    output.status.success().then_some(output.stdout)
}

/// The UTF-8 entries of a `-z` listing (the others cannot be snapshot files; a lossy copy could be taken for
/// another file's name).
fn split_z(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes.split(|b| *b == 0).filter(|s| !s.is_empty()).filter_map(|s| String::from_utf8(s.to_vec()).ok())
}

/// One line of `git ls-files -s -v -z`: `<tag> <mode> <oid> <stage>\t<path>`. Only a stage-0 regular file
/// tagged `H` (cached: neither skip-worktree `S`, so possibly absent from the disk and, in a partial clone, from
/// the object store, nor assume-unchanged `h`, whose edits `ls-files -m` does not show) can be trusted to be
/// clean; returns its path and oid, and whether it is such a candidate.
fn index_line(line: &str) -> Option<(&str, &str, bool)> {
    let (info, path) = line.split_once('\t')?;
    let [tag, mode, oid, stage] = info.split(' ').collect::<Vec<_>>()[..] else { return None };
    let candidate = tag == "H" && stage == "0" && (mode == "100644" || mode == "100755");
    Some((path, oid, candidate))
}

/// The index (`git ls-files -s -v -z`) and the size of each blob that may be a clean file's (see
/// [`index_line`]; `git cat-file --batch-check`, run right away so it overlaps the metadata scan).
///
/// A clean file's index blob holds the *cleaned* bytes: with line-ending conversion (`eol=crlf`,
/// `core.autocrlf`), `ident` or a filter (Git LFS) they differ from the bytes in the workspace, and the previous
/// content must not be taken from the blob. Such a conversion changes the size, so only a blob with the file's
/// size is trusted; the other files are hashed and kept like dirty ones. Without sizes, no blob is trusted.
fn index_with_sizes(root: &Path) -> Option<(Vec<u8>, BTreeMap<String, u64>)> {
    let staged = git(root, &["ls-files", "-s", "-v", "-z"])?;
    let mut oids = BTreeSet::new();
    for line in split_z(&staged) {
        if let Some((_, oid, true)) = index_line(&line) {
            oids.insert(oid.to_owned());
        }
    }
    let mut sizes = BTreeMap::new();
    if !oids.is_empty() {
        let input: String = oids.iter().map(|oid| format!("{oid}\n")).collect();
        let output = git_with_input(root, &["cat-file", "--batch-check"], input.into_bytes()).unwrap_or_default();
        for line in String::from_utf8_lossy(&output).lines() {
            // `<oid> blob <size>` (or `<oid> missing`).
            if let [oid, "blob", size] = line.split(' ').collect::<Vec<_>>()[..] {
                if let Ok(size) = size.parse() {
                    sizes.insert(oid.to_owned(), size);
                }
            }
        }
    }
    Some((staged, sizes))
}

impl Snapshot {
    /// Lists a Git workspace's tracked and unignored files (`git ls-files -co --exclude-standard -z`) and its
    /// `HEAD`; `with_index`: also the index blobs of clean tracked files (Git runs concurrently with the
    /// metadata scan).
    pub(super) fn list_from_git(&mut self, with_index: bool) -> Result<()> {
        // Owned: `self` is borrowed mutably below while the Git threads run.
        let root = self.root.clone();
        let spawn = |args: &'static [&'static str]| {
            let root = root.to_path_buf();
            std::thread::spawn(move || git(&root, args))
        };
        let index = with_index.then(|| {
            let root = root.to_path_buf();
            (std::thread::spawn(move || index_with_sizes(&root)), spawn(&["ls-files", "-m", "-z"]))
        });
        let head = spawn(&["rev-parse", "--verify", "-q", "HEAD"]);
        let listing = git(&root, &["ls-files", "-co", "--exclude-standard", "-z"])
            .ok_or_else(|| Error::Snapshot(format!("git ls-files failed in {}", root.display())))?;
        for raw in listing.split(|b| *b == 0).filter(|s| !s.is_empty()) {
            self.add(raw);
        }
        self.git_revision = head
            .join()
            .ok()
            .flatten()
            .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
            .filter(|rev| !rev.is_empty());
        if let Some((staged, dirty)) = index {
            let staged = staged.join().ok().flatten();
            let dirty = dirty.join().ok().flatten();
            if let (Some((staged, sizes)), Some(dirty)) = (staged, dirty) {
                self.attach_git_blobs(&staged, &dirty, &sizes);
            }
        }
        Ok(())
    }

    /// Records the index blob of every clean tracked regular file (`git ls-files -s` minus `-m`, see
    /// [`index_line`]) whose blob has the file's size (see [`index_with_sizes`]).
    fn attach_git_blobs(&mut self, staged: &[u8], dirty: &[u8], sizes: &BTreeMap<String, u64>) {
        let dirty: BTreeSet<String> = split_z(dirty).collect();
        let mut blobs: BTreeMap<String, Option<String>> = BTreeMap::new();
        for line in split_z(staged) {
            let Some((path, oid, candidate)) = index_line(&line) else { continue };
            let clean = candidate && !dirty.contains(path);
            // Unmerged paths appear several times: never trust them.
            let value = clean.then(|| oid.to_owned());
            blobs.entry(path.to_owned()).and_modify(|v| *v = None).or_insert(value);
        }
        for (path, file) in &mut self.files {
            if file.kind == Kind::File {
                file.git_blob = blobs.get(path).cloned().flatten().filter(|oid| sizes.get(oid) == Some(&file.size));
            }
        }
    }
}
