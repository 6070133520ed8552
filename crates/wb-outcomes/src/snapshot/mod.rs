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
//!
//! Rooms: `git.rs` (running Git on a workspace, listing a Git workspace), `index.rs` (which index blobs give
//! clean files back), `walk.rs` (listing any other, exclusions),
//! `names.rs` (names a changeset cannot carry), `cache.rs` (baselines and their digest cache),
//! `changeset.rs` (the changeset between two snapshots), `review.rs` (its review diff, media types).

mod cache;
mod changeset;
mod git;
mod index;
mod listing;
mod names;
mod review;
mod walk;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::digest::{content_digest, hex};
use crate::error::{Error, Result};
use crate::files::read_regular;
use crate::manifest::Content;
use crate::store::ContentStore;

pub use git::{set_git_deadline, workspace_git, workspace_git_output};
pub(crate) use review::guess_media_type;
pub(crate) use review::is_binary as is_binary_text;
pub use walk::is_excluded;

use names::RawStat;

/// How `base.snapshot_digest` is computed.
pub const SNAPSHOT_DIGEST_METHOD: &str = "sha256 over the snapshot's paths in byte order, one line each: \
`<path>\\0<kind>\\0<mode in octal>\\0<id>\\n`, where kind is `file` or `symlink` and id is the file's \
`sha256:<hex>` digest, `git-blob:<oid>` for a clean file tracked by Git whose index blob has the file's size \
(checkout does not convert it), or the symlink target";

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
    /// The Workbench home's workspace-relative path when the workspace contains it (left out, see
    /// [`walk::is_in_home`]).
    home: Option<String>,
}

/// Modification time in nanoseconds since the epoch.
fn mtime_ns(meta: &fs::Metadata) -> i128 {
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

/// Status-change time in nanoseconds since the epoch.
fn ctime_ns(meta: &fs::Metadata) -> i128 {
    i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec())
}

fn metadata_entry(meta: &fs::Metadata, target: Option<String>) -> SnapshotFile {
    SnapshotFile {
        kind: if target.is_some() { Kind::Symlink } else { Kind::File },
        mode: meta.permissions().mode() & 0o777,
        size: meta.len(),
        mtime_ns: mtime_ns(meta),
        ctime_ns: ctime_ns(meta),
        ino: meta.ino(),
        dev: meta.dev(),
        target,
        git_blob: None,
        digest: OnceLock::new(),
    }
}

impl Snapshot {
    /// A metadata snapshot of a workspace: Git workspaces list tracked and unignored files
    /// (`git ls-files -co --exclude-standard -z`), others are walked; exclusions apply to both.
    /// Digests are computed lazily.
    pub fn capture(root: &Path) -> Result<Snapshot> {
        Snapshot::capture_with(root, false, None)
    }

    /// [`Snapshot::capture`] of a workspace that may contain the Workbench home `home`: the home is left out.
    pub fn capture_excluding_home(root: &Path, home: &Path) -> Result<Snapshot> {
        Snapshot::capture_with(root, false, Some(home))
    }

    /// `with_index`: also record the index blobs of clean tracked files (Git runs concurrently with the
    /// metadata scan); `home`: a Workbench home to leave out.
    fn capture_with(root: &Path, with_index: bool, home: Option<&Path>) -> Result<Snapshot> {
        let meta = fs::symlink_metadata(root).map_err(|e| Error::Snapshot(format!("{}: {e}", root.display())))?;
        if !meta.is_dir() {
            return Err(Error::Snapshot(format!("not a directory: {}", root.display())));
        }
        // The listing and `HEAD` of a Git workspace are asked at once, while one Git says whether this is a work
        // tree and where its index is (`true\n<path>\n`); outside a work tree they fail and are not used.
        // Blob sizes are remembered in the Workbench home (see `index::read_index`).
        let sizes_cache = home.filter(|_| with_index).map(|home| home.join("cache").join("blob-sizes"));
        let started = listing::GitListing::start(root, with_index, sizes_cache);
        // With the object format the index's ids are in (a Git before 2.25 does not know `--show-object-format`:
        // asked again without it, and no blob is trusted).
        let probe =
            git::git(root, &["rev-parse", "--is-inside-work-tree", "--git-path", "index", "--show-object-format"])
                .or_else(|| git::git(root, &["rev-parse", "--is-inside-work-tree", "--git-path", "index"]));
        let probe = probe.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
        let mut lines = probe.lines();
        let is_git = lines.next() == Some("true");
        let index_file = lines.next().filter(|path| !path.is_empty()).map(PathBuf::from);
        let object_hash = match lines.next() {
            Some("sha1") => Some(gix_index::hash::Kind::Sha1),
            Some("sha256") => Some(gix_index::hash::Kind::Sha256),
            _ => None,
        };
        let mut snapshot = Snapshot {
            root: root.to_path_buf(),
            files: BTreeMap::new(),
            git_revision: None,
            git: is_git,
            hashed: Mutex::new(Vec::new()),
            unrepresentable: BTreeMap::new(),
            home: home.and_then(|home| walk::home_within(root, home)),
        };
        if is_git {
            snapshot.list_from_git(started, index_file, object_hash)?;
        } else {
            snapshot.walk()?;
        }
        Ok(snapshot)
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
        use std::io::Write;
        let mut hasher = Sha256::new();
        // One line per file, written into the hasher piece by piece (10,000 files, no string each).
        let mut line = Vec::with_capacity(256);
        for (path, file) in &self.files {
            line.clear();
            let kind = if file.kind == Kind::Symlink { "symlink" } else { "file" };
            let _ = write!(line, "{path}\0{kind}\0{:o}\0", file.mode);
            match (&file.target, &file.git_blob) {
                (Some(target), _) => line.extend_from_slice(target.as_bytes()),
                (None, Some(oid)) => {
                    line.extend_from_slice(b"git-blob:");
                    line.extend_from_slice(oid.as_bytes());
                }
                (None, None) => line.extend_from_slice(self.file_digest(path, file)?.as_bytes()),
            }
            line.push(b'\n');
            hasher.update(&line);
        }
        Ok(format!("sha256:{}", hex(&hasher.finalize())))
    }

    fn file_digest(&self, path: &str, file: &SnapshotFile) -> Result<String> {
        if let Some(digest) = file.digest.get() {
            return Ok(digest.clone());
        }
        let bytes = self.read_current(path)?;
        self.note_hashed(path);
        let digest = content_digest(&bytes);
        let _ = file.digest.set(digest.clone());
        Ok(digest)
    }

    fn read_current(&self, path: &str) -> Result<Vec<u8>> {
        let full = self.root.join(path);
        read_regular(&full).map_err(|e| Error::Snapshot(format!("{}: {e}", full.display())))
    }

    /// The bytes a file had when this snapshot was taken (from the store or Git), with their digest.
    /// `blobs`: Git blobs already read by object id ([`Snapshot::read_blobs`]).
    fn previous_bytes(
        &self,
        path: &str,
        file: &SnapshotFile,
        store: &ContentStore,
        blobs: &mut HashMap<String, Vec<u8>>,
    ) -> Result<(Vec<u8>, String)> {
        if let Some(digest) = file.digest.get()
            && let Ok(bytes) = store.read(digest)
        {
            return Ok((bytes, digest.clone()));
        }
        if let Some(oid) = &file.git_blob {
            let bytes = blobs
                .remove(oid)
                .or_else(|| git::git(&self.root, &["cat-file", "blob", oid]))
                .filter(|bytes| bytes.len() as u64 == file.size)
                .ok_or_else(|| Error::Snapshot(format!("cannot read the Git blob of {path}")))?;
            self.note_hashed(path);
            let digest = content_digest(&bytes);
            return Ok((bytes, digest));
        }
        Err(Error::Snapshot(format!("the previous content of {path} was not retained")))
    }
}

impl Snapshot {
    /// The Git blobs of the files at `paths` whose previous bytes only Git holds, read by one `git cat-file
    /// --batch` (one Git per file would cost a process each), by object id. A blob the batch does not give whole
    /// is left out: it is asked for alone later.
    pub(crate) fn read_blobs<'p>(
        &self,
        paths: impl Iterator<Item = &'p str>,
        store: &ContentStore,
    ) -> HashMap<String, Vec<u8>> {
        let oids: BTreeSet<&str> = paths
            .filter_map(|path| self.files.get(path))
            .filter(|file| file.digest.get().is_none_or(|digest| !store.contains(digest)))
            .filter_map(|file| file.git_blob.as_deref())
            .collect();
        let mut blobs = HashMap::new();
        if oids.len() < 2 {
            return blobs;
        }
        let input: String = oids.iter().map(|oid| format!("{oid}\n")).collect();
        let Some(output) = git::git_with_input(&self.root, &["cat-file", "--batch"], input.into_bytes()) else {
            return blobs;
        };
        // `<oid> blob <size>\n<bytes>\n` for each, or `<oid> missing\n`.
        let mut rest = output.as_slice();
        while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
            let header = String::from_utf8_lossy(&rest[..newline]).into_owned();
            rest = &rest[newline + 1..];
            let mut fields = header.split(' ');
            let (Some(oid), Some(kind), Some(size)) = (fields.next(), fields.next(), fields.next()) else { continue };
            let Some(size) = size.parse::<usize>().ok().filter(|size| *size < rest.len()) else { break };
            if kind == "blob" && oids.contains(oid) {
                blobs.insert(oid.to_owned(), rest[..size].to_vec());
            }
            rest = &rest[size + 1..];
        }
        blobs
    }
}

/// Reads a regular file's current fingerprint-relevant state without following a final symlink.
pub(crate) fn current_content(path: &Path) -> std::io::Result<Content> {
    let bytes = read_regular(path)?;
    Ok(Content { digest: content_digest(&bytes), media_type: String::new(), size_bytes: bytes.len() as u64 })
}
