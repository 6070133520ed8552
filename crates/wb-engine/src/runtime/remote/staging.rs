//! What leaves the host for a sandbox, and the working copies changes come back into.
//!
//! A workspace crosses as the snapshot selects it (tracked and unignored files of a Git workspace, a filtered
//! walk otherwise; VCS metadata, dependency trees and credential paths left out), less what the staging
//! policy adds (engine facts (f): the segments `.workbench` and `.workbench-state`, the name
//! `runtime.secrets.json`), plus a project `.npmrc` only when every line is a known boolean setting. The same
//! archive is unpacked into a local *working copy*: the outcome's baseline and, after the run, the tree the
//! sandbox's changes are applied to, so a changeset's `before` is exactly what the sandbox started from.

use std::path::{Path, PathBuf};

use wb_outcomes::Snapshot;

use super::provider::{TRANSFER_LIMIT, User};
use super::shell::{self, quote};
use super::{RemoteRuntime, archive, paths};
use crate::error::{EngineError, Result};

/// Settings a project `.npmrc` may hold to cross (each `=true` or `=false`).
const NPMRC_BOOLEANS: &[&str] = &[
    "engine-strict",
    "strict-peer-dependencies",
    "auto-install-peers",
    "shamefully-hoist",
    "legacy-peer-deps",
    "ignore-scripts",
    "save-exact",
    "package-lock",
    "fund",
    "audit",
];

/// Whether the staging policy keeps a path the snapshot selected.
pub fn staging_excludes(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    segments.iter().any(|s| matches!(*s, ".workbench" | ".workbench-state"))
        || segments.last().is_some_and(|name| name.eq_ignore_ascii_case("runtime.secrets.json"))
}

/// Whether a project `.npmrc` may cross: at most 64 KiB, every non-empty line `<known boolean>=true|false`.
pub fn npmrc_may_cross(text: &str) -> bool {
    text.len() <= 64 * 1024
        && text.lines().map(str::trim).filter(|l| !l.is_empty()).all(|line| {
            line.split_once('=').is_some_and(|(key, value)| {
                NPMRC_BOOLEANS.contains(&key.trim()) && matches!(value.trim(), "true" | "false")
            })
        })
}

/// The paths of `root` that cross to a sandbox (relative, sorted).
pub fn staged_paths(root: &Path, home: &Path) -> Result<Vec<String>> {
    let snapshot = Snapshot::capture_excluding_home(root, home)
        .map_err(|e| EngineError::message(format!("Cannot list {} for staging: {e}", root.display())))?;
    let mut paths: Vec<String> = snapshot.files().keys().filter(|p| !staging_excludes(p)).cloned().collect();
    let npmrc = root.join(".npmrc");
    if std::fs::symlink_metadata(&npmrc).is_ok_and(|m| m.is_file())
        && std::fs::read_to_string(&npmrc).is_ok_and(|text| npmrc_may_cross(&text))
    {
        paths.push(".npmrc".to_owned());
        paths.sort();
    }
    Ok(paths)
}

/// One directory staged into the sandbox.
pub struct Staged {
    /// The gzip tar that is uploaded.
    pub archive: Vec<u8>,
    pub files: usize,
}

/// Packs `paths` of `root`; refuses more than the transfer limit.
pub fn pack(title: &str, root: &Path, paths: &[String]) -> Result<Staged> {
    let mut total = 0u64;
    for path in paths {
        total += std::fs::symlink_metadata(root.join(path)).map(|m| m.len()).unwrap_or(0);
        if total > TRANSFER_LIMIT {
            return Err(EngineError::staging(format!(
                "{title} input exceeds the 512 MiB transfer safety limit: {}",
                root.display()
            )));
        }
    }
    let archive = archive::pack(root, paths)?;
    Ok(Staged { archive, files: paths.len() })
}

/// A workspace's local working copy: what was staged, and later what the sandbox made of it.
pub struct WorkingCopy {
    /// The host workspace.
    pub host: PathBuf,
    /// Where the sandbox has it.
    pub target: String,
    dir: tempfile::TempDir,
    /// The sandbox's baseline commit.
    pub baseline: Option<String>,
    /// Where the staged archive is kept in the sandbox, and its SHA-256, for a recovery
    /// ([`super::recovery`]) or an adoption ([`super::adopt`]).
    pub kept_archive: Option<(String, String)>,
}

/// Where working copies live under the Workbench home: private, and swept of the copies of runs that were
/// killed before they could remove their own.
pub const COPIES_DIR: &str = "working-copies";

impl WorkingCopy {
    /// Unpacks the staged archive into a new private (0700) directory under `home`'s [`COPIES_DIR`], named
    /// after this process, and first removes the copies left there by processes that no longer exist.
    pub fn create(home: &Path, host: &Path, target: &str, staged: &Staged) -> Result<WorkingCopy> {
        use std::os::unix::fs::PermissionsExt;
        let parent = home.join(COPIES_DIR);
        wb_outcomes::create_private_dir(&parent)
            .and_then(|()| std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o700)))
            .map_err(|e| EngineError::io(format!("cannot create {}", parent.display()), e))?;
        sweep_abandoned(&parent);
        let dir = tempfile::Builder::new()
            .prefix(&format!("copy-{}-", std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&parent)
            .map_err(|e| EngineError::io("cannot create a working copy", e))?;
        archive::unpack(&staged.archive, dir.path(), false)?;
        Ok(WorkingCopy { host: host.to_path_buf(), target: target.to_owned(), dir, baseline: None, kept_archive: None })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes the working copies in `parent` whose process (the number in `copy-<pid>-…`) is gone: a run that
/// was killed could not remove its own. A copy whose number was reused stays until that process is gone too.
pub fn sweep_abandoned(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.filter_map(std::result::Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("copy-")).and_then(|n| n.split('-').next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<i32>() else { continue };
        let gone =
            matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH));
        if gone && pid > 0 {
            let _ = archive::remove_entry(&entry.path());
        }
    }
}

impl RemoteRuntime {
    /// Uploads one archive and unpacks it at `target` (created, owned by the sandbox's default user). The
    /// uploaded archive is removed, or with `keep` left where it was uploaded (its path is returned).
    fn stage_archive(&self, index: usize, bytes: &[u8], target: &str, read_only: bool, keep: bool) -> Result<String> {
        let upload = format!("/tmp/workbench-input-{index}.tar.gz");
        self.sandbox()?.upload(&upload, bytes).map_err(|e| {
            EngineError::message(format!("Failed to stage {} runtime asset: {target}: {e}", self.title()))
        })?;
        let mut script =
            format!("set -e; mkdir -p {t}; tar -xzf {u} -C {t} --no-same-owner", t = quote(target), u = quote(&upload));
        if !keep {
            script.push_str(&format!("; rm -f {}", quote(&upload)));
        }
        if read_only {
            script.push_str(&format!("; chmod -R a-w {}", quote(target)));
        }
        self.run_checked(&format!("Failed to stage {} runtime asset: {target}", self.title()), &script, User::Default)?;
        Ok(upload)
    }

    /// Creates the sandbox's directories as root and gives them to the default user (the reference falls back
    /// to root only for this).
    fn make_directories(&self) -> Result<()> {
        let owner = self.run_checked(
            "Cannot read the sandbox user",
            "printf '%s:%s' \"$(id -u)\" \"$(id -g)\"",
            User::Default,
        )?;
        let owner = owner.text();
        let dirs = [paths::WORKSPACE, paths::WORKSPACES, "/workbench", paths::STAGE, paths::STATE, paths::OUTBOX];
        let list: Vec<String> = dirs.iter().map(|d| quote(d)).collect();
        let script = format!("set -e; mkdir -p {0}; chown {1} {0}", list.join(" "), quote(&owner));
        self.run_checked("Cannot create the sandbox's directories", &script, User::Root).map(|_| ())
    }

    /// Stages every mount; writable workspaces get a working copy and a baseline commit.
    pub(super) fn stage(&mut self) -> Result<()> {
        self.make_directories()?;
        let home = self.setup.home.clone();
        let mounts = self.mounts.clone();
        let mut copies = Vec::new();
        let mut files = 0;
        for (index, mount) in mounts.iter().enumerate() {
            let target = mount.target.display().to_string();
            let is_workspace = target == paths::WORKSPACE || target.starts_with(&format!("{}/", paths::WORKSPACES));
            let is_outbox = target == paths::OUTBOX;
            // The outbox starts empty, but for a resumed session's working copies.
            if is_outbox && archive::list_all(&mount.host).map_or(true, |paths| paths.is_empty()) {
                continue;
            }
            let paths = if is_workspace || target == paths::PACKAGE {
                staged_paths(&mount.host, &home)?
            } else {
                archive::list_all(&mount.host)?
            };
            let staged = pack(self.title(), &mount.host, &paths)?;
            files += staged.files;
            let writable = is_workspace && !mount.read_only;
            // What a writable workspace started from stays in the sandbox (a recovery or an adoption rebuilds
            // the working copy from it).
            let keep = writable;
            let uploaded = self.stage_archive(index, &staged.archive, &target, mount.read_only, keep)?;
            if writable {
                let mut copy = WorkingCopy::create(&home, &mount.host, &target, &staged)?;
                copy.baseline = Some(self.baseline_commit(&target)?);
                if keep {
                    self.keep_staged_archive(&uploaded)?;
                    copy.kept_archive = Some((uploaded, wb_outcomes::sha256_hex(&staged.archive)));
                }
                copies.push(copy);
            }
        }
        self.copies = copies;
        let id = self.sandbox()?.id().to_owned();
        self.report_progress(&format!("Staged {files} files into {} sandbox {id}", self.title()));
        Ok(())
    }

    /// `git init` and a baseline commit of everything staged in a writable workspace; returns its revision.
    fn baseline_commit(&self, target: &str) -> Result<String> {
        let git = shell::GIT;
        let script = format!(
            "set -e; cd {t}; rm -rf .git; {git} init -q; {git} add -A -f; {git} commit -q --no-verify --allow-empty -m baseline; {git} rev-parse HEAD",
            t = quote(target)
        );
        let output = self.run_checked(&format!("Cannot record the baseline of {target}"), &script, User::Default)?;
        let revision = output.text().lines().last().unwrap_or_default().trim().to_owned();
        if revision.len() < 40 || !revision.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(EngineError::message(format!("Cannot record the baseline of {target}: git gave no revision")));
        }
        Ok(revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_staging_policy_keeps_engine_state_and_secrets_home() {
        assert!(staging_excludes(".workbench/runs/x"));
        assert!(staging_excludes("a/.workbench-state/y"));
        assert!(staging_excludes("config/Runtime.Secrets.json"));
        assert!(!staging_excludes("src/workbench.rs"));
        assert!(!staging_excludes(".workbenches/review/workbench.yml"));
    }

    #[test]
    fn working_copies_are_private_and_a_killed_run_s_copies_are_swept() -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let source = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        std::fs::write(source.path().join("a.txt"), "x").map_err(|e| EngineError::io("write", e))?;
        let staged = pack("test", source.path(), &["a.txt".to_owned()])?;
        // A copy left by a process that is gone (a number no live process has), and one of a live process.
        let parent = home.path().join(COPIES_DIR);
        let dead = parent.join("copy-2147483646-abc");
        let live = parent.join("copy-1-abc");
        std::fs::create_dir_all(&dead).map_err(|e| EngineError::io("mkdir", e))?;
        std::fs::create_dir_all(&live).map_err(|e| EngineError::io("mkdir", e))?;
        let copy = WorkingCopy::create(home.path(), source.path(), "/workspace", &staged)?;
        let mode = |path: &Path| std::fs::metadata(path).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode(copy.path()), 0o700);
        assert_eq!(mode(&parent), 0o700);
        assert!(copy.path().join("a.txt").is_file());
        assert!(!dead.exists(), "the copy of a process that is gone is removed");
        assert!(live.exists(), "the copy of a live process stays");
        let path = copy.path().to_path_buf();
        drop(copy);
        assert!(!path.exists(), "a copy is removed with its run");
        Ok(())
    }

    #[test]
    fn only_a_harmless_npmrc_crosses() {
        assert!(npmrc_may_cross("engine-strict=true\n\nsave-exact = false\n"));
        assert!(!npmrc_may_cross("//registry.npmjs.org/:_authToken=secret\n"));
        assert!(!npmrc_may_cross("engine-strict=yes\n"));
        assert!(!npmrc_may_cross("registry=https://example.com\n"));
    }

    #[test]
    fn staged_paths_leave_out_credentials_and_engine_state() -> Result<()> {
        let root = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        let home = tempfile::tempdir().map_err(|e| EngineError::io("tempdir", e))?;
        for (path, text) in [
            ("src/main.rs", "fn main() {}"),
            (".env", "KEY=secret"),
            (".workbench-state/x", "state"),
            ("runtime.secrets.json", "{}"),
            (".npmrc", "//r/:_authToken=t\n"),
            ("id_rsa", "key"),
        ] {
            let full = root.path().join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(|e| EngineError::io("mkdir", e))?;
            }
            std::fs::write(full, text).map_err(|e| EngineError::io("write", e))?;
        }
        assert_eq!(staged_paths(root.path(), home.path())?, ["src/main.rs"]);
        std::fs::write(root.path().join(".npmrc"), "fund=false\n").map_err(|e| EngineError::io("write", e))?;
        assert_eq!(staged_paths(root.path(), home.path())?, [".npmrc", "src/main.rs"]);
        Ok(())
    }
}
