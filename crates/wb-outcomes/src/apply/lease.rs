//! The per-outcome lease: one apply or recovery at a time, released by the kernel however its holder ends.

use std::fs;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg, OFlag};

use super::Faults;
use crate::error::{Error, Result, io};

/// The lease: an exclusive `flock(2)` on `outcomes/<id>/application.lock`, held for a whole apply or
/// recovery. The kernel releases it when its holder exits, however it exits, so there is nothing stale to
/// detect (no pid, no `/proc`). A `flock` belongs to an open file description: a second open in the same
/// process (another thread's apply) conflicts with it just like another process's.
pub(crate) struct Lease {
    path: PathBuf,
    /// Unlocked (then closed) when dropped, after [`Lease`]'s own `drop` has removed the file.
    _file: Flock<fs::File>,
    faults: Faults,
}

const LEASE: &str = "application.lock";
/// What earlier versions left: a lock holding its holder's pid (`apply.lock`) and the temp files it was
/// published from (`.apply.lock.<pid>.<hex>.tmp`). They lock nothing now; recovery removes them.
pub(super) const OLD_LEASE: &str = "apply.lock";
pub(super) const OLD_LEASE_TEMP: &str = ".apply.lock.";

impl Lease {
    /// Opens (or creates) the lock file and locks it without waiting: a holder makes it [`Error::Busy`].
    /// The file is only ever removed by its holder, still locked (when the lease is released): a taker that
    /// opened it just before then locks a file that no longer is the lock file, sees that, and tries again.
    /// A killed holder leaves the file, unlocked, for the next taker.
    pub(crate) fn take(dir: &Path, outcome_id: &str, faults: Faults) -> Result<Lease> {
        let path = dir.join(LEASE);
        let failed = |e: std::io::Error| io(format!("Cannot lock {}", path.display()))(e);
        for _ in 0..16 {
            let file = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags((OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW).bits())
                .open(&path)
                .map_err(failed)?;
            let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(file) => file,
                Err((_, Errno::EWOULDBLOCK)) => return Err(Error::Busy(outcome_id.to_owned())),
                Err((_, errno)) => return Err(failed(errno.into())),
            };
            let locked = file.metadata().map_err(failed)?;
            match fs::symlink_metadata(&path) {
                Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {
                    faults.at(|| "lease: taken".to_owned());
                    return Ok(Lease { path, _file: file, faults });
                }
                // Released (and removed) by its holder between the open and the lock.
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(failed(e)),
            }
        }
        // Taken and released over and over meanwhile.
        Err(Error::Busy(outcome_id.to_owned()))
    }
}

/// Whether someone holds the lease of the outcome in `dir` now (a lock file left by a killed holder is not
/// held). Creates nothing.
pub(crate) fn is_held(dir: &Path) -> bool {
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW).bits())
        .open(dir.join(LEASE))
    else {
        return false;
    };
    matches!(Flock::lock(file, FlockArg::LockExclusiveNonblock), Err((_, Errno::EWOULDBLOCK)))
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.faults.at(|| "lease: release".to_owned());
        // Still locked: nobody else can hold this file now, nor create another one in its place.
        let _ = fs::remove_file(&self.path);
    }
}
