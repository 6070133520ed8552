//! [`DiskCache`]: the real file system for one pass over many packages (a `check` run, one batch of editor
//! diagnostics), remembering where paths lead and what kind they are.
//!
//! Resolving a path through its symbolic links is the checks' most frequent question: every path a package
//! names is resolved, and so is the repository it must stay in. `realpath(3)` answers it with one `readlink` per
//! component, every time. Here a path's real path is its parent's (remembered) joined with its name, found with
//! one `lstat` (remembered too, with the size it gave); only a path that is a link is resolved by the system. A
//! directory listing tells its entries' kinds, which are remembered as their `lstat` would have answered. The
//! size of a regular file an `lstat` saw answers [`FileSystem::size`] and sizes the buffer a limited read
//! fills (no `fstat`: the read goes on to the end of the file whatever it holds by then, still bounded).
//! Contents and listings go to the disk each time.
//!
//! A cache answers for the moment it first asked: keep one for one pass, never across edits. The engine checks
//! again without following links when it copies files at run time, so an answer that went stale within a pass
//! can never make it read outside the boundary.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use dashmap::DashMap;

use crate::fs::{
    FileKind, FileSystem, OsFileSystem, ReadLimitError, is_normal, kind_of, open_for_reading, read_open_file,
};

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

/// Answers keyed by the path's bytes (a `Path` hashes and compares component by component, which costs more than
/// the lookup; the paths asked are absolute and normal, so equal paths have equal bytes).
type Answers<T> = DashMap<OsString, Result<T, Failure>, rustc_hash::FxBuildHasher>;

/// What a pass knows of a path without following a final link: its kind, and the size its `lstat` gave
/// (`None` when a directory listing told the kind).
#[derive(Clone, Copy)]
struct Seen {
    kind: FileKind,
    size: Option<u64>,
}

/// The disk, with the real paths and kinds a pass already asked remembered (see the module docs).
#[derive(Default)]
pub struct DiskCache {
    real: Answers<PathBuf>,
    seen: Answers<Seen>,
}

/// The remembered answer, or the one `ask` gives (then remembered). No lock is held while asking, so two threads
/// may ask the same question once each; both get the same answer.
fn remembered<T: Clone>(answers: &Answers<T>, path: &Path, ask: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    if let Some(answer) = answers.get(path.as_os_str()) {
        return answer.clone().map_err(Failure::error);
    }
    let answer = ask().map_err(|error| Failure::of(&error));
    answers.insert(path.as_os_str().to_owned(), answer.clone());
    answer.map_err(Failure::error)
}

impl DiskCache {
    pub fn new() -> DiskCache {
        DiskCache::default()
    }

    /// Where `path` leads: from its parent's real path for an absolute, normal path (one `lstat`), from the
    /// system for a link or any other path.
    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return OsFileSystem.real_path(path);
        };
        if !(path.is_absolute() && is_normal(path)) {
            return OsFileSystem.real_path(path);
        }
        let real_parent = self.real_path(parent)?;
        let candidate = if real_parent == parent { path.to_owned() } else { real_parent.join(name) };
        match self.kind(&candidate)? {
            FileKind::Symlink => OsFileSystem.real_path(&candidate),
            _ => Ok(candidate),
        }
    }

    fn seen(&self, path: &Path) -> io::Result<Seen> {
        remembered(&self.seen, path, || {
            std::fs::symlink_metadata(path).map(|meta| Seen { kind: kind_of(meta.file_type()), size: Some(meta.len()) })
        })
    }

    /// The size an `lstat` of this pass gave `path`, when it is a regular file (not a link to one).
    fn file_size(&self, path: &Path) -> Option<u64> {
        match self.seen.get(path.as_os_str()).as_deref() {
            Some(Ok(Seen { kind: FileKind::File, size })) => *size,
            _ => None,
        }
    }
}

impl FileSystem for DiskCache {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        OsFileSystem.read(path)
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        // A regular file this pass saw: opened without following a link swapped in since.
        match self.file_size(path) {
            Some(size) => read_open_file(open_for_reading(path, true)?, size, limit),
            None => OsFileSystem.read_limited(path, limit),
        }
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        remembered(&self.real, path, || self.resolve(path))
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        self.seen(path).map(|seen| seen.kind)
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        // A path that is not a link is its own target.
        match self.kind(path)? {
            FileKind::Symlink => OsFileSystem.kind_followed(path),
            kind => Ok(kind),
        }
    }

    fn size(&self, path: &Path) -> io::Result<u64> {
        match self.seen(path)? {
            Seen { kind: FileKind::File, size: Some(size) } => Ok(size),
            _ => OsFileSystem.size(path),
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let entry_path = entry.path();
            // The kind a listing tells is the entry's own (a link is a link), as `lstat` answers it.
            if let Ok(file_type) = entry.file_type() {
                let seen = Seen { kind: kind_of(file_type), size: None };
                self.seen.entry(entry_path.clone().into_os_string()).or_insert(Ok(seen));
            }
            entries.push(entry_path);
        }
        entries.sort();
        Ok(entries)
    }
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    /// A temporary directory (removed when the first half is dropped) and its real path.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().canonicalize().unwrap();
        (temp, root)
    }

    /// Every answer equals the system's, for plain paths, links, links to links, dangling links, loops, missing
    /// paths, paths through a file, `..`, and the entries of a listing (every kind of entry).
    #[test]
    fn answers_as_the_system_does() {
        let (_temp, root) = scratch();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/file"), "x").unwrap();
        std::fs::create_dir_all(root.join("outside/deep")).unwrap();
        symlink(root.join("outside"), root.join("a/out")).unwrap();
        symlink("b", root.join("a/rel")).unwrap();
        symlink(root.join("a/rel"), root.join("a/chain")).unwrap();
        symlink(root.join("nowhere"), root.join("a/dangling")).unwrap();
        symlink(root.join("a/loop2"), root.join("a/loop1")).unwrap();
        symlink(root.join("a/loop1"), root.join("a/loop2")).unwrap();
        nix::unistd::mkfifo(&root.join("a/fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
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
            "a/fifo",
            "missing",
            "missing/below",
            "a/out/../b",
            "a/./b",
        ];
        for list_first in [false, true] {
            let cache = DiskCache::new();
            if list_first {
                assert_eq!(cache.read_dir(&root.join("a")).unwrap(), OsFileSystem.read_dir(&root.join("a")).unwrap());
            }
            for round in 0..2 {
                for relative in paths {
                    let path = root.join(relative);
                    let want = OsFileSystem.real_path(&path).map_err(|e| e.kind());
                    let got = cache.real_path(&path).map_err(|e| e.kind());
                    assert_eq!(got, want, "real_path {relative} (round {round})");
                    for boundary in [root.as_path(), &root.join("a")] {
                        let want = crate::boundary::resolve_within_real(&OsFileSystem, &path, boundary);
                        let got = crate::boundary::resolve_within_real(&cache, &path, boundary);
                        assert_eq!(got, want, "resolve_within_real {relative} in {boundary:?}");
                    }
                    let want = OsFileSystem.kind(&path).map_err(|e| e.kind());
                    assert_eq!(cache.kind(&path).map_err(|e| e.kind()), want, "kind {relative}");
                    let want = OsFileSystem.kind_followed(&path).map_err(|e| e.kind());
                    assert_eq!(cache.kind_followed(&path).map_err(|e| e.kind()), want, "kind_followed {relative}");
                    let want = OsFileSystem.size(&path).map_err(|e| e.kind());
                    assert_eq!(cache.size(&path).map_err(|e| e.kind()), want, "size {relative}");
                    let want = OsFileSystem.read_limited(&path, 1024).map_err(|e| format!("{e:?}"));
                    let got = cache.read_limited(&path, 1024).map_err(|e| format!("{e:?}"));
                    assert_eq!(got.is_ok(), want.is_ok(), "read_limited {relative}: {got:?} vs {want:?}");
                    assert_eq!(got.ok(), want.ok(), "read_limited {relative}");
                    let want = OsFileSystem.read_dir(&path).map_err(|e| e.to_string());
                    assert_eq!(cache.read_dir(&path).map_err(|e| e.to_string()), want, "read_dir {relative}");
                }
            }
        }
    }

    /// A file that grew or shrank after this pass saw its size is still read whole, and still bounded.
    #[test]
    fn a_limited_read_takes_the_file_as_it_is_now() {
        let (_temp, root) = scratch();
        let file = root.join("file");
        std::fs::write(&file, "short").unwrap();
        let cache = DiskCache::new();
        assert_eq!(cache.size(&file).unwrap(), 5);
        std::fs::write(&file, "a longer text").unwrap();
        assert_eq!(cache.read_limited(&file, 100).unwrap(), b"a longer text");
        assert!(matches!(cache.read_limited(&file, 8), Err(ReadLimitError::TooLarge(_))));
        std::fs::write(&file, "x").unwrap();
        assert_eq!(cache.read_limited(&file, 100).unwrap(), b"x");
        // A link swapped in where the file was seen is not followed.
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &file).unwrap();
        assert!(cache.read_limited(&file, 100).is_err());
    }

    /// A pass asks once: what it found stays its answer (a new pass asks again).
    #[test]
    fn a_pass_remembers_real_paths_and_kinds() {
        let (_temp, root) = scratch();
        std::fs::create_dir_all(root.join("repo/.workbenches/p")).unwrap();
        std::fs::write(root.join("repo/.workbenches/p/workbench.yml"), "").unwrap();
        let cache = DiskCache::new();
        let manifest = root.join("repo/.workbenches/p/workbench.yml");
        assert_eq!(cache.real_path(&manifest).unwrap(), manifest);
        std::fs::remove_file(&manifest).unwrap();
        assert_eq!(cache.real_path(&manifest).unwrap(), manifest);
        assert_eq!(cache.kind(&manifest).unwrap(), FileKind::File);
        assert!(DiskCache::new().real_path(&manifest).is_err(), "a new pass asks again");
    }
}
