//! File access for the checks. Everything the checks read goes through [`FileSystem`], so the language server
//! can overlay unsaved editor buffers and tests can run without touching the disk.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        let bytes = self.read(path)?;
        if bytes.len() > limit {
            return Err(ReadLimitError::TooLarge(bytes.len() as u64));
        }
        Ok(bytes)
    }
    /// The path with every symbolic link resolved, as the disk has it (an editor buffer never changes where a
    /// path leads, so implementations over a real disk must ask the disk).
    fn real_path(&self, path: &Path) -> io::Result<PathBuf>;
    /// The kind of a path without following a final symlink.
    fn kind(&self, path: &Path) -> io::Result<FileKind>;
    /// The kind of a path after following symlinks.
    fn kind_followed(&self, path: &Path) -> io::Result<FileKind>;
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
        use std::io::Read;
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        // A FIFO swapped in after the checks must not block the open; the kind is checked on the handle.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, nix::fcntl::OFlag::O_NONBLOCK.bits());
        let file = options.open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(ReadLimitError::Io(io::Error::other("not a regular file")));
        }
        let cap = u64::try_from(limit).unwrap_or(u64::MAX);
        if meta.len() > cap {
            return Err(ReadLimitError::TooLarge(meta.len()));
        }
        // Files in pseudo file systems report a size of 0 whatever they hold: the read itself is bounded.
        let expected = usize::try_from(meta.len()).unwrap_or(limit).min(limit);
        let mut bytes = Vec::with_capacity(expected.saturating_add(1));
        file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() > limit {
            return Err(ReadLimitError::TooLarge(meta.len().max(bytes.len() as u64)));
        }
        Ok(bytes)
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

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries =
            std::fs::read_dir(path)?.map(|entry| entry.map(|e| e.path())).collect::<io::Result<Vec<_>>>()?;
        entries.sort();
        Ok(entries)
    }
}

/// Lexically normalises an absolute path: removes `.` and resolves `..` without touching the disk.
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
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
    normalize(path).starts_with(normalize(root))
}
