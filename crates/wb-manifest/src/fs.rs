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

pub trait FileSystem: Send + Sync {
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// The kind of a path without following a final symlink.
    fn kind(&self, path: &Path) -> io::Result<FileKind>;
    /// The kind of a path after following symlinks.
    fn kind_followed(&self, path: &Path) -> io::Result<FileKind>;
    /// The entries of a directory (full paths), sorted.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFileSystem;

fn kind_of(file_type: std::fs::FileType) -> FileKind {
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
