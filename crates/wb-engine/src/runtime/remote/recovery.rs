//! Recovery after a failed collection (outcomes contract, "Recovery"), for a service that
//! [`Service::keeps_recovery`] (E2B): when bringing a run's results home fails, the sandbox is paused and kept
//! behind a private checkpoint (`$WORKBENCH_HOME/recovery/<run>.json`, 0600) instead of being destroyed.
//!
//! - [`recover`] reconnects to exactly the checkpoint's sandbox (its id, never a search), rebuilds each
//!   writable workspace's working copy from the archive staged into the sandbox (kept there, root-owned, and
//!   checked against the SHA-256 the checkpoint recorded at staging: a copy the agent changed is refused),
//!   collects as a run does, and commits a `partial` outcome carrying a `recovered_from_sandbox` warning with
//!   receipt `pending`; then the sandbox is destroyed and the checkpoint removed.
//! - [`discard`] deletes the sandbox and the checkpoint.
//! - `clean` lists checkpoints and never drops one; `orphans` never reclaims a checkpoint's sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wb_manifest::Access;
use wb_outcomes::{Completeness, Outcome, Receipt};

use super::kept::KeptWorkspace;
use super::provider::{Service, User};
use super::shell::quote;
use super::{RemoteRuntime, collect};
use crate::bindings::BoundWorkspace;
use crate::error::{EngineError, Result};
use crate::runtime::{Kept, Setup, services};

/// Where checkpoints live under the Workbench home.
pub const RECOVERY_DIR: &str = "recovery";

/// The private record of a sandbox kept after its run's collection failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub run_id: String,
    /// The runtime (`e2b`).
    pub service: String,
    pub sandbox_id: String,
    pub workbench: String,
    pub created_at: String,
    /// False when pausing failed: the sandbox then ends with its lease.
    pub paused: bool,
    /// Why the collection failed.
    pub reason: String,
    pub workspaces: Vec<KeptWorkspace>,
}

/// The checkpoint file of `run_id`, after checking the id can name nothing else.
fn checkpoint_path(home: &Path, run_id: &str) -> Result<PathBuf> {
    let valid = run_id.strip_prefix("wb_").is_some_and(|rest| {
        !rest.is_empty() && rest.len() <= 64 && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    if !valid {
        return Err(EngineError::message(format!("Not a run id: {run_id}")));
    }
    Ok(home.join(RECOVERY_DIR).join(format!("{run_id}.json")))
}

/// Writes `checkpoint` (0600, atomically, in a 0700 directory).
pub fn save(home: &Path, checkpoint: &Checkpoint) -> Result<()> {
    let path = checkpoint_path(home, &checkpoint.run_id)?;
    let dir = home.join(RECOVERY_DIR);
    wb_outcomes::create_private_dir(&dir)
        .map_err(|e| EngineError::io(format!("cannot create {}", dir.display()), e))?;
    let bytes = serde_json::to_vec_pretty(checkpoint)
        .map_err(|e| EngineError::message(format!("cannot encode the recovery checkpoint: {e}")))?;
    wb_outcomes::write_atomic(&path, &bytes, wb_outcomes::FileMode::Exactly(0o600))
        .map_err(|e| EngineError::io(format!("cannot write {}", path.display()), e))
}

/// The checkpoint of `run_id`, or `None` when it has none.
pub fn load(home: &Path, run_id: &str) -> Result<Option<Checkpoint>> {
    let path = checkpoint_path(home, run_id)?;
    let text = match read_bounded(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EngineError::io(format!("cannot read {}", path.display()), e)),
    };
    let checkpoint: Checkpoint = serde_json::from_slice(&text)
        .map_err(|e| EngineError::message(format!("{} is not a recovery checkpoint: {e}", path.display())))?;
    if checkpoint.run_id != run_id {
        return Err(EngineError::message(format!("{} names another run", path.display())));
    }
    Ok(Some(checkpoint))
}

/// A checkpoint's bytes: a few KiB, refused past 1 MiB.
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    const LIMIT: u64 = 1024 * 1024;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > LIMIT {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "larger than 1 MiB"));
    }
    Ok(bytes)
}

/// Every checkpoint, oldest first, and the files that could not be read as one (said, never dropped).
pub fn list(home: &Path) -> (Vec<Checkpoint>, Vec<String>) {
    let (mut found, mut problems) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(home.join(RECOVERY_DIR)) else { return (found, problems) };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(run_id) = name.strip_suffix(".json") else { continue };
        match load(home, run_id) {
            Ok(Some(checkpoint)) => found.push(checkpoint),
            Ok(None) => {}
            Err(error) => problems.push(error.to_string()),
        }
    }
    found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.run_id.cmp(&b.run_id)));
    (found, problems)
}

fn remove(home: &Path, run_id: &str) -> Result<()> {
    let path = checkpoint_path(home, run_id)?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(EngineError::io(format!("cannot remove {}", path.display()), e)),
    }
}

impl RemoteRuntime {
    /// The collection failed: where the service keeps recovery, pause the sandbox, write the checkpoint and
    /// let go of the sandbox so cleanup leaves it. `None`: nothing kept (cleanup destroys it as usual).
    pub(super) fn keep(&mut self, reason: &str) -> Option<Kept> {
        if !self.service.keeps_recovery() {
            return None;
        }
        let sandbox = self.sandbox.clone()?;
        let run_id = self.run_id.clone()?;
        let workspaces = super::kept::kept_workspaces(self)?;
        // The lease is no longer extended: a sandbox that cannot be paused ends with it.
        self.keeper = None;
        let id = sandbox.id().to_owned();
        let title = self.title();
        let paused = self.provider().and_then(|provider| provider.pause(&id));
        let checkpoint = Checkpoint {
            run_id: run_id.clone(),
            service: self.name().to_owned(),
            sandbox_id: id.clone(),
            workbench: self.workbench.clone(),
            created_at: wb_outcomes::now_utc(),
            paused: paused.is_ok(),
            reason: reason.to_owned(),
            workspaces,
        };
        if let Err(error) = save(&self.setup.home, &checkpoint) {
            return Some(Kept {
                sandbox_id: id.clone(),
                paused: false,
                note: format!("No recovery checkpoint could be kept ({error}); {title} sandbox {id} is destroyed"),
                kept: false,
            });
        }
        self.sandbox = None;
        let state = match &paused {
            Ok(_) => "is paused".to_owned(),
            Err(error) => format!("could not be paused ({error}) and ends with its lease"),
        };
        Some(Kept {
            sandbox_id: id.clone(),
            paused: paused.is_ok(),
            note: format!(
                "{title} sandbox {id} {state}; it is kept for recovery: `wb-lsp outcome {run_id} --recover` collects \
                 what it holds, `wb-lsp outcome {run_id} --discard-recovery` deletes it"
            ),
            kept: true,
        })
    }

    /// The staged archive of a writable workspace stays in the sandbox for a recovery or an adoption: root's, read-only, in the
    /// sticky `/tmp` (an agent running as the default user can neither change nor remove it; whatever it does,
    /// the recovery checks the archive's digest).
    pub(super) fn keep_staged_archive(&self, archive: &str) -> Result<()> {
        let script = format!("set -e; chown 0:0 {a} 2>/dev/null || true; chmod 0400 {a}", a = quote(archive));
        self.run_checked("Cannot keep the staged archive for a recovery", &script, User::Root).map(|_| ())
    }
}

/// What [`recover`] committed.
pub struct Recovered {
    pub outcome: Outcome,
    pub receipt: Receipt,
    pub sandbox_id: String,
    /// What went wrong after the outcome was committed (destroying the sandbox).
    pub warnings: Vec<String>,
}

/// The service a checkpoint names, when it keeps recoveries.
fn service_of(checkpoint: &Checkpoint) -> Result<&'static dyn Service> {
    services()
        .into_iter()
        .find(|service| service.name() == checkpoint.service && service.keeps_recovery())
        .ok_or_else(|| EngineError::message(format!("Unknown recovery service: {}", checkpoint.service)))
}

fn no_checkpoint(run_id: &str) -> EngineError {
    EngineError::message(format!("Run {run_id} has no recovery checkpoint"))
}

/// Reconnects to the sandbox of `run_id`'s checkpoint (and no other), collects what it holds into a partial,
/// pending outcome with a recovery warning, destroys the sandbox and removes the checkpoint. `inherited`: the
/// environment the service's key and URLs are read from.
pub fn recover(home: &Path, inherited: &BTreeMap<String, String>, run_id: &str) -> Result<Recovered> {
    let checkpoint = load(home, run_id)?.ok_or_else(|| no_checkpoint(run_id))?;
    let service = service_of(&checkpoint)?;
    let setup = Setup { inherited: inherited.clone(), home: home.to_path_buf(), ..Setup::default() };
    let mut runtime = RemoteRuntime::new(service, setup)?;
    runtime.reconnect_to(&checkpoint.sandbox_id)?;
    let outcome = collect_kept(&mut runtime, home, &checkpoint);
    // The sandbox stays (and so does the checkpoint) when the collection failed again: it can be tried once more.
    let (outcome, receipt) = match outcome {
        Ok(committed) => committed,
        Err(error) => {
            runtime.sandbox = None;
            return Err(error);
        }
    };
    let mut warnings = Vec::new();
    if let Err(error) = crate::runtime::Runtime::cleanup(&mut runtime) {
        runtime.sandbox = None;
        warnings.push(format!(
            "{} sandbox {} could not be destroyed ({error}); `wb-lsp clean --apply` destroys it",
            service.title(),
            checkpoint.sandbox_id
        ));
    }
    remove(home, run_id)?;
    Ok(Recovered { outcome, receipt, sandbox_id: checkpoint.sandbox_id, warnings })
}

/// The working copies rebuilt from the kept archives, the sandbox's changes and outbox brought into them, and
/// the outcome committed.
fn collect_kept(runtime: &mut RemoteRuntime, home: &Path, checkpoint: &Checkpoint) -> Result<(Outcome, Receipt)> {
    super::kept::rebuild_copies(runtime, home, &checkpoint.workspaces)?;
    let workspaces: Vec<BoundWorkspace> = checkpoint
        .workspaces
        .iter()
        .map(|kept| BoundWorkspace { name: kept.name.clone(), path: kept.host.clone(), access: Access::ReadWrite })
        .collect();
    let copies: Vec<(PathBuf, PathBuf)> =
        runtime.copies.iter().map(|c| (c.host.clone(), c.path().to_path_buf())).collect();
    let baselines = crate::outcome::baseline(home, &workspaces, &copies);
    let parent = home.join(RECOVERY_DIR);
    let outbox = tempfile::Builder::new()
        .prefix("outbox-")
        .tempdir_in(&parent)
        .map_err(|e| EngineError::io(format!("cannot create an outbox in {}", parent.display()), e))?;
    collect::retrieve(runtime, outbox.path())?;
    let warning = wb_outcomes::Warning {
        code: "recovered_from_sandbox".to_owned(),
        message: format!(
            "Recovered from {} sandbox {} after the run's collection failed ({}); the runner may not have finished: \
             review before applying",
            runtime.title(),
            checkpoint.sandbox_id,
            checkpoint.reason
        ),
    };
    crate::outcome::collect(baselines, &checkpoint.run_id, outbox.path(), Completeness::Partial, true, vec![warning])
}

/// Deletes the sandbox of `run_id`'s checkpoint and the checkpoint; returns what was discarded.
pub fn discard(home: &Path, inherited: &BTreeMap<String, String>, run_id: &str) -> Result<Checkpoint> {
    let checkpoint = load(home, run_id)?.ok_or_else(|| no_checkpoint(run_id))?;
    let service = service_of(&checkpoint)?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| EngineError::io(format!("cannot start the {} client", service.title()), e))?;
    let mut provider = service.connect(inherited, tokio.handle().clone())?;
    provider.check_credentials()?;
    provider.destroy(&checkpoint.sandbox_id)?;
    remove(home, run_id)?;
    Ok(checkpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(run_id: &str) -> Checkpoint {
        Checkpoint {
            run_id: run_id.to_owned(),
            service: "e2b".to_owned(),
            sandbox_id: "sbx_1".to_owned(),
            workbench: "demo".to_owned(),
            created_at: "2026-12-05T00:00:00Z".to_owned(),
            paused: true,
            reason: "download failed".to_owned(),
            workspaces: vec![KeptWorkspace {
                host: PathBuf::from("/work"),
                name: None,
                target: "/workspace".to_owned(),
                baseline: "a".repeat(40),
                archive: "/tmp/workbench-input-0.tar.gz".to_owned(),
                archive_sha256: "0".repeat(64),
            }],
        }
    }

    #[test]
    fn checkpoints_are_private_and_named_by_their_run_only() -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let kept = checkpoint("wb_0123456789abcdefghij");
        save(home.path(), &kept)?;
        let path = home.path().join(RECOVERY_DIR).join("wb_0123456789abcdefghij.json");
        let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&home.path().join(RECOVERY_DIR)), 0o700);
        assert_eq!(load(home.path(), &kept.run_id)?, Some(kept.clone()));
        assert_eq!(list(home.path()).0, vec![kept.clone()]);
        assert_eq!(load(home.path(), "wb_00000000000000000000")?, None);
        assert!(load(home.path(), "../../etc/passwd").is_err());
        assert!(save(home.path(), &checkpoint("wb_../x")).is_err());
        // A file that names another run is refused, and listed as a problem rather than dropped.
        std::fs::copy(&path, home.path().join(RECOVERY_DIR).join("wb_99999999999999999999.json"))
            .map_err(|e| EngineError::io("copy", e))?;
        assert!(load(home.path(), "wb_99999999999999999999").is_err());
        let (found, problems) = list(home.path());
        assert_eq!((found.len(), problems.len()), (1, 1), "{problems:?}");
        remove(home.path(), &kept.run_id)?;
        assert_eq!(load(home.path(), &kept.run_id)?, None);
        Ok(())
    }
}
