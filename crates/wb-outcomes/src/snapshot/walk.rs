//! Which files a snapshot holds outside Git: the walk of a workspace, the exclusions every snapshot applies
//! (a Workbench home inside the workspace among them), and how one file or symlink is recorded.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::names::{RawStat, name_problem};
use super::{Snapshot, metadata_entry};
use crate::error::{Error, Result};

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

/// The top-level entries a Workbench home holds, left out when the home is the workspace itself.
const HOME_ENTRIES: &[&str] = &["blobs", "outcomes", "cache", "runs"];

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
        let lossy = String::from_utf8_lossy(raw);
        if is_excluded(&lossy) || self.in_home(&lossy) {
            return;
        }
        let full = self.root.join(OsStr::from_bytes(raw));
        let meta = fs::symlink_metadata(&full);
        if name_problem(raw).is_some() {
            let stat = match meta {
                Ok(meta) if meta.file_type().is_symlink() || meta.file_type().is_file() => {
                    Some(RawStat::of(&meta, &full))
                }
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
