//! [`DiskCache`]: the real file system for one pass over many packages (a `check` run, one batch of editor
//! diagnostics), remembering where paths lead and what kind they are.
//!
//! Resolving a path through its symbolic links is the checks' most frequent question: every path a package names
//! is resolved, and so is the repository it must stay in. `realpath(3)` answers it with one `readlink` per
//! component, every time. Here a path's real path is its parent's (remembered) joined with its name, found with
//! one `lstat`; only a component that is a link is resolved by the system. Kinds and directory listings are
//! remembered too, so a pass asks the disk each question once. File contents are never kept: each read goes to
//! the disk.
//!
//! A cache answers for the moment it first asked: keep one for one pass, never across edits. The engine checks
//! again without following links when it copies files at run time, so an answer that went stale within a pass
//! can never make it read outside the boundary.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use rustc_hash::FxBuildHasher;

use crate::fs::{FileKind, FileSystem, OsFileSystem, ReadLimitError};

/// An error as remembered: rebuilt from its OS code, so it reads as the system's did.
#[derive(Clone, Copy)]
struct Failure {
    kind: io::ErrorKind,
    os: Option<i32>,
}

impl Failure {
    fn of(error: &io::Error) -> Failure {
        Failure { kind: error.kind(), os: error.raw_os_error() }
    }

    fn error(self) -> io::Error {
        match self.os {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::from(self.kind),
        }
    }
}

type Answer<T> = Result<T, Failure>;

/// Answers by path, keyed by the path's bytes (the paths asked are plain, so equal paths have equal bytes).
type Answers<T> = Mutex<HashMap<OsString, Answer<T>, FxBuildHasher>>;

/// What `lstat` told of a path: its kind and, for a regular file, its size (a listing tells the kind only).
#[derive(Clone, Copy)]
struct Stat {
    kind: FileKind,
    len: Option<u64>,
}

/// The disk, with what a pass already asked remembered (see the module docs).
#[derive(Default)]
pub struct DiskCache {
    real: Answers<PathBuf>,
    kinds: Answers<Stat>,
    followed: Answers<FileKind>,
    sizes: Answers<u64>,
    listings: Answers<Vec<PathBuf>>,
}

/// The remembered answer, or the one `ask` gives (then remembered). The lock is not held while asking, so two
/// threads may ask the same question once each; both get the same answer.
fn remembered<T: Clone>(map: &Answers<T>, path: &Path, ask: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    if let Some(answer) = map.lock().ok().and_then(|map| map.get(path.as_os_str()).cloned()) {
        return answer.map_err(Failure::error);
    }
    let answer = ask().map_err(|error| Failure::of(&error));
    if let Ok(mut map) = map.lock() {
        map.insert(path.as_os_str().to_owned(), answer.clone());
    }
    answer.map_err(Failure::error)
}

/// True for an absolute path of plain names only (no `.`, no `..`): its parent is its real parent's lexical
/// parent once the parent is resolved.
fn is_plain(path: &Path) -> bool {
    path.is_absolute() && path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

impl DiskCache {
    pub fn new() -> DiskCache {
        DiskCache::default()
    }

    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return OsFileSystem.real_path(path);
        };
        let candidate = self.real_path(parent)?.join(name);
        match self.kind(&candidate)? {
            // Links (and whatever they lead to) are resolved by the system.
            FileKind::Symlink => OsFileSystem.real_path(&candidate),
            _ => Ok(candidate),
        }
    }
}

impl FileSystem for DiskCache {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        OsFileSystem.read(path)
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        OsFileSystem.read_limited(path, limit)
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        if !is_plain(path) {
            return OsFileSystem.real_path(path);
        }
        remembered(&self.real, path, || self.resolve(path))
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        self.stat(path).map(|stat| stat.kind)
    }

    fn size(&self, path: &Path) -> io::Result<u64> {
        match self.stat(path)? {
            Stat { kind: FileKind::File, len: Some(len) } => Ok(len),
            // A link (its target's size), or a kind a listing told.
            _ => remembered(&self.sizes, path, || OsFileSystem.size(path)),
        }
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        // A path that is not a link is its own target.
        match self.kind(path) {
            Ok(FileKind::Symlink) => remembered(&self.followed, path, || OsFileSystem.kind_followed(path)),
            other => other,
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        remembered(&self.listings, path, || self.list(path))
    }
}

impl DiskCache {
    fn stat(&self, path: &Path) -> io::Result<Stat> {
        remembered(&self.kinds, path, || {
            let meta = std::fs::symlink_metadata(path)?;
            let kind = crate::fs::kind_of(meta.file_type());
            Ok(Stat { kind, len: (kind == FileKind::File).then_some(meta.len()) })
        })
    }

    /// A directory's entries, sorted; the kind of each (which the listing tells without following a link) is
    /// remembered as its `lstat` would have answered.
    fn list(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries = Vec::new();
        let mut kinds = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let full = entry.path();
            if let Ok(file_type) = entry.file_type() {
                let kind = crate::fs::kind_of(file_type);
                kinds.push((full.as_os_str().to_owned(), Ok(Stat { kind, len: None })));
            }
            entries.push(full);
        }
        if let Ok(mut map) = self.kinds.lock() {
            for (path, kind) in kinds {
                map.entry(path).or_insert(kind);
            }
        }
        entries.sort();
        Ok(entries)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// Every answer equals the system's, for plain paths, links, links to links, dangling links, loops, missing
    /// paths, paths through a file, and `..`.
    #[test]
    fn answers_as_the_system_does() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/file"), "x").unwrap();
        std::fs::create_dir_all(root.join("outside/deep")).unwrap();
        symlink(root.join("outside"), root.join("a/out")).unwrap();
        symlink("b", root.join("a/rel")).unwrap();
        symlink(root.join("a/rel"), root.join("a/chain")).unwrap();
        symlink(root.join("nowhere"), root.join("a/dangling")).unwrap();
        symlink(root.join("a/loop2"), root.join("a/loop1")).unwrap();
        symlink(root.join("a/loop1"), root.join("a/loop2")).unwrap();
        let paths = [
            "a",
            "a/b",
            "a/b/file",
            "a/b/file/below",
            "a/out",
            "a/out/deep",
            "a/out/deep/missing",
            "a/rel/file",
            "a/chain/file",
            "a/dangling",
            "a/loop1",
            "a/loop1/x",
            "missing",
            "missing/below",
            "a/out/../b",
            "a/./b",
        ];
        let cache = DiskCache::new();
        for round in 0..2 {
            for relative in paths {
                let path = root.join(relative);
                let want = OsFileSystem.real_path(&path).map_err(|e| e.kind());
                let got = cache.real_path(&path).map_err(|e| e.kind());
                assert_eq!(got, want, "real_path {relative} (round {round})");
                let want = OsFileSystem.kind(&path).map_err(|e| e.kind());
                assert_eq!(cache.kind(&path).map_err(|e| e.kind()), want, "kind {relative}");
                let want = OsFileSystem.kind_followed(&path).map_err(|e| e.kind());
                assert_eq!(cache.kind_followed(&path).map_err(|e| e.kind()), want, "kind_followed {relative}");
                let want = OsFileSystem.read_dir(&path).map_err(|e| e.to_string());
                assert_eq!(cache.read_dir(&path).map_err(|e| e.to_string()), want, "read_dir {relative}");
            }
        }
    }

    /// The system's `realpath` is asked only for links: the repository and everything in it resolve from
    /// remembered parents.
    #[test]
    fn a_pass_remembers_directories() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("repo/.workbenches/p")).unwrap();
        std::fs::write(root.join("repo/.workbenches/p/workbench.yml"), "").unwrap();
        let cache = DiskCache::new();
        let manifest = root.join("repo/.workbenches/p/workbench.yml");
        assert_eq!(cache.real_path(&manifest).unwrap(), manifest);
        // Gone from the disk, still remembered: the pass asked once.
        std::fs::remove_file(&manifest).unwrap();
        assert_eq!(cache.real_path(&manifest).unwrap(), manifest);
        assert_eq!(cache.kind(&manifest).unwrap(), FileKind::File);
        assert!(DiskCache::new().real_path(&manifest).is_err(), "a new pass asks again");
    }
}
