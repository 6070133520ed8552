//! An in-memory file system for the checks: [`MemFs`] implements [`wb_manifest::FileSystem`] over files held
//! by absolute path, with the directories their paths imply and no links, so a test checks a package without
//! touching the disk.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use wb_manifest::{FileKind, FileSystem, ReadLimitError};

/// Files by absolute path; a directory exists when a file lies beneath it. Empty, nothing exists.
#[derive(Clone, Debug, Default)]
pub struct MemFs {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemFs {
    /// An empty file system: every path is missing.
    pub fn new() -> MemFs {
        MemFs::default()
    }

    /// A file system holding `files` (absolute path, content).
    pub fn with_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> MemFs {
        let mut fs = MemFs::new();
        for (path, text) in files {
            fs.add(path, text);
        }
        fs
    }

    /// Adds (or replaces) the file at `path`.
    pub fn add(&mut self, path: impl Into<PathBuf>, bytes: impl AsRef<[u8]>) {
        self.files.insert(path.into(), bytes.as_ref().to_vec());
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.files.keys().any(|file| file != path && file.starts_with(path))
    }

    fn file(&self, path: &Path) -> io::Result<&[u8]> {
        match self.files.get(path) {
            Some(bytes) => Ok(bytes),
            None if self.is_dir(path) => Err(io::ErrorKind::IsADirectory.into()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }
}

impl FileSystem for MemFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.file(path).map(<[u8]>::to_vec)
    }

    fn read_limited(&self, path: &Path, limit: usize) -> Result<Vec<u8>, ReadLimitError> {
        let bytes = self.file(path)?;
        if bytes.len() > limit {
            return Err(ReadLimitError::TooLarge(bytes.len() as u64));
        }
        Ok(bytes.to_vec())
    }

    fn size(&self, path: &Path) -> io::Result<u64> {
        self.file(path).map(|bytes| bytes.len() as u64)
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        if self.files.contains_key(path) {
            Ok(FileKind::File)
        } else if self.is_dir(path) {
            Ok(FileKind::Directory)
        } else {
            Err(io::ErrorKind::NotFound.into())
        }
    }

    fn kind_followed(&self, path: &Path) -> io::Result<FileKind> {
        self.kind(path)
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        // No links in memory: a path that exists is its own real path.
        self.kind(path).map(|_| path.to_path_buf())
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        if !self.is_dir(path) {
            let kind =
                if self.files.contains_key(path) { io::ErrorKind::NotADirectory } else { io::ErrorKind::NotFound };
            return Err(kind.into());
        }
        let mut entries: Vec<PathBuf> = self
            .files
            .keys()
            .filter_map(|file| file.strip_prefix(path).ok())
            .filter_map(|rest| rest.components().next())
            .map(|first| path.join(first))
            .collect();
        entries.sort();
        entries.dedup();
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_imply_their_directories_and_reads_are_bounded() {
        let fs = MemFs::with_files([("/r/p/a.txt", "abc"), ("/r/p/s/b.md", "x"), ("/r/c", "")]);
        assert_eq!(fs.kind(Path::new("/r/p")).unwrap(), FileKind::Directory);
        assert_eq!(fs.kind(Path::new("/r/p/a.txt")).unwrap(), FileKind::File);
        assert_eq!(fs.kind(Path::new("/r/q")).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(fs.read_dir(Path::new("/r/p")).unwrap(), [PathBuf::from("/r/p/a.txt"), PathBuf::from("/r/p/s")]);
        assert_eq!(fs.read_dir(Path::new("/r/c")).unwrap_err().kind(), io::ErrorKind::NotADirectory);
        assert_eq!(fs.read(Path::new("/r/p")).unwrap_err().kind(), io::ErrorKind::IsADirectory);
        assert_eq!(fs.read_limited(Path::new("/r/p/a.txt"), 3).unwrap(), b"abc");
        assert!(matches!(fs.read_limited(Path::new("/r/p/a.txt"), 2), Err(ReadLimitError::TooLarge(3))));
        assert_eq!(fs.size(Path::new("/r/p/a.txt")).unwrap(), 3);
        assert!(MemFs::new().read_dir(Path::new("/")).is_err());
    }
}
