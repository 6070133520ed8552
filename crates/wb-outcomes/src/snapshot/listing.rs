//! Which files a Git workspace holds and its `HEAD` (`git ls-files`, `git rev-parse`), and the index blobs of
//! its clean files (`index.rs`), started in parallel with the snapshot's scan of the disk.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use super::Snapshot;
use super::git::git;
use super::index::{GitIndex, read_index};
use crate::error::{Error, Result};

/// Where `git rev-parse --git-path` output leads from the workspace (it is relative to it, or absolute).
fn root_relative(root: &Path, path: Option<&Path>) -> Option<PathBuf> {
    path.map(|path| root.join(path))
}

/// `git ls-files -co --exclude-standard -z`, `git rev-parse HEAD` and, for a baseline, the index of a workspace,
/// started before Git has said whether the workspace is a work tree (outside one they fail and are not used).
pub(super) struct GitListing {
    listing: JoinHandle<Option<Vec<u8>>>,
    head: JoinHandle<Option<Vec<u8>>>,
    index: Option<IndexRead>,
}

/// The index being read, and where from: `.git/index` with SHA-1 object ids, what a work tree with its own
/// `.git` directory usually has; used only when Git then names that file and that format.
struct IndexRead {
    file: PathBuf,
    thread: JoinHandle<Option<GitIndex>>,
    sizes_cache: Option<PathBuf>,
}

const USUAL_INDEX: &str = ".git/index";

/// The object format a read started before Git said assumes.
const USUAL_HASH: gix_index::hash::Kind = gix_index::hash::Kind::Sha1;

impl GitListing {
    pub(super) fn start(root: &Path, with_index: bool, sizes_cache: Option<PathBuf>) -> GitListing {
        let spawn = |args: &'static [&'static str]| {
            let root = root.to_path_buf();
            std::thread::spawn(move || git(&root, args))
        };
        let index = with_index.then(|| {
            let file = PathBuf::from(USUAL_INDEX);
            let thread = if root.join(".git").is_dir() {
                let (root, file, cache) = (root.to_path_buf(), file.clone(), sizes_cache.clone());
                std::thread::spawn(move || read_index(&root, Some(&file), Some(USUAL_HASH), cache.as_deref()))
            } else {
                std::thread::spawn(|| None)
            };
            IndexRead { file, thread, sizes_cache }
        });
        GitListing {
            listing: spawn(&["ls-files", "-co", "--exclude-standard", "-z"]),
            head: spawn(&["rev-parse", "--verify", "-q", "HEAD"]),
            index,
        }
    }
}

impl Snapshot {
    /// Lists a Git workspace's tracked and unignored files (`git ls-files -co --exclude-standard -z`) and its
    /// `HEAD` (from `started`) and, when `started` reads the index, the index blobs of clean tracked files (Git
    /// runs concurrently with the metadata scan), `index_file` being where `git rev-parse --git-path index` says
    /// the index is.
    pub(super) fn list_from_git(
        &mut self,
        started: GitListing,
        index_file: Option<PathBuf>,
        object_hash: Option<gix_index::hash::Kind>,
    ) -> Result<()> {
        let GitListing { listing, head, index } = started;
        let index = index.map(|read| {
            let same_file = root_relative(&self.root, index_file.as_deref()) == Some(self.root.join(&read.file));
            if same_file && object_hash == Some(USUAL_HASH) {
                return read.thread;
            }
            // The index is elsewhere (a linked work tree, a workspace inside a repository), or its object ids
            // are longer: read again.
            let root = self.root.clone();
            let cache = read.sizes_cache;
            std::thread::spawn(move || read_index(&root, index_file.as_deref(), object_hash, cache.as_deref()))
        });
        let listing = listing
            .join()
            .ok()
            .flatten()
            .ok_or_else(|| Error::Snapshot(format!("git ls-files failed in {}", self.root.display())))?;
        let names: Vec<&[u8]> = listing.split(|b| *b == 0).filter(|s| !s.is_empty()).collect();
        self.add_all(&names);
        self.git_revision = head
            .join()
            .ok()
            .flatten()
            .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
            .filter(|rev| !rev.is_empty());
        if let Some(index) = index.and_then(|thread| thread.join().ok().flatten()) {
            self.attach_git_blobs(&index);
        }
        Ok(())
    }
}
