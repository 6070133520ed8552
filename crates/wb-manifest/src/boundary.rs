//! The package boundary: every path a package names is resolved through its symbolic links, and the real path
//! must stay inside the boundary (the repository, or the package for `runner_config`), outside `/proc`, `/sys`
//! and `/dev`, and must not be a device, FIFO or socket. The checks and the engine use this one function.

use std::io;
use std::path::{Path, PathBuf};

use crate::fs::{FileKind, FileSystem, normalize};

/// Kernel pseudo file systems: nothing a package names may resolve into them.
const PSEUDO_ROOTS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Files a package names that the checker and the engine read (`SKILL.md`, instructions, `runner_config` JSON)
/// are refused above this size, as the manifest is.
pub const MAX_PACKAGE_FILE_BYTES: usize = crate::limits::MAX_MANIFEST_BYTES;

/// Why a path a package names is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// The real path leaves the boundary (through a symbolic link).
    Outside,
    /// The real path lies in `/proc`, `/sys` or `/dev`.
    Pseudo,
    /// The path is a device, FIFO or socket.
    Special,
}

impl Escape {
    /// The message of the diagnostic; `label` names the field, `value` is the path as written and `boundary`
    /// says what it must stay in ("repository" or "package").
    pub fn message(self, label: &str, value: &str, boundary: &str) -> String {
        match self {
            Escape::Outside => format!("{label} resolves outside the {boundary} through a symbolic link: {value}"),
            Escape::Pseudo => format!("{label} must not resolve into /proc, /sys or /dev: {value}"),
            Escape::Special => format!("{label} must not be a device, FIFO or socket: {value}"),
        }
    }
}

/// Where a path inside the boundary really leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The real path (for a path that does not exist yet: its deepest existing ancestor's real path joined
    /// with the rest).
    pub real: PathBuf,
    pub exists: bool,
}

/// Resolves `path` (absolute, lexically normalised) and requires its real path inside `boundary`'s.
pub fn resolve_within(fs: &dyn FileSystem, path: &Path, boundary: &Path) -> Result<Resolved, Escape> {
    resolve_within_real(fs, path, &real_boundary(fs, boundary))
}

/// The real path of a boundary, as [`resolve_within_real`] takes it.
pub fn real_boundary(fs: &dyn FileSystem, boundary: &Path) -> PathBuf {
    fs.real_path(boundary).unwrap_or_else(|_| normalize(boundary))
}

/// [`resolve_within`] for a boundary whose real path is known (a package's checks resolve many paths in one).
pub fn resolve_within_real(fs: &dyn FileSystem, path: &Path, boundary: &Path) -> Result<Resolved, Escape> {
    let path = crate::fs::normalized(path);
    let (real, exists) = match fs.real_path(&path) {
        Ok(real) => (real, true),
        Err(_) => (real_ancestor(fs, &path), false),
    };
    judge(fs, &real, exists, boundary)?;
    Ok(Resolved { real, exists })
}

fn judge(fs: &dyn FileSystem, real: &Path, exists: bool, boundary: &Path) -> Result<(), Escape> {
    if is_pseudo(real) {
        return Err(Escape::Pseudo);
    }
    if !crate::fs::is_beneath(real, boundary) {
        return Err(Escape::Outside);
    }
    if exists && fs.kind_followed(real).is_ok_and(|kind| kind == FileKind::Other) {
        return Err(Escape::Special);
    }
    Ok(())
}

/// True for a path in `/proc`, `/sys` or `/dev`.
pub fn is_pseudo(path: &Path) -> bool {
    use std::path::Component;
    // Only the first name can make it so (asked of every path a package names: one name looked at).
    let mut components = path.components();
    let first = match (components.next(), components.next()) {
        (Some(Component::RootDir), Some(Component::Normal(first))) => first,
        _ => return false,
    };
    PSEUDO_ROOTS.iter().any(|root| root.strip_prefix('/').is_some_and(|name| first == name))
}

/// The real path of the deepest ancestor that resolves, joined with the components below it. A path that
/// does not exist is still judged by where its existing part leads (a fix that creates it must not create it
/// through a link out of the boundary).
fn real_ancestor(fs: &dyn FileSystem, path: &Path) -> PathBuf {
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let mut current = path;
    loop {
        let Some(name) = current.file_name() else { return path.to_path_buf() };
        rest.push(name);
        let Some(parent) = current.parent() else { return path.to_path_buf() };
        match fs.real_path(parent) {
            Ok(mut real) => {
                real.extend(rest.iter().rev());
                return real;
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => current = parent,
            // A loop or a component that is not a directory: nothing beneath it can be read.
            Err(_) => return path.to_path_buf(),
        }
    }
}

/// Entries a skill directory walk looks at, at most: a skill is a handful of files, and the check runs on every
/// keystroke in an editor.
const MAX_WALKED_ENTRIES: usize = 4096;

/// The first link below `dir` (relative to it) whose real path escapes `boundary`, as the engine would find it
/// when it copies the directory. The walk is iterative, does not descend through links, and stops after
/// [`MAX_WALKED_ENTRIES`] entries.
pub fn first_escaping_link(fs: &dyn FileSystem, dir: &Path, boundary: &Path) -> Option<(PathBuf, Escape)> {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(current) = stack.pop() {
        let Ok(entries) = fs.read_dir(&current) else { continue };
        for entry in entries {
            seen += 1;
            if seen > MAX_WALKED_ENTRIES {
                return None;
            }
            match fs.kind(&entry) {
                Ok(FileKind::Directory) => stack.push(entry),
                Ok(FileKind::Symlink) => {
                    if let Err(escape) = resolve_within(fs, &entry, boundary) {
                        let relative = entry.strip_prefix(dir).map_or_else(|_| entry.clone(), Path::to_path_buf);
                        return Some((relative, escape));
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod pseudo_tests {
    use super::*;

    #[test]
    fn pseudo_paths_are_the_kernel_roots_and_what_is_beneath_them() {
        for path in ["/proc", "/proc/self/environ", "/sys/kernel", "/dev/null", "//proc/1", "/dev/"] {
            assert!(is_pseudo(Path::new(path)), "{path}");
        }
        for path in ["/", "/procs", "/home/proc", "proc/1", "/devices", "/tmp/dev/null", ""] {
            assert!(!is_pseudo(Path::new(path)), "{path}");
        }
    }
}
