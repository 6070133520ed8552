//! Private directories and atomic file writes (a synced temporary sibling renamed over the target), the one
//! implementation behind every manifest, receipt, journal, cache and migrated file the project writes whole.
//! Apply's install temp files are not written here: their names must be in the journal before they exist
//! (`apply/install.rs`).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use tempfile::NamedTempFile;

use crate::error::{Result, io};

/// The permission bits of a file written by [`write_atomic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileMode {
    /// Exactly these bits (the umask does not reduce them).
    Exactly(u32),
    /// The bits of the file being replaced; a new file gets the default, 0666 less the umask.
    KeepExisting,
}

/// Writes bytes atomically: a temporary sibling `.<name>.<random>.tmp` (created 0600, written, given its
/// mode, synced), then a rename over `path`, so a crash leaves the old file or the new one, never half of one.
/// The temporary file is removed on failure.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: FileMode) -> std::io::Result<()> {
    write_atomic_with(path, bytes, mode, || {})
}

/// [`write_atomic`], calling `before_rename` once the temporary file is complete and synced (apply's crash
/// test kills the process there).
pub(crate) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    mode: FileMode,
    before_rename: impl FnOnce(),
) -> std::io::Result<()> {
    let (create_mode, final_mode) = match mode {
        FileMode::Exactly(mode) => (0o600, Some(mode)),
        FileMode::KeepExisting => match fs::metadata(path) {
            Ok(meta) => (0o600, Some(meta.permissions().mode())),
            Err(_) => (0o666, None),
        },
    };
    let temp = complete_temp(path, bytes, create_mode, final_mode)?;
    before_rename();
    temp.persist(path).map(drop).map_err(|e| e.error)
}

/// [`write_atomic`] of a private file (0600), with the store's error text.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, bytes, FileMode::Exactly(0o600)).map_err(io(format!("Cannot write {}", path.display())))
}

/// Replaces a cache file (0600) atomically, without waiting for the disk: after a crash a cache may be lost or
/// empty, which every reader takes as no cache.
pub(crate) fn write_cache(path: &Path, bytes: &[u8]) -> Result<()> {
    temp_sibling(path, bytes, 0o600, None, false)
        .and_then(|temp| temp.persist(path).map(drop).map_err(|e| e.error))
        .map_err(io(format!("Cannot write {}", path.display())))
}

/// Writes bytes to a new file (0600) that must not exist yet, atomically: it appears whole or not at all, and
/// an existing file is never replaced.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    complete_temp(path, bytes, 0o600, None)
        .and_then(|temp| temp.persist_noclobber(path).map(drop).map_err(|e| e.error))
        .map_err(io(format!("Cannot write {}", path.display())))
}

/// A synced temporary sibling of `path` holding `bytes`, created with `create_mode` (less the umask) and then
/// given `final_mode`.
fn complete_temp(
    path: &Path,
    bytes: &[u8],
    create_mode: u32,
    final_mode: Option<u32>,
) -> std::io::Result<NamedTempFile> {
    temp_sibling(path, bytes, create_mode, final_mode, true)
}

/// [`complete_temp`], synced to the disk only when `durable`.
fn temp_sibling(
    path: &Path,
    bytes: &[u8],
    create_mode: u32,
    final_mode: Option<u32>,
    durable: bool,
) -> std::io::Result<NamedTempFile> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path has no file name"))?
        .to_string_lossy();
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(create_mode))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if let Some(mode) = final_mode {
        temp.as_file().set_permissions(fs::Permissions::from_mode(mode))?;
    }
    if durable {
        temp.as_file().sync_all()?;
    }
    Ok(temp)
}

/// Opens a file for reading without following a final symlink and without blocking on a FIFO or device left in
/// its place (an agent-writable workspace or outbox can swap one in): anything but a regular file is refused.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let file = fs::OpenOptions::new().read(true).custom_flags(flags.bits()).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(file)
}

/// The whole of a regular file ([`open_regular`]).
pub(crate) fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Creates a directory and its missing parents, each 0700 (less the umask): every directory the engine makes
/// under the Workbench home (blobs, outcomes, caches, runs and their outboxes) is private to the user.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// [`create_private_dir`], with the store's error text.
pub(crate) fn private_dir(path: &Path) -> Result<()> {
    create_private_dir(path).map_err(io(format!("Cannot create directory {}", path.display())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn mode_of(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn atomic_writes_replace_whole_files_with_the_asked_mode_and_leave_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("receipt.json");
        write_atomic(&path, b"one", FileMode::Exactly(0o600)).unwrap();
        assert_eq!((fs::read(&path).unwrap(), mode_of(&path)), (b"one".to_vec(), 0o600));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"two", FileMode::KeepExisting).unwrap();
        assert_eq!((fs::read(&path).unwrap(), mode_of(&path)), (b"two".to_vec(), 0o640));
        write_atomic(&path, b"three", FileMode::Exactly(0o755)).unwrap();
        assert_eq!(mode_of(&path), 0o755);
        assert_eq!(names(dir.path()), ["receipt.json"]);
    }

    #[test]
    fn the_hook_sees_the_complete_temp_beside_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("application.json");
        fs::write(&path, "old").unwrap();
        write_atomic_with(&path, b"new", FileMode::Exactly(0o600), || {
            assert_eq!(fs::read(&path).unwrap(), b"old");
            let temps: Vec<String> =
                names(dir.path()).into_iter().filter(|n| n.starts_with(".application.json.")).collect();
            assert_eq!(temps.len(), 1, "{temps:?}");
            assert!(temps[0].ends_with(".tmp"));
            assert_eq!(fs::read(dir.path().join(&temps[0])).unwrap(), b"new");
        })
        .unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["application.json"]);
    }

    #[test]
    fn a_new_file_is_written_once_and_a_failed_write_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcome.json");
        write_new(&path, b"first").unwrap();
        assert!(write_new(&path, b"second").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"first");
        assert_eq!(mode_of(&path), 0o600);
        assert!(write_atomic(&dir.path().join("missing/x.json"), b"x", FileMode::KeepExisting).is_err());
        assert_eq!(names(dir.path()), ["outcome.json"]);
    }
}
