//! Scratch directories and file trees: write (creating parent directories), read, chmod, and `copy_tree`,
//! the one copy every test uses.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A temporary directory and its canonical path (a binary started in it sees canonical paths through
/// `current_dir`, and messages carry them).
pub fn temp_dir() -> (TempDir, PathBuf) {
    let temp = tempfile::tempdir().expect("a temporary directory");
    let path = temp.path().canonicalize().expect("the temporary directory has a canonical path");
    (temp, path)
}

/// The repository's `fixtures/` directory (the checker's corpus and `example-repo`), canonical.
pub fn repository_fixtures() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    path.canonicalize().unwrap_or_else(|error| panic!("the fixtures directory {}: {error}", path.display()))
}

/// Writes `root/relative`, creating its parent directories.
pub fn write(root: &Path, relative: &str, contents: impl AsRef<[u8]>) {
    write_file(&root.join(relative), contents);
}

/// Writes `path`, creating its parent directories.
pub fn write_file(path: &Path, contents: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap_or_else(|error| panic!("create {}: {error}", parent.display()));
    }
    fs::write(path, contents).unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
}

/// The text of `root/relative`.
pub fn read(root: &Path, relative: &str) -> String {
    let path = root.join(relative);
    fs::read_to_string(&path).unwrap_or_else(|error| panic!("read {}: {error}", path.display()))
}

/// Sets the permission bits of `root/relative` (a symlink's target, as `chmod` does).
pub fn chmod(root: &Path, relative: &str, mode: u32) {
    let path = root.join(relative);
    fs::set_permissions(&path, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|error| panic!("chmod {mode:o} {}: {error}", path.display()));
}

/// Copies the tree `from` into `to` (created if missing): every regular file with its bytes and permission
/// bits, every symlink recreated with the same target (never followed, so a link that leaves the tree or
/// dangles is copied as it is), every directory recursively. Directories are created with the default mode
/// (a copy of a read-only tree stays writable, so tests can edit and remove it). Any other kind of file
/// (a FIFO, a socket, a device) fails the test: no fixture has one.
pub fn copy_tree(from: &Path, to: &Path) {
    copy(from, to, &|_| false);
}

/// [`copy_tree`] leaving out every `.git` (directory or worktree file): the files of a workspace without
/// its repository, as a fresh checkout elsewhere would hold them before `git init`.
pub fn copy_tree_without_git(from: &Path, to: &Path) {
    copy(from, to, &|name| name == ".git");
}

fn copy(from: &Path, to: &Path, skip: &dyn Fn(&OsStr) -> bool) {
    fs::create_dir_all(to).unwrap_or_else(|error| panic!("create {}: {error}", to.display()));
    let entries = fs::read_dir(from).unwrap_or_else(|error| panic!("read {}: {error}", from.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|error| panic!("read {}: {error}", from.display()));
        if skip(&entry.file_name()) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap_or_else(|error| panic!("stat {}: {error}", source.display()));
        if kind.is_symlink() {
            let link = fs::read_link(&source).unwrap_or_else(|error| panic!("readlink {}: {error}", source.display()));
            symlink(&link, &target).unwrap_or_else(|error| panic!("symlink {}: {error}", target.display()));
        } else if kind.is_dir() {
            copy(&source, &target, skip);
        } else if kind.is_file() {
            // `fs::copy` gives the copy the source's permission bits.
            fs::copy(&source, &target)
                .unwrap_or_else(|error| panic!("copy {} to {}: {error}", source.display(), target.display()));
        } else {
            panic!("copy_tree copies files, directories and symlinks only: {}", source.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree with a nested file, an executable, a relative and a dangling symlink, a read-only directory and
    /// a `.git` directory.
    fn sample() -> (TempDir, PathBuf) {
        let (temp, root) = temp_dir();
        let from = root.join("from");
        write(&from, "a.txt", "a\n");
        write(&from, "sub/b.txt", "b\n");
        write(&from, "run.sh", "#!/bin/sh\n");
        chmod(&from, "run.sh", 0o751);
        write(&from, ".git/HEAD", "ref: refs/heads/main\n");
        symlink("a.txt", from.join("link")).unwrap();
        symlink("../nowhere", from.join("sub/dangling")).unwrap();
        write(&from, "locked/c.txt", "c\n");
        chmod(&from, "locked", 0o555);
        (temp, root)
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn copy_tree_keeps_bytes_modes_and_symlinks() {
        let (_temp, root) = sample();
        let (from, to) = (root.join("from"), root.join("to"));
        copy_tree(&from, &to);
        assert_eq!(read(&to, "sub/b.txt"), "b\n");
        assert_eq!(read(&to, ".git/HEAD"), "ref: refs/heads/main\n");
        assert_eq!(mode(&to.join("run.sh")), 0o751);
        assert_eq!(fs::read_link(to.join("link")).unwrap(), Path::new("a.txt"));
        assert_eq!(fs::read_link(to.join("sub/dangling")).unwrap(), Path::new("../nowhere"));
        assert_eq!(read(&to, "locked/c.txt"), "c\n");
        assert_ne!(mode(&to.join("locked")) & 0o200, 0, "copied directories stay writable");
        chmod(&from, "locked", 0o755);
    }

    #[test]
    fn copy_tree_without_git_leaves_out_the_repository() {
        let (_temp, root) = sample();
        let (from, to) = (root.join("from"), root.join("to"));
        copy_tree_without_git(&from, &to);
        assert!(!to.join(".git").exists());
        assert_eq!(read(&to, "a.txt"), "a\n");
        assert_eq!(fs::read_link(to.join("link")).unwrap(), Path::new("a.txt"));
        chmod(&from, "locked", 0o755);
    }
}
