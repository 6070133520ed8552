//! Files rewritten beneath a root that someone else (an agent) may be changing at the same time: the one way
//! `fix` (MCP and `check --fix`), `fmt` and `migrate --write` write a manifest. The root is opened once; each
//! file is found from its real path (every link resolved, which must lie beneath the root's real path), then
//! reached from the root's handle one directory at a time with `O_NOFOLLOW` handles ([`crate::beneath`]), opened
//! for reading without following a link, and replaced by a temporary sibling created and renamed through the
//! same directory handle (`openat`, `renameat`). A directory swapped for a link after the file was found cannot
//! redirect the write: the handle keeps naming the directory that was checked. A name that no longer holds the
//! file that was read (a link or another file put in its place) is refused, so a link is never replaced by a
//! file and nothing is written through one.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::beneath::{Dir, Kind, is_symlink_or_not_dir};

/// A directory opened once, the boundary of every file found through it.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    real: PathBuf,
}

/// Why a file is not reached beneath a root.
#[derive(Debug)]
pub enum Refusal {
    /// Its real path (every link resolved) lies outside the root.
    Outside { real: PathBuf },
    /// It is not a regular file (a directory, FIFO, socket or device).
    NotAFile,
    /// A directory on the way or the file itself became a link (or stopped being a directory) after its real
    /// path was resolved.
    Changed,
    /// It cannot be resolved or opened.
    Io(io::Error),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Outside { real } => write!(f, "its real path {} is outside the root", real.display()),
            Refusal::NotAFile => write!(f, "it is not a regular file"),
            Refusal::Changed => write!(f, "a link appeared on its path while it was being opened"),
            Refusal::Io(error) => write!(f, "{error}"),
        }
    }
}

/// A regular file beneath a [`Root`], open for reading, and the handle of the directory that holds it.
#[derive(Debug)]
pub struct Confined {
    dir: Dir,
    name: String,
    file: File,
    relative: PathBuf,
}

impl Root {
    /// Opens the directory `path`; its real path (every link in `path` resolved) is the boundary.
    pub fn open(path: &Path) -> io::Result<Root> {
        let real = std::fs::canonicalize(path)?;
        let dir = Dir::open(&real)?;
        Ok(Root { dir, real })
    }

    /// The root's real path.
    pub fn path(&self) -> &Path {
        &self.real
    }

    /// Finds the regular file `path` (absolute, or relative to the current directory) beneath the root: a file
    /// reached through links is taken at its real path when that lies beneath the root (the links stay as
    /// they are), and refused when it does not.
    pub fn file(&self, path: &Path) -> Result<Confined, Refusal> {
        self.reach(std::fs::canonicalize(path).map_err(Refusal::Io)?)
    }

    /// The file at `real` (a real path, resolved a moment ago) reached from the root's handle.
    fn reach(&self, real: PathBuf) -> Result<Confined, Refusal> {
        let relative = real.strip_prefix(&self.real).map_err(|_| Refusal::Outside { real: real.clone() })?;
        let mut names = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => names.push(name.to_str().ok_or_else(|| {
                    Refusal::Io(io::Error::new(io::ErrorKind::InvalidInput, "the path is not valid UTF-8"))
                })?),
                _ => return Err(Refusal::Outside { real }),
            }
        }
        let Some((name, parents)) = names.split_last() else { return Err(Refusal::NotAFile) };
        let mut dir = self.dir.try_clone().map_err(Refusal::Io)?;
        for parent in parents {
            dir = match dir.child(parent) {
                Ok(Some(child)) => child,
                Ok(None) => return Err(Refusal::Changed),
                Err(error) if is_symlink_or_not_dir(&error) => return Err(Refusal::Changed),
                Err(error) => return Err(Refusal::Io(error)),
            };
        }
        let file = match dir.open_file(name) {
            Ok(file) => file,
            Err(error) if is_symlink_or_not_dir(&error) => return Err(Refusal::Changed),
            Err(error) if error.kind() == io::ErrorKind::InvalidInput => return Err(Refusal::NotAFile),
            Err(error) => return Err(Refusal::Io(error)),
        };
        Ok(Confined { dir, name: (*name).to_owned(), file, relative: relative.to_path_buf() })
    }
}

impl Confined {
    /// Where the file is, relative to the root (its real path's tail).
    pub fn relative(&self) -> &Path {
        &self.relative
    }

    /// The file's content (from the handle opened when it was found); more than `limit` bytes is an error.
    pub fn read(&mut self, limit: u64) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        (&mut self.file).take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {limit} bytes")));
        }
        Ok(bytes)
    }

    /// Replaces the file with `bytes`, keeping its permission bits: a temporary sibling `.<name>.<random>.tmp`
    /// created (`O_EXCL | O_NOFOLLOW`), written and synced in the file's directory, then renamed over the name,
    /// all through the directory's handle. `before_rename` runs once the temporary file is complete (a test
    /// changes the tree there). When the name no longer holds the file that was found (a link or another file
    /// in its place), nothing is replaced and the error says so.
    pub fn replace(&self, bytes: &[u8], before_rename: impl FnOnce()) -> io::Result<()> {
        let found = Dir::stat_of(&self.file)?;
        let temp = format!(".{}.{}.tmp", self.name, crate::random_hex(6));
        let written = (|| {
            let mut file = self.dir.create_file(&temp, 0o600)?;
            file.write_all(bytes)?;
            file.set_permissions(std::fs::Permissions::from_mode(found.mode))?;
            file.sync_all()?;
            before_rename();
            match self.dir.stat(&self.name)? {
                Some(now) if now.kind == Kind::File && now.identity == found.identity => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "it was replaced (by a link or another file) while being rewritten; left as it is",
                    ));
                }
            }
            self.dir.rename(&temp, &self.name)
        })();
        if written.is_err() {
            let _ = self.dir.remove_file(&temp);
        }
        written
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        fs::create_dir_all(root.join("pkg")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("pkg/workbench.yml"), "inside\n").unwrap();
        fs::write(outside.join("workbench.yml"), "outside\n").unwrap();
        (temp, root, outside)
    }

    #[test]
    fn a_file_inside_is_read_and_replaced_keeping_its_mode() {
        let (_temp, root, _) = setup();
        let path = root.join("pkg/workbench.yml");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let opened = Root::open(&root).unwrap();
        let mut file = opened.file(&path).unwrap();
        assert_eq!(file.relative(), Path::new("pkg/workbench.yml"));
        assert_eq!(file.read(100).unwrap(), b"inside\n");
        file.replace(b"new\n", || {}).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::read_dir(root.join("pkg")).unwrap().count(), 1, "no temporary file is left");
        assert!(opened.file(&path).unwrap().read(3).is_err(), "over the limit");
    }

    #[test]
    fn links_out_of_the_root_are_refused_and_links_inside_are_written_through() {
        let (_temp, root, outside) = setup();
        symlink(&outside, root.join("escape")).unwrap();
        symlink(outside.join("workbench.yml"), root.join("linked.yml")).unwrap();
        symlink("pkg/workbench.yml", root.join("alias.yml")).unwrap();
        let opened = Root::open(&root).unwrap();
        for path in [root.join("escape/workbench.yml"), root.join("linked.yml")] {
            assert!(matches!(opened.file(&path), Err(Refusal::Outside { .. })), "{}", path.display());
        }
        assert!(matches!(opened.file(&root.join("pkg")), Err(Refusal::NotAFile)));
        let alias = opened.file(&root.join("alias.yml")).unwrap();
        assert_eq!(alias.relative(), Path::new("pkg/workbench.yml"));
        alias.replace(b"through\n", || {}).unwrap();
        assert_eq!(fs::read_link(root.join("alias.yml")).unwrap(), Path::new("pkg/workbench.yml"));
        assert_eq!(fs::read_to_string(root.join("pkg/workbench.yml")).unwrap(), "through\n");
        assert_eq!(fs::read_to_string(outside.join("workbench.yml")).unwrap(), "outside\n");
    }

    #[test]
    fn a_directory_swapped_for_a_link_before_the_rename_cannot_redirect_the_write() {
        let (_temp, root, outside) = setup();
        let opened = Root::open(&root).unwrap();
        let file = opened.file(&root.join("pkg/workbench.yml")).unwrap();
        file.replace(b"fixed\n", || {
            fs::rename(root.join("pkg"), root.join("moved")).unwrap();
            symlink(&outside, root.join("pkg")).unwrap();
        })
        .unwrap();
        assert_eq!(fs::read_to_string(outside.join("workbench.yml")).unwrap(), "outside\n");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);
        assert_eq!(fs::read_to_string(root.join("moved/workbench.yml")).unwrap(), "fixed\n");
    }

    #[test]
    fn a_file_swapped_for_a_link_before_the_rename_is_left_alone() {
        let (_temp, root, outside) = setup();
        let opened = Root::open(&root).unwrap();
        let file = opened.file(&root.join("pkg/workbench.yml")).unwrap();
        let manifest = root.join("pkg/workbench.yml");
        let error = file
            .replace(b"fixed\n", || {
                fs::remove_file(&manifest).unwrap();
                symlink(outside.join("workbench.yml"), &manifest).unwrap();
            })
            .unwrap_err();
        assert!(error.to_string().contains("replaced"), "{error}");
        assert_eq!(fs::read_link(&manifest).unwrap(), outside.join("workbench.yml"));
        assert_eq!(fs::read_to_string(outside.join("workbench.yml")).unwrap(), "outside\n");
        assert_eq!(fs::read_dir(root.join("pkg")).unwrap().count(), 1, "the temporary file is removed");
    }

    #[test]
    fn a_link_appearing_between_resolving_and_walking_is_refused() {
        let (_temp, root, outside) = setup();
        let opened = Root::open(&root).unwrap();
        // Resolved when `pkg` was a directory; walked after it became a link (even one inside the root).
        let real = root.join("pkg/workbench.yml");
        fs::rename(root.join("pkg"), root.join("moved")).unwrap();
        symlink(root.join("moved"), root.join("pkg")).unwrap();
        assert!(matches!(opened.reach(real.clone()), Err(Refusal::Changed)));
        fs::remove_file(root.join("pkg")).unwrap();
        fs::create_dir(root.join("pkg")).unwrap();
        symlink(outside.join("workbench.yml"), &real).unwrap();
        assert!(matches!(opened.reach(real), Err(Refusal::Changed)));
    }
}
