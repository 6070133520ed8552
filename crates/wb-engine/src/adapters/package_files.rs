//! Reading and copying the files a package names, at the moment they are used: each path is checked against
//! the package boundary again (`wb_manifest::boundary`, the check `check` runs), then opened from the
//! boundary's real directory one component at a time with `O_NOFOLLOW`, so a link swapped in after the checks
//! is never followed, and a file is read only when its handle is a regular file, never more than the limit.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};
use wb_manifest::OsFileSystem;
use wb_manifest::boundary::{Escape, MAX_PACKAGE_FILE_BYTES, resolve_within};

/// What a copy does with a symbolic link inside the tree it copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Every link is an error (`runner_config` may not contain any).
    Refuse,
    /// A link to a regular file inside the boundary is copied as that file; a link to a directory inside it
    /// is skipped (as it always was); a link that leaves the boundary is an error.
    FollowInside,
}

fn escape_error(escape: Escape) -> io::Error {
    let text = match escape {
        Escape::Outside => "resolves outside its boundary through a symbolic link",
        Escape::Pseudo => "resolves into /proc, /sys or /dev",
        Escape::Special => "is a device, FIFO or socket",
    };
    io::Error::new(io::ErrorKind::PermissionDenied, text)
}

fn errno(error: nix::Error) -> io::Error {
    if error == nix::Error::ELOOP {
        return io::Error::new(io::ErrorKind::PermissionDenied, "a symbolic link appeared after the checks");
    }
    io::Error::from(error)
}

/// An open directory the boundary lies at, with its real path.
struct Root {
    fd: OwnedFd,
    real: PathBuf,
}

impl Root {
    fn open(boundary: &Path) -> io::Result<Root> {
        let real = std::fs::canonicalize(boundary)?;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(&real, flags, Mode::empty()).map_err(errno)?;
        Ok(Root { fd, real })
    }

    /// Opens `path` (checked inside the boundary) component by component, never following a link.
    fn open_checked(&self, path: &Path, directory: bool) -> io::Result<OwnedFd> {
        let resolved = resolve_within(&OsFileSystem, path, &self.real).map_err(escape_error)?;
        if !resolved.exists {
            return Err(io::ErrorKind::NotFound.into());
        }
        let relative = resolved.real.strip_prefix(&self.real).map_err(|_| escape_error(Escape::Outside))?;
        open_relative(&self.fd, relative, directory)
    }
}

/// Opens `relative` beneath `dir` with `O_NOFOLLOW` on every component; the final handle must be a
/// directory or a regular file as asked.
fn open_relative(dir: &OwnedFd, relative: &Path, directory: bool) -> io::Result<OwnedFd> {
    let names: Vec<&OsStr> = relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "not a plain relative path")),
        })
        .collect::<io::Result<_>>()?;
    let mut current = dir.try_clone()?;
    for (index, name) in names.iter().enumerate() {
        let last = index + 1 == names.len();
        let mut flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        if !last || directory {
            flags |= OFlag::O_DIRECTORY;
        }
        current = nix::fcntl::openat(&current, *name, flags, Mode::empty()).map_err(errno)?;
    }
    let stat = nix::sys::stat::fstat(&current).map_err(errno)?;
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    let expected = if directory { SFlag::S_IFDIR } else { SFlag::S_IFREG };
    if kind != expected {
        return Err(escape_error(Escape::Special));
    }
    Ok(current)
}

/// Reads a whole regular file from its handle, at most [`MAX_PACKAGE_FILE_BYTES`].
fn read_bounded(file: File) -> io::Result<Vec<u8>> {
    let limit = MAX_PACKAGE_FILE_BYTES as u64;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB", MAX_PACKAGE_FILE_BYTES / (1024 * 1024)),
        ));
    }
    Ok(bytes)
}

/// The text of a package file inside `boundary` (UTF-8, at most [`MAX_PACKAGE_FILE_BYTES`]).
pub fn read_text(boundary: &Path, path: &Path) -> io::Result<String> {
    String::from_utf8(read_bytes(boundary, path)?).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// The bytes of a package file inside `boundary` (at most [`MAX_PACKAGE_FILE_BYTES`]).
pub fn read_bytes(boundary: &Path, path: &Path) -> io::Result<Vec<u8>> {
    read_bounded(File::from(Root::open(boundary)?.open_checked(path, false)?))
}

/// Whether `path` is a directory inside `boundary` (reached without a link out of it).
pub fn is_dir(boundary: &Path, path: &Path) -> bool {
    Root::open(boundary).and_then(|root| root.open_checked(path, true)).is_ok()
}

/// The kind of a directory entry, never following a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Directory,
    /// A regular file, with its permission bits.
    File(u32),
    Link,
    /// A FIFO, socket or device.
    Other,
}

/// A directory tree inside a boundary, opened without following a link: every entry below it is reached from
/// its handle one component at a time with `O_NOFOLLOW`.
pub struct Tree {
    root: Root,
    top: OwnedFd,
    top_real: PathBuf,
}

impl Tree {
    /// Opens the directory `dir` (checked inside `boundary`).
    pub fn open(boundary: &Path, dir: &Path) -> io::Result<Tree> {
        let root = Root::open(boundary)?;
        let top = root.open_checked(dir, true)?;
        let top_real = std::fs::canonicalize(dir)?;
        Ok(Tree { root, top, top_real })
    }

    fn dir(&self, relative: &Path) -> io::Result<OwnedFd> {
        if relative.as_os_str().is_empty() { self.top.try_clone() } else { open_relative(&self.top, relative, true) }
    }

    /// The entries of the directory at `relative`, sorted by name, with their kinds.
    pub fn list(&self, relative: &Path) -> io::Result<Vec<(OsString, EntryKind)>> {
        let dir = self.dir(relative)?;
        let mut listing = nix::dir::Dir::from_fd(dir.try_clone()?).map_err(errno)?;
        let mut names: Vec<Vec<u8>> = Vec::new();
        for entry in listing.iter() {
            let name = entry.map_err(errno)?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                names.push(name);
            }
        }
        names.sort();
        let mut entries = Vec::with_capacity(names.len());
        for name in names {
            let name = OsStr::from_bytes(&name);
            let stat = nix::sys::stat::fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(errno)?;
            let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
            let kind = if kind == SFlag::S_IFDIR {
                EntryKind::Directory
            } else if kind == SFlag::S_IFREG {
                EntryKind::File(stat.st_mode & 0o7777)
            } else if kind == SFlag::S_IFLNK {
                EntryKind::Link
            } else {
                EntryKind::Other
            };
            entries.push((name.to_os_string(), kind));
        }
        Ok(entries)
    }

    /// Opens the regular file at `relative` (a link there is refused).
    pub fn open_file(&self, relative: &Path) -> io::Result<File> {
        open_relative(&self.top, relative, false).map(File::from)
    }

    /// The target of the link at `relative`, as written (the link is not followed).
    pub fn read_link(&self, relative: &Path) -> io::Result<PathBuf> {
        let (parent, name) = match (relative.parent(), relative.file_name()) {
            (Some(parent), Some(name)) => (parent, name),
            _ => return Err(io::ErrorKind::InvalidInput.into()),
        };
        let dir = self.dir(parent)?;
        nix::fcntl::readlinkat(&dir, name).map(PathBuf::from).map_err(errno)
    }

    /// Where the link at `relative` leads, when that is a regular file inside the boundary: its handle.
    /// `Ok(None)` for a link to a directory or a dangling one inside the boundary; an error when it leaves.
    fn follow_inside(&self, relative: &Path) -> io::Result<Option<File>> {
        let refused =
            |why: &str| io::Error::new(io::ErrorKind::PermissionDenied, format!("{why}: {}", relative.display()));
        match resolve_within(&OsFileSystem, &self.top_real.join(relative), &self.root.real) {
            Ok(resolved) if resolved.exists => {
                if std::fs::metadata(&resolved.real).is_ok_and(|meta| meta.is_dir()) {
                    return Ok(None);
                }
                let inside =
                    resolved.real.strip_prefix(&self.root.real).map_err(|_| refused("symbolic link out of bounds"))?;
                open_relative(&self.root.fd, inside, false).map(|fd| Some(File::from(fd)))
            }
            Ok(_) => Ok(None),
            Err(_) => Err(refused("symbolic link that leaves the repository")),
        }
    }
}

/// Copies the directory tree at `from` (inside `boundary`) to `to`: directories and regular files with their
/// permission bits, links as `links` says, other kinds (FIFOs, sockets, devices) left out. The walk is
/// iterative.
pub fn copy_tree(boundary: &Path, from: &Path, to: &Path, links: Links) -> io::Result<()> {
    copy_tree_except(boundary, from, to, links, &[])
}

/// [`copy_tree`], leaving out the entries of `from` itself named in `except` (a package without its `trials/`).
pub fn copy_tree_except(boundary: &Path, from: &Path, to: &Path, links: Links, except: &[&str]) -> io::Result<()> {
    let tree = Tree::open(boundary, from)?;
    let mut stack = vec![PathBuf::new()];
    while let Some(relative) = stack.pop() {
        let target_dir = to.join(&relative);
        std::fs::create_dir_all(&target_dir)?;
        for (name, kind) in tree.list(&relative)? {
            if relative.as_os_str().is_empty() && except.iter().any(|skip| name.as_os_str() == *skip) {
                continue;
            }
            let child = relative.join(&name);
            let target = target_dir.join(&name);
            match kind {
                EntryKind::Directory => stack.push(child),
                EntryKind::File(mode) => copy_file(tree.open_file(&child)?, &target, mode)?,
                EntryKind::Link if links == Links::Refuse => {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("symbolic link: {}", child.display()),
                    ));
                }
                EntryKind::Link => {
                    if let Some(file) = tree.follow_inside(&child)? {
                        let mode = file.metadata()?.permissions().mode();
                        copy_file(file, &target, mode)?;
                    }
                }
                EntryKind::Other => {}
            }
        }
    }
    Ok(())
}

fn copy_file(mut source: File, target: &Path, mode: u32) -> io::Result<()> {
    let mut file = File::create(target)?;
    io::copy(&mut source, &mut file)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
}
