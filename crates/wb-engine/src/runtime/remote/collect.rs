//! Collection from a sandbox, after execution stops and before it is destroyed: for each writable workspace,
//! `git add -A`, then the paths changed and deleted since the baseline commit (`git diff --cached
//! --name-only -z`), the changed ones packed with `tar --null`; and the outbox's files packed the same way.
//! Everything comes back as archives unpacked into local directories by [`super::archive::unpack`] (never
//! outside them), so the outcome is computed on the host by the same code as every runtime's.

use std::path::Path;

use super::archive::{self, remove_entry, safe_relative};
use super::provider::{TRANSFER_LIMIT, User};
use super::shell::{GIT, quote};
use super::{RemoteRuntime, paths};
use crate::error::{EngineError, Result};

/// Brings the changes of every writable workspace into its working copy, and the outbox's files into
/// `outbox`.
pub(super) fn retrieve(runtime: &mut RemoteRuntime, outbox: &Path) -> Result<()> {
    let title = runtime.title();
    for index in 0..runtime.copies.len() {
        let (target, baseline, host, copy) = {
            let copy = &runtime.copies[index];
            (copy.target.clone(), copy.baseline.clone(), copy.host.clone(), copy.path().to_path_buf())
        };
        let Some(baseline) = baseline else { continue };
        let fail = |e: EngineError| {
            EngineError::staging(format!("Failed to collect {title} workspace changes: {}: {e}", host.display()))
        };
        workspace_changes(runtime, index, &target, &baseline, &copy).map_err(fail)?;
    }
    outbox_files(runtime, outbox)
        .map_err(|e| EngineError::staging(format!("Failed to collect the {title} outbox: {e}")))
}

fn workspace_changes(runtime: &RemoteRuntime, index: usize, target: &str, baseline: &str, copy: &Path) -> Result<()> {
    let changed = format!("/tmp/workbench-changed-{index}");
    let deleted = format!("/tmp/workbench-deleted-{index}");
    let archive_path = format!("/tmp/workbench-changes-{index}.tar.gz");
    let script = format!(
        "set -e; cd {t}; {GIT} add -A; \
         {GIT} diff --cached --no-renames --name-only -z --diff-filter=ACMRTUXB {b} > {c}; \
         {GIT} diff --cached --no-renames --name-only -z --diff-filter=D {b} > {d}; \
         tar -C {t} --null --no-recursion --hard-dereference --files-from={c} -czf {a} || [ $? -eq 1 ]",
        t = quote(target),
        b = quote(baseline),
        c = quote(&changed),
        d = quote(&deleted),
        a = quote(&archive_path),
    );
    runtime.run_checked("git diff and tar failed", &script, User::Default)?;
    let sandbox = runtime.sandbox()?;
    let deleted_list = sandbox.download(&deleted, TRANSFER_LIMIT)?;
    let bytes = sandbox.download(&archive_path, TRANSFER_LIMIT)?;
    // Deletions first: a file replaced by a directory is a delete of the file and an add below it.
    for raw in deleted_list.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let name = String::from_utf8_lossy(raw);
        let relative = safe_relative(raw)
            .filter(|r| !r.components().any(|c| archive::is_git_alias(c.as_os_str().as_encoded_bytes())))
            .ok_or_else(|| EngineError::staging(format!("Refused a deleted path with an unsafe name: {name}")))?;
        if !parents_are_directories(copy, &relative) {
            continue;
        }
        remove_entry(&copy.join(&relative))
            .map_err(|e| EngineError::io(format!("cannot remove {}", relative.display()), e))?;
    }
    archive::unpack(&bytes, copy, true)?;
    let _ = runtime.run_checked(
        "cleanup",
        &format!("rm -f {} {} {}", quote(&changed), quote(&deleted), quote(&archive_path)),
        User::Default,
    );
    Ok(())
}

/// True when every parent of `relative` under `root` is a real directory (nothing to delete through a link).
fn parents_are_directories(root: &Path, relative: &Path) -> bool {
    let mut current = root.to_path_buf();
    let Some(parent) = relative.parent() else { return true };
    for component in parent.components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.is_dir() => {}
            _ => return false,
        }
    }
    true
}

fn outbox_files(runtime: &RemoteRuntime, outbox: &Path) -> Result<()> {
    download_tree(runtime, paths::OUTBOX, outbox)
}

/// Brings the files and links of the sandbox's directory `remote` (created when missing) into `local`, packed
/// with `tar --null` and unpacked never outside `local`.
fn download_tree(runtime: &RemoteRuntime, remote: &str, local: &Path) -> Result<()> {
    let list = "/tmp/workbench-download-list";
    let archive_path = "/tmp/workbench-download.tar.gz";
    let script = format!(
        "set -e; mkdir -p {o}; cd {o}; find . -mindepth 1 \\( -type f -o -type l \\) -print0 > {l}; \
         tar -C {o} --null --no-recursion --hard-dereference --files-from={l} -czf {a} || [ $? -eq 1 ]",
        o = quote(remote),
        l = quote(list),
        a = quote(archive_path),
    );
    runtime.run_checked("find and tar failed", &script, User::Default)?;
    let bytes = runtime.sandbox()?.download(archive_path, TRANSFER_LIMIT)?;
    wb_outcomes::create_private_dir(local)
        .map_err(|e| EngineError::io(format!("cannot create {}", local.display()), e))?;
    archive::unpack(&bytes, local, false)?;
    Ok(())
}

/// A session's turn has ended: the sandbox's outbox replaces the local one.
pub(super) fn turn_outbox(runtime: &RemoteRuntime, outbox: &Path) -> Result<()> {
    replace_with(runtime, paths::OUTBOX, outbox)
        .map_err(|e| EngineError::staging(format!("Failed to collect the {} outbox: {e}", runtime.title())))
}

/// A session's turn has ended: `relative` of the sandbox's staged directory replaces `into`.
pub(super) fn turn_stage(runtime: &RemoteRuntime, relative: &str, into: &Path) -> Result<()> {
    let remote = format!("{}/{relative}", paths::STAGE);
    replace_with(runtime, &remote, into).map_err(|e| {
        EngineError::staging(format!("Failed to collect the runner's conversation from {}: {e}", runtime.title()))
    })
}

/// `local` emptied, then filled with the sandbox's `remote`.
fn replace_with(runtime: &RemoteRuntime, remote: &str, local: &Path) -> Result<()> {
    match std::fs::remove_dir_all(local) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(EngineError::io(format!("cannot empty {}", local.display()), e)),
    }
    download_tree(runtime, remote, local)
}
