//! Where an entry is (its workspace root, a directory handle opened once, and its path below it) and what it
//! holds now, compared with a changeset entry's before and after states. Every look and every change goes
//! through directory handles opened without following symlinks (`crate::beneath`), each directory opened once
//! per apply: a parent swapped for a symlink (or moved) after its checks is never followed, and every entry is
//! written into the directory it was checked in.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::beneath::{Dir, Kind, is_symlink_or_not_dir, split};
use crate::digest::content_digest;
use crate::error::{Error, Result, io};
use crate::manifest::{Fingerprint, State};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Current {
    Absent,
    File { digest: String, mode: u32, size: u64 },
    Symlink { mode: u32, target: String },
}

/// A walk below a workspace root stopped at the parent with this index: it is a symlink or not a directory,
/// or it cannot be opened.
struct Blocked(usize);

/// A workspace root, open, and the directories below it opened so far (by their path below the root).
pub(super) struct Workspace {
    root: Rc<Dir>,
    opened: RefCell<HashMap<String, Rc<Dir>>>,
}

impl Workspace {
    /// Opens the workspace root: an existing real directory, not a symlink.
    pub(super) fn open(root: &Path) -> Result<Rc<Workspace>> {
        let dir = Dir::open(root).map_err(|_| Error::UnsafeWorkspace(root.to_path_buf()))?;
        Ok(Rc::new(Workspace { root: Rc::new(dir), opened: RefCell::default() }))
    }

    pub(super) fn path(&self) -> &Path {
        self.root.path()
    }

    /// Walks `parents` down from the root, each directory opened (without following a symlink) the first
    /// time only; stops at the first that does not exist.
    fn walk(&self, parents: &[&str]) -> Result<(Rc<Dir>, usize), Blocked> {
        let mut dir = self.root.clone();
        for (index, name) in parents.iter().enumerate() {
            let key = parents[..=index].join("/");
            let known = self.opened.borrow().get(&key).cloned();
            dir = match known {
                Some(known) => known,
                None => match dir.child(name) {
                    Ok(Some(child)) => self.remember(key, child),
                    Ok(None) => return Ok((dir, index)),
                    Err(_) => return Err(Blocked(index)),
                },
            };
        }
        Ok((dir, parents.len()))
    }

    fn remember(&self, path: String, dir: Dir) -> Rc<Dir> {
        let dir = Rc::new(dir);
        self.opened.borrow_mut().insert(path, dir.clone());
        dir
    }
}

/// An entry's place: its workspace and its `/`-separated path below the root.
pub(super) struct Place {
    pub(super) workspace: Rc<Workspace>,
    pub(super) path: String,
}

/// How far the parents of a place exist.
pub(super) enum Parent {
    /// Every parent exists: the deepest one, open.
    Open(Rc<Dir>),
    /// The parents from this index of [`Place::parents`] on do not exist; the deepest that does, open.
    Missing(Rc<Dir>, usize),
}

impl Place {
    /// The absolute path (for messages and the journal).
    pub(super) fn dest(&self) -> PathBuf {
        self.workspace.path().join(&self.path)
    }

    /// The parent directories' names, root first.
    pub(super) fn parents(&self) -> Vec<&str> {
        split(&self.path).0
    }

    /// The last component.
    pub(super) fn name(&self) -> &str {
        split(&self.path).1
    }

    /// The absolute path of the first `depth` parents.
    pub(super) fn parent_path(&self, depth: usize) -> PathBuf {
        self.workspace.path().join(self.parents()[..depth].join("/"))
    }

    /// Opens the parents one by one without following a symlink: one that is a symlink or not a directory
    /// (or cannot be opened) is [`Error::UnsafeParent`].
    pub(super) fn parent(&self) -> Result<Parent> {
        let parents = self.parents();
        match self.workspace.walk(&parents) {
            Ok((dir, depth)) if depth == parents.len() => Ok(Parent::Open(dir)),
            Ok((dir, depth)) => Ok(Parent::Missing(dir, depth)),
            Err(Blocked(index)) => Err(Error::UnsafeParent(self.parent_path(index + 1))),
        }
    }

    /// Creates the missing parent `index` (of [`Place::parents`]) in `dir`, opens it without following a
    /// symlink (one swapped in meanwhile is refused) and keeps it open for the rest of the apply.
    pub(super) fn create_parent(&self, dir: &Dir, index: usize) -> Result<Rc<Dir>> {
        let parents = self.parents();
        let path = self.parent_path(index + 1);
        let child = dir.create_child(parents[index], 0o777).map_err(|e| {
            if is_symlink_or_not_dir(&e) {
                Error::UnsafeParent(path.clone())
            } else {
                io(format!("Cannot create {}", path.display()))(e)
            }
        })?;
        Ok(self.workspace.remember(parents[..=index].join("/"), child))
    }

    /// What the place holds now.
    pub(super) fn current(&self, label: &str) -> Result<Current> {
        match self.parent()? {
            Parent::Open(dir) => current_in(&dir, self.name(), &self.dest(), label),
            Parent::Missing(..) => Ok(Current::Absent),
        }
    }
}

/// What `name` in `dir` holds now (`dest` and `label` name it in errors).
pub(super) fn current_in(dir: &Dir, name: &str, dest: &Path, label: &str) -> Result<Current> {
    let stat = match dir.stat(name) {
        Ok(Some(stat)) => stat,
        Ok(None) => return Ok(Current::Absent),
        Err(e) => return Err(io(format!("Cannot inspect {}", dest.display()))(e)),
    };
    match stat.kind {
        Kind::Symlink => {
            let target = dir.read_link(name).map_err(io(format!("Cannot read {}", dest.display())))?;
            Ok(Current::Symlink { mode: stat.mode, target: target.to_string_lossy().into_owned() })
        }
        Kind::File => {
            let bytes = dir.read(name).map_err(io(format!("Cannot read {}", dest.display())))?;
            Ok(Current::File { digest: content_digest(&bytes), mode: stat.mode, size: bytes.len() as u64 })
        }
        Kind::Dir | Kind::Other => Err(Error::NotAFile(label.to_owned())),
    }
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

/// Removes the directory at `path` below the workspace root if it is empty, without following a symlink on
/// the way. Returns whether it was removed.
pub(super) fn remove_empty_dir(workspace: &Workspace, path: &str) -> bool {
    let (parents, name) = split(path);
    let removed = match workspace.walk(&parents) {
        Ok((dir, depth)) if depth == parents.len() => dir.remove_dir(name).is_ok(),
        _ => false,
    };
    if removed {
        workspace.opened.borrow_mut().remove(path);
    }
    removed
}

/// The temporary file a destination is written to before its rename: `<dest>.workbench-<hex>.tmp`.
pub(super) fn temp_for(dest: &Path, hex: &str) -> PathBuf {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dest.with_file_name(format!("{name}.workbench-{hex}.tmp"))
}
