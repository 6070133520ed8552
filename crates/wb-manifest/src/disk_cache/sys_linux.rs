//! The system calls a pass makes on Linux, from an anchor or from the current directory (an absolute path),
//! and directory listings by `getdents64`.

use std::io;
use std::path::{Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::{Kinds, Stat};
use crate::fs::FileKind;

pub(super) type Dir = OwnedFd;

#[derive(Clone, Copy)]
pub(super) enum At<'a> {
    Dir(&'a Dir),
    Cwd,
}

/// Opens a directory to walk from (not to read: `O_PATH`).
pub(super) fn open_anchor(dir: &Path) -> io::Result<Dir> {
    Ok(rustix::fs::open(dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?)
}

/// `lstat`.
pub(super) fn lstat(at: At<'_>, path: &Path) -> io::Result<Stat> {
    let stat = match at {
        At::Dir(dir) => rustix::fs::statat(dir, path, AtFlags::SYMLINK_NOFOLLOW)?,
        At::Cwd => rustix::fs::lstat(path)?,
    };
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Directory,
        FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Other,
    };
    // A size is never negative; `lstat` would have said 0 had the system one day said less.
    let len = (kind == FileKind::File).then(|| u64::try_from(stat.st_size).unwrap_or(0));
    Ok(Stat { kind, len })
}

/// [`crate::fs::open_for_reading`], from `at`.
pub(super) fn open_file(at: At<'_>, path: &Path, no_follow: bool) -> io::Result<std::fs::File> {
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    if no_follow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = match at {
        At::Dir(dir) => rustix::fs::openat(dir, path, flags, Mode::empty())?,
        At::Cwd => rustix::fs::open(path, flags, Mode::empty())?,
    };
    Ok(std::fs::File::from(fd))
}

/// The entries of a directory, and the kinds the listing tells (none for an entry whose kind it does not).
/// On Linux the entries are read with `getdents64` into a buffer on the stack: `opendir(3)` would also `fstat`
/// the directory and allocate a 32 KiB buffer, for directories that hold one `SKILL.md`.
pub(super) fn list_into(
    (at, relative): (At<'_>, &Path),
    path: &Path,
    no_follow: bool,
    entries: &mut Vec<PathBuf>,
    kinds: &mut Kinds,
) -> io::Result<()> {
    use std::mem::MaybeUninit;
    use std::os::unix::ffi::OsStrExt;

    use rustix::fs::{FileType, Mode, OFlags, RawDir};

    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    if no_follow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = match at {
        At::Dir(dir) => rustix::fs::openat(dir, relative, flags, Mode::empty())?,
        At::Cwd => rustix::fs::open(relative, flags, Mode::empty())?,
    };
    let mut buffer = [MaybeUninit::<u8>::uninit(); 8192];
    let mut dir = RawDir::new(&fd, &mut buffer);
    while let Some(entry) = dir.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let full = path.join(std::ffi::OsStr::from_bytes(name));
        let kind = match entry.file_type() {
            FileType::RegularFile => Some(FileKind::File),
            FileType::Directory => Some(FileKind::Directory),
            FileType::Symlink => Some(FileKind::Symlink),
            FileType::Unknown => None,
            _ => Some(FileKind::Other),
        };
        if let Some(kind) = kind {
            kinds.push((full.as_os_str().to_owned(), Ok(Stat { kind, len: None })));
        }
        entries.push(full);
    }
    Ok(())
}
