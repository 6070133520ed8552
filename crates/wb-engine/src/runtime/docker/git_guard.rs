//! Git metadata the container must never change. A workspace is bind-mounted writable, and whatever the agent
//! writes under `.git` (a `core.fsmonitor` line in `.git/config`, a hook, a `gitdir:` pointer) would run on the
//! host at the user's next `git status`. So every `.git` entry (directory or file, any letter case, the
//! workspace's own and nested ones such as submodules) found in a writable workspace before the run is
//! mounted again read-only over itself, and after the run the workspaces are searched once more: a `.git` the
//! agent created is removed and the run's outcome fails, naming it.

use std::path::{Path, PathBuf};

use super::super::Mount;
use crate::error::{EngineError, Limit, Result};

/// More `.git` entries than this in one workspace is refused (each becomes a mount).
const MAX_GIT_ENTRIES: usize = 256;
/// The most directory entries one search looks at before it gives up (a refusal, never a silent pass).
const MAX_ENTRIES_SEARCHED: usize = 2_000_000;

/// A writable workspace's Git entries, as found before the run.
#[derive(Debug, Default)]
pub(super) struct GitGuard {
    workspaces: Vec<Guarded>,
}

#[derive(Debug)]
struct Guarded {
    host: PathBuf,
    target: PathBuf,
    /// Relative paths of the `.git` entries present before the run.
    before: Vec<PathBuf>,
}

impl GitGuard {
    /// Finds the `.git` entries of every writable mount. A `.git` that is a symbolic link is refused: the
    /// container could replace the link with a directory of its own, and a mount cannot pin a link.
    pub(super) fn new(mounts: &[Mount]) -> Result<GitGuard> {
        let mut workspaces = Vec::new();
        for mount in mounts.iter().filter(|m| !m.read_only) {
            if !mount.host.is_dir() {
                continue;
            }
            let before = git_entries(&mount.host)?;
            for relative in &before {
                let path = mount.host.join(relative);
                let metadata = std::fs::symlink_metadata(&path)
                    .map_err(|e| EngineError::io(format!("cannot read {}", path.display()), e))?;
                if metadata.file_type().is_symlink() {
                    return Err(EngineError::message(format!(
                        "{} is a symbolic link: the docker runtime cannot keep a linked Git directory from being \
                         replaced by the container. Replace the link with the directory (or a `gitdir:` file), or \
                         run on another runtime.",
                        path.display()
                    )));
                }
            }
            workspaces.push(Guarded { host: mount.host.clone(), target: mount.target.clone(), before });
        }
        Ok(GitGuard { workspaces })
    }

    /// A read-only mount over each `.git` entry found, at the same place inside the container.
    pub(super) fn mounts(&self) -> Vec<Mount> {
        self.workspaces
            .iter()
            .flat_map(|w| {
                w.before.iter().map(|relative| Mount {
                    host: w.host.join(relative),
                    target: w.target.join(relative),
                    read_only: true,
                })
            })
            .collect()
    }

    /// After the run: removes every `.git` entry that was not there before and fails naming them.
    pub(super) fn verify(&self) -> Result<()> {
        let mut created = Vec::new();
        for workspace in &self.workspaces {
            let after = git_entries(&workspace.host)?;
            for relative in after.into_iter().filter(|r| !workspace.before.contains(r)) {
                let path = workspace.host.join(&relative);
                let removed = remove(&path);
                created.push(match removed {
                    Ok(()) => format!("{} (removed)", path.display()),
                    Err(error) => {
                        format!("{} (could not be removed: {error}; delete it before using Git there)", path.display())
                    }
                });
            }
        }
        if created.is_empty() {
            return Ok(());
        }
        Err(EngineError::message(format!(
            "The agent created Git metadata in the workspace, which Git would act on outside the container: {}",
            created.join(", ")
        )))
    }
}

/// Removes a file, a link or a directory tree without following links.
fn remove(path: &Path) -> std::io::Result<()> {
    let metadata = std::fs::symlink_metadata(path)?;
    if metadata.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) }
}

/// The relative paths of every entry named `.git` in any letter case below `root`, without following links
/// and without looking inside them.
fn git_entries(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    let mut searched = 0usize;
    while let Some(relative) = pending.pop() {
        let dir = root.join(&relative);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // A directory the engine cannot read, it cannot guard either; the container runs as the user and
            // cannot read it any better.
            Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => continue,
            Err(error) => return Err(EngineError::io(format!("cannot list {}", dir.display()), error)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| EngineError::io(format!("cannot list {}", dir.display()), e))?;
            searched += 1;
            if searched > MAX_ENTRIES_SEARCHED {
                return Err(EngineError::limit(
                    Limit::Entries,
                    format!(
                        "{} holds more than {MAX_ENTRIES_SEARCHED} entries: the docker runtime cannot search it for Git \
                     metadata to protect",
                        root.display()
                    ),
                ));
            }
            let name = entry.file_name();
            let path = relative.join(&name);
            if name.as_encoded_bytes().eq_ignore_ascii_case(b".git") {
                found.push(path);
                if found.len() > MAX_GIT_ENTRIES {
                    return Err(EngineError::limit(
                        Limit::Entries,
                        format!(
                            "{} holds more than {MAX_GIT_ENTRIES} Git directories: the docker runtime protects each \
                         with a mount and refuses more",
                            root.display()
                        ),
                    ));
                }
                continue;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                pending.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn finds_every_git_entry_in_any_case_without_entering_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/modules/sub")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::fs::create_dir_all(root.join("deep/er/.GiT")).unwrap();
        std::fs::write(root.join("deep/er/.git.txt"), "").unwrap();
        let found = git_entries(root).unwrap();
        assert_eq!(found, vec![PathBuf::from(".git"), PathBuf::from("deep/er/.GiT"), PathBuf::from("sub/.git")]);
    }

    #[test]
    fn a_git_created_during_the_run_is_removed_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let mounts = [Mount { host: root.to_path_buf(), target: PathBuf::from("/workspace"), read_only: false }];
        let guard = GitGuard::new(&mounts).unwrap();
        assert_eq!(guard.mounts()[0].target, PathBuf::from("/workspace/.git"));
        assert!(guard.mounts()[0].read_only);
        guard.verify().unwrap();
        std::fs::create_dir_all(root.join("nested/.GIT/hooks")).unwrap();
        std::fs::write(root.join("nested/.GIT/config"), "[core]\n\tfsmonitor = touch /tmp/x\n").unwrap();
        let error = guard.verify().unwrap_err().to_string();
        assert!(error.contains("nested/.GIT (removed)"), "{error}");
        assert!(!root.join("nested/.GIT").exists());
        assert!(root.join(".git").is_dir(), "what was there before stays");
    }

    #[test]
    fn a_linked_git_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink("../elsewhere", dir.path().join("work/.git")).unwrap();
        let mounts = [Mount { host: dir.path().join("work"), target: PathBuf::from("/workspace"), read_only: false }];
        let error = GitGuard::new(&mounts).unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{error}");
    }
}
