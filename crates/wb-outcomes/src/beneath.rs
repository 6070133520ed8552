//! Directory handles that never follow a symlink: a workspace root opened once, then every directory below it
//! opened component by component with `O_NOFOLLOW | O_DIRECTORY`, and every read, write, rename and removal
//! done relative to such a handle (`openat`, `renameat`, `mkdirat`, `unlinkat`, `symlinkat`, `readlinkat`,
//! `fstatat` with `AT_SYMLINK_NOFOLLOW`). Swapping a directory for a symlink after it was opened cannot
//! redirect an operation: the handle keeps naming the directory that was checked.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, readlinkat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};

/// An open directory. `path` is where it was when opened, for messages only: operations never use it.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What a path holds, without following a symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Symlink,
    Dir,
    /// A FIFO, socket or device.
    Other,
}

/// The metadata of one entry of a directory (`fstatat` with `AT_SYMLINK_NOFOLLOW`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stat {
    pub(crate) kind: Kind,
    /// The permission bits (`st_mode & 0o777`).
    pub(crate) mode: u32,
    /// The device and inode: which file this is, whatever name now leads to it.
    pub(crate) identity: (u64, u64),
}

impl Stat {
    fn of(stat: &FileStat) -> Stat {
        let format = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        let kind = if format == SFlag::S_IFREG {
            Kind::File
        } else if format == SFlag::S_IFLNK {
            Kind::Symlink
        } else if format == SFlag::S_IFDIR {
            Kind::Dir
        } else {
            Kind::Other
        };
        // The widths of `st_dev` and `st_ino` differ between platforms.
        #[allow(clippy::useless_conversion)]
        let identity = (u64::from(stat.st_dev), u64::from(stat.st_ino));
        Stat { kind, mode: stat.st_mode & 0o777, identity }
    }
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY.union(OFlag::O_DIRECTORY).union(OFlag::O_NOFOLLOW).union(OFlag::O_CLOEXEC);

/// One component: a name that stays in its directory (no `/`, not empty, `.` or `..`).
fn name(name: &str) -> io::Result<&str> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a single path component"));
    }
    Ok(name)
}

/// Whether an open failed because the path is a symlink (`ELOOP` under `O_NOFOLLOW`) or not a directory
/// (`ENOTDIR` under `O_DIRECTORY`).
pub(crate) fn is_symlink_or_not_dir(error: &io::Error) -> bool {
    error.raw_os_error().is_some_and(|code| matches!(Errno::from_raw(code), Errno::ELOOP | Errno::ENOTDIR))
}

impl Dir {
    /// Opens a directory by path; its last component must not be a symlink (the ones above it are the
    /// caller's to trust).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        let fd = nix::fcntl::open(path, DIR_FLAGS, Mode::empty())?;
        Ok(Dir { fd, path: path.to_path_buf() })
    }

    /// A second handle on the same directory.
    pub(crate) fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir { fd: self.fd.try_clone()?, path: self.path.clone() })
    }

    /// Where the directory was when opened (for messages).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The subdirectory `child`: `None` when it does not exist, [`Errno::ELOOP`] or [`Errno::ENOTDIR`] when
    /// it is a symlink or not a directory.
    pub(crate) fn child(&self, child: &str) -> io::Result<Option<Dir>> {
        match openat(&self.fd, name(child)?, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Some(Dir { fd, path: self.path.join(child) })),
            Err(Errno::ENOENT) => Ok(None),
            Err(errno) => Err(errno.into()),
        }
    }

    /// Creates the subdirectory `child` (it must not exist), then opens it.
    pub(crate) fn create_child(&self, child: &str, mode: u32) -> io::Result<Dir> {
        mkdirat(&self.fd, name(child)?, Mode::from_bits_truncate(mode))?;
        self.child(child)?.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// What `entry` is, without following it; `None` when it does not exist.
    pub(crate) fn stat(&self, entry: &str) -> io::Result<Option<Stat>> {
        match fstatat(&self.fd, name(entry)?, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(Stat::of(&stat))),
            Err(Errno::ENOENT) => Ok(None),
            Err(errno) => Err(errno.into()),
        }
    }

    /// The target of the symlink `entry`.
    pub(crate) fn read_link(&self, entry: &str) -> io::Result<OsString> {
        Ok(readlinkat(&self.fd, name(entry)?)?)
    }

    /// Opens the regular file `entry` for reading; a symlink, FIFO, device or directory is refused (and a
    /// FIFO never blocks the open).
    pub(crate) fn open_file(&self, entry: &str) -> io::Result<File> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = openat(&self.fd, name(entry)?, flags, Mode::empty())?;
        if Stat::of(&fstat(&fd)?).kind != Kind::File {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        let file = File::from(fd);
        // Back to blocking reads (`O_NONBLOCK` was only for the open).
        nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(OFlag::empty()))?;
        Ok(file)
    }

    /// What the open file `file` is (`fstat`).
    pub(crate) fn stat_of(file: &File) -> io::Result<Stat> {
        Ok(Stat::of(&fstat(file)?))
    }

    /// Reads the whole regular file `entry` (see [`Dir::open_file`]).
    pub(crate) fn read(&self, entry: &str) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut self.open_file(entry)?, &mut bytes)?;
        Ok(bytes)
    }

    /// Creates the file `entry`, which must not exist (`O_CREAT | O_EXCL | O_NOFOLLOW`), for writing.
    pub(crate) fn create_file(&self, entry: &str, mode: u32) -> io::Result<File> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        Ok(File::from(openat(&self.fd, name(entry)?, flags, Mode::from_bits_truncate(mode))?))
    }

    /// Creates the symlink `entry` pointing at `target`.
    pub(crate) fn symlink(&self, target: &str, entry: &str) -> io::Result<()> {
        Ok(symlinkat(target, &self.fd, name(entry)?)?)
    }

    /// Renames `from` to `to`, both in this directory (replacing `to` whole).
    pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(renameat(&self.fd, name(from)?, &self.fd, name(to)?)?)
    }

    /// Removes the file or symlink `entry`.
    pub(crate) fn remove_file(&self, entry: &str) -> io::Result<()> {
        Ok(unlinkat(&self.fd, name(entry)?, UnlinkatFlags::NoRemoveDir)?)
    }

    /// Removes the empty directory `entry`.
    pub(crate) fn remove_dir(&self, entry: &str) -> io::Result<()> {
        Ok(unlinkat(&self.fd, name(entry)?, UnlinkatFlags::RemoveDir)?)
    }
}

/// The components of a relative `/`-separated path: its directories and its last name.
pub(crate) fn split(path: &str) -> (Vec<&str>, &str) {
    let mut components: Vec<&str> = path.split('/').collect();
    let last = components.pop().unwrap_or_default();
    (components, last)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::fs;
    use std::io::Write;
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    fn unsafe_errno(error: &io::Error) -> bool {
        is_symlink_or_not_dir(error)
    }

    #[test]
    fn a_symlinked_root_or_child_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), temp.path().join("link")).unwrap();
        fs::write(temp.path().join("file"), "x").unwrap();
        assert!(unsafe_errno(&Dir::open(&temp.path().join("link")).unwrap_err()));
        let root = Dir::open(temp.path()).unwrap();
        assert!(unsafe_errno(&root.child("link").unwrap_err()));
        assert!(unsafe_errno(&root.child("file").unwrap_err()));
        assert!(root.child("missing").unwrap().is_none());
        for bad in ["", ".", "..", "a/b"] {
            assert_eq!(root.child(bad).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn a_handle_keeps_naming_its_directory_after_a_swap_for_a_symlink() {
        let temp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(temp.path().join("sub")).unwrap();
        let root = Dir::open(temp.path()).unwrap();
        let sub = root.child("sub").unwrap().unwrap();
        fs::rename(temp.path().join("sub"), temp.path().join("moved")).unwrap();
        symlink(outside.path(), temp.path().join("sub")).unwrap();
        let mut file = sub.create_file("new.txt", 0o600).unwrap();
        file.write_all(b"new\n").unwrap();
        sub.symlink("new.txt", "link.tmp").unwrap();
        sub.rename("link.tmp", "link").unwrap();
        assert_eq!(fs::read_to_string(temp.path().join("moved/new.txt")).unwrap(), "new\n");
        assert_eq!(fs::read_link(temp.path().join("moved/link")).unwrap(), Path::new("new.txt"));
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
        // Reopened by name, the symlink is refused.
        assert!(unsafe_errno(&root.child("sub").unwrap_err()));
    }

    #[test]
    fn files_are_read_created_and_removed_without_following_symlinks() {
        let temp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "secret").unwrap();
        symlink(outside.path().join("secret"), temp.path().join("link")).unwrap();
        fs::write(temp.path().join("file"), "file").unwrap();
        fs::set_permissions(temp.path().join("file"), fs::Permissions::from_mode(0o640)).unwrap();
        let dir = Dir::open(temp.path()).unwrap();
        assert_eq!(dir.read("file").unwrap(), b"file");
        assert!(unsafe_errno(&dir.read("link").unwrap_err()));
        assert_eq!(dir.read_link("link").unwrap(), outside.path().join("secret").into_os_string());
        let stat = dir.stat("file").unwrap().unwrap();
        assert_eq!((stat.kind, stat.mode), (Kind::File, 0o640));
        assert_eq!(dir.stat("link").unwrap().unwrap().kind, Kind::Symlink);
        assert!(dir.stat("missing").unwrap().is_none());
        // A create never goes through an existing symlink, nor replaces a file.
        assert_eq!(dir.create_file("link", 0o600).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(dir.create_file("file", 0o600).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        dir.remove_file("link").unwrap();
        assert_eq!(fs::read_to_string(outside.path().join("secret")).unwrap(), "secret");
        let made = dir.create_child("made", 0o755).unwrap();
        assert_eq!(made.path(), temp.path().join("made"));
        assert_eq!(dir.stat("made").unwrap().unwrap().kind, Kind::Dir);
        assert!(dir.remove_file("made").is_err());
        dir.remove_dir("made").unwrap();
        assert!(dir.stat("made").unwrap().is_none());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let temp = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&temp.path().join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        let dir = Dir::open(temp.path()).unwrap();
        assert_eq!(dir.stat("fifo").unwrap().unwrap().kind, Kind::Other);
        assert_eq!(dir.open_file("fifo").unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn split_separates_the_directories_from_the_name() {
        assert_eq!(split("a/b/c.txt"), (vec!["a", "b"], "c.txt"));
        assert_eq!(split("c.txt"), (vec![], "c.txt"));
    }
}
