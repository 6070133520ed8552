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

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

type Shard<T> = Mutex<HashMap<OsString, Answer<T>, FxBuildHasher>>;

/// Answers by path, keyed by the path's bytes (the paths asked are plain, so equal paths have equal bytes), in
/// shards chosen by the path's hash: the checks of a pass ask from every core at once, and a thread that waits
/// for a lock another holds sleeps, which on a virtual machine can cost more than the question.
enum Answers<T> {
    /// One map, for one package's checks (one thread).
    One(Shard<T>),
    Sharded(Box<[Shard<T>]>),
}

impl<T> Answers<T> {
    fn sharded(shards: usize) -> Self {
        Answers::Sharded((0..shards.max(1)).map(|_| Mutex::default()).collect())
    }

    /// One map with room for `capacity` answers.
    fn one(capacity: usize) -> Self {
        Answers::One(Mutex::new(HashMap::with_capacity_and_hasher(capacity, FxBuildHasher)))
    }

    #[cfg(test)]
    fn shards(&self) -> &[Shard<T>] {
        match self {
            Answers::One(only) => std::slice::from_ref(only),
            Answers::Sharded(shards) => shards,
        }
    }

    fn shard(&self, path: &OsStr) -> Option<&Shard<T>> {
        use std::hash::BuildHasher;
        match self {
            Answers::One(only) => Some(only),
            Answers::Sharded(shards) => {
                // The high bits: FxHash mixes its last input into them.
                let hash = FxBuildHasher.hash_one(path);
                shards.get((hash >> 60) as usize % shards.len())
            }
        }
    }

    fn lock(&self, path: &OsStr) -> Option<std::sync::MutexGuard<'_, HashMap<OsString, Answer<T>, FxBuildHasher>>> {
        self.shard(path)?.lock().ok()
    }
}

/// What `lstat` told of a path: its kind and, for a regular file, its size (a listing tells the kind only).
#[derive(Clone, Copy)]
struct Stat {
    kind: FileKind,
    len: Option<u64>,
}

/// Where a plain path leads: to itself (no link on the way, what nearly every path asked does: remembered
/// without a copy of it), or elsewhere.
#[derive(Clone)]
enum Real {
    Itself,
    Elsewhere(PathBuf),
}

impl Real {
    fn of(real: PathBuf, path: &Path) -> Real {
        if real == path { Real::Itself } else { Real::Elsewhere(real) }
    }
}

/// What a pass remembered, by path.
struct Store {
    real: Answers<Real>,
    kinds: Answers<Stat>,
    followed: Answers<FileKind>,
    sizes: Answers<u64>,
    listings: Answers<Vec<PathBuf>>,
    /// Directories opened once for the pass (see [`Anchor`]).
    anchors: Mutex<Vec<Arc<Anchor>>>,
}

impl Store {
    /// The store of a pass, in `shards`.
    fn new(shards: usize) -> Store {
        Store {
            anchors: Mutex::default(),
            real: Answers::sharded(shards),
            kinds: Answers::sharded(shards),
            followed: Answers::sharded(shards),
            sizes: Answers::sharded(shards),
            listings: Answers::sharded(shards),
        }
    }

    /// The store of one package's checks: room for the paths a package names, so it rarely grows.
    fn for_package() -> Store {
        Store {
            anchors: Mutex::default(),
            real: Answers::one(16),
            kinds: Answers::one(16),
            followed: Answers::one(0),
            sizes: Answers::one(0),
            listings: Answers::one(4),
        }
    }
}

/// A directory a pass opened once (the one its packages are in): the system calls for paths beneath it walk
/// from it, instead of from `/` through every directory above it, for every file of every package. A link
/// swapped in above it later in the pass changes nothing: like every answer here, the directory is the one the
/// pass first found.
struct Anchor {
    dir: PathBuf,
    fd: sys::Dir,
}

impl Store {
    /// The anchor for `dir`, opened the first time a package in it asks.
    fn anchor(&self, dir: &Path) -> Option<Arc<Anchor>> {
        let mut anchors = self.anchors.lock().ok()?;
        if let Some(anchor) = anchors.iter().find(|anchor| anchor.dir == dir) {
            return Some(Arc::clone(anchor));
        }
        let anchor = Arc::new(Anchor { dir: dir.to_owned(), fd: sys::open_anchor(dir).ok()? });
        anchors.push(Arc::clone(&anchor));
        Some(anchor)
    }
}

/// Shards of a pass's store: enough that the threads of a pool rarely ask the same one at once.
const SHARDS: usize = 16;

/// The disk, with what a pass already asked remembered (see the module docs).
pub struct DiskCache {
    store: Store,
}

impl Default for DiskCache {
    fn default() -> Self {
        DiskCache { store: Store::new(SHARDS) }
    }
}

/// What one package's checks ask, within a pass: its own paths (the ones beneath its directory, which no other
/// package's checks ask) are remembered apart, and forgotten when the package is done; the rest (the repository,
/// the package directory itself, whatever a path leads to outside it) in the pass's store. A pass over thousands
/// of packages then holds what they share, not every file of every package, and each package asks a small map
/// that its thread keeps warm.
struct PackageCache<'a> {
    shared: &'a Store,
    dir: PathBuf,
    own: Store,
    anchor: Option<Arc<Anchor>>,
}

/// The remembered answer, or the one `ask` gives (then remembered). The lock is not held while asking, so two
/// threads may ask the same question once each; both get the same answer.
fn remembered<T: Clone>(map: &Answers<T>, path: &Path, ask: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    if let Some(answer) = map.lock(path.as_os_str()).and_then(|map| map.get(path.as_os_str()).cloned()) {
        return answer.map_err(Failure::error);
    }
    let answer = ask().map_err(|error| Failure::of(&error));
    if let Some(mut map) = map.lock(path.as_os_str()) {
        map.insert(path.as_os_str().to_owned(), answer.clone());
    }
    answer.map_err(Failure::error)
}

/// True for an absolute path of plain names only (no `.`, no `..`, no empty name): its parent is its real
/// parent's lexical parent once the parent is resolved.
fn is_plain(path: &Path) -> bool {
    path.is_absolute() && crate::fs::is_normal(path)
}

/// The parent and last name of a plain path, found at its last slash: what `Path::parent` and
/// `Path::file_name` answer for it, without parsing its components (asked for every path a pass resolves).
fn split_plain(path: &Path) -> Option<(&Path, &OsStr)> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let slash = bytes.iter().rposition(|byte| *byte == b'/')?;
        let name = bytes.get(slash + 1..).filter(|name| !name.is_empty())?;
        let parent = if slash == 0 { bytes.get(..1)? } else { bytes.get(..slash)? };
        Some((Path::new(OsStr::from_bytes(parent)), OsStr::from_bytes(name)))
    }
    #[cfg(not(unix))]
    {
        Some((path.parent()?, path.file_name()?))
    }
}

/// True when `path`'s bytes continue `dir`'s past a separator: beneath it as written. (Which store remembers a
/// path only decides how long it is kept; every store answers as the disk did.)
fn written_beneath(path: &Path, dir: &Path) -> bool {
    let (path, dir) = (path.as_os_str().as_encoded_bytes(), dir.as_os_str().as_encoded_bytes());
    path.strip_prefix(dir).is_some_and(|rest| rest.len() > 1 && rest.first() == Some(&b'/'))
}

impl DiskCache {
    pub fn new() -> DiskCache {
        DiskCache::default()
    }

    fn view(&self) -> View<'_> {
        View { shared: &self.store, package: None, anchor: None }
    }
}

impl PackageCache<'_> {
    fn view(&self) -> View<'_> {
        View { shared: self.shared, package: Some((&self.dir, &self.own)), anchor: self.anchor.as_deref() }
    }
}

/// The stores a question is answered from: the pass's, and while a package is checked, the package's own.
#[derive(Clone, Copy)]
struct View<'a> {
    shared: &'a Store,
    package: Option<(&'a Path, &'a Store)>,
    anchor: Option<&'a Anchor>,
}

/// [`FileSystem`] for a type whose answers come from a [`View`].
macro_rules! file_system_from_view {
    ($type:ty) => {
        impl FileSystem for $type {
            fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
                OsFileSystem.read(path)
            }

            fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
                self.view().read_limited(path, limit)
            }

            fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
                self.view().real_path_of(path).map(Cow::into_owned)
            }

            fn real_path_of<'p>(&self, path: &'p Path) -> io::Result<Cow<'p, Path>> {
                self.view().real_path_of(path)
            }

            fn kind(&self, path: &Path) -> io::Result<FileKind> {
                self.view().stat(path).map(|stat| stat.kind)
            }

            fn size(&self, path: &Path) -> io::Result<u64> {
                self.view().size(path)
            }

            fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
                self.view().kind_followed(path)
            }

            fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
                let view = self.view();
                remembered(&view.store(path).listings, path, || view.list_opened(path, false))
            }

            fn expect_directory(&self, path: &Path) {
                self.view().expect_directory(path)
            }

            fn for_package(&self, dir: &Path) -> Option<Box<dyn FileSystem + '_>> {
                let shared = self.view().shared;
                let anchor = split_plain(dir).filter(|_| is_plain(dir)).and_then(|(parent, _)| shared.anchor(parent));
                Some(Box::new(PackageCache { shared, dir: dir.to_owned(), own: Store::for_package(), anchor }))
            }
        }
    };
}

file_system_from_view!(DiskCache);
file_system_from_view!(PackageCache<'_>);

impl<'a> View<'a> {
    /// Where the system calls for `path` start: from the anchor, with the rest of the path, when it is plain and
    /// beneath it.
    fn at<'p>(&self, path: &'p Path) -> (sys::At<'a>, &'p Path) {
        if let Some(anchor) = self.anchor
            && let Some(rest) = beneath_plain(path, &anchor.dir)
        {
            return (sys::At::Dir(&anchor.fd), rest);
        }
        (sys::At::Cwd, path)
    }

    /// The store that remembers `path`.
    fn store(&self, path: &Path) -> &'a Store {
        match self.package {
            Some((dir, own)) if written_beneath(path, dir) => own,
            _ => self.shared,
        }
    }

    /// Where a plain path leads.
    fn real_of(&self, path: &Path) -> io::Result<Real> {
        remembered(&self.store(path).real, path, || self.resolve(path))
    }

    fn resolve(&self, path: &Path) -> io::Result<Real> {
        let Some((parent, name)) = split_plain(path) else {
            return OsFileSystem.real_path(path).map(|real| Real::of(real, path));
        };
        let candidate = match self.real_of(parent)? {
            Real::Itself => Cow::Borrowed(path),
            Real::Elsewhere(real) => Cow::Owned(real.join(name)),
        };
        match self.stat(&candidate)?.kind {
            // Links (and whatever they lead to) are resolved by the system.
            FileKind::Symlink => OsFileSystem.real_path(&candidate).map(|real| Real::of(real, path)),
            _ => Ok(match candidate {
                Cow::Borrowed(_) => Real::Itself,
                Cow::Owned(real) => Real::Elsewhere(real),
            }),
        }
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        // A regular file this pass saw with `lstat` (no link) is read by the size seen, without asking `fstat`
        // again, and opened without following a link: one swapped in since fails to open.
        if let Some(Stat { kind: FileKind::File, len: Some(len) }) = self.seen(path) {
            if len > u64::try_from(limit).unwrap_or(u64::MAX) {
                return Err(ReadLimitError::TooLarge(len));
            }
            let (at, path) = self.at(path);
            let file = sys::open_file(at, path, true)?;
            return crate::fs::read_open_file(file, len, limit);
        }
        let (at, path) = self.at(path);
        let file = sys::open_file(at, path, false)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(ReadLimitError::Io(io::Error::other("not a regular file")));
        }
        crate::fs::read_open_file(file, meta.len(), limit)
    }

    fn real_path_of<'p>(&self, path: &'p Path) -> io::Result<Cow<'p, Path>> {
        if !is_plain(path) {
            return OsFileSystem.real_path(path).map(Cow::Owned);
        }
        Ok(match self.real_of(path)? {
            Real::Itself => Cow::Borrowed(path),
            Real::Elsewhere(real) => Cow::Owned(real),
        })
    }

    fn size(&self, path: &Path) -> io::Result<u64> {
        match self.stat(path)? {
            Stat { kind: FileKind::File, len: Some(len) } => Ok(len),
            // A link (its target's size), or a kind a listing told.
            _ => remembered(&self.store(path).sizes, path, || OsFileSystem.size(path)),
        }
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        // A path that is not a link is its own target.
        match self.stat(path).map(|stat| stat.kind) {
            Ok(FileKind::Symlink) => remembered(&self.store(path).followed, path, || OsFileSystem.kind_followed(path)),
            other => other,
        }
    }

    fn expect_directory(&self, path: &Path) {
        // Only a path whose parent leads to itself (no link on the way) and whose kind this pass has not asked:
        // the directory is opened without following a final link, so what is listed is the path itself, and
        // its `lstat` would have said "directory". Anything else is left to the questions that follow.
        let Some((parent, _)) = split_plain(path) else { return };
        let store = self.store(path);
        if !cfg!(target_os = "linux")
            || !is_plain(path)
            || store.kinds.lock(path.as_os_str()).is_none_or(|map| map.contains_key(path.as_os_str()))
        {
            return;
        }
        if !matches!(self.real_of(parent), Ok(Real::Itself)) {
            return;
        }
        let Ok(entries) = self.list_opened(path, true) else { return };
        if let Some(mut map) = store.kinds.lock(path.as_os_str()) {
            map.entry(path.as_os_str().to_owned()).or_insert(Ok(Stat { kind: FileKind::Directory, len: None }));
        }
        if let Some(mut map) = store.listings.lock(path.as_os_str()) {
            map.entry(path.as_os_str().to_owned()).or_insert(Ok(entries));
        }
    }

    /// What `lstat` told of `path` earlier in the pass, if it was asked.
    fn seen(&self, path: &Path) -> Option<Stat> {
        let map = self.store(path).kinds.lock(path.as_os_str())?;
        map.get(path.as_os_str())?.as_ref().ok().copied()
    }

    fn stat(&self, path: &Path) -> io::Result<Stat> {
        remembered(&self.store(path).kinds, path, || {
            let (at, relative) = self.at(path);
            sys::lstat(at, relative)
        })
    }

    /// A directory's entries, sorted; the kind of each (which the listing tells without following a link) is
    /// remembered as its `lstat` would have answered. The directory is opened without following a final link
    /// when `no_follow`.
    fn list_opened(&self, path: &Path, no_follow: bool) -> io::Result<Vec<PathBuf>> {
        let mut entries = Vec::new();
        let mut kinds = Vec::new();
        sys::list_into(self.at(path), path, no_follow, &mut entries, &mut kinds)?;
        for (entry, kind) in kinds {
            if let Some(mut map) = self.store(Path::new(&entry)).kinds.lock(&entry) {
                map.entry(entry).or_insert(kind);
            }
        }
        entries.sort();
        Ok(entries)
    }
}

/// The rest of a plain `path` beneath `dir`, when it is beneath it.
fn beneath_plain<'p>(path: &'p Path, dir: &Path) -> Option<&'p Path> {
    if !written_beneath(path, dir) || !is_plain(path) {
        return None;
    }
    let rest = path.as_os_str().as_encoded_bytes().get(dir.as_os_str().len() + 1..)?;
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Some(Path::new(OsStr::from_bytes(rest)))
    }
    #[cfg(not(unix))]
    {
        let _ = rest;
        None
    }
}

/// The system calls a pass makes, one implementation per platform.
#[cfg(target_os = "linux")]
#[path = "disk_cache/sys_linux.rs"]
mod sys;
#[cfg(not(target_os = "linux"))]
#[path = "disk_cache/sys_other.rs"]
mod sys;

type Kinds = Vec<(OsString, Answer<Stat>)>;

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
    /// paths, paths through a file, and `..`.
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
                let got = cache.real_path_of(&path).map(Cow::into_owned).map_err(|e| e.kind());
                assert_eq!(got, want, "real_path_of {relative} (round {round})");
                for boundary in [root.as_path(), &root.join("a")] {
                    let verdict = crate::boundary::resolve_within_real(&cache, &path, boundary).map(|_| ());
                    let stays = crate::boundary::stays_within_real(&cache, &path, boundary);
                    assert_eq!(stays, verdict, "stays_within_real {relative} in {boundary:?}");
                }
                let want = OsFileSystem.kind(&path).map_err(|e| e.kind());
                assert_eq!(cache.kind(&path).map_err(|e| e.kind()), want, "kind {relative}");
                let want = OsFileSystem.kind_followed(&path).map_err(|e| e.kind());
                assert_eq!(cache.kind_followed(&path).map_err(|e| e.kind()), want, "kind_followed {relative}");
                let want = OsFileSystem.read_dir(&path).map_err(|e| e.to_string());
                assert_eq!(cache.read_dir(&path).map_err(|e| e.to_string()), want, "read_dir {relative}");
            }
        }
    }

    /// The kinds a listing tells are the ones `lstat` gives, for every kind of entry.
    #[test]
    fn a_listing_tells_kinds_as_lstat_does() {
        let (_temp, root) = scratch();
        std::fs::create_dir(root.join("dir")).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        symlink(root.join("file"), root.join("link")).unwrap();
        symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let cache = DiskCache::new();
        let entries = cache.read_dir(&root).unwrap();
        assert_eq!(entries, OsFileSystem.read_dir(&root).unwrap());
        assert_eq!(entries.len(), 5);
        for entry in &entries {
            assert_eq!(cache.kind(entry).unwrap(), OsFileSystem.kind(entry).unwrap(), "{entry:?}");
            assert_eq!(cache.size(entry).ok(), OsFileSystem.size(entry).ok(), "{entry:?}");
        }
    }

    /// A file seen by `lstat` is read by that size: whole when it grew or shrank since, refused over the
    /// limit, and not read at all when a link has taken its place (it would be read through the link).
    #[test]
    fn a_file_seen_is_read_whole_and_never_through_a_link_swapped_in() {
        let (_temp, root) = scratch();
        let path = root.join("file");
        for (before, after) in [(10usize, 10usize), (10, 5000), (5000, 3), (0, 7), (7, 0)] {
            std::fs::write(&path, vec![b'a'; before]).unwrap();
            let cache = DiskCache::new();
            assert_eq!(cache.kind(&path).unwrap(), FileKind::File);
            std::fs::write(&path, vec![b'b'; after]).unwrap();
            assert_eq!(cache.read_limited(&path, 100_000).unwrap(), vec![b'b'; after], "{before} then {after}");
        }
        std::fs::write(&path, vec![b'a'; 11]).unwrap();
        let cache = DiskCache::new();
        cache.kind(&path).unwrap();
        assert!(matches!(cache.read_limited(&path, 10), Err(ReadLimitError::TooLarge(11))));

        std::fs::write(root.join("secret"), "secret").unwrap();
        std::fs::write(&path, "plain").unwrap();
        let cache = DiskCache::new();
        cache.kind(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        symlink(root.join("secret"), &path).unwrap();
        assert!(matches!(cache.read_limited(&path, 100), Err(ReadLimitError::Io(_))), "the link is not followed");
        assert_eq!(DiskCache::new().read_limited(&path, 100).unwrap(), b"secret", "a new pass sees the link");
    }

    /// A directory listed ahead (`expect_directory`) answers as the system does, and nothing is listed through
    /// a link: not a link itself, nor a directory beneath one.
    #[test]
    fn a_directory_listed_ahead_answers_as_the_system_does_and_never_through_a_link() {
        let (_temp, root) = scratch();
        std::fs::create_dir_all(root.join("pkg/skills/review")).unwrap();
        std::fs::write(root.join("pkg/skills/review/SKILL.md"), "x").unwrap();
        std::fs::create_dir_all(root.join("outside/deep")).unwrap();
        std::fs::write(root.join("outside/secret"), "s").unwrap();
        symlink(root.join("outside"), root.join("pkg/skills/out")).unwrap();
        symlink(root.join("outside"), root.join("pkg/linked")).unwrap();
        std::fs::write(root.join("pkg/file"), "f").unwrap();
        let paths = ["pkg/skills/review", "pkg/skills/out", "pkg/linked/deep", "pkg/file", "pkg/missing", "pkg"];
        for relative in paths {
            let path = root.join(relative);
            let cache = DiskCache::new();
            cache.expect_directory(&path);
            let listed =
                cache.store.listings.lock(path.as_os_str()).is_some_and(|map| map.contains_key(path.as_os_str()));
            let plain_dir = ["pkg/skills/review", "pkg"].contains(&relative);
            assert_eq!(listed, plain_dir, "listed ahead: {relative}");
            let want = OsFileSystem.kind(&path).map_err(|e| e.kind());
            assert_eq!(cache.kind(&path).map_err(|e| e.kind()), want, "kind {relative}");
            let want = OsFileSystem.real_path(&path).map_err(|e| e.kind());
            assert_eq!(cache.real_path(&path).map_err(|e| e.kind()), want, "real_path {relative}");
            let want = OsFileSystem.read_dir(&path).map_err(|e| e.kind());
            assert_eq!(cache.read_dir(&path).map_err(|e| e.kind()), want, "read_dir {relative}");
            for entry in cache.read_dir(&path).unwrap_or_default() {
                assert_eq!(cache.kind(&entry).unwrap(), OsFileSystem.kind(&entry).unwrap(), "{entry:?}");
            }
        }
        // A path already asked is not listed again.
        let path = root.join("pkg/skills/review");
        let cache = DiskCache::new();
        assert_eq!(cache.kind(&path).unwrap(), FileKind::Directory);
        cache.expect_directory(&path);
        assert!(cache.store.listings.lock(path.as_os_str()).is_some_and(|map| !map.contains_key(path.as_os_str())));
    }

    /// The paths a store remembers anything of.
    fn remembered_paths(store: &Store) -> Vec<PathBuf> {
        fn keys<T>(answers: &Answers<T>) -> Vec<PathBuf> {
            answers
                .shards()
                .iter()
                .flat_map(|shard| shard.lock().unwrap().keys().map(PathBuf::from).collect::<Vec<_>>())
                .collect()
        }
        let mut paths = keys(&store.real);
        paths.extend(keys(&store.kinds));
        paths.extend(keys(&store.followed));
        paths.extend(keys(&store.sizes));
        paths.extend(keys(&store.listings));
        paths
    }

    /// A package's checks get answers as the system gives them, for its own paths, links in it, paths that
    /// leave it and its directory itself; its own paths are remembered apart (gone with it), the rest in the
    /// pass, where the next package finds them.
    #[test]
    fn a_package_remembers_its_own_paths_apart_and_answers_as_the_system_does() {
        let (_temp, root) = scratch();
        let package = root.join("repo/.workbenches/p");
        std::fs::create_dir_all(package.join("skills/review")).unwrap();
        std::fs::write(package.join("skills/review/SKILL.md"), "---\nname: review\n---\n").unwrap();
        std::fs::write(package.join("instructions.md"), "Do it.\n").unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("outside/secret"), "s").unwrap();
        symlink(root.join("outside"), package.join("out")).unwrap();
        symlink("..", package.join("skills/up")).unwrap();
        let paths = [
            "repo/.workbenches/p/instructions.md",
            "repo/.workbenches/p/skills/review",
            "repo/.workbenches/p/skills/review/SKILL.md",
            "repo/.workbenches/p/out",
            "repo/.workbenches/p/out/secret",
            "repo/.workbenches/p/skills/up/instructions.md",
            "repo/.workbenches/p/missing",
            "repo/.workbenches/p",
            "repo/.workbenches",
            "repo",
            "outside/secret",
        ];
        let cache = DiskCache::new();
        assert!(cache.for_package(&package).is_some(), "a pass offers each package its own store");
        let anchor = cache.store.anchor(package.parent().unwrap());
        assert!(anchor.is_some(), "the packages' directory is opened for the pass");
        let own = PackageCache { shared: &cache.store, dir: package.clone(), own: Store::for_package(), anchor };
        own.expect_directory(&package.join("skills/review"));
        for round in 0..2 {
            for relative in paths {
                let path = root.join(relative);
                let want = OsFileSystem.real_path(&path).map_err(|e| e.kind());
                assert_eq!(own.real_path(&path).map_err(|e| e.kind()), want, "real_path {relative} ({round})");
                let got = own.real_path_of(&path).map(Cow::into_owned).map_err(|e| e.kind());
                assert_eq!(got, want, "real_path_of {relative} ({round})");
                let want = OsFileSystem.kind(&path).map_err(|e| e.kind());
                assert_eq!(own.kind(&path).map_err(|e| e.kind()), want, "kind {relative} ({round})");
                let want = OsFileSystem.kind_followed(&path).map_err(|e| e.kind());
                assert_eq!(own.kind_followed(&path).map_err(|e| e.kind()), want, "kind_followed {relative}");
                let want = OsFileSystem.size(&path).map_err(|e| e.kind());
                assert_eq!(own.size(&path).map_err(|e| e.kind()), want, "size {relative} ({round})");
                let want = OsFileSystem.read_dir(&path).map_err(|e| e.kind());
                assert_eq!(own.read_dir(&path).map_err(|e| e.kind()), want, "read_dir {relative} ({round})");
                let want = OsFileSystem.read_limited(&path, 100).map_err(|e| format!("{e:?}"));
                assert_eq!(own.read_limited(&path, 100).map_err(|e| format!("{e:?}")), want, "read {relative}");
            }
        }
        let shared = remembered_paths(&cache.store);
        assert!(shared.contains(&package), "the package directory is the pass's: {shared:?}");
        assert!(shared.contains(&root.join("repo")), "so is the repository: {shared:?}");
        assert!(shared.contains(&root.join("outside/secret")), "and what lies outside: {shared:?}");
        let beneath: Vec<_> = shared.iter().filter(|path| written_beneath(path, &package)).collect();
        assert!(beneath.is_empty(), "the package's own paths stay out of the pass's store: {beneath:?}");
        let kept = remembered_paths(&own.own);
        assert!(kept.contains(&package.join("skills/review/SKILL.md")), "the package keeps its own: {kept:?}");
        assert!(kept.iter().all(|path| written_beneath(path, &package)), "and only its own: {kept:?}");

        // Asked from the anchor, a file seen is still never read through a link swapped in for it.
        let instructions = package.join("instructions.md");
        std::fs::remove_file(&instructions).unwrap();
        symlink(root.join("outside/secret"), &instructions).unwrap();
        assert!(matches!(own.read_limited(&instructions, 100), Err(ReadLimitError::Io(_))), "not followed");
    }

    /// Plain paths split at their last slash as `Path::parent` and `Path::file_name` split them.
    #[test]
    fn plain_paths_split_as_the_standard_library_splits_them() {
        for text in ["/", "/a", "/a/b", "/tmp/c300/.workbenches/pkg-0001/skills/review", "/a b/ü/c.d"] {
            let path = Path::new(text);
            let std = path.parent().zip(path.file_name());
            assert_eq!(split_plain(path), std, "{text}");
        }
    }

    /// The system's `realpath` is asked only for links: the repository and everything in it resolve from
    /// remembered parents.
    #[test]
    fn a_pass_remembers_directories() {
        let (_temp, root) = scratch();
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
