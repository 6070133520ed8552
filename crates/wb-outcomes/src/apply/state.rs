//! What a destination holds now, compared with a changeset entry's before and after states, and the safety
//! checks on workspace roots and parents that run before anything is written.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, io};
use crate::manifest::{Fingerprint, State};
use crate::snapshot::current_content;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Current {
    Absent,
    File { digest: String, mode: u32, size: u64 },
    Symlink { mode: u32, target: String },
}

pub(super) fn current(dest: &Path, label: &str) -> Result<Current> {
    let meta = match fs::symlink_metadata(dest) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Current::Absent),
        Err(e) => return Err(io(format!("Cannot inspect {}", dest.display()))(e)),
    };
    let mode = meta.permissions().mode() & 0o777;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(dest).map_err(io(format!("Cannot read {}", dest.display())))?;
        return Ok(Current::Symlink { mode, target: target.to_string_lossy().into_owned() });
    }
    if !meta.is_file() {
        return Err(Error::NotAFile(label.to_owned()));
    }
    let content = current_content(dest).map_err(io(format!("Cannot read {}", dest.display())))?;
    Ok(Current::File { digest: content.digest, mode, size: content.size_bytes })
}

pub(super) fn equals_after(current: &Current, after: Option<&State>) -> bool {
    match (current, after) {
        (Current::Absent, None) => true,
        (Current::File { digest, mode, .. }, Some(State::File { content, mode: m })) => {
            *digest == content.digest && mode == m
        }
        (Current::Symlink { target, .. }, Some(State::Symlink { target: t, .. })) => target == t,
        _ => false,
    }
}

pub(super) fn equals_before(current: &Current, before: Option<&Fingerprint>) -> bool {
    match (current, before) {
        (Current::Absent, None) => true,
        (Current::File { digest, mode, size }, Some(Fingerprint::File { digest: d, mode: m, size_bytes })) => {
            digest == d && mode == m && size == size_bytes
        }
        (Current::Symlink { target, .. }, Some(Fingerprint::Symlink { target: t, .. })) => target == t,
        _ => false,
    }
}

/// Checks that every existing ancestor of `dest` below `root` is a real directory.
pub(super) fn check_parents(root: &Path, path: &str) -> Result<()> {
    let mut dir = root.to_path_buf();
    let segments: Vec<&str> = path.split('/').collect();
    for segment in &segments[..segments.len().saturating_sub(1)] {
        dir.push(segment);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() && !meta.file_type().is_symlink() => {}
            Ok(_) => return Err(Error::UnsafeParent(dir)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) => return Err(Error::UnsafeParent(dir)),
        }
    }
    Ok(())
}

pub(super) fn check_root(root: &Path) -> Result<PathBuf> {
    let meta = fs::symlink_metadata(root).map_err(|_| Error::UnsafeWorkspace(root.to_path_buf()))?;
    if !meta.is_dir() || meta.file_type().is_symlink() {
        return Err(Error::UnsafeWorkspace(root.to_path_buf()));
    }
    Ok(root.to_path_buf())
}
