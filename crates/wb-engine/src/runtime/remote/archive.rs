//! Archives that cross between the host and a sandbox: packing a local directory into a gzip tar (links stay
//! links, modes kept, nothing followed), and unpacking what a sandbox sent back into a local directory
//! without ever writing outside it: every entry's path is checked, no parent may be a symlink or a file (a
//! link one entry created cannot carry a later one elsewhere), and only files, directories and symlinks are
//! accepted.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::error::{EngineError, Result};

/// Packs the files and symlinks `paths` (relative, `/`-separated) of `root` into a gzip tar.
pub fn pack(root: &Path, paths: &[String]) -> Result<Vec<u8>> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(encoder);
    builder.follow_symlinks(false);
    // A sparse file goes as plain data (its holes as zeros): every sandbox's tar reads that.
    builder.sparse(false);
    // Real permission bits: a changeset's `before` must match the host file's mode for apply to accept it.
    builder.mode(tar::HeaderMode::Complete);
    for path in paths {
        let full = root.join(path);
        builder
            .append_path_with_name(&full, path)
            .map_err(|e| EngineError::io(format!("cannot pack {}", full.display()), e))?;
    }
    let encoder = builder.into_inner().map_err(|e| EngineError::io("cannot pack the staging archive", e))?;
    encoder.finish().map_err(|e| EngineError::io("cannot pack the staging archive", e))
}

/// Every file and symlink under `root`, relative and sorted (directories are recreated from the paths).
pub fn list_all(root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let dir = root.join(&relative);
        let entries = fs::read_dir(&dir).map_err(|e| EngineError::io(format!("cannot list {}", dir.display()), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| EngineError::io(format!("cannot list {}", dir.display()), e))?;
            let name = relative.join(entry.file_name());
            let kind = entry.file_type().map_err(|e| EngineError::io(format!("cannot stat {}", name.display()), e))?;
            if kind.is_dir() {
                pending.push(name);
            } else if kind.is_file() || kind.is_symlink() {
                out.push(name.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A relative path (raw bytes: names need not be UTF-8) that names something inside the destination: no
/// `..`, no root, not empty.
pub fn safe_relative(path: &[u8]) -> Option<PathBuf> {
    let trimmed = path.strip_prefix(b"./").unwrap_or(path);
    let candidate = Path::new(std::ffi::OsStr::from_bytes(trimmed));
    let mut out = PathBuf::new();
    for component in candidate.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Makes every parent of `relative` under `root` a real directory: missing ones are created; a symlink or a
/// file in the way is an error (`replace`: removed instead, for a sandbox that replaced a file with a
/// directory).
fn real_parents(root: &Path, relative: &Path, replace: bool) -> Result<()> {
    let mut current = root.to_path_buf();
    let parents: Vec<_> = relative.parent().map(|p| p.components().collect()).unwrap_or_default();
    for component in parents {
        current.push(component);
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) if replace => {
                fs::remove_file(&current)
                    .map_err(|e| EngineError::io(format!("cannot replace {}", current.display()), e))?;
                fs::create_dir(&current)
                    .map_err(|e| EngineError::io(format!("cannot create {}", current.display()), e))?;
            }
            Ok(_) => {
                return Err(EngineError::staging(format!(
                    "Refused archive entry {}: a parent is not a directory",
                    relative.display()
                )));
            }
            Err(_) => {
                fs::create_dir(&current)
                    .map_err(|e| EngineError::io(format!("cannot create {}", current.display()), e))?;
            }
        }
    }
    Ok(())
}

/// Removes whatever is at `path` without following it (a directory with its contents).
pub fn remove_entry(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// What [`unpack`] wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unpacked {
    pub files: Vec<String>,
}

/// The most bytes an archive from a sandbox may unpack to (a small download can expand enormously).
pub const UNPACKED_LIMIT: u64 = super::provider::TRANSFER_LIMIT;
/// The most entries an archive from a sandbox may hold, counting every header (long names, PAX records).
pub const ENTRY_LIMIT: usize = 200_000;
/// The most bytes the tar reader may take between two entries' data: the headers, a long name or link
/// target, PAX records and sparse maps of one entry (a real one needs a few KiB), and the data an entry
/// declared but the reader skipped.
pub const METADATA_LIMIT: u64 = 1024 * 1024;
/// The longest path or link target an entry may name, in bytes (Linux's `PATH_MAX`).
pub const PATH_LIMIT: usize = 4096;

/// Whether a path segment names Git's directory as some file system would read it: `.git` in any letter case,
/// with the trailing dots and spaces Windows drops, with the characters macOS ignores in names, or as the
/// short name `git~1`. Git itself refuses such paths in its index for the same reason.
pub fn is_git_alias(segment: &[u8]) -> bool {
    let text = String::from_utf8_lossy(segment);
    let kept: String = text.chars().filter(|c| !is_ignorable(*c)).collect();
    let trimmed = kept.trim_end_matches(['.', ' ']);
    trimmed.eq_ignore_ascii_case(".git") || trimmed.eq_ignore_ascii_case("git~1")
}

/// Code points HFS+ ignores when it compares names (the list Git checks in `is_hfs_dotgit`).
fn is_ignorable(c: char) -> bool {
    matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// The archive's bytes as the tar reader takes them, within a budget the caller sets before each step, so
/// no header, name or record can make the host read (or allocate) more than it allows.
struct Budgeted<R> {
    inner: R,
    budget: std::rc::Rc<Budget>,
}

#[derive(Default)]
struct Budget {
    /// Bytes the reader may still take in this step.
    left: std::cell::Cell<u64>,
    /// Set once the budget ran out: the error the unpack reports.
    exceeded: std::cell::Cell<bool>,
}

impl<R: Read> Read for Budgeted<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let left = self.budget.left.get();
        if left == 0 {
            self.budget.exceeded.set(true);
            return Err(std::io::Error::other("the archive is over its limit"));
        }
        let want = buffer.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buffer[..want])?;
        self.budget.left.set(left - read as u64);
        Ok(read)
    }
}

/// Unpacks a gzip tar into `root` (which must exist), replacing what is there at each entry's path.
/// `replace_parents`: a file in the way of a directory is replaced (workspace changes), else refused. More
/// than [`UNPACKED_LIMIT`] bytes of data, [`ENTRY_LIMIT`] entries, [`METADATA_LIMIT`] bytes of headers and
/// records for one entry, a path over [`PATH_LIMIT`], or any path with a segment that is Git's directory on
/// some file system ([`is_git_alias`]) is refused. A sparse file is written whole (its holes as zeros, counted).
pub fn unpack(bytes: &[u8], root: &Path, replace_parents: bool) -> Result<Unpacked> {
    let budget = std::rc::Rc::new(Budget::default());
    let reader = Budgeted { inner: flate2::read::GzDecoder::new(bytes), budget: budget.clone() };
    let mut archive = tar::Archive::new(reader);
    let mut unpacker = Unpacker { root, replace_parents, budget: &budget, total: 0, unpacked: Unpacked::default() };
    budget.left.set(METADATA_LIMIT);
    let mut entries = archive.entries().map_err(|e| unpacker.unreadable(e))?;
    let mut count = 0usize;
    loop {
        budget.left.set(METADATA_LIMIT);
        let Some(entry) = entries.next() else { break };
        let mut entry = entry.map_err(|e| unpacker.unreadable(e))?;
        count += 1;
        if count > ENTRY_LIMIT {
            return Err(too_large());
        }
        unpacker.entry(&mut entry)?;
    }
    Ok(unpacker.unpacked)
}

fn too_large() -> EngineError {
    EngineError::staging(format!(
        "The archive from the sandbox unpacks to more than {} MiB or {ENTRY_LIMIT} entries",
        UNPACKED_LIMIT / (1024 * 1024)
    ))
}

/// One archive being unpacked: where to, and what it took so far.
struct Unpacker<'a> {
    root: &'a Path,
    replace_parents: bool,
    budget: &'a Budget,
    /// Bytes of file data written.
    total: u64,
    unpacked: Unpacked,
}

impl Unpacker<'_> {
    /// A read error: a refusal when it was the budget that stopped the read.
    fn unreadable(&self, error: std::io::Error) -> EngineError {
        if self.budget.exceeded.get() {
            EngineError::staging(format!(
                "Refused the archive from the sandbox: an entry's headers, names or records take more than {} KiB, \
                 or its data more than {} MiB",
                METADATA_LIMIT / 1024,
                UNPACKED_LIMIT / (1024 * 1024)
            ))
        } else {
            EngineError::io("cannot read the archive from the sandbox", error)
        }
    }

    /// Writes one entry at its checked path, replacing what is there.
    fn entry<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<()> {
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw[..raw.len().min(200)]).into_owned();
        let relative = checked_path(&raw, &name)?;
        real_parents(self.root, &relative, self.replace_parents)?;
        let target = self.root.join(&relative);
        let replace = |target: &Path| {
            remove_entry(target).map_err(|e| EngineError::io(format!("cannot replace {}", target.display()), e))
        };
        let create_error = |e| EngineError::io(format!("cannot create {}", target.display()), e);
        match entry.header().entry_type() {
            tar::EntryType::Directory => match fs::symlink_metadata(&target) {
                Ok(meta) if meta.is_dir() => return Ok(()),
                _ => {
                    replace(&target)?;
                    fs::create_dir(&target).map_err(create_error)?;
                    return Ok(());
                }
            },
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
                replace(&target)?;
                self.write_file(entry, &target)?;
            }
            tar::EntryType::Symlink => {
                let link = entry.link_name_bytes().filter(|link| !link.is_empty()).ok_or_else(|| {
                    EngineError::staging(format!("Refused archive entry {name}: a symlink without a target"))
                })?;
                if link.len() > PATH_LIMIT {
                    return Err(EngineError::staging(format!(
                        "Refused archive entry {name}: its link target is longer than {PATH_LIMIT} bytes"
                    )));
                }
                replace(&target)?;
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&link), &target).map_err(create_error)?;
            }
            other => {
                return Err(EngineError::staging(format!(
                    "Refused archive entry {name}: {other:?} entries are not accepted"
                )));
            }
        }
        self.unpacked.files.push(relative.to_string_lossy().into_owned());
        Ok(())
    }

    /// Writes a regular (or sparse) entry's data into a new file at `target` (never through a link), within
    /// what is left of the whole archive's allowance; a file left half-written is removed.
    fn write_file<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>, target: &Path) -> Result<()> {
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        let write_error = |e| EngineError::io(format!("cannot write {}", target.display()), e);
        self.budget.left.set(UNPACKED_LIMIT.saturating_sub(self.total).saturating_add(1));
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(target)
            .map_err(write_error)?;
        let mut buffer = [0u8; 64 * 1024];
        loop {
            let read = entry.read(&mut buffer).map_err(|error| self.unreadable(error));
            let n = match read {
                Ok(0) => break,
                Ok(n) => n,
                Err(error) => {
                    drop(file);
                    let _ = fs::remove_file(target);
                    return Err(error);
                }
            };
            self.total += n as u64;
            if self.total > UNPACKED_LIMIT {
                drop(file);
                let _ = fs::remove_file(target);
                return Err(too_large());
            }
            file.write_all(&buffer[..n]).map_err(write_error)?;
        }
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| EngineError::io(format!("cannot set the mode of {}", target.display()), e))
    }
}

/// An entry's path, refused when it is too long, leaves the root, or names Git's own directory on some file
/// system.
fn checked_path(raw: &[u8], name: &str) -> Result<PathBuf> {
    if raw.len() > PATH_LIMIT {
        return Err(EngineError::staging(format!(
            "Refused archive entry {name}…: its path is longer than {PATH_LIMIT} bytes"
        )));
    }
    let Some(relative) = safe_relative(raw) else {
        return Err(EngineError::staging(format!("Refused archive entry with an unsafe path: {name}")));
    };
    if relative.components().any(|c| is_git_alias(c.as_os_str().as_encoded_bytes())) {
        return Err(EngineError::staging(format!(
            "Refused archive entry {name}: Git's own directory never crosses from a sandbox"
        )));
    }
    Ok(relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        build(&mut builder);
        let tar = builder.into_inner().unwrap_or_default();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let _ = encoder.write_all(&tar);
        encoder.finish().unwrap_or_default()
    }

    fn file(builder: &mut tar::Builder<Vec<u8>>, path: &str, bytes: &[u8]) {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o755);
        header.set_entry_type(tar::EntryType::Regular);
        // Raw names, so a test can carry `..` (set_path refuses it).
        let name = &mut header.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        let _ = builder.append(&header, bytes);
    }

    fn link(builder: &mut tar::Builder<Vec<u8>>, path: &str, target: &str) {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        let _ = builder.append_link(&mut header, path, target);
    }

    #[test]
    fn a_round_trip_keeps_files_links_and_modes() -> Result<()> {
        let source = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        fs::create_dir_all(source.path().join("a/b")).map_err(|e| EngineError::io("mkdir", e))?;
        fs::write(source.path().join("a/b/run.sh"), "#!/bin/sh\n").map_err(|e| EngineError::io("write", e))?;
        fs::set_permissions(source.path().join("a/b/run.sh"), fs::Permissions::from_mode(0o755))
            .map_err(|e| EngineError::io("chmod", e))?;
        std::os::unix::fs::symlink("b/run.sh", source.path().join("a/link")).map_err(|e| EngineError::io("ln", e))?;
        let paths = list_all(source.path())?;
        assert_eq!(paths, ["a/b/run.sh", "a/link"]);
        let bytes = pack(source.path(), &paths)?;
        let dest = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let unpacked = unpack(&bytes, dest.path(), false)?;
        assert_eq!(unpacked.files, ["a/b/run.sh", "a/link"]);
        let meta = fs::metadata(dest.path().join("a/b/run.sh")).map_err(|e| EngineError::io("stat", e))?;
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
        assert_eq!(fs::read_link(dest.path().join("a/link")).ok(), Some(PathBuf::from("b/run.sh")));
        Ok(())
    }

    #[test]
    fn nothing_is_written_outside_the_destination() -> Result<()> {
        let outer = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let dest = outer.path().join("dest");
        fs::create_dir(&dest).map_err(|e| EngineError::io("mkdir", e))?;
        let escape = archive(|b| file(b, "../escaped", b"x"));
        assert!(unpack(&escape, &dest, false).is_err());
        assert!(!outer.path().join("escaped").exists());
        // A link, then a file through it: the second entry is refused, nothing lands outside.
        let through = archive(|b| {
            link(b, "out", "..");
            file(b, "out/escaped", b"x");
        });
        let error = unpack(&through, &dest, false).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("a parent is not a directory"), "{error}");
        assert!(!outer.path().join("escaped").exists());
        // Replacing parents (workspace changes) removes the link itself, never what it points at.
        unpack(&through, &dest, true)?;
        assert!(dest.join("out/escaped").is_file());
        assert!(!outer.path().join("escaped").exists());
        Ok(())
    }

    /// A GNU long-name entry declaring gigabytes of name, in a small download: refused after reading at most
    /// the metadata allowance (the reader is counted: it never takes more).
    #[test]
    fn a_long_name_or_pax_record_is_bounded() -> Result<()> {
        for kind in [b'L', b'K', b'x'] {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::new(kind));
            header.set_size(6_400_000_000);
            header.set_mode(0o644);
            header.set_cksum();
            // Only the start of the claimed body: the gzip of gigabytes of zeros would be the same few bytes.
            let mut tar = header.as_bytes().to_vec();
            tar.extend(std::iter::repeat_n(b'a', 3 * 1024 * 1024));
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(&tar).map_err(|e| EngineError::io("gzip", e))?;
            let bytes = encoder.finish().map_err(|e| EngineError::io("gzip", e))?;
            let dest = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
            let error = unpack(&bytes, dest.path(), false).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains("take more than 1024 KiB"), "{}: {error}", kind as char);
        }
        Ok(())
    }

    #[test]
    fn a_path_longer_than_path_max_is_refused() -> Result<()> {
        let long = "d/".repeat(2100) + "f";
        let bytes = archive(|b| {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(1);
            let _ = b.append_data(&mut header, &long, &b"x"[..]);
        });
        let dest = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let error = unpack(&bytes, dest.path(), false).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("longer than 4096 bytes"), "{error}");
        Ok(())
    }

    #[test]
    fn git_directories_in_any_spelling_are_refused() -> Result<()> {
        for path in [
            ".git/hooks/post-checkout",
            ".GIT/hooks/post-checkout",
            "sub/.Git/config",
            ".git./config",
            ".git /config",
            "GIT~1/config",
            ".g\u{200c}it/config",
        ] {
            let bytes = archive(|b| {
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(1);
                let _ = b.append_data(&mut header, path, &b"x"[..]);
            });
            let dest = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
            let error = unpack(&bytes, dest.path(), true).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains("Git's own directory"), "{path}: {error}");
            assert_eq!(fs::read_dir(dest.path()).map(Iterator::count).unwrap_or(1), 0, "{path}: nothing written");
        }
        assert!(!is_git_alias(b".github") && !is_git_alias(b".gitignore") && !is_git_alias(b"git"));
        Ok(())
    }

    #[test]
    fn a_sparse_file_crosses_as_data_and_a_sparse_entry_is_read() -> Result<()> {
        let source = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let path = source.path().join("sparse.img");
        let file = fs::File::create(&path).map_err(|e| EngineError::io("create", e))?;
        file.set_len(8 * 1024 * 1024).map_err(|e| EngineError::io("truncate", e))?;
        {
            use std::os::unix::fs::FileExt;
            file.write_all_at(b"data in the middle", 4 * 1024 * 1024).map_err(|e| EngineError::io("write", e))?;
        }
        drop(file);
        let bytes = pack(source.path(), &["sparse.img".to_owned()])?;
        let dest = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        unpack(&bytes, dest.path(), false)?;
        let before = fs::read(&path).map_err(|e| EngineError::io("read", e))?;
        assert_eq!(fs::read(dest.path().join("sparse.img")).ok(), Some(before.clone()));
        // A GNU sparse entry, as another tar makes it, is read too.
        let mut builder = tar::Builder::new(Vec::new());
        builder.sparse(true);
        builder.append_path_with_name(&path, "again.img").map_err(|e| EngineError::io("append", e))?;
        let tar = builder.into_inner().map_err(|e| EngineError::io("tar", e))?;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&tar).map_err(|e| EngineError::io("gzip", e))?;
        let bytes = encoder.finish().map_err(|e| EngineError::io("gzip", e))?;
        unpack(&bytes, dest.path(), false)?;
        assert_eq!(fs::read(dest.path().join("again.img")).ok(), Some(before));
        Ok(())
    }

    #[test]
    fn a_file_over_a_planted_link_replaces_the_link_not_its_target() -> Result<()> {
        let outer = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let dest = outer.path().join("dest");
        fs::create_dir(&dest).map_err(|e| EngineError::io("mkdir", e))?;
        fs::write(outer.path().join("victim"), "keep").map_err(|e| EngineError::io("write", e))?;
        let bytes = archive(|b| {
            link(b, "f", "../victim");
            file(b, "f", b"new");
        });
        unpack(&bytes, &dest, false)?;
        assert_eq!(fs::read_to_string(outer.path().join("victim")).ok().as_deref(), Some("keep"));
        assert_eq!(fs::read_to_string(dest.join("f")).ok().as_deref(), Some("new"));
        Ok(())
    }
}
