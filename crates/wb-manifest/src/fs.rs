//! File access for the checks. Everything the checks read goes through [`FileSystem`], so the language server
//! can overlay unsaved editor buffers and tests can run without touching the disk.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    File,
    Directory,
    Symlink,
    Other,
}

/// Why a bounded read returned no content.
#[derive(Debug)]
pub enum ReadLimitError {
    /// The file holds more than the limit: its size in bytes (at least the limit plus one).
    TooLarge(u64),
    Io(io::Error),
}

impl From<io::Error> for ReadLimitError {
    fn from(error: io::Error) -> ReadLimitError {
        ReadLimitError::Io(error)
    }
}

pub trait FileSystem: Send + Sync {
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Reads a whole regular file of at most `limit` bytes without ever holding more than `limit + 1` of them:
    /// a larger file (or one that keeps producing bytes, like `/dev/zero`) is [`ReadLimitError::TooLarge`].
    /// Every implementation keeps that bound (there is no default: one over [`Self::read`] could not).
    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError>;
    /// The path with every symbolic link resolved, as the disk has it (an editor buffer never changes where a
    /// path leads, so implementations over a real disk must ask the disk).
    fn real_path(&self, path: &Path) -> io::Result<PathBuf>;
    /// The kind of a path without following a final symlink.
    fn kind(&self, path: &Path) -> io::Result<FileKind>;
    /// The kind of a path after following symlinks.
    fn kind_followed(&self, path: &Path) -> io::Result<FileKind>;
    /// The size in bytes of the file a path leads to (links followed), without reading it where the file system
    /// can tell.
    fn size(&self, path: &Path) -> io::Result<u64> {
        self.read(path).map(|bytes| bytes.len() as u64)
    }
    /// The entries of a directory (full paths), sorted.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// A parse of `bytes`, just read from `path`, that this file system keeps (an editor's buffer, parsed once
    /// for its diagnostics, hover and completion); `None` lets the checks parse.
    fn cached_parse(&self, path: &Path, bytes: &[u8]) -> Option<std::sync::Arc<wb_syntax::Parse>> {
        let _ = (path, bytes);
        None
    }
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFileSystem;

pub(crate) fn kind_of(file_type: std::fs::FileType) -> FileKind {
    if file_type.is_symlink() {
        FileKind::Symlink
    } else if file_type.is_dir() {
        FileKind::Directory
    } else if file_type.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    }
}

impl FileSystem for OsFileSystem {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        let file = open_for_reading(path, false)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(ReadLimitError::Io(io::Error::other("not a regular file")));
        }
        read_open_file(file, meta.len(), limit)
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        std::fs::symlink_metadata(path).map(|meta| kind_of(meta.file_type()))
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        std::fs::metadata(path).map(|meta| kind_of(meta.file_type()))
    }

    fn size(&self, path: &Path) -> io::Result<u64> {
        std::fs::metadata(path).map(|meta| meta.len())
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries =
            std::fs::read_dir(path)?.map(|entry| entry.map(|e| e.path())).collect::<io::Result<Vec<_>>>()?;
        entries.sort();
        Ok(entries)
    }
}

/// Opens a file to read it: never blocking on a FIFO swapped in after the checks (the kind is checked on the
/// handle, or the read is bounded), and with `no_follow`, failing on a link where a file was seen.
pub(crate) fn open_for_reading(path: &Path, no_follow: bool) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        let mut flags = nix::fcntl::OFlag::O_NONBLOCK;
        if no_follow {
            flags |= nix::fcntl::OFlag::O_NOFOLLOW;
        }
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, flags.bits());
    }
    #[cfg(not(unix))]
    let _ = no_follow;
    options.open(path)
}

/// Reads an open regular file whose size was `size` (by `fstat`, or by the `lstat` just before it was opened),
/// holding at most `limit + 1` bytes whatever it holds by now.
pub(crate) fn read_open_file(file: std::fs::File, size: u64, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
    use std::io::Read;
    let cap = u64::try_from(limit).unwrap_or(u64::MAX);
    if size > cap {
        return Err(ReadLimitError::TooLarge(size));
    }
    // Files in pseudo file systems report a size of 0 whatever they hold: the read itself is bounded.
    let expected = usize::try_from(size).unwrap_or(limit).min(limit);
    let mut bytes = Vec::new();
    let mut handle = file.take(cap.saturating_add(1));
    if expected > 0 {
        // One read with room for a byte more than the file's size: getting exactly that size back, short
        // of the room, is the end of a regular file, so the read that would return nothing is not made.
        bytes.resize(expected.saturating_add(1), 0);
        let got = loop {
            match handle.read(&mut bytes) {
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        bytes.truncate(got);
        if got == expected {
            return Ok(bytes);
        }
    }
    // A file that changed size since `fstat`, or whose size says nothing: read to the end, still bounded.
    handle.read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(ReadLimitError::TooLarge(size.max(bytes.len() as u64)));
    }
    Ok(bytes)
}

/// Lexically normalises an absolute path: removes `.` and resolves `..` without touching the disk.
pub fn normalize(path: &Path) -> PathBuf {
    normalized(path).into_owned()
}

/// [`normalize`] without a copy for a path that is already normal (what the checks ask about most).
pub fn normalized(path: &Path) -> std::borrow::Cow<'_, Path> {
    if is_normal(path) { std::borrow::Cow::Borrowed(path) } else { std::borrow::Cow::Owned(lexical(path)) }
}

/// True when [`normalize`] would return the path unchanged: a root, then names separated by single slashes,
/// none of them `.` or `..`, and no slash at the end.
pub(crate) fn is_normal(path: &Path) -> bool {
    if !cfg!(unix) {
        return false;
    }
    let bytes = path.as_os_str().as_encoded_bytes();
    let body = bytes.strip_prefix(b"/").unwrap_or(bytes);
    body.is_empty() || body.split(|byte| *byte == b'/').all(|name| !name.is_empty() && name != b"." && name != b"..")
}

/// `normalize(&dir.join(relative))` for an absolute, normal `dir`, in one allocation when `relative` is plain
/// names after any leading `./` (what a package's paths nearly always are: `./skills/review`).
pub(crate) fn join_normalized(dir: &Path, relative: &str) -> PathBuf {
    let mut names = relative;
    while let Some(rest) = names.strip_prefix("./") {
        names = rest.trim_start_matches('/');
    }
    let plain = !names.is_empty()
        && !names.starts_with('/')
        && names.split('/').all(|name| !name.is_empty() && name != "." && name != "..");
    if !(plain && dir.is_absolute() && is_normal(dir)) {
        return normalize(&dir.join(relative));
    }
    let mut joined = PathBuf::with_capacity(dir.as_os_str().len() + 1 + names.len());
    joined.push(dir);
    joined.push(names);
    joined
}

fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::with_capacity(path.as_os_str().len());
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// True when `path` is `root` or beneath it (both normalised).
pub fn is_inside(path: &Path, root: &Path) -> bool {
    is_beneath(&normalized(path), &normalized(root))
}

/// `path.starts_with(root)` for normal paths, compared as bytes (what the checks ask for every path a package
/// names); other paths are compared component by component.
pub(crate) fn is_beneath(path: &Path, root: &Path) -> bool {
    if !(cfg!(unix) && is_normal(path) && is_normal(root)) {
        return path.starts_with(root);
    }
    let (path, root) = (path.as_os_str().as_encoded_bytes(), root.as_os_str().as_encoded_bytes());
    match path.strip_prefix(root) {
        Some(rest) => rest.is_empty() || rest[0] == b'/' || root == b"/" || root.is_empty(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The copy-free answer is the lexical normalisation whenever it is taken.
    #[test]
    fn joining_normalized_equals_normalizing_the_join() {
        let dirs = ["/repo/.workbenches/p", "/", "/a/./b", "/a/../b", "/a/b/"];
        let values = [
            "./skills/review",
            "skills/review",
            ".//skills",
            "././x",
            "./",
            ".",
            "",
            "../..",
            "./a/../b",
            "a//b",
            "a/",
            "./.hidden/x",
            "..x/y",
            "a/./b",
            "/abs",
            "./ü/ß",
        ];
        for dir in dirs {
            for value in values {
                let want = normalize(&Path::new(dir).join(value));
                assert_eq!(join_normalized(Path::new(dir), value), want, "{dir} + {value}");
            }
        }
    }

    #[test]
    fn a_normal_path_is_its_own_normalisation() {
        for path in [
            "",
            "/",
            "//",
            "/a",
            "/a/b",
            "/a/b/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/..",
            "/a/.",
            "a",
            "a/b",
            "./a",
            "../a",
            "a/..",
            ".",
            "..",
            "/a/b.c/.d/..e",
            "/a/.../b",
        ] {
            let path = Path::new(path);
            assert_eq!(normalized(path).as_ref(), lexical(path).as_path(), "{path:?}");
        }
        assert!(matches!(normalized(Path::new("/a/b.c")), std::borrow::Cow::Borrowed(_)));
    }

    /// A read gets the whole file whatever its size says: exactly its size, empty, or grown past it.
    #[test]
    fn a_limited_read_gets_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        for size in [0usize, 1, 100, 4096, 70_000] {
            let path = dir.path().join(format!("f{size}"));
            let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(OsFileSystem.read_limited(&path, 100_000).unwrap(), bytes, "{size} bytes");
        }
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'x'; 11]).unwrap();
        assert!(matches!(OsFileSystem.read_limited(&path, 10), Err(ReadLimitError::TooLarge(11))));
    }
}
