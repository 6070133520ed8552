//! Workspace snapshots and the changeset between two of them.
//!
//! A snapshot records, for every selected file or symlink of a workspace, its kind, permission bits, size,
//! mtime, ctime and inode, and (lazily) its SHA-256 digest. Comparing two snapshots hashes only the
//! candidates whose metadata differs, so a large unchanged tree costs about a directory scan.
//!
//! A *baseline* ([`Snapshot::baseline`]) must also be able to recover every file's previous bytes later:
//! in a Git workspace a clean tracked file is recoverable from its index blob (nothing is read at baseline,
//! exactly like `git status`) unless checkout converts it (line endings, `ident`, filters: the blob's size
//! differs from the file's); every other file (dirty, untracked, converted, or any file of a non-Git
//! workspace) is hashed and its bytes kept in the content store when the baseline is taken.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::manifest::{
    Base, Changeset, Content, Entry, Fingerprint, State, Stats, WorkspaceRef, symlink_target_is_safe,
};
use crate::store::{ContentStore, OutcomeBudget};
use crate::util::hex;

/// How `base.snapshot_digest` is computed.
pub const SNAPSHOT_DIGEST_METHOD: &str = "sha256 over the snapshot's paths in byte order, one line each: \
`<path>\\0<kind>\\0<mode in octal>\\0<id>\\n`, where kind is `file` or `symlink` and id is the file's \
`sha256:<hex>` digest, `git-blob:<oid>` for a clean file tracked by Git whose index blob has the file's size \
(checkout does not convert it), or the symlink target";

/// The facts' baseline limit: unique bytes a baseline keeps.
const BASELINE_LIMIT: u64 = 512 * 1024 * 1024;
/// Larger files are not shown in the review diff.
const DIFF_LIMIT: usize = 1024 * 1024;

/// Whether a workspace-relative path is left out of snapshots (engine facts (f): VCS metadata, dependency
/// trees, credential paths, secret-bearing names). Path-based, not a content classifier.
pub fn is_excluded(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.iter().any(|s| matches!(*s, ".git" | ".hg" | ".svn" | ".ssh" | ".aws" | ".gnupg" | "node_modules")) {
        return true;
    }
    let name = segments.last().map(|s| s.to_ascii_lowercase()).unwrap_or_default();
    if (name == ".env" || name.starts_with(".env.")) && name != ".env.example" && name != ".env.sample" {
        return true;
    }
    if matches!(name.as_str(), ".npmrc" | ".netrc" | ".pypirc" | "id_rsa" | "id_ed25519" | "credentials") {
        return true;
    }
    if [".pem", ".key", ".p12", ".pfx", ".kubeconfig"].iter().any(|ext| name.ends_with(ext)) {
        return true;
    }
    // The manifest crate's credential-file policy (auth.json, credentials.json, other key names).
    wb_manifest::is_credential_file(&name) && name != ".env.example" && name != ".env.sample"
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    Symlink,
}

/// One file or symlink of a snapshot.
#[derive(Debug)]
pub struct SnapshotFile {
    kind: Kind,
    /// `st_mode & 0o777`.
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    dev: u64,
    /// The symlink target.
    pub target: Option<String>,
    /// The Git index blob of a clean tracked file (its bytes are recoverable from Git).
    git_blob: Option<String>,
    /// `sha256:<hex>`, computed at most once.
    digest: OnceLock<String>,
}

impl SnapshotFile {
    pub fn is_symlink(&self) -> bool {
        self.kind == Kind::Symlink
    }

    fn same_metadata(&self, other: &SnapshotFile) -> bool {
        self.kind == other.kind
            && self.mode == other.mode
            && self.size == other.size
            && self.mtime_ns == other.mtime_ns
            && self.ctime_ns == other.ctime_ns
            && self.ino == other.ino
            && self.dev == other.dev
            && self.target == other.target
    }
}

/// A workspace snapshot.
#[derive(Debug)]
pub struct Snapshot {
    root: PathBuf,
    files: BTreeMap<String, SnapshotFile>,
    git_revision: Option<String>,
    git: bool,
    hashed: Mutex<Vec<String>>,
    /// Files and symlinks a changeset cannot name (see [`name_problem`]), by their raw name, with their
    /// metadata (`None` when it cannot be read, e.g. a path too long for the system).
    unrepresentable: BTreeMap<Vec<u8>, Option<RawStat>>,
}

/// The metadata of an entry a changeset cannot name: enough to tell that it was created, changed or deleted.
#[derive(Debug, PartialEq, Eq)]
struct RawStat {
    symlink: bool,
    mode: u32,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    dev: u64,
    target: Option<Vec<u8>>,
}

/// At most this many `unrepresentable_path` warnings per workspace; one more says how many were left out.
const MAX_UNREPRESENTABLE_WARNINGS: usize = 100;
/// Escaped names in warnings are cut to this many characters (the schema allows 4096 per message).
const MAX_WARNING_NAME_CHARS: usize = 1024;

/// Why a changeset cannot carry a workspace-relative name (raw bytes), as the end of a sentence, or `None`
/// when it can. The same rules as [`wb_manifest::outbox::unsafe_path_reason`], which every changeset path must
/// pass, plus UTF-8.
fn name_problem(raw: &[u8]) -> Option<String> {
    match std::str::from_utf8(raw) {
        Err(_) => Some("a changeset path must be UTF-8".to_owned()),
        Ok(path) => wb_manifest::outbox::unsafe_path_reason(path)
            .map(|reason| format!("a changeset path {}", reason.replace("the outbox", "the workspace"))),
    }
}

/// A name as printable text, like `escape_debug`: control and other non-printable characters become `\n`,
/// `\u{1b}`..., bytes that are not UTF-8 `\xNN`, a backslash `\\`; quotes stay as they are. Cut to
/// `max_chars` characters (never inside an escape), ending with `…` when cut.
fn escape_name(raw: &[u8], max_chars: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    let mut push = |unit: &str| -> bool {
        let n = unit.chars().count();
        if chars + n > max_chars {
            out.push('…');
            return false;
        }
        out.push_str(unit);
        chars += n;
        true
    };
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            let unit = if matches!(c, '"' | '\'') { c.to_string() } else { c.escape_debug().to_string() };
            if !push(&unit) {
                return out;
            }
        }
        for byte in chunk.invalid() {
            if !push(&format!("\\x{byte:02x}")) {
                return out;
            }
        }
    }
    out
}

fn metadata_entry(meta: &fs::Metadata, target: Option<String>) -> SnapshotFile {
    SnapshotFile {
        kind: if target.is_some() { Kind::Symlink } else { Kind::File },
        mode: meta.permissions().mode() & 0o777,
        size: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        ino: meta.ino(),
        dev: meta.dev(),
        target,
        git_blob: None,
        digest: OnceLock::new(),
    }
}

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

fn git(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
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
    /// A metadata snapshot of a workspace: Git workspaces list tracked and unignored files
    /// (`git ls-files -co --exclude-standard -z`), others are walked; exclusions apply to both.
    /// Digests are computed lazily.
    pub fn capture(root: &Path) -> Result<Snapshot> {
        Snapshot::capture_with(root, false)
    }

    /// `with_index`: also record the index blobs of clean tracked files (Git runs concurrently with the
    /// metadata scan).
    fn capture_with(root: &Path, with_index: bool) -> Result<Snapshot> {
        let meta = fs::symlink_metadata(root).map_err(|e| Error::Snapshot(format!("{}: {e}", root.display())))?;
        if !meta.is_dir() {
            return Err(Error::Snapshot(format!("not a directory: {}", root.display())));
        }
        let is_git = git(root, &["rev-parse", "--is-inside-work-tree"]).is_some_and(|out| out.starts_with(b"true"));
        let mut snapshot = Snapshot {
            root: root.to_path_buf(),
            files: BTreeMap::new(),
            git_revision: None,
            git: is_git,
            hashed: Mutex::new(Vec::new()),
            unrepresentable: BTreeMap::new(),
        };
        if is_git {
            let spawn = |args: &'static [&'static str]| {
                let root = root.to_path_buf();
                std::thread::spawn(move || git(&root, args))
            };
            let index = with_index.then(|| {
                let root = root.to_path_buf();
                (std::thread::spawn(move || index_with_sizes(&root)), spawn(&["ls-files", "-m", "-z"]))
            });
            let head = spawn(&["rev-parse", "--verify", "-q", "HEAD"]);
            let listing = git(root, &["ls-files", "-co", "--exclude-standard", "-z"])
                .ok_or_else(|| Error::Snapshot(format!("git ls-files failed in {}", root.display())))?;
            for raw in listing.split(|b| *b == 0).filter(|s| !s.is_empty()) {
                snapshot.add(raw);
            }
            snapshot.git_revision = head
                .join()
                .ok()
                .flatten()
                .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
                .filter(|rev| !rev.is_empty());
            if let Some((staged, dirty)) = index {
                let staged = staged.join().ok().flatten();
                let dirty = dirty.join().ok().flatten();
                if let (Some((staged, sizes)), Some(dirty)) = (staged, dirty) {
                    snapshot.attach_git_blobs(&staged, &dirty, &sizes);
                }
            }
        } else {
            snapshot.walk(Path::new(""))?;
        }
        Ok(snapshot)
    }

    /// A baseline: a snapshot whose previous bytes stay recoverable (see the module docs). Files that Git
    /// cannot give back are hashed now and kept in `store`.
    pub fn baseline(root: &Path, store: &ContentStore) -> Result<Snapshot> {
        let snapshot = Snapshot::capture_with(root, true)?;
        let cache_path = baseline_cache_path(store, root);
        let cache = read_baseline_cache(&cache_path);
        let mut budget = OutcomeBudget::new();
        for (path, file) in &snapshot.files {
            if file.kind != Kind::File || file.git_blob.is_some() {
                continue;
            }
            let cached = cache.get(path).filter(|c| c.matches(file) && store.contains(&c.digest));
            let digest = match cached {
                Some(cached) => {
                    crate::store::charge(&mut budget, &cached.digest, file.size);
                    cached.digest.clone()
                }
                None => {
                    let full = snapshot.root.join(path);
                    let content = store.put_file_with(&full, "application/octet-stream", &mut budget, false)?;
                    snapshot.note_hashed(path);
                    content.digest
                }
            };
            if budget.bytes() > BASELINE_LIMIT {
                return Err(Error::Snapshot("the workspace baseline exceeds 512 MiB".to_owned()));
            }
            let _ = file.digest.set(digest);
        }
        write_baseline_cache(&cache_path, &snapshot);
        Ok(snapshot)
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

    /// Records a file or symlink (a workspace-relative raw name); other kinds and missing paths are skipped.
    /// A name a changeset cannot carry is kept apart with its metadata (see [`Snapshot::unrepresentable_warnings`]).
    fn add(&mut self, raw: &[u8]) {
        let lossy = String::from_utf8_lossy(raw);
        if is_excluded(&lossy) {
            return;
        }
        let full = self.root.join(OsStr::from_bytes(raw));
        let meta = fs::symlink_metadata(&full);
        if name_problem(raw).is_some() {
            let stat = match meta {
                Ok(meta) if meta.file_type().is_symlink() || meta.file_type().is_file() => Some(RawStat {
                    symlink: meta.file_type().is_symlink(),
                    mode: meta.permissions().mode() & 0o777,
                    size: meta.len(),
                    mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                    ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
                    ino: meta.ino(),
                    dev: meta.dev(),
                    target: meta
                        .file_type()
                        .is_symlink()
                        .then(|| fs::read_link(&full).map(|t| t.into_os_string().into_encoded_bytes()).ok())
                        .flatten(),
                }),
                Ok(_) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                // It exists but cannot be examined (a path too long for the system): its presence is still known.
                Err(_) => None,
            };
            self.unrepresentable.insert(raw.to_vec(), stat);
            return;
        }
        let Ok(meta) = meta else { return };
        let path = lossy.into_owned();
        let file_type = meta.file_type();
        if file_type.is_symlink() {
            let target = fs::read_link(&full).map(|t| t.to_string_lossy().into_owned()).unwrap_or_default();
            self.files.insert(path, metadata_entry(&meta, Some(target)));
        } else if file_type.is_file() {
            self.files.insert(path, metadata_entry(&meta, None));
        }
    }

    fn walk(&mut self, relative: &Path) -> Result<()> {
        let dir = self.root.join(relative);
        let entries = fs::read_dir(&dir).map_err(|e| Error::Snapshot(format!("{}: {e}", dir.display())))?;
        let mut names: Vec<_> = entries.flatten().collect();
        names.sort_by_key(|e| e.file_name());
        for entry in names {
            let path = relative.join(entry.file_name());
            let Ok(file_type) = entry.file_type() else { continue };
            if file_type.is_dir() {
                // A directory whose name is not UTF-8 is walked too: each file in it is reported by its own name.
                if !is_excluded(&path.to_string_lossy()) {
                    self.walk(&path)?;
                }
            } else {
                self.add(path.as_os_str().as_bytes());
            }
        }
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn is_git(&self) -> bool {
        self.git
    }

    pub fn git_revision(&self) -> Option<&str> {
        self.git_revision.as_deref()
    }

    pub fn files(&self) -> &BTreeMap<String, SnapshotFile> {
        &self.files
    }

    /// The files and symlinks left out because a changeset cannot name them (see
    /// [`Snapshot::unrepresentable_warnings`]), escaped like the warnings show them, in byte order.
    pub fn unrepresentable(&self) -> Vec<String> {
        self.unrepresentable.keys().map(|raw| escape_name(raw, MAX_WARNING_NAME_CHARS)).collect()
    }

    /// The `unrepresentable_path` warning messages for a changeset between `before` and `after`: one for every
    /// file or symlink whose name no changeset can carry (not UTF-8, control characters, backslashes, a drive
    /// prefix, over 4096 bytes...) that was created, changed (its metadata differs) or deleted in between, so it
    /// is never dropped silently. A rename to such a name shows as the deletion in the changeset and a warning
    /// here. Names are escaped (no raw control characters) and cut so each message stays far below the
    /// schema's 4096 characters; `workspace` (a named workspace) prefixes them as `<name>:`. At most 100
    /// messages, then one that counts the rest.
    pub fn unrepresentable_warnings(before: &Snapshot, after: &Snapshot, workspace: Option<&str>) -> Vec<String> {
        let label = workspace.map(|name| format!("{}:", escape_name(name.as_bytes(), 128))).unwrap_or_default();
        let mut names: BTreeSet<&Vec<u8>> = before.unrepresentable.keys().collect();
        names.extend(after.unrepresentable.keys());
        let mut messages = Vec::new();
        let mut left_out = 0usize;
        for raw in names {
            let what = match (before.unrepresentable.get(raw), after.unrepresentable.get(raw)) {
                (None, Some(_)) => "created",
                (Some(_), None) => "deleted",
                (Some(Some(old)), Some(Some(new))) if old != new => "changed",
                _ => continue,
            };
            if messages.len() == MAX_UNREPRESENTABLE_WARNINGS {
                left_out += 1;
                continue;
            }
            let reason = name_problem(raw).unwrap_or_default();
            messages.push(format!(
                "{label}{} is not in the outcome: it was {what} during the run, but its name cannot be carried by a \
                 changeset ({reason})",
                escape_name(raw, MAX_WARNING_NAME_CHARS)
            ));
        }
        if left_out > 0 {
            messages.push(format!(
                "{label}{left_out} more created, changed or deleted files are not in the outcome: their names cannot \
                 be carried by a changeset"
            ));
        }
        messages
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The paths whose contents this snapshot hashed so far (for cost checks).
    pub fn hashed_paths(&self) -> Vec<String> {
        self.hashed.lock().map(|h| h.clone()).unwrap_or_default()
    }

    fn note_hashed(&self, path: &str) {
        if let Ok(mut hashed) = self.hashed.lock() {
            hashed.push(path.to_owned());
        }
    }

    /// The stable snapshot digest ([`SNAPSHOT_DIGEST_METHOD`]). Hashes only files without a digest or blob.
    pub fn digest(&self) -> Result<String> {
        let mut hasher = Sha256::new();
        for (path, file) in &self.files {
            let id = match (&file.target, &file.git_blob) {
                (Some(target), _) => target.clone(),
                (None, Some(oid)) => format!("git-blob:{oid}"),
                (None, None) => self.file_digest(path, file)?,
            };
            let kind = if file.kind == Kind::Symlink { "symlink" } else { "file" };
            hasher.update(format!("{path}\0{kind}\0{:o}\0{id}\n", file.mode).as_bytes());
        }
        Ok(format!("sha256:{}", hex(&hasher.finalize())))
    }

    fn file_digest(&self, path: &str, file: &SnapshotFile) -> Result<String> {
        if let Some(digest) = file.digest.get() {
            return Ok(digest.clone());
        }
        let bytes = self.read_current(path)?;
        self.note_hashed(path);
        let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
        let _ = file.digest.set(digest.clone());
        Ok(digest)
    }

    fn read_current(&self, path: &str) -> Result<Vec<u8>> {
        let full = self.root.join(path);
        fs::read(&full).map_err(|e| Error::Snapshot(format!("{}: {e}", full.display())))
    }

    /// The bytes a file had when this snapshot was taken (from the store or Git), with their digest.
    fn previous_bytes(&self, path: &str, file: &SnapshotFile, store: &ContentStore) -> Result<(Vec<u8>, String)> {
        if let Some(digest) = file.digest.get() {
            if let Ok(bytes) = store.read(digest) {
                return Ok((bytes, digest.clone()));
            }
        }
        if let Some(oid) = &file.git_blob {
            let bytes = git(&self.root, &["cat-file", "blob", oid])
                .filter(|bytes| bytes.len() as u64 == file.size)
                .ok_or_else(|| Error::Snapshot(format!("cannot read the Git blob of {path}")))?;
            self.note_hashed(path);
            let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
            return Ok((bytes, digest));
        }
        Err(Error::Snapshot(format!("the previous content of {path} was not retained")))
    }
}

fn media_type(path: &str, bytes: &[u8]) -> String {
    let lower = path.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let known = match ext {
        "html" | "htm" => "text/html",
        "md" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "csv" => "text/csv",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "yaml" | "yml" => "application/yaml",
        _ => "",
    };
    if !known.is_empty() {
        known.to_owned()
    } else if is_binary(bytes) {
        "application/octet-stream".to_owned()
    } else {
        "text/plain".to_owned()
    }
}

pub(crate) fn guess_media_type(path: &str, bytes: &[u8]) -> String {
    media_type(path, bytes)
}

fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// One side of a change, for the review diff.
enum Side {
    Absent,
    Bytes(Vec<u8>),
    Link(String),
}

impl Changeset {
    /// The changeset between a baseline and a later snapshot of the same workspace: ordered entries
    /// (by path), stats, after contents stored in `store` (charged to `budget`), and a unified review diff
    /// stored as `text/x-diff` content. Only files whose metadata differs are hashed.
    pub fn between(
        id: &str,
        workspace: WorkspaceRef,
        before: &Snapshot,
        after: &Snapshot,
        store: &ContentStore,
        budget: &mut OutcomeBudget,
    ) -> Result<Changeset> {
        build_changeset(id, workspace, before, after, store, budget)
    }
}

/// See [`Changeset::between`].
pub fn build_changeset(
    id: &str,
    workspace: WorkspaceRef,
    before: &Snapshot,
    after: &Snapshot,
    store: &ContentStore,
    budget: &mut OutcomeBudget,
) -> Result<Changeset> {
    let mut paths: BTreeSet<&String> = before.files.keys().collect();
    paths.extend(after.files.keys());
    let mut entries = Vec::new();
    let mut stats = Stats::default();
    let mut diff = String::new();
    for path in paths {
        let old = before.files.get(path);
        let new = after.files.get(path);
        if let (Some(old), Some(new)) = (old, new) {
            if old.same_metadata(new) {
                continue;
            }
        }
        let (before_fp, before_side) = match old {
            None => (None, Side::Absent),
            Some(file) if file.kind == Kind::Symlink => {
                let target = file.target.clone().unwrap_or_default();
                (Some(Fingerprint::Symlink { mode: file.mode, target: target.clone() }), Side::Link(target))
            }
            Some(file) => {
                let (bytes, digest) = before.previous_bytes(path, file, store)?;
                let fp = Fingerprint::File { digest, mode: file.mode, size_bytes: bytes.len() as u64 };
                (Some(fp), Side::Bytes(bytes))
            }
        };
        let (after_state, after_side) = match new {
            None => (None, Side::Absent),
            Some(file) if file.kind == Kind::Symlink => {
                let target = file.target.clone().unwrap_or_default();
                if !symlink_target_is_safe(path, &target) {
                    return Err(Error::EscapingSymlink(path.clone()));
                }
                (Some(State::Symlink { mode: file.mode, target: target.clone() }), Side::Link(target))
            }
            Some(file) => {
                let bytes = after.read_current(path)?;
                after.note_hashed(path);
                let content = store.put_bytes(&bytes, &media_type(path, &bytes), budget)?;
                let _ = file.digest.set(content.digest.clone());
                (Some(State::File { content, mode: file.mode }), Side::Bytes(bytes))
            }
        };
        let unchanged = match (&before_fp, &after_state) {
            (Some(Fingerprint::File { digest, mode, .. }), Some(State::File { content, mode: m })) => {
                *digest == content.digest && mode == m
            }
            (Some(Fingerprint::Symlink { mode, target }), Some(State::Symlink { mode: m, target: t })) => {
                mode == m && target == t
            }
            (None, None) => true,
            _ => false,
        };
        if unchanged {
            continue;
        }
        if matches!(&before_side, Side::Bytes(b) if is_binary(b))
            || matches!(&after_side, Side::Bytes(b) if is_binary(b))
        {
            stats.binary_files += 1;
        }
        diff.push_str(&file_diff(path, &before_fp, &after_state, &before_side, &after_side));
        let entry = match (before_fp, after_state) {
            (None, Some(after)) => {
                stats.additions += 1;
                Entry::Add { path: path.clone(), after }
            }
            (Some(before), Some(after)) => {
                stats.modifications += 1;
                Entry::Modify { path: path.clone(), before, after }
            }
            (Some(before), None) => {
                stats.deletions += 1;
                Entry::Delete { path: path.clone(), before }
            }
            (None, None) => continue,
        };
        entries.push(entry);
    }
    let review =
        if entries.is_empty() { None } else { Some(store.put_bytes(diff.as_bytes(), "text/x-diff", budget)?) };
    let changeset = Changeset {
        id: id.to_owned(),
        workspace,
        base: Base { snapshot_digest: before.digest()?, git_revision: before.git_revision.clone() },
        entries,
        review,
        stats,
    };
    changeset.validate()?;
    Ok(changeset)
}

fn git_mode(fp_mode: Option<u32>, symlink: bool) -> String {
    if symlink {
        "120000".to_owned()
    } else if fp_mode.is_some_and(|m| m & 0o111 != 0) {
        "100755".to_owned()
    } else {
        "100644".to_owned()
    }
}

fn file_diff(path: &str, before: &Option<Fingerprint>, after: &Option<State>, old: &Side, new: &Side) -> String {
    let mut out = format!("diff --git a/{path} b/{path}\n");
    let old_mode = before.as_ref().map(|f| match f {
        Fingerprint::File { mode, .. } => git_mode(Some(*mode), false),
        Fingerprint::Symlink { .. } => git_mode(None, true),
    });
    let new_mode = after.as_ref().map(|s| match s {
        State::File { mode, .. } => git_mode(Some(*mode), false),
        State::Symlink { .. } => git_mode(None, true),
    });
    match (&old_mode, &new_mode) {
        (None, Some(m)) => out.push_str(&format!("new file mode {m}\n")),
        (Some(m), None) => out.push_str(&format!("deleted file mode {m}\n")),
        (Some(a), Some(b)) if a != b => out.push_str(&format!("old mode {a}\nnew mode {b}\n")),
        _ => {}
    }
    let text = |side: &Side| -> Option<String> {
        match side {
            Side::Absent => Some(String::new()),
            Side::Link(target) => Some(target.clone()),
            Side::Bytes(bytes) if bytes.len() <= DIFF_LIMIT && !is_binary(bytes) => {
                String::from_utf8(bytes.clone()).ok()
            }
            Side::Bytes(_) => None,
        }
    };
    let a = if matches!(old, Side::Absent) { "/dev/null".to_owned() } else { format!("a/{path}") };
    let b = if matches!(new, Side::Absent) { "/dev/null".to_owned() } else { format!("b/{path}") };
    match (text(old), text(new)) {
        (Some(old_text), Some(new_text)) => {
            if old_text != new_text {
                let diff = similar::TextDiff::from_lines(&old_text, &new_text);
                out.push_str(&diff.unified_diff().context_radius(3).header(&a, &b).to_string());
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        _ => out.push_str(&format!("Binary files {a} and {b} differ\n")),
    }
    out
}

/// Reads a regular file's current fingerprint-relevant state without following a final symlink.
pub(crate) fn current_content(path: &Path) -> std::io::Result<Content> {
    let bytes = fs::read(path)?;
    Ok(Content {
        digest: format!("sha256:{}", hex(&Sha256::digest(&bytes))),
        media_type: String::new(),
        size_bytes: bytes.len() as u64,
    })
}

/// A baseline digest cache entry: a file whose size, mtime, ctime and inode are unchanged since it was
/// hashed is not read again (like Git's index). Entries changed within 2 s of writing the cache are left
/// out, so a write within the timestamp granularity can never be mistaken for an unchanged file.
struct CachedDigest {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    digest: String,
}

impl CachedDigest {
    fn matches(&self, file: &SnapshotFile) -> bool {
        self.size == file.size
            && self.mtime_ns == file.mtime_ns
            && self.ctime_ns == file.ctime_ns
            && self.ino == file.ino
    }
}

/// `$WORKBENCH_HOME/cache/baselines/<sha256 of the workspace path>`.
fn baseline_cache_path(store: &ContentStore, root: &Path) -> PathBuf {
    let key = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let name = hex(&Sha256::digest(key.to_string_lossy().as_bytes()));
    store.home().join("cache").join("baselines").join(name)
}

/// Lines of `path\0size\0mtime_ns\0ctime_ns\0ino\0digest`; a damaged cache is ignored.
fn read_baseline_cache(path: &Path) -> BTreeMap<String, CachedDigest> {
    let mut cache = BTreeMap::new();
    let Ok(text) = fs::read_to_string(path) else { return cache };
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\0').collect();
        let [path, size, mtime, ctime, ino, digest] = fields[..] else { continue };
        let (Ok(size), Ok(mtime_ns), Ok(ctime_ns), Ok(ino)) = (size.parse(), mtime.parse(), ctime.parse(), ino.parse())
        else {
            continue;
        };
        if crate::util::is_digest(digest) {
            cache.insert(path.to_owned(), CachedDigest { size, mtime_ns, ctime_ns, ino, digest: digest.to_owned() });
        }
    }
    cache
}

fn write_baseline_cache(path: &Path, snapshot: &Snapshot) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i128::try_from(d.as_nanos()).unwrap_or(0))
        .unwrap_or(0);
    let settled = now - 2_000_000_000;
    let mut text = String::new();
    for (name, file) in &snapshot.files {
        let Some(digest) = file.digest.get() else { continue };
        if file.mtime_ns >= settled || file.ctime_ns >= settled {
            continue;
        }
        text.push_str(&format!(
            "{name}\0{}\0{}\0{}\0{}\0{digest}\n",
            file.size, file.mtime_ns, file.ctime_ns, file.ino
        ));
    }
    if let Some(parent) = path.parent() {
        if crate::util::private_dir(parent).is_ok() {
            let _ = crate::util::atomic_write(path, text.as_bytes(), 0o600);
        }
    }
}
