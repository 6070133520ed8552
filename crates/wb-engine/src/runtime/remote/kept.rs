//! The writable workspaces a sandbox keeps for a run: each one's staged archive, kept in the sandbox, and its
//! baseline, as a recovery's checkpoint (`recovery.rs`) and an adoption's attachment (`adopt.rs`) record them,
//! and the working copies rebuilt from them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::provider::{TRANSFER_LIMIT, User};
use super::shell::quote;
use super::staging::{Staged, WorkingCopy};
use super::{RemoteRuntime, paths};
use crate::error::{EngineError, Result};

/// A writable workspace of the kept sandbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptWorkspace {
    /// The host workspace the outcome applies to.
    pub host: PathBuf,
    /// The named workspace, or `None` for the primary one.
    pub name: Option<String>,
    /// Where the sandbox has it.
    pub target: String,
    /// The baseline commit changes are taken against.
    pub baseline: String,
    /// The staged archive, kept in the sandbox, and its SHA-256 (hex) when it was staged.
    pub archive: String,
    pub archive_sha256: String,
}

/// The named workspace a sandbox target is (`/workspaces/<name>`), `None` for the primary one.
fn workspace_name(target: &str) -> Option<String> {
    target.strip_prefix(&format!("{}/", paths::WORKSPACES)).map(str::to_owned)
}

/// Each writable workspace as a recovery or an adoption finds it again.
pub(super) fn kept_workspaces(runtime: &RemoteRuntime) -> Option<Vec<KeptWorkspace>> {
    runtime
        .copies
        .iter()
        .map(|copy| {
            let (archive, archive_sha256) = copy.kept_archive.clone()?;
            Some(KeptWorkspace {
                host: copy.host.clone(),
                name: workspace_name(&copy.target),
                target: copy.target.clone(),
                baseline: copy.baseline.clone()?,
                archive,
                archive_sha256,
            })
        })
        .collect()
}

/// The working copies of `kept`, rebuilt from the archives kept in the sandbox: each is refused unless its
/// SHA-256 is the one recorded when it was staged.
pub(super) fn rebuild_copies(runtime: &mut RemoteRuntime, home: &Path, kept: &[KeptWorkspace]) -> Result<()> {
    let id = runtime.sandbox()?.id().to_owned();
    for (index, workspace) in kept.iter().enumerate() {
        let readable = format!("/tmp/workbench-kept-{index}.tar.gz");
        let script = format!("set -e; cp {} {r}; chmod 0444 {r}", quote(&workspace.archive), r = quote(&readable));
        runtime.run_checked(&format!("The staged archive of {} is gone", workspace.target), &script, User::Root)?;
        let bytes = runtime.sandbox()?.download(&readable, TRANSFER_LIMIT)?;
        let _ = runtime.run_checked("cleanup", &format!("rm -f {}", quote(&readable)), User::Root);
        if wb_outcomes::sha256_hex(&bytes) != workspace.archive_sha256 {
            return Err(EngineError::staging(format!(
                "The staged archive of {} was changed in sandbox {id}: refusing to use it",
                workspace.target
            )));
        }
        let staged = Staged { archive: bytes, files: 0 };
        let mut copy = WorkingCopy::create(home, &workspace.host, &workspace.target, &staged)?;
        copy.baseline = Some(workspace.baseline.clone());
        copy.kept_archive = Some((workspace.archive.clone(), workspace.archive_sha256.clone()));
        runtime.copies.push(copy);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_workspace_is_told_from_its_target() {
        assert_eq!(workspace_name("/workspace"), None);
        assert_eq!(workspace_name("/workspaces/docs"), Some("docs".to_owned()));
    }
}
