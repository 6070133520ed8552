//! Which files a snapshot holds outside Git: the walk of a workspace, the exclusions every snapshot applies
//! (a Workbench home inside the workspace among them), and how one file or symlink is recorded.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::names::{RawStat, name_problem};
use super::{Snapshot, SnapshotFile, metadata_entry};
use crate::error::{Error, Result};

/// Whether a workspace-relative path is left out of snapshots (engine facts (f)): VCS metadata and dependency
/// trees, and every credential path of the one policy, [`wb_manifest::is_credential_path`] (credential
/// directories, `.env` files but their templates, key and credential names). Path-based, not a content
/// classifier.
pub fn is_excluded(path: &str) -> bool {
    path.split('/').any(|s| matches!(s, ".git" | ".hg" | ".svn" | "node_modules"))
        || wb_manifest::is_credential_path(path)
}

/// A listing this long is examined on several threads ([`Snapshot::add_all`]), at most this many.
const PARALLEL_FROM: usize = 2048;
const MAX_THREADS: usize = 4;

/// What one listed name turned out to be.
enum Listed {
    /// A file or symlink, by its workspace-relative path.
    Entry(String, SnapshotFile),
    /// A name a changeset cannot carry, with its metadata when it could be read.
    Unrepresentable(Vec<u8>, Option<RawStat>),
    /// Excluded, in the Workbench home, missing, or neither a file nor a symlink.
    Skipped,
}

/// The top-level entries a Workbench home holds, left out when the home is the workspace itself.
const HOME_ENTRIES: &[&str] = &["blobs", "outcomes", "cache", crate::RUNS_DIR];

/// Where a Workbench home is inside a workspace, as a workspace-relative path (`""` when it is the workspace),
/// or `None` when it is elsewhere; both are resolved (a symlinked path to either is the same place).
pub(super) fn home_within(root: &Path, home: &Path) -> Option<String> {
    let root = fs::canonicalize(root).ok()?;
    let home = fs::canonicalize(home).ok()?;
    let relative = home.strip_prefix(&root).ok()?;
    Some(relative.to_string_lossy().into_owned())
}

/// Whether a workspace-relative path is the Workbench home at `home` (see [`home_within`]) or inside it: a
/// workspace that contains the home never captures the store (its blobs, outcomes, runs and caches).
pub(super) fn is_in_home(home: &str, path: &str) -> bool {
    let top = if home.is_empty() {
        match path.split('/').next() {
            Some(first) if HOME_ENTRIES.contains(&first) => return true,
            _ => return false,
        }
    } else {
        home
    };
    path == top || path.strip_prefix(top).is_some_and(|rest| rest.starts_with('/'))
}

impl Snapshot {
    /// Whether a workspace-relative path is left out as part of the Workbench home.
    fn in_home(&self, path: &str) -> bool {
        self.home.as_deref().is_some_and(|home| is_in_home(home, path))
    }

    /// Records a file or symlink (a workspace-relative raw name); other kinds and missing paths are skipped.
    /// A name a changeset cannot carry is kept apart with its metadata (see [`Snapshot::unrepresentable_warnings`]).
    pub(super) fn add(&mut self, raw: &[u8]) {
        let listed = self.examine(raw);
        self.record(listed);
    }

    /// [`Snapshot::add`] of every name, in order; a long listing is examined on several threads (the metadata
    /// reads are most of a large workspace's snapshot), then recorded in listing order.
    pub(super) fn add_all(&mut self, names: &[&[u8]]) {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
        if threads < 2 || names.len() < PARALLEL_FROM {
            for raw in names {
                self.add(raw);
            }
            return;
        }
        let chunk = names.len().div_ceil(threads);
        let this = &*self;
        let examined: Vec<Vec<Listed>> = std::thread::scope(|scope| {
            let workers: Vec<_> = names
                .chunks(chunk)
                .map(|part| scope.spawn(move || part.iter().map(|raw| this.examine(raw)).collect::<Vec<_>>()))
                .collect();
            // A worker that panicked leaves its names out, as an unreadable file would be.
            workers.into_iter().map(|worker| worker.join().unwrap_or_default()).collect()
        });
        let mut entries = Vec::with_capacity(names.len());
        for listed in examined.into_iter().flatten() {
            match listed {
                Listed::Entry(path, file) => entries.push((path, file)),
                other => self.record(other),
            }
        }
        if self.files.is_empty() {
            // Built at once from the listing (Git's is sorted already), not entry by entry.
            self.files = entries.into_iter().collect();
        } else {
            self.files.extend(entries);
        }
    }

    /// What a workspace-relative raw name is (the reads of [`Snapshot::add`], without recording it).
    fn examine(&self, raw: &[u8]) -> Listed {
        let lossy = String::from_utf8_lossy(raw);
        if is_excluded(&lossy) || self.in_home(&lossy) {
            return Listed::Skipped;
        }
        let full = self.root.join(OsStr::from_bytes(raw));
        let meta = fs::symlink_metadata(&full);
        if name_problem(raw).is_some() {
            let stat = match meta {
                Ok(meta) if meta.file_type().is_symlink() || meta.file_type().is_file() => {
                    Some(RawStat::of(&meta, &full))
                }
                Ok(_) => return Listed::Skipped,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Listed::Skipped,
                // It exists but cannot be examined (a path too long for the system): its presence is still known.
                Err(_) => None,
            };
            return Listed::Unrepresentable(raw.to_vec(), stat);
        }
        let Ok(meta) = meta else { return Listed::Skipped };
        let path = lossy.into_owned();
        let file_type = meta.file_type();
        if file_type.is_symlink() {
            let target = fs::read_link(&full).map(|t| t.to_string_lossy().into_owned()).unwrap_or_default();
            Listed::Entry(path, metadata_entry(&meta, Some(target)))
        } else if file_type.is_file() {
            Listed::Entry(path, metadata_entry(&meta, None))
        } else {
            Listed::Skipped
        }
    }

    fn record(&mut self, listed: Listed) {
        match listed {
            Listed::Entry(path, file) => {
                self.files.insert(path, file);
            }
            Listed::Unrepresentable(raw, stat) => {
                self.unrepresentable.insert(raw, stat);
            }
            Listed::Skipped => {}
        }
    }

    /// Walks the workspace depth first, each directory's entries in name order, without recursion (a deep tree
    /// must not exhaust a run thread's stack): a stack of the paths still to visit, the next one last.
    pub(super) fn walk(&mut self) -> Result<()> {
        let mut pending: Vec<(PathBuf, bool)> = vec![(PathBuf::new(), true)];
        while let Some((relative, is_dir)) = pending.pop() {
            if !is_dir {
                self.add(relative.as_os_str().as_bytes());
                continue;
            }
            let dir = self.root.join(&relative);
            let entries = fs::read_dir(&dir).map_err(|e| Error::Snapshot(format!("{}: {e}", dir.display())))?;
            let mut names: Vec<_> = entries.flatten().collect();
            names.sort_by_key(|e| e.file_name());
            for entry in names.into_iter().rev() {
                let path = relative.join(entry.file_name());
                let Ok(file_type) = entry.file_type() else { continue };
                if file_type.is_dir() {
                    // A directory whose name is not UTF-8 is walked too: each file in it is reported by its own name.
                    let lossy = path.to_string_lossy();
                    if !is_excluded(&lossy) && !self.in_home(&lossy) {
                        pending.push((path, true));
                    }
                } else {
                    pending.push((path, false));
                }
            }
        }
        Ok(())
    }
}
